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

    /// Bytes the hierarchy holds on the heap.
    pub fn bytes(&self) -> usize {
        self.nodes.capacity() * size_of::<BinaryNode>()
            + self.prims.capacity() * size_of::<u32>()
            + self.wide.nodes.capacity() * size_of::<super::nodes::Node4>()
    }

    /// Primitive indices in leaf order; leaves refer to contiguous runs of this slice.
    pub fn prim_order(&self) -> &[u32] {
        &self.prims
    }

    /// Returns the primitive order and renumbers the primitives so that leaves refer to
    /// `0..n` in leaf order; the caller stores its primitives in the returned order.
    pub(crate) fn take_order(&mut self) -> Vec<u32> {
        let n = self.prims.len() as u32;
        std::mem::replace(&mut self.prims, (0..n).collect())
    }
}
