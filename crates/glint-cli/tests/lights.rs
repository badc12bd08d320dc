//! `glint lights translate` and the errors of `glint lights report` from the command line.
//! The report's renders against the seed's table are tested in tests/python/test_lights.py,
//! where MuJoCo's Python package and Mesa's OSMesa are set up.

use std::path::PathBuf;
use std::process::{Command, Output};

fn glint() -> Command {
    Command::new(env!("CARGO_BIN_EXE_glint"))
}

fn example(parts: &[&str]) -> String {
    let mut p: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples"].iter().collect();
    p.extend(parts);
    p.to_string_lossy().into_owned()
}

fn rig(name: &str) -> String {
    example(&["lights", "rigs", &format!("{name}.toml")])
}

fn out(o: &Output) -> (String, String) {
    (String::from_utf8_lossy(&o.stdout).into_owned(), String::from_utf8_lossy(&o.stderr).into_owned())
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-lights-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn translate_prints_the_lights_and_writes_a_patched_scene_that_loads() {
    let dir = temp_dir("translate");
    let patched = dir.join("scene_lit.xml");
    let o = glint()
        .args(["lights", "translate", &rig("sphere"), "--mjcf", &example(&["lights", "scene.xml"]), "--out"])
        .arg(&patched)
        .output()
        .unwrap();
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(
        lines[0].starts_with(r#"<light name="bulb" type="spot""#) && lines[0].contains(r#"cutoff="90""#),
        "{stdout}"
    );
    assert!(lines[1].starts_with("<headlight ambient=") && lines[1].contains(r#"diffuse="0 0 0""#), "{stdout}");
    let model = glint_mujoco::Model::from_xml_file(&patched).unwrap();
    let s = model.scene();
    assert_eq!(s.light_active.iter().filter(|a| **a).count(), 1, "only the rig's bulb is on");
    assert!(s.light_name.iter().any(|n| n == "bulb"));
}

#[test]
fn translate_json_and_warnings() {
    let dir = temp_dir("json");
    let hot = dir.join("hot.json");
    std::fs::write(
        &hot,
        r#"{"lights": [{"type": "distant", "intensity": 5000}, {"type": "dome", "texture_file": "sky.hdr"}]}"#,
    )
    .unwrap();
    let o = glint()
        .args(["lights", "translate"])
        .arg(&hot)
        .args(["--mjcf", &example(&["lights", "scene.xml"]), "--json"])
        .output()
        .unwrap();
    let (stdout, stderr) = out(&o);
    assert!(o.status.success(), "{stderr}");
    let v: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(v["lights"][0]["name"], "light_0");
    assert_eq!(v["lights"][1]["light_type"], "directional");
    assert!(stderr.contains("clips to white") && stderr.contains("sky.hdr"), "{stderr}");
}

#[test]
fn bad_rigs_and_scenes_are_clear_errors() {
    let dir = temp_dir("bad");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[[lights]]\ntype = \"point\"\n").unwrap();
    let scene = example(&["lights", "scene.xml"]);
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec![bad.to_string_lossy().into(), "--mjcf".into(), scene.clone()], "type = \"point\""),
        (vec!["nowhere.toml".into(), "--mjcf".into(), scene.clone()], "cannot read light rig 'nowhere.toml'"),
        (vec![rig("dome"), "--mjcf".into(), "nowhere.xml".into()], "cannot read MJCF file 'nowhere.xml'"),
    ];
    for (args, want) in cases {
        let o = glint().args(["lights", "translate"]).args(&args).output().unwrap();
        let (_, stderr) = out(&o);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {stderr}");
        assert!(stderr.contains(want) && !stderr.contains("panicked"), "{args:?}: {stderr}");
    }
}

#[test]
fn report_without_mujoco_python_says_how_to_get_it() {
    let dir = temp_dir("report");
    let o = glint()
        .args(["lights", "report", "--python", "/nonexistent/python", "--out"])
        .arg(dir.join("out"))
        .output()
        .unwrap();
    let (_, stderr) = out(&o);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("GLINT_PYTHON") && stderr.contains("mujoco==3.17.0"), "{stderr}");
    // The patched scenes were written before the renderer was needed.
    assert!(dir.join("out/mjcf/dome.xml").is_file());
}
