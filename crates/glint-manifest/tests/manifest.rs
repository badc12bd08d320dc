//! The manifest against the seed's fields, and its errors.

use std::path::Path;

use glint_lidar::{NonRepetitive, ScanPattern, SecondaryCapture, SelfIgnore};
use glint_manifest::Manifest;

fn parse(text: &str) -> Result<Manifest, String> {
    Manifest::parse(text, Path::new("/scenes/robot.toml")).map_err(|e| e.to_string())
}

#[test]
fn a_complete_manifest() {
    let m = parse(
        r#"
        scene = "robot.xml"

        [recorder]
        lidar_runner_hz = 50.0

        [[lidar]]
        name = "roof"
        attach_body = "base"
        attach_site = "lidar"
        mount_offset = [0.0, 0.0, 0.1]
        preset = "ouster-os1-64"
        max_range = 60.0
        geom_group_mask = 7
        self_ignore = "whole-robot"
        secondary_capture = "both"
        see_skins = true

        [[lidar]]
        attach_site = "front"
        pattern = "livox-mid360"
        points_per_cycle = 5000
        vfov_min_deg = -7.0
        vfov_max_deg = 52.0
        "#,
    )
    .unwrap();
    assert_eq!(m.scene, Path::new("/scenes/robot.xml"));
    assert_eq!(m.recorder.lidar_runner_hz, Some(50.0));
    assert_eq!(m.lidar.len(), 2);
    let (a, b) = (&m.lidar[0], &m.lidar[1]);
    assert_eq!(
        (a.name.as_str(), a.attach_site.as_deref(), a.attach_body.as_deref()),
        ("roof", Some("lidar"), Some("base"))
    );
    assert_eq!(a.mount_offset.z, 0.1);
    // The preset first, then the fields that adjust it.
    assert_eq!((a.scan.channels, a.scan.azimuth_bins, a.scan.min_range, a.scan.max_range), (64, 1024, 0.5, 60.0));
    assert_eq!((a.scan.geom_group_mask, a.scan.self_ignore), (7, SelfIgnore::WholeRobot));
    assert_eq!(a.secondary_capture, SecondaryCapture::Both);
    assert!(a.see_skins && !b.see_skins, "skins are seen where asked for, and only there");
    assert_eq!(b.scan.pattern, ScanPattern::NonRepetitive(NonRepetitive::Mid360));
    assert_eq!((b.scan.channels, b.scan.azimuth_bins), (1, 5000));
}

#[test]
fn unknown_keys_name_the_nearest_valid_one() {
    let err = parse("scene = \"a.xml\"\n[[lidar]]\nattach_site = \"s\"\nchanels = 16\n").unwrap_err();
    assert!(err.contains("unknown key `chanels` in [[lidar]] 0; did you mean `channels`?"), "{err}");
    let err = parse("scen = \"a.xml\"\n").unwrap_err();
    assert!(err.contains("unknown key `scen` in the top level; did you mean `scene`?"), "{err}");
    let err = parse("scene = \"a.xml\"\n[recorder]\nlidar_runer_hz = 10.0\n").unwrap_err();
    assert!(err.contains("unknown key `lidar_runer_hz` in [recorder]; did you mean `lidar_runner_hz`?"), "{err}");
    let err = parse("scene = \"a.xml\"\n[recorder]\nlidar_runner_hz = 0.0\n").unwrap_err();
    assert!(err.contains("lidar_runner_hz is 0, outside its range"), "{err}");
    assert_eq!(parse("scene = \"a.xml\"\n").unwrap().recorder.lidar_runner_hz, None);
    let err = parse("scene = \"a.xml\"\nzzzzzz = 1\n").unwrap_err();
    assert!(err.contains("valid keys are scene, lidar, recorder, materials, bake, return_model"), "{err}");
}

#[test]
fn bad_values_are_named_with_their_range_or_choices() {
    let lidar = |extra: &str| parse(&format!("scene = \"a.xml\"\n[[lidar]]\nattach_site = \"s\"\n{extra}\n"));
    for (extra, expect) in [
        ("channels = 0", "`channels` is 0, outside its range 1 to 256"),
        ("channels = -3", "`channels` is -3, outside its range 1 to 256"),
        ("azimuth_bins = 70000", "`azimuth_bins` is 70000"),
        ("rotation_hz = nan", "`rotation_hz` is NaN"),
        ("max_range = 1e6", "`max_range` is 1000000"),
        ("vfov_min_deg = 30.0", "vfov_min_deg (30) is above vfov_max_deg (15)"),
        ("geom_group_mask = 300", "`geom_group_mask` is 300, outside its range 0 to 255"),
        ("preset = \"hdl-64\"", "unknown lidar scan preset 'hdl-64'"),
        ("pattern = \"zigzag\"", "pattern = \"zigzag\"; use one of spinning, livox-mid360, unitree-l1, risley"),
        ("self_ignore = \"all\"", "use one of none, mount-body, whole-robot"),
        ("channels = \"sixteen\"", "line 4, [[lidar]] 0 has `channels` = \"sixteen\", a string; expected an integer"),
        ("pattern = \"livox-mid360\"", "a non-repetitive pattern has one channel"),
        ("risley_spin_hz = 3.0", "need pattern = \"risley\""),
        (
            "mount_offset = [nan, 0.0, 0.0]",
            "`mount_offset` component 0 is NaN, outside its range finite metres from -10000 to 10000",
        ),
        (
            "mount_offset = [0.0, 0.0, -inf]",
            "`mount_offset` component 2 is -inf, outside its range finite metres from -10000 to 10000",
        ),
    ] {
        let err = lidar(extra).unwrap_err();
        assert!(err.contains(expect), "{extra}: {err}");
    }
    let err = parse("scene = \"a.xml\"\n[[lidar]]\nname = \"x\"\n").unwrap_err();
    assert!(err.contains("no attach target"), "{err}");
    let err = parse("[[lidar]]\nattach_site = \"s\"\n").unwrap_err();
    assert!(err.contains("missing field `scene`"), "{err}");
    let err = parse("scene = \"a.xml\"\n[[lidar]\n").unwrap_err();
    assert!(err.contains("not valid"), "{err}");
    let err = Manifest::load("/no/such/manifest.toml").unwrap_err().to_string();
    assert!(err.contains("cannot read manifest '/no/such/manifest.toml'"), "{err}");
}

#[test]
fn the_example_manifests_load_with_their_scenes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
    for name in ["primitives", "crowded", "meshes"] {
        let m = Manifest::load(dir.join(format!("{name}.toml"))).unwrap();
        let model = glint_mujoco::Model::from_xml_file(&m.scene).unwrap();
        assert_eq!(m.lidar.len(), 1);
        assert!(model.scene().site_id(m.lidar[0].attach_site.as_deref().unwrap()).is_some());
    }
}

/// A scene with three materials, for `[materials.*]` names.
const MATERIALS_XML: &str = r#"
<mujoco>
  <asset>
    <material name="window" rgba="0.7 0.8 0.9 0.3"/>
    <material name="frame_paint" rgba="0.2 0.2 0.2 1"/>
    <material name="floor" rgba="0.5 0.5 0.5 1"/>
  </asset>
  <worldbody>
    <geom type="plane" size="5 5 0.1" material="floor"/>
    <geom type="box" size="1 0.01 1" pos="0 2 1" material="window"/>
    <geom type="box" size="1.1 0.05 1.1" pos="0 2.1 1" material="frame_paint"/>
  </worldbody>
</mujoco>"#;

#[test]
fn materials_apply_the_preset_then_the_metal_then_each_channel() {
    use glint_lidar::{Continuation, MaterialPreset};
    let m = parse(
        r#"
        scene = "a.xml"

        [materials.window]
        preset = "clear-float-glass"
        transmission = 0.6

        [materials.frame_paint]
        preset = "gloss-dark-paint"
        metal = "steel"
        roughness = 0.4

        [materials.floor]
        reflectivity = 0.3
        continuation = "porous"
        transmission = 0.1
        "#,
    )
    .unwrap();
    let names: Vec<&str> = m.materials.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["floor", "frame_paint", "window"]);
    let get = |name: &str| m.materials.iter().find(|(n, _)| n == name).unwrap().1;
    let glass = MaterialPreset::ClearFloatGlass.material();
    assert_eq!(get("window"), glint_lidar::NirMaterial { transmission: 0.6, ..glass });
    let paint = get("frame_paint");
    assert_eq!((paint.f0, paint.metalness, paint.roughness), (0.60, 1.0, 0.4));
    assert_eq!(paint.reflectivity, MaterialPreset::GlossDarkPaint.material().reflectivity);
    let floor = get("floor");
    assert_eq!((floor.reflectivity, floor.continuation, floor.transmission), (0.3, Continuation::Porous, 0.1));
    assert_eq!(floor.roughness, 1.0, "no preset: the diffuse default");

    let model = glint_mujoco::Model::from_xml_str(MATERIALS_XML).unwrap();
    let table = m.material_table(model.scene()).unwrap();
    assert_eq!(table.get("window"), Some(&get("window")));
    assert_eq!(table.authored().count(), 3);
}

#[test]
fn materials_name_unknown_keys_bad_values_and_unknown_materials() {
    let material = |extra: &str| parse(&format!("scene = \"a.xml\"\n[materials.window]\n{extra}\n"));
    for (extra, expect) in [
        ("reflectivty = 0.5", "unknown key `reflectivty` in [materials.window]; did you mean `reflectivity`?"),
        ("contination = \"slab\"", "did you mean `continuation`?"),
        ("preset = \"glass\"", "unknown material preset 'glass': use one of diffuse"),
        ("metal = \"brass\"", "unknown metal 'brass': use one of aluminium"),
        ("continuation = \"liquid\"", "unknown continuation class 'liquid'"),
        ("transmission = 1.5", "[materials.window]: material field `transmission` is 1.5, outside its range 0 to 1"),
        ("absorption = 200.0", "`absorption` is 200, outside its range 0 to 100 per metre"),
        ("f0 = nan", "`f0` is NaN"),
        ("roughness = \"smooth\"", "[materials.window] has `roughness` = \"smooth\", a string; expected a number"),
    ] {
        let err = material(extra).unwrap_err();
        assert!(err.contains(expect), "{extra}: {err}");
    }
    let model = glint_mujoco::Model::from_xml_str(MATERIALS_XML).unwrap();
    let m = parse("scene = \"a.xml\"\n[materials.windw]\npreset = \"mirror\"\n").unwrap();
    let err = m.material_table(model.scene()).unwrap_err().to_string();
    assert!(
        err.contains("[materials.windw] names a material that '/scenes/a.xml' does not define; did you mean `window`?"),
        "{err}"
    );
    let m = parse("scene = \"a.xml\"\n[materials.zzzzzzzzzz]\n").unwrap();
    let err = m.material_table(model.scene()).unwrap_err().to_string();
    assert!(err.contains("it defines window, frame_paint, floor"), "{err}");
}

#[test]
fn bake_settings_and_their_errors() {
    let m = parse("scene = \"a.xml\"\n").unwrap();
    assert_eq!(m.bake, glint_manifest::BakeConfig::default());
    assert_eq!((m.bake.name.as_str(), m.bake.settings), ("scene", glint_lidar::BakeSettings::default()));
    let m = parse(
        "scene = \"a.xml\"\n[bake]\nname = \"night\"\ncell_size = 0.1\nmax_dim = 128\nsplat_radius = 0\ninclude_hidden = true\n",
    )
    .unwrap();
    assert_eq!(m.bake.name, "night");
    assert_eq!(
        m.bake.settings,
        glint_lidar::BakeSettings { cell_size: 0.1, max_dim: 128, splat_radius: 0, include_hidden: true }
    );
    let bake = |extra: &str| parse(&format!("scene = \"a.xml\"\n[bake]\n{extra}\n"));
    for (extra, expect) in [
        ("cell_sise = 0.1", "unknown key `cell_sise` in [bake]; did you mean `cell_size`?"),
        ("cell_size = 0.0", "[bake]: bake field `cell_size` is 0, outside its range 0.001 to 10 m"),
        ("max_dim = 0", "`max_dim` is 0, outside its range 1 to 1024"),
        ("max_dim = -3", "`max_dim` is -3"),
        ("splat_radius = 40", "`splat_radius` is 40, outside its range 0 to 16 cells"),
        ("name = \"../up\"", "bake name '../up' is not usable"),
        ("include_hidden = 1", "line 3, [bake] has `include_hidden` = 1, an integer; expected a boolean"),
    ] {
        let err = bake(extra).unwrap_err();
        assert!(err.contains(expect), "{extra}: {err}");
    }
}

#[test]
fn return_model_preset_overrides_and_seed() {
    use glint_lidar::{ReturnParams, ReturnPreset};
    let m = parse("scene = \"a.xml\"\n").unwrap();
    assert_eq!((m.return_params, m.seed), (ReturnParams::default(), 0));
    let m = parse(
        "scene = \"a.xml\"\n[return_model]\npreset = \"ouster-os1\"\nseed = 42\nnoise_sigma0 = 0.01\nmax_returns = 1\nretro_gain = 500\n",
    )
    .unwrap();
    let want =
        ReturnParams { noise_sigma0: 0.01, max_returns: 1, retro_gain: 500.0, ..ReturnPreset::OusterOs1.params() };
    assert_eq!((m.return_params, m.seed), (want, 42));
    let rm = |extra: &str| parse(&format!("scene = \"a.xml\"\n[return_model]\n{extra}\n"));
    for (extra, expect) in [
        ("noise_sigma = 0.01", "unknown key `noise_sigma` in [return_model]; did you mean `noise_sigma0`?"),
        ("preset = \"velodyne\"", "unknown return preset 'velodyne': use one of generic, unitree-l1"),
        ("max_range_at_ref = -1.0", "[return_model] max_range_at_ref is -1, outside its range above 0"),
        ("max_returns = 9", "[return_model] max_returns is 9, outside its range a whole number from 1 to 8"),
        ("grazing_cos_cutoff = 2.0", "[return_model] grazing_cos_cutoff is 2"),
        ("seed = -1", "seed"),
    ] {
        let err = rm(extra).unwrap_err();
        assert!(err.contains(expect), "{extra}: {err}");
    }
}

#[test]
fn every_example_in_the_manifest_docs_parses() {
    let doc = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/manifest.md")).unwrap();
    let blocks: Vec<&str> = doc.split("```toml").skip(1).map(|b| b.split("```").next().unwrap()).collect();
    assert!(blocks.len() >= 4);
    for block in blocks {
        let text = if block.contains("scene =") { block.to_string() } else { format!("scene = \"a.xml\"\n{block}") };
        if let Err(e) = parse(&text) {
            panic!("{e}\n{block}");
        }
    }
}

#[test]
fn the_showroom_authors_only_materials_its_scene_defines() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/showroom");
    let m = Manifest::load(dir.join("showroom.toml")).unwrap();
    let model = glint_mujoco::Model::from_xml_file(&m.scene).unwrap();
    let table = m.material_table(model.scene()).unwrap();
    assert_eq!(table.authored().count(), m.materials.len());
    assert!(m.materials.len() >= 8);
    assert_eq!((m.bake.name.as_str(), m.seed), ("showroom", 7));
}

#[test]
fn controllers_and_recorder_outputs() {
    use glint_manifest::Controller;
    let m = parse("scene = \"robot.xml\"").unwrap();
    assert_eq!(m.controller, Controller::Zero);
    assert_eq!(m.recorder.output_dir, Path::new("/scenes/DataSessions"));
    assert!(!m.recorder.record_video_proxy);
    let m = parse(
        "scene = \"robot.xml\"\n[recorder]\noutput_dir = \"out\"\nrecord_video_proxy = true\nvideo_colour_by = \"height\"\n\
         [controller]\nkind = \"velocity\"\nctrl = { vx = 0.5, wz = -0.2 }",
    )
    .unwrap();
    assert_eq!(m.recorder.output_dir, Path::new("/scenes/out"));
    assert!(m.recorder.record_video_proxy);
    assert_eq!(m.recorder.video_colour_by, glint_lidar::ColourBy::Height);
    assert_eq!(m.controller, Controller::Velocity { ctrl: vec![("vx".into(), 0.5), ("wz".into(), -0.2)] });
    let m = parse(
        "scene = \"robot.xml\"\n[controller]\nkind = \"waypoints\"\nbody = \"robot\"\npoints = [[1.0, 0.0], [1.0, 1.0]]\n\
         speed = 0.8\nactuators = { x = \"vx\", y = \"vy\", yaw = \"wz\" }",
    )
    .unwrap();
    let Controller::Waypoints { points, speed, yaw, repeat, .. } = m.controller else { panic!() };
    assert_eq!((points.len(), speed, yaw.as_deref(), repeat), (2, 0.8, Some("wz"), true));
    let m = parse("scene = \"robot.xml\"\n[controller]\nkind = \"replay\"\nactions = \"a.csv\"").unwrap();
    assert_eq!(m.controller, Controller::Replay { actions: "/scenes/a.csv".into() });
    // One bad waypoint among six is named by its index and value.
    let err = parse(
        "scene = \"robot.xml\"\n[controller]\nkind = \"waypoints\"\nbody = \"robot\"\n\
         points = [[2.0, 0.0], [2.0, -3.0], [-1.0, -3.0], [nan, 2.5], [1.5, 2.5], [0.0, 0.0]]\n\
         actuators = { x = \"vx\", y = \"vy\" }",
    )
    .unwrap_err();
    assert!(err.contains("[controller] points[3] is [NaN, 2.5], outside its range: a finite [x, y] pair"), "{err}");
    for (text, needle) in [
        ("[controller]\nkind = \"teleop\"", "zero, velocity, waypoints, replay"),
        (
            "[controller]\nkind = \"waypoints\"\nbody = \"b\"\npoints = []",
            "points is empty: it must hold at least one [x, y] pair",
        ),
        ("[controller]\nkind = \"waypoints\"\npoints = [[0.0, 0.0]]\nspeed = -1.0", "speed"),
        ("[controller]\nkind = \"velocity\"", "needs `ctrl`"),
        ("[controller]\nkind = \"replay\"", "needs `actions`"),
        ("[controller]\nkindd = \"zero\"", "did you mean `kind`"),
        (
            "[controller]\nkind = \"waypoints\"\nactuators = { x = \"a\", y = \"b\", z = \"c\" }",
            "[controller] actuators",
        ),
        ("[recorder]\noutput = \"x\"", "did you mean `output_dir`"),
    ] {
        let err = parse(&format!("scene = \"robot.xml\"\n{text}")).unwrap_err();
        assert!(err.contains(needle), "{text}: {err}");
    }
}

/// `text` after a `scene` line and a blank one: its first line is line 3 of the manifest.
fn after_scene(text: &str) -> String {
    parse(&format!("scene = \"a.xml\"\n\n{text}")).unwrap_err()
}

#[test]
fn type_errors_name_the_table_the_key_the_value_and_the_line() {
    let lidar = "[[lidar]]\nattach_site = \"s\"\n";
    for (text, expect) in [
        // Inside [[lidar]] (the table, the key and the line, not the table's header).
        (
            format!("{lidar}channels = \"64\"\n"),
            "line 5, [[lidar]] 0 has `channels` = \"64\", a string; expected an integer",
        ),
        (
            format!("{lidar}min_range = [1,2]\n"),
            "line 5, [[lidar]] 0 has `min_range` = [1,2], an array of 2 elements; expected a number",
        ),
        (
            format!("{lidar}channels = 16.5\n"),
            "line 5, [[lidar]] 0 has `channels` = 16.5, a float; expected an integer",
        ),
        (
            format!("{lidar}\n[[lidar]]\nattach_body = 7\n"),
            "line 7, [[lidar]] 1 has `attach_body` = 7, an integer; expected a string",
        ),
        (
            format!("{lidar}pattern = \"risley\"\nrisley_prism_hz = [1, 2, 3]\n"),
            "line 6, [[lidar]] 0 has `risley_prism_hz` = [1, 2, 3], an array of 3 elements; expected an array of exactly 2 rates",
        ),
        // Every other table.
        (
            "[recorder]\nlidar_runner_hz = \"fast\"\n".into(),
            "line 4, [recorder] has `lidar_runner_hz` = \"fast\", a string; expected a number",
        ),
        (
            "[controller]\nkind = \"velocity\"\nctrl = { vx = true }\n".into(),
            "line 5, [controller.ctrl] has `vx` = true, a boolean; expected a number",
        ),
        (
            "[controller]\nkind = \"waypoints\"\npoints = [[1, 2], [3, \"x\"]]\n".into(),
            "line 5, [controller] has `points[1][1]` = \"x\", a string; expected a number",
        ),
        (
            "[reset.joints]\nhip = \"wide\"\n".into(),
            "line 4, [reset.joints] has `hip` = \"wide\", a string; expected a number",
        ),
        (
            "[reset.bodies.box]\nx = 1.0\n".into(),
            "line 4, [reset.bodies.box] has `x` = 1.0, a float; expected an array of exactly 2 values",
        ),
        (
            "[[camera]]\ncamera = \"c\"\nwidth = 320.5\n".into(),
            "line 5, [[camera]] 0 has `width` = 320.5, a float; expected an integer",
        ),
        (
            "[[observation]]\nname = \"lidar_ranges\"\nbeams = \"all\"\n".into(),
            "line 5, [[observation]] 0 has `beams` = \"all\", a string; expected an integer",
        ),
        (
            "[bake]\nmax_dim = [1]\n".into(),
            "line 4, [bake] has `max_dim` = [1], an array of 1 element; expected an integer",
        ),
        (
            "[materials.glass]\nf0 = \"0.04\"\n".into(),
            "line 4, [materials.glass] has `f0` = \"0.04\", a string; expected a number",
        ),
        (
            "[return_model]\nrange_exp = \"x\"\n".into(),
            "line 4, [return_model] has `range_exp` = \"x\", a string; expected a number",
        ),
        (
            "[return_model]\nseed = -1\n".into(),
            "line 4, [return_model] has `seed` = -1, out of range; expected an integer from 0 to 18446744073709551615",
        ),
        (
            "[task]\nbody = \"b\"\ngoal = \"home\"\n".into(),
            "line 5, [task] has `goal` = \"home\", a string; expected an array",
        ),
        (
            "[randomize.geom_rgba]\ncube = { uniform = [[1, \"x\"], [1, 2]] }\n".into(),
            "line 4, [randomize.geom_rgba.cube] has `uniform[0][1]` = \"x\", a string; expected a number",
        ),
        (
            "[randomize.geom_matid]\nfloor = { choice = [true] }\n".into(),
            "line 4, [randomize.geom_matid.floor] has `choice[0]` = true, a boolean; expected a number or an array of numbers",
        ),
        (
            "[variants]\nassign = [-1]\n".into(),
            "line 4, [variants] has `assign[0]` = -1, out of range; expected a variant's name or its index (0 or more)",
        ),
        (
            "[[variants.variant]]\nname = \"a\"\nedits = [{ geom = 3 }]\n".into(),
            "line 5, [[variants.variant]] 0 edits[0] has `geom` = 3, an integer; expected a string",
        ),
        (
            "use_scenario_lights = \"yes\"\n".into(),
            "line 3, the top level has `use_scenario_lights` = \"yes\", a string; expected a boolean",
        ),
        (
            "[[lights]]\ntype = \"sphere\"\nintensity = \"bright\"\n".into(),
            "line 5, [[lights]] 0 has `intensity` = \"bright\", a string; expected a number",
        ),
    ] {
        let err = after_scene(&text);
        assert!(err.starts_with("manifest '/scenes/robot.toml' is not valid: line "), "{err}");
        assert!(err.contains(expect), "{text}:\n{err}\nexpected: {expect}");
    }
    // A table that lacks a key names the table and its line.
    let err = after_scene("[task]\ngoal = [1, 2]\n");
    assert!(err.contains("line 3, [task]: missing field `body`"), "{err}");
}

#[test]
fn every_table_names_an_unknown_key_and_the_nearest_valid_one() {
    for (text, expect) in [
        ("scene = \"a.xml\"\nrecorder_x = 1\n", "unknown key `recorder_x` in the top level; did you mean `recorder`?"),
        ("[recorder]\noutput_dri = \"x\"", "unknown key `output_dri` in [recorder]; did you mean `output_dir`?"),
        ("[controller]\nspeeed = 1.0", "unknown key `speeed` in [controller]; did you mean `speed`?"),
        (
            "[controller]\nactuators = { x = \"a\", y = \"b\", yawn = \"c\" }",
            "unknown key `yawn` in [controller] actuators; did you mean `yaw`?",
        ),
        ("[reset]\nbody = 1", "unknown key `body` in [reset]; did you mean `bodies`?"),
        ("[reset.bodies.box]\nyaww = [0, 1]", "unknown key `yaww` in [reset.bodies.box]; did you mean `yaw`?"),
        ("[[camera]]\ncamera = \"c\"\nwidht = 3", "unknown key `widht` in [[camera]] 0; did you mean `width`?"),
        (
            "[[observation]]\nname = \"joint_positions\"\nbeam = 3",
            "unknown key `beam` in [[observation]] 0; did you mean `beams`?",
        ),
        (
            "[task]\nbody = \"b\"\ngoal = [1, 2]\ngoal_reward_ = 1",
            "unknown key `goal_reward_` in [task]; did you mean `goal_reward`?",
        ),
        ("[bake]\nmax_dims = 3", "unknown key `max_dims` in [bake]; did you mean `max_dim`?"),
        ("[return_model]\nseeds = 3", "unknown key `seeds` in [return_model]; did you mean `seed`?"),
        ("[materials.glass]\nmetals = \"gold\"", "unknown key `metals` in [materials.glass]; did you mean `metal`?"),
        (
            "[[lidar]]\nattach_site = \"s\"\n[[lidar]]\nattach_sit = \"s\"",
            "unknown key `attach_sit` in [[lidar]] 1; did you mean `attach_site`?",
        ),
        // Tables the manifest reads with other crates' types, and nested ones.
        (
            "[variants]\nassign = [0]\n[[variants.variant]]\nname = \"a\"\nedits = [{ geom = \"g\", mesh = \"m\" }, { gem = \"x\" }]",
            "unknown key `gem` in [[variants.variant]] 0 edits[1]; did you mean `geom`?",
        ),
        ("[variants]\nasign = [0]", "unknown key `asign` in [variants]; did you mean `assign`?"),
        (
            "[randomize.geom_rgba]\ncube = { uniformm = [[0, 0, 0, 1], [1, 1, 1, 1]] }",
            "unknown key `uniformm` in [randomize.geom_rgba] cube; did you mean `uniform`?",
        ),
    ] {
        let text = if text.starts_with("scene") { text.to_string() } else { format!("scene = \"a.xml\"\n{text}") };
        let err = parse(&text).unwrap_err();
        assert_eq!(err, format!("manifest '/scenes/robot.toml': {expect}"), "{text}");
    }
    // A light says what the same light in a lights_file says (the rig reader's words).
    let err = parse("scene = \"a.xml\"\n[[lights]]\ntype = \"disk\"\nintensty = 3.0\n").unwrap_err();
    assert!(err.contains("line 4, [[lights]] 0: unknown field `intensty`, expected one of"), "{err}");
    // With nothing near, every key of the table, in the order the table's struct declares them.
    let err = parse("scene = \"a.xml\"\n[[lidar]]\nzzzzzz = 1\n").unwrap_err();
    assert!(err.ends_with("in [[lidar]] 0; valid keys are name, attach_body, attach_site, mount_offset, preset, video_proxy, secondary_capture, secondary_scope, see_skins, pattern, risley_spin_hz, risley_prism_hz, channels, azimuth_bins, points_per_cycle, rotation_hz, vfov_min_deg, vfov_max_deg, min_range, max_range, geom_group_mask, self_ignore"), "{err}");
    let err = parse("scene = \"a.xml\"\n[return_model]\nzzzzzz = 1\n").unwrap_err();
    assert!(err.ends_with("valid keys are preset, seed, model, physical, max_range_at_ref, ref_reflectivity, range_exp, noise_sigma0, grazing_cos_cutoff, intensity_ref_range, detect_floor, near_range_r0, noise_slope_per_m, spec_slope_floor, spec_peak_max, retro_gain, retro_cos_exp, fold_max_slope, range_floor, min_return_separation, max_returns"), "{err}");
    // Tables a program gives are named where they would stand in a manifest.
    let table = |text: &str| text.parse::<toml::Table>().unwrap();
    let source = Path::new("set_lidars");
    let err = glint_manifest::lidar_bindings(&[table("attach_site = \"s\""), table("chanels = 3")], source);
    assert_eq!(
        err.unwrap_err().to_string(),
        "manifest 'set_lidars': unknown key `chanels` in [[lidar]] 1; did you mean `channels`?"
    );
    let err = glint_manifest::camera_bindings(&[table("camera = \"c\"\nheigth = 3")], source);
    assert_eq!(
        err.unwrap_err().to_string(),
        "manifest 'set_lidars': unknown key `heigth` in [[camera]] 0; did you mean `height`?"
    );
    let err = glint_manifest::variant_plan(table("assing = [0]"), source).unwrap_err().to_string();
    assert_eq!(err, "manifest 'set_lidars': unknown key `assing` in [variants]; did you mean `assign`?");
}

#[test]
fn tables_given_by_a_program_name_the_key_of_a_wrong_type() {
    let table = |text: &str| text.parse::<toml::Table>().unwrap();
    let source = Path::new("set_lidars");
    let good = table("attach_site = \"s\"");
    let bad = table("attach_site = \"s\"\nchannels = \"64\"");
    let err = glint_manifest::lidar_bindings(&[good, bad], source).unwrap_err().to_string();
    assert_eq!(
        err,
        "manifest 'set_lidars' is not valid: [[lidar]] 1 has `channels` = \"64\", a string; expected an integer"
    );
    let err = glint_manifest::camera_bindings(&[table("camera = 3")], source).unwrap_err().to_string();
    assert!(err.contains("[[camera]] 0 has `camera` = 3, an integer; expected a string"), "{err}");
    let err = glint_manifest::variant_plan(table("assign = \"a\""), source).unwrap_err().to_string();
    assert!(err.contains("[variants] has `assign` = \"a\", a string; expected an array"), "{err}");
}

#[test]
fn return_model_values_are_echoed_as_written() {
    for big in ["4294967295", "9223372036854775807"] {
        let err = after_scene(&format!("[return_model]\nmax_returns = {big}\n"));
        let expect = format!("[return_model] max_returns is {big}, outside its range a whole number from 1 to 8");
        assert!(err.contains(&expect), "{err}");
    }
    let err = after_scene("[return_model]\nmax_returns = 2.5\n");
    assert!(err.contains("max_returns is 2.5, outside its range a whole number from 1 to 8"), "{err}");
}

#[test]
fn silent_acceptances_are_refused_naming_the_key_and_the_bound() {
    let lidar = "[[lidar]]\nattach_site = \"s\"\n";
    for (text, expect) in [
        (
            format!("{lidar}min_range = 5.0\nmax_range = 5.0\n"),
            "[[lidar]] 0: lidar fields conflict: min_range (5) equals max_range (5): hits count from min_range up to \
             (not including) max_range, so that range is empty; make min_range smaller than max_range",
        ),
        (format!("{lidar}mount_offset = [1e300, 0, 0]\n"), "`mount_offset` component 0 is 1e300, outside its range"),
        (
            format!("{lidar}mount_offset = [0, 0, 0.1, 5]\n"),
            "line 5, [[lidar]] 0 has `mount_offset` = [0, 0, 0.1, 5], an array of 4 elements; expected an array of exactly 3 values, [x, y, z]",
        ),
        (
            "[controller]\nkind = \"waypoints\"\nbody = \"b\"\npoints = [[1, 2], [3, 4, 5]]\n".into(),
            "line 6, [controller] has `points[1]` = [3, 4, 5], an array of 3 elements; expected an array of exactly 2 values, [x, y]",
        ),
        ("[reset.joints]\nhip = 1e300\n".into(), "[reset.joints] hip = 1e300: give"),
        ("[reset.bodies.box]\nx = [-1e300, 1e300]\n".into(), "each from -10000 to 10000 metres"),
        (
            "[reset.bodies.box]\nyaw = [-720, 720]\n".into(),
            "[reset.bodies.box] yaw = [-720, 720]: give a range [lo, hi] of finite numbers with lo <= hi, each from -360 to 360 degrees",
        ),
        (
            "[reset.bodies.box]\nz = [0, 1, 2]\n".into(),
            "line 4, [reset.bodies.box] has `z` = [0, 1, 2], an array of 3 elements; expected an array of exactly 2 values",
        ),
        (
            "[randomize.cam_fovy]\nwrist = { uniform = [40, 50, 60] }\n".into(),
            "line 4, [randomize.cam_fovy.wrist] has `uniform` = [40, 50, 60], an array of 3 elements; expected an array of exactly 2 values",
        ),
    ] {
        let err = after_scene(&text);
        assert!(err.contains(expect), "{text}:\n{err}\nexpected: {expect}");
    }
    let err = after_scene("[reset.joints]\nhip = 1e300\n");
    assert!(err.contains("a number from 0 to 10000 (metres for a slide joint, radians for a hinge)"), "{err}");
    // The bounds themselves are allowed.
    let m = parse(&format!(
        "scene = \"a.xml\"\n{lidar}mount_offset = [10000, -10000, 0]\n[reset.joints]\nhip = 10000\n\
         [reset.bodies.box]\nyaw = [-360, 360]\n"
    ))
    .unwrap();
    assert_eq!(m.lidar[0].mount_offset.x, 10000.0);
}

#[test]
fn a_camera_takes_a_depth_sensor_preset_and_its_fields() {
    use glint_camera::{DepthSensor, SensorModel};
    let camera = |extra: &str| parse(&format!("scene = \"a.xml\"\n[[camera]]\ncamera = \"c\"\n{extra}\n"));
    let m = camera("preset = \"realsense-d415\"\nbaseline = 0.06").unwrap();
    let c = &m.cameras[0];
    assert_eq!(c.resolution, Some((1280, 720)), "the preset's image size");
    assert_eq!(c.fovy, Some(40.0), "the preset's field of view");
    assert_eq!(camera("preset = \"realsense-d415\"\nfovy = 50.0").unwrap().cameras[0].fovy, Some(50.0));
    assert_eq!(camera("").unwrap().cameras[0].fovy, None, "the MJCF camera's");
    let err = camera("fovy = 190.0").unwrap_err();
    assert!(err.contains("fovy = 190"), "{err}");
    assert_eq!((c.depth_sensor.model, c.depth_sensor.baseline), (SensorModel::ActiveStereo, 0.06));
    let m = camera("preset = \"kinect-v1\"\nwidth = 64\nheight = 48").unwrap();
    assert_eq!(m.cameras[0].resolution, Some((64, 48)), "explicit sizes win");
    assert_eq!(m.cameras[0].depth_sensor.model, SensorModel::StructuredLight);
    let m = camera("sensor_model = \"active-stereo\"").unwrap();
    assert_eq!(m.cameras[0].depth_sensor.baseline, 0.05);
    // A model alone takes its device's fields: an iToF unwraps with two frequencies.
    let m = camera("sensor_model = \"itof\"").unwrap();
    assert_eq!(m.cameras[0].depth_sensor, DepthSensor::preset(glint_camera::DepthPreset::AzureKinectNfov));
    assert_eq!(m.cameras[0].resolution, None, "but not its image size");
    assert!(!camera("").unwrap().cameras[0].depth_sensor.is_active(), "the clean depth by default");
    let err = camera("preset = \"realsense-d4355\"").unwrap_err();
    assert!(err.contains("[[camera]] 0") && err.contains("did you mean 'realsense-d435'?"), "{err}");
    let err = camera("sensor_model = \"stereo\"").unwrap_err();
    assert!(err.contains("unknown depth sensor model 'stereo'"), "{err}");
    let err = camera("preset = \"realsense-d435\"\nsubpixel_sigma = -1.0").unwrap_err();
    assert!(err.contains("subpixel_sigma = -1"), "{err}");
    let m = camera("preset = \"vl53l5cx\"\ntarget_order = \"closest\"\ndebug_channel = 3").unwrap();
    let d = m.cameras[0].depth_sensor;
    assert_eq!((d.model, d.target_order), (SensorModel::DToFSparse, glint_camera::TargetOrder::Closest));
    assert_eq!(d.debug_channel, glint_camera::DebugChannel::NirReflectivity);
    let m = camera("sensor_model = \"itof\"\ndebug_channel = \"occlusion-mask\"").unwrap();
    assert_eq!(m.cameras[0].depth_sensor.debug_channel, glint_camera::DebugChannel::OcclusionMask);
    let err = camera("preset = \"realsense-d435\"\ndebug_channel = 12").unwrap_err();
    assert!(err.contains("12") && err.contains("9 (occlusion-mask)"), "{err}");
    let err = camera("preset = \"realsense-d435\"\nzones = 2.5").unwrap_err();
    assert!(err.contains("zones = 2.5"), "{err}");
}

#[test]
fn every_depth_sensor_field_is_a_camera_key() {
    for name in glint_camera::DepthSensor::field_names() {
        let value = glint_camera::DepthSensor::preset(glint_camera::DepthPreset::KinectV1)
            .fields()
            .into_iter()
            .find(|(n, _)| *n == name)
            .unwrap()
            .1;
        let text =
            format!("scene = \"a.xml\"\n[[camera]]\ncamera = \"c\"\npreset = \"kinect-v1\"\n{name} = {value:?}\n");
        let m = parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(m.cameras[0].depth_sensor, glint_camera::DepthSensor::preset(glint_camera::DepthPreset::KinectV1));
    }
}
