//! The return model's calibration: the seed's seventeen parameters, written once below
//! (name, key, unit, default, range), its four presets, and the nine-field base setter that
//! leaves the eight optics fields alone.

use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::LidarError;
use glint_core::spelled;

/// One return parameter as every front end names it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ReturnParam {
    /// The seed's camelCase name (`GetLidarReturnParams`, `augmentation.json`).
    pub name: &'static str,
    /// The manifest's and the gRPC message's snake_case key.
    pub key: &'static str,
    /// Unit, or empty.
    pub unit: &'static str,
    /// The Generic preset's value.
    pub default: f64,
    /// Lowest allowed value.
    low: f64,
    /// Whether the lowest value itself is allowed.
    low_inclusive: bool,
    /// Highest allowed value (inclusive).
    high: f64,
    /// The allowed range, in words.
    pub range: &'static str,
}

/// A parameter's value type: `f64`, or `u32` for `max_returns`.
trait ParamValue: Copy {
    fn to_f64(self) -> f64;
    fn from_f64(v: f64) -> Self;
}

impl ParamValue for f64 {
    fn to_f64(self) -> f64 {
        self
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
}

impl ParamValue for u32 {
    fn to_f64(self) -> f64 {
        self as f64
    }
    fn from_f64(v: f64) -> u32 {
        v as u32
    }
}

/// Defines [`ReturnParams`], its default, [`RETURN_PARAMS`], the array conversions and
/// `return_param_keys!` from one list: `field: type = default, "camelName", "unit", (low,
/// high, low inclusive, "range")`. The leading `$` lets it write a macro of its own.
macro_rules! return_params {
    ($d:tt $($(#[doc = $doc:literal])* $field:ident: $ty:ty = $default:expr, $name:literal, $unit:literal,
        ($low:expr, $high:expr, $inclusive:expr, $range:literal);)+) => {
        /// Calls the macro `$callback` with every return parameter's key ([`RETURN_PARAMS`]'
        /// `key`, the field name of [`ReturnParams`]) as an identifier, in the seed's order:
        /// `$callback!(max_range_at_ref, ref_reflectivity, …, max_returns)`. For a front end
        /// whose messages have a field per key (the gRPC messages), so that it maps them by
        /// key, never by position.
        #[macro_export]
        macro_rules! return_param_keys {
            ($d callback:ident) => {
                $d callback! { $($field),+ }
            };
        }

        /// The return model calibration, one set per scene, in the seed's order (the order
        /// [`ReturnParams::to_array`] and [`RETURN_PARAMS`] give them).
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub struct ReturnParams {
            $($(#[doc = $doc])* pub $field: $ty,)+
        }

        /// Every return parameter, in the seed's order.
        pub const RETURN_PARAMS: [ReturnParam; 17] = [$(ReturnParam {
            name: $name,
            key: stringify!($field),
            unit: $unit,
            default: $default as f64,
            low: $low,
            low_inclusive: $inclusive,
            high: $high,
            range: $range,
        }),+];

        impl Default for ReturnParams {
            /// The Generic preset.
            fn default() -> Self {
                ReturnParams { $($field: $default,)+ }
            }
        }

        impl ReturnParams {
            /// The seventeen values in the seed's order.
            pub fn to_array(&self) -> [f64; 17] {
                [$(self.$field.to_f64(),)+]
            }

            /// All seventeen from an array in the seed's order, validated.
            pub fn from_array(v: [f64; 17]) -> Result<ReturnParams, LidarError> {
                check(&v)?;
                let mut values = v.into_iter();
                Ok(ReturnParams { $($field: <$ty>::from_f64(values.next().unwrap_or_default()),)+ })
            }
        }

        /// A map from each parameter's seed name to its value, `maxReturns` as an integer.
        impl Serialize for ReturnParams {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(17))?;
                $(map.serialize_entry($name, &self.$field)?;)+
                map.end()
            }
        }
    };
}

return_params! {
    $
    /// Detection range for a surface of the reference reflectivity (m).
    max_range_at_ref: f64 = 20.0, "maxRangeAtRef", "m", (0.0, 10_000.0, false, "above 0, at most 10000 m");
    /// The reflectivity that `max_range_at_ref` is quoted at.
    ref_reflectivity: f64 = 0.90, "refReflectivity", "", (0.0, 1_000.0, false, "above 0, at most 1000");
    /// How strongly detection range scales with reflectivity.
    range_exp: f64 = 0.32, "rangeExp", "", (0.0, 4.0, false, "above 0, at most 4");
    /// Base one-sigma range noise (m).
    noise_sigma0: f64 = 0.02, "noiseSigma0", "m", (0.0, 10.0, true, "0 to 10 m");
    /// Incidence cosine below which returns start to drop.
    grazing_cos_cutoff: f64 = 0.10, "grazingCosCutoff", "", (0.0, 1.0, true, "0 to 1");
    /// Range at which the inverse-square intensity term equals 1 (m).
    intensity_ref_range: f64 = 5.0, "intensityRefRange", "m", (0.0, 10_000.0, false, "above 0, at most 10000 m");
    /// Return strength below which a beam drops out.
    detect_floor: f64 = 0.03, "detectFloor", "", (0.0, 1_000.0, true, "0 to 1000");
    /// Distance over which intensity ramps up close to the sensor (m).
    near_range_r0: f64 = 0.6, "nearRangeR0", "m", (0.0, 100.0, true, "0 to 100 m");
    /// Growth of range noise per metre (m/m).
    noise_slope_per_m: f64 = 0.0005, "noiseSlopePerM", "m/m", (0.0, 1.0, true, "0 to 1 m/m");
    /// Minimum surface slope assumed for glossy surfaces (rad).
    spec_slope_floor: f64 = 0.03, "specSlopeFloor", "rad", (0.0, 1.5, false, "above 0, at most 1.5 rad");
    /// Cap on glint strength.
    spec_peak_max: f64 = 900.0, "specPeakMax", "", (0.0, 1.0e6, true, "0 to 1e6");
    /// How much brighter a retroreflector is than a perfect matte surface.
    retro_gain: f64 = 800.0, "retroGain", "", (0.0, 1.0e6, true, "0 to 1e6");
    /// How quickly a retroreflector dims away from head-on.
    retro_cos_exp: f64 = 5.0, "retroCosExp", "", (0.0, 100.0, true, "0 to 100");
    /// Surface slope above which a mirror-like surface gives no phantom (rad).
    fold_max_slope: f64 = 0.20, "foldMaxSlope", "rad", (0.0, 1.5, true, "0 to 1.5 rad");
    /// Smallest range noise can produce (m).
    range_floor: f64 = 0.01, "rangeFloor", "m", (0.0, 10.0, true, "0 to 10 m");
    /// Two echoes closer than this merge into one (m).
    min_return_separation: f64 = 1.0, "minReturnSeparation", "m", (0.0, 100.0, true, "0 to 100 m");
    /// Echoes the hardware reports per beam.
    max_returns: u32 = 1, "maxReturns", "", (1.0, 8.0, true, "a whole number from 1 to 8");
}

/// Read from a map of every parameter's seed name, validated.
impl<'de> Deserialize<'de> for ReturnParams {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ReturnParams, D::Error> {
        let map = std::collections::BTreeMap::<String, f64>::deserialize(d)?;
        let mut values = [0.0; 17];
        for (slot, param) in values.iter_mut().zip(&RETURN_PARAMS) {
            *slot = *map.get(param.name).ok_or_else(|| serde::de::Error::missing_field(param.name))?;
        }
        ReturnParams::from_array(values).map_err(serde::de::Error::custom)
    }
}

impl ReturnParams {
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
    for (&value, p) in v.iter().zip(&RETURN_PARAMS) {
        let low_ok = if p.low_inclusive { value >= p.low } else { value > p.low };
        let whole = p.key != "max_returns" || value.fract() == 0.0;
        if !(value.is_finite() && low_ok && value <= p.high && whole) {
            return Err(LidarError::OutOfRange { field: p.name, value, range: p.range });
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

spelled!(ReturnPreset, "return preset", [
    Generic => "generic",
    UnitreeL1 => "unitree-l1",
    LivoxMid360 => "livox-mid360",
    OusterOs1 => "ouster-os1",
]);

impl ReturnPreset {
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
    use crate::Spelled;

    #[test]
    fn the_keys_macro_names_every_parameter_in_order() {
        macro_rules! keys {
            ($($key:ident),+) => {
                [$(stringify!($key)),+]
            };
        }
        assert_eq!(return_param_keys!(keys), RETURN_PARAMS.map(|p| p.key));
    }

    #[test]
    fn presets_set_the_seed_columns_and_reset_the_optics() {
        let os1 = ReturnPreset::OusterOs1.params();
        assert_eq!((os1.max_range_at_ref, os1.ref_reflectivity, os1.range_exp, os1.max_returns), (170.0, 0.8, 0.31, 2));
        assert_eq!(os1.noise_sigma0, 0.02);
        // A preset resets everything, optics included.
        let tuned = ReturnParams { spec_peak_max: 10.0, ..os1 };
        assert_ne!(tuned, os1);
        assert_eq!(ReturnPreset::from_index(0).unwrap().params(), ReturnParams::default());
        let defaults: Vec<f64> = RETURN_PARAMS.iter().map(|p| p.default).collect();
        assert_eq!(ReturnParams::default().to_array().to_vec(), defaults);
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

#[cfg(test)]
mod serde_tests {
    use super::*;

    #[test]
    fn params_read_back_from_their_seed_names() {
        let p = ReturnParams { max_returns: 2, spec_peak_max: 12.5, ..ReturnParams::default() };
        let json = serde_json::to_string(&p).unwrap();
        assert!(json.starts_with("{\"maxRangeAtRef\":20.0,") && json.ends_with("\"maxReturns\":2}"), "{json}");
        assert_eq!(serde_json::from_str::<ReturnParams>(&json).unwrap(), p);
        let missing = json.replace("\"rangeExp\":0.32,", "");
        assert!(serde_json::from_str::<ReturnParams>(&missing).unwrap_err().to_string().contains("rangeExp"));
        let bad = json.replace("\"maxReturns\":2", "\"maxReturns\":2.5");
        assert!(serde_json::from_str::<ReturnParams>(&bad).unwrap_err().to_string().contains("maxReturns"));
    }
}
