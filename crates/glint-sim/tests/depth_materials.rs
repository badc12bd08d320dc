//! Depth-sensor models on the NIR materials (`spec/depth-sensors.md`, "Materials" and the
//! iToF and dToF checks): a camera 1.2 m above a matte floor sees, 1 m away, a black panel
//! (an absorber: reflectivity 0.002 and F0 0.004, its return under the detect floor), a clear glass pane, a mirror tilted 45° toward a
//! wall, a mirror facing it, a hedge and a matte step. Each model's outcome on each target is
//! checked, with the debug channels that show why.

use glam::DVec3;
use glint_camera::{DebugChannel, DepthPreset, DepthSensor, SensorModel, TargetOrder};
use glint_sim::{SimOptions, Simulation};

#[path = "support/depth_camera.rs"]
mod depth_camera;
use depth_camera::depth;

const W: usize = 320;
const H: usize = 240;
const FOVY: f64 = 60.0;
const CAMERA_Z: f64 = 1.2;

const SCENE: &str = r#"<mujoco>
  <asset>
    <material name="matte" rgba="0.8 0.8 0.8 1"/>
    <material name="black" rgba="0.1 0.1 0.1 1"/>
    <material name="glass" rgba="0.6 0.8 0.9 0.3"/>
    <material name="mirror" rgba="0.9 0.9 0.9 1"/>
    <material name="leaf" rgba="0.2 0.6 0.2 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" material="matte"/>
    <geom name="black" type="box" pos="-0.35 0.25 0.1" size="0.1 0.1 0.1" material="black"/>
    <geom name="glass" type="box" pos="0 0.25 0.19" size="0.1 0.1 0.01" material="glass"/>
    <geom name="mirror45" type="box" pos="0.35 0.25 0.2" euler="0 45 0" size="0.08 0.08 0.005" material="mirror"/>
    <geom name="wall" type="box" pos="0.8 0.25 0.3" size="0.01 0.3 0.3" material="matte"/>
    <geom name="leaf" type="box" pos="-0.35 -0.25 0.1" size="0.1 0.1 0.1" material="leaf"/>
    <geom name="step" type="box" pos="0 -0.25 0.1" size="0.1025 0.1 0.1" material="matte"/>
    <geom name="flat_mirror" type="box" pos="0.35 -0.25 0.195" size="0.1 0.1 0.005" material="mirror"/>
    <camera name="down" pos="0 0 1.2" fovy="60"/>
  </worldbody>
</mujoco>"#;

const MATERIALS: &str = r#"
[materials.black]
reflectivity = 0.002
f0 = 0.004
[materials.glass]
preset = "clear-float-glass"
[materials.mirror]
preset = "mirror"
[materials.leaf]
preset = "vegetation"
"#;

fn focal() -> f64 {
    (H as f64 / 2.0) / (FOVY.to_radians() / 2.0).tan()
}

/// The pixel whose centre looks at world point (`x`, `y`) at height `z`.
fn pixel_at(x: f64, y: f64, z: f64) -> (usize, usize) {
    let depth = CAMERA_Z - z;
    let u = W as f64 / 2.0 + focal() * x / depth;
    let v = H as f64 / 2.0 - focal() * y / depth;
    (u as usize, v as usize)
}

/// The pixels of a 9 × 9 block around the one looking at (`x`, `y`, `z`).
fn block(x: f64, y: f64, z: f64) -> Vec<usize> {
    let (u, v) = pixel_at(x, y, z);
    (v - 4..=v + 4).flat_map(|row| (u - 4..=u + 4).map(move |col| row * W + col)).collect()
}

fn sim_in(name: &str, scene: &str, materials: &str) -> Simulation {
    let dir = std::env::temp_dir().join(format!("glint-depth-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("scene.xml"), scene).unwrap();
    let manifest = dir.join("scene.toml");
    std::fs::write(&manifest, format!("scene = \"scene.xml\"\n{materials}")).unwrap();
    Simulation::from_manifest(&manifest, SimOptions::default()).unwrap()
}

fn values(image: &[f32], pixels: &[usize]) -> Vec<f32> {
    pixels.iter().map(|&p| image[p]).collect()
}

fn all_near(image: &[f32], pixels: &[usize], want: f64, tol: f64) -> bool {
    pixels.iter().all(|&p| (f64::from(image[p]) - want).abs() <= tol)
}

/// The optical-axis depth at which pixel (`u`, `v`)'s ray, folded by the 45° mirror, meets
/// the wall: the mirror's virtual image.
fn folded_depth(u: usize, v: usize) -> f64 {
    let dir =
        DVec3::new((u as f64 + 0.5 - W as f64 / 2.0) / focal(), (H as f64 / 2.0 - v as f64 - 0.5) / focal(), -1.0);
    let camera = DVec3::new(0.0, 0.0, CAMERA_Z);
    let normal = DVec3::new(1.0, 0.0, 1.0).normalize();
    let surface = DVec3::new(0.35, 0.25, 0.2) + normal * 0.005;
    let t1 = (surface - camera).dot(normal) / dir.dot(normal);
    let hit = camera + dir * t1;
    let unit = dir.normalize();
    let folded = unit - 2.0 * unit.dot(normal) * normal;
    let t2 = (0.79 - hit.x) / folded.x;
    (t1 * dir.length() + t2) / dir.length()
}

#[test]
fn each_model_meets_each_material_as_the_spec_says() {
    let mut sim = sim_in("materials", SCENE, MATERIALS);
    let res = (W, H);
    let clean = depth(&mut sim, DepthSensor::default(), res);
    let black = block(-0.35, 0.25, 0.2);
    let glass = block(0.0, 0.25, 0.2);
    let leaf = block(-0.35, -0.25, 0.2);
    let flat = block(0.35, -0.25, 0.2);
    let mirror = block(0.35, 0.25, 0.2);
    assert!(all_near(&clean, &black, 1.0, 1e-4) && all_near(&clean, &glass, 1.2, 1e-4), "the clean depth");

    // Active stereo, without disparity noise: the black panel (no texture of its own) is a
    // hole, the glass shows the floor, the tilted mirror its virtual image, the facing
    // mirror folds the light back into the sensor (nothing to match), the hedge its leaves
    // or the ground between them.
    let stereo = DepthSensor { subpixel_sigma: 0.0, ..DepthSensor::preset(DepthPreset::RealsenseD435) };
    let d = depth(&mut sim, stereo, res);
    assert!(values(&d, &black).iter().all(|&z| z == 0.0), "black: {:?}", values(&d, &black));
    assert!(all_near(&d, &glass, 1.2, 2e-3), "glass: {:?}", values(&d, &glass));
    assert!(values(&d, &flat).iter().all(|&z| z == 0.0), "facing mirror: {:?}", values(&d, &flat));
    for &p in &mirror {
        let want = folded_depth(p % W, p / W);
        assert!((f64::from(d[p]) - want).abs() < 2e-3, "mirror pixel {p}: {} against {want}", d[p]);
        assert!(want > 1.3);
    }
    let on_leaves = values(&d, &leaf).iter().filter(|&&z| (f64::from(z) - 1.0).abs() < 2e-3).count();
    let on_ground = values(&d, &leaf).iter().filter(|&&z| (f64::from(z) - 1.2).abs() < 2e-3).count();
    assert_eq!(on_leaves + on_ground, leaf.len());
    let gap_share = on_ground as f64 / leaf.len() as f64;
    assert!((gap_share - 0.3).abs() < 0.12, "the hedge's gaps: {gap_share} of its pixels");

    // Structured light: dark, translucent and head-on specular surfaces are holes; the
    // tilted mirror (no glint toward the projector) still shows its virtual image.
    let kinect = DepthSensor { subpixel_sigma: 0.0, disparity_step: 0.0, ..DepthSensor::preset(DepthPreset::KinectV1) };
    let d = depth(&mut sim, kinect, res);
    for (name, pixels) in [("black", &black), ("glass", &glass), ("facing mirror", &flat)] {
        assert!(values(&d, pixels).iter().all(|&z| z == 0.0), "{name}: {:?}", values(&d, pixels));
    }
    assert!(mirror.iter().all(|&p| (f64::from(d[p]) - folded_depth(p % W, p / W)).abs() < 2e-3));

    // The debug channels say why.
    let channel = |sim: &mut Simulation, c: DebugChannel| depth(sim, DepthSensor { debug_channel: c, ..stereo }, res);
    let reflectivity = channel(&mut sim, DebugChannel::NirReflectivity);
    assert!(all_near(&reflectivity, &black, 0.002, 1e-6) && all_near(&reflectivity, &glass, 0.0, 1e-6));
    let pane = channel(&mut sim, DebugChannel::TransparentDepth);
    assert!(all_near(&pane, &glass, 1.0, 1e-4) && all_near(&pane, &black, 0.0, 0.0), "{:?}", values(&pane, &glass));
    let class = channel(&mut sim, DebugChannel::ContinuationClass);
    for (pixels, want) in [(&glass, 1.0), (&leaf, 3.0), (&mirror, 4.0), (&black, 0.0)] {
        assert!(all_near(&class, pixels, want, 0.0), "class {want}: {:?}", values(&class, pixels));
    }
    let suppression = channel(&mut sim, DebugChannel::TransmissionSuppression);
    assert!(all_near(&suppression, &glass, 1.0 - 0.71 * 0.71, 1e-4));
    let mask = channel(&mut sim, DebugChannel::OcclusionMask);
    let stereo_depth = depth(&mut sim, stereo, res);
    for (p, (&m, &z)) in mask.iter().zip(&stereo_depth).enumerate() {
        assert_eq!(m == 1.0, z == 0.0, "pixel {p}: mask {m}, depth {z}");
    }
}

#[test]
fn itof_mixes_returns_wraps_and_flies_at_edges() {
    let mut sim = sim_in("itof", SCENE, MATERIALS);
    let res = (W, H);
    let clean = depth(&mut sim, DepthSensor::default(), res);
    let itof = DepthSensor { range_noise: 0.0, ..DepthSensor::preset(DepthPreset::AzureKinectNfov) };
    let d = depth(&mut sim, itof, res);
    // A floor pixel far from everything: its clean depth.
    let floor = pixel_at(0.0, -0.6, 0.0);
    let floor = floor.1 * W + floor.0;
    assert!((d[floor] - clean[floor]).abs() < 1e-4, "{} against {}", d[floor], clean[floor]);
    // Glass 14° off the axis glints away from the sensor: the floor behind it, dimmed.
    assert!(all_near(&d, &block(0.0, 0.25, 0.2), 1.2, 1e-3));
    // The hedge: leaves and the ground in their gaps return together, and the phasor
    // lies between them, nearer the brighter leaves.
    for z in values(&d, &block(-0.35, -0.25, 0.2)) {
        assert!((1.01..1.1).contains(&f64::from(z)), "the hedge mixes leaves and ground: {z}");
    }
    // The step's edge: pixels whose sub-pixel rays see both the top (1.0) and the floor
    // (1.2) report depths between, at most a pixel or two from the edge.
    // The edge (x = 0.1025) falls between a pixel's two columns of sub-pixel rays.
    let (u, v) = pixel_at(0.1025, -0.25, 0.2);
    let row = &d[v * W..(v + 1) * W];
    let flying: Vec<usize> = (u - 6..u + 6).filter(|&c| row[c] > 1.01 && row[c] < 1.19).collect();
    assert!(!flying.is_empty() && flying.iter().all(|&c| c.abs_diff(u) <= 2), "flying pixels at {flying:?}, edge {u}");
    // One frequency wraps past c / 2f.
    let one = DepthSensor { modulation_mhz: 150.0, modulation2_mhz: 0.0, min_range: 0.0, ..itof };
    let wrapped = depth(&mut sim, one, res);
    let per_depth = {
        let (u, v) = (floor % W, floor / W);
        DVec3::new((u as f64 + 0.5 - 160.0) / focal(), (120.0 - v as f64 - 0.5) / focal(), 1.0).length()
    };
    let want = f64::from(clean[floor]) - one.unambiguous_range() / per_depth;
    assert!((f64::from(wrapped[floor]) - want).abs() < 1e-3, "{} against {want}", wrapped[floor]);
}

#[test]
fn a_dtof_zone_straddling_a_step_reports_the_near_or_the_bright_target() {
    // 8 × 8 zones, 45°: a dark box's edge halves zone column 3; the box's top (1.0 m,
    // reflectivity 0.2) is nearer and dimmer than the floor (1.2 m, 0.8).
    let f = 4.0 / 22.5f64.to_radians().tan();
    let edge = (3.5 - 4.0) / f;
    let scene = format!(
        r#"<mujoco><asset><material name="matte" rgba="0.8 0.8 0.8 1"/><material name="dark" rgba="0.2 0.2 0.2 1"/></asset>
        <worldbody>
          <geom type="plane" size="5 5 0.1" material="matte"/>
          <geom type="box" pos="{} 0 0.1" size="{} 2 0.1" material="dark"/>
          <camera name="tof" pos="0 0 1.2" fovy="45"/>
        </worldbody></mujoco>"#,
        (edge - 2.0) / 2.0,
        (edge + 2.0) / 2.0
    );
    let mut sim = sim_in("dtof", &scene, "");
    let vl53 = DepthSensor::preset(DepthPreset::Vl53l5cx);
    let strongest = depth(&mut sim, vl53, (8, 8));
    let closest = depth(&mut sim, DepthSensor { target_order: TargetOrder::Closest, ..vl53 }, (8, 8));
    for row in 0..8 {
        let at = |image: &[f32], col: usize| f64::from(image[row * 8 + col]);
        assert!((at(&strongest, 0) - 1.0).abs() < 0.02 && (at(&strongest, 7) - 1.2).abs() < 0.02);
        assert!((at(&closest, 3) - 1.0).abs() < 0.02, "closest: {}", at(&closest, 3));
        assert!((at(&strongest, 3) - 1.2).abs() < 0.02, "strongest: {}", at(&strongest, 3));
    }
    // A bigger image carries each zone's depth on every pixel of the zone.
    let big = depth(&mut sim, vl53, (64, 64));
    assert_eq!(big[0], big[7 * 64 + 7]);
    assert!(big.iter().step_by(8).any(|&z| z != big[0]));
    assert_eq!(vl53.model, SensorModel::DToFSparse);
}
