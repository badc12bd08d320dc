//! `glint bench rays` end to end, in its short mode, and its answers to bad input.

use std::path::PathBuf;
use std::process::{Command, Output};

fn glint(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_glint")).args(args).output().expect("glint runs")
}

fn example(name: &str) -> String {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", name].iter().collect();
    p.to_string_lossy().into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Runs a command that must fail cleanly, and returns its error text.
fn fails(args: &[&str]) -> String {
    let o = glint(args);
    let err = stderr(&o);
    assert!(!o.status.success(), "{args:?} should fail");
    assert!(!err.contains("panicked"), "{args:?} panicked: {err}");
    err
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-cli-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn bench_json_reports_rates_ratio_and_agreement() {
    let o = glint(&["bench", "rays", &example("crowded.xml"), "--pattern", "os1-64", "--repeats", "5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    for key in
        ["rays", "glint_rays_per_s", "glint_rays_per_s_1thread", "mujoco_rays_per_s", "hit_mismatch", "max_abs_diff_m"]
    {
        assert!(v.get(key).is_some(), "missing key {key}");
    }
    assert_eq!(v["rays"], 65_536);
    assert_eq!(v["hit_mismatch"], 0, "glint must agree with mj_ray on every ray");
    assert_eq!(v["geom_mismatch"], 0, "the same geom on every ray");
    assert!(v["max_abs_diff_m"].as_f64().unwrap() < 1e-9);
    assert!(v["max_normal_diff"].as_f64().unwrap() < 1e-9, "normals compared too: {v}");
    assert_eq!(v["disagreements"], serde_json::json!({}), "no ray disagrees, by any cause");
    // Well-formed figures, not a verdict on speed: tests run beside each other, where a timing
    // ratio is noise (`make bench` measures it).
    for key in ["glint_rays_per_s", "glint_rays_per_s_1thread", "mujoco_rays_per_s", "speedup_1thread"] {
        let x = v[key].as_f64().unwrap();
        assert!(x.is_finite() && x > 0.0, "{key} = {x}");
    }
    assert!(v["hits"].as_u64().unwrap() > 50_000);
}

#[test]
fn bench_table_and_worlds() {
    let o =
        glint(&["bench", "rays", &example("primitives.xml"), "--pattern", "2000", "--worlds", "3", "--repeats", "5"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("3 world(s)"), "{out}");
    assert!(out.contains("6000 rays") || out.contains("2000: 6000 rays"), "{out}");
    assert!(out.contains("0 hit/miss and 0 geom mismatches"), "{out}");
    assert!(!out.contains("rays disagree"), "{out}");
}

#[test]
fn missing_scene_file_is_named() {
    let err = fails(&["bench", "rays", "/nonexistent/scene.xml"]);
    assert!(err.contains("/nonexistent/scene.xml") && err.contains("cannot read"), "{err}");
}

#[test]
fn malformed_xml_gives_mujocos_message() {
    let dir = temp_dir("malformed");
    let path = dir.join("bad.xml");
    std::fs::write(&path, "<mujoco><worldbody><geom type='sphere' size='1'></worldbody>").unwrap();
    let err = fails(&["bench", "rays", path.to_str().unwrap()]);
    assert!(err.contains("MuJoCo could not load") && err.contains("bad.xml"), "{err}");
}

#[test]
fn mesh_that_does_not_load_is_named() {
    let dir = temp_dir("badmesh");
    std::fs::write(dir.join("junk.stl"), b"this is not an stl file").unwrap();
    let path = dir.join("scene.xml");
    std::fs::write(&path, "<mujoco><asset><mesh name='m' file='junk.stl'/></asset><worldbody><geom type='mesh' mesh='m'/></worldbody></mujoco>").unwrap();
    let err = fails(&["bench", "rays", path.to_str().unwrap()]);
    assert!(err.contains("junk.stl"), "{err}");
}

#[test]
fn unknown_pattern_and_zero_rays_are_rejected() {
    let err = fails(&["bench", "rays", &example("primitives.xml"), "--pattern", "hdl64"]);
    assert!(err.contains("unknown pattern 'hdl64'"), "{err}");
    let err = fails(&["bench", "rays", &example("primitives.xml"), "--pattern", "0"]);
    assert!(err.contains("0 rays"), "{err}");
}

#[test]
fn bad_origin_and_counts_are_rejected() {
    let err = fails(&["bench", "rays", &example("primitives.xml"), "--origin", "nan,0,1"]);
    assert!(err.contains("nan,0,1"), "{err}");
    let err = fails(&["bench", "rays", &example("primitives.xml"), "--origin", "1,2"]);
    assert!(err.contains("X,Y,Z"), "{err}");
    let err = fails(&["bench", "rays", &example("primitives.xml"), "--worlds", "0"]);
    assert!(err.contains("--worlds"), "{err}");
}

#[test]
fn bench_lidar_compares_the_sensor_api_with_the_bare_core() {
    let o =
        glint(&["bench", "lidar", &example("crowded.xml"), "--preset", "ouster-os1-64", "--repeats", "5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["beams"], 65_536);
    assert!(v["hits"].as_u64().unwrap() > 40_000, "{v}");
    // Figures, not a verdict: tests run beside each other, where a timing ratio is noise
    // (`make bench` reports it in full).
    for key in ["sensor_s", "core_s", "sensor_over_core"] {
        let x = v[key].as_f64().unwrap();
        assert!(x.is_finite() && x > 0.0, "{key} = {x}");
    }
    let err = fails(&["bench", "lidar", &example("crowded.xml"), "--preset", "hdl-64"]);
    assert!(err.contains("unknown lidar scan preset 'hdl-64'"), "{err}");
}

#[test]
fn bench_rangefinder_compares_an_array_with_mujoco_sensordata() {
    let args = ["bench", "rangefinder", &example("meshes.xml"), "--count", "300", "--steps", "100", "--repeats", "5"];
    let o = glint(&[&args[..], &["--json"]].concat());
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["rangefinders"], 300);
    assert_eq!((v["steps_compared"].as_u64(), v["values_compared"].as_u64()), (Some(101), Some(30_300)));
    assert_eq!(v["mismatches"], 0, "every value equals MuJoCo's sensordata: {v}");
    assert!(v["max_abs_diff"].as_f64().unwrap() <= 1e-12, "{v}");
    assert!(v["hits"].as_u64().unwrap() > 10_000, "the array sees the scene: {v}");
    // Figures, not a verdict: a timing ratio is noise beside other tests (`make bench`).
    for key in ["glint_s", "mujoco_s", "speedup"] {
        let x = v[key].as_f64().unwrap();
        assert!(x.is_finite() && x > 0.0, "{key} = {x}");
    }
    let text = glint(&args);
    assert!(String::from_utf8_lossy(&text.stdout).contains("speed-up over MuJoCo"), "{}", stderr(&text));
    let err = fails(&["bench", "rangefinder", &example("meshes.xml"), "--count", "0"]);
    assert!(err.contains("--count"), "{err}");
}

/// The repository's pinned Python (plyfile, numpy), installed by `make test`.
fn python() -> PathBuf {
    let p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", ".deps", "venv", "bin", "python"].iter().collect();
    assert!(p.exists(), "{} is missing: run `make test`, which installs the pinned Python packages", p.display());
    p
}

#[test]
fn scan_writes_a_ply_other_tools_read_and_pngs() {
    let out = temp_dir("scan");
    let o = glint(&["scan", &example("primitives.toml"), "--out", out.to_str().unwrap(), "--colour-by", "height"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    assert!(text.contains("28800 beams") && text.contains("hit rate") && text.contains("per full scan"), "{text}");
    let hits: usize = text.split(" hits").next().unwrap().rsplit(' ').next().unwrap().parse().unwrap();
    assert!(hits > 10_000, "{text}");
    // Read the cloud with plyfile, a reader that is not ours.
    let script = format!(
        "import plyfile, numpy as np\n\
         v = plyfile.PlyData.read(r'{}')['vertex']\n\
         names = [p.name for p in v.properties]\n\
         assert names == ['x', 'y', 'z', 'range', 'channel', 'bin', 'geom', 'timestamp'], names\n\
         assert np.all(np.isfinite(v['x'])) and np.all(v['range'] > 0) and np.all(v['geom'] >= 0)\n\
         assert v['channel'].max() <= 15 and v['bin'].max() <= 1799\n\
         assert np.all(v['timestamp'] > 0)\n\
         print(len(v['x']))",
        out.join("lidar.ply").display()
    );
    let py = Command::new(python()).args(["-c", &script]).output().expect("python runs");
    assert!(py.status.success(), "plyfile could not read the PLY: {}", String::from_utf8_lossy(&py.stderr));
    assert_eq!(String::from_utf8_lossy(&py.stdout).trim(), hits.to_string());
    for (png, w, h) in [("lidar-top.png", 1024, 1024), ("lidar-range.png", 1800, 64)] {
        let img = image::open(out.join(png)).unwrap_or_else(|e| panic!("{png}: {e}"));
        assert_eq!((img.width(), img.height()), (w, h), "{png}");
        assert!(img.to_rgb8().pixels().any(|p| p.0 != [0, 0, 0]), "{png} is blank");
    }
    std::fs::remove_dir_all(&out).ok();
}

#[test]
fn scan_applies_a_preset_and_names_bad_input() {
    let out = temp_dir("scan-preset");
    let o = glint(&["scan", &example("crowded.toml"), "--preset", "livox-mid360", "--out", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("20000 beams"));
    assert!(!out.join("lidar-range.png").exists(), "no range image for a non-repetitive pattern");
    let err = fails(&["scan", &example("crowded.toml"), "--sensor", "2"]);
    assert!(err.contains("lidar sensor 2 does not exist (1 sensors are bound)"), "{err}");
    let err = fails(&["scan", &example("crowded.toml"), "--preset", "hdl-64"]);
    assert!(err.contains("hdl-64"), "{err}");
    let err = fails(&["scan", "/no/such.toml"]);
    assert!(err.contains("cannot read manifest '/no/such.toml'"), "{err}");
    let bad = out.join("bad.toml");
    std::fs::write(&bad, "scene = \"x.xml\"\n[[lidar]]\nattach_site = \"lidar\"\nchanels = 3\n").unwrap();
    let err = fails(&["scan", bad.to_str().unwrap()]);
    assert!(err.contains("did you mean `channels`"), "{err}");
    std::fs::write(&bad, "scene = \"missing.xml\"\n").unwrap();
    let err = fails(&["scan", bad.to_str().unwrap()]);
    assert!(err.contains("binds no lidar"), "{err}");
    std::fs::remove_dir_all(&out).ok();
}

/// A shelf whose collision box (group 3, no material) covers two visual boxes.
const BAKE_XML: &str = r#"<mujoco>
  <asset>
    <material name="glass" rgba="0.7 0.8 0.9 0.3"/>
    <material name="paint" rgba="0.9 0.9 0.2 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <geom name="left" type="box" pos="-0.5 0 0.5" size="0.5 0.5 0.5" material="glass" contype="0" conaffinity="0"/>
    <geom name="right" type="box" pos="0.5 0 0.5" size="0.5 0.5 0.5" material="paint" contype="0" conaffinity="0"/>
    <geom name="collision" type="box" pos="0 0 0.5" size="1.02 0.52 0.52" group="3"/>
  </worldbody>
</mujoco>"#;

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Runs `glint bake ARGS` that must succeed, and returns its standard output.
fn bake(args: &[&str]) -> String {
    let o = glint(&[&["bake"], args].concat());
    assert!(o.status.success(), "glint bake {args:?}: {}", stderr(&o));
    stdout(&o)
}

#[test]
fn bake_writes_the_file_and_status_follows_material_edits() {
    let dir = temp_dir("bake");
    std::fs::write(dir.join("shelf.xml"), BAKE_XML).unwrap();
    let manifest = dir.join("shelf.toml");
    let m = manifest.to_str().unwrap();
    let write = |glass_preset: &str| {
        let text =
            format!("scene = \"shelf.xml\"\n[bake]\ncell_size = 0.1\n[materials.glass]\npreset = \"{glass_preset}\"\n");
        std::fs::write(&manifest, text).unwrap();
    };
    write("clear-float-glass");

    // Nothing baked yet.
    let out = bake(&[m, "--status"]);
    assert!(out.contains("valid = false"), "{out}");

    let out = bake(&[m]);
    let file = dir.join("MaterialBakes").join("scene.lvxb");
    assert!(file.exists(), "{out}");
    for line in [
        "valid = true",
        "format_version = 2",
        "cell_size = 0.1",
        "splat_radius = 1",
        "geom_materials = 4",
        "stale = false",
    ] {
        assert!(out.contains(line), "missing {line}: {out}");
    }
    let filled: u64 = out.split("filled_cells = ").nth(1).unwrap().lines().next().unwrap().parse().unwrap();
    assert!(filled > 200, "{out}");
    let out = bake(&[m, "--status"]);
    assert!(out.contains("valid = true") && out.contains("stale = false"), "{out}");

    // Editing a material makes the saved bake stale (exit status 1); baking again fixes it.
    write("tinted-glass");
    let o = glint(&["bake", m, "--status"]);
    assert_eq!(o.status.code(), Some(1), "{}", stdout(&o));
    assert!(stdout(&o).contains("stale = true") && stdout(&o).contains("matches_scene = true"), "{}", stdout(&o));
    assert!(stderr(&o).contains("is stale: the scene's materials"), "{}", stderr(&o));
    bake(&[m]);
    assert!(bake(&[m, "--status"]).contains("stale = false"));

    // Flags override the manifest's [bake] for one bake, under another name.
    let out = bake(&[m, "--name", "coarse", "--cell-size", "0.25", "--splat-radius", "0", "--include-hidden"]);
    assert!(out.contains("cell_size = 0.25") && out.contains("splat_radius = 0"), "{out}");
    assert!(dir.join("MaterialBakes").join("coarse.lvxb").exists());
    assert!(bake(&[m, "--status", "--name", "coarse"]).contains("splat_radius = 0"));

    // A cell max_dim has to grow is reported, by the bake and by its status.
    let o = glint(&["bake", m, "--name", "capped", "--cell-size", "0.01", "--max-dim", "16"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let err = stderr(&o);
    assert!(err.contains("the grid's cell is") && err.contains("m, not the requested 0.01 m"), "{err}");
    assert!(err.contains("16 cells per axis (max_dim)"), "{err}");
    let status = bake(&[m, "--status", "--name", "capped"]);
    assert!(status.contains("requested_cell_size = 0.01"), "{status}");
    let cell: f64 = status.split("\ncell_size = ").nth(1).unwrap().lines().next().unwrap().parse().unwrap();
    assert!(cell > 0.1, "{status}");
    let o = glint(&["bake", m, "--name", "uncapped", "--cell-size", "0.1"]);
    assert!(!stderr(&o).contains("not the requested"), "{}", stderr(&o));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bake_names_bad_input() {
    let dir = temp_dir("bake-bad");
    std::fs::write(dir.join("shelf.xml"), BAKE_XML).unwrap();
    let manifest = dir.join("shelf.toml");
    let m = manifest.to_str().unwrap();
    std::fs::write(&manifest, "scene = \"shelf.xml\"\n[materials.glas]\npreset = \"mirror\"\n").unwrap();
    let err = fails(&["bake", m]);
    assert!(err.contains("[materials.glas]") && err.contains("did you mean `glass`?"), "{err}");
    std::fs::write(&manifest, "scene = \"shelf.xml\"\n").unwrap();
    let err = fails(&["bake", m, "--cell-size", "0"]);
    assert!(err.contains("cell_size"), "{err}");
    let err = fails(&["bake", m, "--name", "../escape"]);
    assert!(err.contains("bake name '../escape' is not usable"), "{err}");
    let err = fails(&["bake", m, "--include-hidden", "--exclude-hidden"]);
    assert!(err.contains("cannot be used with"), "{err}");
    // A damaged bake is named, with what is wrong.
    let file = dir.join("MaterialBakes").join("scene.lvxb");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, b"LVXB\x01\x00\x00\x00short").unwrap();
    let err = fails(&["bake", m, "--status"]);
    assert!(err.contains(&file.display().to_string()) && err.contains("truncated"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bake_the_showroom_and_edit_a_material_in_a_copy() {
    let dir = temp_dir("bake-showroom");
    for f in ["showroom.xml", "showroom.toml"] {
        std::fs::copy(example(&format!("showroom/{f}")), dir.join(f)).unwrap();
    }
    let manifest = dir.join("showroom.toml");
    let m = manifest.to_str().unwrap();
    let out = bake(&[m]);
    assert!(dir.join("MaterialBakes").join("showroom.lvxb").exists(), "{out}");
    assert!(out.contains("stale = false"), "{out}");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let edited = text.replacen("preset = \"clear-float-glass\"", "preset = \"low-e-glass\"", 1);
    assert_ne!(edited, text, "the showroom's glass material moved");
    std::fs::write(&manifest, edited).unwrap();
    let o = glint(&["bake", m, "--status"]);
    assert!(!o.status.success() && stdout(&o).contains("stale = true"), "{}", stdout(&o));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn scan_material_draws_the_material_modes_from_a_bake() {
    let dir = temp_dir("scan-material");
    for f in ["showroom.xml", "showroom.toml"] {
        std::fs::copy(example(&format!("showroom/{f}")), dir.join(f)).unwrap();
    }
    let manifest = dir.join("showroom.toml");
    let m = manifest.to_str().unwrap();
    // No bake yet: the error says how to make one.
    let err = fails(&["scan", m, "--material", "--out", dir.join("none").to_str().unwrap()]);
    assert!(err.contains("glint bake"), "{err}");
    bake(&[m]);
    let modes = ["intensity", "nir-reflectivity", "metal-reflectance", "dropout-prob", "calibrated-reflectivity"];
    for mode in modes {
        let out = dir.join(mode);
        let o = glint(&["scan", m, "--material", "--colour-by", mode, "--size", "256", "--out", out.to_str().unwrap()]);
        assert!(o.status.success(), "{mode}: {}", stderr(&o));
        assert!(stdout(&o).contains("return model (showroom)"), "{}", stdout(&o));
        let img = image::open(out.join("roof-top.png")).unwrap().to_rgb8();
        // Real values: ramp colours, not only the solid green of an unconfigured read.
        let coloured = img.pixels().filter(|p| p.0 != [0, 0, 0] && p.0 != [0, 200, 0]).count();
        assert!(coloured > 500, "{mode}: {coloured} coloured pixels");
    }
    // The material PLY carries the model's columns.
    let script = format!(
        "import plyfile, numpy as np\n\
         v = plyfile.PlyData.read(r'{}')['vertex']\n\
         names = [p.name for p in v.properties]\n\
         assert names[-3:] == ['intensity', 'reflectivity', 'echo'], names\n\
         assert v['reflectivity'].max() > 100, 'the retroreflective sign'\n\
         assert (v['echo'] == 1).sum() > 100, 'two echoes behind the glass'\n",
        dir.join("intensity").join("roof.ply").display()
    );
    let py = Command::new(python()).args(["-c", &script]).output().expect("python runs");
    assert!(py.status.success(), "{}", String::from_utf8_lossy(&py.stderr));
    // A material mode without --material says so and draws solid green.
    let out = dir.join("solid");
    let o = glint(&["scan", m, "--colour-by", "intensity", "--size", "256", "--out", out.to_str().unwrap()]);
    assert!(o.status.success() && stderr(&o).contains("--material"), "{}", stderr(&o));
    let img = image::open(out.join("roof-top.png")).unwrap().to_rgb8();
    assert!(img.pixels().all(|p| p.0 == [0, 0, 0] || p.0 == [0, 200, 0]));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bench_returns_compares_material_and_clean_scans() {
    let o = glint(&["bench", "returns", &example("showroom/showroom.toml"), "--repeats", "5", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["beams"], 65_536);
    assert_eq!(v["capture"], "Both");
    for key in ["material_over_clean", "material_over_clean_captured", "physical_over_seed", "footprints_over_seed"] {
        let ratio = v[key].as_f64().unwrap();
        assert!(ratio.is_finite() && ratio > 0.0, "{key} = {ratio}");
    }
    // The model drops some beams and finds second echoes behind the glass.
    let (hits, echoes) = (v["clean_hits"].as_u64().unwrap(), v["material_echoes"].as_u64().unwrap());
    assert!(echoes < hits && echoes > hits * 9 / 10, "{echoes} of {hits}");
    assert!(v["secondary_echoes"].as_u64().unwrap() > 100);
}

#[test]
fn bench_variants_reports_throughput_and_memory_of_per_world_assets() {
    let o = glint(&[
        "bench",
        "variants",
        &example("variants.toml"),
        "--worlds",
        "8",
        "--steps",
        "2",
        "--repeats",
        "1",
        "--json",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!((v["worlds"].as_u64(), v["variants"].as_u64(), v["meshes"].as_u64()), (Some(8), Some(2), Some(8)));
    assert_eq!(v["geometries"], 2, "the worlds of each variant share one geometry");
    for key in ["ratio", "randomized_steps_per_s", "identical_steps_per_s", "bytes_per_world"] {
        let x = v[key].as_f64().unwrap();
        assert!(x.is_finite() && x > 0.0, "{key} = {x}");
    }
    assert!(v["shared_bytes"].as_f64().unwrap() > 8.0 * v["bytes_per_world"].as_f64().unwrap());
    let o = glint(&["bench", "variants", &example("meshes.toml"), "--worlds", "2"]);
    assert!(!o.status.success() && stderr(&o).contains("no [variants] table"), "{}", stderr(&o));
}

#[test]
fn bench_record_reports_the_cost_of_recording_as_a_ratio() {
    let out = temp_dir("bench-record");
    let o = glint(&[
        "bench",
        "record",
        &example("showroom/showroom.toml"),
        "--seconds",
        "1",
        "--repeats",
        "1",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("one JSON object");
    assert_eq!(v["rows"], 655_360);
    let ratio = v["on_over_off"].as_f64().unwrap();
    assert!(ratio.is_finite() && ratio > 0.0, "{ratio}");
    assert!(!out.exists(), "the bench removes its sessions");
}

#[test]
fn numeric_arguments_take_a_leading_minus_and_answer_with_their_range() {
    let m = example("showroom/showroom.toml");
    let scene = example("showroom/showroom.xml");
    for (args, expect) in [
        (vec!["run", &m, "--seconds", "-1"], "'-1' is not a number of seconds in (0, 86400]"),
        (vec!["run", &m, "--episodes", "-2"], "-2 is not in 1..=100000"),
        (vec!["run", &m, "--worlds", "-2"], "-2 is not in 1..=4096"),
        (vec!["scan", &m, "--sensor", "-1"], "'-1' is not a sensor index"),
        (vec!["scan", &m, "--ticks", "-5"], "-5 is not in 1.."),
        (vec!["scan", &m, "--size", "-64"], "-64 is not in 64..=8192"),
        (vec!["bake", &m, "--cell-size", "-0.5"], "`cell_size` is -0.5, outside its range 0.001 to 10 m"),
        (vec!["bake", &m, "--max-dim", "-1"], "-1 is not in 1..=1024"),
        (vec!["bake", &m, "--splat-radius", "-3"], "`splat_radius` is -3, outside its range 0 to 16 cells"),
        (vec!["bench", "rays", &scene, "--origin", "-1,0,nan"], "'-1,0,nan' is not a finite point"),
        (vec!["bench", "rays", &scene, "--worlds", "-1"], "-1 is not in 1.."),
        (vec!["bench", "record", &m, "--repeats", "-1"], "-1 is not in 1.."),
        (vec!["replay", "/nonexistent", "--episode", "-1"], "-1 is not in 0.."),
    ] {
        let err = fails(&args);
        assert!(err.contains(expect), "{args:?}: {err}");
        assert!(!err.contains("-- -"), "{args:?} got clap's tip: {err}");
    }
    // A flag is still not taken for a value.
    let err = fails(&["scan", &m, "--out", "--material"]);
    assert!(err.contains("a value is required"), "{err}");
}

#[test]
fn lidar_binding_mistakes_are_named_with_the_component_or_the_nearest_name() {
    let dir = temp_dir("binding");
    std::fs::copy(example("showroom/showroom.xml"), dir.join("showroom.xml")).unwrap();
    let text = std::fs::read_to_string(example("showroom/showroom.toml")).unwrap();
    let manifest = dir.join("showroom.toml");
    let m = manifest.to_str().unwrap();
    let with = |extra: &str| {
        let edited = text.replacen("attach_site = \"lidar\"\n", &format!("attach_site = \"lidar\"\n{extra}\n"), 1);
        assert_ne!(edited, text);
        std::fs::write(&manifest, edited).unwrap();
    };
    with("mount_offset = [nan, 0.0, 0.0]");
    let err = fails(&["scan", m, "--out", dir.join("out").to_str().unwrap()]);
    assert!(err.contains("`mount_offset` component 0 is NaN, outside its range finite metres"), "{err}");
    with("attach_body = \"robt\"");
    let err = fails(&["scan", m, "--out", dir.join("out").to_str().unwrap()]);
    assert!(err.contains("attaches to body 'robt', which the model does not have; did you mean 'robot'?"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}
