//! The one error type of glint-mujoco.

use std::path::PathBuf;

use thiserror::Error;

/// Why a model could not be loaded or a batch could not be built.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum MujocoError {
    /// The MJCF file does not exist or cannot be read.
    #[error("cannot read MJCF file '{path}': {reason}")]
    Unreadable {
        /// The path as given.
        path: PathBuf,
        /// What the operating system said.
        reason: String,
    },
    /// MuJoCo's compiler rejected the model; `message` is MuJoCo's own text.
    #[error("MuJoCo could not load {source_name}: {message}")]
    Load {
        /// The file, or "the MJCF string".
        source_name: String,
        /// MuJoCo's error text (names the element, attribute and line where it can).
        message: String,
    },
    /// A texture the renderer needs cannot be decoded.
    #[error(
        "texture {texture} ('{name}') cannot be loaded: {reason}; check its file (PNG or MuJoCo's custom format) or remove it from the material"
    )]
    Texture {
        /// Texture id.
        texture: usize,
        /// Texture name.
        name: String,
        /// What went wrong.
        reason: String,
    },
    /// A variant that cannot be built.
    #[error("variant `{name}`: {message}")]
    Variant {
        /// The variant's name.
        name: String,
        /// What is wrong, and the fix.
        message: String,
    },
    /// Physics fields that do not fit the model.
    #[error("{0}")]
    Physics(String),
    /// A compiled model field that the ray core or physics reads is not a finite number (or a
    /// length is past MuJoCo's `mjMAXVAL`): MuJoCo compiles such MJCF with at most a warning.
    #[error("{source_name}: {what}")]
    NotFinite {
        /// The MJCF file ("'scene.xml'"), or "the MJCF string", or "the model".
        source_name: String,
        /// The element, its id and name, the field, the value and the attribute to fix:
        /// "geom 1 ('box') has geom_pos[0] = inf, which is not a finite number; fix the MJCF
        /// geom's `pos`".
        what: String,
    },
    /// A batch was asked for with no worlds.
    #[error("a world batch needs at least one world (nworld = 0)")]
    NoWorlds,
    /// The light rig cannot be translated.
    #[error(transparent)]
    Lights(#[from] glint_lights::LightsError),
    /// The extracted scene failed glint's checks.
    #[error(transparent)]
    Core(#[from] glint_core::CoreError),
}

impl MujocoError {
    /// The error with the MJCF it came from named (for errors that do not name it yet).
    pub(crate) fn in_source(mut self, name: String) -> MujocoError {
        if let MujocoError::NotFinite { source_name, .. } = &mut self {
            *source_name = name;
        }
        self
    }
}
