//! `[reset]`: how each episode's initial state is randomized. The draws are seeded by the
//! episode's seed, so two episodes start apart and the same run seed starts them alike.
//!
//! ```toml
//! [reset.joints]            # hinge or slide joint = half-width of a uniform draw added to
//! base_x = 0.5              # its initial qpos (metres for a slide, radians for a hinge)
//! base_yaw = 3.14159
//!
//! [reset.bodies.crate_1]    # a body on a free joint: ranges its start pose is offset by
//! x = [-1.0, 1.0]           # metres, world frame (default [0, 0])
//! y = [-0.5, 0.5]
//! yaw = [-180.0, 180.0]     # degrees about world +Z (default [0, 0])
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::ManifestError;
use crate::values::Exact;
use glint_core::readable;

/// The largest joint noise half-width (metres for a slide, radians for a hinge) and the
/// largest body offset (metres) `[reset]` takes: a start pose 10 km out loses millimetres in
/// the `f32` geometry the rays meet, and a larger draw only starts episodes unstable. A hinge
/// is held to a full turn when the model says which joints are hinges.
pub const MAX_RESET_OFFSET: f64 = 1.0e4;
/// The largest yaw a `[reset.bodies.NAME]` range reaches, degrees: a full turn either way.
pub const MAX_RESET_YAW_DEG: f64 = 360.0;

/// How each episode's initial state is drawn (`[reset]`; default: the model's own, unchanged).
/// Joint and body names are checked against the model when the scene is loaded.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResetConfig {
    /// Per hinge or slide joint (by name), the half-width of the uniform noise added to its
    /// initial position: metres for a slide, radians for a hinge.
    pub joints: Vec<(String, f64)>,
    /// Per body on a free joint (by name), the ranges its start pose is offset by.
    pub bodies: Vec<BodyReset>,
}

impl ResetConfig {
    /// Whether the table changes nothing.
    pub fn is_empty(&self) -> bool {
        self.joints.is_empty() && self.bodies.is_empty()
    }
}

/// The start-pose ranges of one free body: each offset is drawn uniformly from its range.
#[derive(Clone, Debug, PartialEq)]
pub struct BodyReset {
    /// The body's name.
    pub body: String,
    /// Offsets of its initial position along world x, y and z, metres (`[lo, hi]`).
    pub position: [[f64; 2]; 3],
    /// Turn about world +Z applied to its initial orientation, degrees (`[lo, hi]`).
    pub yaw_deg: [f64; 2],
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawReset {
    #[serde(default)]
    joints: BTreeMap<String, f64>,
    #[serde(default)]
    bodies: BTreeMap<String, RawBodyReset>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawBodyReset {
    x: Option<Exact<2>>,
    y: Option<Exact<2>>,
    z: Option<Exact<2>>,
    yaw: Option<Exact<2>>,
}

impl RawReset {
    /// The checked table: every noise finite, from 0 to [`MAX_RESET_OFFSET`]; every range
    /// finite with `lo <= hi`, within ±[`MAX_RESET_OFFSET`] metres (±[`MAX_RESET_YAW_DEG`]
    /// for a yaw).
    pub(crate) fn config(&self, path: &Path) -> Result<ResetConfig, ManifestError> {
        let value = |message: String| ManifestError::Value { path: path.to_path_buf(), message };
        for (joint, &noise) in &self.joints {
            if !(noise.is_finite() && (0.0..=MAX_RESET_OFFSET).contains(&noise)) {
                return Err(value(format!(
                    "[reset.joints] {joint} = {}: give the half-width of the noise, a number from 0 to \
                     {MAX_RESET_OFFSET} (metres for a slide joint, radians for a hinge)",
                    readable(noise)
                )));
            }
        }
        let mut bodies = Vec::with_capacity(self.bodies.len());
        for (body, raw) in &self.bodies {
            let range = |key: &str, r: Option<Exact<2>>, bound: f64, unit: &str| {
                let [lo, hi] = r.map_or([0.0, 0.0], |r| r.0);
                let inside = |v: f64| v.is_finite() && v.abs() <= bound;
                if !(inside(lo) && inside(hi) && lo <= hi) {
                    return Err(value(format!(
                        "[reset.bodies.{body}] {key} = [{}, {}]: give a range [lo, hi] of finite numbers with \
                         lo <= hi, each from -{bound} to {bound} {unit}",
                        readable(lo),
                        readable(hi)
                    )));
                }
                Ok([lo, hi])
            };
            let metres = |key: &str, r: Option<Exact<2>>| range(key, r, MAX_RESET_OFFSET, "metres");
            bodies.push(BodyReset {
                body: body.clone(),
                position: [metres("x", raw.x)?, metres("y", raw.y)?, metres("z", raw.z)?],
                yaw_deg: range("yaw", raw.yaw, MAX_RESET_YAW_DEG, "degrees")?,
            });
        }
        Ok(ResetConfig { joints: self.joints.iter().map(|(j, &n)| (j.clone(), n)).collect(), bodies })
    }
}
