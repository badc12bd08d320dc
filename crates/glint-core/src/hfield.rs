//! Height fields as MuJoCo ray-casts them: a solid made of a base box below the surface,
//! the grid's triangles (through a BVH over the cells), and the four side walls of the top
//! box up to the surface profile.

use glam::DVec3;

use crate::CoreError;
use crate::GeomType;
use crate::bvh::Aabb;
use crate::mesh::{F64Vertices, TriangleSet};
use crate::primitives::{LocalHit, box_faces, box_local, passes_bounding_sphere};

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

    /// Nearest hit of a local-frame ray with the solid, with `t <= tmax`.
    pub(crate) fn intersect_local(&self, o: DVec3, d: DVec3, tmax: f64) -> Option<LocalHit> {
        let s = self.size;
        // MuJoCo's box test (ray_box) starts with a bounding-sphere test; both boxes use it.
        let base_half = DVec3::new(s[0], s[1], 0.5 * s[3]);
        let base_dif = o - DVec3::new(0.0, 0.0, -0.5 * s[3]);
        let mut best = if passes_bounding_sphere(GeomType::Box, base_half, base_dif, d) {
            box_local(base_half, base_dif, d).filter(|h| h.0 <= tmax)
        } else {
            None
        };
        let top_half = DVec3::new(s[0], s[1], 0.5 * s[2]);
        let top_dif = o - DVec3::new(0.0, 0.0, 0.5 * s[2]);
        if !passes_bounding_sphere(GeomType::Box, top_half, top_dif, d) {
            return best;
        }
        let top = box_faces(top_half, top_dif, d);
        if top.iter().all(|&t| t < 0.0) {
            return best;
        }
        let bound = best.map_or(tmax, |h| h.0);
        if let Some((t, n, _)) = self.surface.closest(o, d, bound)
            && best.is_none_or(|h| t < h.0)
        {
            best = Some((t, n));
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
