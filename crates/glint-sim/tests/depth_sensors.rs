//! Depth-sensor models on a rendered scene (`spec/depth-sensors.md`): a camera 1 m above a
//! floor, a box 0.5 m under it. Active stereo's noise follows the datasheet law on the floor,
//! its left band is f·B/z pixels wide, the box's occlusion shadow lies on its left and is
//! f·B·(1/z_near − 1/z_far) pixels wide; the noise is the same on one thread and two, and
//! changes from frame to frame; `sensor_model = none` is the clean depth.

use glint_camera::{CameraOptions, DepthPreset, DepthSensor, SensorModel};
use glint_sim::{SimOptions, Simulation};

const W: usize = 320;
const H: usize = 240;
/// Vertical field of view, degrees: fy = fx = 120 / tan(30°) pixels.
const FOVY: f64 = 60.0;

fn scene() -> String {
    format!(
        r#"<mujoco><worldbody>
          <geom name="floor" type="plane" size="5 5 0.1"/>
          <geom name="box" type="box" pos="0 0 0.45" size="0.1 0.1 0.05"/>
          <camera name="down" pos="0 0 1" fovy="{FOVY}"/>
        </worldbody></mujoco>"#
    )
}

fn focal() -> f64 {
    (H as f64 / 2.0) / (FOVY.to_radians() / 2.0).tan()
}

fn depth(sim: &mut Simulation, sensor: DepthSensor) -> Vec<f32> {
    let options = CameraOptions {
        resolution: Some((W, H)),
        render_rgb: false,
        render_seg: false,
        depth_sensor: sensor,
        ..CameraOptions::new(0)
    };
    sim.set_cameras(vec![options]).unwrap();
    sim.render().unwrap().depth
}

fn sim() -> Simulation {
    Simulation::from_xml(&scene(), Vec::new(), SimOptions::default()).unwrap()
}

#[test]
fn active_stereo_follows_the_law_and_the_geometry() {
    let mut sim = sim();
    let clean = depth(&mut sim, DepthSensor::default());
    let d435 = DepthSensor::preset(DepthPreset::RealsenseD435);
    let measured = depth(&mut sim, d435);
    let (f, fb) = (focal(), focal() * d435.baseline);
    let row = |y: usize| &measured[y * W..(y + 1) * W];

    // Noise on the floor (1 m, away from the box and the band): the datasheet's RMS.
    let floor: Vec<f64> = (0..H)
        .flat_map(|y| (60..W).map(move |x| (y, x)))
        .filter(|&(y, x)| (clean[y * W + x] - 1.0).abs() < 1e-6 && !(100..=220).contains(&x))
        .map(|(y, x)| f64::from(measured[y * W + x]))
        .collect();
    assert!(floor.iter().all(|&z| z > 0.0), "the floor is valid where both imagers see it");
    let rms = (floor.iter().map(|z| (z - 1.0).powi(2)).sum::<f64>() / floor.len() as f64).sqrt();
    let law = d435.subpixel_sigma / fb;
    assert!((rms / law - 1.0).abs() < 0.15, "RMS {rms} against the law's {law} (f = {f} px)");

    // The left band: the right imager sees nothing left of f·B/z pixels.
    let first_valid = row(H / 2).iter().position(|&z| z > 0.0).unwrap() as f64;
    assert!((first_valid - fb).abs() <= 1.0, "band {first_valid} px, f·B/z = {fb}");

    // The box's shadow: on its left, f·B·(1/0.6 − 1/1) pixels wide (its top at 0.6 m).
    let centre = row(H / 2);
    let box_left = (W as f64 / 2.0 - f * 0.1 / 0.5).round() as usize;
    let holes = (fb as usize + 2..box_left + 2).filter(|&x| centre[x] == 0.0).count() as f64;
    let want = fb * (1.0 / 0.5 - 1.0);
    assert!((holes - want).abs() <= 1.0, "{holes} shadow pixels, want {want}");
    assert!(centre[box_left + 4..W / 2].iter().all(|&z| z > 0.0), "the box's top is seen");
    let right_of_box = (W as f64 / 2.0 + f * 0.1 / 0.5).round() as usize + 2;
    assert!(centre[right_of_box..right_of_box + 20].iter().all(|&z| z > 0.0), "no shadow on the right");

    // The clean depth is what `none` gives, bit for bit.
    let none = depth(&mut sim, DepthSensor { model: SensorModel::None, ..d435 });
    assert_eq!(none, clean);
}

#[test]
fn noise_is_keyed_by_frame_not_by_threads() {
    for preset in [DepthPreset::KinectV1, DepthPreset::AzureKinectNfov, DepthPreset::Vl53l5cx] {
        let sensor = DepthSensor::preset(preset);
        let in_pool = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| depth(&mut sim(), sensor))
        };
        let (one, two) = (in_pool(1), in_pool(2));
        assert_eq!(one, two, "{preset:?}: the same frame on one thread and on two");
        let mut later = sim();
        later.step(None).unwrap();
        let next = depth(&mut later, sensor);
        let differ = one.iter().zip(&next).filter(|(a, b)| a != b).count();
        assert!(differ > 1000, "{preset:?}: the next frame draws new noise ({differ} pixels differ)");
    }
}

#[test]
fn bad_depth_sensors_are_refused_with_the_fix() {
    let mut sim = sim();
    let options = |sensor: DepthSensor, depth: bool| CameraOptions {
        resolution: Some((W, H)),
        render_depth: depth,
        depth_sensor: sensor,
        ..CameraOptions::new(0)
    };
    let err = sim.set_cameras(vec![options(DepthSensor::preset(DepthPreset::RealsenseD435), false)]).unwrap_err();
    assert!(err.to_string().contains("no depth output"), "{err}");
    let zones = DepthSensor { zones: 0.0, ..DepthSensor::preset(DepthPreset::Vl53l5cx) };
    let err = sim.set_cameras(vec![options(zones, true)]).unwrap_err();
    assert!(err.to_string().contains("zones = 0"), "{err}");
    let stereo = DepthSensor { baseline: 0.0, ..DepthSensor::preset(DepthPreset::RealsenseD435) };
    let err = sim.set_cameras(vec![options(stereo, true)]).unwrap_err();
    assert!(err.to_string().contains("baseline = 0"), "{err}");
}
