//! `[randomize]`: every world draws its own field values at each episode reset from its
//! episode's seed; the cameras see them; recordings say what each episode drew; bad tables
//! are errors naming the field and the fix.

use std::path::{Path, PathBuf};

use glint_sim::{
    DERIVED_FIELDS, FIELDS, FieldOf, GEOMETRY_FIELDS, PHYSICS_FIELDS, RecordingOptions, SimOptions, Simulation, Worlds,
};

fn example(parts: &[&str]) -> PathBuf {
    let mut p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples"].iter().collect();
    p.extend(parts);
    p
}

fn manifest(tag: &str, extra: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-randomize-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.toml");
    let scene = example(&["lights", "scene.xml"]).to_string_lossy().replace('\\', "/");
    std::fs::write(&path, format!("scene = \"{scene}\"\n{extra}")).unwrap();
    path
}

fn sim(path: &Path, nworld: usize) -> Simulation {
    Simulation::from_manifest(path, SimOptions { nworld, ..SimOptions::default() }).unwrap()
}

const TABLE: &str = r#"
[randomize.geom_rgba]
cube = { uniform = [[0.0, 0.0, 0.0, 1.0], [1.0, 1.0, 1.0, 1.0]] }
[randomize.light_diffuse]
top = { normal = [[0.7, 0.7, 0.7], [0.2, 0.2, 0.2]] }
[randomize.geom_matid]
ball = { choice = [3, 4] }
[randomize.cam_fovy]
view = { uniform = [30.0, 60.0] }
[[camera]]
camera = "view"
width = 32
height = 24
"#;

#[test]
fn each_world_draws_its_own_values_and_the_cameras_see_them() {
    let m = manifest("draws", TABLE);
    let mut a = sim(&m, 4);
    let cube = a.scene().geom_name.iter().position(|n| n == "cube").unwrap();
    let (rgba, shape) = a.field("geom_rgba").unwrap();
    assert_eq!(shape, vec![4, a.scene().ngeom(), 4], "one row per world");
    let ngeom = a.scene().ngeom();
    let mut colours = Vec::new();
    for w in 0..4 {
        let drawn = a.drawn_fields(w).unwrap().clone();
        assert_eq!(drawn.len(), 4, "{drawn:?}");
        let row = &rgba[(w * ngeom + cube) * 4..][..4];
        assert_eq!(drawn["geom_rgba/cube"], row.to_vec());
        assert!(row[..3].iter().all(|c| (0.0..=1.0).contains(c)) && row[3] == 1.0);
        assert!([3.0, 4.0].contains(&drawn["geom_matid/ball"][0]));
        assert!((30.0..=60.0).contains(&drawn["cam_fovy/view"][0]));
        assert!(drawn["light_diffuse/top"].iter().all(|&d| d >= 0.0));
        colours.push(drawn["geom_rgba/cube"].clone());
    }
    assert!(colours.windows(2).all(|p| p[0] != p[1]), "worlds draw differently: {colours:?}");
    let frames = a.render().unwrap();
    assert_ne!(frames.image(0, 0).0, frames.image(1, 0).0);
    // The same seed draws the same values; a reset draws the next episode's.
    let b = sim(&m, 4);
    assert_eq!(a.drawn_fields(2).unwrap(), b.drawn_fields(2).unwrap());
    let before = a.drawn_fields(1).unwrap().clone();
    a.step(None).unwrap();
    a.reset(Worlds::One(1), None).unwrap();
    assert_ne!(a.drawn_fields(1).unwrap(), &before, "a new episode draws anew");
    assert_eq!(a.drawn_fields(0).unwrap(), b.drawn_fields(0).unwrap(), "other worlds keep theirs");
}

#[test]
fn recordings_say_what_each_episode_drew() {
    let m = manifest(
        "record",
        &format!("[[lidar]]\nname = \"top\"\nattach_body = \"link0\"\nchannels = 2\nazimuth_bins = 8\n{TABLE}"),
    );
    let mut s = sim(&m, 2);
    let out = m.parent().unwrap().join("sessions");
    let dir = s.arm_recording(&RecordingOptions { out: Some(out.clone()), episodes: 2 }).unwrap();
    s.step(None).unwrap();
    let expected: Vec<_> = (0..2).map(|w| s.drawn_fields(w).unwrap().clone()).collect();
    s.stop_recording(glint_record::EpisodeStatus::Complete).unwrap();
    let log = std::fs::read_to_string(dir.join("meta/episodes.jsonl")).unwrap();
    let lines: Vec<serde_json::Value> = log.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.len(), 2);
    for line in &lines {
        let drawn: std::collections::BTreeMap<String, Vec<f64>> =
            serde_json::from_value(line["randomized"].clone()).unwrap();
        // JSON keeps every digit ryu writes; serde_json's parser may differ in the last bit.
        let same = |a: &std::collections::BTreeMap<String, Vec<f64>>| {
            a.len() == drawn.len()
                && a.iter().all(|(k, v)| drawn[k].iter().zip(v).all(|(x, y)| (x - y).abs() <= 1e-12 * y.abs().max(1.0)))
        };
        assert!(expected.iter().any(same), "{drawn:?} is one world's draw: {expected:?}");
    }
    let _ = std::fs::remove_dir_all(out);
}

#[test]
fn bad_randomize_tables_are_errors_naming_the_field_and_the_fix() {
    for (table, want) in [
        ("[randomize.geom_rbga]\ncube = { uniform = [[0,0,0,1],[1,1,1,1]] }\n", "did you mean `geom_rgba`"),
        (
            "[randomize.geom_rgba]\ncub = { uniform = [[0,0,0,1],[1,1,1,1]] }\n",
            "no geom named `cub`; did you mean `cube`",
        ),
        ("[randomize.geom_rgba]\ncube = { uniform = [[1,0,0,1],[0,1,1,1]] }\n", "lo 1 above hi 0"),
        ("[randomize.cam_fovy]\nview = { uniform = [\"nan\", 50.0] }\n", "not valid"),
        ("[randomize.cam_fovy]\nview = { normal = [40.0, -1.0] }\n", "0 or more"),
        ("[randomize.geom_rgba]\ncube = { uniform = [[0,0,0],[1,1,1]] }\n", "takes 4 number(s)"),
        ("[randomize.geom_matid]\ncube = { uniform = [0, 3] }\n", "draw it from a choice"),
        ("[randomize.geom_matid]\ncube = { choice = [99] }\n", "a material id from 0 to"),
        ("[randomize.cam_fovy]\nview = { }\n", "exactly one of"),
        ("[randomize.cam_fovy]\nview = { choice = [] }\n", "choice is empty"),
        ("[randomize.geom_rgba]\ncube = { uniform = [[0,0,0,1],[2,1,1,1]] }\n", "from 0 to 1"),
        // Every whole-number field (ids, types, flags) is drawn from a choice, geom_dataid too.
        ("[randomize.geom_dataid]\ncube = { uniform = [0, 1] }\n", "draw it from a choice"),
        ("[randomize.light_active]\ntop = { normal = [1, 0.5] }\n", "draw it from a choice"),
        ("[randomize.light_diffuse]\ntop = { uniform = [[-1, 0, 0], [1, 1, 1]] }\n", "0 or more"),
    ] {
        let m = manifest("bad", table);
        let err = Simulation::from_manifest(&m, SimOptions::default()).err().unwrap().to_string();
        assert!(err.contains(want), "{table}: {err}");
    }
}

#[test]
fn physics_fields_per_world_step_as_a_world_alone_with_those_values() {
    let scene = example(&["primitives.xml"]);
    let options = |nworld| SimOptions { nworld, ..SimOptions::default() };
    let mut batch = Simulation::from_xml_file(&scene, Vec::new(), options(2)).unwrap();
    let (mass, shape) = batch.field("body_mass").unwrap();
    let nbody = shape[1];
    let heavier: Vec<f64> = mass.iter().enumerate().map(|(b, m)| if b > 0 { m * 3.0 } else { *m }).collect();
    let (friction, fshape) = batch.field("geom_friction").unwrap();
    let slippery: Vec<f64> = friction.iter().map(|f| f * 0.25).collect();
    let two = |a: &[f64], b: &[f64]| a.iter().chain(b).copied().collect::<Vec<f64>>();
    batch.set_field("body_mass", &two(&mass, &heavier), &[2, nbody]).unwrap();
    batch.set_field("geom_friction", &two(&friction, &slippery), &[2, fshape[1], 3]).unwrap();
    let mut alone = Simulation::from_xml_file(&scene, Vec::new(), options(1)).unwrap();
    alone.set_field("body_mass", &heavier, &[1, nbody]).unwrap();
    alone.set_field("geom_friction", &slippery, &[1, fshape[1], 3]).unwrap();
    let mut plain = Simulation::from_xml_file(&scene, Vec::new(), options(1)).unwrap();
    for _ in 0..200 {
        batch.step(None).unwrap();
        alone.step(None).unwrap();
        plain.step(None).unwrap();
    }
    assert_eq!(batch.poses().xpos[nbody..2 * nbody], alone.poses().xpos[..nbody], "world 1 = the variant alone");
    assert_eq!(batch.poses().xpos[..nbody], plain.poses().xpos[..nbody], "world 0 = the model");
    assert_ne!(alone.poses().xpos[..nbody], plain.poses().xpos[..nbody], "the variant moves differently");
    let err = batch.set_field("body_mass", &vec![-1.0; nbody], &[1, nbody]).unwrap_err().to_string();
    assert!(err.contains("0 or more"), "{err}");
}

#[test]
fn randomize_draws_physics_fields_by_body_name() {
    let dir = std::env::temp_dir().join(format!("glint-randomize-physics-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scene = example(&["primitives.xml"]).to_string_lossy().replace('\\', "/");
    let m = dir.join("m.toml");
    std::fs::write(
        &m,
        format!("scene = \"{scene}\"\n[randomize.body_mass]\nfree_sphere_1 = {{ uniform = [0.5, 5.0] }}\n"),
    )
    .unwrap();
    let s = sim(&m, 3);
    let masses: Vec<f64> = (0..3).map(|w| s.drawn_fields(w).unwrap()["body_mass/free_sphere_1"][0]).collect();
    assert!(masses.iter().all(|m| (0.5..=5.0).contains(m)) && masses[0] != masses[1], "{masses:?}");
    std::fs::write(&m, format!("scene = \"{scene}\"\n[randomize.dof_damping]\nx = {{ uniform = [0.0, 1.0] }}\n"))
        .unwrap();
    let err = Simulation::from_manifest(&m, SimOptions::default()).err().unwrap().to_string();
    assert!(err.contains("set it with set_field"), "{err}");
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn every_field_of_the_table_reads_and_takes_the_models_own_values() {
    let m = manifest("table", "use_scenario_lights = false\n");
    let mut s = sim(&m, 2);
    let scene = s.scene().clone();
    let nv = s.field("dof_damping").unwrap().1[1];
    let count = |of: FieldOf| match of {
        FieldOf::Geom => scene.ngeom(),
        FieldOf::Material => scene.mat_rgba.len(),
        FieldOf::Light => scene.nlight(),
        FieldOf::Camera => scene.ncam(),
        FieldOf::Body => scene.nbody(),
        FieldOf::Dof => nv,
    };
    for spec in FIELDS.iter().chain(&DERIVED_FIELDS) {
        let (values, shape) = s.field(spec.name).unwrap();
        let rows = if DERIVED_FIELDS.iter().any(|d| d.name == spec.name) { 2 } else { 1 };
        let mut want = vec![rows, count(spec.of)];
        if spec.width > 1 {
            want.push(spec.width);
        }
        assert_eq!(shape, want, "{}", spec.name);
        assert_eq!(values.len(), shape.iter().product::<usize>(), "{}", spec.name);
        if spec.is_whole() {
            assert!(values.iter().all(|v| v.fract() == 0.0), "{}: {values:?}", spec.name);
        }
        if rows == 1 {
            // The model's own values are values the field takes, and read back as given.
            s.set_field(spec.name, &values, &shape).unwrap();
            assert_eq!(s.field(spec.name).unwrap(), (values, shape), "{}", spec.name);
        }
    }
    // Whole-number fields keep whole numbers: a flag is 0 or 1, a type one of MuJoCo's.
    let nlight = scene.nlight();
    let err = s.set_field("light_castshadow", &vec![2.0; nlight], &[1, nlight]).unwrap_err().to_string();
    assert!(err.contains("0 (false) or 1 (true)"), "{err}");
    let err = s.set_field("light_type", &vec![1.5; nlight], &[1, nlight]).unwrap_err().to_string();
    assert!(err.contains("mjtLightType"), "{err}");
    // What reads each field decides what a change brings up to date: the lists of the fields
    // physics and the rays read are the table's readers.
    let read_by = |reader: &str| -> Vec<&str> {
        FIELDS.iter().filter(|f| format!("{:?}", f.readers).contains(reader)).map(|f| f.name).collect()
    };
    assert_eq!(PHYSICS_FIELDS.to_vec(), read_by("Physics"));
    assert_eq!(GEOMETRY_FIELDS.to_vec(), read_by("Rays"));
    assert!(GEOMETRY_FIELDS.contains(&"geom_dataid") && PHYSICS_FIELDS.contains(&"geom_dataid"));
}

#[test]
fn a_normal_draw_is_clipped_to_the_fields_range() {
    let table = "[randomize.light_diffuse]\ntop = { normal = [[0.0, 0.0, 0.0], [5.0, 5.0, 5.0]] }\n";
    let s = sim(&manifest("clip", table), 8);
    for w in 0..8 {
        let drawn = &s.drawn_fields(w).unwrap()["light_diffuse/top"];
        assert!(drawn.iter().all(|&d| d >= 0.0), "{drawn:?}");
    }
    let all: Vec<f64> = (0..8).flat_map(|w| s.drawn_fields(w).unwrap()["light_diffuse/top"].clone()).collect();
    assert!(all.contains(&0.0), "some draws fall below 0 and are clipped to it: {all:?}");
}
