//! `[[observation]]`: the task contract's observation vector, one table per component, laid
//! out in the order written. The seed's `lidar_ranges` component and its parameters are here;
//! joint positions and velocities are MuJoCo's `qpos` and `qvel`.
//!
//! ```toml
//! [[observation]]
//! name = "joint_positions"      # qpos, nq values
//!
//! [[observation]]
//! name = "joint_velocities"     # qvel, nv values
//!
//! [[observation]]
//! name = "lidar_ranges"         # the seed's component
//! beams = 65536                 # required: channels * azimuth_bins; -1 past the scan
//! sensor = 0                    # default 0
//! material = false              # default off; 1 or true applies the return model
//!
//! [[observation]]
//! name = "rangefinders"         # every MJCF <rangefinder> of the model, as sensordata
//! ```

use std::path::Path;

use glint_core::nearest_name;
use serde::Deserialize;

use crate::ManifestError;

/// The component names, in the spelling the manifest and the agent schema use.
pub const OBSERVATION_COMPONENTS: &[&str] = &["joint_positions", "joint_velocities", "lidar_ranges", "rangefinders"];

/// The most beams a `lidar_ranges` component may ask for: the largest scan a sensor can have
/// (256 channels of 65 535 bins).
pub const MAX_OBSERVATION_BEAMS: i64 = 256 * 65535;

/// One component of the observation vector.
#[derive(Clone, Debug, PartialEq)]
pub enum ObservationComponent {
    /// Every world's generalized positions (`qpos`, `nq` values).
    JointPositions,
    /// Every world's generalized velocities (`qvel`, `nv` values).
    JointVelocities,
    /// The seed's `lidar_ranges`: `beams` ranges of sensor `sensor`, `-1` past the scan and
    /// for no return. `beams` is `None` when it was absent or not positive: the seed's
    /// component then emits nothing (and glint says so once).
    LidarRanges {
        /// Width of the component, or `None` (absent or not positive: emits nothing).
        beams: Option<usize>,
        /// Which sensor (0-based, binding order).
        sensor: usize,
        /// Whether the return model's measured ranges are read (needs a bake).
        material: bool,
    },
    /// Every site-attached MJCF `<rangefinder>` of the model, in sensor order: the values
    /// MuJoCo's `sensordata` holds for them (`-1` for a distance that hits nothing), cast by
    /// glint's BVH.
    Rangefinders,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawObservation {
    name: String,
    beams: Option<i64>,
    sensor: Option<i64>,
    material: Option<toml::Value>,
}

impl RawObservation {
    /// The checked component at position `index`.
    pub(crate) fn component(&self, path: &Path, index: usize) -> Result<ObservationComponent, ManifestError> {
        let value = |message: String| ManifestError::Value { path: path.to_path_buf(), message };
        let table = format!("[[observation]] {index} ({})", self.name);
        let only_lidar = |key: &str, given: bool| {
            if given {
                Err(value(format!("{table} has `{key}`, which only a lidar_ranges component takes")))
            } else {
                Ok(())
            }
        };
        match self.name.as_str() {
            "joint_positions" | "joint_velocities" | "rangefinders" => {
                only_lidar("beams", self.beams.is_some())?;
                only_lidar("sensor", self.sensor.is_some())?;
                only_lidar("material", self.material.is_some())?;
                Ok(match self.name.as_str() {
                    "joint_positions" => ObservationComponent::JointPositions,
                    "joint_velocities" => ObservationComponent::JointVelocities,
                    _ => ObservationComponent::Rangefinders,
                })
            }
            "lidar_ranges" => {
                let beams = match self.beams {
                    Some(b) if b > MAX_OBSERVATION_BEAMS => {
                        return Err(value(format!(
                            "{table} beams = {b} is more than any sensor has: give the sensor's beam count \
                             (channels * azimuth_bins), at most {MAX_OBSERVATION_BEAMS}"
                        )));
                    }
                    Some(b) if b > 0 => Some(b as usize),
                    _ => None,
                };
                let sensor = match self.sensor.unwrap_or(0) {
                    s if s >= 0 => s as usize,
                    s => return Err(value(format!("{table} sensor = {s}: give a sensor index, 0 or more"))),
                };
                let material = match &self.material {
                    None => false,
                    Some(toml::Value::Boolean(b)) => *b,
                    Some(toml::Value::Integer(0)) => false,
                    Some(toml::Value::Integer(1)) => true,
                    Some(other) => {
                        return Err(value(format!(
                            "{table} material = {other}: give true or false (or 1 or 0, as the seed writes it)"
                        )));
                    }
                };
                Ok(ObservationComponent::LidarRanges { beams, sensor, material })
            }
            other => {
                let hint = nearest_name(other, OBSERVATION_COMPONENTS.iter().copied()).map_or_else(
                    || format!("use one of {}", OBSERVATION_COMPONENTS.join(", ")),
                    |n| format!("did you mean `{n}`?"),
                );
                Err(value(format!(
                    "[[observation]] {index} names component `{other}`, which glint does not know; {hint}"
                )))
            }
        }
    }
}
