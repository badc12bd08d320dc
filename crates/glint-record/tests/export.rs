//! Pose tables and material-informed variants: a moving sensor's poses recorded beside its
//! rows, and a session exported through the return model agreeing with the live material scan
//! of the same ticks (same seed, same keys), glass and mirror continuations included.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use glam::{DMat3, DVec3};
use glint_core::RayCaster;
use glint_lidar::{
    Bake, BakeSettings, Continuation, LidarBinding, Lidars, MaterialPreset, MaterialTable, ReturnPreset, ScanConfig,
    ScanPreset, SecondaryCapture, SecondaryScope,
};
use glint_mujoco::{Model, WorldBatch};
use glint_record::{
    BakeRecord, EpisodeStatus, ExportSettings, FileProblem, Provenance, RecordError, Session, SessionInfo, TickData,
    check_session, export_variant, file_sha256, read_augmentation, read_lidar_file, read_pose_file, read_sidecar,
    read_variant_file,
};

/// A head that slides along x and turns, in a room with a pane before the east wall, a mirror
/// to the south-west facing the head (its folded beams fan out towards the north-west), and a
/// pool to the north-east.
const SCENE: &str = r#"
<mujoco>
  <asset>
    <material name="glass" rgba="1 1 1 0.3"/>
    <material name="mirror" rgba="0.8 0.8 0.8 1" reflectance="0.9"/>
    <material name="water" rgba="0.2 0.4 0.8 0.4"/>
    <material name="paint" rgba="0.8 0.8 0.8 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="20 20 0.1"/>
    <geom name="wall_e" type="box" pos="8 0 1.5" size="0.1 8 1.5" material="paint"/>
    <geom name="pane" type="box" pos="4 -1 1" size="0.005 2 1" material="glass"/>
    <geom name="wall_n" type="box" pos="0 7 1.5" size="8 0.1 1.5" material="paint"/>
    <geom name="mirror" type="box" pos="-3 -4 1.3" size="1.5 0.01 1" material="mirror"/>
    <geom name="wall_s" type="box" pos="0 -9 1.5" size="8 0.1 1.5"/>
    <geom name="wall_w" type="box" pos="-9 0 1.5" size="0.1 9 1.5"/>
    <geom name="water" type="box" pos="4.5 4.5 0.175" size="1.5 1.5 0.225" material="water" contype="0" conaffinity="0"/>
    <geom name="tiles" type="box" pos="4.5 4.5 0.15" size="1.4 1.4 0.15" material="paint"/>
    <body name="head" pos="0 0 1">
      <joint name="x" type="slide" axis="1 0 0"/>
      <joint name="yaw" type="hinge" axis="0 0 1"/>
      <inertial pos="0 0 0" mass="0.1" diaginertia="0.001 0.001 0.001"/>
      <site name="lidar"/>
    </body>
  </worldbody>
</mujoco>"#;

const SEED: u64 = 11;
const TICKS: usize = 10;

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-export-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn bindings() -> Vec<LidarBinding> {
    let spin = ScanConfig { channels: 16, azimuth_bins: 360, max_range: 40.0, ..ScanConfig::default() };
    let mut livox = ScanConfig::default();
    ScanPreset::LivoxMid360.apply(&mut livox);
    [("spin", spin), ("livox", livox)]
        .into_iter()
        .map(|(name, scan)| LidarBinding {
            name: name.into(),
            attach_site: Some("lidar".into()),
            scan,
            secondary_capture: SecondaryCapture::Both,
            secondary_scope: SecondaryScope::AllSurfaces,
            ..LidarBinding::default()
        })
        .collect()
}

/// The live model's report of one beam, and its clean geometry.
#[derive(Clone, Copy, Debug)]
struct Live {
    clean_geom: i32,
    /// The sensor origin, the hit point and normal (world), and the recorded secondary hits
    /// (range, geom) straight on and folded.
    origin: DVec3,
    point: DVec3,
    normal: DVec3,
    sec: (f32, i32),
    refl: (f32, i32),
    range: f32,
    secondary: f32,
    intensity: f32,
    reflectivity: f32,
    geom: i32,
}

/// What one recorded episode holds, and what the live sensors said.
struct Recording {
    _out: PathBuf,
    session: PathBuf,
    model: Model,
    bake: Bake,
    /// Per sensor, per row: the live report.
    live: Vec<Vec<Live>>,
    /// Per sensor, per tick: (time, origin, rotation).
    frames: Vec<Vec<(f64, DVec3, DMat3)>>,
}

fn record(tag: &str) -> Recording {
    let out = temp_dir(tag);
    let model = Model::from_xml_str(SCENE).unwrap();
    let mut batch = WorldBatch::new(&model, 1).unwrap();
    let scene = model.scene().clone();
    let mut table = MaterialTable::default();
    for (name, preset) in [
        ("glass", MaterialPreset::ClearFloatGlass),
        ("mirror", MaterialPreset::Mirror),
        ("water", MaterialPreset::StillWater),
        ("paint", MaterialPreset::Diffuse),
    ] {
        table.set(name, preset.material()).unwrap();
    }
    let bake = Bake::build(&scene, batch.poses(), &table, BakeSettings::default()).unwrap();
    let mut caster = RayCaster::new(&scene, batch.poses());
    let (mut lidars, _) = Lidars::new(&scene, bindings(), 1).unwrap();
    lidars.set_materials(Some(Arc::new(bake.clone())));
    lidars.set_return_preset(ReturnPreset::OusterOs1);
    // The live sensor draws with the episode's seed, which the session records.
    let episode_seed = glint_lidar::episode_seed(SEED, 0);
    lidars.set_seed(episode_seed);
    let info = SessionInfo {
        manifest: "room.toml".into(),
        manifest_text: String::new(),
        scene: "room.xml".into(),
        seed: SEED,
        episodes: 1,
        seconds_per_episode: TICKS as f64 * 0.02,
        worlds: 1,
        physics_timestep: 0.002,
        lidar_runner_hz: 50.0,
        controller: "zero".into(),
        mujoco_version: Model::mujoco_version(),
        sensors: (0..lidars.len()).map(|s| lidars.binding(s).cloned().unwrap()).collect(),
    };
    let mut session = Session::create(&out, &info).unwrap();
    let mut episode = session.begin_episode(0, episode_seed).unwrap();
    let mut live = vec![Vec::new(); lidars.len()];
    let mut frames = vec![Vec::new(); lidars.len()];
    let mut beams = Vec::new();
    for tick in 1..=TICKS {
        batch.set_qpos(0, &[0.05 * tick as f64, 0.3 * tick as f64]).unwrap();
        caster.refit(batch.poses());
        let t = tick as f64 * 0.02;
        lidars.tick(&scene, batch.poses(), &caster, 0.02, &[t], true).unwrap();
        for s in 0..lidars.len() {
            lidars.last_tick_beams(s, 0, &mut beams).unwrap();
            let (pos, rot) = lidars.frame(s, 0, batch.poses()).unwrap();
            let scan = lidars.scan(s, 0).unwrap();
            episode
                .write_tick(s, &TickData { timestamp: t, scan, beams: &beams, sensor_rot: rot, sensor_pos: pos })
                .unwrap();
            let r = scan.returns.as_ref().unwrap();
            let (pass, folded) = (scan.pass_through.as_ref().unwrap(), scan.reflected.as_ref().unwrap());
            let v = |a: [f32; 3]| DVec3::new(a[0] as f64, a[1] as f64, a[2] as f64);
            live[s].extend(beams.iter().map(|&k| {
                let k = k as usize;
                Live {
                    clean_geom: scan.geomid[k],
                    origin: pos,
                    point: v(scan.surfaces.as_ref().unwrap().point[k]),
                    normal: v(scan.surfaces.as_ref().unwrap().normal[k]),
                    sec: (pass.range[k], pass.geomid[k]),
                    refl: (folded.range[k], folded.geomid[k]),
                    range: r.range[k],
                    secondary: r.secondary_range[k],
                    intensity: r.intensity[k],
                    reflectivity: r.reflectivity[k],
                    geom: r.geomid[k],
                }
            }));
            frames[s].push((t, pos, rot));
        }
    }
    let summary = episode.finish(EpisodeStatus::Complete, TICKS as f64 * 0.02).unwrap();
    assert_eq!(summary.sensors.len(), 2);
    let session = session.dir().to_path_buf();
    Recording { _out: out, session, model, bake, live, frames }
}

fn provenance(bake: &Bake, model: &Model, table: &MaterialTable) -> Provenance {
    let status = bake.status(model.scene(), table);
    Provenance {
        manifest: "room.toml".into(),
        return_preset: "ouster-os1".into(),
        bake: BakeRecord {
            name: "room".into(),
            path: "MaterialBakes/room.lvxb".into(),
            material_fingerprint: format!("{:016x}", status.material_fingerprint),
            status,
        },
    }
}

fn settings(bake: &Bake, seed: Option<u64>) -> ExportSettings<'_> {
    ExportSettings {
        params: ReturnPreset::OusterOs1.params(),
        seed,
        materials: bake,
        skip_damaged: false,
        physics: None,
    }
}

fn close(a: f32, b: f32, tol: f32) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn pose_tables_hold_each_ticks_sensor_frame_and_the_check_covers_them() {
    let rec = record("poses");
    let chunk = rec.session.join("data/chunk-000");
    for (s, name) in ["spin", "livox"].iter().enumerate() {
        let lidar = chunk.join(format!("lidar-{name}-000.parquet"));
        let poses = read_pose_file(&chunk.join(format!("lidar-{name}-000.poses.parquet"))).unwrap();
        assert_eq!(poses.len(), TICKS);
        for (i, &(t, pos, rot)) in rec.frames[s].iter().enumerate() {
            assert_eq!(poses.timestamp[i], t);
            assert_eq!(poses.position[i], pos);
            let back = DMat3::from_quat(poses.rotation[i]);
            for (a, b) in back.to_cols_array().iter().zip(rot.to_cols_array()) {
                assert!((a - b).abs() < 1e-12, "tick {i}: {back} vs {rot}");
            }
        }
        // The head slid: the origin moved along x.
        assert!((poses.position[TICKS - 1].x - 0.05 * TICKS as f64).abs() < 1e-9);
        let sidecar = read_sidecar(&lidar.with_extension("json")).unwrap();
        let entry = sidecar.poses.unwrap();
        assert_eq!(entry.file, format!("lidar-{name}-000.poses.parquet"));
        assert_eq!(entry.rows, TICKS as u64);
        assert_eq!(entry.sha256, file_sha256(&chunk.join(&entry.file)).unwrap());
        let cols: Vec<&str> = entry.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(cols, ["timestamp", "x", "y", "z", "qw", "qx", "qy", "qz"]);
        assert_eq!(sidecar.format_version, 2);
    }
    // The lidar schema itself is the seed's, unchanged.
    let table = read_lidar_file(&chunk.join("lidar-spin-000.parquet")).unwrap();
    assert!(table.pass_through.is_some() && table.reflected.is_some());
    let report = check_session(&rec.session).unwrap();
    assert!(report.ok(), "{report:?}");
    assert_eq!(report.files.len(), 2, "pose tables are checked with their lidar files, not as lidar files");

    // A changed pose table, and a missing one, are reported with their lidar file.
    let spin_poses = chunk.join("lidar-spin-000.poses.parquet");
    let mut bytes = std::fs::read(&spin_poses).unwrap();
    // A byte of the first data page (the footer, at the end, stays readable).
    bytes[12] ^= 0x21;
    std::fs::write(&spin_poses, &bytes).unwrap();
    std::fs::remove_file(chunk.join("lidar-livox-000.poses.parquet")).unwrap();
    let report = check_session(&rec.session).unwrap();
    let problems = |name: &str| report.files.iter().find(|f| f.path.ends_with(name)).unwrap().problems.clone();
    let spin = problems("lidar-spin-000.parquet");
    assert!(matches!(spin.as_slice(), [FileProblem::Poses(_)]), "{spin:?}");
    assert!(
        spin[0].to_string().contains("pose table problem") && spin[0].to_string().contains("changed"),
        "{}",
        spin[0]
    );
    let livox = problems("lidar-livox-000.parquet");
    assert!(livox[0].to_string().contains("lidar-livox-000.poses.parquet' is missing"), "{}", livox[0]);
    // Export refuses both, naming the file.
    let table = MaterialTable::default();
    let out = rec.session.join("variants/x");
    let err =
        export_variant(&rec.session, &out, &settings(&rec.bake, Some(1)), provenance(&rec.bake, &rec.model, &table))
            .unwrap_err();
    assert!(matches!(err, RecordError::Changed { .. } | RecordError::Io { .. }), "{err}");
    assert!(err.to_string().contains(".poses.parquet"), "{err}");
    assert!(!out.exists(), "a failed export leaves no folder");
}

#[test]
fn an_export_reproduces_the_live_material_scan() {
    let rec = record("live");
    let table = MaterialTable::default();
    let out = rec.session.join("variants/room-ouster-os1-seed11");
    let aug = export_variant(&rec.session, &out, &settings(&rec.bake, None), provenance(&rec.bake, &rec.model, &table))
        .unwrap();
    assert_eq!(aug.files.len(), 2);
    assert_eq!(aug.seed, None, "each episode keeps its recorded seed");
    assert_eq!(aug.files[0].seed, glint_lidar::episode_seed(SEED, 0));
    assert_eq!(read_augmentation(&out).unwrap(), aug);
    let scene = rec.model.scene();
    let geom = |name: &str| scene.geom_name.iter().position(|n| n == name).unwrap() as i32;
    let (pane, mirror, wall_e) = (geom("pane"), geom("mirror"), geom("wall_e"));
    let behind_mirror = [geom("wall_n"), geom("wall_w")];
    for f in &aug.files {
        let s = f.sensor;
        let variant = read_variant_file(&out.join(&f.variant)).unwrap();
        let source = read_lidar_file(&rec.session.join(&f.source)).unwrap();
        assert_eq!(variant.len(), rec.live[s].len());
        assert_eq!((variant.timestamp.clone(), variant.bin.clone()), (source.timestamp.clone(), source.bin.clone()));
        assert_eq!(f.variant_sha256, file_sha256(&out.join(&f.variant)).unwrap());
        let (mut compared, mut differ, mut through_glass, mut phantoms, mut skipped) = (0, 0, 0, 0, 0);
        // Beams whose first surface is water: (beams, live echoes, variant echoes).
        let mut water = (0usize, 0usize, 0usize);
        for (r, live) in rec.live[s].iter().enumerate() {
            assert_eq!(source.geom_id[r], live.clean_geom);
            if live.clean_geom < 0 {
                assert_eq!((variant.range[r], variant.geom_id[r], variant.intensity[r]), (-1.0, -1, -1.0));
                continue;
            }
            // Refraction is approximated by the straight pass-through hit, and legs past the
            // first continuation were not recorded (a fold onto glass or another mirror, which
            // the live model follows on): neither is compared.
            let class = |geom: i32, point: DVec3| {
                rec.bake.material_at(geom as usize, point).map_or(Continuation::Opaque, |m| m.continuation)
            };
            let dir = (live.point - live.origin).normalize();
            let folded = dir - 2.0 * dir.dot(live.normal) * live.normal;
            let deeper = (live.sec.1 >= 0
                && class(live.sec.1, live.origin + dir * live.sec.0 as f64) != Continuation::Opaque)
                || (live.refl.1 >= 0
                    && class(live.refl.1, live.point + folded * live.refl.0 as f64) != Continuation::Opaque);
            if class(live.clean_geom, live.point) == Continuation::Medium {
                // Compared as a whole below: how many of the water's beams reach the tiles.
                water.0 += 1;
                water.1 += (live.range >= 0.0) as usize;
                water.2 += (variant.range[r] >= 0.0) as usize;
                continue;
            }
            if deeper {
                skipped += 1;
                continue;
            }
            compared += 1;
            let same = variant.geom_id[r] == live.geom
                && close(variant.range[r], live.range, 1e-4)
                && close(variant.secondary_range[r], live.secondary, 1e-4)
                && close(variant.intensity[r], live.intensity, 1e-3)
                && close(variant.reflectivity_calibrated[r], live.reflectivity, 1e-3);
            if !same {
                differ += 1;
                eprintln!(
                    "sensor {s} row {r}: variant ({}, {}, {}, {}) live {live:?}",
                    variant.range[r], variant.secondary_range[r], variant.intensity[r], variant.geom_id[r]
                );
            }
            through_glass += (live.clean_geom == pane && variant.geom_id[r] == wall_e) as usize;
            phantoms += (live.clean_geom == mirror && behind_mirror.contains(&variant.geom_id[r])) as usize;
        }
        // Single-precision rows may tip a beam at a detection threshold; nothing else differs.
        assert!(differ * 1000 <= compared, "sensor {s}: {differ} of {compared} rows differ from the live scan");
        assert!(
            through_glass > 50 && phantoms > 50 && skipped * 5 < compared,
            "sensor {s}: {through_glass} through glass, {phantoms} phantoms, {skipped} not compared of {compared}"
        );
        assert_eq!(f.echoes, variant.range.iter().filter(|&&r| r >= 0.0).count() as u64);
        // The refracted leg, followed to the plane of the recorded straight hit, finds the
        // tiles most of the times the live model's bent ray does (about 80 % head-on, 65 % at
        // the Mid-360's grazing angles, where the straight line often meets the tiles' sides
        // instead), and never invents returns. The straight distance alone, through 4 to 8
        // times as much water, would find almost none.
        assert!(
            water.0 >= 100 && water.2 * 2 >= water.1 && water.2 <= water.1 + water.0 / 20,
            "sensor {s}: water beams, live echoes, variant echoes: {water:?}"
        );
    }
    // The same seed gives the same bytes; a variant is never overwritten.
    let again = rec.session.join("variants/again");
    let aug2 =
        export_variant(&rec.session, &again, &settings(&rec.bake, None), provenance(&rec.bake, &rec.model, &table))
            .unwrap();
    for (a, b) in aug.files.iter().zip(&aug2.files) {
        assert_eq!(a.variant_sha256, b.variant_sha256);
        assert_eq!(std::fs::read(out.join(&a.variant)).unwrap(), std::fs::read(again.join(&b.variant)).unwrap());
    }
    let err = export_variant(&rec.session, &out, &settings(&rec.bake, None), provenance(&rec.bake, &rec.model, &table))
        .unwrap_err();
    assert!(matches!(err, RecordError::VariantExists { .. }), "{err}");
    assert!(err.to_string().contains("never overwritten"), "{err}");
    assert!(read_augmentation(&out).is_ok(), "the first variant is untouched");
    // The session's own self-check ignores the variants folder.
    assert!(check_session(&rec.session).unwrap().ok());
}

#[test]
fn an_export_runs_the_physical_model_and_says_so() {
    let rec = record("physical");
    let table = MaterialTable::default();
    let seed_out = rec.session.join("variants/seed");
    let seed =
        export_variant(&rec.session, &seed_out, &settings(&rec.bake, None), provenance(&rec.bake, &rec.model, &table))
            .unwrap();
    assert_eq!((seed.return_model.as_str(), seed.physical_model), ("seed", None));
    let physics = glint_lidar::PhysicalModel { noise: false, ..glint_lidar::PhysicalModel::default() };
    let out = rec.session.join("variants/physical");
    let physical_settings = ExportSettings { physics: Some(physics), ..settings(&rec.bake, None) };
    let aug =
        export_variant(&rec.session, &out, &physical_settings, provenance(&rec.bake, &rec.model, &table)).unwrap();
    assert_eq!((aug.return_model.as_str(), aug.physical_model), ("physical", Some(physics)));
    assert_eq!(read_augmentation(&out).unwrap(), aug);
    // Footprints need the scene around each beam, which a recording does not keep.
    let wide = ExportSettings {
        physics: Some(glint_lidar::PhysicalModel { footprint_rays: 7, ..physics }),
        ..physical_settings
    };
    let refused = rec.session.join("variants/footprints");
    let e = export_variant(&rec.session, &refused, &wide, provenance(&rec.bake, &rec.model, &table)).unwrap_err();
    assert!(e.to_string().contains("footprint_rays = 7") && e.to_string().contains("footprint_rays = 1"), "{e}");
    assert!(!refused.exists(), "a refused export wrote {}", refused.display());
    // The same rows and geometry, other measurements: the models differ where the scene has
    // glass, a mirror and water.
    let (a, b) = (&seed.files[0], &aug.files[0]);
    let (x, y) =
        (read_variant_file(&seed_out.join(&a.variant)).unwrap(), read_variant_file(&out.join(&b.variant)).unwrap());
    assert_eq!((x.timestamp.clone(), x.bin.clone()), (y.timestamp.clone(), y.bin.clone()));
    let differ = (0..x.len()).filter(|&r| x.intensity[r] != y.intensity[r]).count();
    assert!(differ > 0, "the physical model changed nothing");
    // A variant made before the physical model reads as the seed's.
    let text = std::fs::read_to_string(seed_out.join(glint_record::AUGMENTATION_FILE)).unwrap();
    let mut old: serde_json::Value = serde_json::from_str(&text).unwrap();
    old.as_object_mut().unwrap().remove("return_model");
    old.as_object_mut().unwrap().remove("physical_model");
    std::fs::write(seed_out.join(glint_record::AUGMENTATION_FILE), old.to_string()).unwrap();
    assert_eq!(read_augmentation(&seed_out).unwrap().return_model, "seed");
}

#[test]
fn bad_sessions_are_errors_naming_the_file() {
    let rec = record("bad");
    let table = MaterialTable::default();
    let export = |out: &Path| {
        export_variant(&rec.session, out, &settings(&rec.bake, Some(3)), provenance(&rec.bake, &rec.model, &table))
    };
    // Not a session.
    let nowhere = rec.session.join("nowhere");
    let err = export_variant(
        &nowhere,
        &rec.session.join("v0"),
        &settings(&rec.bake, Some(3)),
        provenance(&rec.bake, &rec.model, &table),
    )
    .unwrap_err();
    assert!(err.to_string().contains("is not a glint recording session"), "{err}");
    // A sidecar of format version 1, without a pose table.
    let chunk = rec.session.join("data/chunk-000");
    let json = chunk.join("lidar-spin-000.json");
    let original = std::fs::read_to_string(&json).unwrap();
    let mut value: serde_json::Value = serde_json::from_str(&original).unwrap();
    value.as_object_mut().unwrap().remove("poses");
    std::fs::write(&json, serde_json::to_string(&value).unwrap()).unwrap();
    let err = export(&rec.session.join("v1")).unwrap_err();
    assert!(matches!(err, RecordError::NoPoses { .. }), "{err}");
    assert!(err.to_string().contains("lidar-spin-000.parquet' has no pose table"), "{err}");
    std::fs::write(&json, &original).unwrap();
    // A changed lidar file.
    let lidar = chunk.join("lidar-livox-000.parquet");
    let good = std::fs::read(&lidar).unwrap();
    let mut bytes = good.clone();
    let mid = bytes.len() / 3;
    bytes[mid] ^= 0x10;
    std::fs::write(&lidar, &bytes).unwrap();
    let err = export(&rec.session.join("v2")).unwrap_err();
    assert!(err.to_string().contains("lidar-livox-000.parquet' does not match its sidecar"), "{err}");
    assert!(!rec.session.join("v2").exists());
    std::fs::write(&lidar, &good).unwrap();
    // A truncated pose table whose sidecar agrees: rows without poses.
    let poses = chunk.join("lidar-livox-000.poses.parquet");
    let pose_bytes = std::fs::read(&poses).unwrap();
    std::fs::write(&poses, &pose_bytes[..pose_bytes.len() / 2]).unwrap();
    let mut value: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(chunk.join("lidar-livox-000.json")).unwrap()).unwrap();
    value["poses"]["sha256"] = serde_json::Value::String(file_sha256(&poses).unwrap());
    std::fs::write(chunk.join("lidar-livox-000.json"), serde_json::to_string(&value).unwrap()).unwrap();
    let err = export(&rec.session.join("v3")).unwrap_err();
    assert!(err.to_string().contains("lidar-livox-000.poses.parquet"), "{err}");
    assert!(!rec.session.join("v3").exists());
}
