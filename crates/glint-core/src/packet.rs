//! Packets of coherent rays (one origin, directions with the same sign on every axis), which
//! traverse a BVH together: a node is entered when the packet's direction interval can enter
//! it, so one box test serves every ray of the packet. Lidar beams in scan order form such
//! packets almost everywhere; rays that do not go one at a time.

use glam::{BVec3, DMat3, DVec3};

use crate::bvh::{Aabb, inverse_direction};
use crate::primitives::to_local;

/// Rays per packet.
pub(crate) const PACKET: usize = 16;

/// Up to [`PACKET`] rays from one origin.
#[derive(Clone, Debug)]
pub(crate) struct Packet {
    pub o: DVec3,
    pub d: [DVec3; PACKET],
    pub inv: [DVec3; PACKET],
    pub n: usize,
    /// Per axis: whether the inverse directions are positive.
    positive: BVec3,
    /// Per-axis bounds of the inverse directions.
    lo: DVec3,
    hi: DVec3,
}

impl Packet {
    /// A packet of `dirs` (at most [`PACKET`]) from `o`, or `None` when some axis has
    /// directions of both signs.
    pub(crate) fn new(o: DVec3, dirs: &[DVec3]) -> Option<Packet> {
        debug_assert!(!dirs.is_empty() && dirs.len() <= PACKET);
        let mut p = Packet {
            o,
            d: [DVec3::ZERO; PACKET],
            inv: [DVec3::ZERO; PACKET],
            n: dirs.len(),
            positive: BVec3::FALSE,
            lo: DVec3::INFINITY,
            hi: DVec3::NEG_INFINITY,
        };
        for (k, &d) in dirs.iter().enumerate() {
            let inv = inverse_direction(d);
            p.d[k] = d;
            p.inv[k] = inv;
            p.lo = p.lo.min(inv);
            p.hi = p.hi.max(inv);
        }
        p.positive = p.lo.cmpgt(DVec3::ZERO);
        let negative = p.hi.cmplt(DVec3::ZERO);
        ((p.positive | negative).all()).then_some(p)
    }

    /// The same rays in the frame `(pos, rot)`, or `None` when they lose a common sign there.
    pub(crate) fn to_frame(&self, pos: DVec3, rot: &DMat3) -> Option<Packet> {
        let mut local = [DVec3::ZERO; PACKET];
        for k in 0..self.n {
            local[k] = to_local(rot, self.d[k]);
        }
        Packet::new(to_local(rot, self.o - pos), &local[..self.n])
    }

    /// A lower bound of the entry distance of any ray of the packet into `b` within
    /// `[0, tmax]`, or `None` when no ray can enter it.
    #[inline(always)]
    pub(crate) fn entry(&self, b: &Aabb, tmax: f64) -> Option<f64> {
        let near = DVec3::select(self.positive, b.min, b.max) - self.o;
        let far = DVec3::select(self.positive, b.max, b.min) - self.o;
        let enter = (near * self.lo).min(near * self.hi).max_element().max(0.0);
        let leave = (far * self.lo).max(far * self.hi).min_element().min(tmax);
        (enter <= leave).then_some(enter)
    }
}
