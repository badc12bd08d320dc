//! The agent-facing calls of a `Simulation`: the `[[observation]]` vector (joints and the
//! seed's `lidar_ranges`), actions clamped to `ctrlrange`, and the `[task]` reward.

use std::path::{Path, PathBuf};

use glint_sim::{SimError, SimOptions, Simulation, Warning, WorldStatus};

fn example(name: &str) -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name].iter().collect();
    p.to_string_lossy().replace('\\', "/")
}

/// A manifest over the showroom with a small lidar and `extra`, in its own folder.
fn manifest(tag: &str, extra: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-sim-agent-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.toml");
    let text = format!(
        "scene = \"{}\"\n[[lidar]]\nattach_site = \"lidar\"\nchannels = 4\nazimuth_bins = 90\nself_ignore = \"whole-robot\"\n{extra}",
        example("showroom/showroom.xml")
    );
    std::fs::write(&path, text).unwrap();
    path
}

fn sim(path: &Path, nworld: usize) -> Simulation {
    Simulation::from_manifest(path, SimOptions { nworld, ..SimOptions::default() }).unwrap()
}

const JOINTS: &str = "[[observation]]\nname = \"joint_positions\"\n[[observation]]\nname = \"joint_velocities\"\n";

#[test]
fn the_observation_holds_joints_then_the_live_scan_padded_with_minus_one() {
    let m = manifest("obs", &format!("{JOINTS}[[observation]]\nname = \"lidar_ranges\"\nbeams = 400\n"));
    let mut sim = sim(&m, 2);
    let warnings = sim.take_warnings();
    assert!(warnings.iter().any(|w| matches!(w, Warning::ObservationBeamsDiffer { beams: 400, actual: 360, .. })));
    assert_eq!(sim.observation().size(), 3 + 3 + 400);
    assert_eq!(sim.observation().names()[0], "joint_positions/base_x");
    assert_eq!(sim.observation().names()[6], "lidar_ranges/0/0");
    // The observation fires the lidar without SetLidarLive.
    assert!(!sim.lidar_live());
    for _ in 0..10 {
        sim.step_agent(1, &[1.0, 0.0, 0.5]).unwrap();
    }
    let mut obs = vec![0.0; sim.observation().size()];
    sim.observe(1, &mut obs).unwrap();
    let qpos = sim.joint_positions(1).unwrap().to_vec();
    let qvel = sim.joint_velocities(1).unwrap().to_vec();
    assert!(qpos[0] > 0.0, "the agent's world moved: {qpos:?}");
    assert_eq!(&obs[..3], &qpos.iter().map(|&q| q as f32).collect::<Vec<_>>()[..]);
    assert_eq!(&obs[3..6], &qvel.iter().map(|&q| q as f32).collect::<Vec<_>>()[..]);
    let mut scan = vec![0.0; 360];
    sim.lidar(0).unwrap().scan_into(1, &mut scan, false).unwrap();
    assert_eq!(&obs[6..366], &scan[..]);
    assert!(scan.iter().any(|&r| r > 0.0));
    assert!(obs[366..].iter().all(|&r| r == -1.0), "beams past the scan read -1");
    // The other world followed the controller (zero control): it did not move.
    assert_eq!(sim.joint_positions(0).unwrap()[0], 0.0);

    // Every world at once: the rows of the one-world calls.
    let size = sim.observation().size();
    let mut all = vec![0.0; 2 * size];
    sim.observe_all(&mut all).unwrap();
    let mut row0 = vec![0.0; size];
    sim.observe(0, &mut row0).unwrap();
    assert_eq!((&all[..size], &all[size..]), (&row0[..], &obs[..]));
    let err = sim.observe_all(&mut all[1..]).unwrap_err().to_string();
    assert!(err.contains(&format!("2 worlds of {size} values")), "{err}");
}

#[test]
fn an_observation_without_beams_emits_nothing_and_says_so_once() {
    let m = manifest("nobeams", &format!("{JOINTS}[[observation]]\nname = \"lidar_ranges\"\nbeams = -5\n"));
    let mut sim = sim(&m, 1);
    let warnings = sim.take_warnings();
    assert_eq!(warnings.iter().filter(|w| matches!(w, Warning::ObservationBeams { .. })).count(), 1);
    assert!(warnings.iter().any(|w| w.to_string().contains("set beams = 360")));
    assert_eq!(sim.observation().size(), 6);
    sim.step(None).unwrap();
    assert!(sim.take_warnings().is_empty(), "said once, not per step");
}

#[test]
fn actions_are_clamped_to_ctrlrange_and_a_wrong_length_names_both_lengths() {
    let m = manifest("clamp", JOINTS);
    let mut sim = sim(&m, 1);
    sim.step_agent(0, &[50.0, -50.0, 0.0]).unwrap();
    assert_eq!(sim.controls(0).unwrap(), &[2.0, -2.0, 0.0], "the showroom's ctrlrange is -2 to 2");
    let e = sim.step_agent(0, &[1.0]).unwrap_err();
    assert!(matches!(e, SimError::BufferLength { .. }));
    assert!(e.to_string().contains("1 values") && e.to_string().contains("3 actuators"), "{e}");
    let e = sim.step_agent(0, &[f64::NAN, 0.0, 0.0]).unwrap_err();
    assert!(e.to_string().contains("action 0 (vx) is NaN"), "{e}");
    assert!(sim.step_agent(3, &[0.0; 3]).is_err(), "an unknown world");
}

#[test]
fn the_task_rewards_progress_and_the_goal_and_ends_with_the_time_limit() {
    let task = "[task]\nbody = \"robot\"\ngoal = [1.0, 0.0]\ngoal_tolerance = 0.3\nepisode_seconds = 4.0\n\
                progress_weight = 2.0\ngoal_reward = 5.0\ncollision_penalty = 1.0\n";
    let m = manifest("task", &format!("{JOINTS}{task}"));
    let mut sim = sim(&m, 1);
    assert_eq!(sim.task().unwrap().goal, vec![1.0, 0.0]);
    let (mut total, mut reached_at) = (0.0, None);
    for tick in 0..200 {
        let report = sim.step_agent(0, &[1.0, 0.0, 0.0]).unwrap();
        let t = report.task[0];
        if tick == 0 {
            assert!(t.progress > 0.0 && (t.reward - 2.0 * t.progress).abs() < 1e-12, "{t:?}");
        }
        total += t.reward;
        if t.reached {
            reached_at = Some(tick);
            assert!(t.distance <= 0.3);
            break;
        }
    }
    let tick = reached_at.expect("driving along +x reaches (1, 0)");
    assert!(total > 5.0 + 2.0 * 0.6, "progress from about 1 m away, then the bonus: {total}");
    sim.reset(glint_sim::Worlds::All, None).unwrap();
    let mut last = WorldStatus::Ok;
    for _ in 0..(4.0 / sim.runner().dt).round() as usize {
        last = sim.step(None).unwrap().status[0];
    }
    assert_eq!(last, WorldStatus::Ended, "episode_seconds is the episode length (reached at tick {tick})");
}

#[test]
fn a_task_naming_what_the_model_lacks_is_refused() {
    let m = manifest("badtask", "[task]\nbody = \"robott\"\ngoal = [1.0, 0.0]\n");
    let e = Simulation::from_manifest(&m, SimOptions::default()).unwrap_err().to_string();
    assert!(e.contains("body 'robott'") && e.contains("did you mean 'robot'"), "{e}");
    let m = manifest("badgoal", "[task]\nbody = \"robot\"\ngoal = [1.0]\n");
    let e = Simulation::from_manifest(&m, SimOptions::default()).unwrap_err().to_string();
    assert!(e.contains("[task] goal"), "{e}");
}

#[test]
fn a_reset_world_sees_nothing_of_its_last_episode() {
    let m = manifest("resetclear", "");
    let mut sim = sim(&m, 2);
    sim.set_lidar_live(true);
    for _ in 0..5 {
        sim.step(None).unwrap();
    }
    let lidar_hits = |sim: &Simulation, w: usize| {
        let mut scan = vec![0.0; 360];
        sim.lidar(0).unwrap().scan_into(w, &mut scan, false).unwrap();
        scan.iter().filter(|&&r| r >= 0.0).count()
    };
    assert!(lidar_hits(&sim, 0) > 0 && lidar_hits(&sim, 1) > 0);
    sim.reset(glint_sim::Worlds::One(0), None).unwrap();
    assert_eq!(lidar_hits(&sim, 0), 0, "every beam reads -1 until the new episode casts it");
    assert!(lidar_hits(&sim, 1) > 0, "the other world keeps its scan");
}
