//! Shared helpers for the parity suites: random rays, and a comparison of glint's answers
//! with MuJoCo's `mj_ray` that classifies every disagreement.
#![allow(dead_code)]

use glam::DVec3;
use glint_core::{RayBatch, RayCaster, RayFilter, RayHit};
use glint_mujoco::{Model, MujocoRays, WorldBatch};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

pub fn rng(seed: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(seed)
}

pub fn unit(rng: &mut impl Rng) -> DVec3 {
    loop {
        let v = DVec3::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0));
        let l = v.length();
        if l > 1e-3 && l <= 1.0 {
            return v / l;
        }
    }
}

pub fn point_in(rng: &mut impl Rng, half: f64) -> DVec3 {
    DVec3::new(rng.gen_range(-half..half), rng.gen_range(-half..half), rng.gen_range(-half..half))
}

pub struct Setup {
    pub batch: WorldBatch,
    pub caster: RayCaster,
}

pub fn setup_xml(xml: &str) -> Setup {
    setup(Model::from_xml_str(xml).expect("scene loads"))
}

pub fn setup(model: Model) -> Setup {
    let batch = WorldBatch::new(&model, 1).unwrap();
    let caster = RayCaster::new(model.scene(), batch.poses());
    Setup { batch, caster }
}

#[derive(Debug, Default)]
pub struct Report {
    pub rays: usize,
    pub hits: usize,
    /// Different geom (or hit vs miss) where the distances differ too: a real disagreement.
    pub geom_mismatch: usize,
    /// Different geom at the same distance: a tie between touching geoms.
    pub geom_tie: usize,
    /// Same geom, distance off by more than 1e-5 relative.
    pub dist_mismatch: usize,
    /// Same geom and distance, normal off by more than 1e-4.
    pub normal_mismatch: usize,
    pub examples: Vec<String>,
}

impl Report {
    pub fn agree_fraction(&self) -> f64 {
        1.0 - (self.geom_mismatch + self.dist_mismatch) as f64 / self.rays.max(1) as f64
    }
}

pub fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-5 * a.abs().max(b.abs()).max(1e-3)
}

/// Compares one ray's answers and records the outcome.
pub fn record(report: &mut Report, pnt: DVec3, vec: DVec3, g: RayHit, m: RayHit) {
    report.rays += 1;
    if m.geomid >= 0 {
        report.hits += 1;
    }
    let mut note = |kind: &str, report: &mut Report| {
        if report.examples.len() < 12 {
            report.examples.push(format!("{kind}: pnt {pnt:?} vec {vec:?} glint {g:?} mujoco {m:?}"));
        }
    };
    if g.geomid != m.geomid {
        if g.geomid >= 0 && m.geomid >= 0 && close(g.dist, m.dist) {
            report.geom_tie += 1;
        } else {
            report.geom_mismatch += 1;
            note("geom", report);
        }
        return;
    }
    if m.geomid < 0 {
        return;
    }
    if !close(g.dist, m.dist) {
        report.dist_mismatch += 1;
        note("dist", report);
    } else if (g.normal - m.normal).length() > 1e-4 {
        report.normal_mismatch += 1;
        note("normal", report);
    }
}

/// Casts `rays` (origin, direction) in world 0 with glint (batched) and with `mj_ray`.
pub fn compare(s: &Setup, rays: &[(DVec3, DVec3)], filter: &RayFilter, bodyexclude: i32) -> Report {
    let scene = s.batch.model().scene();
    let pnt: Vec<DVec3> = rays.iter().map(|r| r.0).collect();
    let vec: Vec<DVec3> = rays.iter().map(|r| r.1).collect();
    let batch = RayBatch { nray: rays.len(), pnt: &pnt, vec: &vec, bodyexclude: &[bodyexclude] };
    let hits = s.caster.rays(scene, s.batch.poses(), &batch, filter).unwrap();
    let mut report = Report::default();
    for (i, &(p, v)) in rays.iter().enumerate() {
        let g = RayHit { dist: hits.dist[i], geomid: hits.geomid[i], normal: hits.normal[i] };
        let m = s.batch.mj_ray(0, p, v, filter, bodyexclude);
        record(&mut report, p, v, g, m);
    }
    report
}

/// Asserts the parity bar and that normals agree wherever geom and distance do
/// (up to `normal_ties`, which the caller explains).
pub fn assert_parity(name: &str, r: &Report, normal_ties: usize) {
    eprintln!(
        "{name}: {} rays, {} hits, {} geom ties, {} geom mismatches, {} distance mismatches, {} normal mismatches",
        r.rays, r.hits, r.geom_tie, r.geom_mismatch, r.dist_mismatch, r.normal_mismatch
    );
    for e in &r.examples {
        eprintln!("  {e}");
    }
    assert!(r.agree_fraction() >= 0.9999, "{name}: only {:.5} of rays agree", r.agree_fraction());
    assert!(r.normal_mismatch <= normal_ties, "{name}: {} normals disagree", r.normal_mismatch);
}
