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
    assert_eq!(m.recorder.lidar_runner_hz, 50.0);
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
    assert_eq!(parse("scene = \"a.xml\"\n").unwrap().recorder.lidar_runner_hz, 100.0);
    let err = parse("scene = \"a.xml\"\nzzzzzz = 1\n").unwrap_err();
    assert!(err.contains("valid keys are scene, lidar, recorder"), "{err}");
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
        ("channels = \"sixteen\"", "invalid type"),
        ("pattern = \"livox-mid360\"", "a non-repetitive pattern has one channel"),
        ("risley_spin_hz = 3.0", "need pattern = \"risley\""),
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
