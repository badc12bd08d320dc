//! One geom against one ray, by geom type: the closest hit and the any-hit test that every
//! walk (single rays, packets, any-hit queries) calls in its leaves. A mesh's or a height
//! field's own walk runs on the caller's instruction set `I`.

use glam::{DMat3, DVec3};

use super::caster::Geometry;
use crate::GeomType;
use crate::isa::Isa;
use crate::primitives::{self, to_local};

/// Closest hit of geom `g` at pose `(pos, rot)` with `t <= tmax`: distance and unit
/// world-frame normal. Always inlined, so that a caller already running on `I` walks a mesh
/// without entering `I` again: out of line, each (ray, mesh) pair of the portable build paid
/// a call into `I`'s code (docs/performance.md).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn intersect_geom<I: Isa>(
    isa: I,
    geo: Geometry,
    g: usize,
    pos: DVec3,
    rot: &DMat3,
    pnt: DVec3,
    vec: DVec3,
    tmax: f64,
) -> Option<(f64, DVec3)> {
    let kind = geo.shapes.geom_type[g];
    let (t, n) = match kind {
        GeomType::Mesh => {
            let mesh = geo.shapes.mesh(geo.scene, g);
            let (o, d) = (to_local(rot, pnt - pos), to_local(rot, vec));
            let (t, n, _) = isa.run(
                #[inline(always)]
                || mesh.triangles().closest(o, d, tmax),
            )?;
            (t, (*rot * n).normalize())
        }
        GeomType::Hfield => {
            let hf = geo.shapes.hfield(geo.scene, g);
            let (t, n) = isa.run(
                #[inline(always)]
                || hf.intersect(pos, rot, pnt, vec, tmax),
            )?;
            (t, (*rot * n).normalize())
        }
        _ => primitives::intersect_primitive(kind, geo.shapes.geom_size[g], pos, rot, pnt, vec)?,
    };
    (t <= tmax).then_some((t, n))
}

/// Whether geom `g` is hit with `t < max_dist` (inlined as [`intersect_geom`] is).
#[inline(always)]
#[allow(clippy::too_many_arguments)]
pub(super) fn geom_blocks<I: Isa>(
    isa: I,
    geo: Geometry,
    g: usize,
    pos: DVec3,
    rot: &DMat3,
    pnt: DVec3,
    vec: DVec3,
    max_dist: f64,
) -> bool {
    match geo.shapes.geom_type[g] {
        GeomType::Mesh => {
            let mesh = geo.shapes.mesh(geo.scene, g);
            let (o, d) = (to_local(rot, pnt - pos), to_local(rot, vec));
            isa.run(
                #[inline(always)]
                || mesh.triangles().any(o, d, max_dist),
            ) && {
                // `any` accepts t == max_dist; the query wants strictly closer.
                intersect_geom(isa, geo, g, pos, rot, pnt, vec, max_dist).is_some_and(|(t, _)| t < max_dist)
            }
        }
        _ => intersect_geom(isa, geo, g, pos, rot, pnt, vec, max_dist).is_some_and(|(t, _)| t < max_dist),
    }
}
