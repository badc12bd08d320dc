//! The BVH type: a binary tree over primitive boxes, its primitive order, and the 4-wide
//! form derived from it.

use super::collapse::Bvh4;
use super::nodes::BinaryNode;

/// A binary BVH over primitive boxes. Primitives are referred to by their index in the box
/// slice given to [`Bvh::build`].
#[derive(Clone, Debug)]
pub struct Bvh {
    pub(super) nodes: Vec<BinaryNode>,
    pub(super) prims: Vec<u32>,
    /// The 4-wide form traversal uses, derived from `nodes`.
    pub(super) wide: Bvh4,
}

impl Bvh {
    /// Number of primitives.
    pub fn len(&self) -> usize {
        self.prims.len()
    }

    /// Whether the hierarchy holds no primitives.
    pub fn is_empty(&self) -> bool {
        self.prims.is_empty()
    }

    /// Number of nodes.
    pub fn node_count(&self) -> usize {
        self.nodes.len()
    }

    /// Primitive indices in leaf order; leaves refer to contiguous runs of this slice.
    pub fn prim_order(&self) -> &[u32] {
        &self.prims
    }

    /// Depth of the deepest leaf (1 for a single leaf), for tests and statistics.
    pub fn depth(&self) -> usize {
        fn go(nodes: &[BinaryNode], i: usize) -> usize {
            let n = nodes[i];
            if n.count > 0 { 1 } else { 1 + go(nodes, n.start as usize).max(go(nodes, n.start as usize + 1)) }
        }
        if self.nodes.is_empty() { 0 } else { go(&self.nodes, 0) }
    }

    /// Returns the primitive order and renumbers the primitives so that leaves refer to
    /// `0..n` in leaf order; the caller stores its primitives in the returned order.
    pub(crate) fn take_order(&mut self) -> Vec<u32> {
        let n = self.prims.len() as u32;
        std::mem::replace(&mut self.prims, (0..n).collect())
    }
}
