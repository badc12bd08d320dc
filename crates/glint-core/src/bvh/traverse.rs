//! Front-to-back traversal of the 4-wide tree, driven by a visitor: the closest-hit and
//! any-hit walks of one ray, and the hook packets use.

use glam::DVec3;

use super::collapse::Bvh4;
use super::nodes::{Node4, WIDTH};
use super::tree::Bvh;

/// Traversal stack entries kept on the stack (about 21 levels of a 4-wide tree).
const STACK: usize = 64;

/// A packet's traversal: which of its rays enter each of a node's boxes, and what to do
/// with a primitive for the rays that entered its leaf.
pub(crate) trait MaskedVisitor {
    /// Per lane of `node`: the rays of `mask` (bit per ray) that enter its box, and a lower
    /// bound of their entry distances (the order children are visited in).
    fn enter4(&self, node: &Node4, mask: u32) -> [(u32, f64); WIDTH];
    /// Handles one primitive of a visited leaf for the rays of `mask`.
    fn prim(&mut self, prim: u32, mask: u32);
}

/// A traversal's decisions: which of a node's boxes it enters, and what to do with a
/// primitive.
pub(crate) trait Visitor {
    /// Entry distance into each lane's box (`f64::INFINITY` where it does not enter).
    fn entry4(&self, node: &Node4) -> [f64; WIDTH];
    /// Handles one primitive of a visited leaf; returns true to stop the traversal.
    fn prim(&mut self, prim: u32) -> bool;
}

impl Bvh {
    /// Visits leaves front to back along the ray and calls `hit(prim, tmax)` for each of their
    /// primitives; `hit` returns the primitive's distance when it is closer than (or ties with)
    /// `tmax`, which then shrinks. Returns the final `tmax`. Always inlined, so that the walk
    /// is compiled for the instruction set its caller runs on (`crate::isa`).
    #[inline(always)]
    pub fn closest(&self, origin: DVec3, inv_dir: DVec3, tmax: f64, hit: impl FnMut(u32, f64) -> Option<f64>) -> f64 {
        struct Closest<F> {
            origin: DVec3,
            inv_dir: DVec3,
            tmax: f64,
            hit: F,
        }
        impl<F: FnMut(u32, f64) -> Option<f64>> Visitor for Closest<F> {
            #[inline(always)]
            fn entry4(&self, n: &Node4) -> [f64; WIDTH] {
                ray_entry4(n, self.origin, self.inv_dir, self.tmax)
            }
            #[inline(always)]
            fn prim(&mut self, prim: u32) -> bool {
                if let Some(t) = (self.hit)(prim, self.tmax) {
                    self.tmax = t;
                }
                false
            }
        }
        let mut v = Closest { origin, inv_dir, tmax, hit };
        self.walk(&mut v);
        v.tmax
    }

    /// Whether `hit(prim)` is true for any primitive whose box the ray segment `[0, tmax]`
    /// crosses; stops at the first. Always inlined, as [`Bvh::closest`] is.
    #[inline(always)]
    pub fn any(&self, origin: DVec3, inv_dir: DVec3, tmax: f64, hit: impl FnMut(u32) -> bool) -> bool {
        struct Any<F> {
            origin: DVec3,
            inv_dir: DVec3,
            tmax: f64,
            hit: F,
        }
        impl<F: FnMut(u32) -> bool> Visitor for Any<F> {
            #[inline(always)]
            fn entry4(&self, n: &Node4) -> [f64; WIDTH] {
                ray_entry4(n, self.origin, self.inv_dir, self.tmax)
            }
            #[inline(always)]
            fn prim(&mut self, prim: u32) -> bool {
                (self.hit)(prim)
            }
        }
        self.walk(&mut Any { origin, inv_dir, tmax, hit })
    }

    /// A packet's traversal driven by `v`, starting with the rays of `mask`: each subtree is
    /// entered by the rays that enter its box, nearer subtrees first, and each leaf's
    /// primitives are handed over with the rays that reached them.
    #[inline(always)]
    pub(crate) fn walk_masked(&self, mask: u32, v: &mut impl MaskedVisitor) {
        self.wide.walk_masked(&self.prims, mask, v)
    }

    /// Front-to-back traversal driven by `v`: subtrees whose box `v.entry4` rejects are
    /// skipped, nearer children are visited first, and `v.prim` returns true to stop.
    /// Returns whether it stopped early.
    #[inline(always)]
    pub(crate) fn walk(&self, v: &mut impl Visitor) -> bool {
        self.wide.walk(&self.prims, v)
    }
}

/// A walk's stack of entries (index, count and, for a packet, its rays): count 0 is a
/// wide node, otherwise a leaf run. A small array serves every realistic tree (it is zeroed
/// on each walk, so its size is paid per ray: one ray's entries carry no rays); deeper trees
/// spill into a vector, newest entries first.
struct WalkStack<E> {
    fixed: [E; STACK],
    top: usize,
    spill: Vec<E>,
}

/// An entry of a [`WalkStack`].
trait StackEntry: Copy {
    fn new(index: u32, count: u32, rays: u32) -> Self;
    /// Index, count and rays.
    fn parts(self) -> (u32, u32, u32);
}

impl StackEntry for (u32, u32) {
    #[inline(always)]
    fn new(index: u32, count: u32, _: u32) -> Self {
        (index, count)
    }
    #[inline(always)]
    fn parts(self) -> (u32, u32, u32) {
        (self.0, self.1, 0)
    }
}

impl StackEntry for (u32, u32, u32) {
    #[inline(always)]
    fn new(index: u32, count: u32, rays: u32) -> Self {
        (index, count, rays)
    }
    #[inline(always)]
    fn parts(self) -> (u32, u32, u32) {
        self
    }
}

impl<E: StackEntry> WalkStack<E> {
    /// The root node, reached by `rays`.
    #[inline(always)]
    fn new(rays: u32) -> Self {
        let mut fixed = [E::new(0, 0, 0); STACK];
        fixed[0] = E::new(0, 0, rays);
        WalkStack { fixed, top: 1, spill: Vec::new() }
    }

    /// The next entry's index, count and rays.
    #[inline(always)]
    fn pop(&mut self) -> Option<(u32, u32, u32)> {
        match self.spill.pop() {
            Some(entry) => Some(entry.parts()),
            None if self.top > 0 => {
                self.top -= 1;
                Some(self.fixed[self.top].parts())
            }
            None => None,
        }
    }

    /// Pushes the children of `node` that `entered(l)` admits (their entry distance and
    /// rays), farthest first, so that the nearest is popped first.
    #[inline(always)]
    fn push_children(&mut self, node: &Node4, entered: impl Fn(usize) -> Option<(f64, u32)>) {
        let mut order = [(0.0f64, 0usize, 0u32); WIDTH];
        let mut n = 0;
        for l in 0..node.nchild as usize {
            if let Some((tl, rays)) = entered(l) {
                let mut k = n;
                while k > 0 && order[k - 1].0 < tl {
                    order[k] = order[k - 1];
                    k -= 1;
                }
                order[k] = (tl, l, rays);
                n += 1;
            }
        }
        for &(_, l, rays) in &order[..n] {
            let entry = E::new(node.child[l], node.count[l], rays);
            if self.spill.is_empty() && self.top < STACK {
                self.fixed[self.top] = entry;
                self.top += 1;
            } else {
                self.spill.push(entry);
            }
        }
    }
}

impl Bvh4 {
    /// Front-to-back traversal: nearer lanes first; `v.prim` returns true to stop.
    #[inline(always)]
    pub(super) fn walk(&self, prims: &[u32], v: &mut impl Visitor) -> bool {
        if self.nodes.is_empty() {
            return false;
        }
        let mut stack = WalkStack::<(u32, u32)>::new(0);
        while let Some((index, count, _)) = stack.pop() {
            if count > 0 {
                for &p in &prims[index as usize..(index + count) as usize] {
                    if v.prim(p) {
                        return true;
                    }
                }
                continue;
            }
            let node = &self.nodes[index as usize];
            let t = v.entry4(node);
            stack.push_children(node, |l| (t[l] < f64::INFINITY).then_some((t[l], 0)));
        }
        false
    }

    /// [`Bvh::walk_masked`].
    #[inline(always)]
    fn walk_masked(&self, prims: &[u32], mask: u32, v: &mut impl MaskedVisitor) {
        if self.nodes.is_empty() || mask == 0 {
            return;
        }
        let mut stack = WalkStack::<(u32, u32, u32)>::new(mask);
        while let Some((index, count, rays)) = stack.pop() {
            if count > 0 {
                for &p in &prims[index as usize..(index + count) as usize] {
                    v.prim(p, rays);
                }
                continue;
            }
            let node = &self.nodes[index as usize];
            let entered = v.enter4(node, rays);
            stack.push_children(node, |l| (entered[l].0 != 0).then_some((entered[l].1, entered[l].0)));
        }
    }
}

/// Entry distances of one ray into four boxes within `[0, tmax]` (`INFINITY` on a miss).
/// `inv` comes from `inverse_direction`, so no lane computes `0 * inf`.
#[inline(always)]
fn ray_entry4(n: &Node4, o: DVec3, inv: DVec3, tmax: f64) -> [f64; WIDTH] {
    let mut near = [0.0f64; WIDTH];
    let mut far = [tmax; WIDTH];
    // Arrays, not glam's runtime-indexed vectors (whose `[a]` is a branch).
    let (o, inv) = (o.to_array(), inv.to_array());
    for a in 0..3 {
        let (lo, hi) = if inv[a] >= 0.0 { (&n.min[a], &n.max[a]) } else { (&n.max[a], &n.min[a]) };
        for l in 0..WIDTH {
            let t0 = (lo[l] as f64 - o[a]) * inv[a];
            let t1 = (hi[l] as f64 - o[a]) * inv[a];
            near[l] = if t0 > near[l] { t0 } else { near[l] };
            far[l] = if t1 < far[l] { t1 } else { far[l] };
        }
    }
    let mut out = [f64::INFINITY; WIDTH];
    for l in 0..WIDTH {
        if near[l] <= far[l] {
            out[l] = near[l];
        }
    }
    out
}
