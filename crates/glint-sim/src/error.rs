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
    /// An output added with `Simulation::add_output` could not write (the message names its
    /// file and what to do).
    #[error("{0}")]
    Output(String),
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

/// What kind of error a [`SimError`] is: the one classification every front end names it by.
/// Python raises the class of `glint.errors` with the kind's name, and gRPC answers that name
/// before the message, so the same mistake reads the same on every route.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
#[allow(clippy::enum_variant_names)]
pub enum ErrorKind {
    /// A scene manifest (or a dict of manifest keys) was rejected.
    ManifestError,
    /// The manifest file cannot be read.
    ManifestNotFoundError,
    /// MuJoCo could not load the MJCF scene, or set up its worlds.
    SceneError,
    /// A lidar binding, configuration, calibration or rate was rejected.
    LidarError,
    /// A lidar sensor or world index past the end.
    IndexOutOfRangeError,
    /// A bake operation needs a bake that is not loaded, or a bake or its settings were
    /// rejected.
    BakeError,
    /// A saved bake asked for is not there.
    BakeNotFoundError,
    /// A recording could not be written.
    RecordingError,
    /// A call the seed ignores while recording, or a recording stopped or armed twice.
    RecordingStateError,
    /// An array does not have the shape the call needs.
    ShapeError,
    /// An agent's action is not a finite number.
    ActionError,
    /// A setting of the simulation was refused.
    SettingError,
}

impl ErrorKind {
    /// Every kind.
    pub const ALL: [ErrorKind; 12] = [
        ErrorKind::ManifestError,
        ErrorKind::ManifestNotFoundError,
        ErrorKind::SceneError,
        ErrorKind::LidarError,
        ErrorKind::IndexOutOfRangeError,
        ErrorKind::BakeError,
        ErrorKind::BakeNotFoundError,
        ErrorKind::RecordingError,
        ErrorKind::RecordingStateError,
        ErrorKind::ShapeError,
        ErrorKind::ActionError,
        ErrorKind::SettingError,
    ];

    /// Its name: the class Python raises, the word gRPC answers.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ManifestError => "ManifestError",
            ErrorKind::ManifestNotFoundError => "ManifestNotFoundError",
            ErrorKind::SceneError => "SceneError",
            ErrorKind::LidarError => "LidarError",
            ErrorKind::IndexOutOfRangeError => "IndexOutOfRangeError",
            ErrorKind::BakeError => "BakeError",
            ErrorKind::BakeNotFoundError => "BakeNotFoundError",
            ErrorKind::RecordingError => "RecordingError",
            ErrorKind::RecordingStateError => "RecordingStateError",
            ErrorKind::ShapeError => "ShapeError",
            ErrorKind::ActionError => "ActionError",
            ErrorKind::SettingError => "SettingError",
        }
    }
}

impl SimError {
    /// Its kind: the one place an error meets its class (the wrapped errors of the crates
    /// below are classed whole, by the variant wrapping them). A new variant gets its kind by
    /// an arm here.
    pub fn kind(&self) -> ErrorKind {
        match self {
            SimError::Manifest(glint_manifest::ManifestError::Read { .. }) => ErrorKind::ManifestNotFoundError,
            SimError::Manifest(_) => ErrorKind::ManifestError,
            SimError::Mujoco(_) => ErrorKind::SceneError,
            SimError::Lidar(_) | SimError::Rate(_) => ErrorKind::LidarError,
            SimError::NoSuchSensor { .. } | SimError::NoSuchWorld { .. } => ErrorKind::IndexOutOfRangeError,
            SimError::NoSuchBake { .. } => ErrorKind::BakeNotFoundError,
            // Bakes: their settings, names and files (glint-materials), and none being loaded.
            SimError::Material(_) | SimError::NoBake { .. } => ErrorKind::BakeError,
            SimError::Record(_) | SimError::Output(_) => ErrorKind::RecordingError,
            SimError::Recording { .. } | SimError::NotRecording(_) => ErrorKind::RecordingStateError,
            SimError::BufferLength { .. } | SimError::Rays(_) => ErrorKind::ShapeError,
            SimError::Action { .. } => ErrorKind::ActionError,
            SimError::Camera(_)
            | SimError::Controller(_)
            | SimError::Actions { .. }
            | SimError::NoEpisodeLength
            | SimError::Setting(_)
            | SimError::Memory(_)
            | SimError::Reset(_) => ErrorKind::SettingError,
        }
    }
}
