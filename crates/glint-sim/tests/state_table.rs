//! A recording's robot state table (`state-NNN.parquet`): every tick's MuJoCo `qpos`, `qvel`,
//! `ctrl` and body poses, on a scene with free bodies tumbling and a swinging arm
//! (`tests/data/rangefinders.xml`), equal to what the simulation held after each tick; and a
//! killed run's table rebuilt by `recover`.

use std::path::PathBuf;

use glam::DQuat;
use glint_record::{EpisodeStatus, TickTable, check_session, read_tick_table, recover_session};
use glint_sim::{RecordingOptions, SimOptions, Simulation, state_names};

fn simulation(nworld: usize) -> Simulation {
    let scene = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/rangefinders.xml");
    Simulation::from_xml_file(scene, Vec::new(), SimOptions { nworld, ..SimOptions::default() }).unwrap()
}

/// World `w`'s state row as the simulation holds it now.
fn state_now(sim: &Simulation, w: usize) -> Vec<f64> {
    let mut row: Vec<f64> = sim.joint_positions(w).unwrap().to_vec();
    row.extend(sim.joint_velocities(w).unwrap());
    let nbody = sim.scene().nbody();
    let poses = sim.poses();
    for b in 1..nbody {
        let (p, m) = (poses.xpos[w * nbody + b], poses.xmat[w * nbody + b]);
        let q = DQuat::from_mat3(&m).normalize();
        row.extend([p.x, p.y, p.z, q.w, q.x, q.y, q.z]);
    }
    row
}

#[test]
fn a_recording_holds_every_ticks_state_and_survives_a_kill() {
    let out = std::env::temp_dir().join(format!("glint-state-recording-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&out);
    let mut sim = simulation(2);
    let names = state_names(sim.model());
    assert!(names.iter().any(|n| n.ends_with("/qw")), "the scene has free joints: {names:?}");
    assert_eq!(names.iter().filter(|n| n.starts_with("ctrl/")).count(), sim.model().nu());
    let dir = sim.arm_recording(&RecordingOptions { out: Some(out.clone()), episodes: 1 }).unwrap();
    let mut expected: Vec<Vec<Vec<f64>>> = vec![Vec::new(), Vec::new()];
    for _ in 0..25 {
        sim.step(None).unwrap();
        for (w, rows) in expected.iter_mut().enumerate() {
            rows.push(state_now(&sim, w));
        }
    }
    sim.stop_recording(EpisodeStatus::Interrupted).unwrap();
    assert!(check_session(&dir).unwrap().ok(), "{:?}", check_session(&dir).unwrap());
    let log = std::fs::read_to_string(dir.join("meta/episodes.jsonl")).unwrap();
    let ctrl_at = names.iter().position(|n| n.starts_with("ctrl/")).unwrap_or(names.len());
    for (episode, rows) in expected.iter().enumerate() {
        let rel = TickTable::State.file(episode as u32);
        assert!(log.contains(&format!("\"state\":\"{}\"", rel.display())), "episodes.jsonl lists {rel:?}: {log}");
        let table = read_tick_table(&dir.join(&rel)).unwrap();
        assert_eq!(table.names, names);
        assert_eq!(table.timestamp.len(), 25, "one row per tick");
        for (tick, want) in rows.iter().enumerate() {
            let got = table.row(tick);
            let (joints, bodies) = (&got[..ctrl_at], &got[ctrl_at + sim.model().nu()..]);
            assert_eq!(joints, &want[..ctrl_at], "episode {episode}, tick {tick}: qpos and qvel");
            assert_eq!(bodies, &want[ctrl_at..], "episode {episode}, tick {tick}: body poses");
        }
        let moved = (0..ctrl_at).any(|c| table.row(0)[c] != table.row(24)[c]);
        assert!(moved, "the bodies moved over the episode");
    }

    // A run killed mid-episode leaves the table `.partial` with its log; `recover` rebuilds it.
    let killed = dir.join(TickTable::State.file(1));
    let table = read_tick_table(&killed).unwrap();
    std::fs::rename(&killed, killed.with_extension("parquet.partial")).unwrap();
    std::fs::remove_file(killed.with_extension("json")).unwrap();
    assert!(!check_session(&dir).unwrap().ok(), "a .partial table is reported");
    let report = recover_session(&dir).unwrap();
    assert!(
        report.files.iter().any(|f| matches!(
            f.outcome,
            glint_record::SalvageOutcome::TableRecovered { table: TickTable::State, rows: 25, .. }
        )),
        "{report:?}"
    );
    assert_eq!(read_tick_table(&killed).unwrap(), table);
    assert!(check_session(&dir).unwrap().ok());
    std::fs::remove_dir_all(&out).unwrap();
}
