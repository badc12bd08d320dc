//! The one error type of glint-lidar, phrased for the person who passed the bad input, and
//! the warnings a configuration can carry.

use glint_core::SpellingError;
use thiserror::Error;

/// Why a lidar binding, configuration or query was rejected.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum LidarError {
    /// A numeric field was outside the seed's range (or not finite).
    #[error("lidar field `{field}` is {}, outside its range {range}", glint_core::readable(*value))]
    OutOfRange {
        /// Field name as in the manifest.
        field: &'static str,
        /// The rejected value.
        value: f64,
        /// The allowed range, in words.
        range: &'static str,
    },
    /// One component of a vector field was outside its range (or not finite).
    #[error("lidar field `{field}` component {component} is {}, outside its range {range}", glint_core::readable(*value))]
    ComponentOutOfRange {
        /// Field name as in the manifest.
        field: &'static str,
        /// The component's index (0 = x).
        component: usize,
        /// The rejected value.
        value: f64,
        /// The allowed range, in words.
        range: &'static str,
    },
    /// The lidar runner's rate cannot be realised over the physics timestep.
    #[error("the lidar runner cannot tick at that rate: {0}")]
    RunnerRate(String),
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
    /// An unknown name given for a field of a configuration.
    #[error("{key} = \"{value}\" is no {what}; use one of {valid}")]
    BadValue {
        /// The field's key.
        key: &'static str,
        /// The name given.
        value: String,
        /// What the field holds.
        what: &'static str,
        /// The valid names.
        valid: String,
    },
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
    /// A material, a bake or its settings were rejected.
    #[error(transparent)]
    Material(#[from] glint_materials::MaterialError),
    /// A name or index that stands for no value of an enumerated setting.
    #[error(transparent)]
    Spelling(#[from] glint_core::SpellingError),
    /// A material scan was asked for with no material source loaded.
    #[error(
        "no material bake is loaded, so the return model has no reflectivity to work from: build one with `glint bake` and load it (Lidars::set_materials)"
    )]
    NoMaterials,
    /// The ray core rejected a query (a bug in the sensor, or poses from another scene).
    #[error(transparent)]
    Core(#[from] glint_core::CoreError),
}

impl LidarError {
    /// An unknown name as the value of field `key`; other errors unchanged.
    pub(crate) fn for_key(self, key: &'static str) -> LidarError {
        match self {
            LidarError::Spelling(SpellingError::UnknownName { what, name, valid }) => {
                LidarError::BadValue { key, value: name, what, valid }
            }
            other => other,
        }
    }
}

/// Something about a configuration that does not stop it, for the caller to pass on.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum LidarWarning {
    /// `geom_group_mask` sets bits above MuJoCo's six geom groups, which have no effect.
    GroupMaskHighBits {
        /// The mask given.
        mask: u32,
        /// The mask used: its low six bits.
        used: u8,
    },
}

impl std::fmt::Display for LidarWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LidarWarning::GroupMaskHighBits { mask, used } => write!(
                f,
                "geom_group_mask {mask} sets bits above the six MuJoCo geom groups; only {used} (the low six bits) is used"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_values_are_shown_in_scientific_notation() {
        let e = LidarError::ComponentOutOfRange { field: "mount_offset", component: 0, value: 1e300, range: "x" };
        assert!(e.to_string().contains("is 1e300,"), "{e}");
    }
}
