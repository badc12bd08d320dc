//! The two node layouts: the binary tree's nodes, which the build and the refits write, and
//! the 4-wide nodes that traversal reads, each holding the boxes of up to four children in
//! structure-of-arrays layout so that one ray (or packet) tests all four with a few
//! vectorizable loops.

use glam::DVec3;

use super::aabb::Aabb;

/// Lanes per node.
pub(crate) const WIDTH: usize = 4;

/// A 4-wide node. Lane `l < nchild` is a child: an interior node (`count[l] == 0`, `child[l]`
/// its index) or a leaf over `prims[child[l] .. child[l] + count[l]]`.
#[derive(Clone, Debug)]
pub(crate) struct Node4 {
    /// Lower corners per axis and lane, rounded down to single precision (conservative).
    pub(crate) min: [[f32; WIDTH]; 3],
    /// Upper corners per axis and lane, rounded up to single precision (conservative).
    pub(crate) max: [[f32; WIDTH]; 3],
    pub(super) child: [u32; WIDTH],
    pub(super) count: [u32; WIDTH],
    /// Binary node each lane stands for (for refits).
    pub(super) src: [u32; WIDTH],
    pub(crate) nchild: u32,
}

/// A node of the binary tree: a leaf over a run of the primitive order, or an interior node
/// whose two children sit next to each other.
#[derive(Clone, Copy, Debug)]
pub(super) struct BinaryNode {
    pub(super) bounds: Aabb,
    /// Leaf: first entry of `prims`. Interior: index of the left child (the right is next).
    pub(super) start: u32,
    /// Leaf: number of primitives (at least 1). Interior: 0.
    pub(super) count: u32,
}

impl Node4 {
    /// Copies the boxes of the binary nodes its lanes stand for, rounded outward to single
    /// precision.
    pub(super) fn set_boxes(&mut self, bin: &[BinaryNode]) {
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
