//! Never losing finished work: a `kill -9` and a full disk in the middle of an episode, then
//! `glint recover`, which salvages the episode up to its last complete row group.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use glint_record::{ROW_GROUP_ROWS, partial_state, read_lidar_file, read_pose_file};

mod common;
use common::*;

/// These tests run one at a time: each drives `glint run` on both cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn showroom() -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", "showroom", "showroom.toml"].iter().collect();
    p.to_string_lossy().into_owned()
}

/// Reads the recovered file and its pose table with glint's readers and with pyarrow, and
/// checks they hold `rows` rows in `groups` row groups, the poses ending at the last row's tick.
fn check_recovered(chunk: &Path, name: &str, groups: usize, rows: u64) {
    let file = chunk.join(format!("{name}.parquet"));
    let poses = chunk.join(format!("{name}.poses.parquet"));
    let table = read_lidar_file(&file).unwrap();
    assert_eq!(table.len() as u64, rows);
    let pose_table = read_pose_file(&poses).unwrap();
    assert_eq!(pose_table.timestamp.last(), table.timestamp.last(), "the poses end at the last salvaged tick");
    // The salvaged file keeps its episode seed and gets its beam table, so export and
    // `glint points` read it like any other.
    let sidecar = glint_record::read_sidecar(&file.with_extension("json")).unwrap();
    assert!(sidecar.episode_seed.is_some(), "the footer carried the episode seed");
    let cloud = glint_record::recorded_points(&file, None, glint_record::PointFrame::World).unwrap();
    assert_eq!(cloud.len() as u64, table.hit.iter().filter(|&&h| h == 1).count() as u64);
    let script = format!(
        "import pyarrow.parquet as pq\n\
         f = pq.ParquetFile(r'{}')\n\
         t = f.read()\n\
         p = pq.read_table(r'{}')\n\
         print(f.metadata.num_row_groups, t.num_rows, p.num_rows, max(t['timestamp'].to_pylist()) == max(p['timestamp'].to_pylist()))",
        file.display(),
        poses.display()
    );
    let got = python_ok(&script);
    assert_eq!(got.trim(), format!("{groups} {rows} {} True", pose_table.len()));
    for side in
        [".parquet.partial", ".parquet.partial.groups", ".poses.parquet.partial", ".poses.parquet.partial.ticks"]
    {
        assert!(!chunk.join(format!("{name}{side}")).exists(), "{name}{side} is left behind");
    }
}

#[test]
#[allow(clippy::zombie_processes)]
fn kill_9_mid_episode_then_recover_salvages_every_complete_row_group() {
    let _serial = serial();
    let out = temp_dir("kill9");
    let mut child: Child = Command::new(env!("CARGO_BIN_EXE_glint"))
        .args(["run", &showroom(), "--seconds", "60", "--out", out.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("glint starts");
    // Wait until the row-group journal records two row groups on disk.
    let started = Instant::now();
    let (session, partial) = loop {
        if let Some(status) = child.try_wait().unwrap() {
            let o = child.wait_with_output().unwrap();
            panic!("glint run ended ({status}) before two row groups were written: {}", text(&o).1);
        }
        if started.elapsed() > HANG_GUARD {
            child.kill().ok();
            child.wait().ok();
            panic!("glint run wrote no two row groups within {HANG_GUARD:?}: it hangs");
        }
        if let Some(session) = session_in(&out) {
            let partial = session.join("data/chunk-000/lidar-roof-000.parquet.partial");
            if partial.exists() && partial_state(&partial).is_ok_and(|s| s.row_groups >= 2) {
                break (session, partial);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    child.kill().unwrap();
    child.wait().unwrap();
    // What the journal holds now that the run is dead: at least the two groups waited for.
    let state = partial_state(&partial).unwrap();
    assert!(state.row_groups >= 2 && state.rows == (state.row_groups * ROW_GROUP_ROWS) as u64, "{state:?}");

    let replay = glint(&["replay", session.to_str().unwrap()]);
    let (stdout, stderr) = text(&replay);
    assert!(!replay.status.success());
    let salvageable =
        format!("{} complete row group(s), {} rows, can be salvaged by `glint recover`", state.row_groups, state.rows);
    assert!(stdout.contains(&salvageable), "{stdout}");
    assert!(stderr.contains(&format!("glint recover {}", session.display())), "{stderr}");

    let o = glint(&["recover", session.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stderr}");
    assert!(stdout.contains(&format!("{} row group(s), {} rows", state.row_groups, state.rows)), "{stdout}");
    assert!(stdout.contains("episode 0: logged as recovered"), "{stdout}");
    let chunk = session.join("data/chunk-000");
    check_recovered(&chunk, "lidar-roof-000", state.row_groups, state.rows);

    let replay = glint(&["replay", session.to_str().unwrap()]);
    let (stdout, stderr) = text(&replay);
    assert!(replay.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("lidar-roof-000.parquet: OK") && stdout.contains("recovered"), "{stdout}");
    let log = std::fs::read_to_string(session.join("meta/episodes.jsonl")).unwrap();
    assert_eq!(log.lines().count(), 1, "{log}");
    assert!(log.contains("\"index\":0") && log.contains("\"status\":\"recovered\""), "{log}");
    // Nothing is left to recover, and a second run says so.
    let (stdout, _) = text(&glint(&["recover", session.to_str().unwrap()]));
    assert!(stdout.contains("nothing to recover"), "{stdout}");
    std::fs::remove_dir_all(&out).ok();
}

/// Bytes a file takes on a tmpfs: whole pages.
fn pages(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len().div_ceil(4096) * 4096
}

#[test]
fn a_full_disk_mid_episode_names_the_file_and_keeps_finished_episodes_and_the_complete_row_groups() {
    let _serial = serial();
    let dir = temp_dir("full");
    let args = |out: &Path| -> Vec<String> {
        ["run", &showroom(), "--seconds", "4", "--episodes", "3", "--out", out.to_str().unwrap()]
            .map(String::from)
            .to_vec()
    };
    // The same run on a roomy disk: each episode of it writes the same files.
    let roomy = dir.join("roomy");
    std::fs::create_dir_all(&roomy).unwrap();
    let o = Command::new(env!("CARGO_BIN_EXE_glint")).args(args(&roomy)).output().unwrap();
    assert!(o.status.success(), "{}", text(&o).1);
    let reference = session_in(&roomy).unwrap();
    let chunk = reference.join("data/chunk-000");
    let episode: u64 = ["lidar-roof-000.parquet", "lidar-roof-000.poses.parquet", "lidar-roof-000.json"]
        .iter()
        .map(|f| pages(&chunk.join(f)))
        .sum();
    let lidar = std::fs::metadata(chunk.join("lidar-roof-000.parquet")).unwrap().len();
    let meta = pages(&reference.join("meta/info.json")) + pages(&reference.join("meta/episodes.jsonl"));
    // An episode holds 2.5 row groups, which end at 40% and 80% of its lidar file: a disk
    // with room for two episodes, the third's salvage logs, and 60% of its lidar file fills
    // in its second row group.
    let logs = 16 * 4096;
    let size = (meta + 2 * episode + logs + lidar * 6 / 10).div_ceil(4096) * 4096;

    let mnt = dir.join("small");
    std::fs::create_dir_all(&mnt).unwrap();
    let Some(_tmpfs) = Tmpfs::mount(&mnt, size) else { return };
    let o = Command::new(env!("CARGO_BIN_EXE_glint")).args(args(&mnt)).output().unwrap();
    let (_, stderr) = text(&o);
    assert!(!o.status.success(), "the run fits a disk of {size} bytes: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let session = session_in(&mnt).unwrap();
    let err = stderr.lines().find(|l| l.starts_with("error:")).unwrap_or(&stderr).to_string();
    assert!(err.contains("no space left on device") && err.contains("lidar-roof-002"), "{err}");
    assert!(err.contains(&format!("glint recover {}", session.display())), "{err}");

    // The finished episodes are intact, and byte for byte those of the roomy run.
    let chunk = session.join("data/chunk-000");
    for e in ["000", "001"] {
        for f in [format!("lidar-roof-{e}.parquet"), format!("lidar-roof-{e}.poses.parquet")] {
            let same = std::fs::read(chunk.join(&f)).unwrap()
                == std::fs::read(reference.join("data/chunk-000").join(&f)).unwrap();
            assert!(same, "{f} differs from the roomy run's");
        }
    }
    let replay = glint(&["replay", session.to_str().unwrap()]);
    let (stdout, _) = text(&replay);
    assert!(stdout.contains("lidar-roof-000.parquet: OK") && stdout.contains("lidar-roof-001.parquet: OK"), "{stdout}");
    assert!(stdout.contains("lidar-roof-002.parquet.partial: incomplete"), "{stdout}");
    let partial = chunk.join("lidar-roof-002.parquet.partial");
    let state = partial_state(&partial).unwrap();
    assert_eq!((state.row_groups, state.rows), (1, ROW_GROUP_ROWS as u64), "{stdout}");

    // Recovered on the full disk as it is.
    let o = glint(&["recover", session.to_str().unwrap()]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains(&format!("1 row group(s), {ROW_GROUP_ROWS} rows")), "{stdout}");
    check_recovered(&chunk, "lidar-roof-002", 1, ROW_GROUP_ROWS as u64);
    let replay = glint(&["replay", session.to_str().unwrap()]);
    let (stdout, stderr) = text(&replay);
    assert!(replay.status.success(), "{stdout}{stderr}");
    let log = std::fs::read_to_string(session.join("meta/episodes.jsonl")).unwrap();
    let statuses: Vec<&str> =
        log.lines().map(|l| l.split("\"status\":\"").nth(1).unwrap().split('"').next().unwrap()).collect();
    assert_eq!(statuses, ["complete", "complete", "recovered"], "{log}");
    drop(_tmpfs);
    std::fs::remove_dir_all(&dir).ok();
}
