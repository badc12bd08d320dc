//! Per-world geometry in a simulation: worlds on variants (per-world assets) and worlds whose
//! `geom_size`, `geom_pos` or `geom_dataid` differ each answer rays as `mj_ray` does on that
//! world's model compiled alone from hand-written MJCF; the derived fields are read per world;
//! bad input is refused and changes nothing.

use std::path::PathBuf;

use glam::DVec3;
use glint_core::{AssetEdit, EditTarget, RayBatch, RayFilter, Variant};
use glint_mujoco::{Model, MujocoRays, WorldBatch};
use glint_sim::{SimOptions, Simulation, VariantPlan};

/// A box, a mesh (a centred cube, 0.2 half side; `big` is 0.4) on a free body, a floor.
const SCENE: &str = r#"<mujoco>
  <asset>
    <mesh name="small" vertex="-.2 -.2 -.2  .2 -.2 -.2  -.2 .2 -.2  .2 .2 -.2  -.2 -.2 .2  .2 -.2 .2  -.2 .2 .2  .2 .2 .2"/>
    <mesh name="big" vertex="-.4 -.4 -.4  .4 -.4 -.4  -.4 .4 -.4  .4 .4 -.4  -.4 -.4 .4  .4 -.4 .4  -.4 .4 .4  .4 .4 .4"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1"/>
    <geom name="crate" type="box" pos="1.5 0 0.3" size="0.3 0.3 0.3"/>
    <body name="thing" pos="0 1.5 0.5">
      <freejoint/>
      <geom name="part" type="mesh" mesh="small"/>
    </body>
  </worldbody>
</mujoco>"#;

fn scene_file(tag: &str, xml: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-variants-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scene.xml");
    std::fs::write(&path, xml).unwrap();
    path
}

fn options(nworld: usize) -> SimOptions {
    SimOptions { nworld, ..SimOptions::default() }
}

/// Rays from above the middle in every direction around, below the horizon.
fn fan() -> (DVec3, Vec<DVec3>) {
    let dirs = (0..720)
        .map(|k| {
            let (a, b) = (k as f64 * std::f64::consts::TAU / 240.0, -0.05 - 0.25 * (k / 240) as f64);
            DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin())
        })
        .collect();
    (DVec3::new(0.0, 0.0, 0.9), dirs)
}

/// World `w`'s hits equal `mj_ray` on `alone` (its model compiled on its own), and how many
/// rays that met something other than the floor.
fn assert_world_is(sim: &Simulation, w: usize, alone: &str) -> usize {
    let (origin, dirs) = fan();
    let batch = RayBatch { nray: dirs.len(), pnt: &[origin], vec: &dirs, bodyexclude: &[] };
    let hits = sim.rays(&batch, &RayFilter::default()).unwrap();
    let reference = WorldBatch::new(&Model::from_xml_str(alone).unwrap(), 1).unwrap();
    let mut objects = 0;
    for (i, &dir) in dirs.iter().enumerate() {
        let want = reference.mj_ray(0, origin, dir, &RayFilter::default(), -1);
        let k = w * dirs.len() + i;
        assert_eq!(hits.geomid[k], want.geomid, "world {w}, ray {i}");
        if want.geomid >= 0 {
            assert!((hits.dist[k] - want.dist).abs() <= 1e-9 * want.dist.max(1.0), "world {w}, ray {i}");
            objects += usize::from(want.geomid > 0);
        }
    }
    objects
}

fn edit(geom: &str, mesh: &str) -> AssetEdit {
    AssetEdit { mesh: Some(mesh.into()), ..AssetEdit::new(EditTarget::Geom(geom.into())) }
}

#[test]
fn worlds_on_variants_see_their_own_meshes() {
    let path = scene_file("assets", SCENE);
    let plan = VariantPlan {
        variants: vec![
            Variant { name: "small".into(), edits: vec![] },
            Variant { name: "big".into(), edits: vec![edit("part", "big")] },
        ],
        assign: vec![0, 1],
    };
    let sim = Simulation::from_variants(&path, &plan, vec![], options(4)).unwrap();
    let big = SCENE.replace(r#"mesh="small"/>"#, r#"mesh="big"/>"#);
    for w in 0..4 {
        let alone = if w % 2 == 0 { SCENE } else { &big };
        assert!(assert_world_is(&sim, w, alone) > 20, "world {w} sees the objects");
        assert_eq!(sim.world_variant(w).unwrap(), Some(if w % 2 == 0 { "small" } else { "big" }));
    }
    assert_eq!(sim.meshes().len(), 2, "each mesh once, for all worlds");
    assert_eq!(sim.distinct_geometries(), 2);
    let (dataid, shape) = sim.field("geom_dataid").unwrap();
    assert_eq!(shape, vec![4, 3]);
    assert_eq!(&dataid[..3], &[-1.0, -1.0, 0.0]);
    assert_eq!(&dataid[3..6], &[-1.0, -1.0, 1.0]);
    // The dependent fields are the variant's, read from the model each world steps on.
    let (inertia, shape) = sim.field("body_inertia").unwrap();
    assert_eq!(shape, vec![4, 2, 3]);
    let alone = WorldBatch::new(&Model::from_xml_str(&big).unwrap(), 1).unwrap();
    assert_eq!(&inertia[6..12], &alone.model_array(0, "body_inertia").unwrap().unwrap()[..]);
    assert_ne!(inertia[..6], inertia[6..12]);
}

#[test]
fn worlds_differing_only_in_geom_size_pos_or_dataid_see_their_own() {
    let path = scene_file("fields", SCENE);
    let mut sim = Simulation::from_xml_file(&path, vec![], options(2)).unwrap();
    let crate_id = 1;

    let (mut size, _) = sim.field("geom_size").unwrap();
    let base_size = size.clone();
    size.extend_from_slice(&base_size);
    size[9 + 3 * crate_id..9 + 3 * crate_id + 3].copy_from_slice(&[0.5, 0.2, 0.6]);
    sim.set_field("geom_size", &size, &[2, 3, 3]).unwrap();
    assert_world_is(&sim, 0, SCENE);
    let wide = SCENE.replace(r#"size="0.3 0.3 0.3""#, r#"size="0.5 0.2 0.6""#);
    assert!(assert_world_is(&sim, 1, &wide) > 0);
    sim.set_field("geom_size", &base_size, &[1, 3, 3]).unwrap();

    let (mut pos, _) = sim.field("geom_pos").unwrap();
    let base_pos = pos.clone();
    pos.extend_from_slice(&base_pos);
    pos[9 + 3 * crate_id..9 + 3 * crate_id + 3].copy_from_slice(&[-1.2, -0.8, 0.3]);
    sim.set_field("geom_pos", &pos, &[2, 3, 3]).unwrap();
    assert_world_is(&sim, 0, SCENE);
    let moved = SCENE.replace(r#"pos="1.5 0 0.3""#, r#"pos="-1.2 -0.8 0.3""#);
    assert!(assert_world_is(&sim, 1, &moved) > 0);
    sim.set_field("geom_pos", &base_pos, &[1, 3, 3]).unwrap();

    // MuJoCo Warp's low-level swap: the centred meshes sit where the old one did.
    sim.set_field("geom_dataid", &[-1.0, -1.0, 0.0, -1.0, -1.0, 1.0], &[2, 3]).unwrap();
    assert_world_is(&sim, 0, SCENE);
    let big = SCENE.replace(r#"mesh="small"/>"#, r#"mesh="big"/>"#);
    assert!(assert_world_is(&sim, 1, &big) > 0);
    let (aabb, shape) = sim.field("geom_aabb").unwrap();
    assert_eq!(shape, vec![2, 3, 6]);
    assert!((aabb[18 + 2 * 6 + 3] - 0.4).abs() < 1e-6, "world 1's mesh bounds follow its mesh: {aabb:?}");
}

#[test]
fn bad_geometry_fields_are_refused_and_change_nothing() {
    let path = scene_file("bad", SCENE);
    let mut sim = Simulation::from_xml_file(&path, vec![], options(2)).unwrap();
    let before = sim.field("geom_dataid").unwrap();
    let e = sim.set_field("geom_dataid", &[0.0, -1.0, 0.0], &[1, 3]).unwrap_err().to_string();
    assert!(e.contains("geom_dataid") && e.contains("plane"), "{e}");
    assert_eq!(sim.field("geom_dataid").unwrap(), before, "nothing changed");
    let e = sim.set_field("geom_dataid", &[-1.0, -1.0, 7.0], &[1, 3]).unwrap_err().to_string();
    assert!(e.contains("refers to 7") && e.contains("0 to 1"), "{e}");
    let e = sim.set_field("geom_aabb", &[0.0; 18], &[1, 3, 6]).unwrap_err().to_string();
    assert!(e.contains("derived by MuJoCo"), "{e}");
    let (mut size, _) = sim.field("geom_size").unwrap();
    size[6] = 2.0;
    let e = sim.set_field("geom_size", &size, &[1, 3, 3]).unwrap_err().to_string();
    assert!(e.contains("mesh geom `part`") && e.contains("variant"), "{e}");
    let e = sim.set_field("geom_size", &[0.1; 9], &[2, 3, 3]).unwrap_err().to_string();
    assert!(e.contains("(rows, 3, 3)"), "{e}");
    let e = sim.field("geom_sise").unwrap_err().to_string();
    assert!(e.contains("geom_size"), "{e}");

    let plan = |assign: Vec<usize>| VariantPlan {
        variants: vec![Variant { name: "big".into(), edits: vec![edit("part", "big")] }],
        assign,
    };
    let e = Simulation::from_variants(&path, &plan(vec![0, 1]), vec![], options(2)).unwrap_err().to_string();
    assert!(e.contains("variant 1"), "{e}");
    let e = Simulation::from_variants(&path, &plan(vec![]), vec![], options(2)).unwrap_err().to_string();
    assert!(e.contains("assignment"), "{e}");
    let mut wrong = plan(vec![0]);
    wrong.variants[0].edits = vec![edit("prt", "big")];
    let e = Simulation::from_variants(&path, &wrong, vec![], options(2)).unwrap_err().to_string();
    assert!(e.contains("variant `big`") && e.contains("no geom `prt`") && e.contains("`part`"), "{e}");
}

#[test]
fn a_manifest_with_variants_records_each_worlds_variant() {
    let manifest: PathBuf = [env!("CARGO_MANIFEST_DIR"), "..", "..", "examples", "variants.toml"].iter().collect();
    let mut sim = Simulation::from_manifest(&manifest, options(3)).unwrap();
    assert_eq!(
        (0..3).map(|w| sim.world_variant(w).unwrap().unwrap()).collect::<Vec<_>>(),
        ["as_built", "swapped", "as_built"]
    );
    let out = std::env::temp_dir().join(format!("glint-variants-record-{}", std::process::id()));
    let dir = sim.arm_recording(&glint_sim::RecordingOptions { out: Some(out.clone()), episodes: 3 }).unwrap();
    sim.step(None).unwrap();
    sim.stop_recording(glint_record::EpisodeStatus::Complete).unwrap();
    let log = std::fs::read_to_string(dir.join("meta/episodes.jsonl")).unwrap();
    let mut variants: Vec<String> = log
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()["variant"].as_str().unwrap().to_string())
        .collect();
    variants.sort();
    assert_eq!(variants, ["as_built", "as_built", "swapped"]);
    std::fs::remove_dir_all(out).ok();
}
