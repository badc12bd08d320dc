//! Material bakes: collision geometry reports the visual surface's material, the static grid,
//! the `.lvxb` file (round trip, staleness, every kind of damaged file), and the request rules.

use std::path::{Path, PathBuf};

use glam::DVec3;
use glint_materials::{
    BAKE_FORMAT_VERSION, Bake, BakeRequest, BakeSettings, BakeStatus, MaterialError, MaterialPreset, MaterialTable,
    NirMaterial, bake_path, material_fingerprint, scene_fingerprint,
};
use glint_mujoco::{Model, WorldBatch};

/// A robot arm whose collision geoms (group 3, no material) sit over visual geoms of two
/// materials, and a body that has only a collision geom.
const ARM: &str = r#"
<mujoco>
  <asset>
    <material name="red_paint" rgba="0.8 0.1 0.1 1"/>
    <material name="chrome" rgba="0.9 0.9 0.9 1"/>
    <material name="rubber" rgba="0.1 0.1 0.1 1"/>
  </asset>
  <worldbody>
    <body name="arm" pos="0 0 1">
      <freejoint/>
      <geom name="arm_visual" type="box" size="0.1 0.1 0.3" material="red_paint" group="2" contype="0" conaffinity="0"/>
      <geom name="arm_collision" type="capsule" size="0.12 0.3" group="3"/>
      <geom name="hand_visual" type="sphere" pos="0 0 0.5" size="0.1" material="chrome" group="2" contype="0" conaffinity="0"/>
      <geom name="hand_collision" type="sphere" pos="0 0 0.52" size="0.11" group="3"/>
      <geom name="pad_collision" type="box" pos="0 0 -0.35" size="0.1 0.1 0.02" group="3" material="rubber"/>
    </body>
    <body name="lonely" pos="3 0 1">
      <freejoint/>
      <geom name="lonely_collision" type="box" size="0.1 0.1 0.1" group="3"/>
    </body>
  </worldbody>
</mujoco>"#;

/// Static scenery: one collision box over two visual boxes of different materials, a floor
/// plane, and a thin beam turned 45 degrees about z.
const SHELF: &str = r#"
<mujoco>
  <asset>
    <material name="glass" rgba="0.6 0.8 0.9 0.3"/>
    <material name="paint" rgba="0.9 0.9 0.2 1"/>
    <material name="concrete" rgba="0.5 0.5 0.5 1"/>
  </asset>
  <worldbody>
    <geom name="floor" type="plane" size="5 5 0.1" material="concrete"/>
    <geom name="left" type="box" pos="-0.5 0 0.5" size="0.5 0.5 0.5" material="glass" contype="0" conaffinity="0"/>
    <geom name="right" type="box" pos="0.5 0 0.5" size="0.5 0.5 0.5" material="paint" contype="0" conaffinity="0"/>
    <geom name="collision" type="box" pos="0 0 0.5" size="1.02 0.52 0.52" group="3"/>
    <geom name="beam" type="box" pos="0 3 0.5" size="1 0.05 0.05" euler="0 0 45" material="paint"/>
    <geom name="beam_collision" type="box" pos="0 3 0.5" size="1.02 0.07 0.07" euler="0 0 45" group="3"/>
  </worldbody>
</mujoco>"#;

fn load(xml: &str) -> (Model, WorldBatch) {
    let model = Model::from_xml_str(xml).unwrap();
    let batch = WorldBatch::new(&model, 1).unwrap();
    (model, batch)
}

fn geom(model: &Model, name: &str) -> usize {
    model.scene().geom_name.iter().position(|n| n == name).unwrap_or_else(|| panic!("no geom {name}"))
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("glint-bake-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The NIR material a MuJoCo material resolves to with no authoring.
fn albedo(model: &Model, material: &str) -> NirMaterial {
    let scene = model.scene();
    let m = scene.mat_name.iter().position(|n| n == material).unwrap();
    NirMaterial::from_albedo(scene.mat_rgba[m])
}

#[test]
fn collision_geoms_report_their_bodys_visual_material() {
    let (model, batch) = load(ARM);
    let mut table = MaterialTable::default();
    let chrome = MaterialPreset::PolishedMetal.material();
    table.set("chrome", chrome).unwrap();
    let bake = Bake::build(model.scene(), batch.poses(), &table, BakeSettings::default()).unwrap();
    let red = albedo(&model, "red_paint");
    let at = |name: &str| bake.material_at(geom(&model, name), DVec3::new(0.0, 0.0, 1.0)).copied();
    assert_eq!(at("arm_visual"), Some(red));
    assert_eq!(at("arm_collision"), Some(red), "nearest visual geom of the same body");
    assert_eq!(at("hand_collision"), Some(chrome), "the hand's visual sphere, authored");
    assert_eq!(at("pad_collision"), Some(albedo(&model, "rubber")), "its own material wins");
    assert_eq!(at("lonely_collision"), None, "no visual geom on its body: a hole");
    assert_eq!(bake.material_at(model.scene().ngeom(), DVec3::ZERO), None);
    // Nothing static is visual here, so the grid is empty.
    assert_eq!((bake.dims(), bake.filled_cells()), ([0; 3], 0));

    // With hidden geoms included, a collision geom is visual and keeps its own colour.
    let all = BakeSettings { include_hidden: true, ..BakeSettings::default() };
    let bake = Bake::build(model.scene(), batch.poses(), &table, all).unwrap();
    let grey = NirMaterial::from_albedo(model.scene().geom_rgba[geom(&model, "arm_collision")]);
    assert_eq!(bake.geom_material(geom(&model, "arm_collision")), Some(&grey));
    assert_eq!(bake.geom_material(geom(&model, "lonely_collision")), Some(&grey));
}

#[test]
fn a_static_collision_box_reports_the_visual_material_by_position() {
    let (model, batch) = load(SHELF);
    let bake = Bake::build(model.scene(), batch.poses(), &MaterialTable::default(), BakeSettings::default()).unwrap();
    let (glass, paint) = (albedo(&model, "glass"), albedo(&model, "paint"));
    let collision = geom(&model, "collision");
    // Points on the collision box's faces, over each visual box.
    for (p, want) in [
        (DVec3::new(-0.5, -0.52, 0.5), glass),
        (DVec3::new(-0.9, 0.0, 1.02), glass),
        (DVec3::new(-1.02, 0.3, 0.2), glass),
        (DVec3::new(0.5, -0.52, 0.5), paint),
        (DVec3::new(0.9, 0.0, 1.02), paint),
        (DVec3::new(1.02, -0.3, 0.8), paint),
    ] {
        assert_eq!(bake.material_at(collision, p), Some(&want), "at {p}");
    }
    // Off the grid, the per-geom table answers (the nearest visual geom of the world body).
    let far = bake.material_at(collision, DVec3::new(0.0, -4.0, 0.5));
    assert_eq!(far, bake.geom_material(collision));
    assert!(far.is_some());
    // A geom with its own material never reads the grid.
    let left = geom(&model, "left");
    assert_eq!(bake.material_at(left, DVec3::new(0.5, 0.0, 0.5)), Some(&glass));

    // The grid follows the beam's orientation, not its world bounds.
    let beam_collision = geom(&model, "beam_collision");
    let along = DVec3::new(0.6, 3.6, 0.5);
    assert_eq!(bake.grid_material(along), Some(&paint));
    assert_eq!(bake.material_at(beam_collision, along), Some(&paint));
    assert_eq!(bake.grid_material(DVec3::new(0.6, 2.4, 0.5)), None, "inside the beam's world box, off the beam");

    // Planes are infinite and stay out of the grid; the grid spans the boxes plus one cell.
    let [nx, ny, nz] = bake.dims();
    assert_eq!(bake.cell_size(), 0.05);
    assert!((nz as f64 * 0.05 - (1.04 + 0.1)).abs() < 0.051, "dims {:?}", bake.dims());
    assert!(nx > 40 && ny > 70 && bake.filled_cells() > 0);
    assert_eq!(bake.grid_material(DVec3::new(3.0, -3.0, 0.0)), None);
}

#[test]
fn splat_radius_and_max_dim_shape_the_grid() {
    let (model, batch) = load(SHELF);
    let table = MaterialTable::default();
    let bake = |s: BakeSettings| Bake::build(model.scene(), batch.poses(), &table, s).unwrap();
    let none = bake(BakeSettings { splat_radius: 0, ..BakeSettings::default() });
    let wide = bake(BakeSettings { splat_radius: 3, ..BakeSettings::default() });
    assert!(wide.filled_cells() > none.filled_cells());
    // A point 0.1 m outside the boxes: reached by a 3-cell splat, not by none.
    let outside = DVec3::new(0.5, -0.6, 0.5);
    assert_eq!(none.grid_material(outside), None);
    assert_eq!(wide.grid_material(outside), Some(&albedo(&model, "paint")));
    // No axis exceeds max_dim: the cell grows instead.
    let capped = bake(BakeSettings { max_dim: 16, ..BakeSettings::default() });
    assert!(capped.dims().iter().all(|&d| d <= 16), "{:?}", capped.dims());
    assert!(capped.cell_size() > 0.05);
    let tiny = bake(BakeSettings { max_dim: 1, splat_radius: 5, ..BakeSettings::default() });
    assert_eq!(tiny.dims(), [1, 1, 1]);
}

#[test]
fn save_and_load_round_trip() {
    let (model, batch) = load(SHELF);
    let mut table = MaterialTable::default();
    table.set("paint", MaterialPreset::Retroreflector.material()).unwrap();
    let bake = Bake::build(model.scene(), batch.poses(), &table, BakeSettings::default()).unwrap();
    let dir = temp_dir("roundtrip");
    let path = bake_path(&dir, "scene").unwrap();
    assert_eq!(path, dir.join("MaterialBakes").join("scene.lvxb"));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, bake.to_bytes()).unwrap();
    let back = Bake::load(&path).unwrap();
    assert_eq!(back, bake);
    assert_eq!(back.to_bytes(), bake.to_bytes());
    let status = back.status(model.scene(), &table);
    assert_eq!(
        status,
        BakeStatus {
            valid: true,
            format_version: BAKE_FORMAT_VERSION,
            cell_size: 0.05,
            requested_cell_size: 0.05,
            splat_radius: 1,
            dims: bake.dims(),
            filled_cells: bake.filled_cells(),
            geom_materials: model.scene().ngeom() as u64,
            material_fingerprint: material_fingerprint(model.scene(), &table),
            stale: false,
            scene_fingerprint: scene_fingerprint(model.scene()),
            matches_scene: true,
        }
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_material_edit_or_an_older_format_makes_a_bake_stale() {
    let (model, batch) = load(SHELF);
    let scene = model.scene();
    let mut table = MaterialTable::default();
    let bake = Bake::build(scene, batch.poses(), &table, BakeSettings::default()).unwrap();
    assert!(!bake.status(scene, &table).stale);
    // Authoring a material the scene does not use changes nothing.
    table.set("unused", MaterialPreset::Mirror.material()).unwrap();
    assert!(!bake.status(scene, &table).stale);
    // Editing any channel of a used material does.
    let base = MaterialPreset::ClearFloatGlass.material();
    table.set("glass", base).unwrap();
    assert!(bake.status(scene, &table).stale);
    let fresh = Bake::build(scene, batch.poses(), &table, BakeSettings::default()).unwrap();
    assert!(!fresh.status(scene, &table).stale);
    let before = material_fingerprint(scene, &table);
    for edit in [
        NirMaterial { reflectivity: 0.1, ..base },
        NirMaterial { retroreflective: 0.1, ..base },
        NirMaterial { f0: 0.1, ..base },
        NirMaterial { transmission: 0.1, ..base },
        NirMaterial { absorption: 0.1, ..base },
        NirMaterial { continuation: glint_materials::Continuation::Medium, ..base },
        NirMaterial { roughness: 0.1, ..base },
        NirMaterial { metalness: 0.1, ..base },
    ] {
        let mut t = table.clone();
        t.set("glass", edit).unwrap();
        assert_ne!(material_fingerprint(scene, &t), before, "{edit:?}");
        assert!(fresh.status(scene, &t).stale);
    }
    // The same bake against another scene (other geoms) does not match it, and is stale too.
    let (arm, _) = load(ARM);
    let status = fresh.status(arm.scene(), &table);
    assert!(status.valid && !status.matches_scene && status.stale, "{status:?}");

    // A file of an older format loads, and reports stale.
    let dir = temp_dir("stale");
    let path = dir.join("old.lvxb");
    let mut bytes = fresh.to_bytes();
    bytes[4..8].copy_from_slice(&0u32.to_le_bytes());
    // Formats before 2 have no scene fingerprint: the 8 bytes after the material fingerprint
    // (magic, version, settings, dims, origin, cell and material fingerprint take 77).
    bytes.drain(77..85);
    let n = bytes.len();
    let crc = crc32fast::hash(&bytes[..n - 4]);
    bytes[n - 4..].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let old = Bake::load(&path).unwrap();
    assert_eq!(old.format_version(), 0);
    let status = old.status(scene, &table);
    assert!(status.valid && status.stale && status.format_version == 0);
    assert!(status.matches_scene && status.scene_fingerprint == 0, "no scene fingerprint: matched by geom count");
    std::fs::remove_dir_all(&dir).ok();
}

/// Asserts `result` is a bake error naming `path` and containing `what`.
fn bake_error(result: Result<Bake, MaterialError>, path: &Path, what: &str) {
    let err = result.expect_err("a damaged bake must not load");
    assert!(matches!(err, MaterialError::Bake { .. }), "{err:?}");
    let text = err.to_string();
    assert!(text.contains(&path.display().to_string()) && text.contains(what), "{text}");
}

#[test]
fn damaged_files_are_errors_that_name_the_file() {
    let (model, batch) = load(SHELF);
    let settings = BakeSettings { cell_size: 0.5, ..BakeSettings::default() };
    let bake = Bake::build(model.scene(), batch.poses(), &MaterialTable::default(), settings).unwrap();
    let bytes = bake.to_bytes();
    let dir = temp_dir("damaged");
    let path = dir.join("bad.lvxb");

    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    bake_error(Bake::load(&path), &path, "truncated");
    let mut flipped = bytes.clone();
    flipped[bytes.len() - 10] ^= 0x40;
    std::fs::write(&path, &flipped).unwrap();
    bake_error(Bake::load(&path), &path, "checksum mismatch");
    std::fs::write(&path, b"PK\x03\x04 this is a zip file, not a bake").unwrap();
    bake_error(Bake::load(&path), &path, "not a glint material bake");
    let mut newer = bytes.clone();
    newer[4..8].copy_from_slice(&(BAKE_FORMAT_VERSION + 1).to_le_bytes());
    std::fs::write(&path, &newer).unwrap();
    bake_error(Bake::load(&path), &path, "newer glint");
    let mut longer = bytes.clone();
    longer.extend_from_slice(b"extra");
    std::fs::write(&path, &longer).unwrap();
    bake_error(Bake::load(&path), &path, "follow the checksum");
    let missing = dir.join("missing.lvxb");
    bake_error(Bake::load(&missing), &missing, "cannot read");
    // A current file whose header says version 0 (the layout without a scene fingerprint):
    // the message says which version its header gave, not only that the file ended.
    let mut version_zero = bytes.clone();
    version_zero[4..8].copy_from_slice(&0u32.to_le_bytes());
    std::fs::write(&path, &version_zero).unwrap();
    bake_error(Bake::load(&path), &path, "its header reads as format version 0");
    // An absurd grid size is damage, named as such, not a short file.
    let mut absurd = bytes.clone();
    absurd[25..29].copy_from_slice(&4_000_000_000u32.to_le_bytes());
    std::fs::write(&path, &absurd).unwrap();
    bake_error(Bake::load(&path), &path, "grid dims [4000000000");

    // Truncated at every length, and random byte flips: errors, never a panic.
    let source = Path::new("fuzz.lvxb");
    for len in 0..bytes.len() {
        bake_error(Bake::from_bytes(&bytes[..len], source), source, "");
    }
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..3000 {
        let mut b = bytes.clone();
        for _ in 0..1 + next() % 3 {
            let at = (next() % b.len() as u64) as usize;
            b[at] ^= (1 + next() % 255) as u8;
        }
        bake_error(Bake::from_bytes(&b, source), source, "");
    }
    assert_eq!(Bake::from_bytes(&bytes, source).unwrap(), bake);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn status_before_any_bake_is_not_valid() {
    let s = BakeStatus::none();
    assert!(!s.valid && !s.stale);
    assert_eq!((s.dims, s.filled_cells, s.geom_materials), ([0; 3], 0, 0));
}

#[test]
fn requests_take_the_scene_setting_for_zero() {
    let scene = BakeSettings { cell_size: 0.1, max_dim: 128, splat_radius: 2, include_hidden: true };
    assert_eq!(BakeRequest::default().resolve(&scene).unwrap(), scene);
    let r = BakeRequest { cell_size: 0.02, max_dim: 64, splat_radius: -1, include_hidden: 2 };
    assert_eq!(
        r.resolve(&scene).unwrap(),
        BakeSettings { cell_size: 0.02, max_dim: 64, splat_radius: 0, include_hidden: false }
    );
    let r = BakeRequest { splat_radius: 4, include_hidden: 1, ..BakeRequest::default() };
    let s = r.resolve(&BakeSettings::default()).unwrap();
    assert_eq!((s.cell_size, s.max_dim, s.splat_radius, s.include_hidden), (0.05, 256, 4, true));
    for (r, field) in [
        (BakeRequest { cell_size: -1.0, ..BakeRequest::default() }, "cell_size"),
        (BakeRequest { cell_size: f64::NAN, ..BakeRequest::default() }, "cell_size"),
        (BakeRequest { max_dim: -5, ..BakeRequest::default() }, "max_dim"),
        (BakeRequest { max_dim: 5000, ..BakeRequest::default() }, "max_dim"),
        (BakeRequest { splat_radius: -2, ..BakeRequest::default() }, "splat_radius"),
        (BakeRequest { splat_radius: 17, ..BakeRequest::default() }, "splat_radius"),
        (BakeRequest { include_hidden: 3, ..BakeRequest::default() }, "include_hidden"),
    ] {
        let err = r.resolve(&scene).unwrap_err().to_string();
        assert!(err.contains(field), "{r:?}: {err}");
    }
    let bad_scene = BakeSettings { max_dim: 0, ..BakeSettings::default() };
    assert!(BakeRequest::default().resolve(&bad_scene).unwrap_err().to_string().contains("max_dim"));
    assert!(bake_path(Path::new("."), "../escape").unwrap_err().to_string().contains("not usable"));
    assert!(bake_path(Path::new("."), "").is_err());
    assert!(bake_path(Path::new("."), "warehouse-v2.night").is_ok());
}

#[test]
fn a_bake_of_another_scene_with_as_many_geoms_does_not_match_it() {
    let (model, batch) = load(SHELF);
    let table = MaterialTable::default();
    let bake = Bake::build(model.scene(), batch.poses(), &table, BakeSettings::default()).unwrap();
    let status = bake.status(model.scene(), &table);
    assert!(status.matches_scene && !status.stale && status.scene_fingerprint == scene_fingerprint(model.scene()));
    // The same geoms and materials, one box resized: the geometry the grid was built from is gone.
    let resized = SHELF.replace(r#"size="1 0.05 0.05""#, r#"size="1.5 0.05 0.05""#);
    let (other, _) = load(&resized);
    assert_eq!(other.scene().ngeom(), model.scene().ngeom());
    assert_eq!(material_fingerprint(other.scene(), &table), material_fingerprint(model.scene(), &table));
    let status = bake.status(other.scene(), &table);
    assert!(!status.matches_scene && status.stale, "{status:?}");
    // Recolouring a geom is a material edit, not another scene.
    let recoloured =
        SHELF.replace(r#"size="1.02 0.52 0.52" group="3""#, r#"size="1.02 0.52 0.52" group="3" rgba="0 0 0 1""#);
    let (other, _) = load(&recoloured);
    let status = bake.status(other.scene(), &table);
    assert!(status.matches_scene && status.stale, "{status:?}");
}

#[test]
fn the_status_reports_the_cell_size_max_dim_grew() {
    let (model, batch) = load(SHELF);
    let settings = BakeSettings { cell_size: 0.01, max_dim: 16, ..BakeSettings::default() };
    let bake = Bake::build(model.scene(), batch.poses(), &MaterialTable::default(), settings).unwrap();
    let status = bake.status(model.scene(), &MaterialTable::default());
    assert_eq!(status.requested_cell_size, 0.01);
    assert!(status.cell_size > 0.1, "16 cells over a 3 m scene: {}", status.cell_size);
    assert_eq!(bake.requested_cell_size(), 0.01);
}
