//! Batches of rays with MuJoCo Warp's broadcasting rules, and their validation.

use glam::DVec3;

use crate::CoreError;
use crate::primitives::MINVAL;

/// A batch of rays for every world. Each array has length 1 (shared by every ray), `nray`
/// (shared by every world) or `nworld * nray` (world-major).
#[derive(Clone, Copy, Debug)]
pub struct RayBatch<'a> {
    /// Rays per world.
    pub nray: usize,
    /// Ray origins.
    pub pnt: &'a [DVec3],
    /// Ray directions; distances are reported in units of their length, as in `mj_ray`.
    pub vec: &'a [DVec3],
    /// Body whose geoms each ray ignores (`-1`: none); may be empty (no exclusion).
    pub bodyexclude: &'a [i32],
}

impl RayBatch<'_> {
    #[inline(always)]
    pub(super) fn pick<T: Copy>(arr: &[T], nray: usize, w: usize, i: usize) -> T {
        match arr.len() {
            1 => arr[0],
            n if n == nray => arr[i],
            _ => arr[w * nray + i],
        }
    }

    /// Entries `i..i + n` of world `w` of `arr` (broadcast as [`RayBatch::pick`] reads it) as
    /// one slice, or the one entry every ray shares.
    #[inline(always)]
    pub(super) fn run<T: Copy>(arr: &[T], nray: usize, w: usize, i: usize, n: usize) -> Result<&[T], T> {
        match arr.len() {
            1 => Err(arr[0]),
            len if len == nray => Ok(&arr[i..i + n]),
            _ => Ok(&arr[w * nray + i..w * nray + i + n]),
        }
    }

    /// Checks that the array `field`, `len` entries long, follows the broadcasting rules.
    pub(super) fn check_shape(&self, field: &'static str, len: usize, nworld: usize) -> Result<(), CoreError> {
        let n = self.nray;
        if len == 1 || len == n || len == n * nworld {
            return Ok(());
        }
        Err(CoreError::Shape {
            field,
            len,
            expected: format!("it must hold 1, {n} (nray) or {} (nworld × nray) entries", n * nworld),
        })
    }

    /// Checks the directions and origins stored at `range` (indices into the arrays; entries
    /// past an array's end are skipped).
    fn check_rays(&self, range: std::ops::Range<usize>) -> Result<(), CoreError> {
        let vecs = &self.vec[range.start.min(self.vec.len())..range.end.min(self.vec.len())];
        if let Some(k) = vecs.iter().position(|v| !v.is_finite() || v.length_squared() < MINVAL * MINVAL) {
            let (index, v) = (range.start + k, vecs[k]);
            return Err(CoreError::BadDirection { index, x: v.x, y: v.y, z: v.z });
        }
        let pnts = &self.pnt[range.start.min(self.pnt.len())..range.end.min(self.pnt.len())];
        if let Some(k) = pnts.iter().position(|p| !p.is_finite()) {
            let (index, p) = (range.start + k, pnts[k]);
            return Err(CoreError::BadOrigin { index, x: p.x, y: p.y, z: p.z });
        }
        Ok(())
    }

    /// Whether the rays of flat indices `first..first + len` (world-major) have finite origins
    /// and usable directions: scans the parts of each array those rays use.
    pub(super) fn chunk_ok(&self, first: usize, len: usize) -> bool {
        let good_dir = |v: &DVec3| v.is_finite() && v.length_squared() >= MINVAL * MINVAL;
        let good_pnt = |p: &DVec3| p.is_finite();
        self.used(self.vec, first, len).all(|part| part.iter().all(good_dir))
            && self.used(self.pnt, first, len).all(|part| part.iter().all(good_pnt))
    }

    /// The parts of `arr` (shaped by the broadcasting rules) that flat rays
    /// `first..first + len` read: at most two runs.
    fn used<'b>(&self, arr: &'b [DVec3], first: usize, len: usize) -> impl Iterator<Item = &'b [DVec3]> {
        let n = self.nray;
        let (a, b): (&[DVec3], &[DVec3]) = match arr.len() {
            1 => (arr, &[]),
            l if l == n && len < n => {
                let start = first % n;
                let end = start + len;
                if end <= n { (&arr[start..end], &[]) } else { (&arr[start..], &arr[..end - n]) }
            }
            l if l == n => (arr, &[]),
            _ => (&arr[first..first + len], &[]),
        };
        [a, b].into_iter()
    }

    /// Checks the shapes only (`rays_into` checks the rays chunk by chunk inside its parallel
    /// loop, where a serial pass would cost a visible share of the time).
    pub(super) fn validate_shapes(&self, nworld: usize) -> Result<(), CoreError> {
        if self.nray == 0 || self.vec.is_empty() || self.pnt.is_empty() {
            return Err(CoreError::NoRays);
        }
        self.check_shape("pnt", self.pnt.len(), nworld)?;
        self.check_shape("vec", self.vec.len(), nworld)?;
        // No body exclusion at all is an empty array.
        if self.bodyexclude.is_empty() {
            return Ok(());
        }
        self.check_shape("bodyexclude", self.bodyexclude.len(), nworld)
    }

    /// Checks shapes and every ray.
    pub(super) fn validate(&self, nworld: usize) -> Result<(), CoreError> {
        self.validate_shapes(nworld)?;
        self.check_rays(0..self.vec.len().max(self.pnt.len()))
    }
}
