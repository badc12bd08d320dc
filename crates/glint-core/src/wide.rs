//! The 4-wide form of a [`Bvh`] that traversal uses: each node holds the boxes of up to four
//! children in structure-of-arrays layout, so one ray (or packet) tests all four with a few
//! vectorizable loops. It is derived from the binary tree by collapsing levels, and refitted
//! from the binary tree's boxes.

use glam::DVec3;

use crate::bvh::Aabb;

/// Lanes per node.
pub(crate) const WIDTH: usize = 4;
/// Traversal stack entries kept on the stack (about 21 levels of a 4-wide tree).
const STACK: usize = 64;

/// A 4-wide node. Lane `l < nchild` is a child: an interior node (`count[l] == 0`, `child[l]`
/// its index) or a leaf over `prims[child[l] .. child[l] + count[l]]`.
#[derive(Clone, Debug)]
pub(crate) struct Node4 {
    /// Lower corners per axis and lane, rounded down to single precision (conservative).
    pub(crate) min: [[f32; WIDTH]; 3],
    /// Upper corners per axis and lane, rounded up to single precision (conservative).
    pub(crate) max: [[f32; WIDTH]; 3],
    child: [u32; WIDTH],
    count: [u32; WIDTH],
    /// Binary node each lane stands for (for refits).
    src: [u32; WIDTH],
    nchild: u32,
}

/// The binary node data the collapse needs.
#[derive(Clone, Copy, Debug)]
pub(crate) struct BinaryNode {
    pub(crate) bounds: Aabb,
    /// Leaf: first entry of `prims`. Interior: index of the left child (the right is next).
    pub(crate) start: u32,
    /// Leaf: number of primitives (at least 1). Interior: 0.
    pub(crate) count: u32,
}

/// A traversal's decisions: which of a node's boxes it enters, and what to do with a
/// primitive.
pub(crate) trait Visitor {
    /// Entry distance into each lane's box (`f64::INFINITY` where it does not enter).
    fn entry4(&self, node: &Node4) -> [f64; WIDTH];
    /// Handles one primitive of a visited leaf; returns true to stop the traversal.
    fn prim(&mut self, prim: u32) -> bool;
}

#[derive(Clone, Debug, Default)]
pub(crate) struct Wide {
    nodes: Vec<Node4>,
}

impl Wide {
    /// Collapses a binary tree (root at 0, children of interior node `i` at `start` and
    /// `start + 1`).
    pub(crate) fn from_binary(bin: &[BinaryNode]) -> Wide {
        let mut wide = Wide { nodes: Vec::with_capacity(bin.len() / 2 + 1) };
        if bin.is_empty() {
            return wide;
        }
        if bin[0].count > 0 {
            // A single leaf: one node with one lane.
            wide.nodes.push(Wide::node_of(bin, &[0]));
            return wide;
        }
        let mut work = vec![(0usize, 0u32)];
        wide.nodes.push(Wide::node_of(bin, &[]));
        while let Some((slot, b)) = work.pop() {
            let lanes = Wide::expand(bin, b);
            wide.nodes[slot] = Wide::node_of(bin, &lanes);
            for (l, &c) in lanes.iter().enumerate() {
                if bin[c as usize].count == 0 {
                    let idx = wide.nodes.len();
                    wide.nodes.push(Wide::node_of(bin, &[]));
                    wide.nodes[slot].child[l] = idx as u32;
                    work.push((idx, c));
                }
            }
        }
        wide
    }

    /// Up to four binary descendants of interior node `b` covering it: the largest interior
    /// one is opened until there are four.
    fn expand(bin: &[BinaryNode], b: u32) -> Vec<u32> {
        let first = bin[b as usize].start;
        let mut lanes = vec![first, first + 1];
        while lanes.len() < WIDTH {
            let open =
                lanes.iter().enumerate().filter(|(_, c)| bin[**c as usize].count == 0).max_by(|a, b| {
                    bin[*a.1 as usize].bounds.half_area().total_cmp(&bin[*b.1 as usize].bounds.half_area())
                });
            let Some((i, &c)) = open else { break };
            let s = bin[c as usize].start;
            lanes[i] = s;
            lanes.push(s + 1);
        }
        lanes
    }

    fn node_of(bin: &[BinaryNode], lanes: &[u32]) -> Node4 {
        let mut n = Node4 {
            min: [[0.0; WIDTH]; 3],
            max: [[0.0; WIDTH]; 3],
            child: [0; WIDTH],
            count: [0; WIDTH],
            src: [0; WIDTH],
            nchild: lanes.len() as u32,
        };
        for (l, &c) in lanes.iter().enumerate() {
            let b = &bin[c as usize];
            n.src[l] = c;
            if b.count > 0 {
                n.child[l] = b.start;
                n.count[l] = b.count;
            }
        }
        n.set_boxes(bin);
        n
    }

    /// Copies the binary tree's (refitted) boxes into the wide nodes.
    pub(crate) fn refit(&mut self, bin: &[BinaryNode]) {
        for n in &mut self.nodes {
            n.set_boxes(bin);
        }
    }

    /// Front-to-back traversal: nearer lanes first; `v.prim` returns true to stop.
    #[inline(always)]
    pub(crate) fn walk(&self, prims: &[u32], v: &mut impl Visitor) -> bool {
        if self.nodes.is_empty() {
            return false;
        }
        // Entries are (index, count): count 0 is a wide node, otherwise a leaf run. A small
        // array serves every realistic tree (it is zeroed on each walk, so its size is paid
        // per ray); deeper trees spill into a vector, newest entries first.
        let mut stack = [(0u32, 0u32); STACK];
        let mut spill: Vec<(u32, u32)> = Vec::new();
        let mut top = 1usize;
        loop {
            let (index, count) = match spill.pop() {
                Some(entry) => entry,
                None if top > 0 => {
                    top -= 1;
                    stack[top]
                }
                None => break,
            };
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
            // Gather entered lanes, then push them farthest first.
            let mut order = [(0.0f64, 0usize); WIDTH];
            let mut n = 0;
            for (l, &tl) in t.iter().enumerate().take(node.nchild as usize) {
                if tl < f64::INFINITY {
                    let mut k = n;
                    while k > 0 && order[k - 1].0 < tl {
                        order[k] = order[k - 1];
                        k -= 1;
                    }
                    order[k] = (tl, l);
                    n += 1;
                }
            }
            for &(_, l) in &order[..n] {
                let entry = (node.child[l], node.count[l]);
                if spill.is_empty() && top < STACK {
                    stack[top] = entry;
                    top += 1;
                } else {
                    spill.push(entry);
                }
            }
        }
        false
    }
}

impl Node4 {
    fn set_boxes(&mut self, bin: &[BinaryNode]) {
        for l in 0..WIDTH {
            let b = if l < self.nchild as usize { bin[self.src[l] as usize].bounds } else { Aabb::EMPTY };
            // Empty lanes get a box no ray enters: a point at infinity-like distance.
            let (lo, hi) =
                if l < self.nchild as usize { (b.min, b.max) } else { (DVec3::splat(1e300), DVec3::splat(1e300)) };
            for a in 0..3 {
                self.min[a][l] = round_down(lo[a]);
                self.max[a][l] = round_up(hi[a]);
            }
        }
    }
}

/// Entry distances of one ray into four boxes within `[0, tmax]` (`INFINITY` on a miss).
/// `inv` comes from `inverse_direction`, so no lane computes `0 * inf`.
#[inline(always)]
pub(crate) fn ray_entry4(n: &Node4, o: DVec3, inv: DVec3, tmax: f64) -> [f64; WIDTH] {
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

/// The largest single-precision value not above `x`.
fn round_down(x: f64) -> f32 {
    let f = x as f32;
    if f as f64 > x { f.next_down() } else { f }
}

/// The smallest single-precision value not below `x`.
fn round_up(x: f64) -> f32 {
    let f = x as f32;
    if (f as f64) < x { f.next_up() } else { f }
}
