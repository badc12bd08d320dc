//! Depth-sensor models on a camera's clean depth (`spec/depth-sensors.md`): what a
//! triangulating depth camera reports where the clean z-buffer has `z`. Built so far: active
//! stereo (RealSense D4xx) and structured light (Kinect v1), each as a validity mask from the
//! device's geometry (the second viewpoint must see the point: MinZ, the left band, occlusion)
//! and noise on the disparity, the device's own variable. Not yet built: iToF, sparse dToF,
//! the material failures read from the NIR channels, and the debug channels; asking for them
//! is refused with a message that says so.

use glint_core::{Spelled, spelled};

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
    /// Indirect time of flight (Azure Kinect): not built yet.
    IToF,
    /// Structured light (Kinect v1): the camera and a projector `baseline` to its right.
    StructuredLight,
    /// Sparse multizone direct time of flight (VL53L5CX): not built yet.
    DToFSparse,
}

spelled!(SensorModel, "depth sensor model", [
    None => "none",
    ActiveStereo => "active-stereo",
    IToF => "itof",
    StructuredLight => "structured-light",
    DToFSparse => "dtof-sparse",
]);

/// A named device: the fields of [`DepthSensor`] it implies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepthPreset {
    /// Intel RealSense D435: 848 × 480, baseline 50 mm.
    RealsenseD435,
    /// Intel RealSense D415: 1280 × 720, baseline 55 mm.
    RealsenseD415,
    /// Intel RealSense D455: 1280 × 720, baseline 95 mm.
    RealsenseD455,
    /// Microsoft Kinect v1 (PrimeSense): 640 × 480, baseline 75 mm.
    KinectV1,
    /// Azure Kinect, narrow field of view, unbinned (iToF: not built yet).
    AzureKinectNfov,
    /// ST VL53L5CX (sparse dToF: not built yet).
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
    /// Metres per code of the 16-bit depth (`round(z / depth_scale)`, 0 invalid).
    pub depth_scale: f64,
    /// Nearest reported optical-axis depth, metres (nearer: invalid).
    pub min_range: f64,
    /// Farthest reported optical-axis depth, metres (farther: invalid).
    pub max_range: f64,
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
}

impl Default for DepthSensor {
    fn default() -> Self {
        DepthSensor {
            model: SensorModel::None,
            depth_scale: 0.001,
            min_range: 0.0,
            max_range: 1.0e4,
            baseline: 0.05,
            subpixel_sigma: 0.08,
            max_disparity: 126.0,
            disparity_step: 0.0,
        }
    }
}

/// Kinect v1's disparity noise, pixels: with its 1/8-pixel steps, the RMS depth error of
/// its published law σ_z = 1.425·10⁻³·z² m at its focal length (about 580 px, baseline
/// 75 mm: σ_d ≈ 0.062 px in all, of which rounding to 1/8 px gives 0.036 px).
const KINECT_V1_SIGMA_PX: f64 = 0.050;

impl DepthSensor {
    /// The device's fields; its image size is [`DepthPreset::resolution`].
    pub fn preset(preset: DepthPreset) -> DepthSensor {
        let stereo = |baseline, min_range, max_range| DepthSensor {
            model: SensorModel::ActiveStereo,
            baseline,
            subpixel_sigma: 0.08,
            max_disparity: 126.0,
            min_range,
            max_range,
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
                ..DepthSensor::default()
            },
            DepthPreset::AzureKinectNfov => {
                DepthSensor { model: SensorModel::IToF, min_range: 0.5, max_range: 3.86, ..DepthSensor::default() }
            }
            DepthPreset::Vl53l5cx => {
                DepthSensor { model: SensorModel::DToFSparse, min_range: 0.0, max_range: 4.0, ..DepthSensor::default() }
            }
        }
    }

    /// Checks every field's range and that the model is one glint builds.
    pub fn validate(&self) -> Result<(), CameraError> {
        let bad = |field: &'static str, value: f64, range: &'static str| {
            Err(CameraError::DepthSensor(format!("{field} = {value} is out of range; use {range}")))
        };
        if matches!(self.model, SensorModel::IToF | SensorModel::DToFSparse) {
            return Err(CameraError::DepthSensor(format!(
                "sensor_model '{}' is not built yet: glint models active-stereo and structured-light depth so far",
                self.model.name()
            )));
        }
        if !(self.depth_scale.is_finite() && self.depth_scale > 0.0 && self.depth_scale <= 1.0) {
            return bad("depth_scale", self.depth_scale, "(0, 1] metres per code");
        }
        if !(self.min_range.is_finite() && self.min_range >= 0.0) {
            return bad("min_range", self.min_range, "0 or more metres");
        }
        if !(self.max_range.is_finite() && self.max_range > self.min_range) {
            return bad("max_range", self.max_range, "finite metres above min_range");
        }
        if !(self.baseline.is_finite() && self.baseline > 0.0 && self.baseline <= 10.0) {
            return bad("baseline", self.baseline, "(0, 10] metres");
        }
        if !(self.subpixel_sigma.is_finite() && (0.0..=10.0).contains(&self.subpixel_sigma)) {
            return bad("subpixel_sigma", self.subpixel_sigma, "0 to 10 pixels");
        }
        if !(self.max_disparity.is_finite() && self.max_disparity > 0.0) {
            return bad("max_disparity", self.max_disparity, "more than 0 pixels");
        }
        if !(self.disparity_step.is_finite() && (0.0..=1.0).contains(&self.disparity_step)) {
            return bad("disparity_step", self.disparity_step, "0 to 1 pixel");
        }
        Ok(())
    }

    /// Whether depth is measured rather than clean.
    pub fn is_active(&self) -> bool {
        self.model != SensorModel::None
    }

    /// The depth the device reports for a pixel whose clean depth is `z` (0: nothing hit),
    /// at column `col`, with the camera's focal length `fx` in pixels, where `seen` says
    /// whether the second viewpoint sees the point and `noise` is a standard normal draw for
    /// this pixel and frame. 0 is invalid.
    pub fn measure(&self, z: f64, col: usize, fx: f64, seen: bool, noise: f64) -> f32 {
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
        let measured = fb / d;
        if measured < self.min_range || measured > self.max_range { 0.0 } else { measured as f32 }
    }
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
}

/// A standard normal draw keyed by `key` (the frame's key mixed with the camera and the
/// pixel): the same key gives the same draw on any thread.
pub fn normal_draw(key: u64) -> f64 {
    let a = splitmix64(key);
    let b = splitmix64(a);
    // Uniforms in (0, 1]: the logarithm stays finite.
    let u1 = ((a >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
    let u2 = (b >> 11) as f64 / (1u64 << 53) as f64;
    (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos()
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

    /// Plane-fit RMS (here: the spread of one depth, a fronto-parallel wall) of `n` pixels.
    fn rms_at(sensor: &DepthSensor, z: f64, fx: f64) -> f64 {
        let n = 40_000;
        let got: Vec<f64> =
            (0..n).map(|p| f64::from(sensor.measure(z, 400, fx, true, normal_draw(pixel_key(7, 0, p))))).collect();
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
        let d = kinect.measure(2.0, 400, fx, true, 0.3);
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
        assert!(d435.measure(min_z * 0.99, 800, fx, true, 0.0) == 0.0);
        assert!(d435.measure(min_z * 1.01, 800, fx, true, 0.0) > 0.0);
        // The left band is f·B/z pixels wide.
        let z = 1.0;
        let band = (fb / z).floor() as usize;
        assert_eq!(d435.measure(z, band - 1, fx, true, 0.0), 0.0);
        assert!(d435.measure(z, band + 1, fx, true, 0.0) > 0.0);
        // Unseen by the second viewpoint, nothing hit, or out of range: invalid.
        assert_eq!(d435.measure(z, 400, fx, false, 0.0), 0.0);
        assert_eq!(d435.measure(0.0, 400, fx, true, 0.0), 0.0);
        assert_eq!(d435.measure(11.0, 400, fx, true, 0.0), 0.0);
        // Without noise the clean depth comes back.
        assert!((d435.measure(z, 400, fx, true, 0.0) - 1.0).abs() < 1e-6);
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
    fn unbuilt_models_and_bad_fields_are_refused() {
        let err = DepthSensor::preset(DepthPreset::AzureKinectNfov).validate().unwrap_err().to_string();
        assert!(err.contains("itof") && err.contains("not built yet"), "{err}");
        let err = DepthSensor { baseline: -0.05, ..DepthSensor::preset(DepthPreset::RealsenseD435) }
            .validate()
            .unwrap_err()
            .to_string();
        assert!(err.contains("baseline = -0.05"), "{err}");
        let err = DepthSensor { depth_scale: 0.0, ..DepthSensor::default() }.validate().unwrap_err().to_string();
        assert!(err.contains("depth_scale"), "{err}");
        assert_eq!(SensorModel::from_index(3).unwrap(), SensorModel::StructuredLight);
        assert!(DepthPreset::from_name("realsense-d453").is_err());
    }
}
