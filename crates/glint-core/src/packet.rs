//! Packets of coherent rays (one origin, directions with the same sign on every axis), which
//! traverse a BVH together: a node is entered when the packet's direction interval can enter
//! it, so one box test serves every ray of the packet. Lidar beams in scan order form such
//! packets almost everywhere; rays that do not go one at a time.

use glam::{BVec3, DMat3, DVec3};

use crate::bvh::{Aabb, Node4, WIDTH};
use crate::isa::{Isa, Lanes, Mask};
use crate::lanes::{self, LANES};
use crate::primitives::{MINVAL, to_local};

/// Rays per packet (ray masks are `u32`). With spinning scans cast in 4 × 4 tiles, a packet
/// is 4 bins × 8 channels.
pub(crate) const PACKET: usize = 32;
const _: () = assert!(PACKET <= 32);

/// Up to [`PACKET`] rays from one origin (or, in the `OWN` forms of the tests, each from its
/// own origin).
#[derive(Clone, Debug)]
pub(crate) struct Packet {
    pub o: DVec3,
    pub n: usize,
    /// Inverse directions by axis (structure of arrays, for vectorized per-ray box tests).
    inv_axis: [[f64; PACKET]; 3],
    /// Directions by axis (unused lanes repeat ray 0).
    pub(crate) dir_axis: [[f64; PACKET]; 3],
    /// Bit `r` set for each ray `r < n`.
    lanes: u32,
    /// Each ray's own origin by axis, read only by the `OWN` forms of the tests below (set by
    /// [`Packet::set_origins`]). Unused lanes repeat ray 0. Other packets start at `o`, and
    /// their tests do not pay for this.
    origin_axis: [[f64; PACKET]; 3],
    /// Per-axis bounds of the origins.
    origin_lo: DVec3,
    origin_hi: DVec3,

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
            n: 0,
            inv_axis: [[1.0; PACKET]; 3],
            dir_axis: [[1.0; PACKET]; 3],
            lanes: 0,
            origin_axis: [[0.0; PACKET]; 3],
            origin_lo: DVec3::ZERO,
            origin_hi: DVec3::ZERO,
            positive: BVec3::FALSE,
            lo: DVec3::INFINITY,
            hi: DVec3::NEG_INFINITY,
        }
    }

    /// Refills the packet with the rays from `o` along `dirs` (1 to [`PACKET`] of them);
    /// returns false when some axis has directions of both signs.
    #[inline]
    pub(crate) fn set<I: Isa>(&mut self, isa: I, o: DVec3, dirs: &[DVec3]) -> bool {
        isa.run(
            #[inline(always)]
            || self.set_on(isa, o, dirs),
        )
    }

    /// [`Packet::set`]'s body, compiled for `I`.
    #[inline(always)]
    fn set_on<I: Isa>(&mut self, isa: I, o: DVec3, dirs: &[DVec3]) -> bool {
        let n = dirs.len();
        debug_assert!(n > 0 && n <= PACKET);
        self.o = o;
        self.n = n;
        self.lanes = u32::MAX >> (32 - n);
        // Unused lanes repeat ray 0. A whole packet is transposed from a fixed-size array, which
        // the compiler turns into vector shuffles; scalar stores read back by the vector loops
        // below would stall on store forwarding.
        let padded: [DVec3; PACKET];
        let whole: &[DVec3; PACKET] = match dirs.try_into() {
            Ok(all) => all,
            Err(_) => {
                padded = std::array::from_fn(|k| dirs[if k < n { k } else { 0 }]);
                &padded
            }
        };
        // `from_fn`, not `map`: `map` was left out of line.
        self.dir_axis = [
            std::array::from_fn(|k| whole[k].x),
            std::array::from_fn(|k| whole[k].y),
            std::array::from_fn(|k| whole[k].z),
        ];
        // Inverses eight lanes at a time, with their bounds.
        let splat = |x| isa.splat(x);
        let (mut lo, mut hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
        for a in 0..3 {
            let (mut lo_lanes, mut hi_lanes) = (splat(f64::INFINITY), splat(f64::NEG_INFINITY));
            for b in 0..PACKET / LANES {
                let d = lanes::load(isa, &self.dir_axis[a], b);
                let tiny = d.is_sign_negative().select(splat(-1e300), splat(1e300));
                let inv = d.abs().simd_gt(splat(1e-300)).select(splat(1.0) / d, tiny);
                lanes::store(&mut self.inv_axis[a], b, inv);
                (lo_lanes, hi_lanes) = (inv.fast_min(lo_lanes), inv.fast_max(hi_lanes));
            }
            (lo[a], hi[a]) = (lanes::least(lo_lanes), lanes::greatest(hi_lanes));
        }
        (self.lo, self.hi) = (lo, hi);
        self.positive = lo.cmpgt(DVec3::ZERO);
        (self.positive | hi.cmplt(DVec3::ZERO)).all()
    }

    /// Ray `k`'s direction.
    #[inline(always)]
    pub(crate) fn dir(&self, k: usize) -> DVec3 {
        DVec3::new(self.dir_axis[0][k], self.dir_axis[1][k], self.dir_axis[2][k])
    }

    /// Gives ray `k` its own origin `origin(k)`, for the `OWN` tests: rays folded by a mirror
    /// or refracted into water start from where each beam met it.
    pub(crate) fn set_origins(&mut self, origin: impl Fn(usize) -> DVec3) {
        for k in 0..PACKET {
            let o = if k < self.n { origin(k) } else { self.origin(0) };
            for a in 0..3 {
                self.origin_axis[a][k] = o[a];
            }
        }
        let (mut lo, mut hi) = (DVec3::INFINITY, DVec3::NEG_INFINITY);
        for a in 0..3 {
            (lo[a], hi[a]) = min_max(&self.origin_axis[a]);
        }
        (self.origin_lo, self.origin_hi) = (lo, hi);
    }

    /// Ray `k`'s origin in the `OWN` tests.
    #[inline(always)]
    pub(crate) fn origin(&self, k: usize) -> DVec3 {
        DVec3::new(self.origin_axis[0][k], self.origin_axis[1][k], self.origin_axis[2][k])
    }

    /// Where each ray meets a plane geom at `(pos, rot)` with `size` (MuJoCo's `ray_plane`:
    /// front face only, `t >= 0`, inside the rectangle when the size is positive), as arrays
    /// over the packet; `INFINITY` where a ray misses.
    #[inline(always)]
    pub(crate) fn plane<const OWN: bool>(&self, pos: DVec3, rot: &DMat3, size: DVec3) -> [f64; PACKET] {
        let shared = to_local(rot, self.o - pos);
        let (ax, ay, az) = (rot.x_axis, rot.y_axis, rot.z_axis);
        let [dx, dy, dz] = &self.dir_axis;
        let mut out = [f64::INFINITY; PACKET];
        for r in 0..PACKET {
            let lpnt = if OWN { to_local(rot, self.origin(r) - pos) } else { shared };
            // Same operation order as `to_local`, so the values equal the one-ray path's.
            let lx = ax.x * dx[r] + ax.y * dy[r] + ax.z * dz[r];
            let ly = ay.x * dx[r] + ay.y * dy[r] + ay.z * dz[r];
            let lz = az.x * dx[r] + az.y * dy[r] + az.z * dz[r];
            let t = -lpnt.z / lz;
            let (px, py) = (lpnt.x + t * lx, lpnt.y + t * ly);
            let inside = (size.x <= 0.0 || px.abs() <= size.x) && (size.y <= 0.0 || py.abs() <= size.y);
            if lz <= -MINVAL && t >= 0.0 && inside {
                out[r] = t;
            }
        }
        out
    }

    /// Bit mask of the rays `r` whose segment `[0, tmax[r]]` enters `b`.
    #[inline(always)]
    pub(crate) fn enters<I: Isa, const OWN: bool>(&self, isa: I, b: &Aabb, tmax: &[f64; PACKET]) -> u32 {
        let (o, bmin, bmax) = (self.o.to_array(), b.min.to_array(), b.max.to_array());
        let positive = [self.positive.x, self.positive.y, self.positive.z];
        let slabs: [(f64, f64); 3] =
            std::array::from_fn(|a| if positive[a] { (bmin[a], bmax[a]) } else { (bmax[a], bmin[a]) });
        let splat = |x| isa.splat(x);
        let mut mask = 0u32;
        for blk in 0..PACKET / LANES {
            let (mut near, mut far) = (splat(0.0), lanes::load(isa, tmax, blk));
            for (a, &(lo, hi)) in slabs.iter().enumerate() {
                let o = if OWN { lanes::load(isa, &self.origin_axis[a], blk) } else { splat(o[a]) };
                let inv = lanes::load(isa, &self.inv_axis[a], blk);
                let (t0, t1) = ((splat(lo) - o) * inv, (splat(hi) - o) * inv);
                // The hardware's `t0 > near ? t0 : near`, and likewise for the far end.
                (near, far) = (t0.fast_max(near), t1.fast_min(far));
            }
            mask |= near.simd_le(far).to_bitmask() << (LANES * blk);
        }
        mask & self.lanes
    }

    /// Per lane of `n`: a lower bound of the entry distance of any ray of the packet into
    /// the lane's box within `[0, tmax]`, or `INFINITY` when no ray can enter it.
    #[inline(always)]
    pub(crate) fn entry4<const OWN: bool>(&self, n: &Node4, tmax: f64) -> [f64; WIDTH] {
        let mut enter = [0.0; WIDTH];
        let mut leave = [tmax; WIDTH];
        let (los, his) = (self.lo.to_array(), self.hi.to_array());
        // The packet's origins lie in [o_lo, o_hi] (one point unless `OWN`).
        let (o_los, o_his) = if OWN { (self.origin_lo, self.origin_hi) } else { (self.o, self.o) };
        let (o_los, o_his) = (o_los.to_array(), o_his.to_array());
        let positive = [self.positive.x, self.positive.y, self.positive.z];
        let min = |a: f64, b: f64| if a < b { a } else { b };
        let max = |a: f64, b: f64| if a > b { a } else { b };
        for a in 0..3 {
            let (near, far) = if positive[a] { (&n.min[a], &n.max[a]) } else { (&n.max[a], &n.min[a]) };
            let (lo, hi, o_lo, o_hi) = (los[a], his[a], o_los[a], o_his[a]);
            for l in 0..WIDTH {
                // Bounds of (plane − origin) · inverse over both intervals: the corners.
                let (n0, n1) = ((near[l] as f64 - o_hi) * lo, (near[l] as f64 - o_hi) * hi);
                let (f0, f1) = ((far[l] as f64 - o_lo) * lo, (far[l] as f64 - o_lo) * hi);
                let (mut t_in, mut t_out) = (min(n0, n1), max(f0, f1));
                if OWN {
                    let (n2, n3) = ((near[l] as f64 - o_lo) * lo, (near[l] as f64 - o_lo) * hi);
                    let (f2, f3) = ((far[l] as f64 - o_hi) * lo, (far[l] as f64 - o_hi) * hi);
                    (t_in, t_out) = (min(t_in, min(n2, n3)), max(t_out, max(f2, f3)));
                }
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

/// The least and the greatest of the packet's lanes `x` (none NaN).
#[inline(always)]
fn min_max(x: &[f64; PACKET]) -> (f64, f64) {
    (fold_lanes(x, PACKET, f64::INFINITY, |v, m| v < m), fold_lanes(x, PACKET, f64::NEG_INFINITY, |v, m| v > m))
}

/// The lane of `x`'s first `n` (none NaN) that `better` keeps over every other, or `init`
/// when none beats it: eight lanes at a time, since one fold along all 32 is a chain of
/// dependent scalar comparisons.
#[inline(always)]
pub(crate) fn fold_lanes(x: &[f64; PACKET], n: usize, init: f64, better: impl Fn(f64, f64) -> bool) -> f64 {
    const W: usize = 8;
    let mut m = [init; W];
    for (k, chunk) in x.chunks_exact(W).enumerate() {
        for i in 0..W {
            let v = if k * W + i < n { chunk[i] } else { init };
            m[i] = if better(v, m[i]) { v } else { m[i] };
        }
    }
    m.iter().fold(init, |m, &v| if better(v, m) { v } else { m })
}
