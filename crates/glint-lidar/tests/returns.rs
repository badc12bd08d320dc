//! The return model on real geometry: live material scans through `Lidars`, with glass,
//! mirrors and water built in MJCF, and the secondary geometry the recorder captures.

use std::sync::Arc;

use glam::DVec3;
use glint_core::{RayCaster, Scene};
use glint_lidar::{
    LidarBinding, LidarError, Lidars, MaterialLookup, MaterialPreset, MaterialTable, NirMaterial, PhysicalModel,
    ReturnParams, ReturnPreset, ScanConfig, SecondaryCapture, SecondaryScope, footprint_offsets, slab_optics,
};
use glint_mujoco::{Model, WorldBatch};

/// Each geom's material from its MuJoCo material's authored NIR channels (else its albedo).
struct ByGeom(Vec<NirMaterial>);

impl ByGeom {
    fn new(scene: &Scene, table: &MaterialTable) -> ByGeom {
        let materials = (0..scene.ngeom())
            .map(|g| match scene.geom_matid[g] {
                m if m >= 0 => table
                    .get(&scene.mat_name[m as usize])
                    .copied()
                    .unwrap_or_else(|| NirMaterial::from_albedo(scene.mat_rgba[m as usize])),
                _ => NirMaterial::from_albedo(scene.geom_rgba[g]),
            })
            .collect();
        ByGeom(materials)
    }
}

impl MaterialLookup for ByGeom {
    fn palette(&self) -> &[NirMaterial] {
        &self.0
    }

    fn index_at(&self, geom: usize, _: DVec3) -> Option<usize> {
        (geom < self.0.len()).then_some(geom)
    }
}

/// A one-channel ring of `bins` beams at elevation `elevation_deg`, whole pattern every tick.
fn ring(bins: u32, elevation_deg: f64) -> ScanConfig {
    ScanConfig {
        channels: 1,
        azimuth_bins: bins,
        vfov_min_deg: elevation_deg,
        vfov_max_deg: elevation_deg,
        rotation_hz: 0.0,
        min_range: 0.05,
        max_range: 100.0,
        ..ScanConfig::default()
    }
}

struct Rig {
    model: Model,
    batch: WorldBatch,
    caster: RayCaster,
    lidars: Lidars,
}

impl Rig {
    fn new(xml: &str, config: ScanConfig, table: &[(&str, NirMaterial)], params: ReturnParams) -> Rig {
        let model = Model::from_xml_str(xml).unwrap();
        let batch = WorldBatch::new(&model, 1).unwrap();
        let caster = RayCaster::new(model.scene(), batch.poses());
        let binding = LidarBinding { attach_site: Some("lidar".into()), scan: config, ..LidarBinding::default() };
        let (mut lidars, _) = Lidars::new(model.scene(), vec![binding], 1).unwrap();
        let mut materials = MaterialTable::default();
        for (name, m) in table {
            materials.set(name, *m).unwrap();
        }
        lidars.set_materials(Some(Arc::new(ByGeom::new(model.scene(), &materials))));
        lidars.set_return_params(params).unwrap();
        Rig { model, batch, caster, lidars }
    }

    fn tick(&mut self) {
        self.lidars.tick(self.model.scene(), self.batch.poses(), &self.caster, 0.02, &[0.0], true).unwrap();
    }

    fn geom(&self, name: &str) -> i32 {
        self.model.scene().geom_name.iter().position(|n| n == name).unwrap() as i32
    }
}

fn quiet(params: ReturnParams) -> ReturnParams {
    ReturnParams { noise_sigma0: 0.0, noise_slope_per_m: 0.0, ..params }
}

const STOREFRONT: &str = r#"
<mujoco>
  <asset><material name="glass" rgba="0.8 0.9 1 0.3"/><material name="paint" rgba="0.8 0.8 0.8 1"/></asset>
  <worldbody>
    <site name="lidar" pos="0 0 1"/>
    <geom name="pane" type="box" pos="4.005 0 1" size="0.005 3 1" material="glass"/>
    <geom name="wall" type="box" pos="7.1 0 1" size="0.1 5 1" material="paint"/>
  </worldbody>
</mujoco>"#;

#[test]
fn clear_glass_head_on_gives_a_glint_and_the_wall_behind_and_off_normal_only_the_wall() {
    let glass = MaterialPreset::ClearFloatGlass.material();
    let paint = NirMaterial { f0: 0.0, reflectivity: 0.8, ..MaterialPreset::Diffuse.material() };
    let mut rig = Rig::new(
        STOREFRONT,
        ring(360, 0.0),
        &[("glass", glass), ("paint", paint)],
        quiet(ReturnPreset::OusterOs1.params()),
    );
    rig.tick();
    let r = rig.lidars.returns(0, 0).unwrap();
    let (pane, wall) = (rig.geom("pane"), rig.geom("wall"));
    // Bin 0 runs along +X, into the pane head-on.
    assert_eq!(r.geomid[0], pane);
    assert!((r.range[0] - 4.0).abs() < 1e-4, "{}", r.range[0]);
    assert!((r.reflectivity[0] / 11.666_667 - 1.0).abs() < 1e-5, "{}", r.reflectivity[0]);
    assert!((r.secondary_range[0] - 7.0).abs() < 1e-4, "{}", r.secondary_range[0]);
    // Ten degrees off normal the pane is invisible: the wall, dimmed by T² = 0.71².
    let c = 10f64.to_radians().cos();
    assert_eq!((r.geomid[10], r.secondary_range[10]), (wall, -1.0));
    assert!((r.reflectivity[10] as f64 / (0.8 * c * 0.71 * 0.71) - 1.0).abs() < 1e-4, "{}", r.reflectivity[10]);
    assert!((r.range[10] as f64 - 7.0 / c).abs() < 1e-3);
    // The clean scan still reports the pane, as geometry.
    assert_eq!(rig.lidars.scan(0, 0).unwrap().geomid[10], pane);
}

#[test]
fn a_mirror_at_45_degrees_books_a_phantom_at_the_total_path() {
    let xml = r#"
<mujoco>
  <asset><material name="mirror" rgba="0.9 0.9 0.9 1" reflectance="0.9"/><material name="paint" rgba="1 1 1 1"/></asset>
  <worldbody>
    <site name="lidar" pos="0 0 1"/>
    <geom name="mirror" type="box" pos="2.01 0 1" size="0.01 1 1" euler="0 0 -45" material="mirror"/>
    <geom name="wall" type="box" pos="2 3.1 1" size="3 0.1 1" material="paint"/>
  </worldbody>
</mujoco>"#;
    let mut rig =
        Rig::new(xml, ring(360, 0.0), &[("mirror", MaterialPreset::Mirror.material())], quiet(ReturnParams::default()));
    rig.tick();
    let r = rig.lidars.returns(0, 0).unwrap();
    assert_eq!(r.geomid[0], rig.geom("wall"));
    // The mirror's front face is 1 cm in front of its centre along the normal.
    let front = 2.01 - 0.01 * 2f64.sqrt();
    assert!((r.range[0] as f64 - (front + (3.0 - 0.0))).abs() < 0.02, "{}", r.range[0]);
    let clean = rig.lidars.scan(0, 0).unwrap();
    assert_eq!(clean.geomid[0], rig.geom("mirror"));
}

/// A sensor looking straight down at a pool whose white bottom is `depth` below the surface.
fn pool(depth: f64) -> String {
    format!(
        r#"
<mujoco>
  <asset><material name="water" rgba="0.2 0.4 0.8 0.4"/><material name="tiles" rgba="1 1 1 1"/></asset>
  <worldbody>
    <site name="lidar" pos="0 0 2"/>
    <geom name="water" type="box" pos="0 0 -0.5" size="2 2 0.5" material="water" contype="0" conaffinity="0"/>
    <geom name="bottom" type="box" pos="0 0 {}" size="1 1 0.05" material="tiles"/>
  </worldbody>
</mujoco>"#,
        -depth - 0.05
    )
}

#[test]
fn water_books_a_submerged_surface_at_the_optical_path_and_hides_deep_bottoms() {
    let table = [
        ("water", MaterialPreset::StillWater.material()),
        ("tiles", NirMaterial { reflectivity: 0.9, f0: 0.0, ..MaterialPreset::Diffuse.material() }),
    ];
    let params = quiet(ReturnParams { max_returns: 2, min_return_separation: 0.05, ..ReturnParams::default() });
    let down = ring(4, -90.0);
    for (depth, seen) in [(0.10, true), (0.50, false)] {
        let mut rig = Rig::new(&pool(depth), down, &table, params);
        rig.tick();
        let r = rig.lidars.returns(0, 0).unwrap();
        // The surface's own glint is the primary straight down.
        assert_eq!(r.geomid[0], rig.geom("water"));
        assert!((r.range[0] - 2.0).abs() < 1e-4);
        if seen {
            assert!((r.secondary_range[0] as f64 - (2.0 + 1.33 * depth)).abs() < 1e-4, "{}", r.secondary_range[0]);
        } else {
            assert_eq!(r.secondary_range[0], -1.0);
        }
    }
}

#[test]
fn the_same_seed_gives_the_same_noisy_scan_on_one_and_two_threads() {
    let run = |threads: usize, seed: u64| {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
        pool.install(|| {
            let mut rig = Rig::new(
                STOREFRONT,
                ring(2000, 0.0),
                &[("glass", MaterialPreset::ClearFloatGlass.material())],
                ReturnPreset::OusterOs1.params(),
            );
            rig.lidars.set_seed(seed);
            rig.tick();
            let r = rig.lidars.returns(0, 0).unwrap();
            (r.range.clone(), r.secondary_range.clone(), r.intensity.clone())
        })
    };
    let one = run(1, 3);
    assert_eq!(one, run(2, 3));
    assert_ne!(one.0, run(2, 4).0);
}

#[test]
fn material_scans_need_a_material_source_and_single_echo_units_report_no_secondaries() {
    let mut rig = Rig::new(
        STOREFRONT,
        ring(360, 0.0),
        &[("glass", MaterialPreset::ClearFloatGlass.material())],
        ReturnParams::default(),
    );
    rig.tick();
    assert!(rig.lidars.returns(0, 0).unwrap().secondary_range.iter().all(|&s| s == -1.0));
    rig.lidars.set_materials(None);
    let err = rig.lidars.returns(0, 0).unwrap_err();
    assert_eq!(err, LidarError::NoMaterials);
    assert!(err.to_string().contains("glint bake"));
}

#[test]
fn secondary_capture_records_pass_through_and_reflected_geometry_by_scope() {
    let mut rig = Rig::new(STOREFRONT, ring(360, 0.0), &[], ReturnParams::default());
    rig.lidars.set_materials(None);
    rig.lidars.set_secondary_capture(0, SecondaryCapture::Both, SecondaryScope::FlaggedMaterials).unwrap();
    rig.tick();
    let (pane, wall) = (rig.geom("pane"), rig.geom("wall"));
    let scan = rig.lidars.scan(0, 0).unwrap();
    let pass = scan.pass_through.as_ref().unwrap();
    // The glass material is translucent (alpha 0.3): flagged for pass-through, past its own
    // back face to the wall, measured from the sensor.
    assert_eq!((scan.geomid[0], pass.geomid[0]), (pane, wall));
    assert!((pass.range[0] - 7.0).abs() < 1e-4, "{}", pass.range[0]);
    // No reflectance: nothing reflected in the flagged scope.
    let reflected = scan.reflected.as_ref().unwrap();
    assert_eq!(reflected.geomid[0], -1);
    // Every surface: the wall's own pass-through finds nothing; the pane reflects back to
    // the sensor's side, where there is nothing.
    rig.lidars.set_secondary_capture(0, SecondaryCapture::Reflected, SecondaryScope::AllSurfaces).unwrap();
    rig.tick();
    let scan = rig.lidars.scan(0, 0).unwrap();
    assert!(scan.pass_through.is_none());
    let reflected = scan.reflected.as_ref().unwrap();
    let off = 30;
    assert_eq!(scan.geomid[off], pane);
    assert_eq!(reflected.geomid[off], -1);
    assert_eq!(reflected.range[off], -1.0);
}

/// A hedge of leaves 3 m in front of the lidar and a wall behind it; the `paint` material is
/// for worlds whose hedge is given another one.
const HEDGE_XML: &str = r#"
<mujoco>
  <asset><material name="leaves" rgba="0.2 0.6 0.2 1"/><material name="paint" rgba="0.5 0.5 0.5 1"/></asset>
  <worldbody>
    <site name="lidar" pos="0 0 1"/>
    <geom name="hedge" type="box" pos="3 0 1" size="0.3 3 1" material="leaves"/>
    <geom name="wall" type="box" pos="7.1 0 1" size="0.1 5 1"/>
  </worldbody>
</mujoco>"#;

#[test]
fn the_flagged_scope_follows_authored_classes_without_a_bake() {
    let mut rig = Rig::new(HEDGE_XML, ring(360, 0.0), &[], ReturnParams::default());
    rig.lidars.set_materials(None);
    rig.lidars.set_secondary_capture(0, SecondaryCapture::PassThrough, SecondaryScope::FlaggedMaterials).unwrap();
    rig.tick();
    // An opaque-looking MuJoCo material: nothing is flagged.
    assert_eq!(rig.lidars.scan(0, 0).unwrap().pass_through.as_ref().unwrap().geomid[0], -1);
    let mut table = MaterialTable::default();
    table.set("leaves", MaterialPreset::Vegetation.material()).unwrap();
    rig.lidars.set_capture_materials(rig.model.scene(), &table);
    rig.tick();
    let wall = rig.geom("wall");
    assert_eq!(rig.lidars.scan(0, 0).unwrap().pass_through.as_ref().unwrap().geomid[0], wall);
}

/// Per-world materials: a world whose hedge has another MuJoCo material (a per-world
/// `geom_matid`) follows that material's authored class; the other world keeps its own.
#[test]
fn the_flagged_scope_follows_each_worlds_own_materials() {
    let model = Model::from_xml_str(HEDGE_XML).unwrap();
    let scene = model.scene();
    let batch = WorldBatch::new(&model, 2).unwrap();
    let caster = RayCaster::new(scene, batch.poses());
    let binding = LidarBinding { attach_site: Some("lidar".into()), scan: ring(360, 0.0), ..LidarBinding::default() };
    let (mut lidars, _) = Lidars::new(scene, vec![binding], 2).unwrap();
    lidars.set_secondary_capture(0, SecondaryCapture::PassThrough, SecondaryScope::FlaggedMaterials).unwrap();
    let mut table = MaterialTable::default();
    table.set("leaves", MaterialPreset::Vegetation.material()).unwrap();
    lidars.set_capture_materials(scene, &table);
    let paint = scene.mat_name.iter().position(|n| n == "paint").unwrap() as i32;
    lidars.set_world_materials(1, (scene, &table), &[paint, -1], &[1.0, 1.0]).unwrap();
    lidars.tick(scene, batch.poses(), &caster, 0.02, &[0.0, 0.0], true).unwrap();
    let wall = scene.geom_name.iter().position(|n| n == "wall").unwrap() as i32;
    let pass = |lidars: &Lidars, w: usize| lidars.scan(0, w).unwrap().pass_through.as_ref().unwrap().geomid[0];
    assert_eq!((pass(&lidars, 0), pass(&lidars, 1)), (wall, -1));
    // A translucent alpha flags it in world 1 again, through its MuJoCo material.
    lidars.set_world_materials(1, (scene, &table), &[paint, -1], &[0.4, 1.0]).unwrap();
    lidars.tick(scene, batch.poses(), &caster, 0.02, &[0.0, 0.0], true).unwrap();
    assert_eq!(pass(&lidars, 1), wall);
    assert!(lidars.set_world_materials(2, (scene, &table), &[paint, -1], &[1.0, 1.0]).is_err());
}

#[test]
fn the_physical_model_runs_live_on_real_geometry_and_the_seed_model_stays_the_default() {
    let glass = MaterialPreset::ClearFloatGlass.material();
    let paint = NirMaterial { f0: 0.0, reflectivity: 0.8, ..MaterialPreset::Diffuse.material() };
    let table = [("glass", glass), ("paint", paint)];
    let params = quiet(ReturnPreset::OusterOs1.params());
    let mut seed = Rig::new(STOREFRONT, ring(360, 0.0), &table, params);
    assert_eq!(seed.lidars.physical_model(), None);
    seed.tick();
    let mut physical = Rig::new(STOREFRONT, ring(360, 0.0), &table, params);
    let terms = PhysicalModel { noise: false, detection: false, ..PhysicalModel::default() };
    physical.lidars.set_physical_model(Some(terms)).unwrap();
    physical.tick();
    let (s, p) = (seed.lidars.returns(0, 0).unwrap(), physical.lidars.returns(0, 0).unwrap());
    // Ten degrees off normal: the wall behind the pane, dimmed by Fresnel's T_slab(10°)² (the
    // seed: T² at every angle).
    let c = 10f64.to_radians().cos();
    let pane = slab_optics(&glass, c);
    assert_eq!(p.geomid[10], physical.geom("wall"));
    let expected = 0.8_f32 as f64 * c * pane.transmittance.powi(2);
    assert!((p.reflectivity[10] as f64 / expected - 1.0).abs() < 1e-4, "{} vs {expected}", p.reflectivity[10]);
    assert_ne!(p.reflectivity[10], s.reflectivity[10]);
    // Head on, the pane's echo comes from both faces.
    assert!(p.reflectivity[0] > s.reflectivity[0] * 1.4, "{} vs {}", p.reflectivity[0], s.reflectivity[0]);
    let bad = PhysicalModel { beam_divergence_deg: f64::NAN, ..PhysicalModel::default() };
    assert!(physical.lidars.set_physical_model(Some(bad)).unwrap_err().to_string().contains("beam_divergence_deg"));
    assert_eq!(physical.lidars.physical_model(), Some(terms), "nothing changes on an error");
}

/// A white plate whose edge runs vertically through the sensor's forward axis (the plate on
/// the left, +y) 5 m on, and a white wall `gap` metres behind it.
fn edge(gap: f64) -> String {
    format!(
        r#"<mujoco>
  <asset><material name="white" rgba="0.8 0.8 0.8 1"/></asset>
  <worldbody>
    <site name="lidar" pos="0 0 1"/>
    <geom name="plate" type="box" pos="5.01 1 1" size="0.01 1 1" material="white"/>
    <geom name="wall" type="box" pos="{} 0 1" size="0.1 5 1" material="white"/>
  </worldbody>
</mujoco>"#,
        5.1 + gap
    )
}

/// The beams of a 0.01° ring within `half_width_deg` of the plate's edge (azimuth 0), as
/// (azimuth in degrees, primary range, secondary range, primary strength), after one tick of
/// the physical model (noise off) with `footprint_rays` sub-rays.
fn across_the_edge(gap: f64, footprint_rays: u32, half_width_deg: f64) -> Vec<(f64, f32, f32, f32)> {
    let white = NirMaterial { f0: 0.0, reflectivity: 0.8, ..MaterialPreset::Diffuse.material() };
    let bins = 36_000;
    let mut rig = Rig::new(&edge(gap), ring(bins, 0.0), &[("white", white)], quiet(ReturnPreset::OusterOs1.params()));
    let terms = PhysicalModel { noise: false, footprint_rays, ..PhysicalModel::default() };
    rig.lidars.set_physical_model(Some(terms)).unwrap();
    rig.tick();
    let r = rig.lidars.returns(0, 0).unwrap();
    let step = 360.0 / bins as f64;
    (0..bins as usize)
        .map(|k| {
            let azimuth = if k as f64 * step > 180.0 { k as f64 * step - 360.0 } else { k as f64 * step };
            (azimuth, r.range[k], r.secondary_range[k], r.reflectivity[k])
        })
        .filter(|(azimuth, ..)| azimuth.abs() <= half_width_deg)
        .collect()
}

#[test]
fn footprints_give_two_echoes_across_an_edge_in_sevenths_of_the_beam() {
    // Without footprints, every beam sees one surface: the plate left of the edge, the wall right.
    let axis = across_the_edge(2.0, 1, 0.5);
    assert!(axis.iter().all(|b| b.2 < 0.0), "no beam has two echoes along its axis alone");
    let beams = across_the_edge(2.0, 7, 0.5);
    let plate_strength = 0.8f32; // ρ · cos θ, θ ≈ 0: the plate's and the wall's alike
    assert!(axis.iter().filter(|b| b.0 > 0.05).all(|b| (b.1 - 5.0).abs() < 1e-3));
    let two: Vec<_> = beams.iter().filter(|b| b.2 > 0.0).collect();
    // A band of two-echo beams straddling the edge, no wider than the footprint's outer
    // sub-ray (0.185° off the axis of an OS1 beam).
    let outer = footprint_offsets(7, 0.18).iter().map(|o| o.0.hypot(o.1).to_degrees()).fold(0.0, f64::max);
    assert!(two.len() >= 10, "{} two-echo beams", two.len());
    assert!(two.iter().any(|b| b.0 > 0.0) && two.iter().any(|b| b.0 < 0.0));
    assert!(two.iter().all(|b| b.0.abs() < outer + 0.01), "{:?}", two.iter().map(|b| b.0).collect::<Vec<_>>());
    for &&(azimuth, primary, secondary, strength) in &two {
        let mut ranges = [primary, secondary];
        ranges.sort_by(f32::total_cmp);
        assert!((ranges[0] - 5.0).abs() < 1e-2 && (ranges[1] - 7.0).abs() < 1e-2, "{azimuth}: {ranges:?}");
        // The primary is the stronger part of the beam, whole sevenths of a whole beam's
        // strength: four to six of them (a range dims intensity, not strength).
        let sevenths = strength / plate_strength * 7.0;
        assert!((sevenths - sevenths.round()).abs() < 0.02 && (4.0..=6.0).contains(&sevenths.round()), "{sevenths}");
    }
}

#[test]
fn footprints_over_an_edge_closer_than_the_separation_give_mixed_returns_between_the_surfaces() {
    // The wall 0.4 m behind the plate: one pulse per beam (minReturnSeparation 1 m).
    let in_between = |beams: &[(f64, f32, f32, f32)]| {
        beams.iter().filter(|b| b.1 > 5.0 + 0.02 && b.1 < 5.4 - 0.02).map(|b| b.1).collect::<Vec<_>>()
    };
    assert!(in_between(&across_the_edge(0.4, 1, 0.5)).is_empty());
    let beams = across_the_edge(0.4, 7, 0.5);
    let mixed = in_between(&beams);
    assert!(mixed.len() >= 10, "{mixed:?}");
    // Flying points: at the energy-weighted mean of the two ranges, so at k / 7 of the way
    // for k sub-rays on the wall (the strength of both alike, ρ 0.8 head on).
    for r in &mixed {
        let k = (r - 5.0) / 0.4 * 7.0;
        assert!((k - k.round()).abs() < 0.05, "{r} is not a sevenths mix");
    }
    // Away from the edge, the footprint changes nothing a flat surface shows.
    let far = across_the_edge(0.4, 1, 0.5);
    for (a, b) in far.iter().zip(&beams).filter(|(a, _)| a.0.abs() > 0.3) {
        assert!((a.1 - b.1).abs() < 1e-4 && (a.3 / b.3 - 1.0).abs() < 1e-4, "{a:?} {b:?}");
    }
}
