//! `[controller]`: what moves the robot during `glint run`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::ManifestError;
use crate::values::Exact;

const KINDS: &str = "zero, velocity, waypoints, replay";

/// How the robot is driven. Actuator and body names are checked against the model when the
/// scene is loaded (`glint run`), since the manifest alone does not know them.
#[derive(Clone, Debug, PartialEq, Default)]
#[non_exhaustive]
pub enum Controller {
    /// Every control stays at zero (the default).
    #[default]
    Zero,
    /// Constant controls, by actuator name (the others stay zero).
    Velocity {
        /// `(actuator, control)` pairs.
        ctrl: Vec<(String, f64)>,
    },
    /// Drives a planar base through waypoints with velocity actuators along world x and y
    /// (and optionally a yaw actuator that turns it to face its direction of travel).
    Waypoints {
        /// The body whose world position is steered.
        body: String,
        /// Waypoints, world (x, y) in metres, visited in order.
        points: Vec<[f64; 2]>,
        /// Travel speed, m/s.
        speed: f64,
        /// Actuators commanding world x and y velocity.
        x: String,
        /// See `x`.
        y: String,
        /// Actuator commanding the yaw rate, if any.
        yaw: Option<String>,
        /// A waypoint counts as reached within this distance (m).
        tolerance: f64,
        /// Start over after the last waypoint (else stop there).
        repeat: bool,
    },
    /// Replays a recorded action file: CSV with a header `time,<actuator>,<actuator>…` and one
    /// row per change, held until the next row.
    Replay {
        /// The CSV file, resolved against the manifest's folder.
        actions: PathBuf,
    },
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawController {
    kind: Option<String>,
    ctrl: Option<BTreeMap<String, f64>>,
    body: Option<String>,
    points: Option<Vec<Exact<2>>>,
    speed: Option<f64>,
    actuators: Option<RawActuators>,
    tolerance: Option<f64>,
    repeat: Option<bool>,
    actions: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawActuators {
    x: String,
    y: String,
    yaw: Option<String>,
}

impl RawController {
    pub(crate) fn controller(&self, path: &Path) -> Result<Controller, ManifestError> {
        let value = |message: String| ManifestError::Value { path: path.to_path_buf(), message };
        let need = |key: &str, kind: &str| value(format!("[controller] kind = \"{kind}\" needs `{key}`"));
        let kind = self.kind.as_deref().unwrap_or("zero");
        let controller = match kind {
            "zero" => Controller::Zero,
            "velocity" => {
                let ctrl: Vec<(String, f64)> =
                    self.ctrl.clone().ok_or_else(|| need("ctrl", kind))?.into_iter().collect();
                if let Some((name, c)) = ctrl.iter().find(|(_, c)| !c.is_finite()) {
                    return Err(value(format!("[controller] ctrl.{name} is {c}, which is not a finite number")));
                }
                Controller::Velocity { ctrl }
            }
            "waypoints" => {
                let points: Vec<[f64; 2]> =
                    self.points.as_ref().ok_or_else(|| need("points", kind))?.iter().map(|p| p.0).collect();
                if points.is_empty() {
                    return Err(value("[controller] points is empty: it must hold at least one [x, y] pair".into()));
                }
                if let Some((i, [x, y])) = points.iter().enumerate().find(|(_, p)| !p.iter().all(|v| v.is_finite())) {
                    return Err(value(format!(
                        "[controller] points[{i}] is [{x}, {y}], outside its range: a finite [x, y] pair of metres"
                    )));
                }
                let speed = self.speed.unwrap_or(0.5);
                if !(speed.is_finite() && speed > 0.0 && speed <= 100.0) {
                    return Err(value(format!("[controller] speed is {speed}, outside its range (0, 100] m/s")));
                }
                let tolerance = self.tolerance.unwrap_or(0.1);
                if !(tolerance.is_finite() && tolerance > 0.0) {
                    return Err(value(format!("[controller] tolerance is {tolerance}, which must be above 0 m")));
                }
                let actuators = self.actuators.as_ref().ok_or_else(|| need("actuators = { x = …, y = … }", kind))?;
                Controller::Waypoints {
                    body: self.body.clone().ok_or_else(|| need("body", kind))?,
                    points,
                    speed,
                    x: actuators.x.clone(),
                    y: actuators.y.clone(),
                    yaw: actuators.yaw.clone(),
                    tolerance,
                    repeat: self.repeat.unwrap_or(true),
                }
            }
            "replay" => {
                let actions = self.actions.as_ref().ok_or_else(|| need("actions", kind))?;
                Controller::Replay { actions: path.parent().unwrap_or(Path::new(".")).join(actions) }
            }
            other => {
                return Err(ManifestError::BadValue {
                    path: path.to_path_buf(),
                    table: "[controller]".into(),
                    key: "kind",
                    value: other.into(),
                    valid: KINDS.into(),
                });
            }
        };
        Ok(controller)
    }
}
