//! A light rig applied through MuJoCo's model editing: what the compiled model holds.

use std::path::PathBuf;

use glint_lights::{LightWarning, Rig};
use glint_mujoco::{LitScene, Model, MujocoError};

fn example(parts: &[&str]) -> PathBuf {
    let mut p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples"].iter().collect();
    p.extend(parts);
    p
}

fn scene() -> PathBuf {
    example(&["lights", "scene.xml"])
}

fn rig(name: &str) -> Rig {
    Rig::load(example(&["lights", "rigs", &format!("{name}.toml")])).unwrap()
}

fn index(model: &Model, name: &str) -> usize {
    model.scene().light_name.iter().position(|n| n == name).unwrap_or_else(|| panic!("no light {name}"))
}

#[test]
fn the_rig_replaces_the_scene_lights_and_the_headlight_ambient_is_the_fill() {
    let plain = Model::from_xml_file(scene()).unwrap();
    let lit = LitScene::from_xml_file(scene(), &rig("sphere")).unwrap();
    let (before, after) = (plain.scene(), lit.model.scene());
    assert_eq!(after.nlight(), before.nlight() + 1);
    for name in &before.light_name {
        assert!(!after.light_active[index(&lit.model, name)], "scene light {name} is switched off");
    }
    let bulb = index(&lit.model, "bulb");
    assert!(after.light_active[bulb]);
    assert_eq!(after.light_type[bulb], 0, "a spot");
    assert_eq!(after.light_spot[bulb], [90.0, 0.0], "cutoff 90, exponent 0");
    assert_eq!(after.light_diffuse[bulb], [0.54f32; 3]);
    assert_eq!(after.light_attenuation[bulb], [1.0, 0.0, 0.0]);
    assert_eq!(after.light_ambient[bulb], [0.0; 3]);
    let (h0, h1) = (plain.headlight(), lit.model.headlight());
    assert_eq!((h1.diffuse, h1.specular), ([0.0; 3], [0.0; 3]));
    assert!(h0.ambient[0] > 0.0, "the scene has an ambient of its own that the rig must replace");
    // The spec's fill, 0.18 of the bulb's diffuse (0.54, checked above), with nothing of the
    // scene's headlight beneath it.
    let fill = 0.18 * after.light_diffuse[bulb][0];
    assert!(h1.ambient.iter().all(|a| (a - fill).abs() < 1e-6), "{:?}, the scene's own {:?}", h1.ambient, h0.ambient);
}

#[test]
fn the_headlight_ambient_is_the_fill_whatever_the_scene_set() {
    let rig = Rig::from_toml_str("[[lights]]\ntype = \"distant\"\nname = \"sun\"\nintensity = 2000.0").unwrap();
    // MuJoCo's default headlight (ambient 0.1), and one set brighter in the MJCF.
    for visual in ["", r#"<visual><headlight ambient="0.4 0.3 0.2"/></visual>"#] {
        let xml = format!(r#"<mujoco>{visual}<worldbody><geom type="plane" size="1 1 0.1"/></worldbody></mujoco>"#);
        assert!(Model::from_xml_str(&xml).unwrap().headlight().ambient[0] >= 0.1);
        let lit = LitScene::from_xml_str(&xml, &rig).unwrap();
        // The sun: diffuse 2000 · 0.95 / 2000 = 0.95; its fill 0.18 of that.
        let ambient = lit.model.headlight().ambient;
        assert!(ambient.iter().all(|a| (a - 0.18 * 0.95).abs() < 1e-6), "{visual}: {ambient:?}");
    }
}

#[test]
fn directional_and_dome_lights_compile_as_translated() {
    let lit = LitScene::from_xml_file(scene(), &rig("distant")).unwrap();
    let (s, sun) = (lit.model.scene(), index(&lit.model, "sun"));
    assert_eq!(s.light_type[sun], 1, "directional");
    assert!(s.light_castshadow[sun]);
    let dir = s.light_dir[sun];
    assert!((dir.y - 0.5).abs() < 1e-9 && (dir.z + 0.75f64.sqrt()).abs() < 1e-9, "{dir}");
    let dome = LitScene::from_xml_file(scene(), &rig("dome")).unwrap();
    let sky = index(&dome.model, "sky");
    assert_eq!(dome.model.scene().light_type[sky], 1);
    assert!(!dome.model.scene().light_castshadow[sky], "the zenith light casts no shadow");
    assert_eq!(dome.model.scene().light_specular[sky], [0.0; 3]);
}

#[test]
fn a_rig_light_named_like_a_scene_light_is_suffixed() {
    let rig = Rig::from_toml_str("[[lights]]\ntype = \"distant\"\nname = \"top\"").unwrap();
    let lit = LitScene::from_xml_file(scene(), &rig).unwrap();
    let ours = index(&lit.model, "top_scenario");
    assert!(lit.model.scene().light_active[ours]);
    assert!(!lit.model.scene().light_active[index(&lit.model, "top")], "the arm's own light is off");
}

#[test]
fn the_patched_mjcf_compiles_to_the_same_lights() {
    let lit = LitScene::from_xml_file(scene(), &rig("disk_side")).unwrap();
    let xml = lit.to_xml().unwrap();
    assert!(xml.contains(r#"name="side_panel""#), "{xml}");
    let again = Model::from_xml_str(&xml).unwrap();
    let (a, b) = (lit.model.scene(), again.scene());
    assert_eq!(a.light_name, b.light_name);
    assert_eq!(a.light_active, b.light_active);
    assert_eq!(a.light_type, b.light_type);
    assert_eq!(a.light_spot, b.light_spot);
    assert_eq!(a.light_diffuse, b.light_diffuse);
    for (p, q) in a.light_dir.iter().zip(&b.light_dir) {
        assert!((*p - *q).length() < 1e-5, "{p} {q}");
    }
    assert_eq!(lit.model.headlight(), again.headlight());
}

#[test]
fn warnings_are_handed_on_and_values_are_not_clamped() {
    let rig = Rig::from_toml_str("[[lights]]\ntype = \"sphere\"\nname = \"hot\"\nintensity = 5000.0").unwrap();
    let lit = LitScene::from_xml_file(scene(), &rig).unwrap();
    assert!(matches!(&lit.translation.warnings[..], [LightWarning::DiffuseClips { .. }]));
    assert_eq!(lit.model.scene().light_diffuse[index(&lit.model, "hot")], [1.8f32; 3]);
}

#[test]
fn bad_scenes_and_rigs_are_errors() {
    let err = LitScene::from_xml_file("/nonexistent/scene.xml", &Rig::default()).err().unwrap();
    assert!(matches!(err, MujocoError::Unreadable { .. }), "{err}");
    let err =
        LitScene::from_xml_str("<mujoco><worldbody><geom type=\"box\"/></worldbody>", &Rig::default()).err().unwrap();
    assert!(err.to_string().contains("MuJoCo could not load"), "{err}");
    let dup =
        Rig::from_toml_str("[[lights]]\ntype = \"dome\"\nname = \"a\"\n[[lights]]\ntype = \"dome\"\nname = \"a\"")
            .unwrap();
    let err = LitScene::from_xml_file(scene(), &dup).err().unwrap();
    assert!(err.to_string().contains("both named `a`"), "{err}");
}
