//! One ray's walk through a world: the closest hit, and whether anything blocks it.

use glam::DVec3;

use super::caster::RayCaster;
use super::dispatch::{geom_blocks, intersect_geom};
use super::hits::{RayHit, beats};
use super::query::Query;
use crate::bvh::inverse_direction;
use crate::isa::Isa;

impl RayCaster {
    /// The closest hit of ray `i` of world `w`, on the instruction set `I`.
    pub(super) fn cast<I: Isa>(&self, isa: I, q: &Query, w: usize, i: usize) -> RayHit {
        isa.run(
            #[inline(always)]
            || self.cast_on(isa, q, w, i),
        )
    }

    /// [`RayCaster::cast`]'s body, compiled for `I`.
    #[inline(always)]
    fn cast_on<I: Isa>(&self, isa: I, q: &Query, w: usize, i: usize) -> RayHit {
        let set = self.set(q.world0 + w);
        let geo = set.geometry(q.scene);
        let (pnt, vec, exclude) = q.ray(w, i);
        let (xpos, xmat) = q.poses.geoms(q.world0 + w);
        let usable = |g: usize| q.usable(g, exclude);

        let mut best = Best { t: q.reach, g: -1, n: DVec3::ZERO };
        for &g in &set.planes {
            let g = g as usize;
            if usable(g)
                && let Some((t, n)) = intersect_geom(isa, geo, g, xpos[g], &xmat[g], pnt, vec, f64::INFINITY)
            {
                best.offer(g, t, n);
            }
        }
        let geoms = &set.tlas_geoms;
        let start = best.t;
        self.tlas[q.world0 + w].closest(pnt, inverse_direction(vec), start, |prim, tmax| {
            let g = geoms[prim as usize] as usize;
            if !usable(g) {
                return None;
            }
            let (t, n) = intersect_geom(isa, geo, g, xpos[g], &xmat[g], pnt, vec, tmax)?;
            best.offer(g, t, n).then_some(t)
        });
        if best.g < 0 { RayHit::MISS } else { RayHit { dist: best.t, geomid: best.g, normal: best.n } }
    }

    /// Whether ray `i` of world `w` hits an eligible geom closer than `max_dist`, on `I`.
    #[inline]
    pub(super) fn occluded<I: Isa>(&self, isa: I, q: &Query, w: usize, i: usize, max_dist: f64) -> bool {
        let set = self.set(q.world0 + w);
        let geo = set.geometry(q.scene);
        let (pnt, vec, exclude) = q.ray(w, i);
        let (xpos, xmat) = q.poses.geoms(q.world0 + w);
        let usable = |g: usize| q.usable(g, exclude);
        let blocks = |g: usize| usable(g) && geom_blocks(isa, geo, g, xpos[g], &xmat[g], pnt, vec, max_dist);
        set.planes.iter().any(|&g| blocks(g as usize))
            || self.tlas[q.world0 + w]
                .any(pnt, inverse_direction(vec), max_dist, |prim| blocks(set.tlas_geoms[prim as usize] as usize))
    }
}

/// The closest hit so far of one ray.
struct Best {
    t: f64,
    g: i32,
    n: DVec3,
}

impl Best {
    /// Takes the hit when it [`beats`] the best so far. Returns whether it did.
    #[inline(always)]
    fn offer(&mut self, g: usize, t: f64, n: DVec3) -> bool {
        let take = beats(t, g, self.t, self.g);
        if take {
            *self = Best { t, g: g as i32, n };
        }
        take
    }
}
