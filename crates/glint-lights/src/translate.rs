//! The translation: a rig (and the names of the lights the scene already has) to MJCF
//! `<light>` elements, the headlight's ambient fill and the warnings, as a pure function.

use std::f64::consts::PI;
use std::fmt;

use serde::Serialize;

use crate::error::LightsError;
use crate::rig::{Light, LightKind, Rig};

/// The share of each non-dome light's diffuse added to the global ambient (MuJoCo's headlight
/// ambient): the fixed-function pipeline has no bounce light, so without it faces turned away
/// from a light would be black where a path tracer shows fill.
pub const AMBIENT_RATIO: f64 = 0.18;
/// The classic renderer evaluates 8 lights, one of them the headlight.
pub const MAX_RIG_LIGHTS: usize = 7;
/// Metres from the origin, against their direction, at which directional lights are placed:
/// their direction alone lights the scene, but MuJoCo's shadow map looks from the light's
/// position, so it must be above what casts shadows.
pub const DISTANT_STANDOFF: f64 = 5.0;

/// The exposure constants that reproduce the seed's MuJoCo column (`spec/lighting.md`).
const DISTANT_GAIN: f64 = 0.95 / 2000.0;
const BULB_GAIN: f64 = 0.18 / 500.0;
const DOME_GAIN: f64 = 0.45 / 1000.0;
/// A light's specular is its diffuse times this.
const SPECULAR_RATIO: f64 = 0.3 / 0.7;
/// A hemisphere below the bulb: MuJoCo's spot cutoff saturates at 90°.
const BULB_CUTOFF: f64 = 90.0;

/// MJCF light types the translation writes (never `point`: it renders black in the classic
/// renderer).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum MjcfLightType {
    /// `type="directional"`.
    Directional,
    /// `type="spot"`.
    Spot,
}

impl MjcfLightType {
    /// The MJCF spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            MjcfLightType::Directional => "directional",
            MjcfLightType::Spot => "spot",
        }
    }
}

/// One MJCF `<light>` element, every attribute the translation decides.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MjcfLight {
    /// The element's name (unique in the patched model).
    pub name: String,
    /// The rig light it came from.
    pub rig_index: usize,
    /// Always written.
    pub light_type: MjcfLightType,
    /// Position, metres.
    pub pos: [f64; 3],
    /// Unit direction the light shines along.
    pub dir: [f64; 3],
    /// Diffuse colour.
    pub diffuse: [f64; 3],
    /// Specular colour.
    pub specular: [f64; 3],
    /// The light's own ambient: always 0 (the fill goes to the headlight's ambient).
    pub ambient: [f64; 3],
    /// Constant attenuation `1 0 0`, as MuJoCo's default (see the seed's distance fall-off).
    pub attenuation: [f64; 3],
    /// Whether the light casts shadows.
    pub castshadow: bool,
    /// Spot cutoff, degrees (spots only).
    pub cutoff: Option<f64>,
    /// Spot exponent (spots only).
    pub exponent: Option<f64>,
}

impl MjcfLight {
    /// The element as one line of MJCF.
    pub fn to_xml(&self) -> String {
        let mut s = format!(
            r#"<light name="{}" type="{}" pos="{}" dir="{}" diffuse="{}" specular="{}" ambient="{}" attenuation="{}" castshadow="{}""#,
            xml_escape(&self.name),
            self.light_type.as_str(),
            vec3(self.pos),
            vec3(self.dir),
            vec3(self.diffuse),
            vec3(self.specular),
            vec3(self.ambient),
            vec3(self.attenuation),
            self.castshadow,
        );
        if let Some(c) = self.cutoff {
            s += &format!(r#" cutoff="{}""#, num(c));
        }
        if let Some(e) = self.exponent {
            s += &format!(r#" exponent="{}""#, num(e));
        }
        s + "/>"
    }
}

/// What the rig does to MuJoCo's headlight: its diffuse and specular become 0 (the rig is the
/// only direct light) and its ambient (the global ambient) becomes exactly `ambient_fill`,
/// whatever the scene's `<headlight ambient>` was (MuJoCo's default 0.1 included).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Headlight {
    /// The headlight's ambient: [`AMBIENT_RATIO`] of each non-dome light's diffuse,
    /// and each dome's ambient.
    pub ambient_fill: [f64; 3],
}

/// Something about a rig that MuJoCo cannot show as written; logged once with its fix, never
/// corrected silently.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum LightWarning {
    /// A diffuse component above 1 clips to white under constant attenuation.
    DiffuseClips {
        /// The MJCF light.
        light: String,
        /// Its diffuse colour.
        diffuse: [f64; 3],
        /// The intensity at which its brightest component would be 1.
        max_intensity: f64,
    },
    /// More lights than the classic renderer evaluates beside the headlight.
    TooManyLights {
        /// The rig's light count.
        count: usize,
    },
    /// A dome's HDR texture, which MuJoCo's lights cannot use.
    DomeTextureIgnored {
        /// The MJCF light.
        light: String,
        /// The file.
        file: String,
    },
    /// A cylinder's `length` or `rot`, which a bulb cannot show.
    CylinderShapeIgnored {
        /// The MJCF light.
        light: String,
        /// Which of `length` and `rot` the rig set.
        fields: Vec<&'static str>,
    },
}

impl fmt::Display for LightWarning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LightWarning::DiffuseClips { light, diffuse, max_intensity } => write!(
                f,
                "light `{light}`: diffuse {} is above 1 and clips to white in MuJoCo's renderer (its attenuation is \
                 constant); set its intensity to {} or less, or darken its color",
                vec3(*diffuse),
                num(*max_intensity)
            ),
            LightWarning::TooManyLights { count } => write!(
                f,
                "the rig has {count} lights: MuJoCo's classic renderer evaluates 8 lights including the headlight, so \
                 lights past the {MAX_RIG_LIGHTS}th are not drawn; merge or remove lights to keep {MAX_RIG_LIGHTS} or \
                 fewer"
            ),
            LightWarning::DomeTextureIgnored { light, file } => write!(
                f,
                "light `{light}`: the dome's texture_file '{file}' is ignored (MuJoCo lights cannot use an HDR map); \
                 the dome is lit in its color, or drop texture_file to silence this"
            ),
            LightWarning::CylinderShapeIgnored { light, fields } => write!(
                f,
                "light `{light}`: the cylinder's {} ignored: MuJoCo has no line lights, so it is lit as a sphere \
                 light at pos; remove {} or use a disk light to aim it",
                fields.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(" and ") + {
                    if fields.len() > 1 { " are" } else { " is" }
                },
                if fields.len() > 1 { "them" } else { "it" }
            ),
        }
    }
}

/// The MJCF side of a rig.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Translation {
    /// One element per rig light, in rig order.
    pub lights: Vec<MjcfLight>,
    /// What happens to the headlight.
    pub headlight: Headlight,
    /// What the rig asks that MuJoCo cannot show, each with its fix.
    pub warnings: Vec<LightWarning>,
}

/// Translates `rig` for a model whose lights are named `existing` (names that clash get
/// `_scenario`). Every rule of the seed's table: see `spec/lighting.md`.
pub fn translate(rig: &Rig, existing: &[&str]) -> Result<Translation, LightsError> {
    let names = names(rig, existing)?;
    let mut out = Translation::default();
    for (index, (light, name)) in rig.lights.iter().zip(names).enumerate() {
        let element = element(light, index, name);
        let fill = match light.kind {
            LightKind::Dome { .. } => element.diffuse,
            _ => element.diffuse.map(|d| d * AMBIENT_RATIO),
        };
        for (a, f) in out.headlight.ambient_fill.iter_mut().zip(fill) {
            *a += f;
        }
        out.warnings.extend(warnings(light, &element));
        out.lights.push(element);
    }
    if rig.lights.len() > MAX_RIG_LIGHTS {
        out.warnings.push(LightWarning::TooManyLights { count: rig.lights.len() });
    }
    Ok(out)
}

/// Each light's MJCF name: its own, or `light_<index>`; `_scenario` appended while it clashes
/// with a scene light.
fn names(rig: &Rig, existing: &[&str]) -> Result<Vec<String>, LightsError> {
    let mut names: Vec<String> = Vec::with_capacity(rig.lights.len());
    for (i, light) in rig.lights.iter().enumerate() {
        let name = if light.name.is_empty() { format!("light_{i}") } else { light.name.clone() };
        if let Some(first) = names.iter().position(|n| *n == name) {
            return Err(LightsError::DuplicateName { name, first, second: i });
        }
        names.push(name);
    }
    let taken = |n: &str, names: &[String]| existing.contains(&n) || names.iter().filter(|m| *m == n).count() > 1;
    for i in 0..names.len() {
        while taken(&names[i], &names) {
            names[i] += "_scenario";
        }
    }
    Ok(names)
}

/// The MJCF element of rig light `index`.
fn element(light: &Light, index: usize, name: String) -> MjcfLight {
    let scaled = |gain: f64| light.color.map(|c| c * light.intensity * gain);
    let down = [0.0, 0.0, -1.0];
    let (light_type, pos, dir, diffuse, castshadow) = match &light.kind {
        LightKind::Distant { polar, azimuth } => {
            let dir = distant_dir(*polar, *azimuth);
            (MjcfLightType::Directional, dir.map(|d| -d * DISTANT_STANDOFF), dir, scaled(DISTANT_GAIN), true)
        }
        LightKind::Sphere { radius, pos, normalize } => {
            let area = if *normalize { 1.0 } else { 4.0 * PI * radius * radius };
            (MjcfLightType::Spot, *pos, down, scaled(BULB_GAIN * area), true)
        }
        LightKind::Disk { radius, pos, rot, normalize } => {
            let area = if *normalize { 1.0 } else { PI * radius * radius };
            (MjcfLightType::Spot, *pos, rotate(*rot, down), scaled(BULB_GAIN * area), true)
        }
        LightKind::Cylinder { pos, .. } => (MjcfLightType::Spot, *pos, down, scaled(BULB_GAIN), true),
        LightKind::Dome { .. } => {
            (MjcfLightType::Directional, [0.0, 0.0, DISTANT_STANDOFF], down, scaled(DOME_GAIN), false)
        }
    };
    let specular = match light.kind {
        LightKind::Dome { .. } => [0.0; 3],
        _ => diffuse.map(|d| d * SPECULAR_RATIO),
    };
    let spot = light_type == MjcfLightType::Spot;
    MjcfLight {
        name,
        rig_index: index,
        light_type,
        pos,
        dir,
        diffuse,
        specular,
        ambient: [0.0; 3],
        attenuation: [1.0, 0.0, 0.0],
        castshadow,
        cutoff: spot.then_some(BULB_CUTOFF),
        exponent: spot.then_some(0.0),
    }
}

fn warnings(light: &Light, element: &MjcfLight) -> Vec<LightWarning> {
    let mut out = Vec::new();
    let brightest = element.diffuse.iter().copied().fold(0.0, f64::max);
    if brightest > 1.0 {
        out.push(LightWarning::DiffuseClips {
            light: element.name.clone(),
            diffuse: element.diffuse,
            max_intensity: light.intensity / brightest,
        });
    }
    match &light.kind {
        LightKind::Dome { texture_file: Some(file) } => {
            out.push(LightWarning::DomeTextureIgnored { light: element.name.clone(), file: file.clone() })
        }
        LightKind::Cylinder { shape_set, .. } if !shape_set.is_empty() => {
            out.push(LightWarning::CylinderShapeIgnored { light: element.name.clone(), fields: shape_set.clone() })
        }
        _ => {}
    }
    out
}

/// A distant light's direction: `Rz(azimuth)·Rx(polar)·(0, 0, −1)`.
pub(crate) fn distant_dir(polar_deg: f64, azimuth_deg: f64) -> [f64; 3] {
    let (sp, cp) = polar_deg.to_radians().sin_cos();
    let (sa, ca) = azimuth_deg.to_radians().sin_cos();
    // Rx(polar)·(0, 0, −1) = (0, sin p, −cos p); then Rz turns (x, y) by the azimuth.
    [-sp * sa, sp * ca, -cp]
}

/// `v` rotated by the unit quaternion `q` = (w, x, y, z).
pub(crate) fn rotate(q: [f64; 4], v: [f64; 3]) -> [f64; 3] {
    let [w, x, y, z] = q;
    let u = [x, y, z];
    let cross =
        |a: [f64; 3], b: [f64; 3]| [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
    // v + 2w(u×v) + 2u×(u×v)
    let t = cross(u, v).map(|c| 2.0 * c);
    let ut = cross(u, t);
    [v[0] + w * t[0] + ut[0], v[1] + w * t[1] + ut[1], v[2] + w * t[2] + ut[2]]
}

/// A number as MJCF gets it: at most six decimals, no trailing zeros, no `-0`.
fn num(x: f64) -> String {
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.into() }
}

fn vec3(v: [f64; 3]) -> String {
    v.map(num).join(" ")
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;")
}
