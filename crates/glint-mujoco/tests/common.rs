//! Shared helpers for the parity suites: random rays, and a comparison of glint's answers
//! with MuJoCo's `mj_ray` that classifies every disagreement.
#![allow(dead_code)]

use std::path::PathBuf;

use glam::{DMat3, DVec3};
use glint_core::{GeomType, RayBatch, RayCaster, RayFilter, RayHit, RayHits, Scene};
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

/// A uniform point in the box `[min, max]`.
pub fn point_in_box(rng: &mut impl Rng, min: DVec3, max: DVec3) -> DVec3 {
    DVec3::new(rng.gen_range(min.x..=max.x), rng.gen_range(min.y..=max.y), rng.gen_range(min.z..=max.z))
}

/// A direction of random length in `[0.1, 10]` for a quarter of the rays (distances are in
/// units of the direction's length, as in `mj_ray`), unit length otherwise.
pub fn maybe_scaled(rng: &mut impl Rng, dir: DVec3) -> DVec3 {
    if rng.gen_bool(0.25) { dir * 10f64.powf(rng.gen_range(-1.0..1.0)) } else { dir }
}

/// The repository's `examples/` folder.
pub fn examples_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../examples")
}

pub struct Setup {
    pub batch: WorldBatch,
    pub caster: RayCaster,
}

pub fn setup_xml(xml: &str) -> Setup {
    setup(Model::from_xml_str(xml).unwrap_or_else(|e| panic!("scene loads: {e}\n{xml}")))
}

pub fn setup(model: Model) -> Setup {
    let batch = WorldBatch::new(&model, 1).unwrap();
    let caster = RayCaster::new(model.scene(), batch.poses());
    Setup { batch, caster }
}

impl Setup {
    pub fn scene(&self) -> &Scene {
        self.batch.model().scene()
    }

    /// Frame of geom `g` in world `w`: position and rotation (columns are the local axes).
    pub fn geom_frame(&self, w: usize, g: usize) -> (DVec3, DMat3) {
        let (xpos, xmat) = self.batch.poses().geoms(w);
        (xpos[g], xmat[g])
    }

    /// Id of the geom called `name`.
    pub fn geom_id(&self, name: &str) -> usize {
        self.scene().geom_name.iter().position(|n| n == name).unwrap_or_else(|| panic!("no geom '{name}'"))
    }

    /// Id of the body called `name`.
    pub fn body_id(&self, name: &str) -> usize {
        self.scene().body_id(name).unwrap_or_else(|| panic!("no body '{name}'"))
    }
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
    /// glint hits whose normal is not unit length (or misses whose normal is not zero).
    pub bad_normal: usize,
    pub examples: Vec<String>,
}

impl Report {
    pub fn agree_fraction(&self) -> f64 {
        1.0 - (self.geom_mismatch + self.dist_mismatch) as f64 / self.rays.max(1) as f64
    }

    /// Adds another report's counts to this one.
    pub fn merge(&mut self, other: Report) {
        self.rays += other.rays;
        self.hits += other.hits;
        self.geom_mismatch += other.geom_mismatch;
        self.geom_tie += other.geom_tie;
        self.dist_mismatch += other.dist_mismatch;
        self.normal_mismatch += other.normal_mismatch;
        self.bad_normal += other.bad_normal;
        for e in other.examples {
            if self.examples.len() < 12 {
                self.examples.push(e);
            }
        }
    }

    /// Every disagreement, ties included.
    pub fn disagreements(&self) -> usize {
        self.geom_mismatch + self.geom_tie + self.dist_mismatch + self.normal_mismatch
    }

    pub fn print(&self, name: &str) {
        eprintln!(
            "{name}: {} rays, {} hits, {} geom ties, {} geom mismatches, {} distance mismatches, {} normal mismatches, {} bad normals",
            self.rays,
            self.hits,
            self.geom_tie,
            self.geom_mismatch,
            self.dist_mismatch,
            self.normal_mismatch,
            self.bad_normal
        );
        for e in &self.examples {
            eprintln!("  {e}");
        }
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
    let note = |kind: &str, report: &mut Report| {
        if report.examples.len() < 12 {
            report.examples.push(format!("{kind}: pnt {pnt:?} vec {vec:?} glint {g:?} mujoco {m:?}"));
        }
    };
    let unit_ok = if g.geomid >= 0 { (g.normal.length() - 1.0).abs() <= 1e-9 } else { g.normal == DVec3::ZERO };
    if !unit_ok {
        report.bad_normal += 1;
        note("normal length", report);
    }
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

/// Entry `i` of a per-ray array that may also hold a single shared value (or none: `-1`).
pub fn pick<T: Copy>(arr: &[T], i: usize, none: T) -> T {
    match arr.len() {
        0 => none,
        1 => arr[0],
        _ => arr[i],
    }
}

/// One answer of a batch.
pub fn hit_at(hits: &RayHits, k: usize) -> RayHit {
    RayHit { dist: hits.dist[k], geomid: hits.geomid[k], normal: hits.normal[k] }
}

/// Casts the rays `(pnt[i], vec[i])` (each array of length `n` or 1; `bodyexclude` may also
/// be empty) in every world with `caster` in one batch, and compares world `w`'s answers with
/// `mj_ray` ray by ray. Returns the report and glint's answers for world `w`.
#[allow(clippy::too_many_arguments)]
pub fn compare_with(
    batch: &WorldBatch,
    caster: &RayCaster,
    w: usize,
    pnt: &[DVec3],
    vec: &[DVec3],
    bodyexclude: &[i32],
    filter: &RayFilter,
) -> (Report, Vec<RayHit>) {
    let nray = pnt.len().max(vec.len());
    let rays = RayBatch { nray, pnt, vec, bodyexclude };
    let hits = caster.rays(batch.model().scene(), batch.poses(), &rays, filter).unwrap();
    let mut report = Report::default();
    let mut out = Vec::with_capacity(nray);
    for i in 0..nray {
        let (p, v, ex) = (pick(pnt, i, DVec3::ZERO), pick(vec, i, DVec3::ZERO), pick(bodyexclude, i, -1));
        let g = hit_at(&hits, w * nray + i);
        let m = batch.mj_ray(w, p, v, filter, ex);
        record(&mut report, p, v, g, m);
        out.push(g);
    }
    (report, out)
}

/// [`compare_with`] on a setup's batch and caster.
pub fn compare_batch(
    s: &Setup,
    w: usize,
    pnt: &[DVec3],
    vec: &[DVec3],
    bodyexclude: &[i32],
    filter: &RayFilter,
) -> (Report, Vec<RayHit>) {
    compare_with(&s.batch, &s.caster, w, pnt, vec, bodyexclude, filter)
}

/// Casts `rays` (origin, direction) in world 0 with glint (batched) and with `mj_ray`.
pub fn compare(s: &Setup, rays: &[(DVec3, DVec3)], filter: &RayFilter, bodyexclude: i32) -> Report {
    let pnt: Vec<DVec3> = rays.iter().map(|r| r.0).collect();
    let vec: Vec<DVec3> = rays.iter().map(|r| r.1).collect();
    compare_batch(s, 0, &pnt, &vec, &[bodyexclude], filter).0
}

/// Asserts the parity bar, unit normals, and that normals agree wherever geom and
/// distance do (up to `normal_ties`, which the caller explains).
pub fn assert_parity(name: &str, r: &Report, normal_ties: usize) {
    r.print(name);
    assert!(r.agree_fraction() >= 0.9999, "{name}: only {:.5} of rays agree", r.agree_fraction());
    assert!(r.normal_mismatch <= normal_ties, "{name}: {} normals disagree", r.normal_mismatch);
    assert_eq!(r.bad_normal, 0, "{name}: glint returned normals that are not unit length");
}

/// Asserts exact disagreement counts (for edge-case families whose tolerated count the
/// caller explains), and unit normals.
pub fn assert_exact(name: &str, r: &Report, geom_mismatch: usize, dist_mismatch: usize, normal_mismatch: usize) {
    r.print(name);
    assert_eq!(
        (r.geom_mismatch, r.dist_mismatch, r.normal_mismatch),
        (geom_mismatch, dist_mismatch, normal_mismatch),
        "{name}: (geom, distance, normal) mismatches"
    );
    assert_eq!(r.bad_normal, 0, "{name}: glint returned normals that are not unit length");
}

/// Collects the outcome of many ray families and fails once, at the end, listing every
/// family whose disagreements differ from what it tolerates (so one run shows them all).
#[derive(Default)]
pub struct Families {
    failures: Vec<String>,
}

impl Families {
    /// The parity bar of [`assert_parity`] for a family of random rays.
    pub fn parity(&mut self, name: &str, r: &Report) {
        r.print(name);
        if r.agree_fraction() < 0.9999 || r.normal_mismatch > 0 || r.bad_normal > 0 {
            self.failures.push(format!(
                "{name}: {:.5} agree, {} normal mismatches, {} bad normals",
                r.agree_fraction(),
                r.normal_mismatch,
                r.bad_normal
            ));
        }
    }

    /// Exactly `(geom, dist, normal)` disagreements, and unit normals.
    pub fn exact(&mut self, name: &str, r: &Report, geom: usize, dist: usize, normal: usize) {
        r.print(name);
        let got = (r.geom_mismatch, r.dist_mismatch, r.normal_mismatch);
        if got != (geom, dist, normal) || r.bad_normal > 0 {
            self.failures.push(format!(
                "{name}: (geom, distance, normal) mismatches {got:?}, tolerated {:?}; {} bad normals",
                (geom, dist, normal),
                r.bad_normal
            ));
        }
    }

    /// Records a failed condition.
    pub fn check(&mut self, ok: bool, what: impl FnOnce() -> String) {
        if !ok {
            self.failures.push(what());
        }
    }

    /// Panics listing every failure.
    pub fn finish(self) {
        assert!(self.failures.is_empty(), "{} failures:\n{}", self.failures.len(), self.failures.join("\n"));
    }
}

/// Whether the local point `p` lies strictly inside geom `g` of `scene` (for planes: behind
/// the plane, within its rectangle), with a margin `m` (a fraction of the size) kept from
/// the surface.
pub fn inside_local(scene: &Scene, g: usize, p: DVec3, m: f64) -> bool {
    let s = scene.geom_size[g];
    let k = 1.0 - m;
    match scene.geom_type[g] {
        GeomType::Plane => p.z < 0.0 && (s.x <= 0.0 || p.x.abs() < k * s.x) && (s.y <= 0.0 || p.y.abs() < k * s.y),
        GeomType::Sphere => p.length() < k * s.x,
        GeomType::Capsule => {
            let z = p.z.clamp(-s.y, s.y);
            (p - DVec3::new(0.0, 0.0, z)).length() < k * s.x
        }
        GeomType::Ellipsoid => (p / s).length() < k,
        GeomType::Cylinder => p.truncate().length() < k * s.x && p.z.abs() < k * s.y,
        GeomType::Box => (p.abs() / s).max_element() < k,
        GeomType::Mesh => {
            let mesh = &scene.mesh[scene.geom_dataid[g] as usize];
            let b = mesh.bounds();
            let shrunk = b.center() + (p - b.center()) / k;
            winding_number(&mesh.vert, &mesh.face, p) > 0.5 && winding_number(&mesh.vert, &mesh.face, shrunk) > 0.5
        }
        GeomType::Hfield => {
            let hf = &scene.hfield[scene.geom_dataid[g] as usize];
            let [sx, sy, _, base] = hf.size;
            p.x.abs() < k * sx && p.y.abs() < k * sy && p.z > -k * base && p.z < hfield_height(hf, p.x, p.y) - m * base
        }
        _ => false,
    }
}

/// Height of a height field's surface above local `(x, y)`, on MuJoCo's triangles.
pub fn hfield_height(hf: &glint_core::Hfield, x: f64, y: f64) -> f64 {
    let [sx, sy, sz, _] = hf.size;
    let (dx, dy) = (2.0 * sx / (hf.ncol - 1) as f64, 2.0 * sy / (hf.nrow - 1) as f64);
    let (fx, fy) = ((x + sx) / dx, (y + sy) / dy);
    let c = (fx.floor() as usize).min(hf.ncol - 2);
    let r = (fy.floor() as usize).min(hf.nrow - 2);
    let (u, v) = (fx - c as f64, fy - r as f64);
    let z = |r: usize, c: usize| hf.data[r * hf.ncol + c] as f64 * sz;
    let (z00, z01, z10, z11) = (z(r, c), z(r, c + 1), z(r + 1, c), z(r + 1, c + 1));
    if u >= v { z00 + u * (z01 - z00) + v * (z11 - z01) } else { z00 + v * (z10 - z00) + u * (z11 - z10) }
}

/// Generalised winding number of a closed triangle mesh around `p` (1 inside, 0 outside).
pub fn winding_number(vert: &[[f32; 3]], face: &[[u32; 3]], p: DVec3) -> f64 {
    let v = |i: u32| DVec3::from(vert[i as usize].map(f64::from)) - p;
    let mut total = 0.0;
    for f in face {
        let (a, b, c) = (v(f[0]), v(f[1]), v(f[2]));
        let (la, lb, lc) = (a.length(), b.length(), c.length());
        let num = a.dot(b.cross(c));
        let den = la * lb * lc + a.dot(b) * lc + b.dot(c) * la + c.dot(a) * lb;
        total += 2.0 * num.atan2(den);
    }
    total / (4.0 * std::f64::consts::PI)
}

/// A local point strictly inside geom `g` (margin `m`), by rejection sampling in its bounds.
pub fn sample_inside(rng: &mut impl Rng, scene: &Scene, g: usize, m: f64) -> DVec3 {
    let bounds = scene.geom_local_bounds(g).unwrap_or_else(|| {
        let s = scene.geom_size[g];
        let half = |x: f64| if x > 0.0 { x } else { 3.0 };
        glint_core::Aabb { min: DVec3::new(-half(s.x), -half(s.y), -3.0), max: DVec3::new(half(s.x), half(s.y), 0.0) }
    });
    for _ in 0..100_000 {
        let p = point_in_box(rng, bounds.min, bounds.max);
        if inside_local(scene, g, p, m) {
            return p;
        }
    }
    panic!("could not sample a point inside geom {g}");
}

/// A lidar-like fan from `o`: `nel` elevations in `[el0, el1]` degrees for each of `naz`
/// azimuths, azimuth-major, so consecutive rays differ slightly in elevation.
pub fn fan(rot: DMat3, nel: usize, naz: usize, el0: f64, el1: f64) -> Vec<DVec3> {
    let mut v = Vec::with_capacity(nel * naz);
    for a in 0..naz {
        let az = std::f64::consts::TAU * a as f64 / naz as f64;
        for e in 0..nel {
            let el = (el0 + (el1 - el0) * e as f64 / (nel.max(2) - 1) as f64).to_radians();
            v.push(rot * DVec3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin()));
        }
    }
    v
}
