//! `glint replay` on sessions recorded through glint-record directly: listing, metrics,
//! drawings, and the self-check of tampered, incomplete and foreign sessions.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use glint_core::RayCaster;
use glint_lidar::{LidarBinding, Lidars, NonRepetitive, ScanConfig, ScanPattern};
use glint_mujoco::{Model, WorldBatch};
use glint_record::{EpisodeStatus, Session, SessionInfo, TickData};

/// A wall east of a sensor whose site is turned 90° about +Z, so in the sensor frame the wall
/// lies along -Y. Nothing else: beams that miss the wall miss everything.
const WALL: &str = r#"
<mujoco>
  <worldbody>
    <geom name="wall" type="box" pos="4 0 1" size="0.1 4 3"/>
    <site name="lidar" pos="0 0 1" euler="0 0 90"/>
  </worldbody>
</mujoco>"#;

fn glint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_glint")).args(args).output().expect("glint runs")
}

fn text(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-replay-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Records two finished episodes (five 50 Hz ticks each) of a spinning sensor `front` and a
/// non-repetitive sensor `rosette` into a session in `out`; with `killed`, a third episode is
/// begun and never finished, as when the process dies.
fn record(out: &Path, killed: bool) -> PathBuf {
    let spinning = ScanConfig {
        channels: 8,
        azimuth_bins: 360,
        vfov_min_deg: -15.0,
        vfov_max_deg: 15.0,
        min_range: 0.1,
        max_range: 20.0,
        ..ScanConfig::default()
    };
    let rosette = ScanConfig {
        pattern: ScanPattern::NonRepetitive(NonRepetitive::RISLEY_DEFAULT),
        channels: 1,
        azimuth_bins: 600,
        ..spinning
    };
    let site = |name: &str, scan| LidarBinding {
        name: name.into(),
        attach_site: Some("lidar".into()),
        scan,
        ..LidarBinding::default()
    };
    let bindings = vec![site("front", spinning), site("rosette", rosette)];
    let model = Model::from_xml_str(WALL).unwrap();
    let batch = WorldBatch::new(&model, 1).unwrap();
    let (scene, poses) = (model.scene(), batch.poses());
    let caster = RayCaster::new(scene, poses);
    let (mut lidars, _) = Lidars::new(scene, bindings.clone(), 1).unwrap();
    let info = SessionInfo {
        manifest: "wall.toml".into(),
        manifest_text: String::new(),
        scene: "wall.xml".into(),
        seed: 1,
        episodes: 2,
        seconds_per_episode: 0.1,
        worlds: 1,
        physics_timestep: 0.002,
        lidar_runner_hz: 50.0,
        controller: "zero".into(),
        mujoco_version: Model::mujoco_version(),
        sensors: bindings,
    };
    let mut session = Session::create(out, &info).unwrap();
    let mut beams = Vec::new();
    for index in 0..if killed { 3 } else { 2 } {
        lidars.reset_world(0).unwrap();
        let mut episode = session.begin_episode(index, 0).unwrap();
        for tick in 1..=5 {
            let t = tick as f64 * 0.02;
            lidars.tick(scene, poses, &caster, 0.02, &[t], true).unwrap();
            for s in 0..2 {
                lidars.last_tick_beams(s, 0, &mut beams).unwrap();
                let (pos, rot) = lidars.frame(s, 0, poses).unwrap();
                let scan = lidars.scan(s, 0).unwrap();
                let tick = TickData { timestamp: t, scan, beams: &beams, sensor_rot: rot, sensor_pos: pos };
                episode.write_tick(s, &tick).unwrap();
            }
        }
        if index < 2 {
            episode.finish(EpisodeStatus::Complete, 0.1).unwrap();
        }
    }
    session.dir().to_path_buf()
}

#[test]
fn replay_lists_measures_draws_and_checks_a_session() {
    let out = temp_dir("ok");
    let session = record(&out, false);
    let s = session.to_str().unwrap();
    let o = glint(&["replay", s]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    for want in [
        "episode 0: 0.10 s, 5 ticks, complete",
        "episode 1: 0.10 s, 5 ticks, complete",
        "episode 0, sensor 0 'front' (data/chunk-000/lidar-front-000.parquet, complete):",
        "episode 1, sensor 1 'rosette'",
        "2880 rows in 5 ticks",
        "600 rows in 5 ticks",
        "range histogram (hits, 10 bins to max_range 20 m):",
        "channel coverage (share of beams with a hit):",
        "ch   7",
        "channel coverage: one channel",
        "data/chunk-000/lidar-front-001.parquet: OK",
        "data/chunk-000/lidar-rosette-000.parquet: OK",
        "4 files: 4 OK, 0 failed, 0 incomplete",
    ] {
        assert!(stdout.contains(want), "missing '{want}' in:\n{stdout}");
    }
    // The wall is 4 m away: every hit falls in the 2–4 m or 4–6 m bins, none past 6 m.
    let line = stdout.lines().find(|l| l.contains("hits (")).unwrap();
    let hits: u64 = line.split(" hits").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(hits > 100, "{line}");
    let far = stdout.lines().find(|l| l.trim_start().starts_with("6.0–8.0 m")).unwrap();
    assert_eq!(far.split_whitespace().nth(2), Some("0"), "{far}");

    // Drawings of two ticks of one sensor, in the sensor frame: the wall east of a site
    // turned 90° lies along -Y, a horizontal band in the top-down view.
    let png = out.join("png");
    let o = glint(&[
        "replay",
        s,
        "--png",
        png.to_str().unwrap(),
        "--episode",
        "0",
        "--sensor",
        "front",
        "--ticks",
        "0..5",
        "--colour-by",
        "channel",
        "--ramp",
        "heat",
        "--size",
        "256",
    ]);
    let (stdout, stderr) = text(&o);
    assert!(o.status.success(), "{stdout}\n{stderr}");
    assert!(!stdout.contains("episode 1, sensor"), "--episode 0 leaves episode 1 out: {stdout}");
    assert!(!stdout.contains("'rosette' ("), "--sensor front leaves rosette out: {stdout}");
    assert!(stdout.contains("4 files: 4 OK"), "the self-check covers every file: {stdout}");
    let top = image::open(png.join("lidar-front-000-top.png")).unwrap().to_rgb8();
    let lit: Vec<(u32, u32)> =
        top.enumerate_pixels().filter(|(_, _, p)| p.0 != [0, 0, 0]).map(|(c, r, _)| (c, r)).collect();
    assert!(lit.len() > 50);
    let spread = |v: Vec<u32>| v.iter().max().unwrap() - v.iter().min().unwrap();
    let (cols, rows) = (spread(lit.iter().map(|p| p.0).collect()), spread(lit.iter().map(|p| p.1).collect()));
    assert!(cols > 100 && rows < 40, "a band along the sensor's X: {cols} columns by {rows} rows");
    let range = image::open(png.join("lidar-front-000-range.png")).unwrap().to_rgb8();
    assert_eq!(range.dimensions(), (360, 64));
    assert!(range.pixels().any(|p| p.0 != [0, 0, 0]));
    let o = glint(&["replay", s, "--png", png.to_str().unwrap(), "--sensor", "rosette", "--ticks", "2"]);
    assert!(o.status.success(), "{}", text(&o).1);
    assert!(png.join("lidar-rosette-001-top.png").exists());
    assert!(!png.join("lidar-rosette-001-range.png").exists(), "no range image for a non-repetitive pattern");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn replay_fails_on_a_tampered_file_and_reports_a_killed_run() {
    let out = temp_dir("bad");
    let session = record(&out, true);
    let s = session.to_str().unwrap();
    let o = glint(&["replay", s]);
    let (stdout, stderr) = text(&o);
    assert!(!o.status.success(), "a .partial file fails the check: {stdout}");
    assert!(
        stdout.contains(
            "data/chunk-000/lidar-front-002.parquet.partial: incomplete (the run ended before finishing the episode): no complete row group to salvage"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("episode 2: incomplete (the run ended before finishing it; see `glint recover`)"),
        "{stdout}"
    );
    assert!(stdout.contains("6 files: 4 OK, 0 failed, 2 incomplete"), "{stdout}");
    assert!(stderr.contains("error: the session failed its self-check: 2 file(s) are incomplete"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // One byte changed in a finished file.
    let file = session.join("data/chunk-000/lidar-front-001.parquet");
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0xff;
    std::fs::write(&file, &bytes).unwrap();
    std::fs::remove_file(session.join("data/chunk-000/lidar-front-002.parquet.partial")).unwrap();
    std::fs::remove_file(session.join("data/chunk-000/lidar-rosette-002.parquet.partial")).unwrap();
    let o = glint(&["replay", s]);
    let (stdout, stderr) = text(&o);
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("data/chunk-000/lidar-front-001.parquet: hash mismatch"), "{stdout}");
    assert!(stdout.contains("data/chunk-000/lidar-front-000.parquet: OK"), "{stdout}");
    assert!(stdout.contains("4 files: 3 OK, 1 failed, 0 incomplete"), "{stdout}");
    assert!(stderr.contains("1 file(s) failed"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");

    // A sidecar that no longer matches its file's rows.
    let json = session.join("data/chunk-000/lidar-rosette-000.json");
    let edited = std::fs::read_to_string(&json).unwrap().replace("\"rows\": 600", "\"rows\": 601");
    std::fs::write(&json, edited).unwrap();
    let (stdout, _) = text(&glint(&["replay", s]));
    assert!(
        stdout.contains("lidar-rosette-000.parquet: row count mismatch (the sidecar says 601 rows, the file has 600)"),
        "{stdout}"
    );
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn replay_names_bad_input() {
    let out = temp_dir("input");
    let session = record(&out, false);
    let s = session.to_str().unwrap();
    let fails = |args: &[&str]| {
        let o = glint(args);
        let (_, stderr) = text(&o);
        assert!(!o.status.success(), "{args:?} should fail");
        assert!(!stderr.contains("panicked"), "{stderr}");
        stderr
    };
    let err = fails(&["replay", out.join("nothing").to_str().unwrap()]);
    assert!(err.contains("is not a glint recording session"), "{err}");
    let err = fails(&["replay", s, "--sensor", "rear"]);
    assert!(err.contains("no recorded sensor 'rear' (it has: front, rosette)"), "{err}");
    let err = fails(&["replay", s, "--episode", "9"]);
    assert!(err.contains("no episode 9 (recorded: 0, 1)"), "{err}");
    let err = fails(&["replay", s, "--ticks", "5..2"]);
    assert!(err.contains("tick range '5..2' is empty"), "{err}");
    let err = fails(&["replay", s, "--colour-by", "rainbow"]);
    assert!(err.contains("unknown colour mode 'rainbow'"), "{err}");
    std::fs::remove_dir_all(&out).ok();
}
