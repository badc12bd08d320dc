//! Depth-sensor models on a rendered scene (`spec/depth-sensors.md`): a camera 1 m above a
//! floor, a box 0.5 m under it. Active stereo's noise follows the datasheet law on the floor,
//! its left band is f·B/z pixels wide, the box's occlusion shadow lies on its left and is
//! f·B·(1/z_near − 1/z_far) pixels wide; the noise is the same on one thread and two, and
//! changes from frame to frame; `sensor_model = none` is the clean depth.

use glint_camera::{CameraOptions, DepthPreset, DepthSensor, SensorModel};
use glint_sim::{SimOptions, Simulation};

#[path = "support/depth_camera.rs"]
mod depth_camera;

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
    depth_camera::depth(sim, sensor, (W, H))
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

/// The Redwood depth-noise kernel (Choi, Zhou, Koltun 2015, "Robust Reconstruction of Indoor
/// Scenes", as Open3D's `DepthNoiseSimulator` and Habitat's `RedwoodDepthNoiseModel` run it),
/// reimplemented from its published code: disparity `35.130 / z` plus N(0, 0.027778),
/// rounded to 1/8, back to depth `35.130 · 8 / round(…·8)`. Its per-unit distortion grid and
/// its 0.25-pixel lateral shifts are left out: this compares the axial noise law.
fn redwood(z: f64, draw: f64) -> f64 {
    let denom = ((35.130 / z + draw * 0.027778) * 8.0).round();
    if denom <= 1e-5 { 0.0 } else { 35.130 * 8.0 / denom }
}

#[test]
fn structured_light_matches_the_redwood_kernel_in_distribution() {
    // A matte wall 1, 2 and 3 m in front of the camera, turned 15° so that its depth sweeps
    // many 1/8-pixel disparity steps (both models quantise: on a wall square to the axis the
    // error would depend on where its one depth falls between two steps), seen at Kinect
    // v1's own resolution and field of view (640 × 480, 43°): both laws are in its pixels.
    for wall in [1.0, 2.0, 3.0] {
        let xml = format!(
            r#"<mujoco><worldbody>
              <geom type="box" pos="0 0 {}" euler="15 0 0" size="20 20 0.01"/>
              <camera name="k" pos="0 0 0" fovy="43"/>
            </worldbody></mujoco>"#,
            -wall - 0.01
        );
        let mut sim = Simulation::from_xml(&xml, Vec::new(), SimOptions::default()).unwrap();
        let kinect = DepthSensor::preset(DepthPreset::KinectV1);
        let options = |sensor| CameraOptions {
            resolution: Some(DepthPreset::KinectV1.resolution()),
            render_rgb: false,
            render_seg: false,
            depth_sensor: sensor,
            ..CameraOptions::new(0)
        };
        sim.set_cameras(vec![options(DepthSensor::default())]).unwrap();
        let clean = sim.render().unwrap().depth;
        sim.set_cameras(vec![options(kinect)]).unwrap();
        let measured = sim.render().unwrap().depth;
        // Errors against the clean depth: glint's model, and the Redwood kernel's on the same
        // clean depth with its own draws.
        let ours: Vec<f64> = clean.iter().zip(&measured).map(|(&c, &m)| f64::from(m) - f64::from(c)).collect();
        let theirs: Vec<f64> = clean
            .iter()
            .enumerate()
            .map(|(p, &c)| redwood(f64::from(c), glint_camera::normal_draw(0xbeef ^ p as u64)) - f64::from(c))
            .collect();
        // Holes outside the projector's left band (at most f·B/0.85 m ≈ 54 columns here),
        // which an image-space kernel like Redwood's does not model.
        let (width, band) = (DepthPreset::KinectV1.resolution().0, 60);
        let holes = |e: &[f64], depth: &dyn Fn(usize) -> f64| {
            let seen: Vec<usize> = (0..e.len()).filter(|&p| p % width >= band).collect();
            seen.iter().filter(|&&p| depth(p) == 0.0).count() as f64 / seen.len() as f64
        };
        let ours_holes = holes(&ours, &|p| f64::from(measured[p]));
        let theirs_holes = holes(&theirs, &|p| theirs[p] + f64::from(clean[p]));
        let rms = |e: &[f64], keep: &dyn Fn(usize) -> bool| {
            let kept: Vec<f64> = (0..e.len()).filter(|&p| keep(p)).map(|p| e[p]).collect();
            (kept.iter().map(|x| x * x).sum::<f64>() / kept.len() as f64).sqrt()
        };
        let ours_rms = rms(&ours, &|p| measured[p] > 0.0);
        let theirs_rms = rms(&theirs, &|_| true);
        assert!(
            (ours_rms / theirs_rms - 1.0).abs() < 0.15,
            "{wall} m: glint's structured light RMS {ours_rms} against the Redwood kernel's {theirs_rms}"
        );
        assert!((ours_holes - theirs_holes).abs() < 0.05, "{wall} m: holes {ours_holes} against {theirs_holes}");
    }
}

#[test]
fn a_field_of_view_in_the_options_replaces_the_mjcf_cameras() {
    let mut sim = sim();
    let options = CameraOptions { resolution: Some((W, H)), fovy: Some(43.0), ..CameraOptions::new(0) };
    sim.set_cameras(vec![options]).unwrap();
    let layout = sim.camera_layout().unwrap();
    let glint_camera::Projection::Perspective { f, .. } = layout.cameras[0].0.projection else { panic!() };
    let want = (H as f64 / 2.0) / 21.5f64.to_radians().tan();
    assert!((f[1] - want).abs() < 1e-9, "{f:?} against {want}");
    // It renders: the floor fills the narrower view.
    let depth = sim.render().unwrap().depth;
    assert!(depth.iter().all(|&z| z > 0.0));
}
