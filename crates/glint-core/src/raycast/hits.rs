//! What a cast answers: one ray's hit, a batch's hits, and caller-owned arrays for them.

use glam::DVec3;

use crate::isa::{Isa, Lanes};

/// The answer for one ray: distance (`-1` on a miss), geom id (`-1` on a miss) and unit
/// world-frame surface normal (zero on a miss).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayHit {
    /// Distance in units of the direction's length, or `-1`.
    pub dist: f64,
    /// Geom hit, or `-1`.
    pub geomid: i32,
    /// Outward unit normal at the hit, world frame.
    pub normal: DVec3,
}

impl RayHit {
    /// The answer for a ray that hits nothing.
    pub const MISS: RayHit = RayHit { dist: -1.0, geomid: -1, normal: DVec3::ZERO };
}

/// Whether a hit on geom `g` at `t` beats the best so far (`best_t` on `best_g`): it is closer,
/// or equally close on a lower geom id (MuJoCo scans geoms in id order and keeps the first
/// of equal distances).
#[inline(always)]
pub(super) fn beats(t: f64, g: usize, best_t: f64, best_g: i32) -> bool {
    t < best_t || (t == best_t && (g as i32) < best_g)
}

/// [`beats`] on eight lanes (geom ids as floats): the mask of the lanes where a hit on geom
/// `g` at `t` beats the best so far.
#[inline(always)]
pub(super) fn beats_lanes<I: Isa>(isa: I, t: I::F, g: f64, best_t: I::F, best_g: I::F) -> I::M {
    t.simd_lt(best_t) | (t.simd_eq(best_t) & isa.splat(g).simd_lt(best_g))
}

/// Answers for a batch, each array shaped `(nworld, nray)`.
#[derive(Clone, Debug, Default)]
pub struct RayHits {
    /// Distances, `-1` on a miss.
    pub dist: Vec<f64>,
    /// Geom ids, `-1` on a miss.
    pub geomid: Vec<i32>,
    /// Unit normals, zero on a miss.
    pub normal: Vec<DVec3>,
}

impl RayHits {
    /// The three arrays as one caller-owned output.
    pub(super) fn as_hits_mut(&mut self) -> HitsMut<'_> {
        HitsMut { dist: &mut self.dist, geomid: &mut self.geomid, normal: &mut self.normal }
    }
}

/// Caller-owned answers for a cast: three arrays of the same length, one entry per ray.
#[derive(Debug)]
pub struct HitsMut<'a> {
    /// Distances, `-1` on a miss.
    pub dist: &'a mut [f64],
    /// Geom ids, `-1` on a miss.
    pub geomid: &'a mut [i32],
    /// Unit normals, zero on a miss.
    pub normal: &'a mut [DVec3],
}

impl HitsMut<'_> {
    #[inline(always)]
    pub(super) fn set(&mut self, r: usize, hit: RayHit) {
        self.dist[r] = hit.dist;
        self.geomid[r] = hit.geomid;
        self.normal[r] = hit.normal;
    }
}
