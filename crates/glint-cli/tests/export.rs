//! `glint export` end to end on a recorded showroom session: determinism by seed, provenance
//! traced to the files on disk and to the bake, stale bakes refused unless allowed, the variant
//! read back with pyarrow, and the physics of glass and mirror rows.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use glint_lidar::RETURN_PARAMS;
use glint_mujoco::Model;
use glint_record::file_sha256;
use serde_json::Value;

mod common;
use common::*;

/// A copy of the showroom in a fresh folder, a 0.4 s session of it, and its bake.
struct Showroom {
    dir: PathBuf,
    manifest: PathBuf,
    session: PathBuf,
}

impl Showroom {
    fn new(tag: &str) -> Showroom {
        let dir = std::env::temp_dir().join(format!("glint-export-cli-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for f in ["showroom.xml", "showroom.toml"] {
            std::fs::copy(example(&format!("showroom/{f}")), dir.join(f)).unwrap();
        }
        let manifest = dir.join("showroom.toml");
        let out = dir.join("out");
        ok(&["run", s(&manifest), "--seconds", "0.4", "--out", s(&out)]);
        let session = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
        ok(&["bake", s(&manifest)]);
        Showroom { dir, manifest, session }
    }

    fn export(&self, extra: &[&str]) -> Output {
        glint(&[&["export", s(&self.session), "--bake", "showroom"], extra].concat())
    }
}

impl Drop for Showroom {
    fn drop(&mut self) {
        std::fs::remove_dir_all(&self.dir).ok();
    }
}

const FILE: &str = "data/chunk-000/lidar-roof-000.parquet";

fn augmentation(variant: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(variant.join("augmentation.json")).unwrap()).unwrap()
}

#[test]
fn exports_are_deterministic_traceable_and_physical() {
    let room = Showroom::new("main");
    let (a, b, c) = (room.dir.join("a"), room.dir.join("b"), room.dir.join("c"));
    for out in [&a, &b] {
        let o = room.export(&["--seed", "3", "--out", s(out)]);
        let (stdout, err) = text(&o);
        assert!(o.status.success(), "{err}");
        assert!(stdout.contains("262144 rows") && stdout.contains("augmentation.json"), "{stdout}");
    }
    // The same seed gives byte-identical files; another seed does not.
    let bytes = |dir: &Path| std::fs::read(dir.join(FILE)).unwrap();
    assert_eq!(bytes(&a), bytes(&b), "two exports with one seed differ");
    ok(&["export", s(&room.session), "--bake", "showroom", "--seed", "4", "--out", s(&c)]);
    assert_ne!(bytes(&a), bytes(&c), "another seed gave the same variant");

    // augmentation.json traces the variant to its sources and its bake.
    let aug = augmentation(&a);
    assert_eq!(aug["seed"], 3);
    assert_eq!(aug["return_preset"], "ouster-os1", "the manifest's [return_model] is the Ouster preset");
    assert_eq!(aug["glint_version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(aug["stale"], false);
    let session = PathBuf::from(aug["source_session"].as_str().unwrap());
    assert_eq!(std::fs::canonicalize(&room.session).unwrap(), session);
    let files = aug["files"].as_array().unwrap();
    assert_eq!(files.len(), 1);
    let f = &files[0];
    assert_eq!(f["source"], FILE);
    assert_eq!(f["source_sha256"].as_str().unwrap(), file_sha256(&session.join(FILE)).unwrap());
    let poses = f["poses"].as_str().unwrap();
    assert_eq!(poses, "data/chunk-000/lidar-roof-000.poses.parquet");
    assert_eq!(f["poses_sha256"].as_str().unwrap(), file_sha256(&session.join(poses)).unwrap());
    assert_eq!(f["variant_sha256"].as_str().unwrap(), file_sha256(&a.join(f["variant"].as_str().unwrap())).unwrap());
    let sidecar: Value =
        serde_json::from_str(&std::fs::read_to_string(session.join(FILE).with_extension("json")).unwrap()).unwrap();
    assert_eq!(f["source_sha256"], sidecar["sha256"]);
    let params = aug["return_params"].as_object().unwrap();
    assert_eq!(params.len(), 17);
    for name in RETURN_PARAMS.map(|p| p.name) {
        assert!(params[name].is_number(), "{name} missing");
    }
    assert_eq!(params["maxRangeAtRef"], 170.0);
    assert_eq!(params["maxReturns"], 2);
    let status = ok(&["bake", s(&room.manifest), "--status"]);
    let fingerprint = status.split("material_fingerprint = \"").nth(1).unwrap().split('"').next().unwrap();
    assert_eq!(aug["bake"]["material_fingerprint"], fingerprint);
    assert_eq!(aug["bake"]["status"]["material_fingerprint"], fingerprint);
    assert_eq!(aug["bake"]["name"], "showroom");
    assert!(aug["bake"]["path"].as_str().unwrap().ends_with("MaterialBakes/showroom.lvxb"));
    assert_eq!(aug["bake"]["status"]["valid"], true);
    assert_eq!(aug["bake"]["status"]["stale"], false);
    let geoms = aug["bake"]["status"]["geom_materials"].as_u64().unwrap();
    assert!(geoms > 30, "{geoms}");

    // A preset by name, and the default folder inside the session.
    ok(&["export", s(&room.session), "--bake", "showroom", "--return-preset", "generic"]);
    let default = room.session.join("variants/showroom-generic-recorded-seeds");
    let aug = augmentation(&default);
    assert_eq!(aug["return_preset"].as_str(), Some("generic"));
    assert!(aug["seed"].is_null(), "without --seed each episode keeps its recorded seed");
    let sidecar: Value =
        serde_json::from_str(&std::fs::read_to_string(room.session.join(FILE).with_extension("json")).unwrap())
            .unwrap();
    assert_eq!(aug["files"][0]["seed"], sidecar["episode_seed"]);
    assert_eq!(aug["return_params"]["maxReturns"], 1);
    // It is never overwritten.
    let before = std::fs::read(default.join(FILE)).unwrap();
    let err = fails(&["export", s(&room.session), "--bake", "showroom", "--return-preset", "generic"]);
    assert!(err.contains("already exists") && err.contains("never overwritten"), "{err}");
    assert_eq!(std::fs::read(default.join(FILE)).unwrap(), before);
    // The session still passes its own self-check.
    ok(&["replay", s(&room.session)]);

    // The variant with pyarrow: columns, types, misses, and the physics of the showroom. The
    // storefront's near face is at x = 4.0 and the back wall's at x = 6.5: from a sensor at x
    // (the pose table says where it was at each tick; the manifest's controller may drive the
    // robot), a beam through the pane reports the wall at (6.5 - x) / (4 - x) of the pane's
    // range, 2.5 m further head-on. The mirror's beams report phantoms beyond it: the surfaces
    // they fold onto.
    let model = Model::from_xml_file(room.dir.join("showroom.xml")).unwrap();
    let geom = |name: &str| model.scene().geom_name.iter().position(|n| n == name).unwrap();
    let script = format!(
        "import pyarrow.parquet as pq\n\
         v = pq.read_table(r'{variant}')\n\
         want = [('timestamp','double'),('bin','uint16'),('channel','uint16'),('range','float'),('intensity','float'),\n\
                 ('reflectivity_calibrated','float'),('secondary_range','float'),('geom_id','int32')]\n\
         assert [(f.name, str(f.type)) for f in v.schema] == want, v.schema\n\
         src = pq.read_table(r'{source}').to_pydict()\n\
         poses = pq.read_table(r'{poses}').to_pydict()\n\
         x_at = dict(zip(poses['timestamp'], poses['x']))\n\
         assert len(x_at) == 20 and all(t in x_at for t in set(src['timestamp']))\n\
         v = v.to_pydict()\n\
         n = len(v['range'])\n\
         assert n == len(src['range']) == 262144, n\n\
         assert v['timestamp'] == src['timestamp'] and v['bin'] == src['bin'] and v['channel'] == src['channel']\n\
         miss = [i for i in range(n) if src['range'][i] == -1.0]\n\
         assert miss and all(v['range'][i] == -1.0 and v['geom_id'][i] == -1 and v['intensity'][i] == -1.0 for i in miss)\n\
         pane = [i for i in range(n) if src['geom_id'][i] == {pane}]\n\
         ratio = lambda i: (6.5 - x_at[src['timestamp'][i]]) / (4.0 - x_at[src['timestamp'][i]])\n\
         behind = [i for i in pane if abs(v['range'][i] - ratio(i) * src['range'][i]) < 0.15]\n\
         wall = [i for i in pane if v['geom_id'][i] == {back_wall}]\n\
         assert len(behind) > 0.7 * len(pane), (len(behind), len(pane))\n\
         assert len(wall) > 0.6 * len(pane), (len(wall), len(pane))\n\
         mirror = [i for i in range(n) if src['geom_id'][i] == {mirror}]\n\
         echo = [i for i in mirror if v['range'][i] >= 0]\n\
         phantom = [i for i in echo if v['range'][i] > src['range'][i] + 1.0 and v['geom_id'][i] != {mirror}]\n\
         assert len(phantom) > 0.4 * len(mirror) and len(phantom) > 0.8 * len(echo), (len(phantom), len(echo), len(mirror))\n\
         head_on = [v['range'][i] - src['range'][i] for i in behind if src['range'][i] < 4.02 - x_at[src['timestamp'][i]]]\n\
         assert head_on and all(abs(d - 2.5) < 0.25 for d in head_on), sorted(head_on)[-5:]\n\
         print(len(pane), len(behind), len(mirror), len(phantom))",
        variant = a.join(FILE).display(),
        source = room.session.join(FILE).display(),
        poses = room.session.join("data/chunk-000/lidar-roof-000.poses.parquet").display(),
        pane = geom("storefront_pane"),
        back_wall = geom("back_wall"),
        mirror = geom("mirror"),
    );
    let counts = python_ok(&script);
    eprintln!("pane rows, behind the pane, mirror rows, phantoms: {counts}");
}

#[test]
fn a_stale_bake_is_refused_unless_allowed() {
    let room = Showroom::new("stale");
    let original = std::fs::read_to_string(&room.manifest).unwrap();
    let edited = original.replacen("preset = \"clear-float-glass\"", "preset = \"low-e-glass\"", 1);
    assert_ne!(edited, original, "the showroom's glass material moved");
    std::fs::write(&room.manifest, edited).unwrap();
    let err = fails(&["export", s(&room.session), "--bake", "showroom"]);
    assert!(err.contains("the bake 'showroom'") && err.contains("is stale"), "{err}");
    assert!(err.contains(&format!("glint bake {}", room.manifest.display())) && err.contains("--allow-stale"), "{err}");
    assert!(!room.session.join("variants").exists(), "a refused export writes nothing");
    let o = room.export(&["--allow-stale"]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    assert!(err.contains("stale"), "{err}");
    let aug = augmentation(&room.session.join("variants/showroom-ouster-os1-recorded-seeds"));
    assert_eq!(aug["stale"], true);
    assert_eq!(aug["bake"]["status"]["stale"], true);
    // Baking again makes it current.
    ok(&["bake", s(&room.manifest)]);
    ok(&["export", s(&room.session), "--bake", "showroom", "--seed", "1"]);
    assert_eq!(augmentation(&room.session.join("variants/showroom-ouster-os1-seed1"))["stale"], false);
}

#[test]
fn bad_input_is_named() {
    let room = Showroom::new("bad");
    let session = s(&room.session);
    // Not a session.
    let err = fails(&["export", s(&room.dir), "--bake", "showroom"]);
    assert!(err.contains("is not a glint recording session"), "{err}");
    // An unknown bake, and a bad name.
    let err = fails(&["export", session, "--bake", "nosuch"]);
    assert!(err.contains("no bake named 'nosuch'") && err.contains("bakes there: showroom"), "{err}");
    let err = fails(&["export", session, "--bake", "../up"]);
    assert!(err.contains("'../up'"), "{err}");
    // An unknown preset is refused by the argument parser (exit status 2), naming the valid ones.
    let o = glint(&["export", session, "--bake", "showroom", "--return-preset", "velodyne"]);
    let (_, err) = text(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("velodyne") && err.contains("ouster-os1"), "{err}");
    // A manifest that is gone, and one given instead.
    let moved = room.dir.join("moved.toml");
    std::fs::rename(&room.manifest, &moved).unwrap();
    let err = fails(&["export", session, "--bake", "showroom"]);
    assert!(err.contains("showroom.toml") && err.contains("--manifest"), "{err}");
    ok(&["export", session, "--bake", "showroom", "--manifest", s(&moved), "--seed", "9"]);
    std::fs::rename(&moved, &room.manifest).unwrap();
    // A damaged recording is named, and leaves no variant behind.
    let file = room.session.join(FILE);
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    let out = room.dir.join("damaged");
    let err = fails(&["export", session, "--bake", "showroom", "--out", s(&out)]);
    assert!(err.contains("lidar-roof-000.parquet") && err.contains("does not match its sidecar"), "{err}");
    assert!(!out.exists());
}

#[test]
fn exports_say_what_they_lose_and_never_block_a_rerun() {
    // Recorded with the default capture (off): glass, water and mirrors have nothing behind.
    let dir = std::env::temp_dir().join(format!("glint-export-cli-truth-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(example("showroom/showroom.xml"), dir.join("showroom.xml")).unwrap();
    let text_in = std::fs::read_to_string(example("showroom/showroom.toml")).unwrap();
    let manifest = dir.join("showroom.toml");
    std::fs::write(&manifest, text_in.replace("secondary_capture = \"both\"\n", "")).unwrap();
    let out = dir.join("out");
    ok(&["run", s(&manifest), "--seconds", "0.2", "--episodes", "2", "--out", s(&out)]);
    let session = std::fs::read_dir(&out).unwrap().next().unwrap().unwrap().path();
    ok(&["bake", s(&manifest)]);

    let variant = dir.join("v1");
    let o = glint(&["export", s(&session), "--bake", "showroom", "--out", s(&variant)]);
    let (_, err) = text(&o);
    assert!(o.status.success(), "{err}");
    let aug = augmentation(&variant);
    let uncaptured = aug["files"][0]["uncaptured"].as_u64().unwrap();
    assert!(uncaptured > 1000, "beams through the storefront and at the mirror: {uncaptured}");
    assert!(
        err.contains(&format!("episode 0, sensor 'roof': {uncaptured} beams met glass, water, a gap or a mirror"))
            && err.contains("secondary_capture = \"both\""),
        "{err}"
    );

    // An interrupted export's folder aside does not block the next, which writes aside too.
    let second = dir.join("v2");
    let aside = dir.join("v2.partial");
    std::fs::create_dir_all(aside.join("data")).unwrap();
    ok(&["export", s(&session), "--bake", "showroom", "--out", s(&second)]);
    assert!(second.join("augmentation.json").exists() && !aside.exists());

    // A damaged episode file is an error naming it, unless told to skip it.
    let first = session.join("data/chunk-000/lidar-roof-000.parquet");
    let mut bytes = std::fs::read(&first).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(&first, bytes).unwrap();
    let third = dir.join("v3");
    let err = fails(&["export", s(&session), "--bake", "showroom", "--out", s(&third)]);
    assert!(err.contains("lidar-roof-000.parquet") && err.contains("SHA-256"), "{err}");
    assert!(!third.exists() && !dir.join("v3.partial").exists(), "a refused export leaves nothing");
    ok(&["export", s(&session), "--bake", "showroom", "--out", s(&third), "--skip-damaged"]);
    let aug = augmentation(&third);
    assert_eq!(aug["files"].as_array().unwrap().len(), 1);
    let skipped = aug["skipped"].as_array().unwrap();
    assert!(skipped.len() == 1 && skipped[0].as_str().unwrap().contains("lidar-roof-000.parquet: "), "{skipped:?}");

    // A missing one likewise, and named as missing.
    let gone = session.join("data/chunk-000/lidar-roof-001.parquet");
    std::fs::remove_file(&gone).unwrap();
    let err = fails(&["export", s(&session), "--bake", "showroom", "--out", s(&dir.join("v4"))]);
    assert!(err.contains("lidar-roof-001.parquet' cannot be exported: meta/episodes.jsonl lists it"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_export_stopped_midway_leaves_nothing_in_the_way_of_the_next() {
    let room = Showroom::new("sigint");
    let out = room.dir.join("variant");
    let aside = room.dir.join("variant.partial");
    let mut child = Command::new(env!("CARGO_BIN_EXE_glint"))
        .args(["export", s(&room.session), "--bake", "showroom", "--out", s(&out)])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Stop it once it has begun writing aside (or let it be, if it finished first).
    let started = std::time::Instant::now();
    while !aside.exists() && !out.exists() && started.elapsed() < std::time::Duration::from_secs(1800) {
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    let status = child.wait().unwrap();
    if !status.success() {
        assert!(!out.exists(), "a stopped export never leaves a variant that looks finished");
    }
    if out.exists() {
        std::fs::remove_dir_all(&out).unwrap();
    }
    ok(&["export", s(&room.session), "--bake", "showroom", "--out", s(&out)]);
    assert!(out.join("augmentation.json").exists() && !aside.exists());
}
