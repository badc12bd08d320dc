//! Refitting a BVH to moved primitive boxes, keeping the tree's shape.

use super::aabb::Aabb;
use super::tree::Bvh;

impl Bvh {
    /// Recomputes every node's bounds from new primitive boxes (same count and order as at
    /// build time), keeping the tree's shape.
    pub fn refit(&mut self, boxes: &[Aabb]) {
        debug_assert_eq!(boxes.len(), self.prims.len());
        // Children always sit after their parent, so a reverse sweep sees them first.
        for i in (0..self.nodes.len()).rev() {
            let node = self.nodes[i];
            let bounds = if node.count > 0 {
                let range = node.start as usize..(node.start + node.count) as usize;
                self.prims[range].iter().fold(Aabb::EMPTY, |b, &p| b.union(&boxes[p as usize])).padded()
            } else {
                let (l, r) = (node.start as usize, node.start as usize + 1);
                self.nodes[l].bounds.union(&self.nodes[r].bounds)
            };
            self.nodes[i].bounds = bounds;
        }
        self.wide.refit(&self.nodes);
    }
}
