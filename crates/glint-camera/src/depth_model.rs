//! Depth-sensor models on a camera's clean depth (`spec/depth-sensors.md`): what a real
//! depth camera reports where the clean z-buffer has `z`. Each model is a validity mask from
//! the device's geometry, noise in the device's own variable and material failures read from
//! the NIR channels. This module holds the fields, the presets and the device arithmetic;
//! `measure.rs` casts the rays that feed it.

use glint_core::spelled;
use glint_materials::ZIGGURAT;

use crate::CameraError;

/// The depth-sensor model of a camera (LuckyEngine's `sensor_model`: its wire integer is the
/// position here).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum SensorModel {
    /// The clean depth, equal to `mj_ray` along each pixel's ray.
    #[default]
    None,
    /// Active stereo (RealSense D4xx): a left imager and a right one `baseline` to its right.
    ActiveStereo,
    /// Indirect time of flight (Azure Kinect): phasors of the sub-pixel returns.
    IToF,
    /// Structured light (Kinect v1): the camera and a projector `baseline` to its right.
    StructuredLight,
    /// Sparse multizone direct time of flight (VL53L5CX): a time histogram per zone.
    DToFSparse,
}

spelled!(SensorModel, "depth sensor model", [
    None => "none",
    ActiveStereo => "active-stereo",
    IToF => "itof",
    StructuredLight => "structured-light",
    DToFSparse => "dtof-sparse",
]);

/// What a depth stream carries (LuckyEngine's `debug_channel`: its wire integer is the
/// position here). Anything but `Depth` is an internal quantity of the model, not a depth map.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum DebugChannel {
    /// The measured depth, metres.
    #[default]
    Depth,
    /// Return strength: NIR reflectivity × cos θ / r² plus glints and retroreflection.
    Backscatter,
    /// Cosine of the incidence angle at the first surface.
    IncidenceCosine,
    /// NIR reflectivity of the first surface.
    NirReflectivity,
    /// Depth of the first transparent surface (glass, water, foliage), metres; 0 where none.
    TransparentDepth,
    /// Metalness, as the first surface's F0.
    Metalness,
    /// Roughness, as the first surface's RMS specular slope (radians).
    Roughness,
    /// Share of the return lost behind transparent surfaces, 0 to 1.
    TransmissionSuppression,
    /// Continuation class of the first surface (0 opaque, 1 slab, 2 medium, 3 porous,
    /// 4 specular; −1 nothing hit).
    ContinuationClass,
    /// 1 where the model reports a hole (occlusion from the second viewpoint among them),
    /// 0 where it reports depth.
    OcclusionMask,
}

spelled!(DebugChannel, "debug channel", [
    Depth => "depth",
    Backscatter => "backscatter",
    IncidenceCosine => "incidence-cosine",
    NirReflectivity => "nir-reflectivity",
    TransparentDepth => "transparent-depth",
    Metalness => "metalness",
    Roughness => "roughness",
    TransmissionSuppression => "transmission-suppression",
    ContinuationClass => "continuation-class",
    OcclusionMask => "occlusion-mask",
]);

/// Which of a dToF zone's targets its image reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TargetOrder {
    /// The strongest peak (the VL53L5CX's default).
    #[default]
    Strongest,
    /// The nearest peak.
    Closest,
}

spelled!(TargetOrder, "target order", [
    Strongest => "strongest",
    Closest => "closest",
]);

/// A named device: the fields of [`DepthSensor`] it implies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepthPreset {
    /// Intel RealSense D435: 848 × 480, 90° × 58°, baseline 50 mm.
    RealsenseD435,
    /// Intel RealSense D415: 1280 × 720, 65° × 40°, baseline 55 mm.
    RealsenseD415,
    /// Intel RealSense D455: 1280 × 720, 87° × 58°, baseline 95 mm.
    RealsenseD455,
    /// Microsoft Kinect v1 (PrimeSense): 640 × 480, 57° × 43°, baseline 75 mm.
    KinectV1,
    /// Azure Kinect, narrow field of view, unbinned: 640 × 576, 75° × 65°, iToF.
    AzureKinectNfov,
    /// ST VL53L5CX: 8 × 8 zones over 45° × 45°, up to 4 m.
    Vl53l5cx,
}

spelled!(DepthPreset, "depth sensor preset", [
    RealsenseD435 => "realsense-d435",
    RealsenseD415 => "realsense-d415",
    RealsenseD455 => "realsense-d455",
    KinectV1 => "kinect-v1",
    AzureKinectNfov => "azure-kinect-nfov",
    Vl53l5cx => "vl53l5cx",
]);

/// How a camera's depth is measured. [`DepthSensor::default`] is the clean depth.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DepthSensor {
    /// The model.
    pub model: SensorModel,
    /// What the stream carries.
    pub debug_channel: DebugChannel,
    /// Which dToF target a zone reports.
    pub target_order: TargetOrder,
    /// Metres per code of the 16-bit depth (`round(z / depth_scale)`, 0 invalid).
    pub depth_scale: f64,
    /// Nearest reported optical-axis depth, metres (nearer: invalid).
    pub min_range: f64,
    /// Farthest reported optical-axis depth, metres (farther: invalid).
    pub max_range: f64,
    /// Weakest return a device detects, in return strength (NIR reflectivity × cos θ / r²,
    /// r in metres: a white matte wall head-on at 1 m is 1); 0: every return is detected.
    pub detect_floor: f64,
    /// Distance from the camera to the second imager or the projector along the camera's
    /// +x (image right), metres.
    pub baseline: f64,
    /// Standard deviation of the disparity noise, pixels.
    pub subpixel_sigma: f64,
    /// Largest disparity the matcher searches, pixels: nearer than `f·B / max_disparity`
    /// (MinZ) nothing is valid.
    pub max_disparity: f64,
    /// Step the disparity is rounded to, pixels (0: none).
    pub disparity_step: f64,
    /// iToF: the modulation frequency, MHz (range wraps at c / 2f).
    pub modulation_mhz: f64,
    /// iToF: a second modulation frequency, MHz, to unwrap with (0: one frequency).
    pub modulation2_mhz: f64,
    /// iToF: range noise at return strength 1, metres (shot-limited: σ = range_noise / √A).
    pub range_noise: f64,
    /// Strongest return before the sensor saturates (that pixel or zone is invalid); 0:
    /// never.
    pub saturation: f64,
    /// iToF: sub-pixel rays per side (n × n per pixel, summed as phasors).
    pub subpixels: f64,
    /// dToF: zones per side of the image (n × n).
    pub zones: f64,
    /// dToF: sub-rays per side of a zone.
    pub zone_rays: f64,
    /// dToF: histogram bin width, metres.
    pub bin_width: f64,
    /// dToF: ambient counts per histogram bin.
    pub ambient_counts: f64,
}

impl Default for DepthSensor {
    fn default() -> Self {
        DepthSensor {
            model: SensorModel::None,
            debug_channel: DebugChannel::Depth,
            target_order: TargetOrder::Strongest,
            depth_scale: 0.001,
            min_range: 0.0,
            max_range: 1.0e4,
            detect_floor: 0.0,
            baseline: 0.05,
            subpixel_sigma: 0.08,
            max_disparity: 126.0,
            disparity_step: 0.0,
            modulation_mhz: 200.0,
            modulation2_mhz: 0.0,
            range_noise: 0.0017,
            saturation: 0.0,
            subpixels: 2.0,
            zones: 8.0,
            zone_rays: 8.0,
            bin_width: 0.0375,
            ambient_counts: 20.0,
        }
    }
}

/// Kinect v1's disparity noise, pixels: with its 1/8-pixel steps, the RMS depth error of
/// its published law σ_z = 1.425·10⁻³·z² m at its focal length (about 580 px, baseline
/// 75 mm: σ_d ≈ 0.062 px in all, of which rounding to 1/8 px gives 0.036 px).
const KINECT_V1_SIGMA_PX: f64 = 0.050;

/// The speed of light, metres per microsecond (ranges from MHz).
const C_M_PER_US: f64 = 299.792_458;

/// A calibration field: its name (the manifest's, the sidecar's, the wire's), the range it
/// takes and where it lives in a [`DepthSensor`].
struct Field {
    name: &'static str,
    range: (f64, f64),
    /// Whether the low end is excluded.
    open_low: bool,
    units: &'static str,
    get: fn(&DepthSensor) -> f64,
    set: fn(&mut DepthSensor, f64),
}

macro_rules! fields {
    ($($name:ident: $lo:expr, $hi:expr, $open:expr, $units:expr;)*) => {
        const FIELDS: &[Field] = &[$(Field {
            name: stringify!($name),
            range: ($lo, $hi),
            open_low: $open,
            units: $units,
            get: |s| s.$name,
            set: |s, v| s.$name = v,
        }),*];
    };
}

fields! {
    depth_scale: 0.0, 1.0, true, "metres per code";
    min_range: 0.0, 1.0e4, false, "metres";
    max_range: 0.0, 1.0e4, true, "metres";
    detect_floor: 0.0, 1.0e3, false, "return strength";
    baseline: 0.0, 10.0, true, "metres";
    subpixel_sigma: 0.0, 10.0, false, "pixels";
    max_disparity: 0.0, 1.0e4, true, "pixels";
    disparity_step: 0.0, 1.0, false, "pixels";
    modulation_mhz: 0.0, 1.0e4, true, "MHz";
    modulation2_mhz: 0.0, 1.0e4, false, "MHz";
    range_noise: 0.0, 1.0, false, "metres";
    saturation: 0.0, 1.0e6, false, "return strength";
    subpixels: 1.0, 4.0, false, "rays per side";
    zones: 1.0, 64.0, false, "zones per side";
    zone_rays: 1.0, 32.0, false, "rays per side";
    bin_width: 0.0, 1.0, true, "metres";
    ambient_counts: 0.0, 1.0e6, false, "counts per bin";
}

/// The fields that must be whole numbers.
const WHOLE: [&str; 3] = ["subpixels", "zones", "zone_rays"];

impl DepthSensor {
    /// The names of the calibration fields, as manifests, sidecars and the wire spell them.
    pub fn field_names() -> impl Iterator<Item = &'static str> {
        FIELDS.iter().map(|f| f.name)
    }

    /// Every calibration field by name, in [`DepthSensor::field_names`]' order.
    pub fn fields(&self) -> Vec<(&'static str, f64)> {
        FIELDS.iter().map(|f| (f.name, (f.get)(self))).collect()
    }

    /// Sets the calibration field `name`; an unknown name is an error naming the nearest.
    /// Ranges are checked by [`DepthSensor::validate`].
    pub fn set_field(&mut self, name: &str, value: f64) -> Result<(), CameraError> {
        let field = FIELDS.iter().find(|f| f.name == name).ok_or_else(|| {
            let near = glint_core::nearest_name(name, Self::field_names())
                .map_or_else(String::new, |n| format!("; did you mean '{n}'?"));
            CameraError::DepthSensor(format!("no depth-sensor field '{name}'{near}"))
        })?;
        (field.set)(self, value);
        Ok(())
    }

    /// The device's fields; its image size is [`DepthPreset::resolution`] and its field of
    /// view [`DepthPreset::fovy`].
    pub fn preset(preset: DepthPreset) -> DepthSensor {
        let stereo = |baseline, min_range, max_range| DepthSensor {
            model: SensorModel::ActiveStereo,
            baseline,
            subpixel_sigma: 0.08,
            max_disparity: 126.0,
            min_range,
            max_range,
            // The projector's dots on a black matte panel (ρ 0.03) fade out near 2.5 m.
            detect_floor: 0.005,
            ..DepthSensor::default()
        };
        match preset {
            DepthPreset::RealsenseD435 => stereo(0.050, 0.1, 10.0),
            DepthPreset::RealsenseD415 => stereo(0.055, 0.16, 10.0),
            DepthPreset::RealsenseD455 => stereo(0.095, 0.4, 20.0),
            DepthPreset::KinectV1 => DepthSensor {
                model: SensorModel::StructuredLight,
                baseline: 0.075,
                subpixel_sigma: KINECT_V1_SIGMA_PX,
                disparity_step: 0.125,
                // The range gate (0.7 m) limits it, not the matcher: no disparity bound of
                // its own within any image glint renders.
                max_disparity: 1000.0,
                min_range: 0.7,
                max_range: 6.0,
                detect_floor: 0.01,
                ..DepthSensor::default()
            },
            // A fine frequency for precision and a coarse one (8× the range noise) to unwrap
            // to 6 m; the random error at the range's end (3.86 m) on a 15 % target is the
            // datasheet's 17 mm (strength 0.01).
            DepthPreset::AzureKinectNfov => DepthSensor {
                model: SensorModel::IToF,
                min_range: 0.5,
                max_range: 3.86,
                modulation_mhz: 200.0,
                modulation2_mhz: 25.0,
                range_noise: 0.0017,
                detect_floor: 0.002,
                subpixels: 2.0,
                ..DepthSensor::default()
            },
            DepthPreset::Vl53l5cx => DepthSensor {
                model: SensorModel::DToFSparse,
                min_range: 0.02,
                max_range: 4.0,
                zones: 8.0,
                zone_rays: 8.0,
                bin_width: 0.0375,
                ambient_counts: 20.0,
                detect_floor: 0.005,
                ..DepthSensor::default()
            },
        }
    }

    /// The fields of `model`'s representative device (D435, Azure Kinect NFOV, Kinect v1,
    /// VL53L5CX), for a model chosen without a preset: the defaults alone would leave an iToF
    /// with one frequency that wraps at 0.75 m. `None` is the clean depth.
    pub fn for_model(model: SensorModel) -> DepthSensor {
        match model {
            SensorModel::None => DepthSensor::default(),
            SensorModel::ActiveStereo => DepthSensor::preset(DepthPreset::RealsenseD435),
            SensorModel::IToF => DepthSensor::preset(DepthPreset::AzureKinectNfov),
            SensorModel::StructuredLight => DepthSensor::preset(DepthPreset::KinectV1),
            SensorModel::DToFSparse => DepthSensor::preset(DepthPreset::Vl53l5cx),
        }
    }

    /// Checks every field's range.
    pub fn validate(&self) -> Result<(), CameraError> {
        for f in FIELDS {
            let v = (f.get)(self);
            let (lo, hi) = f.range;
            let above_low = if f.open_low { v > lo } else { v >= lo };
            if !(v.is_finite() && above_low && v <= hi) {
                let open = if f.open_low { "(" } else { "[" };
                return Err(CameraError::DepthSensor(format!(
                    "{} = {v} is out of range; use {open}{lo}, {hi}] {}",
                    f.name, f.units
                )));
            }
            if WHOLE.contains(&f.name) && v.fract() != 0.0 {
                return Err(CameraError::DepthSensor(format!("{} = {v} must be a whole number", f.name)));
            }
        }
        if self.max_range <= self.min_range {
            return Err(CameraError::DepthSensor(format!(
                "max_range = {} is not above min_range = {}; widen the range",
                self.max_range, self.min_range
            )));
        }
        Ok(())
    }

    /// Whether depth is measured rather than clean (a model, or a debug channel).
    pub fn is_active(&self) -> bool {
        self.model != SensorModel::None || self.debug_channel != DebugChannel::Depth
    }

    /// Whether each pixel's depth comes from the model's own rays alone (time of flight's
    /// sub-pixel and zone rays, with no debug channel): the clean centre rays are not needed.
    pub fn casts_its_own_rays(&self) -> bool {
        matches!(self.model, SensorModel::IToF | SensorModel::DToFSparse) && self.debug_channel == DebugChannel::Depth
    }

    /// The depth a triangulating device (active stereo, structured light) reports for a
    /// pixel whose depth is `z` (0: nothing hit), at column `col`, with the camera's focal
    /// length `fx` in pixels, where `seen` says whether the second viewpoint sees the point
    /// and `noise` is a standard normal draw for this pixel and frame. 0 is invalid.
    pub fn triangulate(&self, z: f64, col: usize, fx: f64, seen: bool, noise: f64) -> f32 {
        if z <= 0.0 || !seen {
            return 0.0;
        }
        let fb = fx * self.baseline;
        let disparity = fb / z;
        // The second viewpoint, `baseline` to the right, sees the point `disparity` pixels
        // further left: past the image's left edge it sees nothing there (the left band).
        if disparity > self.max_disparity || disparity > col as f64 + 0.5 {
            return 0.0;
        }
        let mut d = disparity + self.subpixel_sigma * noise;
        if self.disparity_step > 0.0 {
            d = (d / self.disparity_step).round() * self.disparity_step;
        }
        if d <= 0.0 {
            return 0.0;
        }
        self.gate(fb / d)
    }

    /// `z` where the range gate passes it, else 0 (invalid).
    pub fn gate(&self, z: f64) -> f32 {
        if z < self.min_range || z > self.max_range { 0.0 } else { z as f32 }
    }

    /// iToF: the range an iToF pixel reports for returns `(range, amplitude)` summed as
    /// phasors, with standard normal draws `noise` (one per frequency); `None` where the
    /// summed amplitude is below the detect floor or above saturation.
    pub fn itof_range(&self, returns: &[(f64, f64)], noise: [f64; 2]) -> Option<f64> {
        ItofPhase::of(self).range(returns, noise)
    }

    /// iToF: the farthest range one frequency (or the pair's common divisor) tells apart.
    pub fn unambiguous_range(&self) -> f64 {
        let mhz = if self.modulation2_mhz > 0.0 {
            gcd_mhz(self.modulation_mhz, self.modulation2_mhz)
        } else {
            self.modulation_mhz
        };
        C_M_PER_US / (2.0 * mhz)
    }
}

/// An iToF sensor's constants, worked out once for a band of pixels: the divisions and
/// the unwrapping's step count stay out of the per-pixel work.
#[derive(Clone, Copy, Debug)]
pub(crate) struct ItofPhase {
    /// Phase per metre (there and back) and wrap length at the first frequency.
    k1: f64,
    w1: f64,
    /// `1 / k1`, and the same at the second frequency (`k2 = 0`: one frequency) with
    /// `1 / k2` and `1 / w2`.
    per_k1: f64,
    k2: f64,
    per_k2: f64,
    w2: f64,
    per_w2: f64,
    /// Wraps of `w1` within the pair's unambiguous range, `1 / w1`, and whether the first
    /// frequency is a whole multiple of the second (then `w2 = steps · w1`).
    unwrap_steps: u32,
    per_w1: f64,
    second_divides_first: bool,
    /// The second frequency's noise per unit of the first's (f1 / f2).
    noise_ratio: f64,
    range_noise: f64,
    detect_floor: f64,
    saturation: f64,
}

impl ItofPhase {
    pub(crate) fn of(sensor: &DepthSensor) -> ItofPhase {
        let (f1, f2) = (sensor.modulation_mhz, sensor.modulation2_mhz);
        let wrap = |mhz: f64| C_M_PER_US / (2.0 * mhz);
        let two = f2 > 0.0;
        let reach = if two { wrap(gcd_mhz(f1, f2)) } else { wrap(f1) };
        let mut unwrap_steps = 0;
        while f64::from(unwrap_steps) * wrap(f1) < reach {
            unwrap_steps += 1;
        }
        ItofPhase {
            k1: itof_wavenumber(f1),
            w1: wrap(f1),
            per_k1: itof_wavenumber(f1).recip(),
            k2: if two { itof_wavenumber(f2) } else { 0.0 },
            per_k2: if two { itof_wavenumber(f2).recip() } else { 0.0 },
            w2: if two { wrap(f2) } else { 0.0 },
            per_w2: if two { 1.0 / wrap(f2) } else { 0.0 },
            unwrap_steps,
            per_w1: 1.0 / wrap(f1),
            second_divides_first: two && (f1 / f2).fract() == 0.0 && (f1 / f2) as u32 == unwrap_steps,
            noise_ratio: if two { f1 / f2 } else { 0.0 },
            range_noise: sensor.range_noise,
            detect_floor: sensor.detect_floor,
            saturation: sensor.saturation,
        }
    }

    /// [`DepthSensor::itof_range`].
    pub(crate) fn range(&self, returns: &[(f64, f64)], noise: [f64; 2]) -> Option<f64> {
        let &(reference, _) = returns.first()?;
        let (re, im) = relative_phasor(returns, reference, self.k1);
        let amplitude = (re * re + im * im).sqrt();
        if amplitude <= 0.0 || amplitude < self.detect_floor || (self.saturation > 0.0 && amplitude > self.saturation) {
            return None;
        }
        // Phase noise falls as 1/√A; in range it scales with the wrap length (1/f). The
        // summed phasor's phase is the reference's plus its own angle (k · wrap = 2π).
        let sigma = self.range_noise / amplitude.sqrt();
        let first = wrap_into(reference + small_atan2(im, re) * self.per_k1 + sigma * noise[0], self.w1, self.per_w1);
        if self.k2 == 0.0 {
            return Some(first);
        }
        let (re2, im2) = relative_phasor(returns, reference, self.k2);
        let second = wrap_into(
            reference + small_atan2(im2, re2) * self.per_k2 + sigma * self.noise_ratio * noise[1],
            self.w2,
            self.per_w2,
        );
        Some(self.unwrap(first, second))
    }

    /// The range within the pair's unambiguous range whose wraps at both frequencies best
    /// agree with `r1` (wrapped at the first) and `r2` (at the second).
    fn unwrap(&self, r1: f64, r2: f64) -> f64 {
        if self.second_divides_first {
            // The candidates r1 + k·w1 (k < steps) tile one wrap of the second frequency, so
            // the nearest to r2 is a rounding away.
            let k = ((r2 - r1) * self.per_w1).round().rem_euclid(f64::from(self.unwrap_steps));
            return r1 + k * self.w1;
        }
        let mut best = (f64::INFINITY, r1);
        for k in 0..self.unwrap_steps {
            let candidate = r1 + f64::from(k) * self.w1;
            let miss = wrap_into(candidate - r2, self.w2, self.per_w2);
            let miss = miss.min(self.w2 - miss);
            if miss < best.0 {
                best = (miss, candidate);
            }
        }
        best.1
    }
}

/// iToF: the phase a return's range turns per metre at modulation `mhz` (there and back).
fn itof_wavenumber(mhz: f64) -> f64 {
    4.0 * std::f64::consts::PI * mhz / C_M_PER_US
}

/// The sum of returns `(range, amplitude)` as phasors at wavenumber `k`, each turned by its
/// range's difference from `reference`: the sum's phase is then the sum at the reference's
/// range. A pixel's sub-pixel returns mostly lie within millimetres of each other, so their
/// small turns take a polynomial instead of libm's `sin_cos` (which was a fifth of an iToF
/// frame).
fn relative_phasor(returns: &[(f64, f64)], reference: f64, k: f64) -> (f64, f64) {
    returns.iter().fold((0.0, 0.0), |(re, im), &(range, amplitude)| {
        let (sin, cos) = small_sin_cos(k * (range - reference));
        (re + amplitude * cos, im + amplitude * sin)
    })
}

/// `x.sin_cos()` within a few ulps: Taylor's series to x¹¹ where |x| ≤ 1/4 (truncation below
/// 1e-17; to x⁷ within 1/32), libm beyond.
fn small_sin_cos(x: f64) -> (f64, f64) {
    if x.abs() > 0.25 {
        return x.sin_cos();
    }
    // The series' coefficients ±1/n!, multiplied rather than divided (a division costs a
    // dozen multiplications).
    const SIN: [f64; 5] = [-1.0 / 6.0, 1.0 / 120.0, -1.0 / 5040.0, 1.0 / 362_880.0, -1.0 / 39_916_800.0];
    const COS: [f64; 5] = [-1.0 / 2.0, 1.0 / 24.0, -1.0 / 720.0, 1.0 / 40_320.0, -1.0 / 3_628_800.0];
    let x2 = x * x;
    // Within 1/32 (most sub-pixel returns) the terms past x⁷ are below 1e-16.
    let (sin, cos) = if x2 <= 1.0 / 1024.0 {
        (horner(&SIN[..3], x2), horner(&COS[..3], x2))
    } else {
        (horner(&SIN, x2), horner(&COS, x2))
    };
    (x + x * x2 * sin, 1.0 + x2 * cos)
}

/// `y.atan2(x)` within a few ulps: Taylor's series to t¹⁷ where the angle is small
/// (`x > 0`, |y/x| ≤ 1/8: truncation below 1e-17; to t⁹ within 1/64), libm beyond.
fn small_atan2(y: f64, x: f64) -> f64 {
    if x <= 0.0 || y.abs() > 0.125 * x {
        return y.atan2(x);
    }
    const ATAN: [f64; 8] =
        [-1.0 / 3.0, 1.0 / 5.0, -1.0 / 7.0, 1.0 / 9.0, -1.0 / 11.0, 1.0 / 13.0, -1.0 / 15.0, 1.0 / 17.0];
    let t = y / x;
    let t2 = t * t;
    // Most pixels' returns agree to millimetres: their angles take half the terms.
    let series = if t2 <= 1.0 / 4096.0 { horner(&ATAN[..4], t2) } else { horner(&ATAN, t2) };
    t + t * t2 * series
}

/// `c[0] + c[1]·x + c[2]·x² + …` by Horner's rule; inlined, so a constant `c` unrolls.
#[inline(always)]
fn horner(c: &[f64], x: f64) -> f64 {
    c.iter().rev().fold(0.0, |acc, &ci| acc * x + ci)
}

/// `x.rem_euclid(w)` for `w > 0` with `per_w = 1 / w`, without `fmod` (slow): in `[0, w)`.
fn wrap_into(x: f64, w: f64, per_w: f64) -> f64 {
    let r = x - (x * per_w).floor() * w;
    if r >= w {
        r - w
    } else if r < 0.0 {
        r + w
    } else {
        r
    }
}

/// The greatest common divisor of two frequencies, to 1 kHz.
fn gcd_mhz(a: f64, b: f64) -> f64 {
    let (mut x, mut y) = ((a * 1000.0).round() as u64, (b * 1000.0).round() as u64);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    x.max(1) as f64 / 1000.0
}

impl DepthPreset {
    /// The device's image size, pixels (width, height).
    pub fn resolution(self) -> (usize, usize) {
        match self {
            DepthPreset::RealsenseD435 => (848, 480),
            DepthPreset::RealsenseD415 | DepthPreset::RealsenseD455 => (1280, 720),
            DepthPreset::KinectV1 => (640, 480),
            DepthPreset::AzureKinectNfov => (640, 576),
            DepthPreset::Vl53l5cx => (8, 8),
        }
    }

    /// The device's vertical field of view, degrees (datasheets).
    pub fn fovy(self) -> f64 {
        match self {
            DepthPreset::RealsenseD435 | DepthPreset::RealsenseD455 => 58.0,
            DepthPreset::RealsenseD415 => 40.0,
            DepthPreset::KinectV1 => 43.0,
            DepthPreset::AzureKinectNfov => 65.0,
            DepthPreset::Vl53l5cx => 45.0,
        }
    }
}

/// A standard normal draw keyed by `key` (the frame's key mixed with the camera and the
/// pixel): the same key gives the same draw on any thread.
pub fn normal_draw(key: u64) -> f64 {
    // The ziggurat's common case from one 64-bit draw (about 99 %), else its full draw
    // from the same keyed stream.
    let bits = splitmix64(key);
    let (x, stands) = ZIGGURAT.quick(bits);
    if stands { x } else { ZIGGURAT.sample(&mut Keyed(bits)) }
}

/// A stream of 64-bit draws from a key (splitmix64), for the ziggurat's rare slow path.
struct Keyed(u64);

impl rand::RngCore for Keyed {
    fn next_u32(&mut self) -> u32 {
        self.next_u64() as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = splitmix64(self.0);
        self.0
    }

    fn fill_bytes(&mut self, dest: &mut [u8]) {
        for chunk in dest.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
    }

    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand::Error> {
        self.fill_bytes(dest);
        Ok(())
    }
}

/// A uniform draw in [0, 1) keyed by `key`.
pub fn uniform_draw(key: u64) -> f64 {
    (splitmix64(key) >> 11) as f64 / (1u64 << 53) as f64
}

/// A Poisson draw of mean `mean` keyed by `key` (a normal approximation from 10 counts up).
pub fn poisson_draw(mean: f64, key: u64) -> f64 {
    if mean <= 0.0 {
        return 0.0;
    }
    if mean >= 10.0 {
        return (mean + mean.sqrt() * normal_draw(key)).round().max(0.0);
    }
    // Knuth's product of uniforms.
    let (limit, mut product, mut count, mut k) = ((-mean).exp(), 1.0, 0.0, key);
    loop {
        k = splitmix64(k);
        product *= (k >> 11) as f64 / (1u64 << 53) as f64;
        if product <= limit {
            return count;
        }
        count += 1.0;
    }
}

/// The key of a frame: world's episode seed and the frame's number in the episode (its tick).
pub fn frame_key(episode_seed: u64, frame: u64) -> u64 {
    splitmix64(episode_seed ^ splitmix64(frame))
}

/// The key of pixel `pixel` of camera `camera` in a frame keyed `frame`.
pub fn pixel_key(frame: u64, camera: usize, pixel: usize) -> u64 {
    splitmix64(splitmix64(frame ^ (camera as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15)) ^ pixel as u64)
}

fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glint_core::Spelled;

    /// Plane-fit RMS (here: the spread of one depth, a fronto-parallel wall) of `n` pixels.
    fn rms_at(sensor: &DepthSensor, z: f64, fx: f64) -> f64 {
        let n = 40_000;
        let got: Vec<f64> =
            (0..n).map(|p| f64::from(sensor.triangulate(z, 400, fx, true, normal_draw(pixel_key(7, 0, p))))).collect();
        assert!(got.iter().all(|&m| m > 0.0), "every pixel valid at {z} m");
        let mean = got.iter().sum::<f64>() / n as f64;
        (got.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / n as f64).sqrt()
    }

    #[test]
    fn stereo_noise_follows_the_datasheet_law() {
        let d435 = DepthSensor::preset(DepthPreset::RealsenseD435);
        // 848 px over 90°.
        let fx = 424.0 / 45f64.to_radians().tan();
        let mut points = Vec::new();
        for z in [0.5, 1.0, 2.0, 4.0] {
            let law = z * z * d435.subpixel_sigma / (fx * d435.baseline);
            let rms = rms_at(&d435, z, fx);
            assert!((rms / law - 1.0).abs() < 0.15, "{z} m: RMS {rms} against {law}");
            points.push((z.ln(), rms.ln()));
        }
        let slope = (points[3].1 - points[0].1) / (points[3].0 - points[0].0);
        assert!((slope - 2.0).abs() < 0.15, "log-log slope {slope}");
        // 3.8 mm at 1 m, as the spec says of the D435.
        let at_1m = d435.subpixel_sigma / (fx * d435.baseline);
        assert!((at_1m - 0.0038).abs() < 0.0002, "{at_1m}");
    }

    #[test]
    fn structured_light_noise_follows_kinects_law() {
        let kinect = DepthSensor::preset(DepthPreset::KinectV1);
        let fx = 320.0 / 28.5f64.to_radians().tan();
        for z in [1.0, 2.0, 4.0] {
            let law = 1.425e-3 * z * z;
            let rms = rms_at(&kinect, z, fx);
            assert!((rms / law - 1.0).abs() < 0.15, "{z} m: RMS {rms} against {law}");
        }
        // Disparities come in 1/8-pixel steps.
        let d = kinect.triangulate(2.0, 400, fx, true, 0.3);
        let disparity = fx * kinect.baseline / f64::from(d);
        assert!(((disparity * 8.0) - (disparity * 8.0).round()).abs() < 1e-3, "{disparity}");
    }

    #[test]
    fn validity_follows_the_devices_geometry() {
        let d435 = DepthSensor::preset(DepthPreset::RealsenseD435);
        let fx = 424.0;
        let fb = fx * d435.baseline;
        // MinZ = f·B / max disparity.
        let min_z = fb / d435.max_disparity;
        assert!(d435.triangulate(min_z * 0.99, 800, fx, true, 0.0) == 0.0);
        assert!(d435.triangulate(min_z * 1.01, 800, fx, true, 0.0) > 0.0);
        // The left band is f·B/z pixels wide.
        let z = 1.0;
        let band = (fb / z).floor() as usize;
        assert_eq!(d435.triangulate(z, band - 1, fx, true, 0.0), 0.0);
        assert!(d435.triangulate(z, band + 1, fx, true, 0.0) > 0.0);
        // Unseen by the second viewpoint, nothing hit, or out of range: invalid.
        assert_eq!(d435.triangulate(z, 400, fx, false, 0.0), 0.0);
        assert_eq!(d435.triangulate(0.0, 400, fx, true, 0.0), 0.0);
        assert_eq!(d435.triangulate(11.0, 400, fx, true, 0.0), 0.0);
        // Without noise the clean depth comes back.
        assert!((d435.triangulate(z, 400, fx, true, 0.0) - 1.0).abs() < 1e-6);
    }

    #[test]
    fn draws_are_standard_normal_and_keyed() {
        let n = 100_000;
        let draws: Vec<f64> = (0..n).map(|p| normal_draw(pixel_key(3, 1, p))).collect();
        let mean = draws.iter().sum::<f64>() / n as f64;
        let var = draws.iter().map(|d| (d - mean).powi(2)).sum::<f64>() / n as f64;
        assert!(mean.abs() < 0.01 && (var - 1.0).abs() < 0.02, "{mean} {var}");
        assert_eq!(normal_draw(pixel_key(3, 1, 5)), draws[5]);
        assert_ne!(pixel_key(3, 1, 5), pixel_key(4, 1, 5));
        assert_ne!(pixel_key(3, 1, 5), pixel_key(3, 2, 5));
    }

    #[test]
    fn bad_fields_are_refused_with_their_range() {
        for preset in DepthPreset::all() {
            DepthSensor::preset(preset).validate().unwrap();
        }
        let err = DepthSensor { baseline: -0.05, ..DepthSensor::preset(DepthPreset::RealsenseD435) }
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("baseline = -0.05") && err.contains("(0, 10] metres"), "{err}");
        let err = DepthSensor { depth_scale: 0.0, ..DepthSensor::default() }.validate().unwrap_err().to_string();
        assert!(err.contains("depth_scale"), "{err}");
        let err = DepthSensor { subpixels: 2.5, ..DepthSensor::default() }.validate().unwrap_err().to_string();
        assert!(err.contains("whole number"), "{err}");
        let err = DepthSensor::default().set_field("basline", 1.0).unwrap_err().to_string();
        assert!(err.contains("did you mean 'baseline'"), "{err}");
        assert_eq!(SensorModel::from_index(3).unwrap(), SensorModel::StructuredLight);
        assert_eq!(DebugChannel::from_index(9).unwrap(), DebugChannel::OcclusionMask);
        assert!(DebugChannel::from_index(10).is_err());
        assert!(DepthPreset::from_name("realsense-d453").is_err());
    }

    #[test]
    fn the_field_list_round_trips() {
        let kinect = DepthSensor::preset(DepthPreset::KinectV1);
        let mut copy = DepthSensor { model: kinect.model, ..DepthSensor::default() };
        for (name, value) in kinect.fields() {
            copy.set_field(name, value).unwrap();
        }
        assert_eq!(copy, kinect);
        assert_eq!(DepthSensor::field_names().count(), kinect.fields().len());
    }

    #[test]
    fn itof_wraps_past_c_over_2f_and_two_frequencies_unwrap() {
        let one =
            DepthSensor { model: SensorModel::IToF, modulation_mhz: 100.0, range_noise: 0.0, ..DepthSensor::default() };
        let wrap = one.unambiguous_range();
        assert!((wrap - 1.498_962).abs() < 1e-5, "{wrap}");
        let r = one.itof_range(&[(wrap + 0.3, 1.0)], [0.0; 2]).unwrap();
        assert!((r - 0.3).abs() < 1e-9, "one frequency wraps: {r}");
        let two = DepthSensor { modulation2_mhz: 90.0, ..one };
        assert!((two.unambiguous_range() - 14.989_6).abs() < 1e-3);
        for truth in [0.3, 1.7, 4.2, 9.9] {
            let r = two.itof_range(&[(truth, 1.0)], [0.0; 2]).unwrap();
            assert!((r - truth).abs() < 1e-6, "{truth}: {r}");
        }
        // Two returns mix: the phasor's range lies between them, nearer the stronger.
        let mixed = two.itof_range(&[(1.0, 1.0), (1.2, 0.5)], [0.0; 2]).unwrap();
        assert!(mixed > 1.0 && mixed < 1.1, "{mixed}");
        let floor = DepthSensor { detect_floor: 0.5, ..two };
        assert!(floor.itof_range(&[(1.0, 0.4)], [0.0; 2]).is_none());
    }

    #[test]
    fn small_turns_match_libm_and_the_relative_sum_has_the_absolute_phase() {
        for i in -1000..=1000 {
            let x = i as f64 * 3e-4;
            let (sin, cos) = small_sin_cos(x);
            assert!((sin - x.sin()).abs() < 1e-15 && (cos - x.cos()).abs() < 1e-15, "{x}");
        }
        // Sub-pixel returns millimetres apart, one at an edge a metre behind.
        let returns = [(2.000, 0.3), (2.003, 0.2), (2.001, 0.25), (3.1, 0.1)];
        let k = itof_wavenumber(200.0);
        let absolute =
            returns.iter().fold((0.0, 0.0), |(re, im), &(r, a)| (re + a * (k * r).cos(), im + a * (k * r).sin()));
        let (re, im) = relative_phasor(&returns, 2.0, k);
        assert!((re.hypot(im) - absolute.0.hypot(absolute.1)).abs() < 1e-12);
        let turn = (im.atan2(re) + k * 2.0 - absolute.1.atan2(absolute.0)).rem_euclid(std::f64::consts::TAU);
        assert!(turn.min(std::f64::consts::TAU - turn) < 1e-9, "{turn}");
        for i in -1000..=1000 {
            let y = i as f64 * 2e-4;
            assert!((small_atan2(y, 1.3) - y.atan2(1.3)).abs() < 1e-15, "{y}");
        }
        assert_eq!(small_atan2(1.0, -1.0), 1f64.atan2(-1.0));
        // A whole-multiple pair unwraps by rounding, as the search over every wrap does.
        let pair = ItofPhase::of(&DepthSensor::preset(DepthPreset::AzureKinectNfov));
        let search = ItofPhase { second_divides_first: false, ..pair };
        assert!(pair.second_divides_first && pair.unwrap_steps == 8);
        for truth in [0.01, 0.3, 0.749, 0.751, 2.2, 4.9, 5.98] {
            for noise in [-0.05, 0.0, 0.05] {
                let (r1, r2) =
                    (wrap_into(truth + noise, pair.w1, pair.per_w1), wrap_into(truth - noise, pair.w2, pair.per_w2));
                assert!((pair.unwrap(r1, r2) - search.unwrap(r1, r2)).abs() < 1e-12, "{truth} {noise}");
            }
        }
        for (x, w) in [(-0.2, 1.5), (3.1, 1.5), (1.5, 1.5), (-1e-18, 1.5), (0.0, 0.7)] {
            let r = wrap_into(x, w, 1.0 / w);
            // std's rem_euclid gives w itself for -1e-18: equal modulo w.
            let apart = (r - x.rem_euclid(w)).abs();
            assert!((0.0..w).contains(&r) && apart.min(w - apart) < 1e-12, "{x} {w}: {r}");
        }
    }

    #[test]
    fn itof_noise_rises_by_root_two_when_reflectivity_halves() {
        let azure = DepthSensor::preset(DepthPreset::AzureKinectNfov);
        let spread = |amplitude: f64| {
            let n = 20_000;
            let got: Vec<f64> = (0..n)
                .map(|p| {
                    let draws = [normal_draw(pixel_key(1, 0, 2 * p)), normal_draw(pixel_key(1, 0, 2 * p + 1))];
                    azure.itof_range(&[(2.0, amplitude)], draws).unwrap()
                })
                .collect();
            let mean = got.iter().sum::<f64>() / n as f64;
            (got.iter().map(|r| (r - mean).powi(2)).sum::<f64>() / n as f64).sqrt()
        };
        let (bright, dark) = (spread(0.8 / 4.0), spread(0.4 / 4.0));
        assert!((dark / bright - 2f64.sqrt()).abs() < 0.05, "{bright} {dark}");
        // The datasheet's 17 mm at 3.86 m on a 15 % target (the fine frequency's noise).
        let sigma = azure.range_noise / (0.15 / 3.86f64.powi(2)).sqrt();
        assert!((sigma - 0.017).abs() < 0.0005, "{sigma}");
    }
}
