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

/// The keys of a `[reset]` table and of each `[reset.bodies.NAME]` table.
pub(crate) const RESET_KEYS: &[&str] = &["joints", "bodies"];
pub(crate) const BODY_RESET_KEYS: &[&str] = &["x", "y", "z", "yaw"];

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
    x: Option<[f64; 2]>,
    y: Option<[f64; 2]>,
    z: Option<[f64; 2]>,
    yaw: Option<[f64; 2]>,
}

impl RawReset {
    /// The checked table: every noise finite and at least 0, every range finite with
    /// `lo <= hi`.
    pub(crate) fn config(&self, path: &Path) -> Result<ResetConfig, ManifestError> {
        let value = |message: String| ManifestError::Value { path: path.to_path_buf(), message };
        for (joint, &noise) in &self.joints {
            if !(noise.is_finite() && noise >= 0.0) {
                return Err(value(format!(
                    "[reset.joints] {joint} = {noise}: give the half-width of the noise, a finite number >= 0 \
                     (metres for a slide joint, radians for a hinge)"
                )));
            }
        }
        let mut bodies = Vec::with_capacity(self.bodies.len());
        for (body, raw) in &self.bodies {
            let range = |key: &str, r: Option<[f64; 2]>| -> Result<[f64; 2], ManifestError> {
                let [lo, hi] = r.unwrap_or([0.0, 0.0]);
                if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
                    return Err(value(format!(
                        "[reset.bodies.{body}] {key} = [{lo}, {hi}]: give a range [lo, hi] of finite numbers with lo <= hi"
                    )));
                }
                Ok([lo, hi])
            };
            bodies.push(BodyReset {
                body: body.clone(),
                position: [range("x", raw.x)?, range("y", raw.y)?, range("z", raw.z)?],
                yaw_deg: range("yaw", raw.yaw)?,
            });
        }
        Ok(ResetConfig { joints: self.joints.iter().map(|(j, &n)| (j.clone(), n)).collect(), bodies })
    }
}
