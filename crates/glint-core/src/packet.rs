//! Packets of coherent rays (one origin, directions with the same sign on every axis), which
//! traverse a BVH together: a node is entered when the packet's direction interval can enter
//! it, so one box test serves every ray of the packet. Lidar beams in scan order form such
//! packets almost everywhere; rays that do not go one at a time.

use glam::{BVec3, DMat3, DVec3};

use crate::bvh::{Aabb, Node4, WIDTH};
use crate::primitives::{MINVAL, to_local};

/// Rays per packet (ray masks are `u32`). With spinning scans cast in 4 × 4 tiles, a packet
/// is 4 bins × 8 channels; 32 measured faster than 16 or 8.
pub(crate) const PACKET: usize = 32;
const _: () = assert!(PACKET <= 32);

/// Up to [`PACKET`] rays from one origin.
#[derive(Clone, Debug)]
pub(crate) struct Packet {
    pub o: DVec3,
    pub d: [DVec3; PACKET],
    pub n: usize,
    /// Inverse directions by axis (structure of arrays, for vectorized per-ray box tests).
    inv_axis: [[f64; PACKET]; 3],
    /// Directions by axis (unused lanes repeat ray 0).
    dir_axis: [[f64; PACKET]; 3],
    /// Bit `r` set for each ray `r < n`.
    lanes: u32,
    /// Where each ray starts along its line from `o`, read only by the `BEYOND` forms of the
    /// tests below (set by [`Packet::start_at`]): nearer surfaces are not hit. Unused lanes
    /// repeat ray 0. Other packets start at `o`, and their tests do not pay for the starts.
    pub(crate) tmin: [f64; PACKET],
    /// The smallest of `tmin`.
    tmin_lo: f64,

    /// Per axis: whether the inverse directions are positive.
    positive: BVec3,
    /// Per-axis bounds of the inverse directions.
    lo: DVec3,
    hi: DVec3,
}

impl Packet {
    /// An empty packet, to be filled by [`Packet::set`].
    pub(crate) fn empty() -> Packet {
        Packet {
            o: DVec3::ZERO,
            d: [DVec3::ZERO; PACKET],
            n: 0,
            inv_axis: [[1.0; PACKET]; 3],
            dir_axis: [[1.0; PACKET]; 3],
            lanes: 0,
            tmin: [0.0; PACKET],
            tmin_lo: 0.0,
            positive: BVec3::FALSE,
            lo: DVec3::INFINITY,
            hi: DVec3::NEG_INFINITY,
        }
    }

    /// Refills the packet with `n` rays from `o` (directions from `dir(k)`); returns false
    /// when some axis has directions of both signs.
    #[inline]
    pub(crate) fn set(&mut self, o: DVec3, n: usize, dir: impl Fn(usize) -> DVec3) -> bool {
        debug_assert!(n > 0 && n <= PACKET);
        self.o = o;
        self.n = n;
        self.lanes = u32::MAX >> (32 - n);
        for k in 0..n {
            let d = dir(k);
            self.d[k] = d;
            for a in 0..3 {
                self.inv_axis[a][k] = d[a];
            }
        }
        // Inverses as arrays (vectorized divisions); unused lanes repeat ray 0.
        let (mut lo, mut hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
        for a in 0..3 {
            let axis = &mut self.inv_axis[a];
            let first = axis[0];
            for (k, x) in axis.iter_mut().enumerate() {
                let d = if k < n { *x } else { first };
                self.dir_axis[a][k] = d;
                *x = if d.abs() > 1e-300 { 1.0 / d } else { 1e300_f64.copysign(d) };
            }
            lo[a] = axis.iter().fold(f64::INFINITY, |m, &x| if x < m { x } else { m });
            hi[a] = axis.iter().fold(f64::NEG_INFINITY, |m, &x| if x > m { x } else { m });
        }
        (self.lo, self.hi) = (lo, hi);
        self.positive = lo.cmpgt(DVec3::ZERO);
        (self.positive | hi.cmplt(DVec3::ZERO)).all()
    }

    /// Starts ray `k` at distance `tmin(k)` (finite, at least 0) along its line from the
    /// origin, for rays that share a line origin but not a start (rays folded by a plane
    /// mirror start on the mirror, and their lines meet at the origin's mirror image).
    pub(crate) fn start_at(&mut self, tmin: impl Fn(usize) -> f64) {
        for k in 0..PACKET {
            self.tmin[k] = if k < self.n { tmin(k) } else { self.tmin[0] };
        }
        self.tmin_lo = self.tmin.iter().fold(f64::INFINITY, |m, &t| if t < m { t } else { m });
    }

    /// Where each ray meets a plane geom at `(pos, rot)` with `size` (MuJoCo's `ray_plane`:
    /// front face only, `t >= tmin`, inside the rectangle when the size is positive), as arrays
    /// over the packet; `INFINITY` where a ray misses.
    #[inline(always)]
    pub(crate) fn plane<const BEYOND: bool>(&self, pos: DVec3, rot: &DMat3, size: DVec3) -> [f64; PACKET] {
        let lpnt = to_local(rot, self.o - pos);
        let (ax, ay, az) = (rot.x_axis, rot.y_axis, rot.z_axis);
        let [dx, dy, dz] = &self.dir_axis;
        let mut out = [f64::INFINITY; PACKET];
        for r in 0..PACKET {
            // Same operation order as `to_local`, so the values equal the one-ray path's.
            let lx = ax.x * dx[r] + ax.y * dy[r] + ax.z * dz[r];
            let ly = ay.x * dx[r] + ay.y * dy[r] + ay.z * dz[r];
            let lz = az.x * dx[r] + az.y * dy[r] + az.z * dz[r];
            let t = -lpnt.z / lz;
            let (px, py) = (lpnt.x + t * lx, lpnt.y + t * ly);
            let inside = (size.x <= 0.0 || px.abs() <= size.x) && (size.y <= 0.0 || py.abs() <= size.y);
            let start = if BEYOND { self.tmin[r] } else { 0.0 };
            if lz <= -MINVAL && t >= start && inside {
                out[r] = t;
            }
        }
        out
    }

    /// Bit mask of the rays `r` whose segment `[tmin[r], tmax[r]]` enters `b`.
    #[inline(always)]
    pub(crate) fn enters<const BEYOND: bool>(&self, b: &Aabb, tmax: &[f64; PACKET]) -> u32 {
        let mut near = if BEYOND { self.tmin } else { [0.0f64; PACKET] };
        let mut far = *tmax;
        let (o, bmin, bmax) = (self.o.to_array(), b.min.to_array(), b.max.to_array());
        let positive = [self.positive.x, self.positive.y, self.positive.z];
        for a in 0..3 {
            let (lo, hi) = if positive[a] { (bmin[a], bmax[a]) } else { (bmax[a], bmin[a]) };
            let (dlo, dhi) = (lo - o[a], hi - o[a]);
            let inv = &self.inv_axis[a];
            for r in 0..PACKET {
                let (t0, t1) = (dlo * inv[r], dhi * inv[r]);
                near[r] = if t0 > near[r] { t0 } else { near[r] };
                far[r] = if t1 < far[r] { t1 } else { far[r] };
            }
        }
        let mut mask = 0u32;
        for r in 0..PACKET {
            mask |= u32::from(near[r] <= far[r]) << r;
        }
        mask & self.lanes
    }

    /// Per lane of `n`: a lower bound of the entry distance of any ray of the packet into
    /// the lane's box within `[min tmin, tmax]`, or `INFINITY` when no ray can enter it.
    #[inline(always)]
    pub(crate) fn entry4<const BEYOND: bool>(&self, n: &Node4, tmax: f64) -> [f64; WIDTH] {
        let mut enter = [if BEYOND { self.tmin_lo } else { 0.0 }; WIDTH];
        let mut leave = [tmax; WIDTH];
        let (los, his, os) = (self.lo.to_array(), self.hi.to_array(), self.o.to_array());
        let positive = [self.positive.x, self.positive.y, self.positive.z];
        for a in 0..3 {
            let (near, far) = if positive[a] { (&n.min[a], &n.max[a]) } else { (&n.max[a], &n.min[a]) };
            let (lo, hi, o) = (los[a], his[a], os[a]);
            for l in 0..WIDTH {
                let (dn, df) = (near[l] as f64 - o, far[l] as f64 - o);
                let (n0, n1) = (dn * lo, dn * hi);
                let (f0, f1) = (df * lo, df * hi);
                let t_in = if n0 < n1 { n0 } else { n1 };
                let t_out = if f0 > f1 { f0 } else { f1 };
                enter[l] = if t_in > enter[l] { t_in } else { enter[l] };
                leave[l] = if t_out < leave[l] { t_out } else { leave[l] };
            }
        }
        let mut out = [f64::INFINITY; WIDTH];
        for l in 0..WIDTH {
            if enter[l] <= leave[l] {
                out[l] = enter[l];
            }
        }
        out
    }
}
