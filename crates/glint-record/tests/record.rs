//! Recording live lidar scans to a session and reading them back, with glint's reader and
//! with pyarrow (a reader that is not ours); the session self-check on damaged sessions.

use std::path::{Path, PathBuf};
use std::process::Command;

use glam::{DMat3, DVec3};
use glint_core::RayCaster;
use glint_lidar::{LidarBinding, Lidars, NonRepetitive, ScanConfig, ScanPattern, SecondaryCapture, SecondaryScope};
use glint_mujoco::{Model, WorldBatch};
use glint_record::{
    EpisodeStatus, FileProblem, ROW_GROUP_ROWS, RecordError, SalvageOutcome, Session, SessionInfo, TickData,
    check_session, partial_state, read_lidar_file, read_pose_file, read_sidecar, recover_session,
};

/// A room around a sensor head that turns on a hinge: a wall to the east, a glass pane in
/// front of a wall to the north, a mirror to the west, open to the south (upward beams miss).
const ROOM: &str = r#"
<mujoco>
  <asset>
    <material name="glass" rgba="1 1 1 0.3"/>
    <material name="mirror" rgba="0.8 0.8 0.8 1" reflectance="0.9"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="20 20 0.1"/>
    <geom name="wall_e" type="box" pos="5 0 1" size="0.1 5 2"/>
    <geom name="pane" type="box" pos="0 3 1" size="3 0.005 1" material="glass"/>
    <geom name="wall_n" type="box" pos="0 6 1" size="6 0.1 2"/>
    <geom name="mirror" type="box" pos="-4 0 1" size="0.01 2 1" material="mirror"/>
    <body name="head" pos="0 0 1">
      <joint name="yaw" type="hinge" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="0.1" diaginertia="0.001 0.001 0.001"/>
      <site name="lidar"/>
    </body>
  </worldbody>
</mujoco>"#;

const RUNNER_HZ: f64 = 50.0;

fn spinning() -> ScanConfig {
    ScanConfig {
        channels: 8,
        azimuth_bins: 360,
        rotation_hz: 10.0,
        vfov_min_deg: -15.0,
        vfov_max_deg: 15.0,
        min_range: 0.1,
        max_range: 30.0,
        ..ScanConfig::default()
    }
}

fn binding(name: &str, scan: ScanConfig, capture: SecondaryCapture) -> LidarBinding {
    LidarBinding {
        name: name.into(),
        attach_site: Some("lidar".into()),
        scan,
        secondary_capture: capture,
        secondary_scope: SecondaryScope::AllSurfaces,
        ..LidarBinding::default()
    }
}

fn info(sensors: Vec<LidarBinding>) -> SessionInfo {
    SessionInfo {
        manifest: "room.toml".into(),
        manifest_text: "scene = \"room.xml\"\n".into(),
        scene: "room.xml".into(),
        seed: 7,
        episodes: 1,
        seconds_per_episode: 0.1,
        worlds: 1,
        physics_timestep: 0.002,
        lidar_runner_hz: RUNNER_HZ,
        controller: "zero".into(),
        mujoco_version: Model::mujoco_version(),
        sensors,
    }
}

/// A fresh, empty folder for one test.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-record-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A secondary ray's live range, geom and world normal per beam of a tick.
type Secondary = (Vec<f32>, Vec<i32>, Vec<[f32; 3]>);

/// What the live scan said for one tick of one sensor: the beams, their clean values, the
/// sensor rotation and the time.
#[derive(Clone)]
struct Expected {
    time: f64,
    rot: DMat3,
    beams: Vec<u32>,
    range: Vec<f32>,
    geom: Vec<i32>,
    normal: Vec<[f32; 3]>,
    pass: Option<Secondary>,
    refl: Option<Secondary>,
}

/// A scene, its lidars and a recorder loop: the head turns 0.3 rad per tick.
struct Rig {
    model: Model,
    batch: WorldBatch,
    caster: RayCaster,
    lidars: Lidars,
}

impl Rig {
    fn new(bindings: Vec<LidarBinding>) -> Rig {
        let model = Model::from_xml_str(ROOM).unwrap();
        let batch = WorldBatch::new(&model, 1).unwrap();
        let caster = RayCaster::new(model.scene(), batch.poses());
        let (lidars, _) = Lidars::new(model.scene(), bindings, 1).unwrap();
        Rig { model, batch, caster, lidars }
    }

    /// Runs `ticks` lidar ticks, recording every sensor into `episode` (when given), and
    /// returns what the live scans held, per tick and sensor.
    fn run(&mut self, episode: Option<&mut glint_record::Episode>, ticks: usize) -> Vec<Vec<Expected>> {
        let mut episode = episode;
        let dt = 1.0 / RUNNER_HZ;
        let mut out = Vec::new();
        let mut beams = Vec::new();
        for tick in 1..=ticks {
            self.batch.set_qpos(0, &[0.3 * tick as f64]).unwrap();
            self.caster.refit(self.batch.poses());
            let t = tick as f64 * dt;
            let scene = self.model.scene();
            self.lidars.tick(scene, self.batch.poses(), &self.caster, dt, &[t], true).unwrap();
            let mut per_sensor = Vec::new();
            for s in 0..self.lidars.len() {
                self.lidars.last_tick_beams(s, 0, &mut beams).unwrap();
                let (pos, rot) = self.lidars.frame(s, 0, self.batch.poses()).unwrap();
                let scan = self.lidars.scan(s, 0).unwrap();
                if let Some(e) = episode.as_deref_mut() {
                    let tick = TickData { timestamp: t, scan, beams: &beams, sensor_rot: rot, sensor_pos: pos };
                    e.write_tick(s, &tick).unwrap();
                }
                let pick = |h: &glint_lidar::SecondaryHits| {
                    (
                        beams.iter().map(|&k| h.range[k as usize]).collect(),
                        beams.iter().map(|&k| h.geomid[k as usize]).collect(),
                        beams.iter().map(|&k| h.normal[k as usize]).collect(),
                    )
                };
                per_sensor.push(Expected {
                    time: t,
                    rot,
                    beams: beams.clone(),
                    range: beams.iter().map(|&k| scan.range[k as usize]).collect(),
                    geom: beams.iter().map(|&k| scan.geomid[k as usize]).collect(),
                    normal: beams.iter().map(|&k| scan.surfaces.as_ref().unwrap().normal[k as usize]).collect(),
                    pass: scan.pass_through.as_ref().map(pick),
                    refl: scan.reflected.as_ref().map(pick),
                });
            }
            out.push(per_sensor);
        }
        out
    }
}

/// The id of the geom called `name`.
fn geom(rig: &Rig, name: &str) -> i32 {
    rig.model.scene().geom_name.iter().position(|n| n == name).unwrap() as i32
}

fn to_sensor(rot: &DMat3, n: [f32; 3]) -> [f32; 3] {
    let v = rot.transpose() * DVec3::new(n[0] as f64, n[1] as f64, n[2] as f64);
    [v.x as f32, v.y as f32, v.z as f32]
}

fn close3(a: [f32; 3], b: [f32; 3]) -> bool {
    (0..3).all(|i| (a[i] - b[i]).abs() < 1e-5)
}

/// The repository's pinned Python with pyarrow, installed by `make test`.
fn python() -> PathBuf {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", ".deps", "venv", "bin", "python"].iter().collect();
    assert!(p.exists(), "{} is missing: run `make test`, which installs the pinned Python packages", p.display());
    p
}

/// A session of `bindings` in a new folder `tag`, with episode 0 recorded (5 ticks) and
/// finished.
fn session_with_episode(tag: &str, bindings: Vec<LidarBinding>) -> (PathBuf, Rig, Session) {
    let out = temp_dir(tag);
    let mut rig = Rig::new(bindings.clone());
    let mut session = Session::create(&out, &info(bindings)).unwrap();
    let mut episode = session.begin_episode(0, 0).unwrap();
    rig.run(Some(&mut episode), 5);
    episode.finish(EpisodeStatus::Complete, 0.1).unwrap();
    (out, rig, session)
}

/// Runs a Python script and returns its standard output.
fn pyarrow(script: &str) -> String {
    let out = Command::new(python()).args(["-c", script]).output().expect("python runs");
    assert!(out.status.success(), "pyarrow failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The rows of one file, checked against what the live scans held tick by tick.
fn check_rows(path: &Path, expected: &[Expected], channels: u32) {
    let t = read_lidar_file(path).unwrap();
    let rows: usize = expected.iter().map(|e| e.beams.len()).sum();
    assert_eq!(t.len(), rows, "{}", path.display());
    let mut r = 0;
    for e in expected {
        for (j, &k) in e.beams.iter().enumerate() {
            assert_eq!(t.timestamp[r], e.time, "row {r}: every ray of a tick shares its time");
            // The seed's index = bin * channels + channel, for every pattern.
            let (bin, channel) = (k / channels, k % channels);
            assert_eq!((t.bin[r] as u32, t.channel[r] as u32), (bin, channel), "row {r} beam {k}");
            assert_eq!(t.range[r], e.range[j], "row {r}: the live clean range");
            assert_eq!(t.geom_id[r], e.geom[j], "row {r}");
            let hit = e.geom[j] >= 0 && e.range[j] >= 0.0;
            assert_eq!(t.hit[r], hit as u8, "row {r}");
            if hit {
                assert!(close3(t.normal[r], to_sensor(&e.rot, e.normal[j])), "row {r}: sensor-frame normal");
            } else {
                assert_eq!((t.range[r], t.geom_id[r], t.normal[r]), (-1.0, -1, [0.0; 3]), "row {r}: a miss");
            }
            for (cols, live) in [(&t.pass_through, &e.pass), (&t.reflected, &e.refl)] {
                if let (Some(c), Some((range, geom, normal))) = (cols, live) {
                    assert_eq!((c.range[r], c.geom_id[r]), (range[j], geom[j]), "row {r}: secondary");
                    assert!(close3(c.normal[r], to_sensor(&e.rot, normal[j])), "row {r}: secondary normal");
                }
            }
            r += 1;
        }
    }
}

#[test]
fn a_recorded_episode_reads_back_with_glint_and_pyarrow() {
    let out = temp_dir("basic");
    let b = binding("front lidar", spinning(), SecondaryCapture::Off);
    let mut rig = Rig::new(vec![b.clone()]);
    let mut session = Session::create(&out, &info(vec![b])).unwrap();
    let mut episode = session.begin_episode(0, 0).unwrap();
    let partial = session.dir().join("data/chunk-000/lidar-front_lidar-000.parquet.partial");
    assert!(partial.exists(), "written as .partial while the episode runs");
    let expected = rig.run(Some(&mut episode), 5);
    let summary = episode.finish(EpisodeStatus::Complete, 0.1).unwrap();
    assert!(!partial.exists());

    // A 10 Hz spinner on a 50 Hz runner casts 72 of its 360 bins per tick: 5 ticks are one
    // revolution, and every (bin, channel) appears once.
    let file = session.dir().join("data/chunk-000/lidar-front_lidar-000.parquet");
    assert_eq!(summary.sensors[0].path, file);
    assert_eq!(summary.sensors[0].rows, 5 * 72 * 8);
    assert_eq!(summary.ticks, 5);
    let misses = expected.iter().flat_map(|e| &e[0].range).filter(|&&r| r < 0.0).count();
    assert!(misses > 100 && misses < 2000, "the room should give both hits and misses ({misses} misses)");
    assert_eq!(summary.sensors[0].hits, 2880 - misses as u64);
    let per_sensor: Vec<Expected> = expected.iter().map(|e| e[0].clone()).collect();
    check_rows(&file, &per_sensor, 8);
    let t = read_lidar_file(&file).unwrap();
    let mut seen: Vec<(u16, u16)> = t.bin.iter().copied().zip(t.channel.iter().copied()).collect();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen.len(), 2880);
    assert!(t.pass_through.is_none() && t.reflected.is_none());

    // The east wall faces -X in the world; as the head turns, its normal in the sensor frame
    // turns the other way.
    let wall_e = geom(&rig, "wall_e");
    let (e0, e4) = (&per_sensor[0], &per_sensor[4]);
    let r = e0.geom.iter().position(|&g| g == wall_e).unwrap();
    let yaw = 0.3f64;
    assert!(close3(t.normal[r], [-(yaw.cos()) as f32, yaw.sin() as f32, 0.0]), "{:?}", t.normal[r]);
    let r4 = 4 * 576 + e4.geom.iter().position(|&g| g == wall_e).unwrap();
    let yaw = 1.5f64;
    assert!(close3(t.normal[r4], [-(yaw.cos()) as f32, yaw.sin() as f32, 0.0]), "{:?}", t.normal[r4]);

    // The same file through pyarrow: exact schema, row count, misses, shared timestamps,
    // zstd compression and statistics.
    let script = format!(
        "import pyarrow.parquet as pq, pyarrow as pa, numpy as np\n\
         f = pq.ParquetFile(r'{file}')\n\
         t = f.read()\n\
         want = [('timestamp', pa.float64()), ('bin', pa.uint16()), ('channel', pa.uint16()), ('range', pa.float32()),\n\
                 ('geom_id', pa.int32()), ('hit', pa.uint8()), ('normal_x', pa.float32()), ('normal_y', pa.float32()),\n\
                 ('normal_z', pa.float32())]\n\
         got = [(x.name, x.type) for x in t.schema]\n\
         assert got == want, got\n\
         r, g, h = t['range'].to_numpy(), t['geom_id'].to_numpy(), t['hit'].to_numpy()\n\
         assert np.all((r == -1.0) == (g == -1)) and np.all((h == 1) == (g >= 0))\n\
         n = np.stack([t['normal_' + a].to_numpy() for a in 'xyz'], 1)\n\
         assert np.all(n[h == 0] == 0) and np.allclose(np.linalg.norm(n[h == 1], axis=1), 1, atol=1e-5)\n\
         ts = t['timestamp'].to_numpy()\n\
         assert sorted(set(ts.round(9))) == [0.02, 0.04, 0.06, 0.08, 0.1], set(ts)\n\
         assert all((ts == v).sum() == 576 for v in set(ts))\n\
         col = f.metadata.row_group(0).column(3)\n\
         assert col.compression == 'ZSTD', col.compression\n\
         assert col.statistics is not None and col.statistics.has_min_max and col.statistics.min == -1.0\n\
         st = [f.metadata.row_group(0).column(c).statistics for c in range(9)]\n\
         assert [i for i, s in enumerate(st) if s is not None and s.has_min_max] == [0, 1, 2, 3, 4], st\n\
         print(t.num_rows, int(h.sum()))",
        file = file.display()
    );
    let printed = pyarrow(&script);
    assert_eq!(printed.trim(), format!("2880 {}", 2880 - misses));

    // The sidecar and the session's meta files.
    let sidecar = read_sidecar(&file.with_extension("json")).unwrap();
    assert_eq!((sidecar.rows, sidecar.episode, sidecar.sensor.index), (2880, 0, 0));
    assert_eq!(sidecar.sensor.name, "front lidar");
    assert_eq!(sidecar.sensor.file_name, "front_lidar");
    assert_eq!(sidecar.sha256, summary.sensors[0].sha256);
    assert_eq!(sidecar.tick_hz, RUNNER_HZ);
    assert_eq!(sidecar.sensor.scan, spinning());
    assert_eq!(sidecar.pattern.kind, "spinning");
    assert_eq!(sidecar.beam_count, 2880);
    let names: Vec<&str> = sidecar.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["timestamp", "bin", "channel", "range", "geom_id", "hit", "normal_x", "normal_y", "normal_z"]);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(file.with_extension("json")).unwrap()).unwrap();
    for key in ["self_ignore", "pattern", "channels", "azimuth_bins", "rotation_hz", "geom_group_mask", "max_range"] {
        assert!(json["sensor"]["scan"].get(key).is_some(), "sidecar scan lacks {key}: {json}");
    }
    assert_eq!(json["sensor"]["scan"]["self_ignore"], "mount-body");
    assert_eq!(json["sensor"]["attach_site"], "lidar");
    assert_eq!(json["sensor"]["secondary_capture"], "off");
    assert_eq!(json["columns"][3]["unit"], "m");
    assert_eq!(json["columns"][0]["type"], "float64");
    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(session.dir().join("meta/info.json")).unwrap()).unwrap();
    assert_eq!(info["glint_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!((info["seed"].as_u64(), info["lidar_runner_hz"].as_f64()), (Some(7), Some(RUNNER_HZ)));
    assert_eq!(info["manifest_text"], "scene = \"room.xml\"\n");
    assert_eq!(info["sensors"][0]["scan"]["channels"], 8);
    let log = std::fs::read_to_string(session.dir().join("meta/episodes.jsonl")).unwrap();
    let line: serde_json::Value = serde_json::from_str(log.trim()).unwrap();
    assert_eq!(line["status"], "complete");
    assert_eq!(
        (line["index"].as_u64(), line["ticks"].as_u64(), line["length_s"].as_f64()),
        (Some(0), Some(5), Some(0.1))
    );
    assert_eq!(line["files"][0], "data/chunk-000/lidar-front_lidar-000.parquet");

    let report = check_session(session.dir()).unwrap();
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.files.len(), 1);
    assert_eq!(report.episodes[0].status, "complete");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn secondary_columns_appear_only_when_captured() {
    let out = temp_dir("secondary");
    let captures =
        [SecondaryCapture::Off, SecondaryCapture::PassThrough, SecondaryCapture::Reflected, SecondaryCapture::Both];
    let names = ["off", "pass", "refl", "both"];
    let bindings: Vec<LidarBinding> = captures.iter().zip(names).map(|(&c, n)| binding(n, spinning(), c)).collect();
    let mut rig = Rig::new(bindings.clone());
    let mut session = Session::create(&out, &info(bindings)).unwrap();
    let mut episode = session.begin_episode(3, 0).unwrap();
    let expected = rig.run(Some(&mut episode), 5);
    episode.finish(EpisodeStatus::Complete, 0.1).unwrap();

    let pane = geom(&rig, "pane");
    let wall_n = geom(&rig, "wall_n");
    for (s, name) in names.iter().enumerate() {
        let file = session.dir().join(format!("data/chunk-000/lidar-{name}-003.parquet"));
        let per_sensor: Vec<Expected> = expected.iter().map(|e| e[s].clone()).collect();
        check_rows(&file, &per_sensor, 8);
        let t = read_lidar_file(&file).unwrap();
        let (pass, refl) = (matches!(s, 1 | 3), matches!(s, 2 | 3));
        assert_eq!((t.pass_through.is_some(), t.reflected.is_some()), (pass, refl), "{name}");
        if let Some(p) = &t.pass_through {
            // Beams through the pane see the north wall behind it, metres from the sensor.
            let through: Vec<usize> = (0..t.len()).filter(|&r| t.geom_id[r] == pane).collect();
            assert!(!through.is_empty());
            assert!(through.iter().any(|&r| p.geom_id[r] == wall_n && p.range[r] > t.range[r]));
        }
        if let Some(f) = &t.reflected {
            assert!(f.geom_id.iter().any(|&g| g >= 0), "the mirror folds some beams onto a surface");
            assert!((0..t.len()).all(|r| t.hit[r] == 1 || f.range[r] == -1.0));
        }
        let mut want =
            vec!["timestamp", "bin", "channel", "range", "geom_id", "hit", "normal_x", "normal_y", "normal_z"];
        let five =
            |p: &'static str| ["range", "geom_id", "normal_x", "normal_y", "normal_z"].map(|c| format!("{p}_{c}"));
        let extra: Vec<String> =
            [(pass, "sec"), (refl, "refl")].iter().filter(|(on, _)| *on).flat_map(|&(_, p)| five(p)).collect();
        want.extend(extra.iter().map(String::as_str));
        let script = format!(
            "import pyarrow.parquet as pq\n\
             s = pq.read_schema(r'{}')\n\
             print(','.join(f'{{x.name}}:{{x.type}}' for x in s))",
            file.display()
        );
        let printed = pyarrow(&script);
        let got: Vec<&str> = printed.trim().split(',').map(|c| c.split(':').next().unwrap()).collect();
        assert_eq!(got, want, "{name}");
        for col in printed.trim().split(',') {
            let (n, ty) = col.split_once(':').unwrap();
            if n.ends_with("range") || n.contains("normal") {
                assert_eq!(ty, "float", "{n}");
            } else if n.ends_with("geom_id") {
                assert_eq!(ty, "int32", "{n}");
            }
        }
        let sidecar = read_sidecar(&file.with_extension("json")).unwrap();
        assert_eq!(sidecar.columns.len(), want.len());
        assert_eq!(sidecar.sensor.secondary_capture, captures[s]);
    }
    assert!(check_session(session.dir()).unwrap().ok());
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn non_repetitive_rows_split_the_emission_index() {
    let out = temp_dir("nonrep");
    let scan = ScanConfig {
        pattern: ScanPattern::NonRepetitive(NonRepetitive::RISLEY_DEFAULT),
        channels: 1,
        azimuth_bins: 1000,
        rotation_hz: 10.0,
        ..spinning()
    };
    let b = binding("", scan, SecondaryCapture::Off);
    let mut rig = Rig::new(vec![b.clone()]);
    // Bindings without a name record as lidar<index> (Lidars would name it after the site).
    let mut session = Session::create(&out, &info(vec![b])).unwrap();
    let mut episode = session.begin_episode(0, 0).unwrap();
    // Seven ticks of 200 points: past the end of the first cycle and into the second.
    let expected = rig.run(Some(&mut episode), 7);
    episode.finish(EpisodeStatus::Complete, 0.14).unwrap();
    let file = session.dir().join("data/chunk-000/lidar-lidar0-000.parquet");
    let per_sensor: Vec<Expected> = expected.iter().map(|e| e[0].clone()).collect();
    check_rows(&file, &per_sensor, 1);
    let t = read_lidar_file(&file).unwrap();
    assert_eq!(t.len(), 1400);
    assert_eq!((t.bin[999], t.channel[999]), (999, 0), "e = 999 = 999 * channels + 0 with channels = 1");
    assert_eq!((t.bin[1000], t.channel[1000]), (0, 0), "the second cycle starts again at e = 0");
    let sidecar = read_sidecar(&file.with_extension("json")).unwrap();
    assert_eq!(sidecar.pattern.kind, "non-repetitive");
    assert_eq!(sidecar.pattern.emission_split, Some(1));
    assert!(sidecar.pattern.beam_index.contains("e = bin * 1 + channel"), "{}", sidecar.pattern.beam_index);
    let beams = sidecar.beams.as_ref().unwrap();
    assert_eq!((beams.cycles, beams.rows), (2, 2000), "1400 emissions of a 1000-point pattern reach two cycles");
    assert!(sidecar.pattern.bin.contains("not an angle") && sidecar.pattern.channel.contains("low part"));
    assert!(sidecar.columns[1].meaning.contains("High part"));
    assert_eq!(sidecar.sensor.scan, scan);
    let text = std::fs::read_to_string(file.with_extension("json")).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["sensor"]["scan"]["pattern"], "risley");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn an_interrupted_episode_is_readable_and_marked() {
    let (out, mut rig, mut session) =
        session_with_episode("interrupted", vec![binding("front", spinning(), SecondaryCapture::Off)]);
    let mut episode = session.begin_episode(1, 0).unwrap();
    let expected = rig.run(Some(&mut episode), 2);
    let summary = episode.finish(EpisodeStatus::Interrupted, 0.04).unwrap();
    assert_eq!(summary.status, EpisodeStatus::Interrupted);
    let file = session.dir().join("data/chunk-000/lidar-front-001.parquet");
    let per_sensor: Vec<Expected> = expected.iter().map(|e| e[0].clone()).collect();
    check_rows(&file, &per_sensor, 8);
    assert_eq!(read_sidecar(&file.with_extension("json")).unwrap().status, "interrupted");
    let report = check_session(session.dir()).unwrap();
    assert!(report.ok(), "{report:?}");
    let statuses: Vec<(u32, &str)> = report.episodes.iter().map(|e| (e.index, e.status.as_str())).collect();
    assert_eq!(statuses, [(0, "complete"), (1, "interrupted")]);
    // An episode index is recorded once.
    let err = session.begin_episode(1, 0).unwrap_err();
    assert!(matches!(err, RecordError::EpisodeExists { index: 1, .. }), "{err}");
    assert!(err.to_string().contains("episode 1 is already recorded"), "{err}");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn a_killed_run_leaves_a_partial_file_the_check_reports() {
    let (out, mut rig, mut session) =
        session_with_episode("partial", vec![binding("front", spinning(), SecondaryCapture::Off)]);
    let mut episode = session.begin_episode(1, 0).unwrap();
    rig.run(Some(&mut episode), 3);
    drop(episode); // the process dies: nothing finishes the file
    let partial = session.dir().join("data/chunk-000/lidar-front-001.parquet.partial");
    assert!(partial.exists());
    let report = check_session(session.dir()).unwrap();
    assert!(!report.ok());
    assert_eq!(report.partial, [PathBuf::from("data/chunk-000/lidar-front-001.parquet.partial")]);
    assert_eq!(report.files.len(), 1);
    assert!(report.files[0].ok(), "{:?}", report.files[0]);
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.episodes.len(), 1, "the killed episode has no log line");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn the_check_finds_tampered_foreign_and_mismatched_files() {
    let bindings = ["a", "b", "c", "d"].map(|name| binding(name, spinning(), SecondaryCapture::Off)).to_vec();
    let (out, _, session) = session_with_episode("tamper", bindings);
    let chunk = session.dir().join("data/chunk-000");
    assert!(check_session(session.dir()).unwrap().ok());

    // a: one byte changed in the middle of the file.
    let a = chunk.join("lidar-a-000.parquet");
    let mut bytes = std::fs::read(&a).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&a, &bytes).unwrap();
    // b: the sidecar claims another row count.
    let b_json = chunk.join("lidar-b-000.json");
    let text = std::fs::read_to_string(&b_json).unwrap().replacen("\"rows\": 2880", "\"rows\": 3000", 1);
    std::fs::write(&b_json, text).unwrap();
    // c: the sidecar claims pass-through columns the file does not have.
    let c_json = chunk.join("lidar-c-000.json");
    let text = std::fs::read_to_string(&c_json)
        .unwrap()
        .replace("\"secondary_capture\": \"off\"", "\"secondary_capture\": \"pass-through\"");
    std::fs::write(&c_json, text).unwrap();
    // d: replaced by a foreign file.
    let d = chunk.join("lidar-d-000.parquet");
    std::fs::write(&d, "timestamp,range\n0.0,1.0\n").unwrap();

    let report = check_session(session.dir()).unwrap();
    assert!(!report.ok());
    let problems = |name: &str| -> Vec<FileProblem> {
        report.files.iter().find(|f| f.path.ends_with(name)).unwrap().problems.clone()
    };
    let pa = problems("lidar-a-000.parquet");
    assert!(pa.iter().any(|p| matches!(p, FileProblem::Hash { .. })), "{pa:?}");
    assert!(pa.iter().all(|p| !matches!(p, FileProblem::RowCount { .. })), "{pa:?}");
    assert!(pa[0].to_string().contains("hash mismatch"), "{}", pa[0]);
    let pb = problems("lidar-b-000.parquet");
    assert_eq!(pb, [FileProblem::RowCount { sidecar: 3000, file: 2880 }]);
    assert!(pb[0].to_string().contains("row count mismatch"));
    let pc = problems("lidar-c-000.parquet");
    assert_eq!(pc.len(), 1, "{pc:?}");
    assert!(pc[0].to_string().starts_with("schema mismatch") && pc[0].to_string().contains("sec_range"), "{}", pc[0]);
    let pd = problems("lidar-d-000.parquet");
    assert!(pd.iter().any(|p| matches!(p, FileProblem::Unreadable(_))), "{pd:?}");
    assert!(pd.iter().any(|p| matches!(p, FileProblem::Hash { .. })), "{pd:?}");

    // Readers name the file and what is wrong, and never panic.
    let err = read_lidar_file(&d).unwrap_err().to_string();
    assert!(err.contains("lidar-d-000.parquet") && err.contains("not a readable Parquet file"), "{err}");
    let missing = chunk.join("lidar-z-000.parquet");
    let err = read_lidar_file(&missing).unwrap_err().to_string();
    assert!(err.contains("cannot open") && err.contains("lidar-z-000.parquet"), "{err}");
    let err = read_sidecar(&chunk.join("lidar-z-000.json")).unwrap_err().to_string();
    assert!(err.contains("lidar-z-000.json"), "{err}");
    std::fs::write(chunk.join("lidar-d-000.json"), "{\"format_version\": 1").unwrap();
    let err = read_sidecar(&chunk.join("lidar-d-000.json")).unwrap_err().to_string();
    assert!(err.contains("is not a valid glint sidecar"), "{err}");
    // A Parquet file of other columns is foreign to the reader.
    let foreign = out.join("foreign.parquet");
    pyarrow(&format!(
        "import pyarrow as pa, pyarrow.parquet as pq\n\
         pq.write_table(pa.table({{'timestamp': pa.array([0.0]), 'intensity': pa.array([1.0])}}), r'{}')",
        foreign.display()
    ));
    let err = read_lidar_file(&foreign).unwrap_err().to_string();
    assert!(err.contains("does not have glint's lidar schema") && err.contains("'intensity'"), "{err}");
    // Not a session at all.
    let err = check_session(&out.join("nowhere")).unwrap_err().to_string();
    assert!(err.contains("is not a glint recording session"), "{err}");
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn sessions_never_reuse_a_folder_and_reject_bad_input() {
    let out = temp_dir("sessions");
    let b = binding("front", spinning(), SecondaryCapture::Off);
    let first = Session::create(&out, &info(vec![b.clone()])).unwrap();
    let second = Session::create(&out, &info(vec![b.clone()])).unwrap();
    let third = Session::create(&out, &info(vec![b.clone()])).unwrap();
    let name = |s: &Session| s.dir().file_name().unwrap().to_string_lossy().into_owned();
    let (n1, n2, n3) = (name(&first), name(&second), name(&third));
    assert!(n1.starts_with("session_") && n1.len() == "session_20250101_120000".len(), "{n1}");
    assert!(n1 != n2 && n2 != n3 && n1 != n3);
    // Within one second the stamp repeats and a suffix tells the sessions apart.
    if n2.starts_with(&n1) {
        assert_eq!(n2, format!("{n1}_2"));
    }
    for s in [&first, &second, &third] {
        assert!(s.dir().join("meta/info.json").exists() && s.dir().join("meta/episodes.jsonl").exists());
    }

    // Two bindings that would share file names.
    let err = Session::create(&out, &info(vec![b.clone(), binding("front", spinning(), SecondaryCapture::Off)]))
        .unwrap_err()
        .to_string();
    assert!(err.contains("lidar sensors 0 and 1") && err.contains("distinct names"), "{err}");
    let mut bad = info(vec![b.clone()]);
    bad.lidar_runner_hz = 0.0;
    assert!(Session::create(&out, &bad).unwrap_err().to_string().contains("lidar_runner_hz"));

    // Ticks that do not fit the recorded binding.
    let mut rig = Rig::new(vec![b.clone()]);
    rig.run(None, 1);
    let mut session = Session::create(&out, &info(vec![b])).unwrap();
    let mut episode = session.begin_episode(0, 0).unwrap();
    let scan = rig.lidars.scan(0, 0).unwrap();
    let rot = DMat3::IDENTITY;
    let tick =
        |beams: &'static [u32]| TickData { timestamp: 0.02, scan, beams, sensor_rot: rot, sensor_pos: DVec3::ZERO };
    let err = episode.write_tick(1, &tick(&[0])).unwrap_err().to_string();
    assert!(err.contains("lidar sensor 1 is not recorded in this session (1 sensors are)"), "{err}");
    let err = episode.write_tick(0, &tick(&[0, 99_999])).unwrap_err().to_string();
    assert!(err.contains("beam 99999 does not exist (the sensor has 2880 beams)"), "{err}");
    let mut other = rig.lidars.clone();
    other.set_secondary_capture(0, SecondaryCapture::Off, SecondaryScope::AllSurfaces).unwrap();
    let mut wide = spinning();
    wide.azimuth_bins = 100;
    other.set_config(0, wide).unwrap();
    let short = other.scan(0, 0).unwrap();
    let err = episode
        .write_tick(0, &TickData { timestamp: 0.0, scan: short, beams: &[0], sensor_rot: rot, sensor_pos: DVec3::ZERO })
        .unwrap_err()
        .to_string();
    assert!(err.contains("the scan has 800 beams, and the recorded binding has 2880"), "{err}");
    let err = episode
        .write_tick(0, &TickData { timestamp: f64::NAN, scan, beams: &[0], sensor_rot: rot, sensor_pos: DVec3::ZERO })
        .unwrap_err()
        .to_string();
    assert!(err.contains("timestamp"), "{err}");
    let mut lean = rig.lidars.clone();
    lean.set_keep_surfaces(false);
    let lean = lean.scan(0, 0).unwrap();
    let err = episode
        .write_tick(0, &TickData { timestamp: 0.02, scan: lean, beams: &[0], sensor_rot: rot, sensor_pos: DVec3::ZERO })
        .unwrap_err()
        .to_string();
    assert!(err.contains("keeps no hit normals") && err.contains("set_keep_surfaces"), "{err}");
    // Nothing was written by the rejected ticks.
    let summary = episode.finish(EpisodeStatus::Complete, 0.0).unwrap();
    assert_eq!(summary.sensors[0].rows, 0);
    assert_eq!(read_lidar_file(&summary.sensors[0].path).unwrap().len(), 0);

    // A session that records pass-through needs scans that carry it.
    let pass = binding("front", spinning(), SecondaryCapture::PassThrough);
    let mut session = Session::create(&out, &info(vec![pass])).unwrap();
    let mut episode = session.begin_episode(0, 0).unwrap();
    let err = episode.write_tick(0, &tick(&[0])).unwrap_err().to_string();
    assert!(err.contains("records pass-through geometry, and the scan has none"), "{err}");
    std::fs::remove_dir_all(&out).ok();
}

/// Records five ticks of a synthetic spinning scan with pass-through geometry into a new
/// session under `out`; returns the file's SHA-256 from its sidecar.
fn record_synthetic(out: &Path) -> String {
    let b = binding("front", spinning(), SecondaryCapture::PassThrough);
    let beams = b.scan.beam_count() as u32;
    let mut session = Session::create(out, &info(vec![b])).unwrap();
    let mut episode = session.begin_episode(0, 0).unwrap();
    let mut scan = glint_lidar::Scan::default();
    let mut surfaces = glint_lidar::Surfaces::default();
    let mut pass = glint_lidar::SecondaryHits::default();
    for k in 0..beams {
        let hit = k % 5 != 0;
        scan.range.push(if hit { 1.0 + k as f32 * 1e-3 } else { -1.0 });
        scan.geomid.push(if hit { (k % 7) as i32 } else { -1 });
        surfaces.point.push([0.0; 3]);
        surfaces.normal.push(if hit { [0.0, 0.6, 0.8] } else { [0.0; 3] });
        pass.range.push(if k % 3 == 0 { 5.0 } else { -1.0 });
        pass.geomid.push(if k % 3 == 0 { 2 } else { -1 });
        pass.normal.push(if k % 3 == 0 { [1.0, 0.0, 0.0] } else { [0.0; 3] });
    }
    scan.pass_through = Some(pass);
    scan.surfaces = Some(surfaces);
    let per_tick = beams / 5;
    for t in 0..5u32 {
        let slice: Vec<u32> = (t * per_tick..(t + 1) * per_tick).collect();
        let rot = DMat3::from_rotation_z(0.3 * t as f64);
        let tick = TickData {
            timestamp: 0.02 * (t + 1) as f64,
            scan: &scan,
            beams: &slice,
            sensor_rot: rot,
            sensor_pos: DVec3::ZERO,
        };
        episode.write_tick(0, &tick).unwrap();
    }
    let file = episode.path(0).unwrap().to_path_buf();
    episode.finish(EpisodeStatus::Complete, 0.1).unwrap();
    assert!(check_session(session.dir()).unwrap().ok());
    read_sidecar(&file.with_extension("json")).unwrap().sha256
}

#[test]
fn recording_from_a_pool_thread_writes_the_same_file() {
    // The writer encodes each tick as a task on the rayon pool; called from a pool thread (a
    // one-thread pool here, where waiting for such a task would hang) it encodes in place.
    let out = temp_dir("pool-thread");
    let outside = record_synthetic(&out.join("outside"));
    let pool = rayon::ThreadPoolBuilder::new().num_threads(1).build().unwrap();
    let inside = pool.install(|| record_synthetic(&out.join("inside")));
    assert_eq!(inside, outside);
    std::fs::remove_dir_all(&out).ok();
}

/// Writes `ticks` ticks of a synthetic 65 536-beam scan (every beam each tick) into episode 0
/// of a new session under `out`, finishing the episode or, with `kill`, dropping it as a dying
/// process would. Returns the session folder.
fn record_long(out: &Path, ticks: u32, kill: bool) -> PathBuf {
    let scan_config = ScanConfig { channels: 64, azimuth_bins: 1024, ..spinning() };
    let b = binding("front", scan_config, SecondaryCapture::Off);
    let beams = b.scan.beam_count() as u32;
    let mut session = Session::create(out, &info(vec![b])).unwrap();
    let mut episode = session.begin_episode(0, 0).unwrap();
    let mut scan = glint_lidar::Scan::default();
    let all: Vec<u32> = (0..beams).collect();
    for t in 0..ticks {
        scan.range =
            (0..beams).map(|k| if (k + t) % 5 == 0 { -1.0 } else { 1.0 + ((k * 7 + t) % 997) as f32 * 1e-2 }).collect();
        scan.geomid = (0..beams).map(|k| if (k + t) % 5 == 0 { -1 } else { ((k + t) % 11) as i32 }).collect();
        let n = beams as usize;
        scan.surfaces = Some(glint_lidar::Surfaces { point: vec![[0.0; 3]; n], normal: vec![[0.0, 0.6, 0.8]; n] });
        let time = (t + 1) as f64 / RUNNER_HZ;
        let tick = TickData {
            timestamp: time,
            scan: &scan,
            beams: &all,
            sensor_rot: DMat3::from_rotation_z(0.01 * t as f64),
            sensor_pos: DVec3::new(0.1 * t as f64, 0.0, 1.0),
        };
        episode.write_tick(0, &tick).unwrap();
    }
    if kill {
        drop(episode);
    } else {
        episode.finish(EpisodeStatus::Complete, ticks as f64 / RUNNER_HZ).unwrap();
    }
    session.dir().to_path_buf()
}

#[test]
fn a_dropped_episode_is_recovered_up_to_its_last_whole_journalled_row_group() {
    let out = temp_dir("recover");
    // 40 ticks of 65 536 rows: two full row groups and a half-full one in memory.
    let finished = record_long(&out.join("finished"), 40, false);
    let killed = record_long(&out.join("killed"), 40, true);
    let chunk = killed.join("data/chunk-000");
    let partial = chunk.join("lidar-front-000.parquet.partial");
    let journal = chunk.join("lidar-front-000.parquet.partial.groups");
    assert!(partial.exists() && journal.exists() && chunk.join("lidar-front-000.poses.parquet.partial.ticks").exists());
    let state = partial_state(&partial).unwrap();
    assert_eq!((state.row_groups, state.rows), (2, 2 * ROW_GROUP_ROWS as u64));
    // A record torn by the end of the run is ignored: the row group before it still counts.
    let len = std::fs::metadata(&journal).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(&journal).unwrap().set_len(len - 10).unwrap();
    let state = partial_state(&partial).unwrap();
    assert_eq!((state.row_groups, state.rows), (1, ROW_GROUP_ROWS as u64));

    let report = recover_session(&killed).unwrap();
    assert_eq!(report.logged, [0]);
    let [salvage] = &report.files[..] else { panic!("{report:?}") };
    let SalvageOutcome::Recovered { row_groups, rows, whole, pose_rows, lost_ticks, sha256, .. } = &salvage.outcome
    else {
        panic!("{salvage:?}")
    };
    assert_eq!((*row_groups, *rows, *whole), (1, ROW_GROUP_ROWS as u64, false));
    // 1 048 576 rows are sixteen ticks: the other 24 were lost with the later row groups.
    assert_eq!((*pose_rows, *lost_ticks), (Some(16), 24));
    let file = chunk.join("lidar-front-000.parquet");
    assert_eq!(read_sidecar(&file.with_extension("json")).unwrap().sha256, *sha256);
    assert!(check_session(&killed).unwrap().ok(), "{:?}", check_session(&killed).unwrap());
    // The salvaged rows and poses are the finished recording's first ones.
    let (got, want) = (
        read_lidar_file(&file).unwrap(),
        read_lidar_file(&finished.join("data/chunk-000/lidar-front-000.parquet")).unwrap(),
    );
    let n = got.len();
    assert_eq!(n, ROW_GROUP_ROWS);
    assert!(got.timestamp == want.timestamp[..n] && got.range == want.range[..n] && got.geom_id == want.geom_id[..n]);
    assert!(got.bin == want.bin[..n] && got.channel == want.channel[..n] && got.normal == want.normal[..n]);
    let poses = read_pose_file(&chunk.join("lidar-front-000.poses.parquet")).unwrap();
    let all = read_pose_file(&finished.join("data/chunk-000/lidar-front-000.poses.parquet")).unwrap();
    assert_eq!(poses.timestamp, all.timestamp[..16]);
    assert_eq!(poses.position, all.position[..16]);
    for side in
        [".parquet.partial", ".parquet.partial.groups", ".poses.parquet.partial", ".poses.parquet.partial.ticks"]
    {
        assert!(!chunk.join(format!("lidar-front-000{side}")).exists(), "{side}");
    }
    let log = std::fs::read_to_string(killed.join("meta/episodes.jsonl")).unwrap();
    assert!(log.contains("\"status\":\"recovered\"") && log.contains("\"ticks\":16"), "{log}");
    // A finished session has nothing to recover.
    assert!(recover_session(&finished).unwrap().files.is_empty());
    std::fs::remove_dir_all(&out).ok();
}
