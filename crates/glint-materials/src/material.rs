//! Near-infrared (905 nm) materials: the seed's channels, its twelve presets, its metal F0
//! table, and the fallback from visible albedo for materials nobody authored.
//!
//! Preset values and the physics behind them (905 nm):
//!
//! | preset | class | ρ | r | F0 | T | α (1/m) | roughness | metalness | why |
//! |---|---|---|---|---|---|---|---|---|---|
//! | `diffuse` | opaque | 0.50 | 0 | 0.04 | 0 | 0 | 1.0 | 0 | plaster, painted wall (concrete 0.25–0.40, white paint 0.8–0.9) |
//! | `retroreflector` | opaque | 0.80 | 1 | 0.04 | 0 | 0 | 0.5 | 0 | ASTM D4956 Type III sheeting: `retroGain` ≈ 800 × matte head-on |
//! | `clear-float-glass` | slab | 0 | 0 | 0.042 | 0.71 | 0 | 0 | 0 | n ≈ 1.515, 5 mm float glass |
//! | `tinted-glass` | slab | 0 | 0 | 0.042 | 0.28 | 0 | 0 | 0 | green solar glass |
//! | `low-e-glass` | slab | 0 | 0 | 0.60 | 0.01 | 0 | 0 | 0 | solar-control coating: reflects most NIR, about 1 % through |
//! | `mirror` | specular | 0 | 0 | 0.90 | 0 | 0 | 0 | 1 | silvered glass |
//! | `polished-metal` | specular | 0 | 0 | 0.90 | 0 | 0 | 0.3 | 1 | machined aluminium (slope 0.09 rad, still folds) |
//! | `still-water` | medium | 0 | 0 | 0.020 | 0.98 | 6.9 | 0 | 0 | n ≈ 1.327; 1/e within about 15 cm; T = 1 − F0 |
//! | `wet-ground` | opaque | 0.06 | 0 | 0.02 | 0 | 0 | 0.2 | 0 | wet asphalt: the film sends energy forward (dry 0.05–0.20) |
//! | `vegetation` | porous | 0.50 | 0 | 0.04 | 0.30 | 0 | 1.0 | 0 | canopy ρ 0.45–0.55; 30 % of pulses find a gap |
//! | `dark-absorptive` | opaque | 0.03 | 0 | 0.04 | 0 | 0 | 1.0 | 0 | soot, black rubber, tar paper |
//! | `gloss-dark-paint` | opaque | 0.05 | 0 | 0.05 | 0 | 0 | 0.05 | 0 | black car clearcoat (paint 0.03–0.08 under a glossy coat) |
//!
//! Roughness maps to an RMS microfacet slope `m = roughness²` radians (the usual
//! Beckmann/GGX `α = roughness²`), floored by the return model's `specSlopeFloor`.

use glint_core::{Spelled, spelled};

use crate::MaterialError;

/// What the pulse does after the first surface (the seed's "Surface classes"). Not
/// `#[non_exhaustive]`: every sensor that reads materials matches every class, and a new one
/// must be a compile error in each.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Continuation {
    /// The pulse stops.
    #[default]
    Opaque,
    /// Passes straight through, unbent (window glass).
    Slab,
    /// Refracts and absorbs along the submerged path (water).
    Medium,
    /// Part hits, part passes a gap (foliage).
    Porous,
    /// Folds about the surface normal (mirrors, polished metal).
    Specular,
}

spelled!(Continuation, "continuation class", [
    Opaque => "opaque",
    Slab => "slab",
    Medium => "medium",
    Porous => "porous",
    Specular => "specular",
]);

/// The NIR channels of one material (the seed's "Authoring a material"), plus the roughness
/// and metalness the presets set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct NirMaterial {
    /// Diffuse reflectivity at 905 nm, 0 to 1.
    pub reflectivity: f32,
    /// Blend toward a retroreflective response, 0 to 1.
    pub retroreflective: f32,
    /// Specular reflectance at normal incidence, 0 to 1.
    pub f0: f32,
    /// Fraction carried onward (for porous: the chance of a gap), 0 to 1.
    pub transmission: f32,
    /// Absorption inside a medium, 0 to 100 per metre.
    pub absorption: f32,
    /// What the pulse does after the surface.
    pub continuation: Continuation,
    /// Perceptual roughness, 0 (polished) to 1 (matte).
    pub roughness: f32,
    /// 0 (dielectric) to 1 (metal): metals have no diffuse term.
    pub metalness: f32,
}

impl Default for NirMaterial {
    /// An opaque matte surface of reflectivity 0.5.
    fn default() -> Self {
        MaterialPreset::Diffuse.material()
    }
}

impl NirMaterial {
    /// The fallback for a material nobody authored: reflectivity is the Rec. 709 luma of the
    /// visible colour, opaque, F0 0.04, no retroreflection, fully rough.
    pub fn from_albedo(rgba: [f32; 4]) -> NirMaterial {
        let luma = 0.2126 * rgba[0] + 0.7152 * rgba[1] + 0.0722 * rgba[2];
        NirMaterial {
            reflectivity: luma.clamp(0.0, 1.0),
            retroreflective: 0.0,
            f0: 0.04,
            transmission: 0.0,
            absorption: 0.0,
            continuation: Continuation::Opaque,
            roughness: 1.0,
            metalness: 0.0,
        }
    }

    /// Checks every channel against the seed's ranges; errors name the channel.
    pub fn validate(&self) -> Result<(), MaterialError> {
        let unit = "0 to 1";
        for (field, value, hi, range) in [
            ("reflectivity", self.reflectivity, 1.0, unit),
            ("retroreflective", self.retroreflective, 1.0, unit),
            ("f0", self.f0, 1.0, unit),
            ("transmission", self.transmission, 1.0, unit),
            ("absorption", self.absorption, 100.0, "0 to 100 per metre"),
            ("roughness", self.roughness, 1.0, unit),
            ("metalness", self.metalness, 1.0, unit),
        ] {
            if !(0.0..=hi).contains(&value) {
                return Err(MaterialError::OutOfRange { what: "material", field, value: value as f64, range });
            }
        }
        Ok(())
    }

    /// RMS microfacet slope in radians before the model's floor: `roughness²`.
    pub fn slope(&self) -> f64 {
        (self.roughness as f64).powi(2)
    }

    /// Sets F0 from the metal table and metalness to 1, leaving the rest (the seed's
    /// "Set from metal…").
    pub fn set_metal(&mut self, metal: Metal) {
        self.f0 = metal.f0();
        self.metalness = 1.0;
    }

    /// The channels as bytes, for fingerprints (little-endian, fixed order).
    pub(crate) fn to_bytes(self) -> [u8; 29] {
        let mut out = [0u8; 29];
        let floats = [
            self.reflectivity,
            self.retroreflective,
            self.f0,
            self.transmission,
            self.absorption,
            self.roughness,
            self.metalness,
        ];
        for (i, f) in floats.iter().enumerate() {
            out[4 * i..4 * i + 4].copy_from_slice(&f.to_le_bytes());
        }
        out[28] = self.continuation as u8;
        out
    }

    /// Reads [`NirMaterial::to_bytes`] back; `None` for an unknown class byte.
    pub(crate) fn from_bytes(b: &[u8; 29]) -> Option<NirMaterial> {
        let f = |i: usize| f32::from_le_bytes([b[4 * i], b[4 * i + 1], b[4 * i + 2], b[4 * i + 3]]);
        Some(NirMaterial {
            reflectivity: f(0),
            retroreflective: f(1),
            f0: f(2),
            transmission: f(3),
            absorption: f(4),
            roughness: f(5),
            metalness: f(6),
            continuation: Continuation::from_index(b[28].into()).ok()?,
        })
    }
}

/// The seed's twelve material presets (values and sources in the module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum MaterialPreset {
    /// Ordinary concrete, plaster, painted wall.
    Diffuse,
    /// Sign, plate or hi-vis tape.
    Retroreflector,
    /// About 71 % passes through.
    ClearFloatGlass,
    /// About 28 % through.
    TintedGlass,
    /// A mirror at 905 nm, about 1 % through.
    LowEGlass,
    /// Folds the pulse into a phantom.
    Mirror,
    /// Strong glint near normal, folded phantom.
    PolishedMetal,
    /// Absorbs within about 15 cm.
    StillWater,
    /// Wet asphalt.
    WetGround,
    /// Bright in NIR, with gaps.
    Vegetation,
    /// Soot, black rubber, tar paper.
    DarkAbsorptive,
    /// Black car clearcoat.
    GlossDarkPaint,
}

spelled!(MaterialPreset, "material preset", [
    Diffuse => "diffuse",
    Retroreflector => "retroreflector",
    ClearFloatGlass => "clear-float-glass",
    TintedGlass => "tinted-glass",
    LowEGlass => "low-e-glass",
    Mirror => "mirror",
    PolishedMetal => "polished-metal",
    StillWater => "still-water",
    WetGround => "wet-ground",
    Vegetation => "vegetation",
    DarkAbsorptive => "dark-absorptive",
    GlossDarkPaint => "gloss-dark-paint",
]);

impl MaterialPreset {
    /// Every channel of the preset.
    pub fn material(self) -> NirMaterial {
        use Continuation::*;
        let m = |reflectivity, retroreflective, f0, transmission, absorption, continuation, roughness, metalness| {
            NirMaterial {
                reflectivity,
                retroreflective,
                f0,
                transmission,
                absorption,
                continuation,
                roughness,
                metalness,
            }
        };
        match self {
            MaterialPreset::Diffuse => m(0.50, 0.0, 0.04, 0.0, 0.0, Opaque, 1.0, 0.0),
            MaterialPreset::Retroreflector => m(0.80, 1.0, 0.04, 0.0, 0.0, Opaque, 0.5, 0.0),
            MaterialPreset::ClearFloatGlass => m(0.0, 0.0, 0.042, 0.71, 0.0, Slab, 0.0, 0.0),
            MaterialPreset::TintedGlass => m(0.0, 0.0, 0.042, 0.28, 0.0, Slab, 0.0, 0.0),
            MaterialPreset::LowEGlass => m(0.0, 0.0, 0.60, 0.01, 0.0, Slab, 0.0, 0.0),
            MaterialPreset::Mirror => m(0.0, 0.0, 0.90, 0.0, 0.0, Specular, 0.0, 1.0),
            MaterialPreset::PolishedMetal => m(0.0, 0.0, 0.90, 0.0, 0.0, Specular, 0.3, 1.0),
            MaterialPreset::StillWater => m(0.0, 0.0, 0.020, 0.98, 6.9, Medium, 0.0, 0.0),
            MaterialPreset::WetGround => m(0.06, 0.0, 0.02, 0.0, 0.0, Opaque, 0.2, 0.0),
            MaterialPreset::Vegetation => m(0.50, 0.0, 0.04, 0.30, 0.0, Porous, 1.0, 0.0),
            MaterialPreset::DarkAbsorptive => m(0.03, 0.0, 0.04, 0.0, 0.0, Opaque, 1.0, 0.0),
            MaterialPreset::GlossDarkPaint => m(0.05, 0.0, 0.05, 0.0, 0.0, Opaque, 0.05, 0.0),
        }
    }
}

/// The seed's metal table: F0 at 905 nm.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Metal {
    /// 0.90
    Aluminium,
    /// 0.97
    Silver,
    /// 0.60
    Steel,
    /// 0.96
    Copper,
    /// 0.97
    Gold,
    /// 0.62
    Chrome,
}

spelled!(Metal, "metal", [
    Aluminium => "aluminium",
    Silver => "silver",
    Steel => "steel",
    Copper => "copper",
    Gold => "gold",
    Chrome => "chrome",
]);

impl Metal {
    /// F0 at 905 nm.
    pub fn f0(self) -> f32 {
        match self {
            Metal::Aluminium => 0.90,
            Metal::Silver => 0.97,
            Metal::Steel => 0.60,
            Metal::Copper => 0.96,
            Metal::Gold => 0.97,
            Metal::Chrome => 0.62,
        }
    }
}

/// The NIR authoring of a scene: a material per MuJoCo material name. Materials nobody
/// authored fall back to their visible albedo.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MaterialTable {
    authored: Vec<(String, NirMaterial)>,
}

impl MaterialTable {
    /// Authors (or re-authors) the MuJoCo material `name`; validated first.
    pub fn set(&mut self, name: &str, material: NirMaterial) -> Result<(), MaterialError> {
        material.validate()?;
        match self.authored.iter_mut().find(|(n, _)| n == name) {
            Some((_, m)) => *m = material,
            None => self.authored.push((name.to_string(), material)),
        }
        Ok(())
    }

    /// The authored material of `name`, if any.
    pub fn get(&self, name: &str) -> Option<&NirMaterial> {
        self.authored.iter().find(|(n, _)| n == name).map(|(_, m)| m)
    }

    /// Per geom of material `geom_matid[g]` (into `mat_name`, `-1`: none), the continuation
    /// class its material is authored with (`None`: no material, or one the table does not
    /// author).
    pub fn geom_classes(&self, mat_name: &[String], geom_matid: &[i32]) -> Vec<Option<Continuation>> {
        geom_matid
            .iter()
            .map(|&m| {
                let name = usize::try_from(m).ok().and_then(|m| mat_name.get(m))?;
                self.get(name).map(|n| n.continuation)
            })
            .collect()
    }

    /// The authored materials, in authoring order.
    pub fn authored(&self) -> impl Iterator<Item = (&str, &NirMaterial)> {
        self.authored.iter().map(|(n, m)| (n.as_str(), m))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_are_valid_and_round_trip() {
        for p in MaterialPreset::all() {
            let m = p.material();
            m.validate().unwrap();
            assert_eq!(MaterialPreset::from_name(p.name()).unwrap(), p);
            assert_eq!(NirMaterial::from_bytes(&m.to_bytes()), Some(m));
        }
        let err = MaterialPreset::from_name("glass").unwrap_err().to_string();
        assert!(err.contains("clear-float-glass"), "{err}");
    }

    #[test]
    fn presets_agree_with_905nm_physics() {
        let glass = MaterialPreset::ClearFloatGlass.material();
        // Fresnel at normal incidence: ((n - 1) / (n + 1))².
        let fresnel = |n: f32| ((n - 1.0) / (n + 1.0)).powi(2);
        assert!((glass.f0 - fresnel(1.515)).abs() < 0.002);
        let water = MaterialPreset::StillWater.material();
        assert!((water.f0 - fresnel(1.327)).abs() < 0.002);
        assert!((6.7..=7.1).contains(&water.absorption));
        assert_eq!(MaterialPreset::TintedGlass.material().transmission, 0.28);
        assert_eq!(MaterialPreset::LowEGlass.material().transmission, 0.01);
        assert!((0.45..=0.55).contains(&MaterialPreset::Vegetation.material().reflectivity));
        assert!((0.03..=0.08).contains(&MaterialPreset::GlossDarkPaint.material().reflectivity));
    }

    #[test]
    fn metals_and_fallback() {
        let mut m = MaterialPreset::Diffuse.material();
        m.set_metal(Metal::Steel);
        assert_eq!((m.f0, m.metalness, m.reflectivity), (0.60, 1.0, 0.5));
        let white = NirMaterial::from_albedo([1.0, 1.0, 1.0, 1.0]);
        assert!((white.reflectivity - 1.0).abs() < 1e-6);
        let green = NirMaterial::from_albedo([0.0, 1.0, 0.0, 1.0]);
        assert!((green.reflectivity - 0.7152).abs() < 1e-6);
        let bad = NirMaterial { transmission: 1.5, ..m };
        assert!(bad.validate().unwrap_err().to_string().contains("transmission"));
    }
}
