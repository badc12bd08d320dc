//! One test per rule of the seed's translation table and `spec/lighting.md`: each fails if
//! its rule is removed.

use glint_lights::{
    AMBIENT_RATIO, LightWarning, LightsError, MAX_RIG_LIGHTS, MjcfLight, MjcfLightType, Rig, Translation, translate,
};
use proptest::prelude::*;

fn rig(toml: &str) -> Rig {
    Rig::from_toml_str(toml).unwrap_or_else(|e| panic!("{e}"))
}

fn one(toml: &str) -> (MjcfLight, Translation) {
    let t = translate(&rig(toml), &[]).unwrap();
    (t.lights[0].clone(), t)
}

fn close(a: [f64; 3], b: [f64; 3]) -> bool {
    a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
}

#[test]
fn type_is_always_written_and_never_point() {
    for kind in ["distant", "sphere", "disk", "cylinder", "dome"] {
        let (light, _) = one(&format!("[[lights]]\ntype = \"{kind}\""));
        let xml = light.to_xml();
        assert!(xml.contains(r#" type=""#), "{kind}: {xml}");
        assert!(!xml.contains("point"), "{kind}: {xml}");
    }
}

#[test]
fn distant_is_directional_with_shadows_aimed_by_polar_and_azimuth() {
    let (l, _) = one("[[lights]]\ntype = \"distant\"\nintensity = 2000.0\npolar = 30.0\nazimuth = 90.0");
    assert_eq!(l.light_type, MjcfLightType::Directional);
    assert!(l.castshadow);
    // Rz(90°)·Rx(30°)·(0,0,−1) = Rz(90°)·(0, 0.5, −0.866) = (−0.5, 0, −0.866)
    assert!(close(l.dir, [-0.5, 0.0, -(3f64.sqrt() / 2.0)]), "{:?}", l.dir);
    assert!(close(l.diffuse, [0.95; 3]), "{:?}", l.diffuse);
    // The shadow map looks from the position: above the scene, against the direction.
    assert!(l.pos[2] > 0.0 && close(l.pos.map(|p| p / glint_lights::DISTANT_STANDOFF), l.dir.map(|d| -d)));
}

#[test]
fn sphere_is_a_downward_hemispherical_spot() {
    let (l, _) = one("[[lights]]\ntype = \"sphere\"\nintensity = 1500.0\nradius = 0.1\npos = [0, 0, 1.5]");
    assert_eq!(l.light_type, MjcfLightType::Spot);
    assert_eq!((l.cutoff, l.exponent), (Some(90.0), Some(0.0)));
    assert_eq!(l.dir, [0.0, 0.0, -1.0]);
    assert_eq!(l.pos, [0.0, 0.0, 1.5]);
    assert!(close(l.diffuse, [1500.0 * 0.18 / 500.0; 3]));
    let xml = l.to_xml();
    assert!(xml.contains(r#"cutoff="90""#) && xml.contains(r#"exponent="0""#), "{xml}");
}

#[test]
fn cylinder_is_lit_as_a_bulb_and_reports_its_shape() {
    let (l, t) = one(
        "[[lights]]\ntype = \"cylinder\"\nname = \"tube\"\npos = [1, 0, 2]\nlength = 2.0\nrot = [0.7071, 0.7071, 0, 0]",
    );
    assert_eq!((l.light_type, l.dir, l.pos), (MjcfLightType::Spot, [0.0, 0.0, -1.0], [1.0, 0.0, 2.0]));
    assert!(close(l.diffuse, [500.0 * 0.18 / 500.0; 3]), "no area factor: {:?}", l.diffuse);
    assert_eq!(
        t.warnings,
        vec![LightWarning::CylinderShapeIgnored { light: "tube".into(), fields: vec!["length", "rot"] }]
    );
    let (_, quiet) = one("[[lights]]\ntype = \"cylinder\"");
    assert!(quiet.warnings.is_empty(), "defaults are not reported: {:?}", quiet.warnings);
}

#[test]
fn disk_is_aimed_by_rot() {
    // 90° about +X turns −Z to +Y.
    let h = 0.5f64.sqrt();
    let (l, _) = one(&format!("[[lights]]\ntype = \"disk\"\npos = [0, -1, 0.5]\nrot = [{h}, {h}, 0, 0]"));
    assert!(close(l.dir, [0.0, 1.0, 0.0]), "{:?}", l.dir);
    assert_eq!((l.cutoff, l.exponent), (Some(90.0), Some(0.0)));
    let (down, _) = one("[[lights]]\ntype = \"disk\"");
    assert!(close(down.dir, [0.0, 0.0, -1.0]));
}

#[test]
fn normalize_false_scales_by_the_emitting_area() {
    let area = |toml: &str| {
        let (on, _) = one(&format!("{toml}\nnormalize = true"));
        let (off, _) = one(&format!("{toml}\nnormalize = false"));
        off.diffuse[0] / on.diffuse[0]
    };
    let sphere = area("[[lights]]\ntype = \"sphere\"\nintensity = 10.0\nradius = 0.3");
    assert!((sphere - 4.0 * std::f64::consts::PI * 0.09).abs() < 1e-12, "{sphere}");
    let disk = area("[[lights]]\ntype = \"disk\"\nintensity = 10.0\nradius = 0.3");
    assert!((disk - std::f64::consts::PI * 0.09).abs() < 1e-12, "{disk}");
}

#[test]
fn dome_is_ambient_plus_a_shadowless_zenith_light() {
    let (l, t) = one("[[lights]]\ntype = \"dome\"\nintensity = 1000.0\ncolor = [1, 0.5, 0.25]");
    let strength = [0.45, 0.225, 0.1125];
    assert_eq!(l.light_type, MjcfLightType::Directional);
    assert_eq!(l.dir, [0.0, 0.0, -1.0]);
    assert!(!l.castshadow);
    assert!(close(l.diffuse, strength) && l.specular == [0.0; 3]);
    // The dome's ambient is its own strength, with no extra 0.18 fill.
    assert!(close(t.headlight.ambient_fill, strength), "{:?}", t.headlight.ambient_fill);
}

#[test]
fn dome_texture_is_reported_and_ignored() {
    let (_, t) = one("[[lights]]\ntype = \"dome\"\nname = \"sky\"\ntexture_file = \"sky.hdr\"");
    assert_eq!(t.warnings, vec![LightWarning::DomeTextureIgnored { light: "sky".into(), file: "sky.hdr".into() }]);
    assert!(t.warnings[0].to_string().contains("sky.hdr"));
}

#[test]
fn every_non_dome_light_adds_its_ambient_fill() {
    let t = translate(
        &rig("[[lights]]\ntype = \"distant\"\n[[lights]]\ntype = \"sphere\"\ncolor = [1, 0, 0]\n[[lights]]\ntype = \"disk\""),
        &[],
    )
    .unwrap();
    let mut want = [0.0; 3];
    for l in &t.lights {
        assert_eq!(l.ambient, [0.0; 3], "the fill goes to the headlight, not the light");
        for (w, d) in want.iter_mut().zip(l.diffuse) {
            *w += AMBIENT_RATIO * d;
        }
    }
    assert!(want[0] > 0.0 && close(t.headlight.ambient_fill, want), "{:?}", t.headlight.ambient_fill);
}

#[test]
fn specular_follows_diffuse_and_attenuation_stays_constant() {
    let (l, _) = one("[[lights]]\ntype = \"sphere\"\nintensity = 700.0\ncolor = [1, 0.5, 0]");
    assert!(close(l.specular, l.diffuse.map(|d| d * 0.3 / 0.7)));
    assert_eq!(l.attenuation, [1.0, 0.0, 0.0]);
    assert!(l.to_xml().contains(r#"attenuation="1 0 0""#));
}

#[test]
fn duplicate_names_are_an_error_naming_both() {
    let err =
        translate(&rig("[[lights]]\ntype = \"dome\"\nname = \"a\"\n[[lights]]\ntype = \"distant\"\nname = \"a\""), &[])
            .unwrap_err();
    assert!(matches!(err, LightsError::DuplicateName { first: 0, second: 1, .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("`a`") && message.contains("0 and 1"), "{message}");
}

#[test]
fn a_clash_with_a_scene_light_gets_scenario_and_unnamed_lights_get_their_index() {
    let t = translate(&rig("[[lights]]\ntype = \"distant\"\nname = \"top\"\n[[lights]]\ntype = \"dome\""), &["top"])
        .unwrap();
    assert_eq!(t.lights[0].name, "top_scenario");
    assert_eq!(t.lights[1].name, "light_1");
    let t = translate(
        &rig("[[lights]]\ntype = \"dome\"\nname = \"top_scenario\"\n[[lights]]\ntype = \"dome\"\nname = \"top\""),
        &["top"],
    )
    .unwrap();
    assert_ne!(t.lights[0].name, t.lights[1].name, "suffixing never makes a duplicate");
}

#[test]
fn a_diffuse_above_one_warns_with_the_intensity_that_fits_and_is_not_clamped() {
    let (l, t) = one("[[lights]]\ntype = \"distant\"\nname = \"sun\"\nintensity = 4000.0");
    assert!(close(l.diffuse, [1.9; 3]), "never clamped: {:?}", l.diffuse);
    let LightWarning::DiffuseClips { max_intensity, .. } = &t.warnings[0] else { panic!("{:?}", t.warnings) };
    assert!((max_intensity - 2000.0 / 0.95).abs() < 1e-9);
    assert!(t.warnings[0].to_string().contains("clips to white"));
    let (_, fine) = one("[[lights]]\ntype = \"distant\"\nintensity = 2000.0");
    assert!(fine.warnings.is_empty());
}

#[test]
fn more_than_seven_lights_warn() {
    let many =
        |n: usize| translate(&rig(&"[[lights]]\ntype = \"sphere\"\nintensity = 100.0\n".repeat(n)), &[]).unwrap();
    assert!(many(MAX_RIG_LIGHTS).warnings.is_empty());
    let t = many(MAX_RIG_LIGHTS + 1);
    assert_eq!(t.warnings, vec![LightWarning::TooManyLights { count: 8 }]);
    assert!(t.warnings[0].to_string().contains("headlight"));
}

#[test]
fn defaults_are_the_config_classes() {
    let (l, _) = one("[[lights]]\ntype = \"sphere\"");
    assert!(close(l.diffuse, [500.0 * 0.18 / 500.0; 3]), "intensity 500, colour white");
    let r = rig("[[lights]]\ntype = \"disk\"\nnormalize = false");
    let glint_lights::LightKind::Disk { radius, rot, .. } = r.lights[0].kind else { panic!() };
    assert_eq!((radius, rot), (1.0, [1.0, 0.0, 0.0, 0.0]));
}

#[test]
fn bad_rigs_are_errors_naming_the_field_and_fix() {
    let cases = [
        ("[[lights]]\nintensity = 3.0", "has no `type`"),
        ("[[lights]]\ntype = \"spehre\"", "did you mean \"sphere\""),
        ("[[lights]]\ntype = \"point\"", "use one of"),
        ("[[lights]]\ntype = \"distant\"\nradius = 1.0", "`radius` is not a field of a distant light"),
        ("[[lights]]\ntype = \"sphere\"\nintensity = -1.0", "`intensity` = -1"),
        ("[[lights]]\ntype = \"sphere\"\nradius = 0.0", "`radius` = 0"),
        ("[[lights]]\ntype = \"disk\"\nrot = [0, 0, 0, 0]", "not a rotation"),
        ("[[lights]]\ntype = \"dome\"\ncolour = [1, 1, 1]", "unknown field `colour`"),
        // Arrays of the wrong length are refused, not cut to length.
        ("[[lights]]\ntype = \"sphere\"\npos = [0, 0, 1, 5]", "invalid length 4, expected an array of exactly 3"),
        ("[[lights]]\ntype = \"sphere\"\ncolor = [1, 1]", "invalid length 2, expected an array of exactly 3"),
        ("[[lights]]\ntype = \"disk\"\nrot = [1, 0, 0, 0, 0]", "invalid length 5, expected an array of exactly 4"),
    ];
    for (toml, want) in cases {
        let err = Rig::from_toml_str(toml).unwrap_err().to_string();
        assert!(err.contains(want), "{toml:?}: {err}");
    }
}

#[test]
fn json_rigs_read_as_toml_ones() {
    let json = Rig::from_json_str(r#"{"lights": [{"type": "disk", "pos": [0, 0, 1.5], "radius": 0.3}]}"#).unwrap();
    let bare = Rig::from_json_str(r#"[{"type": "disk", "pos": [0, 0, 1.5], "radius": 0.3}]"#).unwrap();
    let toml = rig("[[lights]]\ntype = \"disk\"\npos = [0, 0, 1.5]\nradius = 0.3");
    assert_eq!(json, toml);
    assert_eq!(bare, toml);
}

proptest! {
    /// A distant light's direction is a unit vector, straight down at polar 0, horizontal at 90.
    #[test]
    fn distant_directions_are_unit(polar in -360.0f64..360.0, azimuth in -360.0f64..360.0) {
        let (l, _) = one(&format!("[[lights]]\ntype = \"distant\"\npolar = {polar}\nazimuth = {azimuth}"));
        let n = l.dir.iter().map(|d| d * d).sum::<f64>().sqrt();
        prop_assert!((n - 1.0).abs() < 1e-12);
        prop_assert!((l.dir[2] + polar.to_radians().cos()).abs() < 1e-12);
    }

    /// A disk's direction is −Z turned by its (normalized) quaternion: a unit vector.
    #[test]
    fn disk_directions_are_unit(w in -1.0f64..1.0, x in -1.0f64..1.0, y in -1.0f64..1.0, z in -1.0f64..1.0) {
        prop_assume!(w * w + x * x + y * y + z * z > 1e-3);
        let (l, _) = one(&format!("[[lights]]\ntype = \"disk\"\nrot = [{w}, {x}, {y}, {z}]"));
        let n = l.dir.iter().map(|d| d * d).sum::<f64>().sqrt();
        prop_assert!((n - 1.0).abs() < 1e-9);
    }
}
