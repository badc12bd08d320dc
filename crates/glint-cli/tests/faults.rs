//! Nothing lost, nothing clobbered: a session being recorded is never salvaged or exported
//! under the run, outputs never replace devices or existing files, readers refuse damaged
//! files, concurrent exports agree, SIGHUP closes a recording, a run too big for the process's
//! limits is refused up front, and bad input is refused naming what it is about.
//!
//! Signals are sent after an observable event (a file the run writes); every wait has a
//! generous hang guard, never a tuned sleep.

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::*;

/// These tests run one at a time: several drive `glint run` on both cores.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A copy of the showroom in `dir` (so bakes land there), and its manifest.
fn showroom_in(dir: &Path) -> PathBuf {
    for f in ["showroom.xml", "showroom.toml"] {
        std::fs::copy(example(&format!("showroom/{f}")), dir.join(f)).unwrap();
    }
    dir.join("showroom.toml")
}

/// A finished 0.2 s session of the showroom, in `dir`.
fn short_session(dir: &Path) -> PathBuf {
    let out = dir.join("out");
    ok(&["run", s(&showroom_in(dir)), "--seconds", "0.2", "--out", s(&out)]);
    session_in(&out).unwrap()
}

/// `glint run` in the background, recording the showroom into `out` for a long while.
struct LiveRun {
    child: Child,
    out: PathBuf,
}

impl LiveRun {
    fn start(out: &Path, extra: &[&str]) -> LiveRun {
        let manifest = example("showroom/showroom.toml");
        let args = [&["run", s(&manifest), "--seconds", "40", "--out", s(out)], extra].concat();
        let child = Command::new(env!("CARGO_BIN_EXE_glint"))
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("glint starts");
        LiveRun { child, out: out.to_path_buf() }
    }

    /// Waits until the run writes `file` (relative to its session) and returns the session.
    fn wait_for(&mut self, file: &str) -> PathBuf {
        let started = Instant::now();
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                panic!("glint run ended ({status}) before writing {file}");
            }
            assert!(started.elapsed() < HANG_GUARD, "glint run wrote no {file} within {HANG_GUARD:?}: it hangs");
            if let Some(session) = session_in(&self.out)
                && session.join(file).exists()
            {
                return session;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn signal(&self, name: &str) {
        let sent = Command::new("kill").args([&format!("-{name}"), &self.child.id().to_string()]).status().unwrap();
        assert!(sent.success(), "kill -{name} failed");
    }

    /// Waits for the run to end (a hang guard: it is killed past it); its output.
    fn finish(mut self) -> Output {
        let started = Instant::now();
        while self.child.try_wait().unwrap().is_none() {
            if started.elapsed() > HANG_GUARD {
                self.child.kill().ok();
                panic!("glint run did not end within {HANG_GUARD:?} of its signal");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.child.wait_with_output().unwrap()
    }
}

/// The status of each line of a session's `episodes.jsonl`.
fn statuses(session: &Path) -> Vec<String> {
    let log = std::fs::read_to_string(session.join("meta/episodes.jsonl")).unwrap();
    log.lines().map(|l| l.split("\"status\":\"").nth(1).unwrap().split('"').next().unwrap().to_string()).collect()
}

const LIDAR_000: &str = "data/chunk-000/lidar-roof-000.parquet";

#[test]
fn a_live_session_is_neither_recovered_nor_exported_and_replay_says_it_is_recorded() {
    let _serial = serial();
    let dir = temp_dir("live");
    let mut run = LiveRun::start(&dir.join("out"), &["--episodes", "2"]);
    let session = run.wait_for(&format!("{LIDAR_000}.partial"));
    let pid = run.child.id().to_string();

    let err = fails(&["recover", s(&session)]);
    assert!(err.contains("cannot recover the session") && err.contains("is recording it"), "{err}");
    assert!(err.contains(&format!("kill -INT {pid}")), "the refusal names the run: {err}");
    let err = fails(&["export", s(&session), "--bake", "showroom"]);
    assert!(err.contains("is recording it") || err.contains("MaterialBakes"), "{err}");
    let err = fails(&["points", s(&session)]);
    assert!(err.contains("still being written") && !err.contains("glint recover"), "{err}");
    let replay = glint(&["replay", s(&session)]);
    let (stdout, stderr) = text(&replay);
    assert!(replay.status.success(), "replay of a live session is not a failure: {stdout}{stderr}");
    assert!(stdout.contains("still being recorded") && stdout.contains("episode 0: being recorded"), "{stdout}");
    assert!(!stdout.contains("glint recover"), "{stdout}");

    // The run is unharmed: stopped, it closes its episode, and every file reads back.
    run.signal("INT");
    let o = run.finish();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o).1);
    assert_eq!(statuses(&session), ["interrupted"]);
    let table = glint_record::read_lidar_file(&session.join(LIDAR_000)).unwrap();
    assert!(!table.is_empty());
    ok(&["replay", s(&session)]);
    let (stdout, _) = text(&glint(&["recover", s(&session)]));
    assert!(stdout.contains("nothing to recover"), "{stdout}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sighup_closes_the_episode_and_exits_129() {
    let _serial = serial();
    let dir = temp_dir("hup");
    let mut run = LiveRun::start(&dir.join("out"), &[]);
    let session = run.wait_for(&format!("{LIDAR_000}.partial"));
    run.signal("HUP");
    let o = run.finish();
    let (_, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(129), "{stderr}");
    assert!(stderr.contains("interrupted by SIGHUP"), "{stderr}");
    assert_eq!(statuses(&session), ["interrupted"]);
    assert!(session.join(LIDAR_000).exists() && !session.join(format!("{LIDAR_000}.partial")).exists());
    ok(&["replay", s(&session)]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn points_write_into_devices_and_never_replace_a_file_unasked() {
    let _serial = serial();
    let dir = temp_dir("points");
    let session = short_session(&dir);
    for device in ["/dev/null", "/dev/full"] {
        let o = glint(&["points", s(&session), "--out", device]);
        let (_, err) = text(&o);
        if device == "/dev/null" {
            assert!(o.status.success(), "{err}");
        } else {
            assert_eq!(o.status.code(), Some(1), "{err}");
            assert!(err.contains("/dev/full") && err.contains("no space left on device"), "{err}");
        }
        let kind = std::fs::metadata(device).unwrap().file_type();
        assert!(kind.is_char_device(), "{device} is no longer a device");
        assert!(!Path::new(&format!("{device}.partial")).exists());
    }
    let cloud = dir.join("cloud.ply");
    ok(&["points", s(&session), "--out", s(&cloud)]);
    let first = std::fs::read(&cloud).unwrap();
    let err = fails(&["points", s(&session), "--out", s(&cloud), "--format", "pcd"]);
    assert!(err.contains(s(&cloud)) && err.contains("--force"), "{err}");
    assert_eq!(std::fs::read(&cloud).unwrap(), first, "a refused output leaves the file as it was");
    ok(&["points", s(&session), "--out", s(&cloud), "--format", "pcd", "--force"]);
    assert!(std::fs::read(&cloud).unwrap().starts_with(b"# .PCD"), "--force replaced it");
    let err = fails(&["points", s(&session), "--out", s(&dir)]);
    assert!(err.contains("is a folder"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn points_refuse_a_damaged_lidar_file() {
    let _serial = serial();
    let dir = temp_dir("damaged");
    let session = short_session(&dir);
    let lidar = session.join(LIDAR_000);
    let mut bytes = std::fs::read(&lidar).unwrap();
    let middle = bytes.len() / 2;
    for b in &mut bytes[middle..middle + 64] {
        *b ^= 0x5a;
    }
    std::fs::write(&lidar, &bytes).unwrap();
    let err = fails(&["points", s(&session), "--out", s(&dir.join("cloud.ply"))]);
    assert!(err.contains("lidar-roof-000.parquet") && err.contains("SHA-256"), "{err}");
    assert!(!dir.join("cloud.ply").exists(), "no points are written from a damaged file");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn three_concurrent_exports_leave_one_consistent_variant() {
    let _serial = serial();
    let dir = temp_dir("exports");
    let session = short_session(&dir);
    ok(&["bake", s(&dir.join("showroom.toml"))]);
    let variant = dir.join("variant");
    let exports: Vec<Child> = (0..3)
        .map(|_| {
            Command::new(env!("CARGO_BIN_EXE_glint"))
                .args(["export", s(&session), "--bake", "showroom", "--out", s(&variant)])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<Output> = exports.into_iter().map(|c| c.wait_with_output().unwrap()).collect();
    let won = outputs.iter().filter(|o| o.status.success()).count();
    assert_eq!(won, 1, "exactly one export makes the variant");
    for o in outputs.iter().filter(|o| !o.status.success()) {
        let (_, err) = text(o);
        assert_eq!(o.status.code(), Some(1), "{err}");
        assert!(err.contains("already exists") || err.contains("being exported by another glint"), "{err}");
    }
    // The variant is whole: every file its augmentation.json lists has the hash it records.
    let augmentation = glint_record::read_augmentation(&variant).unwrap();
    assert!(!augmentation.files.is_empty());
    for f in &augmentation.files {
        assert_eq!(glint_record::file_sha256(&variant.join(&f.variant)).unwrap(), f.variant_sha256);
    }
    let leftovers: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("variant.partial"))
        .collect();
    assert!(leftovers.is_empty(), "staging left behind: {leftovers:?}");
    ok(&["points", s(&session), "--variant", s(&variant), "--out", "/dev/null"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_run_beyond_the_address_space_limit_is_refused_up_front() {
    let _serial = serial();
    let dir = temp_dir("ulimit");
    let out = dir.join("out");
    // 2 GB of address space: the showroom's 256 worlds reserve more than twice that.
    let script = format!(
        "ulimit -v 2000000 && exec '{}' run '{}' --worlds 256 --seconds 0.2 --out '{}'",
        env!("CARGO_BIN_EXE_glint"),
        s(&example("showroom/showroom.toml")),
        s(&out)
    );
    let o = Command::new("sh").args(["-c", &script]).output().unwrap();
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(err.contains("256 worlds need about") && err.contains("ulimit -v"), "{err}");
    assert!(err.contains("use at most"), "{err}");
    assert!(session_in(&out).is_none(), "nothing is recorded before the refusal");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn recover_salvages_the_other_files_past_an_empty_journal() {
    let _serial = serial();
    let dir = temp_dir("journal");
    let mut run = LiveRun::start(&dir.join("out"), &["--worlds", "2"]);
    // Both worlds' files have a complete row group in their journals.
    let journal = |e: u32| format!("data/chunk-000/lidar-roof-{e:03}.parquet.partial.groups");
    let session = run.wait_for(&journal(1));
    let started = Instant::now();
    loop {
        let done = (0..2).all(|e| {
            let partial = session.join(format!("data/chunk-000/lidar-roof-{e:03}.parquet.partial"));
            glint_record::partial_state(&partial).is_ok_and(|s| s.row_groups >= 1)
        });
        if done {
            break;
        }
        assert!(started.elapsed() < HANG_GUARD, "no complete row group within {HANG_GUARD:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    run.signal("KILL");
    run.finish();
    // What a full disk leaves as the journal is created: an empty file.
    std::fs::write(session.join(journal(1)), b"").unwrap();
    let o = glint(&["recover", s(&session)]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}{stderr}");
    assert!(stdout.contains("lidar-roof-000.parquet.partial:\n  recovered as"), "{stdout}");
    let bad = stdout.split("lidar-roof-001.parquet.partial:").nth(1).unwrap_or_default();
    assert!(bad.contains("nothing salvaged") && bad.contains("lidar-roof-001.parquet.partial.groups"), "{stdout}");
    assert!(bad.contains("row-group journal") && bad.contains("empty"), "{stdout}");
    assert!(!stdout.contains("not a readable Parquet file"), "{stdout}");
    assert!(session.join(LIDAR_000).exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_arguments_are_refused_naming_them() {
    // An argument clap refuses exits 2, as usage errors do.
    let o = glint(&["render", s(&example("lights/scene.xml")), "--size", "-5", "10"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("'-5' is not an image side") && err.contains("1 to 8192"), "{err}");
    let err = fails(&["replay", "/nonexistent", "--ticks", "0..3"]);
    assert!(err.contains("--ticks") && err.contains("--png"), "{err}");
    let o = glint(&["render", s(&example("lights/scene.xml")), "--runner-hz", "0"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o).1.contains("'0' is not a rate"), "{}", text(&o).1);
    // The scene steps at 2 ms: 300 ticks a second would be 1.67 steps a tick.
    let err = fails(&["render", s(&example("lights/scene.xml")), "--runner-hz", "300"]);
    assert!(err.contains("300"), "{err}");
}

#[test]
fn render_takes_the_runner_rate_its_steps_count() {
    let dir = temp_dir("runner-hz");
    let scene = example("lights/scene.xml");
    let args = ["render", s(&scene), "--size", "16", "12", "--steps", "2", "--runner-hz", "50", "--out", s(&dir)];
    let o = glint(&args);
    let (out, err) = text(&o);
    assert!(o.status.success(), "{out}{err}");
    assert!(std::fs::read_dir(&dir).unwrap().count() > 0, "the frame is written");
    std::fs::remove_dir_all(&dir).ok();
}

/// `info.json` with `key` set to `value` (JSON).
fn edit_info(session: &Path, key: &str, value: serde_json::Value) {
    let path = session.join("meta/info.json");
    let mut info: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    info[key] = value;
    std::fs::write(&path, serde_json::to_string_pretty(&info).unwrap()).unwrap();
}

#[test]
fn edited_session_metadata_is_refused_naming_the_key() {
    let _serial = serial();
    let dir = temp_dir("meta");
    let session = short_session(&dir);
    let info = std::fs::read_to_string(session.join("meta/info.json")).unwrap();
    let edits = [
        ("worlds", serde_json::json!(0)),
        ("lidar_runner_hz", serde_json::json!(0.0)),
        ("lidar_runner_hz", serde_json::json!(-100.0)),
        ("format_version", serde_json::json!(99)),
        ("sensors", serde_json::json!([])),
    ];
    for (key, value) in edits {
        edit_info(&session, key, value.clone());
        // Named by its key, or for a version by its words.
        let named = |t: &str| t.contains(&format!("{key} is")) || t.contains("format version 99");
        let o = glint(&["replay", s(&session)]);
        let (out, err) = text(&o);
        assert_eq!(o.status.code(), Some(1), "replay with {key} = {value}: {out}{err}");
        assert!(named(&out), "replay with {key} = {value}: {out}{err}");
        let err = fails(&["export", s(&session), "--bake", "showroom"]);
        assert!(named(&err), "export with {key} = {value}: {err}");
        std::fs::write(session.join("meta/info.json"), &info).unwrap();
    }
    // A sidecar's tick rate.
    let sidecar = session.join("data/chunk-000/lidar-roof-000.json");
    let text_before = std::fs::read_to_string(&sidecar).unwrap();
    let mut edited: serde_json::Value = serde_json::from_str(&text_before).unwrap();
    edited["tick_hz"] = serde_json::json!(0.0);
    std::fs::write(&sidecar, serde_json::to_string_pretty(&edited).unwrap()).unwrap();
    let out = text(&glint(&["replay", s(&session)])).0;
    assert!(out.contains("tick_hz is 0"), "{out}");
    let err = fails(&["points", s(&session), "--out", "/dev/null"]);
    assert!(err.contains("tick_hz is 0"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_full_disk_is_named_as_such_with_advice_that_fits() {
    let _serial = serial();
    let dir = temp_dir("full");
    let session = short_session(&dir);
    ok(&["bake", s(&dir.join("showroom.toml"))]);
    // A disk with room for the session's folders but not its info.json (which carries the
    // manifest's text): nothing was recorded, so there is nothing to recover.
    let tiny = dir.join("tiny");
    let Some(_tiny) = Tmpfs::mount(&tiny, 4096) else { return };
    std::fs::write(tiny.join("filler"), vec![0u8; 4096]).ok();
    let err = fails(&["run", s(&dir.join("showroom.toml")), "--seconds", "0.2", "--out", s(&tiny)]);
    assert!(err.contains("no space left on device"), "{err}");
    assert!(!err.contains("glint recover"), "nothing was recorded, so recover is not the advice: {err}");
    // An export onto a full disk: the variant's file is named with a full disk, not as a
    // Parquet error.
    let small = dir.join("small");
    let Some(_small) = Tmpfs::mount(&small, 64 * 1024) else { return };
    let err = fails(&["export", s(&session), "--bake", "showroom", "--out", s(&small.join("variant"))]);
    assert!(err.contains("no space left on device"), "{err}");
    assert!(!err.contains("not a readable Parquet file") && !err.contains("External"), "{err}");
    assert!(!small.join("variant").exists(), "no half variant is left");
    drop((_tiny, _small));
    std::fs::remove_dir_all(&dir).ok();
}
