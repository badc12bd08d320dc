//! `[[camera]]`: an MJCF camera bound for rendering, with its resolution and outputs.

use std::path::Path;

use glint_camera::MAX_SIDE;
use serde::Deserialize;

use crate::ManifestError;

/// Frames per second a recording takes of a camera when its binding does not say.
pub const DEFAULT_RATE_HZ: f64 = 10.0;
/// The outputs a camera can render.
pub const CAMERA_OUTPUTS: [&str; 3] = ["rgb", "depth", "seg"];

/// One camera binding.
#[derive(Clone, Debug, PartialEq)]
pub struct CameraBinding {
    /// The MJCF camera's name (checked against the scene when the simulation is built).
    pub camera: String,
    /// Width and height in pixels; `None`: the MJCF camera's `resolution`.
    pub resolution: Option<(usize, usize)>,
    /// Which outputs (colour, depth, segmentation) the binding asks for; `None`: those the
    /// MJCF camera's `output` attribute names.
    pub outputs: Option<[bool; 3]>,
    /// Apply textures (default true).
    pub use_textures: bool,
    /// Shadows (default true).
    pub use_shadows: bool,
    /// MuJoCo geom groups drawn (default 0, 1, 2).
    pub geom_groups: [bool; 6],
    /// Frames per second of simulated time a recording takes (default 10; a whole fraction
    /// of the runner's ticks per second, checked when the simulation is built).
    pub rate_hz: f64,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCamera {
    camera: Option<String>,
    width: Option<i64>,
    height: Option<i64>,
    outputs: Option<Vec<String>>,
    use_textures: Option<bool>,
    use_shadows: Option<bool>,
    geom_groups: Option<Vec<i64>>,
    rate_hz: Option<f64>,
}

impl RawCamera {
    pub(crate) fn binding(&self, path: &Path, index: usize) -> Result<CameraBinding, ManifestError> {
        let bad = |message: String| ManifestError::Value {
            path: path.to_path_buf(),
            message: format!("[[camera]] {index}: {message}"),
        };
        let camera =
            self.camera.clone().ok_or_else(|| bad("has no `camera`: name the MJCF camera to render".into()))?;
        let side = |v: Option<i64>, key: &str| -> Result<Option<usize>, ManifestError> {
            match v {
                None => Ok(None),
                Some(n) if (1..=MAX_SIDE as i64).contains(&n) => Ok(Some(n as usize)),
                Some(n) => Err(bad(format!("{key} = {n} is out of range; use 1 to {MAX_SIDE} pixels"))),
            }
        };
        let resolution = match (side(self.width, "width")?, side(self.height, "height")?) {
            (Some(w), Some(h)) => Some((w, h)),
            (None, None) => None,
            _ => return Err(bad("give both width and height, or neither (the MJCF camera's resolution)".into())),
        };
        if let Some(outputs) = &self.outputs {
            if outputs.is_empty() {
                return Err(bad(format!("outputs is empty; list one or more of {}", CAMERA_OUTPUTS.join(", "))));
            }
            if let Some(o) = outputs.iter().find(|o| !CAMERA_OUTPUTS.contains(&o.as_str())) {
                return Err(bad(format!("outputs has \"{o}\"; use {}", CAMERA_OUTPUTS.join(", "))));
            }
        }
        let mut geom_groups = [true, true, true, false, false, false];
        if let Some(groups) = &self.geom_groups {
            geom_groups = [false; 6];
            for &g in groups {
                if !(0..6).contains(&g) {
                    return Err(bad(format!("geom_groups has {g}; MuJoCo's groups are 0 to 5")));
                }
                geom_groups[g as usize] = true;
            }
        }
        let rate_hz = self.rate_hz.unwrap_or(DEFAULT_RATE_HZ);
        if !(rate_hz.is_finite() && rate_hz > 0.0 && rate_hz <= 1000.0) {
            return Err(bad(format!("rate_hz = {rate_hz} is out of range; use (0, 1000] frames per second")));
        }
        let outputs = self.outputs.as_ref().map(|list| CAMERA_OUTPUTS.map(|o| list.iter().any(|x| x == o)));
        Ok(CameraBinding {
            camera,
            resolution,
            outputs,
            use_textures: self.use_textures.unwrap_or(true),
            use_shadows: self.use_shadows.unwrap_or(true),
            geom_groups,
            rate_hz,
        })
    }
}
