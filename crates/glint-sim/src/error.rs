//! The one error type of glint-sim, phrased for the person driving the simulation. Errors of
//! the crates below keep their own words and are wrapped whole.

use std::path::PathBuf;

use thiserror::Error;

/// Why a simulation could not be built, stepped, asked or recorded.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum SimError {
    /// The scene manifest was rejected.
    #[error(transparent)]
    Manifest(#[from] glint_manifest::ManifestError),
    /// MuJoCo could not load the scene or set up its worlds.
    #[error(transparent)]
    Mujoco(#[from] glint_mujoco::MujocoError),
    /// A lidar binding, configuration, calibration or bake was rejected.
    #[error(transparent)]
    Lidar(#[from] glint_lidar::LidarError),
    /// A near-infrared material, a bake or its settings were rejected.
    #[error(transparent)]
    Material(#[from] glint_materials::MaterialError),
    /// A camera could not be set up or rendered.
    #[error(transparent)]
    Camera(#[from] glint_camera::CameraError),
    /// The ray core rejected a query.
    #[error(transparent)]
    Rays(#[from] glint_core::CoreError),
    /// The recording could not be written.
    #[error(transparent)]
    Record(#[from] glint_record::RecordError),
    /// A lidar sensor index past the end.
    #[error("lidar sensor {index} does not exist ({count} sensors are bound)")]
    NoSuchSensor {
        /// The index asked for.
        index: usize,
        /// How many sensors are bound.
        count: usize,
    },
    /// A world index past the end.
    #[error("world {world} does not exist (the simulation has {nworld} worlds)")]
    NoSuchWorld {
        /// The world asked for.
        world: usize,
        /// How many worlds there are.
        nworld: usize,
    },
    /// An agent's action is not a finite number.
    #[error("world {world}'s action {index} ({actuator}) is {value}: every action must be a finite number")]
    Action {
        /// The world it drives.
        world: usize,
        /// Its position in the world's action vector.
        index: usize,
        /// The actuator it drives.
        actuator: String,
        /// The value given.
        value: f64,
    },
    /// A caller's buffer does not have the length the call needs.
    #[error("{what} holds {len} values, and {expected}")]
    BufferLength {
        /// Which buffer.
        what: &'static str,
        /// Its length.
        len: usize,
        /// What it must hold, in words.
        expected: String,
    },
    /// The controller the manifest names does not fit the model.
    #[error("[controller] {0}")]
    Controller(String),
    /// The controller's action file could not be read or makes no sense.
    #[error("{}", actions_message(path, *line, reason))]
    Actions {
        /// The action file.
        path: PathBuf,
        /// The line at fault (1-based), if one is.
        line: Option<usize>,
        /// What is wrong with it.
        reason: String,
    },
    /// A material scan, or a bake operation that needs one, was asked for with no bake loaded.
    #[error(
        "no material bake is loaded: build one ({what} needs it) with `glint bake` or Simulation::bake, then load it"
    )]
    NoBake {
        /// What needed the bake.
        what: &'static str,
    },
    /// A saved bake asked for is not there.
    #[error("no bake named '{name}' at '{}' ({known}): run `glint bake {} --name {name}` to make it", path.display(), manifest.display())]
    NoSuchBake {
        /// The bake's name.
        name: String,
        /// Where it was looked for.
        path: PathBuf,
        /// The bakes that are there, in words.
        known: String,
        /// The manifest to bake.
        manifest: PathBuf,
    },
    /// An operation the seed ignores while recording was asked for during a recording.
    #[error(
        "{what} is refused while a recording is armed (the files' columns are fixed when they open): stop the recording first"
    )]
    Recording {
        /// What was asked.
        what: &'static str,
    },
    /// The recording was asked to stop, or a second one to start, at the wrong time.
    #[error("{0}")]
    NotRecording(&'static str),
    /// An episode loop was asked for without an episode length.
    #[error("an episode loop needs an episode length: set SimOptions::episode_seconds")]
    NoEpisodeLength,
    /// A setting of the simulation itself is out of range.
    #[error("{0}")]
    Setting(String),
    /// The worlds asked for would not fit in memory.
    #[error("{0}")]
    Memory(String),
    /// The manifest's `[reset]` does not fit the model.
    #[error("{0}")]
    Reset(String),
    /// A rate that cannot be realised exactly (a sensor turning faster than its ticks, an
    /// episode that is not a whole number of ticks).
    #[error("{0}")]
    Rate(String),
}

/// `path:line: reason`, or `the action file 'path' reason` for the whole file.
fn actions_message(path: &std::path::Path, line: Option<usize>, reason: &str) -> String {
    match line {
        Some(n) => format!("{}:{n}: {reason}", path.display()),
        None => format!("the action file '{}' {reason}", path.display()),
    }
}

/// A name or index that stands for no value of an enumerated setting is a lidar setting's
/// error, as it was before the spellings moved to glint-core.
impl From<glint_core::SpellingError> for SimError {
    fn from(e: glint_core::SpellingError) -> SimError {
        SimError::Lidar(e.into())
    }
}
