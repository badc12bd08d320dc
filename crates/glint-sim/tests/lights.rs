//! Light rigs in the manifest (`use_scenario_lights`, `[[lights]]`, `lights_file`) and the
//! per-world light fields of a `Simulation` (MuJoCo Warp's `w % rows` rule).

use std::path::{Path, PathBuf};

use glam::DVec3;
use glint_lights::LightWarning;
use glint_mujoco::Model;
use glint_sim::{SimOptions, Simulation, Warning};

fn example(parts: &[&str]) -> PathBuf {
    let mut p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples"].iter().collect();
    p.extend(parts);
    p
}

fn scene() -> PathBuf {
    example(&["lights", "scene.xml"])
}

/// A manifest over the lights scene with `extra`, in its own folder.
fn manifest(tag: &str, extra: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-sim-lights-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("m.toml");
    let text = format!("scene = \"{}\"\n{extra}", scene().to_string_lossy().replace('\\', "/"));
    std::fs::write(&path, text).unwrap();
    path
}

fn sim(path: &Path, nworld: usize) -> Simulation {
    Simulation::from_manifest(path, SimOptions { nworld, ..SimOptions::default() }).unwrap()
}

const SUN: &str = "[[lights]]\ntype = \"distant\"\nname = \"sun\"\nintensity = 2000.0\npolar = 30.0\n";

/// Every light array of the compiled model, and the headlight, as comparable text.
fn lights_of(model: &Model) -> String {
    let s = model.scene();
    format!(
        "{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}{:?}",
        s.light_name,
        s.light_active,
        s.light_type,
        s.light_castshadow,
        s.light_pos,
        s.light_dir,
        s.light_diffuse,
        s.light_ambient,
        s.light_specular,
        s.light_attenuation,
        s.light_spot,
        s.light_bodyid,
        model.headlight()
    )
}

#[test]
fn without_the_opt_in_the_scene_keeps_exactly_its_own_lights() {
    let plain = lights_of(&Model::from_xml_file(scene()).unwrap());
    let mut bare = sim(&manifest("bare", ""), 1);
    assert_eq!(lights_of(bare.model()), plain);
    assert!(bare.take_warnings().is_empty());
    // A rig without `use_scenario_lights` is ignored, as the seed's opt-in says, and said so.
    let mut ignored = sim(&manifest("ignored", SUN), 1);
    assert_eq!(lights_of(ignored.model()), plain);
    let warnings = ignored.take_warnings();
    assert_eq!(warnings, vec![Warning::RigIgnored { lights: 1 }]);
    assert!(warnings[0].to_string().contains("use_scenario_lights = true"));
    let mut off = sim(&manifest("off", &format!("use_scenario_lights = false\n{SUN}")), 1);
    assert_eq!(lights_of(off.model()), plain);
    assert_eq!(off.take_warnings().len(), 1);
}

#[test]
fn with_the_opt_in_the_rig_lights_the_scene() {
    let sim = sim(&manifest("on", &format!("use_scenario_lights = true\n{SUN}")), 1);
    let s = sim.scene();
    let sun = s.light_name.iter().position(|n| n == "sun").unwrap();
    assert!(s.light_active[sun] && s.light_type[sun] == 1);
    assert_eq!(s.light_active.iter().filter(|a| **a).count(), 1, "the scene's own lights are off");
    assert_eq!(sim.model().headlight().diffuse, [0.0; 3]);
}

#[test]
fn a_rig_file_serves_as_the_lights_tables_do() {
    let rig = example(&["lights", "rigs", "dome.toml"]).to_string_lossy().replace('\\', "/");
    let from_file = sim(&manifest("file", &format!("use_scenario_lights = true\nlights_file = \"{rig}\"\n")), 1);
    let inline = sim(
        &manifest(
            "inline",
            "use_scenario_lights = true\n[[lights]]\ntype = \"dome\"\nname = \"sky\"\nintensity = 1000.0\n",
        ),
        1,
    );
    assert_eq!(lights_of(from_file.model()), lights_of(inline.model()));
    let both = manifest("both", &format!("use_scenario_lights = true\nlights_file = \"{rig}\"\n{SUN}"));
    let err = Simulation::from_manifest(&both, SimOptions::default()).err().unwrap().to_string();
    assert!(err.contains("keep one"), "{err}");
    let missing = manifest("missing", "use_scenario_lights = true\nlights_file = \"nowhere.toml\"\n");
    let err = Simulation::from_manifest(&missing, SimOptions::default()).err().unwrap().to_string();
    assert!(err.contains("cannot read light rig") && err.contains("nowhere.toml"), "{err}");
}

#[test]
fn rig_warnings_reach_the_simulation_and_bad_rigs_are_refused() {
    let hot = "use_scenario_lights = true\n[[lights]]\ntype = \"sphere\"\nname = \"hot\"\nintensity = 5000.0\n";
    let mut sim = sim(&manifest("hot", hot), 1);
    let warnings = sim.take_warnings();
    assert!(matches!(&warnings[..], [Warning::Light(LightWarning::DiffuseClips { .. })]), "{warnings:?}");
    for (extra, want) in [
        ("[[lights]]\ntype = \"lamp\"\n", "type = \"lamp\""),
        ("[[lights]]\ntype = \"disk\"\npolar = 3.0\n", "`polar` is not a field of a disk light"),
        ("[[lights]]\ntype = \"disk\"\nintensty = 3.0\n", "unknown field `intensty`"),
        ("use_scenario_light = true\n", "did you mean `use_scenario_lights`"),
    ] {
        let m = manifest("bad", extra);
        let err = Simulation::from_manifest(&m, SimOptions::default()).err().unwrap().to_string();
        assert!(err.contains(want), "{extra:?}: {err}");
    }
}

#[test]
fn per_world_light_fields_follow_w_mod_rows() {
    let mut sim = sim(&manifest("fields", &format!("use_scenario_lights = true\n{SUN}")), 4);
    let nlight = sim.scene().nlight();
    let sun = sim.scene().light_name.iter().position(|n| n == "sun").unwrap();
    let model = sim.light(0, sun).unwrap();
    // Two rows of diffuse: worlds 0 and 2 read the first, 1 and 3 the second.
    let mut diffuse = vec![0.0; 2 * nlight * 3];
    diffuse[(nlight + sun) * 3..][..3].copy_from_slice(&[0.1, 0.2, 0.3]);
    diffuse[sun * 3..][..3].copy_from_slice(&[0.9, 0.8, 0.7]);
    sim.set_field("light_diffuse", &diffuse, &[2, nlight, 3]).unwrap();
    for (w, want) in [(0, [0.9f32, 0.8, 0.7]), (1, [0.1, 0.2, 0.3]), (2, [0.9, 0.8, 0.7]), (3, [0.1, 0.2, 0.3])] {
        assert_eq!(sim.light(w, sun).unwrap().diffuse, want, "world {w}");
    }
    // Three rows of activity: world 3 reads row 0 again.
    let mut active = vec![1.0; 3 * nlight];
    active[nlight + sun] = 0.0;
    sim.set_field("light_active", &active, &[3, nlight]).unwrap();
    let on: Vec<bool> = (0..4).map(|w| sim.light(w, sun).unwrap().active).collect();
    assert_eq!(on, [true, false, true, true]);
    // A moved light is placed in its body's frame (the world body here).
    let mut pos: Vec<f64> = vec![0.0; nlight * 3];
    pos[sun * 3..][..3].copy_from_slice(&[1.0, 2.0, 3.0]);
    sim.set_field("light_pos", &pos, &[1, nlight, 3]).unwrap();
    assert_eq!(sim.light(3, sun).unwrap().xpos, DVec3::new(1.0, 2.0, 3.0));
    assert_eq!(sim.light(3, sun).unwrap().xdir, model.xdir);
    let (values, shape) = sim.field("light_active").unwrap();
    assert_eq!((values, shape), (active, vec![3, nlight]));
}

#[test]
fn bad_light_fields_are_errors_naming_the_field_and_the_shapes_allowed() {
    let mut sim = sim(&manifest("badfields", ""), 2);
    let nlight = sim.scene().nlight();
    let cases: Vec<(&str, Vec<f64>, Vec<usize>, &str)> = vec![
        ("light_difuse", vec![0.0; nlight * 3], vec![1, nlight, 3], "did you mean `light_diffuse`"),
        ("light_diffuse", vec![0.0; nlight * 3], vec![1, nlight], "takes (rows, 2, 3)"),
        ("light_diffuse", vec![0.0; 0], vec![0, nlight, 3], "rows >= 1"),
        ("light_pos", vec![0.0; nlight * 3 + 1], vec![1, nlight, 3], "values"),
        ("light_type", vec![5.0; nlight], vec![1, nlight], "mjtLightType"),
        ("light_active", vec![0.5; nlight], vec![1, nlight], "0 (false) or 1 (true)"),
        ("light_dir", vec![0.0; nlight * 3], vec![1, nlight, 3], "zero vector"),
        ("light_pos", vec![f64::NAN; nlight * 3], vec![1, nlight, 3], "finite"),
    ];
    for (name, values, shape, want) in cases {
        let err = sim.set_field(name, &values, &shape).err().unwrap().to_string();
        assert!(err.contains(want), "{name} {shape:?}: {err}");
    }
    assert!(sim.light(2, 0).is_err());
    assert!(sim.light(0, nlight).err().unwrap().to_string().contains("does not exist"));
}
