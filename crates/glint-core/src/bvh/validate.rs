//! The BVH's invariants, checked in tests.

use super::aabb::Aabb;
use super::tree::Bvh;

impl Bvh {
    /// Checks the invariants: every primitive appears once, every node's box holds its
    /// children's boxes and its primitives' boxes. Returns the first violation found.
    pub fn validate(&self, boxes: &[Aabb]) -> Result<(), String> {
        let mut seen = vec![false; boxes.len()];
        for &p in &self.prims {
            let p = p as usize;
            if p >= boxes.len() || std::mem::replace(&mut seen[p], true) {
                return Err(format!("primitive {p} is out of range or appears twice"));
            }
        }
        if seen.iter().any(|s| !s) {
            return Err("a primitive is missing from the hierarchy".into());
        }
        for (i, node) in self.nodes.iter().enumerate() {
            if node.count > 0 {
                for &p in &self.prims[node.start as usize..(node.start + node.count) as usize] {
                    if !node.bounds.contains(&boxes[p as usize]) {
                        return Err(format!("leaf {i} does not contain primitive {p}"));
                    }
                }
            } else {
                for c in [node.start as usize, node.start as usize + 1] {
                    if c <= i || c >= self.nodes.len() || !node.bounds.contains(&self.nodes[c].bounds) {
                        return Err(format!("node {i} does not contain child {c}"));
                    }
                }
            }
        }
        Ok(())
    }
}
