//! What the rays of one query share, and how a ray of it is read.

use glam::DVec3;

use super::batch::RayBatch;
use crate::{Poses, Scene};

/// What every ray of one query shares: the scene, the poses, the geoms the filter lets
/// through, and the batch.
#[derive(Clone, Copy)]
pub(super) struct Query<'a> {
    pub(super) scene: &'a Scene,
    pub(super) poses: &'a Poses,
    pub(super) eligible: &'a [bool],
    pub(super) batch: &'a RayBatch<'a>,
    /// The world that the batch's world 0 stands for.
    pub(super) world0: usize,
    /// A geom the rays pass through (`-1`: none).
    pub(super) skip_geom: i32,
    /// Whether packets carry each ray's own origin (a cast with `Origins::Each`).
    pub(super) own: bool,
    /// Only surfaces nearer than this (in units of each direction's length) are hit; the
    /// others are misses. Infinite for closest hits anywhere.
    pub(super) reach: f64,
}

impl Query<'_> {
    /// Origin, direction and excluded body of ray `i` of world `w`.
    #[inline(always)]
    pub(super) fn ray(&self, w: usize, i: usize) -> (DVec3, DVec3, i32) {
        let b = self.batch;
        (RayBatch::pick(b.pnt, b.nray, w, i), RayBatch::pick(b.vec, b.nray, w, i), self.exclude(w, i))
    }

    #[inline(always)]
    pub(super) fn exclude(&self, w: usize, i: usize) -> i32 {
        let b = self.batch;
        if b.bodyexclude.is_empty() { -1 } else { RayBatch::pick(b.bodyexclude, b.nray, w, i) }
    }

    /// Whether geom `g` can be hit by a ray that excludes body `exclude`.
    #[inline(always)]
    pub(super) fn usable(&self, g: usize, exclude: i32) -> bool {
        self.eligible[g] && self.scene.geom_bodyid[g] != exclude && g as i32 != self.skip_geom
    }
}
