//! The lidar runner's rate on scenes whose timestep cannot realise the default 100 ticks per
//! second (dm_control's suite steps at 0.02 s): without lidars no rule applies, with lidars the
//! default moves to the nearest realisable rate with a warning, and an explicit rate is kept
//! exactly or refused, from every route that builds a simulation.

use glint_lidar::LidarBinding;
use glint_sim::{SimOptions, Simulation, Warning};

/// A pendulum as dm_control's suite writes it (timestep 0.02, RK4), with a site a lidar may
/// sit on and a camera.
const PENDULUM: &str = r#"
<mujoco model="pendulum">
  <option timestep="0.02" integrator="RK4"/>
  <worldbody>
    <light name="light" pos="0 0 6"/>
    <geom name="floor" size="2 2 .2" type="plane"/>
    <camera name="fixed" pos="0 -1.5 2" xyaxes="1 0 0 0 1 1"/>
    <body name="pole" pos="0 0 .6">
      <joint name="hinge" type="hinge" axis="0 1 0" damping="0.1"/>
      <geom name="base" type="cylinder" fromto="0 -.03 0 0 .03 0" size="0.021" mass="0"/>
      <geom name="pole" type="capsule" fromto="0 0 0 0 0 .5" size="0.02" mass="0"/>
      <geom name="mass" type="sphere" pos="0 0 .5" size="0.05" mass="1"/>
      <site name="lidar" pos="0 0 .6"/>
    </body>
  </worldbody>
  <actuator>
    <motor name="torque" joint="hinge" gear="1" ctrlrange="-1 1" ctrllimited="true"/>
  </actuator>
</mujoco>
"#;

fn lidar() -> LidarBinding {
    LidarBinding { attach_site: Some("lidar".into()), ..LidarBinding::default() }
}

#[test]
fn a_scene_without_lidars_loads_and_steps_at_any_timestep() {
    let mut sim = Simulation::from_xml(PENDULUM, Vec::new(), SimOptions::default()).unwrap();
    // One physics step a tick (the nearest to 100 Hz that 0.02 s steps realise), silently.
    assert_eq!((sim.runner_dt(), sim.runner_hz()), (0.02, 50.0));
    assert!(sim.take_warnings().is_empty());
    sim.step(None).unwrap();
    sim.step(None).unwrap();
    assert!((sim.time()[0] - 0.04).abs() < 1e-12, "{:?}", sim.time());
    // The rate asked for is kept when the timestep realises it.
    let options = SimOptions { runner_hz: Some(25.0), ..SimOptions::default() };
    let sim = Simulation::from_xml(PENDULUM, Vec::new(), options).unwrap();
    assert_eq!(sim.runner_dt(), 2.0 * 0.02);
}

#[test]
fn a_lidar_moves_the_default_rate_with_a_warning_naming_both_rates() {
    let mut sim = Simulation::from_xml(PENDULUM, vec![lidar()], SimOptions::default()).unwrap();
    assert_eq!((sim.runner_dt(), sim.runner_hz()), (0.02, 50.0));
    let warnings = sim.take_warnings();
    let [Warning::RunnerRate { default_hz, hz, steps, timestep }] = warnings[..] else {
        panic!("one runner warning expected: {warnings:?}")
    };
    assert_eq!((default_hz, hz, steps, timestep), (100.0, 50.0, 1, 0.02));
    let text = warnings[0].to_string();
    assert!(text.contains("default 100 ticks per second") && text.contains("it ticks at 50 per second"), "{text}");
    // The lidar scans at the rate in effect.
    sim.set_lidar_live(true);
    sim.step(None).unwrap();
    assert!((sim.time()[0] - 0.02).abs() < 1e-12);
}

#[test]
fn an_explicit_rate_the_timestep_cannot_realise_is_refused() {
    for bindings in [Vec::new(), vec![lidar()]] {
        let options = SimOptions { runner_hz: Some(100.0), ..SimOptions::default() };
        let err = Simulation::from_xml(PENDULUM, bindings, options).unwrap_err().to_string();
        assert!(err.contains("lidar_runner_hz = 100 is 0.500 physics steps of 0.02 s"), "{err}");
    }
    // From a manifest: [recorder] lidar_runner_hz is explicit too, and the argument wins over it.
    let dir = std::env::temp_dir().join(format!("glint-runner-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("pendulum.xml"), PENDULUM).unwrap();
    let manifest = dir.join("scene.toml");
    std::fs::write(
        &manifest,
        "scene = \"pendulum.xml\"\n[recorder]\nlidar_runner_hz = 100\n[[lidar]]\nattach_site = \"lidar\"\n",
    )
    .unwrap();
    let err = Simulation::from_manifest(&manifest, SimOptions::default()).unwrap_err().to_string();
    assert!(err.contains("lidar_runner_hz = 100 is 0.500 physics steps"), "{err}");
    let options = SimOptions { runner_hz: Some(10.0), ..SimOptions::default() };
    let sim = Simulation::from_manifest(&manifest, options).unwrap();
    assert_eq!(sim.runner_dt(), 5.0 * 0.02);
    // Without the key the default moves, with the warning.
    std::fs::write(&manifest, "scene = \"pendulum.xml\"\n[[lidar]]\nattach_site = \"lidar\"\n").unwrap();
    let mut sim = Simulation::from_manifest(&manifest, SimOptions::default()).unwrap();
    assert!(sim.take_warnings().iter().any(|w| matches!(w, Warning::RunnerRate { .. })));
    std::fs::remove_dir_all(&dir).ok();
}

/// dm_control's fish steps at 0.004 s: the runner ticks every 3 steps (83.3 per second), of
/// which the cameras' default 10 frames per second is no whole fraction.
#[test]
fn cameras_move_their_default_rate_where_the_runner_cannot_keep_it() {
    let fish = PENDULUM.replace(r#"timestep="0.02""#, r#"timestep="0.004""#);
    let mut sim = Simulation::from_xml(&fish, Vec::new(), SimOptions::default()).unwrap();
    assert!((sim.runner_hz() - 250.0 / 3.0).abs() < 1e-9, "{}", sim.runner_hz());
    let camera = sim.camera_index("fixed").unwrap();
    let options = glint_sim::CameraOptions { resolution: Some((32, 24)), ..glint_sim::CameraOptions::new(camera) };
    sim.set_cameras(vec![options]).unwrap();
    let warnings = sim.take_warnings();
    let rate = warnings.iter().find_map(|w| match w {
        Warning::CameraRate { default_hz, hz, .. } => Some((*default_hz, *hz)),
        _ => None,
    });
    let (default_hz, hz) = rate.unwrap_or_else(|| panic!("a camera rate warning: {warnings:?}"));
    assert_eq!(default_hz, 10.0);
    assert!((hz - 250.0 / 24.0).abs() < 1e-9, "8 ticks a frame: {hz}");
    assert!(sim.render().is_ok(), "the cameras render");
    // A rate asked for is kept exactly or refused, as before.
    let err = sim.set_camera_rate(camera, 10.0).unwrap_err().to_string();
    assert!(err.contains("not a whole fraction"), "{err}");
}
