//! `glint run` end to end: sessions read back by pyarrow, interruption by SIGINT, SIGTERM,
//! SIGQUIT and SIGKILL, and never overwriting a session.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// These tests run one at a time: each drives `glint run` on both cores, and the memory test
/// measures peaks that another run's load would sway.
static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn glint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_glint")).args(args).output().expect("glint runs")
}

fn example(name: &str) -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name].iter().collect();
    p.to_string_lossy().into_owned()
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-run-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn python() -> PathBuf {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", ".deps", "venv", "bin", "python"].iter().collect();
    assert!(p.exists(), "{} is missing: run `make test`, which installs the pinned Python packages", p.display());
    p
}

fn python_ok(script: &str) -> String {
    let out = Command::new(python()).args(["-c", script]).output().expect("python runs");
    assert!(out.status.success(), "python failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The one session folder under `out`.
fn sessions(out: &Path) -> Vec<PathBuf> {
    let mut s: Vec<PathBuf> = std::fs::read_dir(out).unwrap().map(|e| e.unwrap().path()).collect();
    s.sort();
    s
}

#[test]
fn a_session_reads_back_with_pyarrow() {
    let _serial = serial();
    let out = temp_dir("pyarrow");
    let o = glint(&["run", &example("showroom/showroom.toml"), "--seconds", "0.5", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("rows") && text.contains("hit rate") && text.contains("wall time"), "{text}");
    let session = &sessions(&out)[0];
    assert!(session.file_name().unwrap().to_string_lossy().starts_with("session_"));
    let file = session.join("data/chunk-000/lidar-roof-000.parquet");
    let script = format!(
        "import pyarrow.parquet as pq, json\n\
         t = pq.read_table(r'{}')\n\
         s = t.schema\n\
         want = [('timestamp','double'),('bin','uint16'),('channel','uint16'),('range','float'),('geom_id','int32'),\n\
                 ('hit','uint8'),('normal_x','float'),('normal_y','float'),('normal_z','float'),\n\
                 ('sec_range','float'),('sec_geom_id','int32'),('sec_normal_x','float'),('sec_normal_y','float'),('sec_normal_z','float'),\n\
                 ('refl_range','float'),('refl_geom_id','int32'),('refl_normal_x','float'),('refl_normal_y','float'),('refl_normal_z','float')]\n\
         assert [(f.name, str(f.type)) for f in s] == want, [(f.name, str(f.type)) for f in s]\n\
         d = t.to_pydict()\n\
         n = t.num_rows\n\
         assert n == 25 * 65536 // 5, n\n\
         miss = [i for i in range(n) if d['geom_id'][i] < 0]\n\
         assert miss and all(d['range'][i] == -1.0 and d['hit'][i] == 0 for i in miss)\n\
         ts = sorted(set(d['timestamp']))\n\
         assert len(ts) == 25 and abs(ts[0] - 0.02) < 1e-9, ts[:3]\n\
         side = json.load(open(r'{}'))\n\
         print(n)",
        file.display(),
        file.with_extension("json").display()
    );
    assert_eq!(python_ok(&script).trim(), (25 * 65536 / 5).to_string());
    let replay = glint(&["replay", session.to_str().unwrap()]);
    assert!(replay.status.success(), "{}", String::from_utf8_lossy(&replay.stdout));
    // A second run never overwrites the first: it makes a new session folder.
    let o = glint(&["run", &example("showroom/showroom.toml"), "--seconds", "0.1", "--out", out.to_str().unwrap()]);
    assert!(o.status.success());
    assert_eq!(sessions(&out).len(), 2);
    std::fs::remove_dir_all(&out).ok();
}

/// A hang guard for waiting on `glint run`: far longer than any run here takes on a slow,
/// busy machine. Tests wait for what the run writes, never for a time.
const HANG_GUARD: Duration = Duration::from_secs(30 * 60);

/// Starts a long run and returns once episode 0 is finished and episode 1 has written its
/// first row group (its `.partial` file is no longer empty), so a signal from then on
/// interrupts an episode that holds rows. The caller signals and waits for the child.
#[allow(clippy::zombie_processes)]
fn start_long_run(out: &Path) -> (Child, PathBuf) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_glint"))
        .args(["run", &example("showroom/showroom.toml"), "--episodes", "3", "--seconds", "20"])
        .args(["--out", out.to_str().unwrap()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("glint starts");
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let o = child.wait_with_output().unwrap();
            panic!("glint run ended ({status}) before episode 1 wrote rows: {}", String::from_utf8_lossy(&o.stderr));
        }
        if started.elapsed() > HANG_GUARD {
            child.kill().ok();
            child.wait().ok();
            panic!("glint run wrote no rows of episode 1 within {HANG_GUARD:?}: it hangs");
        }
        if let Some(session) = sessions(out).first() {
            let chunk = session.join("data/chunk-000");
            let partial = chunk.join("lidar-roof-001.parquet.partial");
            let writing = std::fs::metadata(&partial).is_ok_and(|m| m.len() > 0);
            if chunk.join("lidar-roof-000.parquet").exists() && writing {
                return (child, session.clone());
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, name: &str) {
    let ok = Command::new("kill").args([&format!("-{name}"), &child.id().to_string()]).status().unwrap();
    assert!(ok.success());
}

#[test]
fn sigint_sigterm_and_sigquit_close_the_episode_mark_it_interrupted_and_exit_128_plus_the_signal() {
    let _serial = serial();
    for (sig, code) in [("INT", 130), ("TERM", 143), ("QUIT", 131)] {
        let out = temp_dir(&format!("sig{sig}"));
        let (child, session) = start_long_run(&out);
        signal(&child, sig);
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{sig}: {err}");
        assert!(err.contains(&format!("interrupted by SIG{sig}")), "{sig}: {err}");
        let chunk = session.join("data/chunk-000");
        assert!(!chunk.join("lidar-roof-001.parquet.partial").exists(), "{sig}");
        let lines = std::fs::read_to_string(session.join("meta/episodes.jsonl")).unwrap();
        let statuses: Vec<&str> =
            lines.lines().map(|l| if l.contains("interrupted") { "interrupted" } else { "complete" }).collect();
        assert_eq!(statuses, ["complete", "interrupted"], "{sig}: {lines}");
        // Both files are whole and readable, the interrupted one shorter.
        let script = format!(
            "import pyarrow.parquet as pq\n\
             a = pq.read_table(r'{}').num_rows\n\
             b = pq.read_table(r'{}').num_rows\n\
             assert 0 < b < a, (a, b)\n\
             print(a, b)",
            chunk.join("lidar-roof-000.parquet").display(),
            chunk.join("lidar-roof-001.parquet").display()
        );
        python_ok(&script);
        let replay = glint(&["replay", session.to_str().unwrap()]);
        let text = String::from_utf8_lossy(&replay.stdout);
        assert!(replay.status.success() && text.contains("interrupted"), "{text}");
        std::fs::remove_dir_all(&out).ok();
    }
}

#[test]
fn sigkill_leaves_only_a_partial_file_that_replay_reports() {
    let _serial = serial();
    let out = temp_dir("kill");
    let (mut child, session) = start_long_run(&out);
    child.kill().unwrap();
    child.wait().unwrap();
    let chunk = session.join("data/chunk-000");
    assert!(chunk.join("lidar-roof-001.parquet.partial").exists());
    assert!(!chunk.join("lidar-roof-001.parquet").exists());
    let replay = glint(&["replay", session.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&replay.stdout);
    assert!(!replay.status.success(), "{text}");
    assert!(text.contains("lidar-roof-001.parquet.partial") && text.contains("incomplete"), "{text}");
    let err = String::from_utf8_lossy(&replay.stderr);
    assert!(err.contains(&format!("glint recover {}", session.display())), "{err}");
    // The finished episode is untouched.
    assert!(text.contains("lidar-roof-000.parquet: OK"), "{text}");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn controllers_move_the_robot_and_bad_names_are_errors() {
    let _serial = serial();
    let dir = temp_dir("controller");
    for f in ["showroom.xml", "showroom.toml"] {
        std::fs::copy(example(&format!("showroom/{f}")), dir.join(f)).unwrap();
    }
    let manifest = dir.join("showroom.toml");
    // The showroom's own [controller] comes last: replace it.
    let text = std::fs::read_to_string(&manifest).unwrap();
    let base = text.split("\n[controller]").next().unwrap().to_string();
    let run = |controller: &str| {
        std::fs::write(&manifest, format!("{base}\n[controller]\n{controller}\n")).unwrap();
        glint(&["run", manifest.to_str().unwrap(), "--seconds", "1", "--no-record"])
    };
    let o = run("kind = \"velocity\"\nctrl = { vx = 0.5, vzz = 1.0 }");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("'vzz'") && err.contains("it has vx, vy, wz"), "{err}");
    let o = run(
        "kind = \"waypoints\"\nbody = \"robot\"\npoints = [[1.0, 0.5]]\nactuators = { x = \"vx\", y = \"vy\" }\nrepeat = false",
    );
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // One second at 0.5 m/s toward a point 1.1 m away, slowing over the last half metre.
    let end = text.split("ended at (").nth(1).expect(&text).split(')').next().unwrap();
    let xy: Vec<f64> = end.split(", ").map(|v| v.parse().unwrap()).collect();
    assert!(xy[0] > 0.3 && xy[0] < 1.0 && xy[1] > 0.15 && xy[1] < 0.5, "{text}");
    std::fs::write(dir.join("actions.csv"), "time,vx,wz\n0.0,0.3,0.0\n0.5,0.0,0.5\n").unwrap();
    let o = run("kind = \"replay\"\nactions = \"actions.csv\"");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(dir.join("actions.csv"), "time,vx\n0.0,abc\n").unwrap();
    let o = run("kind = \"replay\"\nactions = \"actions.csv\"");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success() && err.contains("actions.csv:2"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// The static ffmpeg that `scripts/python-deps.sh` installs (imageio-ffmpeg).
fn ffmpeg() -> String {
    python_ok("import imageio_ffmpeg; print(imageio_ffmpeg.get_ffmpeg_exe())").trim().to_string()
}

#[test]
fn video_proxies_are_h264_beside_the_parquet_and_optional_without_ffmpeg() {
    let _serial = serial();
    let dir = temp_dir("video");
    for f in ["showroom.xml", "showroom.toml"] {
        std::fs::copy(example(&format!("showroom/{f}")), dir.join(f)).unwrap();
    }
    let manifest = dir.join("showroom.toml");
    let text = std::fs::read_to_string(&manifest).unwrap();
    std::fs::write(
        &manifest,
        text.replacen("[recorder]", "[recorder]\nrecord_video_proxy = true\nvideo_colour_by = \"height\"", 1),
    )
    .unwrap();
    let m = manifest.to_str().unwrap();
    let run = |ffmpeg: &str, out: &str| {
        Command::new(env!("CARGO_BIN_EXE_glint"))
            .args(["run", m, "--seconds", "1", "--out", dir.join(out).to_str().unwrap()])
            .env("GLINT_FFMPEG", ffmpeg)
            .output()
            .unwrap()
    };
    let o = run(&ffmpeg(), "with");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let chunk = sessions(&dir.join("with"))[0].join("data/chunk-000");
    let mp4 = chunk.join("lidar-roof-000.mp4");
    assert!(chunk.join("lidar-roof-000.parquet").exists() && mp4.exists());
    // Decode it: an H.264 stream of 10 frames (one per revolution of the 10 Hz unit).
    let probe = Command::new(ffmpeg()).args(["-i", mp4.to_str().unwrap(), "-f", "null", "-"]).output().unwrap();
    let log = String::from_utf8_lossy(&probe.stderr);
    assert!(probe.status.success() && log.contains("Video: h264"), "{log}");
    assert!(log.contains("frame=   10") || log.contains("frame=10"), "{log}");
    // Without ffmpeg: one clear message, and the recording goes on.
    let o = run("/nonexistent/ffmpeg", "without");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{err}");
    assert_eq!(err.matches("ffmpeg was not found").count(), 1, "{err}");
    let chunk = sessions(&dir.join("without"))[0].join("data/chunk-000");
    assert!(chunk.join("lidar-roof-000.parquet").exists() && !chunk.join("lidar-roof-000.mp4").exists());
    std::fs::remove_dir_all(&dir).ok();
}

/// Peak memory a `glint run` reports for `seconds` of the showroom (one OS1-64 at 10 Hz).
fn peak_mb(seconds: &str, out: &Path) -> (f64, u64) {
    let o = glint(&["run", &example("showroom/showroom.toml"), "--seconds", seconds, "--out", out.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mb = text.split("peak memory ").nth(1).and_then(|t| t.split(' ').next()).expect(&text).parse().unwrap();
    let rows = text.split(" rows,").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    (mb, rows)
}

#[test]
fn memory_does_not_grow_with_episode_length() {
    let _serial = serial();
    let out = temp_dir("memory");
    // Each length's peak is the lowest of three runs, in case something else ran meanwhile.
    let mut peaks = Vec::new();
    for seconds in ["10", "60"] {
        let runs: Vec<(f64, u64)> = (0..3).map(|_| peak_mb(seconds, &out)).collect();
        eprintln!("{seconds} s: {runs:?} (MB, rows)");
        assert_eq!(runs[0].1, if seconds == "10" { 6_553_600 } else { 39_321_600 });
        peaks.push(runs.iter().map(|r| r.0).fold(f64::INFINITY, f64::min));
    }
    let (short, long) = (peaks[0], peaks[1]);
    assert!(long < 300.0, "{long} MB");
    assert!(long <= short * 1.1, "60 s peaks at {long} MB, 10 s at {short} MB");
    std::fs::remove_dir_all(&out).ok();
}
