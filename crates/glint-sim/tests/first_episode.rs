//! A run split into ranges of episodes (`SimOptions::first_episode`, `glint run
//! --first-episode`) records each episode exactly as one run of them all does: the same seed,
//! the same files byte for byte (lidar, pose and beam tables, robot state, sidecars). What a
//! distributed generation of a dataset rests on.

use std::path::{Path, PathBuf};

use glint_sim::{Quiet, RecordingOptions, SimOptions, Simulation};

fn root() -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", ".."].iter().collect()
}

/// Records `episodes` episodes of the showroom from episode `first` under `out`; returns the
/// session folder.
fn record(manifest: &Path, out: &Path, first: u64, episodes: u32) -> PathBuf {
    let options =
        SimOptions { seed: Some(11), episode_seconds: Some(0.1), first_episode: first, ..SimOptions::default() };
    let mut sim = Simulation::from_manifest(manifest, options).unwrap();
    sim.set_lidar_live(true);
    let session = sim.arm_recording(&RecordingOptions { out: Some(out.to_path_buf()), episodes }).unwrap();
    let outcome = sim.run(episodes, &mut Quiet).unwrap();
    assert_eq!(outcome.episodes, episodes);
    session
}

/// The files of episode `index` in a session's `data/chunk-000/`, by name.
fn episode_files(session: &Path, index: u32) -> Vec<(String, Vec<u8>)> {
    let chunk = session.join("data/chunk-000");
    let tag = format!("-{index:03}.");
    let mut names: Vec<String> = std::fs::read_dir(&chunk)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(&tag))
        .collect();
    names.sort();
    names.into_iter().map(|n| (n.clone(), std::fs::read(chunk.join(&n)).unwrap())).collect()
}

#[test]
fn episodes_recorded_from_a_later_first_episode_equal_one_runs() {
    let dir = std::env::temp_dir().join(format!("glint-first-episode-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let showroom = root().join("examples/showroom");
    std::fs::copy(showroom.join("showroom.xml"), dir.join("showroom.xml")).unwrap();
    // Each episode's seed moves a wall: a range that used other seeds would record other ranges.
    let mut text = std::fs::read_to_string(showroom.join("showroom.toml")).unwrap();
    text.push_str("\n[randomize.geom_pos]\nwall_east = { uniform = [[8.5, 0.0, 1.5], [9.1, 0.0, 1.5]] }\n");
    std::fs::write(dir.join("showroom.toml"), text).unwrap();
    let manifest = dir.join("showroom.toml");

    let whole = record(&manifest, &dir.join("whole"), 0, 4);
    let second_half = record(&manifest, &dir.join("half"), 2, 2);
    for index in [2, 3] {
        let (want, got) = (episode_files(&whole, index), episode_files(&second_half, index));
        let names: Vec<&String> = got.iter().map(|(n, _)| n).collect();
        assert!(names.iter().any(|n| n.starts_with("lidar-") && n.ends_with(".parquet")), "{names:?}");
        assert!(names.iter().any(|n| n.starts_with("state-")), "{names:?}");
        assert_eq!(want.len(), got.len(), "episode {index}: {names:?}");
        for ((wn, wb), (gn, gb)) in want.iter().zip(&got) {
            assert_eq!(wn, gn);
            assert!(wb == gb, "episode {index}: {gn} differs from one run's");
        }
    }
    assert!(episode_files(&second_half, 0).is_empty(), "the range's files are numbered from its first episode");
    let log = std::fs::read_to_string(whole.join("meta/episodes.jsonl")).unwrap();
    let walls: Vec<&str> = log.lines().map(|l| l.split("geom_pos").nth(1).unwrap_or("")).collect();
    assert!(walls[2] != walls[3], "the episodes drew different walls: {log}");
    std::fs::remove_dir_all(&dir).unwrap();
}
