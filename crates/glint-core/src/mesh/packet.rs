//! A packet of rays walked through a mesh's BVH together: each node's boxes and each leaf's
//! triangles tested on eight rays at a time, with [`Triangle::intersect`]'s arithmetic to the
//! bit, and each ray's closest hit kept as the one-ray walk keeps it (equal distances to the
//! lower source index). One walk serves a packet's rays where one walk per ray did, which
//! is where a camera's primary and shadow rays on real meshes spent their time.

use glam::DVec3;

use super::{Triangle, TriangleSet, Vertices};
use crate::bvh::{MaskedVisitor, Node4, WIDTH, inverse_direction};
use crate::isa::{Isa, Lanes, Mask};
use crate::lanes::{self, LANES};
use crate::packet::PACKET;
use crate::primitives::MINVAL;

/// Up to [`PACKET`] rays in a mesh's frame, and each one's closest hit so far.
pub(crate) struct LocalRays {
    /// Origins by axis, each ray's own (read by the `OWN` walk).
    origin: [[f64; PACKET]; 3],
    /// The origin the rays share (read by the other walk).
    shared: DVec3,
    dir: [[f64; PACKET]; 3],
    inv: [[f64; PACKET]; 3],
    /// Each ray's reach: its closest hit's distance so far, or the limit it came with.
    tmax: [f64; PACKET],
    /// The closest hit's stored triangle (−1: none) and its source index (∞: none), as
    /// floats (exact) so that the lanes compare and pick them with the distances.
    best: [f64; PACKET],
    best_source: [f64; PACKET],
}

impl LocalRays {
    /// Rays `r` of `mask` from `origin(r)` along `dir(r)` (in the mesh's frame) that reach
    /// `tmax[r]`; the other lanes are left at zero (the walk reads none of their answers).
    #[inline(always)]
    pub(crate) fn new(
        mask: u32,
        origin: impl Fn(usize) -> DVec3,
        dir: impl Fn(usize) -> DVec3,
        tmax: &[f64; PACKET],
    ) -> Self {
        let mut rays = LocalRays {
            origin: [[0.0; PACKET]; 3],
            dir: [[0.0; PACKET]; 3],
            inv: [[0.0; PACKET]; 3],
            tmax: *tmax,
            best: [-1.0; PACKET],
            best_source: [f64::INFINITY; PACKET],
            shared: origin(mask.trailing_zeros() as usize % PACKET),
        };
        let mut todo = mask;
        while todo != 0 {
            let r = todo.trailing_zeros() as usize;
            todo &= todo - 1;
            let (o, d) = (origin(r), dir(r));
            let inv = inverse_direction(d);
            for a in 0..3 {
                (rays.origin[a][r], rays.dir[a][r], rays.inv[a][r]) = (o[a], d[a], inv[a]);
            }
        }
        rays
    }

    /// Ray `r`'s closest hit after [`TriangleSet::closest_packet`] found one: its distance
    /// and the stored triangle.
    pub(crate) fn hit(&self, r: usize) -> (f64, usize) {
        (self.tmax[r], self.best[r] as usize)
    }
}

impl<V: Vertices> TriangleSet<V> {
    /// [`TriangleSet::closest`] of the rays of `mask` in `rays` (`OWN`: each from its own
    /// origin), all in one walk; returns the mask of rays that found a hit (read with
    /// [`LocalRays::hit`] and [`TriangleSet::stored_normal`]).
    #[inline(always)]
    pub(crate) fn closest_packet<I: Isa, const OWN: bool>(&self, isa: I, rays: &mut LocalRays, mask: u32) -> u32 {
        let mut walk = MeshWalk::<I, V, OWN> { isa, set: self, rays };
        self.bvh.walk_masked(mask, &mut walk);
        let mut found = 0u32;
        for (r, &best) in walk.rays.best.iter().enumerate() {
            if best >= 0.0 {
                found |= 1 << r;
            }
        }
        found & mask
    }

    /// The unnormalized winding normal of stored triangle `i`.
    pub(crate) fn stored_normal(&self, i: usize) -> DVec3 {
        self.tris[i].normal()
    }
}

/// The walk of [`TriangleSet::closest_packet`].
struct MeshWalk<'a, I, V, const OWN: bool> {
    isa: I,
    set: &'a TriangleSet<V>,
    rays: &'a mut LocalRays,
}

impl<I: Isa, V: Vertices, const OWN: bool> MeshWalk<'_, I, V, OWN> {
    /// Block `b` of the rays' origins along axis `a`.
    #[inline(always)]
    fn origin(&self, a: usize, b: usize) -> I::F {
        if OWN { lanes::load(self.isa, &self.rays.origin[a], b) } else { self.isa.splat(self.rays.shared[a]) }
    }
}

impl<I: Isa, V: Vertices, const OWN: bool> MaskedVisitor for MeshWalk<'_, I, V, OWN> {
    #[inline(always)]
    fn enter4(&self, node: &Node4, mask: u32) -> [(u32, f64); WIDTH] {
        let (isa, rays) = (self.isa, &*self.rays);
        let splat = |x| isa.splat(x);
        let nchild = node.nchild as usize;
        let mut entered = [0u32; WIDTH];
        let mut nearest = [splat(f64::INFINITY); WIDTH];
        // A block's rays are loaded once for the node's boxes.
        for b in 0..PACKET / LANES {
            let bits = (mask >> (LANES * b)) & 0xff;
            if bits == 0 {
                continue;
            }
            // Written out, not through `array::from_fn`: a closure it left out of line would
            // lose `I` (`Isa::run`).
            let inv = [
                lanes::load(isa, &rays.inv[0], b),
                lanes::load(isa, &rays.inv[1], b),
                lanes::load(isa, &rays.inv[2], b),
            ];
            let o = [self.origin(0, b), self.origin(1, b), self.origin(2, b)];
            // The slab each ray enters first, by its direction's sign (as `ray_entry4`).
            let negative = [inv[0].is_sign_negative(), inv[1].is_sign_negative(), inv[2].is_sign_negative()];
            let (tmax, active) = (lanes::load(isa, &rays.tmax, b), isa.of_bits(bits));
            for l in 0..nchild {
                let (mut near, mut far) = (splat(0.0), tmax);
                for a in 0..3 {
                    let (lo, hi) = (splat(node.min[a][l] as f64), splat(node.max[a][l] as f64));
                    let t0 = (negative[a].select(hi, lo) - o[a]) * inv[a];
                    let t1 = (negative[a].select(lo, hi) - o[a]) * inv[a];
                    (near, far) = (t0.fast_max(near), t1.fast_min(far));
                }
                let inside = near.simd_le(far) & active;
                entered[l] |= inside.to_bitmask() << (LANES * b);
                nearest[l] = inside.select(near, splat(f64::INFINITY)).fast_min(nearest[l]);
            }
        }
        let mut out = [(0u32, f64::INFINITY); WIDTH];
        for l in 0..nchild {
            if entered[l] != 0 {
                out[l] = (entered[l], lanes::least(nearest[l]));
            }
        }
        out
    }

    /// [`Triangle::intersect`] on the rays of `mask`, the same operations in the same order
    /// on every lane (the terms of the origin shared where the rays share it).
    #[inline(always)]
    fn prim(&mut self, prim: u32, mask: u32) {
        let isa = self.isa;
        let splat = |x| isa.splat(x);
        let tri: &Triangle<V> = &self.set.tris[prim as usize];
        let v0 = tri.vertex(0);
        let (e1, e2) = (tri.vertex(1) - v0, tri.vertex(2) - v0);
        let (source, stored) = (splat(self.set.source[prim as usize] as f64), splat(prim as f64));
        // s = o − v0, q = s × e1 and e2 · q, once for a shared origin.
        let shared = if OWN {
            None
        } else {
            let s = self.rays.shared - v0;
            let q = s.cross(e1);
            Some((s, q, e2.dot(q)))
        };
        for b in 0..PACKET / LANES {
            let bits = (mask >> (LANES * b)) & 0xff;
            if bits == 0 {
                continue;
            }
            let rays = &*self.rays;
            let d = [
                lanes::load(isa, &rays.dir[0], b),
                lanes::load(isa, &rays.dir[1], b),
                lanes::load(isa, &rays.dir[2], b),
            ];
            // Triangle::intersect's products, glam's cross and dot operation by operation.
            let p = lanes::cross(&d, &lanes::splat3(isa, e2));
            let det = lanes::dot(&lanes::splat3(isa, e1), &p);
            let inv = splat(1.0) / det;
            let (s, q, e2q) = match shared {
                Some((s, q, e2q)) => (lanes::splat3(isa, s), lanes::splat3(isa, q), splat(e2q)),
                None => {
                    let o = [self.origin(0, b), self.origin(1, b), self.origin(2, b)];
                    let v0 = lanes::splat3(isa, v0);
                    let s = [o[0] - v0[0], o[1] - v0[1], o[2] - v0[2]];
                    let q = lanes::cross(&s, &lanes::splat3(isa, e1));
                    (s, q, lanes::dot(&lanes::splat3(isa, e2), &q))
                }
            };
            let u = lanes::dot(&s, &p) * inv;
            let v = lanes::dot(&d, &q) * inv;
            let t = e2q * inv;
            let (zero, one) = (splat(0.0), splat(1.0));
            let hit = !det.abs().simd_lt(splat(MINVAL))
                & u.simd_ge(zero)
                & u.simd_le(one)
                & !v.simd_lt(zero)
                & !(u + v).simd_gt(one)
                & t.simd_ge(zero);
            let (tmax, best_source) = (lanes::load(isa, &rays.tmax, b), lanes::load(isa, &rays.best_source, b));
            // Closer, or as close from a lower source index (or first within the reach).
            let better = t.simd_lt(tmax) | (t.simd_eq(tmax) & source.simd_lt(best_source));
            let wins = hit & better & isa.of_bits(bits);
            if wins.to_bitmask() == 0 {
                continue;
            }
            let best = lanes::load(isa, &rays.best, b);
            let rays = &mut *self.rays;
            lanes::store(&mut rays.tmax, b, wins.select(t, tmax));
            lanes::store(&mut rays.best_source, b, wins.select(source, best_source));
            lanes::store(&mut rays.best, b, wins.select(stored, best));
        }
    }
}
