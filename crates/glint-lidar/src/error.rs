//! The one error type of glint-lidar, phrased for the person who passed the bad input.

use thiserror::Error;

/// Why a lidar binding, configuration or query was rejected.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum LidarError {
    /// A numeric field was outside the seed's range (or not finite).
    #[error("lidar field `{field}` is {value}, outside its range {range}")]
    OutOfRange {
        /// Field name as in the manifest.
        field: &'static str,
        /// The rejected value.
        value: f64,
        /// The allowed range, in words.
        range: &'static str,
    },
    /// Two fields contradict each other.
    #[error("lidar fields conflict: {0}")]
    Conflict(String),
    /// The binding names neither a body nor a site.
    #[error("lidar binding '{name}' has no attach target: set `attach_site` or `attach_body`")]
    NoAttachTarget {
        /// The binding's output name (may be empty).
        name: String,
    },
    /// The attach target does not exist in the model.
    #[error("lidar binding '{name}' attaches to {kind} '{target}', which the model does not have{hint}")]
    UnknownTarget {
        /// The binding's output name.
        name: String,
        /// "body" or "site".
        kind: &'static str,
        /// The name given.
        target: String,
        /// ", did you mean 'x'?" or empty.
        hint: String,
    },
    /// An unknown name for an enumerated setting.
    #[error("unknown {what} '{name}': use one of {valid}")]
    UnknownName {
        /// What kind of name.
        what: &'static str,
        /// The name given.
        name: String,
        /// The valid names.
        valid: &'static str,
    },
    /// An unknown scan preset name.
    #[error("unknown lidar scan preset '{0}': use unitree-l1, livox-mid360, velodyne-vlp16 or ouster-os1-64")]
    UnknownPreset(String),
    /// A sensor index past the end.
    #[error("lidar sensor {index} does not exist ({count} sensors are bound)")]
    NoSuchSensor {
        /// The requested index.
        index: usize,
        /// How many sensors exist.
        count: usize,
    },
    /// A world index past the end.
    #[error("world {world} does not exist (the batch has {nworld} worlds)")]
    NoSuchWorld {
        /// The requested world.
        world: usize,
        /// How many worlds exist.
        nworld: usize,
    },
    /// A caller's buffer has the wrong length.
    #[error("{what} holds {len} entries, but sensor {sensor} has {beams} beams")]
    BufferLength {
        /// Which buffer.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The sensor.
        sensor: usize,
        /// Its beam count.
        beams: usize,
    },
    /// A name that becomes part of a file name (a bake's) uses characters a file name cannot.
    #[error("{what} '{name}' is not usable: {rule}")]
    InvalidName {
        /// What kind of name.
        what: &'static str,
        /// The name given.
        name: String,
        /// What a valid name looks like.
        rule: &'static str,
    },
    /// A material bake file could not be written or read: missing, truncated, corrupt
    /// (checksum mismatch), not a bake at all (no `LVXB` magic), or written by a newer glint.
    #[error("material bake '{}': {reason}", path.display())]
    Bake {
        /// The bake file.
        path: std::path::PathBuf,
        /// What is wrong with it, in words.
        reason: String,
    },
    /// A material scan was asked for with no material source loaded.
    #[error(
        "no material bake is loaded, so the return model has no reflectivity to work from: build one with `glint bake` and load it (Lidars::set_materials)"
    )]
    NoMaterials,
    /// The ray core rejected a query (a bug in the sensor, or poses from another scene).
    #[error(transparent)]
    Core(#[from] glint_core::CoreError),
}
