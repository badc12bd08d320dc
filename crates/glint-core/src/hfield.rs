//! Height fields as MuJoCo ray-casts them: a solid made of a base box below the surface,
//! the grid's triangles (through a BVH over the cells), and the four side walls of the top
//! box up to the surface profile.
//!
//! The triangles are tested with MuJoCo's own `ray_triangle` (the triangle projected onto a
//! basis orthogonal to the ray, a 2-D barycentric solve), in its arithmetic, and equal
//! distances go to the triangle MuJoCo's row-by-row loop meets first: a ray running exactly
//! along a grid line, or through a grid vertex, is answered as `mj_ray` answers it (where it
//! slips through the shared edge, glint's ray does too).

use glam::{DMat3, DVec3};

use crate::CoreError;
use crate::GeomType;
use crate::bvh::Aabb;
use crate::mesh::{F64Vertices, TriangleSet};
use crate::primitives::{LocalHit, MINVAL, box_faces, box_local, passes_bounding_sphere, to_local};

/// A height field: `nrow × ncol` elevations in `[0, 1]` (row-major, rows along local Y),
/// scaled by `size = [radius_x, radius_y, elevation_z, base_z]`.
#[derive(Clone, Debug)]
pub struct Hfield {
    /// Name in the model (may be empty).
    pub name: String,
    /// Number of rows (along Y).
    pub nrow: usize,
    /// Number of columns (along X).
    pub ncol: usize,
    /// `[radius_x, radius_y, elevation_z, base_z]` as in MuJoCo's `hfield_size`.
    pub size: [f64; 4],
    /// Normalized elevations, shape `(nrow, ncol)`.
    pub data: Vec<f32>,
    surface: TriangleSet<F64Vertices>,
}

impl Hfield {
    /// Builds the height field and its cell BVH; fails when the grid is smaller than 2×2, the
    /// data does not have `nrow * ncol` values, or a size is not positive.
    pub fn new(name: String, nrow: usize, ncol: usize, size: [f64; 4], data: Vec<f32>) -> Result<Hfield, CoreError> {
        let bad = |reason: String| CoreError::BadShape { kind: "height field", name: name.clone(), reason };
        if nrow < 2 || ncol < 2 {
            return Err(bad(format!("its grid is {nrow}×{ncol}; it needs at least 2×2")));
        }
        if data.len() != nrow * ncol {
            return Err(bad(format!("it has {} elevations for a {nrow}×{ncol} grid", data.len())));
        }
        if size.iter().any(|s| !s.is_finite() || *s < 0.0) || size[0] <= 0.0 || size[1] <= 0.0 {
            return Err(bad(format!("its size {size:?} must be positive")));
        }
        let (dx, dy) = (2.0 * size[0] / (ncol - 1) as f64, 2.0 * size[1] / (nrow - 1) as f64);
        let vertex = |r: usize, c: usize| {
            DVec3::new(dx * c as f64 - size[0], dy * r as f64 - size[1], data[r * ncol + c] as f64 * size[2])
        };
        let mut tris = Vec::with_capacity(2 * (nrow - 1) * (ncol - 1));
        for r in 0..nrow - 1 {
            for c in 0..ncol - 1 {
                // MuJoCo's split of each cell, wound so that the normal points up.
                tris.push([vertex(r, c), vertex(r, c + 1), vertex(r + 1, c + 1)]);
                tris.push([vertex(r, c), vertex(r + 1, c + 1), vertex(r + 1, c)]);
            }
        }
        Ok(Hfield { name, nrow, ncol, size, data, surface: TriangleSet::new(tris) })
    }

    /// Bounds in the geom frame: from `-base_z` to `elevation_z`.
    pub fn bounds(&self) -> Aabb {
        let s = self.size;
        Aabb { min: DVec3::new(-s[0], -s[1], -s[3]), max: DVec3::new(s[0], s[1], s[2]) }
    }

    fn elevation(&self, r: usize, c: usize) -> f64 {
        self.data[r * self.ncol + c] as f64
    }

    /// Nearest hit of the world-frame ray `pnt + t * vec` with the solid of a geom at `pos`
    /// with rotation `rot`, with `t <= tmax`: distance and geom-frame normal. The base and
    /// top boxes are placed in the world and the ray mapped into each, as `mj_rayHfield`
    /// does, so that a ray starting on a box face (a hit point of an earlier ray) rounds to
    /// the same side of it as in MuJoCo.
    pub(crate) fn intersect(&self, pos: DVec3, rot: &DMat3, pnt: DVec3, vec: DVec3, tmax: f64) -> Option<LocalHit> {
        let s = self.size;
        let z = rot.z_axis;
        let base_pos = DVec3::new(pos.x - z.x * s[3] * 0.5, pos.y - z.y * s[3] * 0.5, pos.z - z.z * s[3] * 0.5);
        let top_pos = DVec3::new(pos.x + z.x * s[2] * 0.5, pos.y + z.y * s[2] * 0.5, pos.z + z.z * s[2] * 0.5);
        let d = to_local(rot, vec);
        // MuJoCo's box test (ray_box) starts with a bounding-sphere test; both boxes use it.
        let base_half = DVec3::new(s[0], s[1], 0.5 * s[3]);
        let mut best = if passes_bounding_sphere(GeomType::Box, base_half, pnt - base_pos, vec) {
            box_local(base_half, to_local(rot, pnt - base_pos), d).filter(|h| h.0 <= tmax)
        } else {
            None
        };
        let top_half = DVec3::new(s[0], s[1], 0.5 * s[2]);
        if !passes_bounding_sphere(GeomType::Box, top_half, pnt - top_pos, vec) {
            return best;
        }
        let top = box_faces(top_half, to_local(rot, pnt - top_pos), d);
        if top.iter().all(|&t| t < 0.0) {
            return best;
        }
        let o = to_local(rot, pnt - pos);
        let bound = best.map_or(tmax, |h| h.0);
        let basis = RayBasis::new(d);
        if let Some((t, v, _)) = self.surface.closest_by(o, d, bound, |v| basis.ray_triangle(v, o, d))
            && best.is_none_or(|h| t < h.0)
        {
            best = Some((t, triangle_normal(v)));
        }
        for (face, &t) in top.iter().enumerate().take(4) {
            if t >= 0.0 && t <= tmax && best.is_none_or(|h| t < h.0) && self.below_profile(face, o + t * d) {
                let mut n = DVec3::ZERO;
                n[face / 2] = if face % 2 == 0 { -1.0 } else { 1.0 };
                best = Some((t, n));
            }
        }
        best
    }

    /// Whether point `p` on side wall `face` (0: −X, 1: +X, 2: −Y, 3: +Y) is below the
    /// surface profile along that wall.
    fn below_profile(&self, face: usize, p: DVec3) -> bool {
        let s = self.size;
        let (dx, dy) = (2.0 * s[0] / (self.ncol - 1) as f64, 2.0 * s[1] / (self.nrow - 1) as f64);
        let z = p.z / s[2];
        let (y, y0, z0, z1);
        if face < 2 {
            let c = if face == 1 { self.ncol - 1 } else { 0 };
            y = (p.y + s[1]) / dy;
            y0 = y.floor().clamp(0.0, (self.nrow - 2) as f64);
            z0 = self.elevation(y0 as usize, c);
            z1 = self.elevation(y0 as usize + 1, c);
        } else {
            let r = if face == 3 { self.nrow - 1 } else { 0 };
            y = (p.x + s[0]) / dx;
            y0 = y.floor().clamp(0.0, (self.ncol - 2) as f64);
            z0 = self.elevation(r, y0 as usize);
            z1 = self.elevation(r, y0 as usize + 1);
        }
        z < z0 * (y0 + 1.0 - y) + z1 * (y - y0)
    }
}

/// MuJoCo's `mju_normalize3`: `v` scaled by the reciprocal of its length, or +X when shorter
/// than `mjMINVAL`.
#[inline(always)]
fn normalize3(v: DVec3) -> DVec3 {
    let norm = (v.x * v.x + v.y * v.y + v.z * v.z).sqrt();
    if norm < MINVAL { DVec3::X } else { v * (1.0 / norm) }
}

/// MuJoCo's normal of a height-field triangle: `(v0 - v2) × (v1 - v2)`, normalized.
#[inline(always)]
fn triangle_normal(v: [DVec3; 3]) -> DVec3 {
    normalize3((v[0] - v[2]).cross(v[1] - v[2]))
}

/// The basis of the plane orthogonal to a ray that `mj_rayHfield` builds once per ray
/// (`b0`, `b1`), in its arithmetic.
struct RayBasis {
    b0: DVec3,
    b1: DVec3,
}

impl RayBasis {
    #[inline(always)]
    fn new(lvec: DVec3) -> RayBasis {
        let mut b0 = DVec3::ONE;
        let a = lvec.abs();
        if a.x >= a.y && a.x >= a.z {
            b0.x = 0.0;
        } else if a.y >= a.z {
            b0.y = 0.0;
        } else {
            b0.z = 0.0;
        }
        let b1 = normalize3(b0 + lvec * (-lvec.dot(b0) / lvec.dot(lvec)));
        let b0 = normalize3(b1.cross(lvec));
        RayBasis { b0, b1 }
    }

    /// MuJoCo's `ray_triangle`: the distance along `lvec` from `lpnt` to the triangle `v`
    /// (either side), or `None` on a miss or a hit behind the origin.
    #[inline(always)]
    fn ray_triangle(&self, v: &[DVec3; 3], lpnt: DVec3, lvec: DVec3) -> Option<f64> {
        let dif = [v[0] - lpnt, v[1] - lpnt, v[2] - lpnt];
        let planar = dif.map(|p| [self.b0.dot(p), self.b1.dot(p)]);
        // Rejected when all three lie on one side of either axis.
        let one_side = |k: usize| {
            let (a, b, c) = (planar[0][k], planar[1][k], planar[2][k]);
            (a > 0.0 && b > 0.0 && c > 0.0) || (a < 0.0 && b < 0.0 && c < 0.0)
        };
        if one_side(0) || one_side(1) {
            return None;
        }
        let m = [
            planar[0][0] - planar[2][0],
            planar[1][0] - planar[2][0],
            planar[0][1] - planar[2][1],
            planar[1][1] - planar[2][1],
        ];
        let b = [-planar[2][0], -planar[2][1]];
        let det = m[0] * m[3] - m[1] * m[2];
        if det.abs() < MINVAL {
            return None;
        }
        let t0 = (m[3] * b[0] - m[1] * b[1]) / det;
        let t1 = (-m[2] * b[0] + m[0] * b[1]) / det;
        if t0 < 0.0 || t1 < 0.0 || t0 + t1 > 1.0 {
            return None;
        }
        let nrm = (v[0] - v[2]).cross(v[1] - v[2]);
        let denom = lvec.dot(nrm);
        if denom.abs() < MINVAL {
            return None;
        }
        let x = -(lpnt - v[2]).dot(nrm) / denom;
        (x >= 0.0).then_some(x)
    }
}
