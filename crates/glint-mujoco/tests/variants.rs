//! Per-world assets: the two examples of MuJoCo Warp's documentation ("Per-world meshes"),
//! compiled as variants through mjSpec, give every world the fields that compiling its
//! variant alone (hand-written MJCF, no mjSpec) gives; rays in each world equal `mj_ray` on
//! that variant alone; a world's physics equals a plain MuJoCo run of its variant.

use std::sync::Arc;

use glam::DVec3;
use glint_core::{AssetEdit, EditTarget, RayBatch, RayCaster, RayFilter, Variant};
use glint_mujoco::{Model, MujocoRays, SceneSpec, WorldBatch};

/// The arrays the seed overrides per world for per-world meshes.
const DEPENDENT: [&str; 11] = [
    "geom_dataid",
    "geom_size",
    "geom_aabb",
    "geom_rbound",
    "geom_pos",
    "body_mass",
    "body_subtreemass",
    "body_inertia",
    "body_invweight0",
    "body_ipos",
    "body_iquat",
];

const GEOM_LEVEL: &str = include_str!("../../../tests/data/per_world_meshes_geom_level.xml");

const BODY_LEVEL: &str = include_str!("../../../tests/data/per_world_meshes_body_level.xml");

fn geom_edit(geom: &str, f: impl FnOnce(&mut AssetEdit)) -> AssetEdit {
    let mut e = AssetEdit::new(EditTarget::Geom(geom.into()));
    f(&mut e);
    e
}

/// Compiles `variants` of `xml` and puts world `w` on `variants[assignment[w]]`; returns the
/// batch and the caster with each world's shapes.
fn batch(xml: &str, variants: &[Variant], assignment: &[usize]) -> (Model, WorldBatch, RayCaster) {
    let mut spec = SceneSpec::from_xml_str(xml).unwrap();
    let model = spec.compile().unwrap();
    let compiled: Vec<_> = variants.iter().map(|v| spec.compile_variant(&model, v).unwrap()).collect();
    let mut worlds = WorldBatch::new(&model, assignment.len()).unwrap();
    let mut caster = RayCaster::new(model.scene(), worlds.poses());
    let shapes: Vec<_> = compiled.iter().map(|v| Arc::new(v.shapes())).collect();
    for (w, &k) in assignment.iter().enumerate() {
        worlds.set_variant(w, &compiled[k]).unwrap();
    }
    let per_world: Vec<_> = assignment.iter().map(|&k| shapes[k].clone()).collect();
    caster.set_shapes(model.scene(), worlds.poses(), &per_world).unwrap();
    (model, worlds, caster)
}

/// Every dependent array of each world equals the one of its variant compiled alone.
fn assert_fields_match(worlds: &WorldBatch, alone: &[Model], assignment: &[usize]) {
    for (w, &k) in assignment.iter().enumerate() {
        let reference = WorldBatch::new(&alone[k], 1).unwrap();
        for name in DEPENDENT {
            let got = worlds.model_array(w, name).unwrap().unwrap();
            let want = reference.model_array(0, name).unwrap().unwrap();
            assert_eq!(got, want, "world {w} (variant {k}): {name}");
        }
    }
}

/// Rays from around the object in each world equal `mj_ray` on the variant alone.
fn assert_rays_match(model: &Model, worlds: &WorldBatch, caster: &RayCaster, alone: &[Model], assignment: &[usize]) {
    let dirs: Vec<DVec3> = (0..400)
        .map(|k| {
            let (a, b) = (k as f64 * 0.157, -0.9 + 1.6 * (k as f64 / 400.0));
            DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin())
        })
        .collect();
    let origin = DVec3::new(0.6, 0.5, 2.5);
    let targets: Vec<DVec3> =
        dirs.iter().map(|d| (DVec3::new(0.5, 0.5, 1.5) + 1.5 * *d - origin).normalize()).collect();
    let batch = RayBatch { nray: targets.len(), pnt: &[origin], vec: &targets, bodyexclude: &[] };
    let hits = caster.rays(model.scene(), worlds.poses(), &batch, &RayFilter::default()).unwrap();
    let mut hit_object = vec![0usize; assignment.len()];
    for (w, &k) in assignment.iter().enumerate() {
        let reference = WorldBatch::new(&alone[k], 1).unwrap();
        for (i, &dir) in targets.iter().enumerate() {
            let want = reference.mj_ray(0, origin, dir, &RayFilter::default(), -1);
            let got = (hits.geomid[w * targets.len() + i], hits.dist[w * targets.len() + i]);
            assert_eq!(got.0, want.geomid, "world {w} ray {i}");
            if want.geomid >= 0 {
                assert!((got.1 - want.dist).abs() <= 1e-9 * want.dist.max(1.0), "world {w} ray {i}");
                hit_object[w] += usize::from(want.geomid > 0);
            }
        }
    }
    assert!(hit_object.iter().all(|&n| n > 10), "the rays meet the object in every world: {hit_object:?}");
}

#[test]
fn geom_level_example_gives_each_world_its_variant() {
    let variants = [
        Variant { name: "a".into(), edits: vec![] },
        Variant { name: "b".into(), edits: vec![geom_edit("obj", |e| e.mesh = Some("mesh_b".into()))] },
    ];
    let assignment = [0, 0, 1, 1];
    let (model, worlds, caster) = batch(GEOM_LEVEL, &variants, &assignment);
    let alone = [
        Model::from_xml_str(GEOM_LEVEL).unwrap(),
        Model::from_xml_str(&GEOM_LEVEL.replace(r#"mesh="mesh_a"/>"#, r#"mesh="mesh_b"/>"#)).unwrap(),
    ];
    assert_fields_match(&worlds, &alone, &assignment);
    assert_rays_match(&model, &worlds, &caster, &alone, &assignment);
    assert_eq!(caster.distinct_shapes(), 2);
    assert_ne!(worlds.model_array(0, "body_mass").unwrap(), worlds.model_array(2, "body_mass").unwrap());
}

#[test]
fn body_level_example_gives_each_world_its_variant() {
    let variants = [
        Variant { name: "A".into(), edits: vec![] },
        Variant {
            name: "B".into(),
            edits: vec![
                geom_edit("obj_0", |e| e.mesh = Some("mB".into())),
                geom_edit("obj_1", |e| {
                    e.mesh = Some("mC".into());
                    e.enabled = Some(true);
                }),
            ],
        },
    ];
    let assignment = [0, 0, 0, 1, 1, 1];
    let (model, worlds, caster) = batch(BODY_LEVEL, &variants, &assignment);
    let b_alone = BODY_LEVEL.replace(r#"mesh="mA"/>"#, r#"mesh="mB"/>"#).replace(
        r#"<geom name="obj_1" size=".001" contype="0" conaffinity="0" mass="0"/>"#,
        r#"<geom name="obj_1" type="mesh" mesh="mC" size=".001" contype="1" conaffinity="1" mass="0"/>"#,
    );
    let alone = [Model::from_xml_str(BODY_LEVEL).unwrap(), Model::from_xml_str(&b_alone).unwrap()];
    assert_fields_match(&worlds, &alone, &assignment);
    // The seed's null slot: variant A's obj_1 has no mesh.
    let obj_1 = 2;
    assert_eq!(worlds.model_array(0, "geom_dataid").unwrap().unwrap()[obj_1], -1.0);
    assert_eq!(worlds.model_array(3, "geom_dataid").unwrap().unwrap()[obj_1], 2.0);
    assert_rays_match(&model, &worlds, &caster, &alone, &assignment);
}

#[test]
fn a_variant_world_steps_as_its_variant_alone_bit_for_bit() {
    let variants = [Variant { name: "b".into(), edits: vec![geom_edit("obj", |e| e.mesh = Some("mesh_b".into()))] }];
    let (_, mut worlds, _) = batch(GEOM_LEVEL, &variants, &[0, 0]);
    let alone = Model::from_xml_str(&GEOM_LEVEL.replace(r#"mesh="mesh_a"/>"#, r#"mesh="mesh_b"/>"#)).unwrap();
    let mut reference = WorldBatch::new(&alone, 1).unwrap();
    worlds.step(1000);
    reference.step(1000);
    assert_eq!(worlds.qpos(1), reference.qpos(0));
}

#[test]
fn bad_variants_are_named_errors() {
    let mut spec = SceneSpec::from_xml_str(BODY_LEVEL).unwrap();
    let model = spec.compile().unwrap();
    let error = |edits: Vec<AssetEdit>| {
        spec.compile_variant(&model, &Variant { name: "v".into(), edits }).unwrap_err().to_string()
    };
    let e = error(vec![geom_edit("obj_O", |e| e.mesh = Some("mB".into()))]);
    assert!(e.contains("variant `v`") && e.contains("no geom `obj_O`") && e.contains("`obj_0`"), "{e}");
    let e = error(vec![geom_edit("obj_0", |e| e.mesh = Some("mD".into()))]);
    assert!(e.contains("no mesh `mD`") && e.contains("did you mean"), "{e}");
    let e = error(vec![AssetEdit { mesh: Some("mB".into()), ..AssetEdit::new(EditTarget::Body("objj".into())) }]);
    assert!(e.contains("no body `objj`"), "{e}");
    let e = error(vec![AssetEdit { mesh: Some("mB".into()), ..AssetEdit::new(EditTarget::Body("obj".into())) }]);
    assert!(e.contains("has 2 geoms"), "{e}");
    let e = error(vec![geom_edit("obj_0", |e| e.texture = Some("t".into()))]);
    assert!(e.contains("no texture `t`"), "{e}");
    let e = error(vec![AssetEdit { texture: None, ..AssetEdit::new(EditTarget::Material("steel".into())) }]);
    assert!(e.contains("no material `steel`"), "{e}");
}
