//! The 4-wide tree that traversal walks, collapsed from the binary tree (up to four of its
//! descendants per node) and refitted from the binary tree's boxes.

use super::nodes::{BinaryNode, Node4, WIDTH};

/// The 4-wide form of a binary tree.
#[derive(Clone, Debug, Default)]
pub(super) struct Bvh4 {
    pub(super) nodes: Vec<Node4>,
}

impl Bvh4 {
    /// Collapses a binary tree (root at 0, children of interior node `i` at `start` and
    /// `start + 1`).
    pub(super) fn from_binary(bin: &[BinaryNode]) -> Bvh4 {
        let mut wide = Bvh4 { nodes: Vec::with_capacity(bin.len() / 2 + 1) };
        if bin.is_empty() {
            return wide;
        }
        if bin[0].count > 0 {
            // A single leaf: one node with one lane.
            wide.nodes.push(Bvh4::node_of(bin, &[0]));
            return wide;
        }
        let mut work = vec![(0usize, 0u32)];
        wide.nodes.push(Bvh4::node_of(bin, &[]));
        while let Some((slot, b)) = work.pop() {
            let lanes = Bvh4::expand(bin, b);
            wide.nodes[slot] = Bvh4::node_of(bin, &lanes);
            for (l, &c) in lanes.iter().enumerate() {
                if bin[c as usize].count == 0 {
                    let idx = wide.nodes.len();
                    wide.nodes.push(Bvh4::node_of(bin, &[]));
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
    pub(super) fn refit(&mut self, bin: &[BinaryNode]) {
        for n in &mut self.nodes {
            n.set_boxes(bin);
        }
    }
}
