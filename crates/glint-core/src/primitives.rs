//! Exact ray intersection with MuJoCo's analytic geoms (plane, sphere, capsule, ellipsoid,
//! cylinder, box), with the same acceptance rules as MuJoCo's `engine_ray.c` so that
//! answers agree with `mj_ray` down to rounding: inclusive boundaries, `t >= 0`, two-sided
//! quadratic roots, and `mjMINVAL` as the degeneracy threshold.

use glam::{DMat3, DVec3};

use crate::isa::{Base, Isa, Lanes, Mask};
use crate::lanes::LANES;

use crate::GeomType;

/// MuJoCo's `mjMINVAL`: below this a determinant or a direction component counts as zero.
pub(crate) const MINVAL: f64 = 1e-15;

/// A hit in a geom's local frame: ray parameter and (not yet normalized) outward normal.
pub(crate) type LocalHit = (f64, DVec3);

/// Maps a world point into the frame with origin `pos` and axes the columns of `rot`.
#[inline(always)]
pub(crate) fn to_local(rot: &DMat3, v: DVec3) -> DVec3 {
    DVec3::new(rot.x_axis.dot(v), rot.y_axis.dot(v), rot.z_axis.dot(v))
}

/// Roots of `a x^2 + 2 b x + c = 0`, or `None` when the discriminant is negative: MuJoCo 3.17
/// rejects only a negative discriminant, so tangent rays hit.
#[inline(always)]
fn quad_roots(a: f64, b: f64, c: f64) -> Option<[f64; 2]> {
    let det = b * b - a * c;
    if det < 0.0 {
        return None;
    }
    let det = det.sqrt();
    Some([(-b - det) / a, (-b + det) / a])
}

/// The smaller non-negative root, as MuJoCo's `ray_quad` returns.
#[inline(always)]
fn first_nonneg(roots: [f64; 2]) -> Option<f64> {
    if roots[0] >= 0.0 {
        Some(roots[0])
    } else if roots[1] >= 0.0 {
        Some(roots[1])
    } else {
        None
    }
}

/// Keeps `candidate` when it is closer than `best` (first one wins ties, as in MuJoCo).
#[inline(always)]
fn keep(best: &mut Option<LocalHit>, t: f64, normal: DVec3) {
    if best.is_none_or(|(bt, _)| t < bt) {
        *best = Some((t, normal));
    }
}

/// Intersects the ray `pnt + t * vec` (world frame, `t >= 0`) with an analytic geom at `pos`
/// with rotation `rot` (columns are the local axes). Returns `t` and the unit world-frame
/// outward normal. `t` is in units of `|vec|`, as in `mj_ray`. Meshes and height fields need
/// their triangle data and go through [`crate::RayCaster`]; for them this returns `None`.
pub fn intersect_primitive(
    kind: GeomType,
    size: DVec3,
    pos: DVec3,
    rot: &DMat3,
    pnt: DVec3,
    vec: DVec3,
) -> Option<(f64, DVec3)> {
    if !passes_bounding_sphere(kind, size, pnt - pos, vec) {
        return None;
    }
    let hit = match kind {
        GeomType::Sphere => return sphere(pos, size.x * size.x, pnt, vec),
        _ => intersect_local(kind, size, to_local(rot, pnt - pos), to_local(rot, vec)),
    };
    hit.map(|(t, n)| (t, (*rot * n).normalize()))
}

/// Squared radius of the sphere MuJoCo tests first for capsules, cylinders and boxes (a ray
/// that misses it misses the geom, even where it would graze the geom's surface).
#[inline(always)]
pub(crate) fn bounding_sphere_sqr(kind: GeomType, size: DVec3) -> Option<f64> {
    match kind {
        GeomType::Capsule => Some((size.x + size.y) * (size.x + size.y)),
        GeomType::Cylinder => Some(size.x * size.x + size.y * size.y),
        GeomType::Box => Some(size.length_squared()),
        _ => None,
    }
}

/// Whether the segment from `pnt` along `vec` to `reach` (in units of `vec`'s length) stays
/// outside the sphere that holds a primitive of `kind` and `size` (`dif` is `pnt - pos`):
/// then no surface of it lies on the segment. Planes (unbounded), meshes and height fields
/// are never ruled out here. A short segment (a coincident-surface test at one point) is
/// ruled out in a dozen flops, where the intersection proper costs many times that.
#[inline]
pub(crate) fn segment_misses(kind: GeomType, size: DVec3, dif: DVec3, vec: DVec3, reach: f64) -> bool {
    let radius_sqr = match kind {
        GeomType::Sphere => size.x * size.x,
        GeomType::Ellipsoid => size.max_element().powi(2),
        _ => match bounding_sphere_sqr(kind, size) {
            Some(r2) => r2,
            None => return false,
        },
    };
    let along = vec.length_squared();
    if !(reach.is_finite() && along > 0.0) {
        return false;
    }
    // The segment's point nearest the centre (at −dif from `pnt`).
    let s = (-dif.dot(vec) / along).clamp(0.0, reach);
    let nearest = dif + vec * s;
    // A margin for rounding: a surface point on the segment is within the radius exactly.
    nearest.length_squared() > radius_sqr * (1.0 + 1e-9) + 1e-18
}

/// MuJoCo's bounding-sphere pre-test in the world frame; `dif` is `pnt - pos`.
#[inline(always)]
pub(crate) fn passes_bounding_sphere(kind: GeomType, size: DVec3, dif: DVec3, vec: DVec3) -> bool {
    BoundingSphere::new(kind, size, dif).passes(vec)
}

/// The bounding-sphere pre-test for one origin, shared by many directions.
#[derive(Clone, Copy)]
pub(crate) struct BoundingSphere {
    dif: DVec3,
    /// `|dif|^2 - r^2`, or `None` for types without the pre-test.
    c: Option<f64>,
}

impl BoundingSphere {
    #[inline(always)]
    pub(crate) fn new(kind: GeomType, size: DVec3, dif: DVec3) -> Self {
        BoundingSphere::with_radius(dif, bounding_sphere_sqr(kind, size))
    }

    /// The test for squared radius `radius_sqr` (`None`: none), from [`bounding_sphere_sqr`].
    #[inline(always)]
    pub(crate) fn with_radius(dif: DVec3, radius_sqr: Option<f64>) -> Self {
        BoundingSphere { dif, c: radius_sqr.map(|r2| dif.dot(dif) - r2) }
    }

    /// Whether a ray along `vec` passes MuJoCo's test: the larger root of the quadratic,
    /// `(-b + sqrt(det)) / a`, is non-negative. With `b <= 0` it is, so the square root is
    /// needed only for rays heading away from the center.
    #[inline(always)]
    pub(crate) fn passes(&self, vec: DVec3) -> bool {
        let Some(c) = self.c else { return true };
        let (a, b) = (vec.dot(vec), vec.dot(self.dif));
        Self::root_ahead(a, b, c)
    }

    /// [`BoundingSphere::passes`] of eight rays along `vec` (by axis), as a mask (the same
    /// operations in the same order).
    #[inline(always)]
    pub(crate) fn passes8<I: Isa>(&self, isa: I, vec: [I::F; 3]) -> I::M {
        let Some(c) = self.c else { return isa.of_bits(u32::MAX) };
        let ([x, y, z], splat) = (vec, |x| isa.splat(x));
        let a = x * x + y * y + z * z;
        let b = x * splat(self.dif.x) + y * splat(self.dif.y) + z * splat(self.dif.z);
        let det = b * b - a * splat(c);
        let zero = splat(0.0);
        det.simd_ge(zero) & (b.simd_le(zero) | (-b + det.sqrt()).simd_ge(zero))
    }

    #[inline(always)]
    fn root_ahead(a: f64, b: f64, c: f64) -> bool {
        let det = b * b - a * c;
        // `|` rather than `||`: both sides are cheap, and lanes take no branches.
        (det >= 0.0) & ((b <= 0.0) | (-b + det.sqrt() >= 0.0))
    }
}

/// Local-frame intersection for the analytic types other than the sphere (which MuJoCo
/// intersects in the world frame); `None` for the others.
#[inline]
pub(crate) fn intersect_local(kind: GeomType, size: DVec3, lpnt: DVec3, lvec: DVec3) -> Option<LocalHit> {
    match kind {
        GeomType::Plane => plane(size, lpnt, lvec),
        GeomType::Capsule => capsule(size, lpnt, lvec),
        GeomType::Ellipsoid => ellipsoid(size, lpnt, lvec),
        GeomType::Cylinder => cylinder(size, lpnt, lvec),
        GeomType::Box => box_local(size, lpnt, lvec),
        _ => None,
    }
}

/// Sphere in the world frame (MuJoCo does not rotate into the local frame for spheres).
#[inline]
pub(crate) fn sphere(center: DVec3, radius_sqr: f64, pnt: DVec3, vec: DVec3) -> Option<(f64, DVec3)> {
    let dif = pnt - center;
    let t = first_nonneg(quad_roots(vec.dot(vec), vec.dot(dif), dif.dot(dif) - radius_sqr)?)?;
    Some((t, (dif + t * vec).normalize()))
}

#[inline]
fn plane(size: DVec3, lpnt: DVec3, lvec: DVec3) -> Option<LocalHit> {
    if lvec.z > -MINVAL {
        return None;
    }
    let t = -lpnt.z / lvec.z;
    if t < 0.0 {
        return None;
    }
    let p = lpnt + t * lvec;
    let inside = |half: f64, x: f64| half <= 0.0 || x.abs() <= half;
    (inside(size.x, p.x) && inside(size.y, p.y)).then_some((t, DVec3::Z))
}

#[inline]
fn capsule(size: DVec3, lpnt: DVec3, lvec: DVec3) -> Option<LocalHit> {
    let (r, h) = (size.x, size.y);
    let mut best = None;
    let a = lvec.x * lvec.x + lvec.y * lvec.y;
    let b = lvec.x * lpnt.x + lvec.y * lpnt.y;
    let c = lpnt.x * lpnt.x + lpnt.y * lpnt.y - r * r;
    if let Some(t) = quad_roots(a, b, c).and_then(first_nonneg) {
        let p = lpnt + t * lvec;
        if p.z.abs() <= h {
            keep(&mut best, t, DVec3::new(p.x, p.y, 0.0));
        }
    }
    let a = lvec.dot(lvec);
    for side in [1.0, -1.0] {
        let dif = DVec3::new(lpnt.x, lpnt.y, lpnt.z - side * h);
        let Some(roots) = quad_roots(a, lvec.dot(dif), dif.dot(dif) - r * r) else {
            continue;
        };
        for t in roots {
            let z = lpnt.z + t * lvec.z;
            if t >= 0.0 && side * z >= h {
                keep(&mut best, t, dif + t * lvec);
            }
        }
    }
    best
}

#[inline]
fn ellipsoid(size: DVec3, lpnt: DVec3, lvec: DVec3) -> Option<LocalHit> {
    let s = DVec3::ONE / (size * size);
    let a = s.x * lvec.x * lvec.x + s.y * lvec.y * lvec.y + s.z * lvec.z * lvec.z;
    let b = s.x * lvec.x * lpnt.x + s.y * lvec.y * lpnt.y + s.z * lvec.z * lpnt.z;
    let c = s.x * lpnt.x * lpnt.x + s.y * lpnt.y * lpnt.y + s.z * lpnt.z * lpnt.z - 1.0;
    let t = first_nonneg(quad_roots(a, b, c)?)?;
    Some((t, (lpnt + t * lvec) * s))
}

#[inline]
fn cylinder(size: DVec3, lpnt: DVec3, lvec: DVec3) -> Option<LocalHit> {
    let (r, h) = (size.x, size.y);
    let mut best = None;
    if lvec.z.abs() > MINVAL {
        for side in [-1.0, 1.0] {
            let t = (side * h - lpnt.z) / lvec.z;
            if t >= 0.0 {
                let p = lpnt + t * lvec;
                if p.x * p.x + p.y * p.y <= r * r {
                    keep(&mut best, t, DVec3::new(0.0, 0.0, side));
                }
            }
        }
    }
    let a = lvec.x * lvec.x + lvec.y * lvec.y;
    let b = lvec.x * lpnt.x + lvec.y * lpnt.y;
    let c = lpnt.x * lpnt.x + lpnt.y * lpnt.y - r * r;
    if let Some(t) = quad_roots(a, b, c).and_then(first_nonneg) {
        let p = lpnt + t * lvec;
        if p.z.abs() <= h {
            keep(&mut best, t, DVec3::new(p.x, p.y, 0.0));
        }
    }
    best
}

/// Distances to the six faces of a box centered at the local origin, in MuJoCo's order
/// (−X, +X, −Y, +Y, −Z, +Z); `-1` where the ray does not cross that face.
#[inline]
pub(crate) fn box_faces(half: DVec3, lpnt: DVec3, lvec: DVec3) -> [f64; 6] {
    // Arrays, not glam's runtime-indexed vectors (whose `[i]` is a branch).
    let (half, lpnt, lvec) = (half.to_array(), lpnt.to_array(), lvec.to_array());
    // All six face distances at once (vectorized divisions; division is exact either way).
    let num: [f64; 6] = std::array::from_fn(|f| if f % 2 == 0 { -half[f / 2] } else { half[f / 2] } - lpnt[f / 2]);
    let den: [f64; 6] = std::array::from_fn(|f| lvec[f / 2]);
    let t: [f64; 6] = std::array::from_fn(|f| num[f] / den[f]);
    let mut all = [-1.0; 6];
    for f in 0..6 {
        let i = f / 2;
        if lvec[i].abs() <= MINVAL || t[f] < 0.0 {
            continue;
        }
        let (j, k) = ((i + 1) % 3, (i + 2) % 3);
        let (pj, pk) = (lpnt[j] + t[f] * lvec[j], lpnt[k] + t[f] * lvec[k]);
        if pj.abs() <= half[j] && pk.abs() <= half[k] {
            all[f] = t[f];
        }
    }
    all
}

/// The nearest face hit of a box centered at the local origin with its outward normal: the
/// first face in MuJoCo's order among those at the smallest distance.
#[inline]
pub(crate) fn box_local(half: DVec3, lpnt: DVec3, lvec: DVec3) -> Option<LocalHit> {
    if let Some(entry) = EntryAxes::new(half, lpnt) {
        let (t, face, unclear) = entry.lanes(Base, [Base.splat(lvec.x), Base.splat(lvec.y), Base.splat(lvec.z)]);
        if unclear.to_bitmask() & 1 == 0 {
            let (t, face) = (t.to_array()[0], face.to_array()[0] as usize);
            return (face < 6).then(|| (t, face_normal(face)));
        }
    }
    box_all_faces(half, lpnt, lvec)
}

/// MuJoCo's six-face loop (`ray_box`) for `N` rays at once, on vector lanes: [`box_local`] of
/// each, to the bit (its entry-face shortcut answers only where the loop would answer the
/// same). Ray `r` starts at `(lpnt[0][r], lpnt[1][r], lpnt[2][r])` along
/// `lvec` likewise, in the box's frame; `t[r]` gets its distance (`INFINITY`: a miss) and
/// `face[r]` the face hit (6: none).
#[inline(always)]
pub(crate) fn box_lanes<const N: usize>(
    half: DVec3,
    lpnt: &[[f64; N]; 3],
    lvec: &[[f64; N]; 3],
    t: &mut [f64; N],
    face: &mut [u8; N],
) {
    let half = half.to_array();
    *t = [f64::INFINITY; N];
    *face = [6; N];
    for f in 0..6 {
        let (i, j, k) = (f / 2, (f / 2 + 1) % 3, (f / 2 + 2) % 3);
        let plane = if f % 2 == 0 { -half[i] } else { half[i] };
        for r in 0..N {
            let tf = (plane - lpnt[i][r]) / lvec[i][r];
            let (pj, pk) = (lpnt[j][r] + tf * lvec[j][r], lpnt[k][r] + tf * lvec[k][r]);
            // A face wins inside its edges, at a distance ahead of the ray and nearer than the
            // best so far (an equal one comes later in MuJoCo's order); a NaN `tf` fails.
            let wins =
                tf >= 0.0 && tf < t[r] && lvec[i][r].abs() > MINVAL && pj.abs() <= half[j] && pk.abs() <= half[k];
            t[r] = if wins { tf } else { t[r] };
            face[r] = if wins { f as u8 } else { face[r] };
        }
    }
}

/// A box seen from one origin outside it (some `|lpnt[i]| > half[i]`), whose rays are decided
/// on the faces each can enter through (at most three: half the divisions of MuJoCo's
/// six-face loop) where the answer is clear: the ray enters through one face well inside its
/// edges (so no exit face can be as near, whatever the rounding), or misses every entry face
/// by a margin (so it passes no silhouette edge, the only place where an exit face could be
/// hit without an entry face). Near edges and corners the caller runs MuJoCo's loop.
///
/// Only the axes whose slab the origin is not strictly inside are tested: from inside slab
/// `i`, both faces along `i` lie behind the ray or beside it (`tf < 0`, or no crossing), so
/// MuJoCo's loop takes nothing from them. Seen from a lidar, a box is mostly outside one or
/// two slabs.
pub(crate) struct EntryAxes {
    half: [f64; 3],
    lpnt: [f64; 3],
    axes: [usize; 3],
    naxes: usize,
}

impl EntryAxes {
    /// The box of half sizes `half` seen from `lpnt` (its frame), or `None` when `lpnt` is not
    /// outside it (some `|lpnt[i]| > half[i]`).
    #[inline(always)]
    pub(crate) fn new(half: DVec3, lpnt: DVec3) -> Option<EntryAxes> {
        if !lpnt.abs().cmpgt(half).any() {
            return None;
        }
        let (mut axes, mut naxes) = ([0usize; 3], 0);
        for i in 0..3 {
            // Not `a >= b`: a NaN origin tests every axis.
            if lpnt[i].abs().partial_cmp(&half[i]) != Some(std::cmp::Ordering::Less) {
                (axes[naxes], naxes) = (i, naxes + 1);
            }
        }
        Some(EntryAxes { half: half.to_array(), lpnt: lpnt.to_array(), axes, naxes })
    }

    /// Eight rays along `v` (by axis in the box's frame) from the origin: where the answer is
    /// clear, the distance (`INFINITY`: a miss) and the face hit (6: none), as MuJoCo's loop
    /// answers; and the mask of the lanes left unclear, near edges and corners, for which the
    /// caller runs the loop ([`box_local`] does).
    #[inline(always)]
    pub(crate) fn lanes<I: Isa>(&self, isa: I, v: [I::F; 3]) -> (I::F, I::F, I::M) {
        box_entry_faces8(isa, self.half, self.lpnt, v, &self.axes[..self.naxes])
    }
}

/// [`box_lanes`] of eight rays from `lpnt` along `v` (by axis), as [`EntryAxes::lanes`]
/// answers: the distance, the face and (none) unclear lanes.
#[inline(always)]
pub(crate) fn box_lanes8<I: Isa>(isa: I, half: DVec3, lpnt: DVec3, v: [I::F; 3]) -> (I::F, I::F, I::M) {
    let lpnt = lpnt.to_array().map(|x| [x; LANES]);
    let (mut t, mut face) = ([0.0; LANES], [0u8; LANES]);
    box_lanes(half, &lpnt, &v.map(I::F::to_array), &mut t, &mut face);
    (isa.vector(t), isa.vector(face.map(f64::from)), isa.of_bits(0))
}

/// [`EntryAxes::lanes`] on the axes `axes`.
#[inline(always)]
fn box_entry_faces8<I: Isa>(
    isa: I,
    half: [f64; 3],
    lpnt: [f64; 3],
    v: [I::F; 3],
    axes: &[usize],
) -> (I::F, I::F, I::M) {
    let splat = |x| isa.splat(x);
    let zero = splat(0.0);
    let (mut best, mut best_face) = (splat(f64::INFINITY), splat(6.0));
    let (mut found, mut near) = (isa.of_bits(0), isa.of_bits(0));
    for &i in axes {
        let (j, k) = ((i + 1) % 3, (i + 2) % 3);
        // The one face along axis `i` that each ray can enter through.
        let positive = v[i].simd_gt(zero);
        let f = positive.select(splat(2.0 * i as f64), splat(2.0 * i as f64 + 1.0));
        let tf = (positive.select(splat(-half[i]), splat(half[i])) - splat(lpnt[i])) / v[i];
        // `!(tf < 0)`: ahead of the ray, or NaN.
        let valid = v[i].abs().simd_gt(splat(MINVAL)) & !tf.simd_lt(zero);
        let (pj, pk) = (splat(lpnt[j]) + tf * v[j], splat(lpnt[k]) + tf * v[k]);
        // `fast_max` (the hardware's maximum): it differs from `f64::max` on NaN only, where
        // the lane is a miss either way, decided here or by MuJoCo's loop.
        let margin =
            splat(1e-9) * (splat(1.0) + pj.abs().fast_max(pk.abs()).fast_max(splat(half[j])).fast_max(splat(half[k])));
        let (dj, dk) = (pj.abs() - splat(half[j]), pk.abs() - splat(half[k]));
        let inside = dj.simd_le(zero) & dk.simd_le(zero);
        let near_edge = dj.simd_gt(-margin) | dk.simd_gt(-margin) | (found & best.simd_eq(tf));
        let grazes = !inside & dj.fast_max(dk).simd_le(margin);
        near = near | (valid & ((inside & near_edge) | grazes));
        let wins = valid & inside & !near_edge & (!found | tf.simd_lt(best));
        best = wins.select(tf, best);
        best_face = wins.select(f, best_face);
        found = found | wins;
    }
    (best, best_face, near)
}

/// Outward normal of box face `f` (MuJoCo's order: −X, +X, −Y, +Y, −Z, +Z).
#[inline(always)]
pub(crate) fn face_normal(f: usize) -> DVec3 {
    // A table, not a vector built by writing one indexed component: the read of a vector
    // just written in parts stalls on store forwarding in the packets' hot loop.
    const NORMALS: [DVec3; 6] = [DVec3::NEG_X, DVec3::X, DVec3::NEG_Y, DVec3::Y, DVec3::NEG_Z, DVec3::Z];
    NORMALS[f]
}

/// MuJoCo's six-face loop (`ray_box`) for one ray: [`box_lanes`] of one lane.
#[inline]
fn box_all_faces(half: DVec3, lpnt: DVec3, lvec: DVec3) -> Option<LocalHit> {
    let (lpnt, lvec) = (lpnt.to_array().map(|x| [x]), lvec.to_array().map(|x| [x]));
    let (mut t, mut face) = ([0.0], [0u8]);
    box_lanes(half, &lpnt, &lvec, &mut t, &mut face);
    (face[0] < 6).then(|| (t[0], face_normal(face[0] as usize)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    /// A ray in a box's frame: from inside or outside, along a random direction, an axis, a
    /// direction with components below `MINVAL`, straight at a corner or an edge, or along the
    /// plane of a face.
    fn ray(rng: &mut ChaCha8Rng, half: DVec3) -> (DVec3, DVec3) {
        let mut v = || DVec3::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0));
        let (p, d, target) = (v() * 3.0, v(), v());
        let corner = half * target.signum();
        let edge = DVec3::new(corner.x, corner.y, half.z * target.z);
        let dir = match rng.gen_range(0..7) {
            0 => d,
            1 => DVec3::X * d.x.signum(),
            2 => DVec3::new(d.x, 1e-16, -1e-17),
            3 => corner - p,
            4 => edge - p,
            5 => -p,
            // Along X in the plane of a Y face: on its boundary exactly.
            _ => return (DVec3::new(-3.0, corner.y, target.z * half.z), DVec3::X),
        };
        (p, dir)
    }

    #[test]
    fn a_segment_ruled_out_by_its_bounding_sphere_meets_no_surface() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        let kinds = [GeomType::Sphere, GeomType::Capsule, GeomType::Ellipsoid, GeomType::Cylinder, GeomType::Box];
        let (mut ruled_out, mut near_misses) = (0, 0);
        for k in 0..20_000 {
            let kind = kinds[k % kinds.len()];
            let size = DVec3::new(rng.gen_range(0.05..1.0), rng.gen_range(0.05..1.0), rng.gen_range(0.05..1.0));
            let pos = DVec3::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0));
            let rot = DMat3::from_quat(glam::DQuat::from_euler(
                glam::EulerRot::XYZ,
                rng.gen_range(-3.0..3.0),
                rng.gen_range(-3.0..3.0),
                rng.gen_range(-3.0..3.0),
            ));
            let pnt = pos + DVec3::new(rng.gen_range(-2.0..2.0), rng.gen_range(-2.0..2.0), rng.gen_range(-2.0..2.0));
            let vec = DVec3::new(rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0), rng.gen_range(-1.0..1.0));
            // Short segments (a coincidence test) and long ones, ending anywhere.
            let reach = if k % 2 == 0 { rng.gen_range(0.0..0.05) } else { rng.gen_range(0.0..4.0) };
            if !segment_misses(kind, size, pnt - pos, vec, reach) {
                continue;
            }
            ruled_out += 1;
            if let Some((t, _)) = intersect_primitive(kind, size, pos, &rot, pnt, vec) {
                assert!(t > reach, "{kind:?} {size} at {pos}: ruled out, yet hit at {t} within {reach}");
                near_misses += usize::from(t < 2.0 * reach);
            }
        }
        assert!(ruled_out > 5_000, "only {ruled_out} segments ruled out");
        // Some ruled-out segments stop just short of a surface: the test is not vacuous there.
        assert!(near_misses > 10, "{near_misses}");
        // Unbounded shapes and unbounded segments are never ruled out.
        assert!(!segment_misses(GeomType::Plane, DVec3::ONE, DVec3::splat(9.0), DVec3::X, 0.1));
        assert!(!segment_misses(GeomType::Sphere, DVec3::ONE, DVec3::splat(9.0), DVec3::X, f64::INFINITY));
    }

    #[test]
    fn boxes_on_lanes_equal_one_ray_at_a_time() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let mut hits = 0;
        for _ in 0..400 {
            let half = DVec3::new(rng.gen_range(0.1..2.0), rng.gen_range(0.1..2.0), rng.gen_range(0.1..2.0));
            let rays: Vec<(DVec3, DVec3)> = (0..32).map(|_| ray(&mut rng, half)).collect();
            let (mut lpnt, mut lvec) = ([[0.0; 32]; 3], [[0.0; 32]; 3]);
            for (r, (p, d)) in rays.iter().enumerate() {
                for a in 0..3 {
                    (lpnt[a][r], lvec[a][r]) = (p[a], d[a]);
                }
            }
            let (mut t, mut face) = ([0.0; 32], [0u8; 32]);
            box_lanes(half, &lpnt, &lvec, &mut t, &mut face);
            for (r, &(p, d)) in rays.iter().enumerate() {
                let lanes = (face[r] < 6).then(|| (t[r].to_bits(), face_normal(face[r] as usize)));
                let one = box_local(half, p, d).map(|(t, n)| (t.to_bits(), n));
                assert_eq!(lanes, one, "half {half}, ray {p} + t {d}");
                hits += usize::from(one.is_some());
            }
        }
        assert!(hits > 3_000 && hits < 12_000, "{hits} hits of 12800");
    }

    #[test]
    fn boxes_from_one_outside_origin_decided_on_entry_faces_answer_as_mujocos_loop() {
        crate::isa::for_each_isa!(isa => entry_faces_answer_as_mujocos_loop(isa));
    }

    fn entry_faces_answer_as_mujocos_loop<I: Isa>(isa: I) {
        let mut rng = ChaCha8Rng::seed_from_u64(11);
        let (mut hits, mut unclear_rays) = (0, 0);
        for _ in 0..400 {
            let half = DVec3::new(rng.gen_range(0.1..2.0), rng.gen_range(0.1..2.0), rng.gen_range(0.1..2.0));
            // Directions of every kind `ray` draws, from one origin outside the box.
            let origin = loop {
                let (p, _) = ray(&mut rng, half);
                if p.abs().cmpgt(half).any() {
                    break p;
                }
            };
            let dirs: Vec<DVec3> = (0..32)
                .map(|_| {
                    let (p, d) = ray(&mut rng, half);
                    // Rays aimed at a corner or an edge keep their aim from the shared origin.
                    if rng.gen_bool(0.3) { p + d - origin } else { d }
                })
                .collect();
            let mut lvec = [[0.0; 32]; 3];
            for (r, d) in dirs.iter().enumerate() {
                for a in 0..3 {
                    lvec[a][r] = d[a];
                }
            }
            let entry = EntryAxes::new(half, origin).expect("the origin is outside");
            let (mut t, mut face, mut unclear) = ([0.0; 32], [0u8; 32], [false; 32]);
            for b in 0..4 {
                let (bt, bface, bunclear) = entry
                    .lanes(isa, std::array::from_fn(|a| isa.vector(lvec[a][8 * b..8 * b + 8].try_into().unwrap())));
                for l in 0..8 {
                    (t[8 * b + l], face[8 * b + l]) = (bt.to_array()[l], bface.to_array()[l] as u8);
                    unclear[8 * b + l] = (bunclear.to_bitmask() >> l) & 1 != 0;
                }
            }
            for (r, &d) in dirs.iter().enumerate() {
                let one = box_all_faces(half, origin, d).map(|(t, n)| (t.to_bits(), n));
                if unclear[r] {
                    unclear_rays += 1;
                    continue;
                }
                let lanes = (face[r] < 6).then(|| (t[r].to_bits(), face_normal(face[r] as usize)));
                assert_eq!(lanes, one, "half {half}, ray {origin} + t {d}");
                hits += usize::from(one.is_some());
            }
        }
        assert!(hits > 1_000 && unclear_rays > 10 && unclear_rays < 3_000, "{hits} hits, {unclear_rays} unclear");
    }
}
