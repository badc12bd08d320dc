//! The return model's calibration: the seed's seventeen parameters, its four presets, and
//! the nine-field base setter that leaves the eight optics fields alone.

use crate::LidarError;

/// The return model calibration, one set per scene, in the seed's order (the order
/// [`ReturnParams::to_array`] returns them).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReturnParams {
    /// Detection range for a surface of the reference reflectivity (m).
    pub max_range_at_ref: f64,
    /// The reflectivity that `max_range_at_ref` is quoted at.
    pub ref_reflectivity: f64,
    /// How strongly detection range scales with reflectivity.
    pub range_exp: f64,
    /// Base one-sigma range noise (m).
    pub noise_sigma0: f64,
    /// Incidence cosine below which returns start to drop.
    pub grazing_cos_cutoff: f64,
    /// Range at which the inverse-square intensity term equals 1 (m).
    pub intensity_ref_range: f64,
    /// Return strength below which a beam drops out.
    pub detect_floor: f64,
    /// Distance over which intensity ramps up close to the sensor (m).
    pub near_range_r0: f64,
    /// Growth of range noise per metre (m/m).
    pub noise_slope_per_m: f64,
    /// Minimum surface slope assumed for glossy surfaces (rad).
    pub spec_slope_floor: f64,
    /// Cap on glint strength.
    pub spec_peak_max: f64,
    /// How much brighter a retroreflector is than a perfect matte surface.
    pub retro_gain: f64,
    /// How quickly a retroreflector dims away from head-on.
    pub retro_cos_exp: f64,
    /// Surface slope above which a mirror-like surface gives no phantom (rad).
    pub fold_max_slope: f64,
    /// Smallest range noise can produce (m).
    pub range_floor: f64,
    /// Two echoes closer than this merge into one (m).
    pub min_return_separation: f64,
    /// Echoes the hardware reports per beam.
    pub max_returns: u32,
}

/// Names of the seventeen parameters, in order (the seed's camelCase).
pub const RETURN_PARAM_NAMES: [&str; 17] = [
    "maxRangeAtRef",
    "refReflectivity",
    "rangeExp",
    "noiseSigma0",
    "grazingCosCutoff",
    "intensityRefRange",
    "detectFloor",
    "nearRangeR0",
    "noiseSlopePerM",
    "specSlopeFloor",
    "specPeakMax",
    "retroGain",
    "retroCosExp",
    "foldMaxSlope",
    "rangeFloor",
    "minReturnSeparation",
    "maxReturns",
];

/// Allowed range of each parameter, in order: (low, high, inclusive low, words).
const RANGES: [(f64, f64, bool, &str); 17] = [
    (0.0, 10_000.0, false, "above 0, at most 10000 m"),
    (0.0, 1_000.0, false, "above 0, at most 1000"),
    (0.0, 4.0, false, "above 0, at most 4"),
    (0.0, 10.0, true, "0 to 10 m"),
    (0.0, 1.0, true, "0 to 1"),
    (0.0, 10_000.0, false, "above 0, at most 10000 m"),
    (0.0, 1_000.0, true, "0 to 1000"),
    (0.0, 100.0, true, "0 to 100 m"),
    (0.0, 1.0, true, "0 to 1 m/m"),
    (0.0, 1.5, false, "above 0, at most 1.5 rad"),
    (0.0, 1.0e6, true, "0 to 1e6"),
    (0.0, 1.0e6, true, "0 to 1e6"),
    (0.0, 100.0, true, "0 to 100"),
    (0.0, 1.5, true, "0 to 1.5 rad"),
    (0.0, 10.0, true, "0 to 10 m"),
    (0.0, 100.0, true, "0 to 100 m"),
    (1.0, 8.0, true, "a whole number from 1 to 8"),
];

impl Default for ReturnParams {
    /// The Generic preset.
    fn default() -> Self {
        ReturnParams {
            max_range_at_ref: 20.0,
            ref_reflectivity: 0.90,
            range_exp: 0.32,
            noise_sigma0: 0.02,
            grazing_cos_cutoff: 0.10,
            intensity_ref_range: 5.0,
            detect_floor: 0.03,
            near_range_r0: 0.6,
            noise_slope_per_m: 0.0005,
            spec_slope_floor: 0.03,
            spec_peak_max: 900.0,
            retro_gain: 800.0,
            retro_cos_exp: 5.0,
            fold_max_slope: 0.20,
            range_floor: 0.01,
            min_return_separation: 1.0,
            max_returns: 1,
        }
    }
}

impl ReturnParams {
    /// The seventeen values in the seed's order.
    pub fn to_array(&self) -> [f64; 17] {
        [
            self.max_range_at_ref,
            self.ref_reflectivity,
            self.range_exp,
            self.noise_sigma0,
            self.grazing_cos_cutoff,
            self.intensity_ref_range,
            self.detect_floor,
            self.near_range_r0,
            self.noise_slope_per_m,
            self.spec_slope_floor,
            self.spec_peak_max,
            self.retro_gain,
            self.retro_cos_exp,
            self.fold_max_slope,
            self.range_floor,
            self.min_return_separation,
            self.max_returns as f64,
        ]
    }

    /// All seventeen from an array in the seed's order, validated.
    pub fn from_array(v: [f64; 17]) -> Result<ReturnParams, LidarError> {
        check(&v)?;
        let p = ReturnParams {
            max_range_at_ref: v[0],
            ref_reflectivity: v[1],
            range_exp: v[2],
            noise_sigma0: v[3],
            grazing_cos_cutoff: v[4],
            intensity_ref_range: v[5],
            detect_floor: v[6],
            near_range_r0: v[7],
            noise_slope_per_m: v[8],
            spec_slope_floor: v[9],
            spec_peak_max: v[10],
            retro_gain: v[11],
            retro_cos_exp: v[12],
            fold_max_slope: v[13],
            range_floor: v[14],
            min_return_separation: v[15],
            max_returns: v[16] as u32,
        };
        Ok(p)
    }

    /// Writes the nine base parameters (the seed's `SetLidarReturnParams`), keeping the eight
    /// optics parameters. Nothing changes on an error.
    pub fn set_base(&mut self, base: [f64; 9]) -> Result<(), LidarError> {
        let mut all = self.to_array();
        all[..9].copy_from_slice(&base);
        *self = ReturnParams::from_array(all)?;
        Ok(())
    }

    /// Checks every parameter; the error names it, its value and its range.
    pub fn validate(&self) -> Result<(), LidarError> {
        check(&self.to_array())
    }

    /// `Rmax(S) = maxRangeAtRef · (S / refReflectivity)^rangeExp`.
    pub fn max_range(&self, strength: f64) -> f64 {
        self.max_range_at_ref * (strength / self.ref_reflectivity).powf(self.range_exp)
    }

    /// `σ(R) = noiseSigma0 + noiseSlopePerM · R`.
    pub fn noise_sigma(&self, range: f64) -> f64 {
        self.noise_sigma0 + self.noise_slope_per_m * range
    }
}

fn check(v: &[f64; 17]) -> Result<(), LidarError> {
    for (i, (&value, &(lo, hi, inclusive, range))) in v.iter().zip(&RANGES).enumerate() {
        let low_ok = if inclusive { value >= lo } else { value > lo };
        let whole = i != 16 || value.fract() == 0.0;
        if !(value.is_finite() && low_ok && value <= hi && whole) {
            return Err(LidarError::OutOfRange { field: RETURN_PARAM_NAMES[i], value, range });
        }
    }
    Ok(())
}

/// The seed's four return-model presets. Applying one resets all seventeen parameters; the
/// columns the seed does not list keep the Generic defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReturnPreset {
    /// Index 0, the default.
    Generic,
    /// Index 1.
    UnitreeL1,
    /// Index 2.
    LivoxMid360,
    /// Index 3: two echoes.
    OusterOs1,
}

impl ReturnPreset {
    /// Every preset, by index.
    pub const ALL: [ReturnPreset; 4] =
        [ReturnPreset::Generic, ReturnPreset::UnitreeL1, ReturnPreset::LivoxMid360, ReturnPreset::OusterOs1];

    /// The preset at the seed's index.
    pub fn from_index(index: i64) -> Result<ReturnPreset, LidarError> {
        usize::try_from(index).ok().and_then(|i| ReturnPreset::ALL.get(i).copied()).ok_or(LidarError::OutOfRange {
            field: "preset",
            value: index as f64,
            range: "0 (Generic), 1 (Unitree L1), 2 (Livox Mid-360) or 3 (Ouster OS1)",
        })
    }

    /// The manifest / CLI name.
    pub fn name(self) -> &'static str {
        match self {
            ReturnPreset::Generic => "generic",
            ReturnPreset::UnitreeL1 => "unitree-l1",
            ReturnPreset::LivoxMid360 => "livox-mid360",
            ReturnPreset::OusterOs1 => "ouster-os1",
        }
    }

    /// Parses a name.
    pub fn from_name(name: &str) -> Result<ReturnPreset, LidarError> {
        ReturnPreset::ALL.into_iter().find(|p| p.name() == name).ok_or_else(|| LidarError::UnknownName {
            what: "return preset",
            name: name.into(),
            valid: "generic, unitree-l1, livox-mid360, ouster-os1",
        })
    }

    /// All seventeen parameters of the preset.
    pub fn params(self) -> ReturnParams {
        let (max_range_at_ref, ref_reflectivity, range_exp, max_returns) = match self {
            ReturnPreset::Generic | ReturnPreset::UnitreeL1 => (20.0, 0.90, 0.32, 1),
            ReturnPreset::LivoxMid360 => (70.0, 0.80, 0.27, 1),
            ReturnPreset::OusterOs1 => (170.0, 0.80, 0.31, 2),
        };
        ReturnParams { max_range_at_ref, ref_reflectivity, range_exp, max_returns, ..ReturnParams::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn presets_set_the_seed_columns_and_reset_the_optics() {
        let os1 = ReturnPreset::OusterOs1.params();
        assert_eq!((os1.max_range_at_ref, os1.ref_reflectivity, os1.range_exp, os1.max_returns), (170.0, 0.8, 0.31, 2));
        assert_eq!(os1.noise_sigma0, 0.02);
        // A preset resets everything, optics included.
        let tuned = ReturnParams { spec_peak_max: 10.0, ..os1 };
        assert_ne!(tuned, os1);
        assert_eq!(ReturnPreset::from_index(0).unwrap().params(), ReturnParams::default());
        assert!(ReturnPreset::from_index(4).unwrap_err().to_string().contains("preset"));
    }

    #[test]
    fn the_base_setter_keeps_the_optics() {
        let mut p = ReturnParams { spec_peak_max: 50.0, max_returns: 2, ..ReturnParams::default() };
        p.set_base([30.0, 0.8, 0.3, 0.01, 0.2, 4.0, 0.05, 0.5, 0.001]).unwrap();
        assert_eq!((p.max_range_at_ref, p.noise_slope_per_m, p.spec_peak_max, p.max_returns), (30.0, 0.001, 50.0, 2));
        let before = p;
        let err = p.set_base([30.0, 0.8, f64::NAN, 0.01, 0.2, 4.0, 0.05, 0.5, 0.001]).unwrap_err();
        assert!(err.to_string().contains("rangeExp"), "{err}");
        assert_eq!(p, before);
    }

    #[test]
    fn arrays_round_trip_in_the_seed_order() {
        let p = ReturnPreset::LivoxMid360.params();
        assert_eq!(ReturnParams::from_array(p.to_array()).unwrap(), p);
        let mut bad = p.to_array();
        bad[16] = 1.5;
        assert!(ReturnParams::from_array(bad).unwrap_err().to_string().contains("maxReturns"));
    }
}
