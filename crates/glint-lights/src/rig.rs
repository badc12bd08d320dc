//! A rig: UsdLux-style lights with the config classes' fields and defaults, read from
//! `[[lights]]` tables (a manifest or a TOML rig file) or a JSON rig file.

use std::path::Path;

use glint_core::{Exact, nearest_name};
use serde::{Deserialize, Serialize};

use crate::error::LightsError;

/// One light of a rig: what every light has, and its type's own fields.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Light {
    /// The light's name; empty for an unnamed light (it becomes `light_<index>`).
    pub name: String,
    /// Intensity in the UsdLux sense (candela-like); default 500.
    pub intensity: f64,
    /// Linear RGB colour; default (1, 1, 1).
    pub color: [f64; 3],
    /// The light type and its fields.
    pub kind: LightKind,
}

/// The five UsdLux light types glint translates.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum LightKind {
    /// A light at infinity (the sun): `polar` and `azimuth` in degrees aim it.
    Distant {
        /// Angle from the zenith, degrees (default 0: straight down).
        polar: f64,
        /// Rotation about world Z, degrees (default 0).
        azimuth: f64,
    },
    /// A spherical bulb of `radius` at `pos`.
    Sphere {
        /// Bulb radius, metres (default 0.5).
        radius: f64,
        /// Position, metres.
        pos: [f64; 3],
        /// Whether `intensity` is the light's total output (default) or per unit area.
        normalize: bool,
    },
    /// A disk of `radius` at `pos`, emitting along its local −Z turned by `rot`.
    Disk {
        /// Disk radius, metres (default 1.0).
        radius: f64,
        /// Position, metres.
        pos: [f64; 3],
        /// Orientation quaternion (w, x, y, z), default identity.
        rot: [f64; 4],
        /// Whether `intensity` is the light's total output (default) or per unit area.
        normalize: bool,
    },
    /// A tube light; MuJoCo has no line lights, so it is lit as a bulb at `pos`.
    Cylinder {
        /// Tube length, metres (default 1.0); reported, not translated.
        length: f64,
        /// Tube radius, metres (default 0.5).
        radius: f64,
        /// Position, metres.
        pos: [f64; 3],
        /// Orientation quaternion (w, x, y, z), default identity; reported, not translated.
        rot: [f64; 4],
        /// Which of `length` and `rot` the rig set (they are reported as ignored).
        #[serde(skip)]
        shape_set: Vec<&'static str>,
    },
    /// Light from the whole sky.
    Dome {
        /// An HDR environment map; reported and ignored (MuJoCo's lights cannot use one).
        texture_file: Option<String>,
    },
}

/// The rig's lights in order (a light's index is its position here).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Rig {
    /// The lights.
    pub lights: Vec<Light>,
}

/// The type names, as written in `type = "..."`.
pub const LIGHT_TYPES: [&str; 5] = ["distant", "sphere", "disk", "cylinder", "dome"];
const COMMON: [&str; 4] = ["type", "name", "intensity", "color"];

/// The keys a light of `kind` takes besides the common ones.
fn own_keys(kind: &str) -> &'static [&'static str] {
    match kind {
        "distant" => &["polar", "azimuth"],
        "sphere" => &["radius", "pos", "normalize"],
        "disk" => &["radius", "pos", "rot", "normalize"],
        "cylinder" => &["length", "radius", "pos", "rot"],
        _ => &["texture_file"],
    }
}

/// A light as written, every field optional, checked against its type by [`RawLight::light`].
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLight {
    #[serde(rename = "type")]
    kind: Option<String>,
    name: Option<String>,
    intensity: Option<f64>,
    color: Option<Exact<3>>,
    polar: Option<f64>,
    azimuth: Option<f64>,
    radius: Option<f64>,
    length: Option<f64>,
    pos: Option<Exact<3>>,
    rot: Option<Exact<4>>,
    normalize: Option<bool>,
    texture_file: Option<String>,
}

impl RawLight {
    fn set_keys(&self) -> Vec<&'static str> {
        let set = [
            ("name", self.name.is_some()),
            ("intensity", self.intensity.is_some()),
            ("color", self.color.is_some()),
            ("polar", self.polar.is_some()),
            ("azimuth", self.azimuth.is_some()),
            ("radius", self.radius.is_some()),
            ("length", self.length.is_some()),
            ("pos", self.pos.is_some()),
            ("rot", self.rot.is_some()),
            ("normalize", self.normalize.is_some()),
            ("texture_file", self.texture_file.is_some()),
        ];
        set.into_iter().filter(|(_, s)| *s).map(|(k, _)| k).collect()
    }

    /// The light at `index`, its type's defaults applied and every field checked.
    pub fn light(&self, index: usize) -> Result<Light, LightsError> {
        let bad = |message: String| LightsError::Field { index, message };
        let Some(kind) = self.kind.as_deref() else {
            return Err(bad(format!("has no `type`; set type = one of {}", quoted(&LIGHT_TYPES))));
        };
        if !LIGHT_TYPES.contains(&kind) {
            let hint = nearest_name(kind, LIGHT_TYPES).map_or(String::new(), |n| format!(" (did you mean \"{n}\"?)"));
            return Err(bad(format!("has type = \"{kind}\"{hint}; use one of {}", quoted(&LIGHT_TYPES))));
        }
        for key in self.set_keys() {
            if !COMMON.contains(&key) && !own_keys(kind).contains(&key) {
                let valid: Vec<&str> = COMMON.iter().chain(own_keys(kind)).copied().collect();
                return Err(bad(format!("`{key}` is not a field of a {kind} light; it takes {}", valid.join(", "))));
            }
        }
        let intensity = self.intensity.unwrap_or(500.0);
        check(index, "intensity", intensity, intensity >= 0.0, "a finite number, 0 or more")?;
        let color = self.color.map_or([1.0; 3], |c| c.0);
        for c in color {
            check(index, "color", c, c >= 0.0, "finite components, 0 or more (linear RGB)")?;
        }
        let pos = self.pos.map_or([0.0; 3], |p| p.0);
        for p in pos {
            check(index, "pos", p, true, "finite metres")?;
        }
        let radius = |default: f64| -> Result<f64, LightsError> {
            let r = self.radius.unwrap_or(default);
            check(index, "radius", r, r > 0.0, "a finite number of metres above 0")?;
            Ok(r)
        };
        let rot = || self.rot.map(|q| unit_quat(index, q.0)).transpose().map(|q| q.unwrap_or([1.0, 0.0, 0.0, 0.0]));
        let normalize = self.normalize.unwrap_or(true);
        let kind = match kind {
            "distant" => {
                let (polar, azimuth) = (self.polar.unwrap_or(0.0), self.azimuth.unwrap_or(0.0));
                check(index, "polar", polar, true, "finite degrees")?;
                check(index, "azimuth", azimuth, true, "finite degrees")?;
                LightKind::Distant { polar, azimuth }
            }
            "sphere" => LightKind::Sphere { radius: radius(0.5)?, pos, normalize },
            "disk" => LightKind::Disk { radius: radius(1.0)?, pos, rot: rot()?, normalize },
            "cylinder" => {
                let length = self.length.unwrap_or(1.0);
                check(index, "length", length, length > 0.0, "a finite number of metres above 0")?;
                let shape_set = [("length", self.length.is_some()), ("rot", self.rot.is_some())]
                    .into_iter()
                    .filter_map(|(k, set)| set.then_some(k))
                    .collect();
                LightKind::Cylinder { length, radius: radius(0.5)?, pos, rot: rot()?, shape_set }
            }
            _ => LightKind::Dome { texture_file: self.texture_file.clone() },
        };
        Ok(Light { name: self.name.clone().unwrap_or_default(), intensity, color, kind })
    }
}

fn quoted(names: &[&str]) -> String {
    names.iter().map(|n| format!("\"{n}\"")).collect::<Vec<_>>().join(", ")
}

fn check(index: usize, field: &str, value: f64, ok: bool, range: &str) -> Result<(), LightsError> {
    if value.is_finite() && ok {
        Ok(())
    } else {
        Err(LightsError::Field { index, message: format!("`{field}` = {value} is out of range: use {range}") })
    }
}

/// `q` scaled to unit length (a rotation must have one).
fn unit_quat(index: usize, q: [f64; 4]) -> Result<[f64; 4], LightsError> {
    let norm = q.iter().map(|c| c * c).sum::<f64>().sqrt();
    if !(norm.is_finite() && norm > 1e-9) {
        return Err(LightsError::Field {
            index,
            message: format!("`rot` = {q:?} is not a rotation: give a non-zero quaternion (w, x, y, z)"),
        });
    }
    Ok(q.map(|c| c / norm))
}

/// A rig file's top level: `[[lights]]` tables (TOML) or `{"lights": [...]}` (JSON).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRig {
    #[serde(default)]
    lights: Vec<RawLight>,
}

impl Rig {
    /// The rig of `lights` as written, each checked.
    pub fn from_raw(lights: &[RawLight]) -> Result<Rig, LightsError> {
        let lights = lights.iter().enumerate().map(|(i, l)| l.light(i)).collect::<Result<_, _>>()?;
        Ok(Rig { lights })
    }

    /// A rig from TOML text holding `[[lights]]` tables.
    pub fn from_toml_str(text: &str) -> Result<Rig, LightsError> {
        let raw: RawRig = toml::from_str(text).map_err(|e| LightsError::Parse { message: e.to_string() })?;
        Rig::from_raw(&raw.lights)
    }

    /// A rig from JSON text: `{"lights": [...]}` or the bare list.
    pub fn from_json_str(text: &str) -> Result<Rig, LightsError> {
        let value: serde_json::Value =
            serde_json::from_str(text).map_err(|e| LightsError::Parse { message: e.to_string() })?;
        let raw: RawRig = if value.is_array() {
            RawRig { lights: serde_json::from_value(value).map_err(|e| LightsError::Parse { message: e.to_string() })? }
        } else {
            serde_json::from_value(value).map_err(|e| LightsError::Parse { message: e.to_string() })?
        };
        Rig::from_raw(&raw.lights)
    }

    /// A rig file: JSON when its name ends in `.json`, TOML otherwise.
    pub fn load(path: impl AsRef<Path>) -> Result<Rig, LightsError> {
        let path = path.as_ref();
        let in_file = |error: LightsError| LightsError::File { path: path.to_path_buf(), error: Box::new(error) };
        let text = std::fs::read_to_string(path)
            .map_err(|e| LightsError::Read { path: path.to_path_buf(), reason: e.to_string() })?;
        let json = path.extension().is_some_and(|e| e.eq_ignore_ascii_case("json"));
        if json { Rig::from_json_str(&text) } else { Rig::from_toml_str(&text) }.map_err(in_file)
    }
}
