//! `[[camera]]`: an MJCF camera bound for rendering, with its resolution and outputs.

use std::path::Path;

use glint_camera::{DebugChannel, DepthPreset, DepthSensor, MAX_SIDE, SensorModel, TargetOrder};
use glint_core::Spelled;
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
    /// How depth is measured: the clean depth (default), or a depth sensor's model from
    /// `sensor_model` or `preset` and the fields that adjust it.
    pub depth_sensor: DepthSensor,
    /// Vertical field of view, degrees, replacing the MJCF camera's: `fovy`, else the
    /// preset's; `None`: the MJCF camera's.
    pub fovy: Option<f64>,
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
    fovy: Option<f64>,
    sensor_model: Option<String>,
    preset: Option<String>,
    depth_scale: Option<f64>,
    min_range: Option<f64>,
    max_range: Option<f64>,
    detect_floor: Option<f64>,
    baseline: Option<f64>,
    subpixel_sigma: Option<f64>,
    max_disparity: Option<f64>,
    disparity_step: Option<f64>,
    modulation_mhz: Option<f64>,
    modulation2_mhz: Option<f64>,
    range_noise: Option<f64>,
    saturation: Option<f64>,
    subpixels: Option<f64>,
    zones: Option<f64>,
    zone_rays: Option<f64>,
    bin_width: Option<f64>,
    ambient_counts: Option<f64>,
    target_order: Option<String>,
    debug_channel: Option<toml::Value>,
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
        let preset = match &self.preset {
            Some(name) => Some(
                DepthPreset::from_name(name).map_err(|e| bad(with_nearest(e.to_string(), name, DepthPreset::NAMES)))?,
            ),
            None => None,
        };
        let resolution = match (side(self.width, "width")?, side(self.height, "height")?) {
            (Some(w), Some(h)) => Some((w, h)),
            (None, None) => preset.map(DepthPreset::resolution),
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
        let depth_sensor = self.depth_sensor(preset).map_err(bad)?;
        let fovy = self.fovy.or(preset.map(DepthPreset::fovy));
        if let Some(f) = fovy.filter(|f| !(f.is_finite() && *f > 0.0 && *f < 180.0)) {
            return Err(bad(format!("fovy = {f} is out of range; use (0, 180) degrees")));
        }
        Ok(CameraBinding {
            camera,
            resolution,
            outputs,
            use_textures: self.use_textures.unwrap_or(true),
            use_shadows: self.use_shadows.unwrap_or(true),
            geom_groups,
            rate_hz,
            depth_sensor,
            fovy,
        })
    }

    /// The depth sensor: the preset's, its model replaced by `sensor_model`, then the fields
    /// given; checked (an error is the message for the table).
    fn depth_sensor(&self, preset: Option<DepthPreset>) -> Result<DepthSensor, String> {
        let model = match &self.sensor_model {
            Some(name) => {
                Some(SensorModel::from_name(name).map_err(|e| with_nearest(e.to_string(), name, SensorModel::NAMES))?)
            }
            None => None,
        };
        // A preset's fields (its model replaced by `sensor_model`), else the model's own device.
        let mut sensor = match (preset, model) {
            (Some(p), _) => DepthSensor::preset(p),
            (None, Some(m)) => DepthSensor::for_model(m),
            (None, None) => DepthSensor::default(),
        };
        if let Some(m) = model {
            sensor.model = m;
        }
        // DepthSensor's field list, by the same names (a test checks that each is here).
        let fields = [
            ("depth_scale", self.depth_scale),
            ("min_range", self.min_range),
            ("max_range", self.max_range),
            ("detect_floor", self.detect_floor),
            ("baseline", self.baseline),
            ("subpixel_sigma", self.subpixel_sigma),
            ("max_disparity", self.max_disparity),
            ("disparity_step", self.disparity_step),
            ("modulation_mhz", self.modulation_mhz),
            ("modulation2_mhz", self.modulation2_mhz),
            ("range_noise", self.range_noise),
            ("saturation", self.saturation),
            ("subpixels", self.subpixels),
            ("zones", self.zones),
            ("zone_rays", self.zone_rays),
            ("bin_width", self.bin_width),
            ("ambient_counts", self.ambient_counts),
        ];
        for (name, value) in fields {
            if let Some(v) = value {
                sensor.set_field(name, v).map_err(|e| e.to_string())?;
            }
        }
        if let Some(name) = &self.target_order {
            sensor.target_order =
                TargetOrder::from_name(name).map_err(|e| with_nearest(e.to_string(), name, TargetOrder::NAMES))?;
        }
        if let Some(channel) = &self.debug_channel {
            sensor.debug_channel = match channel {
                toml::Value::Integer(i) => DebugChannel::from_index(*i).map_err(|e| e.to_string())?,
                toml::Value::String(name) => {
                    DebugChannel::from_name(name).map_err(|e| with_nearest(e.to_string(), name, DebugChannel::NAMES))?
                }
                other => {
                    return Err(format!(
                        "debug_channel = {other}: give its number (0 to 9) or its name ({})",
                        DebugChannel::names()
                    ));
                }
            };
        }
        if sensor.is_active() {
            sensor.validate().map_err(|e| e.to_string())?;
        }
        Ok(sensor)
    }
}

/// `message` with the valid name nearest `name` appended, when one is near.
fn with_nearest<T>(message: String, name: &str, names: &[(T, &str)]) -> String {
    match glint_core::nearest_name(name, names.iter().map(|(_, n)| *n)) {
        Some(near) => format!("{message}; did you mean '{near}'?"),
        None => message,
    }
}
