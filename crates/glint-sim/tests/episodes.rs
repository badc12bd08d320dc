//! Episodes differ and reproduce: each has its own seed (from the run seed and its index) that
//! keys the return model's noise and the `[reset]` draws of its initial state. Rates that
//! cannot be realised exactly are refused, never changed.

use std::path::{Path, PathBuf};

use glint_lidar::{BakeSettings, ScanConfig};
use glint_sim::{SimOptions, Simulation, Worlds};

fn example(name: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name].iter().collect()
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-episodes-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The showroom with `extra` appended to its manifest, in its own folder.
fn showroom(tag: &str, extra: &str) -> PathBuf {
    let dir = temp_dir(tag);
    std::fs::copy(example("showroom/showroom.xml"), dir.join("showroom.xml")).unwrap();
    let text = std::fs::read_to_string(example("showroom/showroom.toml")).unwrap();
    let manifest = dir.join("showroom.toml");
    std::fs::write(&manifest, format!("{text}\n{extra}\n")).unwrap();
    manifest
}

/// The primitives scene (timestep 2 ms) with one VLP-16 and `extra` manifest text.
fn primitives(dir: &Path, extra: &str) -> PathBuf {
    std::fs::copy(example("primitives.xml"), dir.join("primitives.xml")).unwrap();
    let manifest = dir.join("primitives.toml");
    let text = format!(
        "scene = \"primitives.xml\"\n{extra}\n[[lidar]]\nattach_site = \"lidar\"\npreset = \"velodyne-vlp16\"\n"
    );
    std::fs::write(&manifest, text).unwrap();
    manifest
}

const RESET: &str = "[reset.joints]\nbase_x = 0.4\nbase_y = 0.4\nbase_yaw = 1.0\n";

/// What an episode shows: the sensor's start pose and its first material ranges, as bits.
fn episode(sim: &mut Simulation, reset_seed: Option<u64>) -> (Vec<u64>, Vec<u32>) {
    sim.reset(Worlds::All, reset_seed).unwrap();
    let (pos, rot) = sim.lidar(0).unwrap().frame(0).unwrap();
    let pose = pos.to_array().into_iter().chain(rot.to_cols_array()).map(f64::to_bits).collect();
    for _ in 0..3 {
        sim.step(None).unwrap();
    }
    let mut ranges = vec![0.0; sim.lidar(0).unwrap().beam_count()];
    sim.lidar(0).unwrap().scan_into(0, &mut ranges, true).unwrap();
    (pose, ranges.into_iter().map(f32::to_bits).collect())
}

fn built(manifest: &Path, seed: u64) -> Simulation {
    let options = SimOptions { seed: Some(seed), episode_seconds: Some(1.0), ..SimOptions::default() };
    let mut sim = Simulation::from_manifest(manifest, options).unwrap();
    sim.set_lidar_live(true);
    sim.bake(BakeSettings { cell_size: 0.1, ..sim.bake_settings() }).unwrap();
    sim
}

#[test]
fn episodes_differ_and_the_run_seed_reproduces_them() {
    let manifest = showroom("seeds", RESET);
    let mut sim = built(&manifest, 7);
    let first = episode(&mut sim, None);
    let second = episode(&mut sim, None);
    assert_ne!(first.0, second.0, "the [reset] draws moved the robot's start");
    assert_ne!(first.1, second.1, "the noise differs between episodes");
    assert_ne!(sim.episode_seed(0).unwrap(), glint_lidar::episode_seed(7, 0));
    assert_eq!(sim.episode_seed(0).unwrap(), glint_lidar::episode_seed(7, 1));

    let mut again = built(&manifest, 7);
    assert_eq!(episode(&mut again, None), first, "the same run seed gives episode 0 bit for bit");
    assert_eq!(episode(&mut again, None), second, "and episode 1");
    assert_eq!(episode(&mut again, Some(7)), first, "a reset with the run seed numbers from 0 again");
    let other = episode(&mut built(&manifest, 8), None);
    assert_ne!(other.0, first.0, "another run seed, another start");

    // Without [reset] the start is the model's, while the noise still differs.
    let plain = showroom("plain", "");
    let mut sim = built(&plain, 7);
    let (a, b) = (episode(&mut sim, None), episode(&mut sim, None));
    assert_eq!(a.0, b.0);
    assert_ne!(a.1, b.1);
    for m in [manifest, plain] {
        std::fs::remove_dir_all(m.parent().unwrap()).ok();
    }
}

#[test]
fn free_bodies_start_within_their_ranges() {
    let dir = temp_dir("free");
    let extra = "[reset.bodies.free_box_1]\nx = [-0.5, 0.5]\ny = [0.25, 0.25]\nyaw = [-180, 180]\n";
    let manifest = primitives(&dir, extra);
    let plain = Simulation::from_manifest(primitives(&temp_dir("free-plain"), ""), SimOptions::default()).unwrap();
    let mut sim = Simulation::from_manifest(&manifest, SimOptions::default()).unwrap();
    let body = sim.scene().body_name.iter().position(|n| n == "free_box_1").unwrap();
    let start = |s: &Simulation| s.poses().xpos[body];
    let base = start(&plain);
    let mut xs = Vec::new();
    for _ in 0..8 {
        sim.step(None).unwrap();
        sim.reset(Worlds::All, None).unwrap();
        let p = start(&sim);
        assert!((p.x - base.x).abs() <= 0.5 + 1e-9 && (p.y - base.y - 0.25).abs() < 1e-9, "{p} from {base}");
        assert!((p.z - base.z).abs() < 1e-9);
        xs.push(p.x);
    }
    xs.dedup();
    assert!(xs.len() > 4, "the x offsets are drawn: {xs:?}");
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn reset_tables_that_do_not_fit_the_model_are_refused() {
    let dir = temp_dir("bad-reset");
    for (extra, want) in [
        (
            "[reset.joints]\nfree_box_1_jont = 0.1\n",
            "'free_box_1_jont', which the model does not have; did you mean 'free_box_1_joint'?",
        ),
        ("[reset.joints]\nfree_box_1_joint = 0.1\n", "only hinge and slide joints take noise"),
        ("[reset.bodies.sphere_03_body]\nx = [0, 1]\n", "has no free joint"),
        ("[reset.bodies.nobody]\nx = [0, 1]\n", "names a body the model does not have"),
        (
            "[reset.bodies.free_box_1]\nx = [1, -1]\n",
            "x = [1, -1]: give a range [lo, hi] of finite numbers with lo <= hi",
        ),
        ("[reset.joints]\nfree_box_1_joint = -1.0\n", "free_box_1_joint = -1: give the half-width of the noise"),
        ("[reset]\njoint = 1\n", "unknown key `joint` in [reset]; did you mean `joints`?"),
    ] {
        let manifest = primitives(&dir, extra);
        let err = Simulation::from_manifest(&manifest, SimOptions::default()).unwrap_err().to_string();
        assert!(err.contains(want), "{extra}: {err}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn rates_are_exact_or_refused() {
    let dir = temp_dir("rates");
    let refused = |extra: &str, seconds: f64| {
        let manifest = primitives(&dir, extra);
        let options = SimOptions { episode_seconds: Some(seconds), ..SimOptions::default() };
        Simulation::from_manifest(&manifest, options).unwrap_err().to_string()
    };
    let err = refused("[recorder]\nlidar_runner_hz = 30\n", 1.0);
    assert!(
        err.contains("lidar_runner_hz = 30 is 16.667 physics steps")
            && err.contains("31.25 (16 steps) or 29.4118 (17 steps)"),
        "{err}"
    );
    let err = refused("[recorder]\nlidar_runner_hz = 10000\n", 1.0);
    assert!(err.contains("lidar_runner_hz = 10000") && err.contains("500 (1 step)"), "{err}");
    let err = refused("[recorder]\nlidar_runner_hz = 0.001\n", 10.0);
    assert!(
        err.contains("an episode of 10 s is 0.010 lidar ticks of 1000 s") && err.contains("1000 s (1 ticks)"),
        "{err}"
    );
    let err = refused("", 1.003);
    assert!(
        err.contains("an episode of 1.003 s is 100.300 lidar ticks")
            && err.contains("1 s (100 ticks) or 1.01 s (101 ticks)"),
        "{err}"
    );
    let manifest = primitives(&dir, "[recorder]\nlidar_runner_hz = 50\n");
    let text = std::fs::read_to_string(&manifest).unwrap() + "rotation_hz = 60\n";
    std::fs::write(&manifest, text).unwrap();
    let err = Simulation::from_manifest(&manifest, SimOptions::default()).unwrap_err().to_string();
    assert!(err.contains("lidar sensor 0: rotation_hz = 60 is above the lidar runner's 50 ticks per second"), "{err}");
    assert!(err.contains("give rotation_hz at most 50"), "{err}");

    // A live change (the seed's SetLidarConfig) is accepted as the seed describes: one
    // revolution a tick, with a warning giving the effective rate.
    let mut sim = Simulation::from_manifest(primitives(&dir, ""), SimOptions::default()).unwrap();
    sim.take_warnings();
    let config = ScanConfig { rotation_hz: 200.0, ..sim.lidar(0).unwrap().config() };
    sim.lidar_mut(0).unwrap().set_config(config).unwrap();
    let warned = sim.take_warnings().iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
    assert!(warned.contains("rotation_hz = 200 is above the runner's 100") && warned.contains("effective 100 Hz"));
    assert_eq!(sim.lidar(0).unwrap().config().rotation_hz, 200.0);
    sim.lidar_mut(0).unwrap().set_config(ScanConfig { rotation_hz: 100.0, ..config }).unwrap();
    assert!(sim.take_warnings().is_empty(), "a rate the runner keeps warns of nothing");
    assert_eq!(sim.episode_ticks(), None);
    let options = SimOptions { episode_seconds: Some(2.5), ..SimOptions::default() };
    assert_eq!(Simulation::from_manifest(primitives(&dir, ""), options).unwrap().episode_ticks(), Some(250));
    std::fs::remove_dir_all(dir).ok();
}
