//! The physical return model (`[return_model] model = "physical"`): the seed's model with
//! five of its simplifications replaced by 905 nm physics, each switchable on its own
//! ([`PhysicalModel`]). The seed's model stays the default and is untouched by this file.
//!
//! | term | seed | physical |
//! |---|---|---|
//! | detection | `S ≥ detectFloor` and `R < Rmax(S)`: a step | `P_d = Φ(k · (q − 1))`, `q = S · overlap(R) / S50(R)`, `S50(R) = refReflectivity · (R / maxRangeAtRef)^(1/rangeExp)` (the seed's law is the 50 % contour), `k = Φ⁻¹(1 − falseAlarmRate)` (a threshold `k` noise sigmas above the noise floor), `overlap(R) = min(1, R / nearRangeR0)²` |
//! | range noise | `σ = noiseSigma0 + noiseSlopePerM · R` | `σ² = σ_seed(R)² · refReflectivity / S + (R · γ · tan θ / 2)²` (shot noise, footprint stretch); below `rangeFloor` a draw folds back above it |
//! | glass | `T²` at every angle, a glint of `F0` from one face | Fresnel (unpolarised, `n` from `F0`: `n = (1 + √F0) / (1 − √F0)`), both faces with incoherent multiple reflections: `T_slab(θ)²` through, an echo of `R_slab(θ)` |
//! | mirrors | phantom `∝ F0` | phantom `∝ F0²` (out and back) |
//! | foliage | all or nothing per beam (gap with probability `T`) | split footprint: the leaves return `(1 − T)` of the beam, `T` goes on through the gaps |
//! | water | booked at `1.33 ·` the submerged length | the group index 1.341 for the booking; `1 / n²` radiance loss leaving the surface |
//! | retroreflectors | `(1 − r) · (diffuse + glint) + r · retro` | the diffuse base kept under the retro lobe: `diffuse + (1 − r) · glint + r · retro` |
//!
//! Sources: Fresnel's equations for unpolarised light and the incoherent slab sum (Born & Wolf,
//! *Principles of Optics*, §1.5; the slab sum as in Hecht, *Optics*, §4.6); the detection
//! probability of a threshold in Gaussian noise (Skolnik, *Introduction to Radar Systems*,
//! ch. 2); the shot-noise range precision `σ ∝ 1/√SNR` (Ouster OS1 datasheet: ±1.5 cm at
//! SNR > 250, ±3 cm at 100, ±10 cm at 12), its false positive rate 1/10 000 and beam
//! divergence 0.18° (FWHM, 128 channels; 0.13° for 64 and 16); the group index of water at
//! 905 nm (Hale & Querry 1973, n ≈ 1.328; group index ≈ 1.341).

use glint_core::spelled;
use serde::{Deserialize, Serialize};

use crate::{LidarError, NirMaterial, ReturnParams};

/// Which return model runs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReturnModelKind {
    /// The seed's formulas, to the last digit (the default).
    #[default]
    Seed,
    /// [`PhysicalModel`]'s terms.
    Physical,
}

spelled!(ReturnModelKind, "return model", [
    Seed => "seed",
    Physical => "physical",
]);

/// The physical model's terms (each `true`: physical, `false`: the seed's) and its two
/// parameters.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PhysicalModel {
    /// Detection as an S-curve in the signal over the 50 % strength.
    pub detection: bool,
    /// Range noise from the signal and the footprint; no pile-up at `rangeFloor`.
    pub noise: bool,
    /// Glass by Fresnel, both faces.
    pub fresnel: bool,
    /// Mirror phantoms carry `F0²`.
    pub two_bounce_mirrors: bool,
    /// Porous surfaces split the footprint between the leaves and what is behind.
    pub split_footprints: bool,
    /// Water: the group index and the radiance loss.
    pub water: bool,
    /// Retroreflectors keep their diffuse base.
    pub retro_base: bool,
    /// Intensity saturates: a photon-counting detector's `I_sat (1 − e^(−I / I_sat))`, with
    /// `I_sat = specPeakMax` (the seed's brightest glint at `intensityRefRange`).
    pub saturation: bool,
    /// Full beam divergence, FWHM (degrees).
    pub beam_divergence_deg: f64,
    /// The detector's false alarm rate per range bin, which places its threshold `k` noise
    /// sigmas up and so sets how steep the detection curve is.
    pub false_alarm_rate: f64,
    /// Sub-rays per beam over its divergence cone (1: the beam's axis alone, off; at most
    /// [`MAX_FOOTPRINT_RAYS`]). Their echoes are summed into one waveform per beam: edges
    /// give mixed returns and two echoes ([`footprint_offsets`]).
    pub footprint_rays: u32,
}

impl Default for PhysicalModel {
    /// Every term physical, with the Ouster OS1's divergence and false alarm rate.
    fn default() -> Self {
        PhysicalModel {
            detection: true,
            noise: true,
            fresnel: true,
            two_bounce_mirrors: true,
            split_footprints: true,
            water: true,
            retro_base: true,
            saturation: true,
            beam_divergence_deg: OS1_DIVERGENCE_DEG,
            false_alarm_rate: OS1_FALSE_ALARM_RATE,
            footprint_rays: 1,
        }
    }
}

/// Most sub-rays a beam's footprint is cut into.
pub const MAX_FOOTPRINT_RAYS: u32 = 32;

/// The Ouster OS1's beam divergence (datasheet, FWHM, 128 channels).
const OS1_DIVERGENCE_DEG: f64 = 0.18;
/// The Ouster OS1's false positive rate (datasheet: 1/10 000).
const OS1_FALSE_ALARM_RATE: f64 = 1e-4;
/// The group index of water at 905 nm: what a time of flight books a submerged length at.
pub(crate) const WATER_GROUP_INDEX: f64 = 1.341;

impl PhysicalModel {
    /// Whether a candidate on `material` gets the retroreflector's diffuse base on top of the
    /// seed's strength (the seed's lobe alone otherwise).
    pub(crate) fn adds_retro_base(&self, material: &NirMaterial) -> bool {
        self.retro_base && material.retroreflective > 0.0
    }

    /// Checks the parameters; the error names the one out of range.
    pub fn validate(&self) -> Result<(), LidarError> {
        let d = self.beam_divergence_deg;
        if !(d.is_finite() && (0.0..=10.0).contains(&d)) {
            return Err(LidarError::OutOfRange { field: "beam_divergence_deg", value: d, range: "0 to 10 degrees" });
        }
        let f = self.false_alarm_rate;
        if !(f.is_finite() && f > 0.0 && f < 0.5) {
            return Err(LidarError::OutOfRange { field: "false_alarm_rate", value: f, range: "above 0, below 0.5" });
        }
        if !(1..=MAX_FOOTPRINT_RAYS).contains(&self.footprint_rays) {
            return Err(LidarError::OutOfRange {
                field: "footprint_rays",
                value: self.footprint_rays as f64,
                range: "1 (off) to 32 sub-rays per beam",
            });
        }
        Ok(())
    }

    /// The threshold in noise sigmas, `k = Φ⁻¹(1 − falseAlarmRate)`.
    pub fn threshold_sigmas(&self) -> f64 {
        inverse_normal_cdf(1.0 - self.false_alarm_rate)
    }

    /// The probability that a return of strength `s` at range `r` is detected (the grazing
    /// gate and the sensor's window aside).
    pub fn detection_probability(&self, params: &ReturnParams, s: f64, r: f64) -> f64 {
        detection_probability(params, self.threshold_sigmas(), s, r)
    }

    /// The range at which a return of strength `s` is detected with probability `p` (beyond
    /// `nearRangeR0`, where the overlap is whole): `R50(s) · (1 + Φ⁻¹(p) / k)^(−rangeExp)`,
    /// `R50(s)` the seed's `Rmax(s)`. `None` where no range gives `p` (a `p` outside (0, 1),
    /// or one so low that the threshold is never missed).
    pub fn range_at_probability(&self, params: &ReturnParams, s: f64, p: f64) -> Option<f64> {
        if !(p > 0.0 && p < 1.0) {
            return None;
        }
        let q = 1.0 + inverse_normal_cdf(p) / self.threshold_sigmas();
        (q > 0.0).then(|| params.max_range(s) * q.powf(-params.range_exp))
    }

    /// The one-sigma range noise of a return of strength `s` at range `r` under incidence
    /// cosine `c`: shot noise scaled from the seed's σ at the reference reflectivity, and
    /// the footprint's stretch of the pulse.
    pub fn range_sigma(&self, params: &ReturnParams, s: f64, r: f64, c: f64) -> f64 {
        self.spread_sigma(params, (s, r, c), 0.0)
    }

    /// [`PhysicalModel::range_sigma`] of a pulse whose parts' ranges spread by `spread` (one
    /// sigma, m): the pulse is stretched by the larger of its tilt's stretch and that spread
    /// (a footprint over an edge is stretched without being tilted).
    pub(crate) fn spread_sigma(&self, params: &ReturnParams, (s, r, c): (f64, f64, f64), spread: f64) -> f64 {
        let shot = params.noise_sigma(r).powi(2) * params.ref_reflectivity / s.max(1e-9);
        let c = c.clamp(1e-6, 1.0);
        let tan = (1.0 - c * c).sqrt() / c;
        let stretch = (r * self.beam_divergence_deg.to_radians() * tan / 2.0).max(spread);
        (shot + stretch * stretch).sqrt()
    }
}

/// The directions of a beam's `n` footprint sub-rays, as angular offsets (radians) along two
/// axes across the beam, each carrying `1 / n` of its energy. The beam is a circular Gaussian
/// whose full width at half maximum is `divergence_deg` (per-axis `σ = FWHM / 2.3548`);
/// sub-ray 0 is its axis, and sub-ray `k ≥ 1` stands for the `k`-th of `n` equal-energy
/// annuli, at the radius whose square is the annulus' mean `r²` (so the set keeps the beam's
/// second moment but the first annulus' small share), turned by the golden angle from the
/// one before.
pub fn footprint_offsets(n: u32, divergence_deg: f64) -> Vec<(f64, f64)> {
    let sigma = divergence_deg.to_radians() / (8.0 * std::f64::consts::LN_2).sqrt();
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    // ∫ −ln(1 − u) du over the energy quantiles [a, b]: with v = 1 − u, F(v) = v − v ln v.
    let f = |v: f64| if v > 0.0 { v - v * v.ln() } else { 0.0 };
    let n = n.max(1);
    (0..n)
        .map(|k| {
            if k == 0 {
                return (0.0, 0.0);
            }
            let (a, b) = (k as f64 / n as f64, (k + 1) as f64 / n as f64);
            let mean_log = (f(1.0 - a) - f(1.0 - b)) / (b - a);
            let radius = sigma * (2.0 * mean_log).sqrt();
            let angle = golden * k as f64;
            (radius * angle.cos(), radius * angle.sin())
        })
        .collect()
}

/// [`PhysicalModel::detection_probability`] with the threshold `k` worked out once.
pub(crate) fn detection_probability(params: &ReturnParams, k: f64, s: f64, r: f64) -> f64 {
    normal_cdf(k * (s * overlap(params, r) / s50(params, r) - 1.0))
}

/// The receiver's overlap at range `r`, `min(1, r / nearRangeR0)²`.
#[inline]
fn overlap(params: &ReturnParams, r: f64) -> f64 {
    if params.near_range_r0 > 0.0 { (r / params.near_range_r0).min(1.0).powi(2) } else { 1.0 }
}

/// The strength detected half the time at range `r`: the seed's law solved for the strength.
fn s50(params: &ReturnParams, r: f64) -> f64 {
    params.ref_reflectivity * (r / params.max_range_at_ref).powf(1.0 / params.range_exp)
}

/// Where detection is certain, found without the power law or the error function: per
/// eighth of a power of two of the range, the strength above which `P_d` is 1 to the last
/// bit at every range below the eighth's top. Most echoes of a scan are that strong; the
/// others take [`detection_probability`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct SureDetection([f64; SURE_STEPS]);

/// The range steps [`SureDetection`] covers: eighths of the powers of two from 2⁻⁴ m to 2¹² m.
const SURE_STEPS: usize = 16 * 8;
const SURE_FIRST_OCTAVE: i64 = -4;

impl SureDetection {
    /// The certain strengths under `params` with threshold `k`: at `k (q − 1) ≥ 9`,
    /// `Φ` rounds to 1 (its complement is below 1e−19), so a uniform draw in `[0, 1)` is
    /// always under it.
    pub(crate) fn new(params: &ReturnParams, k: f64) -> SureDetection {
        let q_sure = 1.0 + 9.0 / k;
        SureDetection(std::array::from_fn(|i| {
            let (octave, eighth) = ((i / 8) as i64 + SURE_FIRST_OCTAVE, i % 8);
            let top = 2f64.powi(octave as i32) * (1.0 + (eighth + 1) as f64 / 8.0);
            q_sure * s50(params, top)
        }))
    }

    /// Whether a candidate of strength `s` at range `r` is detected for sure (false: maybe).
    #[inline]
    pub(crate) fn sure(&self, params: &ReturnParams, s: f64, r: f64) -> bool {
        // A positive normal `r` is (1 + m) 2^e: its step from the exponent and the
        // mantissa's top three bits.
        let bits = r.to_bits();
        let e = ((bits >> 52) & 0x7ff) as i64 - 1023;
        let step = (e - SURE_FIRST_OCTAVE) * 8 + ((bits >> 49) & 7) as i64;
        r > 0.0 && (0..SURE_STEPS as i64).contains(&step) && s * overlap(params, r) >= self.0[step as usize]
    }
}

/// The reported intensity of a return of linear intensity `linear` on a detector that
/// saturates at `i_sat`: `I_sat (1 − e^(−I / I_sat))`, the mean count of a photon-counting
/// (SPAD) detector, linear for faint returns and never above `I_sat`.
pub(crate) fn saturated(linear: f64, i_sat: f64) -> f64 {
    if i_sat > 0.0 { i_sat * -(-linear / i_sat).exp_m1() } else { linear }
}

/// A measured range `measured` kept at or above `floor` by folding: a draw that would fall
/// below the floor lands as far above it (no pile-up of returns at the floor).
pub(crate) fn fold_above(measured: f64, floor: f64) -> f64 {
    if measured >= floor { measured } else { (2.0 * floor - measured).max(floor) }
}

/// The refractive index whose normal-incidence Fresnel reflectance is `f0`:
/// `n = (1 + √F0) / (1 − √F0)`. Glass's 0.042 gives 1.515; a coating's larger F0 (low-E's
/// 0.60) an effective index that reflects most light at every angle, as a coated pane does.
pub fn index_from_f0(f0: f64) -> f64 {
    let r = f0.clamp(0.0, 0.99).sqrt();
    (1.0 + r) / (1.0 - r)
}

/// The unpolarised Fresnel reflectances `(R_s, R_p)` of an interface from air into index `n`
/// at incidence cosine `c`.
pub fn fresnel(c: f64, n: f64) -> (f64, f64) {
    let c = c.clamp(0.0, 1.0);
    let sin_t = (1.0 - c * c).sqrt() / n;
    let ct = (1.0 - sin_t * sin_t).max(0.0).sqrt();
    let rs = ((c - n * ct) / (c + n * ct)).powi(2);
    let rp = ((n * c - ct) / (n * c + ct)).powi(2);
    (rs, rp)
}

/// A slab's reflectance (both faces and their multiple reflections) and transmittance at one
/// incidence, averaged over the two polarisations.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SlabOptics {
    /// Light returned by the pane (`R_slab`).
    pub reflectance: f64,
    /// Light through the pane, one way (`T_slab`).
    pub transmittance: f64,
}

/// The slab of `material` at incidence cosine `c`: the index from its `F0`
/// ([`index_from_f0`]), the internal transmittance per pass solved from its normal-incidence
/// `T` and lengthened by the refracted path, and the incoherent sum over both faces,
/// `R = R₁ + (1 − R₁)² R₁ τ² / (1 − R₁² τ²)`, `T = (1 − R₁)² τ / (1 − R₁² τ²)` per polarisation.
pub fn slab_optics(material: &NirMaterial, c: f64) -> SlabOptics {
    let n = index_from_f0(material.f0 as f64);
    let (r0, _) = fresnel(1.0, n);
    let tau0 = internal_transmittance(material.transmission as f64, r0);
    let c = c.clamp(1e-6, 1.0);
    let cos_t = (1.0 - (1.0 - c * c) / (n * n)).max(1e-6).sqrt();
    let tau = tau0.powf(1.0 / cos_t);
    let (rs, rp) = fresnel(c, n);
    let pane = |r: f64| {
        let d = 1.0 - r * r * tau * tau;
        (r + (1.0 - r).powi(2) * r * tau * tau / d, (1.0 - r).powi(2) * tau / d)
    };
    let ((a, b), (x, y)) = (pane(rs), pane(rp));
    SlabOptics { reflectance: (a + x) / 2.0, transmittance: (b + y) / 2.0 }
}

/// The internal transmittance `τ` of one pass that gives a slab of face reflectance `r0` the
/// normal-incidence transmittance `t`: the root of `t r0² τ² + (1 − r0)² τ − t = 0` (1 where
/// `t` is what a lossless slab passes, or more).
fn internal_transmittance(t: f64, r0: f64) -> f64 {
    if t <= 0.0 {
        return 0.0;
    }
    let a = t * r0 * r0;
    let b = (1.0 - r0).powi(2);
    let tau = if a > 0.0 { (-b + (b * b + 4.0 * a * t).sqrt()) / (2.0 * a) } else { t / b };
    tau.min(1.0)
}

/// The standard normal distribution function Φ.
pub(crate) fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / std::f64::consts::SQRT_2)
}

/// The complementary error function, to a relative error below 1.2e−7 (Numerical Recipes'
/// `erfcc`, a Chebyshev fit): ample for a detection probability.
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = [
        -1.26551223,
        1.00002368,
        0.37409196,
        0.09678418,
        -0.18628806,
        0.27886807,
        -1.13520398,
        1.48851587,
        -0.82215223,
        0.17087277,
    ];
    let sum = poly.iter().rev().fold(0.0, |acc, &c| acc * t + c);
    let r = t * (-z * z + sum).exp();
    if x >= 0.0 { r } else { 2.0 - r }
}

/// Φ⁻¹ by bisection on [`normal_cdf`] (called once per calibration).
fn inverse_normal_cdf(p: f64) -> f64 {
    let (mut lo, mut hi) = (-40.0, 40.0);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if normal_cdf(mid) < p { lo = mid } else { hi = mid }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MaterialPreset, ReturnPreset, Spelled};

    #[test]
    fn fresnel_matches_the_textbook_values_for_glass() {
        let n = index_from_f0(0.042);
        assert!((n - 1.5155).abs() < 1e-3, "{n}"); // the spec's glass: n ≈ 1.515, F0 ≈ 0.042
        let (rs, rp) = fresnel(1.0, 1.5);
        assert!((rs - 0.04).abs() < 1e-12 && (rp - 0.04).abs() < 1e-12);
        // Brewster's angle: R_p vanishes at tan θ = n.
        let brewster = 1.5f64.atan();
        assert!(fresnel(brewster.cos(), 1.5).1 < 1e-12);
        // 60°, n = 1.5: R_s 0.1766, R_p 0.0018 (Hecht, Fig. 4.34).
        let (rs, rp) = fresnel(60f64.to_radians().cos(), 1.5);
        assert!((rs - 0.1766).abs() < 5e-4 && (rp - 0.0018).abs() < 5e-4, "{rs} {rp}");
    }

    #[test]
    fn a_clear_pane_passes_its_preset_head_on_and_less_at_grazing() {
        let clear = MaterialPreset::ClearFloatGlass.material();
        let head_on = slab_optics(&clear, 1.0);
        assert!((head_on.transmittance - 0.71).abs() < 1e-6, "{head_on:?}");
        let at = |deg: f64| slab_optics(&clear, deg.to_radians().cos());
        assert!(at(30.0).transmittance > 0.69 && at(60.0).transmittance < at(30.0).transmittance);
        assert!(at(80.0).transmittance < 0.45 && at(80.0).reflectance > 0.3, "{:?}", at(80.0));
        let low_e = slab_optics(&MaterialPreset::LowEGlass.material(), 0.5);
        assert!(low_e.reflectance > 0.5 && low_e.transmittance < 0.02, "{low_e:?}");
    }

    #[test]
    fn detection_is_even_odds_on_the_seed_law_and_steep_around_it() {
        let params = ReturnPreset::OusterOs1.params();
        let m = PhysicalModel::default();
        let r50 = params.max_range(0.1);
        assert!((m.detection_probability(&params, 0.1, r50) - 0.5).abs() < 1e-6);
        assert!(m.detection_probability(&params, 0.1, 0.8 * r50) > 0.99);
        assert!(m.detection_probability(&params, 0.1, 1.5 * r50) < 0.01);
        // A ρ 0.02 plate at 1 m: seen (the seed's floor of 0.03 drops it).
        assert!(m.detection_probability(&params, 0.02, 1.0) > 0.999);
        assert!((m.threshold_sigmas() - 3.719).abs() < 1e-3);
    }

    #[test]
    fn a_datasheet_range_quoted_at_a_probability_is_found_on_the_s_curve() {
        let params = ReturnPreset::OusterOs1.params();
        let m = PhysicalModel::default();
        for p in [0.1, 0.5, 0.9, 0.95, 0.99] {
            let r = m.range_at_probability(&params, 0.1, p).unwrap();
            assert!((m.detection_probability(&params, 0.1, r) - p).abs() < 1e-6, "{p} at {r} m");
        }
        // The seed's law is the 50 % contour; the 90 % contour lies 0.912 × nearer (k = 3.72).
        let ratio = m.range_at_probability(&params, 0.8, 0.9).unwrap() / params.max_range(0.8);
        assert!((ratio - 0.912).abs() < 1e-3, "{ratio}");
        assert_eq!(m.range_at_probability(&params, 0.8, 1.0), None);
        assert_eq!(m.range_at_probability(&params, 0.8, f64::NAN), None);
    }

    #[test]
    fn sure_detection_is_only_where_the_probability_is_one() {
        let m = PhysicalModel::default();
        for params in [ReturnPreset::OusterOs1.params(), ReturnPreset::Generic.params()] {
            let k = m.threshold_sigmas();
            let sure = SureDetection::new(&params, k);
            let mut found = 0;
            for i in 0..400 {
                let r = 0.01 * 1.04f64.powi(i);
                for s in [1e-4, 1e-3, 0.01, 0.05, 0.1, 0.5, 0.9, 3.0, 800.0] {
                    if sure.sure(&params, s, r) {
                        found += 1;
                        assert_eq!(detection_probability(&params, k, s, r), 1.0, "{s} at {r} m");
                    }
                }
            }
            assert!(found > 1000, "{found}");
            for r in [0.0, -1.0, f64::NAN, f64::INFINITY, 1e-30] {
                assert!(!sure.sure(&params, 0.5, r), "{r}");
            }
        }
    }

    #[test]
    fn noise_follows_the_signal_and_the_footprint() {
        let params = ReturnPreset::OusterOs1.params();
        let m = PhysicalModel { beam_divergence_deg: 0.0, ..PhysicalModel::default() };
        let ratio = m.range_sigma(&params, 0.1 * 1.0, 10.0, 1.0) / m.range_sigma(&params, 0.9, 10.0, 1.0);
        assert!((ratio - 3.0).abs() < 1e-9, "{ratio}");
        let wide = PhysicalModel::default();
        let tilted = wide.range_sigma(&params, 0.8, 20.0, 20f64.to_radians().cos());
        let steep = wide.range_sigma(&params, 0.8, 20.0, 70f64.to_radians().cos());
        assert!(steep > tilted && steep > params.noise_sigma(20.0));
        assert_eq!(fold_above(0.004, 0.01), 0.016);
        assert_eq!(fold_above(0.5, 0.01), 0.5);
    }

    #[test]
    fn intensity_saturates_smoothly_below_its_ceiling() {
        assert!((saturated(1.0, 900.0) - 1.0).abs() < 1e-3, "faint returns are linear");
        assert!((saturated(900.0, 900.0) - 900.0 * (1.0 - (-1f64).exp())).abs() < 1e-9);
        assert!(saturated(1e6, 900.0) <= 900.0 && saturated(1e6, 900.0) > 899.0, "never above the ceiling");
        assert!(saturated(500.0, 900.0) > saturated(400.0, 900.0), "monotonic");
    }

    #[test]
    fn footprint_sub_rays_keep_the_beams_second_moment() {
        let fwhm: f64 = 0.18;
        let sigma = fwhm.to_radians() / 2.354_820;
        for n in [2, 7, 19, 32] {
            let offsets = footprint_offsets(n, fwhm);
            assert_eq!(offsets.len(), n as usize);
            assert_eq!(offsets[0], (0.0, 0.0));
            // A circular Gaussian of per-axis σ has E[r²] = 2σ²; the axis stands for the
            // first annulus, whose share ∫₀^{1/n} −ln(1 − u) du of it goes missing.
            let mean_r2 = offsets.iter().map(|(x, y)| x * x + y * y).sum::<f64>() / n as f64;
            let v = 1.0 - 1.0 / n as f64;
            let first_share = 1.0 - (v - v * v.ln());
            let expected = 2.0 * sigma * sigma * (1.0 - first_share);
            assert!((mean_r2 - expected).abs() < 1e-6 * expected, "{n}: {mean_r2} {expected}");
            // Radii grow outward.
            let radius = |k: usize| offsets[k].0.hypot(offsets[k].1);
            assert!((2..n as usize).all(|k| radius(k) > radius(k - 1)));
        }
        assert_eq!(footprint_offsets(1, fwhm), vec![(0.0, 0.0)]);
    }

    #[test]
    fn parameters_out_of_range_are_named() {
        for footprint_rays in [0, 33] {
            let bad = PhysicalModel { footprint_rays, ..PhysicalModel::default() };
            assert!(bad.validate().unwrap_err().to_string().contains("footprint_rays"));
        }
        let bad = PhysicalModel { beam_divergence_deg: -1.0, ..PhysicalModel::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("beam_divergence_deg"));
        let bad = PhysicalModel { false_alarm_rate: 0.0, ..PhysicalModel::default() };
        assert!(bad.validate().unwrap_err().to_string().contains("false_alarm_rate"));
        assert_eq!(ReturnModelKind::from_name("physical").unwrap(), ReturnModelKind::Physical);
        assert!(ReturnModelKind::from_name("fancy").unwrap_err().to_string().contains("seed"));
    }
}
