//! A `Simulation` against the wiring every command wrote out by hand before it existed (world
//! batch, ray caster, lidars, bake and recorder driven step by step): the same live scans,
//! material scans and Parquet bytes for the same seed. Then its calls' rules and errors.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use glint_core::RayCaster;
use glint_lidar::{Bake, LidarBinding, LidarWarning, Lidars, ScanConfig, ScanPreset, SecondaryCapture, SecondaryScope};
use glint_manifest::Manifest;
use glint_mujoco::{Model, WorldBatch};
use glint_record::{EpisodeStatus, Session, SessionInfo, TickData, read_lidar_file};
use glint_sim::{RecordingOptions, SimError, SimOptions, Simulation, Warning, WorldStatus, Worlds};

fn example(name: &str) -> PathBuf {
    [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name].iter().collect()
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-sim-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A copy of the showroom whose robot drives at constant velocities (a controller the
/// reference can apply without glint-sim's), in its own folder.
fn showroom(tag: &str) -> PathBuf {
    let dir = temp_dir(tag);
    std::fs::copy(example("showroom/showroom.xml"), dir.join("showroom.xml")).unwrap();
    let text = std::fs::read_to_string(example("showroom/showroom.toml")).unwrap();
    let base = text.split("\n[controller]").next().unwrap();
    let manifest = dir.join("showroom.toml");
    std::fs::write(&manifest, format!("{base}\n[controller]\nkind = \"velocity\"\nctrl = {{ vx = 0.4, wz = 0.3 }}\n"))
        .unwrap();
    manifest
}

/// The old wiring: what `glint run` and `glint scan` built and drove by hand.
struct Reference {
    model: Model,
    worlds: WorldBatch,
    caster: RayCaster,
    lidars: Lidars,
    steps: usize,
    dt: f64,
    ctrl: Vec<f64>,
    ticks: u64,
}

impl Reference {
    fn new(manifest: &Manifest, nworld: usize) -> Reference {
        let model = Model::from_xml_file(&manifest.scene).unwrap();
        let scene = model.scene().clone();
        let worlds = WorldBatch::new(&model, nworld).unwrap();
        let caster = RayCaster::new(&scene, worlds.poses());
        let (mut lidars, _) = Lidars::new(&scene, manifest.lidar.clone(), nworld).unwrap();
        lidars.set_capture_materials(&scene, &manifest.material_table(&scene).unwrap());
        lidars.set_return_params(manifest.return_params).unwrap();
        // Each world's episode draws with its own seed, from the run seed and its index.
        for w in 0..nworld {
            lidars.set_world_seed(w, glint_lidar::episode_seed(manifest.seed, w as u64)).unwrap();
        }
        let hz = manifest.recorder.lidar_runner_hz.unwrap_or(glint_lidar::DEFAULT_RUNNER_HZ);
        let steps = ((1.0 / (hz * model.timestep())).round() as usize).max(1);
        let names = model.actuator_names();
        let ctrl =
            names.iter().map(|n| [("vx", 0.4), ("wz", 0.3)].iter().find(|c| c.0 == n).map_or(0.0, |c| c.1)).collect();
        Reference { dt: steps as f64 * model.timestep(), model, worlds, caster, lidars, steps, ctrl, ticks: 0 }
    }

    fn reset(&mut self) {
        self.worlds.reset();
        self.caster.rebuild(self.worlds.poses());
        for w in 0..self.worlds.nworld() {
            self.lidars.reset_world(w).unwrap();
        }
        self.ticks = 0;
    }

    fn step(&mut self, force: bool) -> Vec<f64> {
        for w in 0..self.worlds.nworld() {
            self.worlds.set_ctrl(w, &self.ctrl).unwrap();
        }
        self.worlds.step(self.steps);
        self.caster.refit(self.worlds.poses());
        let times: Vec<f64> = (0..self.worlds.nworld()).map(|w| self.worlds.time(w)).collect();
        let scene = self.model.scene().clone();
        self.lidars.tick(&scene, self.worlds.poses(), &self.caster, self.dt, &times, force).unwrap();
        self.ticks += 1;
        times
    }
}

/// Every live value of every sensor and world, to the bit.
fn same_scans(sim: &Simulation, reference: &Reference, when: &str) {
    for s in 0..sim.lidar_count() {
        for w in 0..sim.nworld() {
            let (got, want) = (sim.lidar(s).unwrap().scan(w).unwrap(), reference.lidars.scan(s, w).unwrap());
            let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got.range), bits(&want.range), "{when}: ranges of sensor {s}, world {w}");
            assert_eq!(got.geomid, want.geomid, "{when}: geoms of sensor {s}, world {w}");
            assert_eq!(got.returns.is_some(), want.returns.is_some(), "{when}");
            if let (Some(g), Some(r)) = (&got.returns, &want.returns) {
                for (name, a, b) in [
                    ("range", &g.range, &r.range),
                    ("secondary", &g.secondary_range, &r.secondary_range),
                    ("intensity", &g.intensity, &r.intensity),
                    ("reflectivity", &g.reflectivity, &r.reflectivity),
                ] {
                    assert_eq!(bits(a), bits(b), "{when}: material {name} of sensor {s}, world {w}");
                }
            }
        }
    }
}

fn parquet_files(session: &Path) -> Vec<(String, Vec<u8>)> {
    let chunk = session.join("data/chunk-000");
    let mut names: Vec<String> = std::fs::read_dir(&chunk)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".parquet") || n.ends_with(".json"))
        .collect();
    names.sort();
    names.into_iter().map(|n| (n.clone(), std::fs::read(chunk.join(&n)).unwrap())).collect()
}

#[test]
fn a_simulation_gives_what_the_hand_wiring_gave() {
    let path = showroom("wiring");
    let manifest = Manifest::load(&path).unwrap();
    let nworld = 2;
    let mut sim = Simulation::from_manifest(&path, SimOptions { nworld, ..SimOptions::default() }).unwrap();
    let mut reference = Reference::new(&manifest, nworld);
    assert_eq!((sim.runner().steps, sim.seed()), (reference.steps, 7));
    // The simulation keeps hit points and normals only while recording (the reference always
    // does): its ranges, echoes and recorded files must not change.
    assert!(sim.keeps_surfaces());
    sim.set_keep_surfaces(false);
    let surfaces_kept = |sim: &Simulation| sim.lidar(0).unwrap().scan(0).unwrap().surfaces.is_some();

    // Live scans: reset, then steps with the controller.
    sim.set_lidar_live(true);
    reference.lidars.set_live(true);
    sim.reset(Worlds::All, None).unwrap();
    reference.reset();
    for tick in 0..6 {
        let report = sim.step(None).unwrap();
        let times = reference.step(false);
        assert_eq!(report.time, times);
        assert_eq!(report.status, vec![WorldStatus::Ok; nworld]);
        same_scans(&sim, &reference, &format!("live tick {tick}"));
    }
    assert!(!surfaces_kept(&sim));
    let (mut ranges, want) = (vec![0.0; 65_536], &reference.lidars.scan(0, 1).unwrap().range);
    assert_eq!(sim.lidar(0).unwrap().scan_into(1, &mut ranges, false).unwrap(), 65_536);
    assert_eq!(&ranges, want);

    // A configuration change restarts every world's scan, in both.
    let vlp16 = ScanConfig {
        self_ignore: manifest.lidar[0].scan.self_ignore,
        ..ScanConfig::from_preset(ScanPreset::VelodyneVlp16)
    };
    sim.lidar_mut(0).unwrap().set_config(vlp16).unwrap();
    reference.lidars.set_config(0, vlp16).unwrap();
    for tick in 0..3 {
        sim.step(None).unwrap();
        reference.step(false);
        same_scans(&sim, &reference, &format!("VLP-16 tick {tick}"));
    }

    // A bake of world 0 as it stands now, then material scans.
    let settings = sim.bake_settings();
    let status = sim.bake(settings).unwrap();
    let table = manifest.material_table(sim.scene()).unwrap();
    let bake = Bake::build(reference.model.scene(), reference.worlds.poses(), &table, settings).unwrap();
    assert_eq!(status, bake.status(reference.model.scene(), &table));
    assert!(status.valid && !status.stale);
    reference.lidars.set_materials(Some(Arc::new(bake)));
    for tick in 0..4 {
        sim.step(None).unwrap();
        reference.step(false);
        same_scans(&sim, &reference, &format!("material tick {tick}"));
    }
    let mut echoes = vec![0.0; vlp16.beam_count()];
    sim.lidar(0).unwrap().scan_into(0, &mut echoes, true).unwrap();
    assert_eq!(echoes, reference.lidars.returns(0, 0).unwrap().range);

    // A recording: configurations go back to the scene's, and the files are the same bytes.
    let out = path.parent().unwrap().to_path_buf();
    let session = sim.arm_recording(&RecordingOptions { out: Some(out.join("sim")), episodes: 1 }).unwrap();
    reference.lidars.set_config(0, manifest.lidar[0].scan).unwrap();
    assert_eq!(sim.lidar(0).unwrap().config(), manifest.lidar[0].scan);
    assert!(surfaces_kept(&sim), "a recording keeps the normals it writes");
    let sensors = (0..reference.lidars.len()).map(|s| reference.lidars.binding(s).cloned().unwrap()).collect();
    let info = SessionInfo {
        manifest: path.clone(),
        manifest_text: String::new(),
        scene: manifest.scene.clone(),
        seed: 7,
        episodes: 2,
        seconds_per_episode: 0.0,
        worlds: nworld,
        physics_timestep: reference.model.timestep(),
        lidar_runner_hz: manifest.recorder.lidar_runner_hz.unwrap_or(glint_lidar::DEFAULT_RUNNER_HZ),
        controller: String::new(),
        mujoco_version: Model::mujoco_version(),
        sensors,
    };
    let mut recorder = Session::create(&out.join("reference"), &info).unwrap();
    let mut episodes: Vec<_> = (0..nworld as u32)
        .map(|w| recorder.begin_episode(w, glint_lidar::episode_seed(manifest.seed, w as u64)).unwrap())
        .collect();
    let mut beams = Vec::new();
    reference.ticks = 0;
    for _ in 0..30 {
        sim.step(None).unwrap();
        let times = reference.step(true);
        for (w, episode) in episodes.iter_mut().enumerate() {
            reference.lidars.last_tick_beams(0, w, &mut beams).unwrap();
            let (sensor_pos, sensor_rot) = reference.lidars.frame(0, w, reference.worlds.poses()).unwrap();
            let scan = reference.lidars.scan(0, w).unwrap();
            let tick = TickData { timestamp: times[w], scan, beams: &beams, sensor_rot, sensor_pos };
            episode.write_tick(0, &tick).unwrap();
        }
    }
    same_scans(&sim, &reference, "recorded");
    let summary = sim.stop_recording(EpisodeStatus::Complete).unwrap();
    assert!(!surfaces_kept(&sim), "surfaces are dropped again when the recording stops");
    for episode in episodes {
        episode.finish(EpisodeStatus::Complete, reference.ticks as f64 * reference.dt).unwrap();
    }
    assert_eq!((summary.dir.as_path(), summary.episodes), (session.as_path(), 2));
    assert_eq!(summary.sensors[0].rows, 2 * 30 * 65_536 / 5);
    let (mut got, want) = (parquet_files(&session), parquet_files(recorder.dir()));
    let states = got.iter().filter(|(name, _)| name.starts_with("state-")).count();
    assert_eq!(states, 4, "the simulation also records the robot state: two tables and their sidecars");
    got.retain(|(name, _)| !name.starts_with("state-"));
    assert_eq!(got.len(), 8, "two lidar files, their pose and beam tables and their sidecars");
    for ((name, bytes), (want_name, want_bytes)) in got.iter().zip(&want) {
        assert_eq!(name, want_name);
        assert!(bytes == want_bytes, "{name} differs from the hand-wired recording");
    }
    let table = read_lidar_file(&session.join("data/chunk-000/lidar-roof-001.parquet")).unwrap();
    assert_eq!(table.len() as u64, summary.sensors[0].rows / 2);
    std::fs::remove_dir_all(out).ok();
}

const BOX_ROOM: &str = r#"<mujoco>
  <option timestep="0.002"/>
  <worldbody>
    <geom type="box" pos="4 0 1" size="0.1 4 2"/>
    <body name="robot" pos="0 0 0.5">
      <joint name="slide" type="slide" axis="1 0 0"/>
      <geom type="sphere" size="0.1" mass="1"/>
      <site name="lidar" pos="0 0 0.5"/>
    </body>
  </worldbody>
  <actuator><velocity name="vx" joint="slide" kv="20"/></actuator>
</mujoco>"#;

fn box_room(nworld: usize, episode_seconds: Option<f64>) -> Simulation {
    let scan =
        ScanConfig { channels: 3, azimuth_bins: 90, vfov_min_deg: -5.0, vfov_max_deg: 5.0, ..ScanConfig::default() };
    let binding = LidarBinding { attach_site: Some("lidar".into()), scan, ..LidarBinding::default() };
    let options = SimOptions { nworld, episode_seconds, ..SimOptions::default() };
    Simulation::from_xml(BOX_ROOM, vec![binding], options).unwrap()
}

#[test]
fn actions_move_their_world_and_reset_starts_only_the_worlds_named() {
    let mut sim = box_room(2, Some(0.05));
    assert_eq!(sim.episode_ticks(), Some(5), "0.05 s of 10 ms ticks");
    sim.set_lidar_live(true);
    for _ in 0..5 {
        let report = sim.step(Some(&[1.0, 0.0])).unwrap();
        assert!(report.time[0] > 0.0 && report.lidar_seconds >= 0.0);
    }
    let report = sim.step(Some(&[1.0, 0.0])).unwrap();
    assert_eq!(report.status, vec![WorldStatus::Ended; 2]);
    let (x0, _) = sim.lidar(0).unwrap().frame(0).unwrap();
    let (x1, _) = sim.lidar(0).unwrap().frame(1).unwrap();
    assert!(x0.x > 0.01 && x1.x.abs() < 1e-9, "world 0 slid, world 1 did not: {x0} {x1}");
    // Resetting world 0 alone puts it back and restarts its clock; world 1 keeps its own.
    sim.reset(Worlds::One(0), None).unwrap();
    assert_eq!((sim.episode_tick(0).unwrap(), sim.episode_tick(1).unwrap()), (0, 6));
    assert!(sim.lidar(0).unwrap().frame(0).unwrap().0.x.abs() < 1e-9);
    let report = sim.step(Some(&[0.0, 0.0])).unwrap();
    assert_eq!(report.status, vec![WorldStatus::Ok, WorldStatus::Ended]);
    assert!(report.time[0] < report.time[1]);
    let stats = sim.lidar_stats(0).unwrap();
    assert_eq!(stats.beams, 7 * 2 * 3 * 9, "a 10 Hz pattern of 90 bins casts 9 bins a 10 ms tick");
    assert!(stats.hits > 0 && stats.hits < stats.beams);

    let err = sim.step(Some(&[1.0])).unwrap_err().to_string();
    assert!(err.contains("the action array holds 1 values") && err.contains("2 × 1"), "{err}");
    let err = sim.reset(Worlds::These(&[0, 2]), None).unwrap_err().to_string();
    assert!(err.contains("world 2 does not exist (the simulation has 2 worlds)"), "{err}");
    let err = sim.lidar(1).unwrap_err().to_string();
    assert!(err.contains("lidar sensor 1 does not exist (1 sensors are bound)"), "{err}");
    assert!(matches!(sim.lidar(0).unwrap().scan(5), Err(SimError::NoSuchWorld { world: 5, nworld: 2 })));
}

#[test]
fn buffers_follow_the_seeds_capacity_rules() {
    let mut sim = box_room(1, None);
    sim.set_lidar_live(true);
    for _ in 0..10 {
        sim.step(None).unwrap();
    }
    let lidar = sim.lidar(0).unwrap();
    assert_eq!(lidar.beam_count(), 270);
    // A short buffer gets the leading beams; a long one has its tail set to -1.
    let mut short = vec![9.0; 10];
    assert_eq!(lidar.scan_into(0, &mut short, false).unwrap(), 10);
    assert!((short[1] - 3.9).abs() < 1e-4, "channel 1 of bin 0 meets the wall head-on: {short:?}");
    let mut long = vec![9.0; 300];
    assert_eq!(lidar.scan_into(0, &mut long, false).unwrap(), 270);
    assert!(long[270..].iter().all(|&r| r == -1.0));
    // Channels: a channel buffer shorter than the ranges makes the call write nothing.
    let (mut ranges, mut intensity) = (vec![0.0; 270], vec![7.0; 100]);
    assert_eq!(lidar.scan_channels_into(0, &mut ranges, Some(&mut intensity), None, false).unwrap(), 0);
    assert!(intensity.iter().all(|&v| v == 7.0));
    let mut intensity = vec![7.0; 270];
    assert_eq!(lidar.scan_channels_into(0, &mut ranges, Some(&mut intensity), None, false).unwrap(), 270);
    assert!(intensity.iter().all(|&v| v == -1.0), "no return strength without the material model");
    // Material scans need a bake.
    let err = lidar.scan_into(0, &mut ranges, true).unwrap_err().to_string();
    assert!(err.contains("no material bake is loaded"), "{err}");
    assert!(lidar.scan_secondary_into(0, &mut ranges).is_err());
    // Angles: both buffers as long as each other.
    let (mut az, mut el) = (vec![0.0; 6], vec![0.0; 6]);
    assert_eq!(lidar.beam_angles_into(0, &mut az, &mut el).unwrap(), 6);
    assert!((el[0] + 5f32.to_radians()).abs() < 1e-6 && (az[3] - 4f32.to_radians()).abs() < 1e-6);
    let mut el = vec![0.0; 5];
    assert!(lidar.beam_angles_into(0, &mut az, &mut el).unwrap_err().to_string().contains("azimuth buffer (6)"));
}

#[test]
fn bakes_save_load_and_say_when_stale() {
    let dir = temp_dir("bakes");
    let options = |d: &Path| SimOptions { project_dir: Some(d.to_path_buf()), ..SimOptions::default() };
    let mut sim = box_room(1, None);
    assert!(!sim.bake_status().valid);
    assert!(sim.save_bake(None).unwrap_err().to_string().contains("no material bake is loaded"));
    let err = sim.load_bake(Some("night")).unwrap_err().to_string();
    assert!(err.contains("no bake named 'night'"), "{err}");
    let scan =
        ScanConfig { channels: 3, azimuth_bins: 90, vfov_min_deg: -5.0, vfov_max_deg: 5.0, ..ScanConfig::default() };
    let binding = LidarBinding { attach_site: Some("lidar".into()), scan, ..LidarBinding::default() };
    let mut sim = Simulation::from_xml(BOX_ROOM, vec![binding.clone()], options(&dir)).unwrap();
    let status = sim.bake(sim.bake_settings()).unwrap();
    assert!(status.valid && !status.stale && status.geom_materials == 2);
    let file = sim.save_bake(Some("night")).unwrap();
    assert_eq!(file, dir.join("MaterialBakes/night.lvxb"));
    assert_eq!(sim.saved_bakes(), ["night"]);
    sim.unload_bake();
    assert!(!sim.bake_status().valid);
    assert_eq!(sim.load_bake(Some("night")).unwrap(), status);
    assert_eq!(sim.loaded_bake(), Some("night"));
    assert!(sim.take_warnings().is_empty());
    // The same folder with a recoloured box: the bake is stale, loaded anyway, and said so.
    let recoloured = BOX_ROOM.replace(r#"size="0.1 4 2"/>"#, r#"size="0.1 4 2" rgba="0.1 0.1 0.1 1"/>"#);
    let mut other = Simulation::from_xml(&recoloured, vec![binding.clone()], options(&dir)).unwrap();
    let status = other.load_bake(Some("night")).unwrap();
    assert!(status.stale && status.matches_scene, "{status:?}");
    assert!(matches!(&other.take_warnings()[..], [Warning::BakeStale { name, .. }] if name == "night"));
    // Another scene (a wider box): the bake does not match it, and the warning says so.
    let wider = BOX_ROOM.replace(r#"size="0.1 4 2"/>"#, r#"size="0.1 6 2"/>"#);
    let mut another = Simulation::from_xml(&wider, vec![binding], options(&dir)).unwrap();
    let status = another.load_bake(Some("night")).unwrap();
    assert!(status.valid && !status.matches_scene, "{status:?}");
    let warnings = another.take_warnings();
    assert!(matches!(&warnings[..], [Warning::BakeMismatch { name, .. }] if name == "night"), "{warnings:?}");
    assert!(warnings[0].to_string().contains("does not match the scene: it was made from another scene"));
    other.set_lidar_live(true);
    other.step(None).unwrap();
    let mut echoes = vec![0.0; 270];
    assert_eq!(other.lidar(0).unwrap().scan_into(0, &mut echoes, true).unwrap(), 270);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn recording_refuses_config_changes_and_keeps_capture_choices_for_the_next() {
    let dir = temp_dir("recording");
    let mut sim = box_room(1, None);
    assert!(matches!(sim.stop_recording(EpisodeStatus::Complete), Err(SimError::NotRecording(_))));
    let session = sim.arm_recording(&RecordingOptions { out: Some(dir.clone()), episodes: 1 }).unwrap();
    assert!(sim.arm_recording(&RecordingOptions::default()).is_err(), "one recording at a time");
    let config = sim.lidar(0).unwrap().config();
    let err = sim.lidar_mut(0).unwrap().set_config(ScanConfig { channels: 8, ..config }).unwrap_err().to_string();
    assert!(err.contains("SetLidarConfig is refused while a recording is armed"), "{err}");
    sim.lidar_mut(0).unwrap().set_secondary_capture(SecondaryCapture::Both, SecondaryScope::AllSurfaces).unwrap();
    assert_eq!(sim.lidar(0).unwrap().binding().secondary_capture, SecondaryCapture::Off, "not while recording");
    for _ in 0..3 {
        sim.step(None).unwrap();
    }
    let summary = sim.stop_recording(EpisodeStatus::Interrupted).unwrap();
    assert_eq!((summary.dir, summary.episodes, summary.sensors[0].rows), (session.clone(), 1, 3 * 27));
    let log = std::fs::read_to_string(session.join("meta/episodes.jsonl")).unwrap();
    assert!(log.contains("\"interrupted\"") && log.contains("\"ticks\":3"), "{log}");
    assert_eq!(sim.lidar(0).unwrap().binding().secondary_capture, SecondaryCapture::Both, "after it stops");
    // Episodes begin at the first tick after a reset: a reset with no tick records nothing.
    let second = sim.arm_recording(&RecordingOptions { out: Some(dir.clone()), episodes: 2 }).unwrap();
    sim.reset(Worlds::All, None).unwrap();
    sim.step(None).unwrap();
    sim.reset(Worlds::All, None).unwrap();
    sim.reset(Worlds::All, None).unwrap();
    sim.step(None).unwrap();
    let summary = sim.stop_recording(EpisodeStatus::Complete).unwrap();
    assert_eq!(summary.episodes, 2);
    let files: Vec<_> =
        std::fs::read_dir(second.join("data/chunk-000")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert!(files.iter().any(|f| f == "lidar-lidar-001.parquet"), "{files:?}");
    let sidecar = glint_record::read_sidecar(&second.join("data/chunk-000/lidar-lidar-000.json")).unwrap();
    assert_eq!(sidecar.sensor.secondary_capture, SecondaryCapture::Both);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_scenes_are_refused_with_the_reason() {
    let binding = |mask| LidarBinding {
        attach_site: Some("lidar".into()),
        scan: ScanConfig { geom_group_mask: mask, ..ScanConfig::default() },
        ..LidarBinding::default()
    };
    let mut sim = Simulation::from_xml(BOX_ROOM, vec![binding(0xc1)], SimOptions::default()).unwrap();
    let want = Warning::Lidar { sensor: 0, warning: LidarWarning::GroupMaskHighBits { mask: 0xc1, used: 1 } };
    assert_eq!(sim.take_warnings(), [want]);
    // A timestep the default rate is not a whole number of: the nearest rate it realises,
    // with a warning; the same rate asked for explicitly is refused.
    let slow = BOX_ROOM.replace(r#"timestep="0.002""#, r#"timestep="0.003""#);
    let mut sim = Simulation::from_xml(&slow, vec![binding(255)], SimOptions::default()).unwrap();
    assert_eq!(sim.runner_dt(), 3.0 * 0.003);
    let warnings = sim.take_warnings();
    assert!(matches!(warnings[..], [Warning::RunnerRate { steps: 3, .. }]), "{warnings:?}");
    let explicit = SimOptions { runner_hz: Some(100.0), ..SimOptions::default() };
    let err = Simulation::from_xml(&slow, vec![binding(255)], explicit).unwrap_err().to_string();
    assert!(err.contains("lidar_runner_hz = 100") && err.contains("3.333"), "{err}");
    let err = Simulation::from_xml("<mujoco><worldbody>", vec![], SimOptions::default()).unwrap_err().to_string();
    assert!(!err.is_empty());
    let options = SimOptions { nworld: 0, ..SimOptions::default() };
    assert!(Simulation::from_xml(BOX_ROOM, vec![], options).is_err());
    let options = SimOptions { episode_seconds: Some(-1.0), ..SimOptions::default() };
    let err = Simulation::from_xml(BOX_ROOM, vec![], options).unwrap_err().to_string();
    assert!(err.contains("the episode length is -1 s"), "{err}");
    let err = Simulation::from_manifest("/no/such.toml", SimOptions::default()).unwrap_err().to_string();
    assert!(err.contains("cannot read manifest '/no/such.toml'"), "{err}");
}

/// A box falling under a gravity of 1e12 m/s²: MuJoCo calls its acceleration huge on the
/// first step and resets the world.
const EXPLODING: &str = r#"<mujoco><option gravity="0 0 -1e12"/><worldbody>
    <geom type="box" pos="4 0 1" size="0.1 4 2"/>
    <body name="robot" pos="0 0 1"><freejoint/><geom type="box" size="0.2 0.2 0.2"/><site name="lidar" pos="0 0 0.3"/></body>
  </worldbody></mujoco>"#;

#[test]
fn a_world_mujoco_found_unstable_is_recorded_as_unstable() {
    let dir = temp_dir("unstable");
    let scan =
        ScanConfig { channels: 3, azimuth_bins: 90, vfov_min_deg: -5.0, vfov_max_deg: 5.0, ..ScanConfig::default() };
    let binding = LidarBinding { attach_site: Some("lidar".into()), scan, ..LidarBinding::default() };
    let mut sim = Simulation::from_xml(EXPLODING, vec![binding], SimOptions::default()).unwrap();
    let session = sim.arm_recording(&RecordingOptions { out: Some(dir.clone()), episodes: 2 }).unwrap();
    let report = (0..3).map(|_| sim.step(None).unwrap()).last().unwrap();
    assert_eq!(report.status, [WorldStatus::Unstable]);
    // A reset ends the episode (with the warning), and so does stopping the recording.
    sim.reset(Worlds::All, None).unwrap();
    let warnings = sim.take_warnings();
    assert!(warnings.contains(&Warning::WorldUnstable { world: 0, episode: 0 }), "{warnings:?}");
    sim.step(None).unwrap();
    sim.stop_recording(EpisodeStatus::Interrupted).unwrap();
    let log = std::fs::read_to_string(session.join("meta/episodes.jsonl")).unwrap();
    let statuses: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["status"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(statuses, ["unstable", "unstable"], "{log}");
    let sidecar = glint_record::read_sidecar(&session.join("data/chunk-000/lidar-lidar-000.json")).unwrap();
    assert_eq!(sidecar.status, EpisodeStatus::Unstable.name());
    // A stable world's episodes stay complete.
    let mut calm = box_room(1, None);
    let session = calm.arm_recording(&RecordingOptions { out: Some(dir.clone()), episodes: 1 }).unwrap();
    calm.step(None).unwrap();
    calm.stop_recording(EpisodeStatus::Complete).unwrap();
    let log = std::fs::read_to_string(session.join("meta/episodes.jsonl")).unwrap();
    assert!(log.contains("\"status\":\"complete\""), "{log}");
    std::fs::remove_dir_all(&dir).ok();
}
