//! Building a BVH with a binned surface-area heuristic (median splits past a depth, which
//! bound the traversal stack for any input).

use glam::DVec3;

use super::aabb::Aabb;
use super::collapse::Bvh4;
use super::nodes::BinaryNode;
use super::tree::Bvh;

const BINS: usize = 32;
/// Below this depth splits follow the SAH; deeper ones split at the median, which bounds the
/// depth (and so the traversal stack) for any input.
const SAH_DEPTH: usize = 64;

impl Bvh {
    /// Builds a hierarchy over `boxes` with at most `max_leaf` primitives per leaf where a split
    /// is possible. An empty slice gives an empty hierarchy that every ray misses.
    pub fn build(boxes: &[Aabb], max_leaf: usize) -> Bvh {
        let mut bvh = Bvh {
            nodes: Vec::with_capacity(2 * boxes.len().max(1)),
            prims: (0..boxes.len() as u32).collect(),
            wide: Bvh4::default(),
        };
        if boxes.is_empty() {
            return bvh;
        }
        let centers: Vec<DVec3> = boxes.iter().map(Aabb::center).collect();
        bvh.nodes.push(BinaryNode { bounds: Aabb::EMPTY, start: 0, count: boxes.len() as u32 });
        let mut work = vec![(0usize, 1usize)];
        while let Some((node, depth)) = work.pop() {
            let (start, count) = (bvh.nodes[node].start as usize, bvh.nodes[node].count as usize);
            let range = start..start + count;
            let bounds = bvh.prims[range.clone()].iter().fold(Aabb::EMPTY, |b, &p| b.union(&boxes[p as usize]));
            bvh.nodes[node].bounds = bounds.padded();
            if count <= 1 {
                continue;
            }
            let prims = &mut bvh.prims[range];
            let mid = if depth < SAH_DEPTH {
                split(prims, boxes, &centers, &bounds, max_leaf)
            } else {
                split_median(prims, &centers)
            };
            let Some(mid) = mid else {
                continue;
            };
            let left = bvh.nodes.len();
            bvh.nodes.push(BinaryNode { bounds: Aabb::EMPTY, start: start as u32, count: mid as u32 });
            bvh.nodes.push(BinaryNode {
                bounds: Aabb::EMPTY,
                start: (start + mid) as u32,
                count: (count - mid) as u32,
            });
            bvh.nodes[node] = BinaryNode { bounds: bvh.nodes[node].bounds, start: left as u32, count: 0 };
            work.push((left, depth + 1));
            work.push((left + 1, depth + 1));
        }
        bvh.wide = Bvh4::from_binary(&bvh.nodes);
        bvh
    }
}

/// Splits `prims` in place along the best binned-SAH plane; returns the size of the left part,
/// or `None` when a leaf is cheaper (or no split separates the centers).
#[inline]
fn split(prims: &mut [u32], boxes: &[Aabb], centers: &[DVec3], bounds: &Aabb, max_leaf: usize) -> Option<usize> {
    let cb = prims.iter().fold(Aabb::EMPTY, |b, &p| b.grow(centers[p as usize]));
    let extent = cb.max - cb.min;
    let axis = if extent.x >= extent.y && extent.x >= extent.z {
        0
    } else if extent.y >= extent.z {
        1
    } else {
        2
    };
    let (lo, span) = (cb.min[axis], extent[axis]);
    if span <= 0.0 {
        return None;
    }
    let bin_of = |p: u32| (((centers[p as usize][axis] - lo) / span * BINS as f64) as usize).min(BINS - 1);
    let mut bin_box = [Aabb::EMPTY; BINS];
    let mut bin_n = [0usize; BINS];
    for &p in prims.iter() {
        let b = bin_of(p);
        bin_box[b] = bin_box[b].union(&boxes[p as usize]);
        bin_n[b] += 1;
    }
    // Sweep from the right to get the cost of every right part, then from the left.
    let mut right_area = [0.0; BINS];
    let (mut acc, mut n) = (Aabb::EMPTY, 0usize);
    let mut right_n = [0usize; BINS];
    for i in (1..BINS).rev() {
        acc = acc.union(&bin_box[i]);
        n += bin_n[i];
        right_area[i] = acc.half_area();
        right_n[i] = n;
    }
    let (mut best_cost, mut best_bin) = (f64::INFINITY, 0);
    let (mut acc, mut n) = (Aabb::EMPTY, 0usize);
    for i in 0..BINS - 1 {
        acc = acc.union(&bin_box[i]);
        n += bin_n[i];
        if n == 0 || right_n[i + 1] == 0 {
            continue;
        }
        let cost = acc.half_area() * n as f64 + right_area[i + 1] * right_n[i + 1] as f64;
        if cost < best_cost {
            best_cost = cost;
            best_bin = i;
        }
    }
    let leaf_cost = bounds.half_area() * prims.len() as f64;
    if !best_cost.is_finite() || (prims.len() <= max_leaf && best_cost + bounds.half_area() >= leaf_cost) {
        return None;
    }
    let mut mid = 0;
    for i in 0..prims.len() {
        if bin_of(prims[i]) <= best_bin {
            prims.swap(i, mid);
            mid += 1;
        }
    }
    (mid > 0 && mid < prims.len()).then_some(mid)
}

/// Splits `prims` at the median center along the axis of largest center spread.
#[inline]
fn split_median(prims: &mut [u32], centers: &[DVec3]) -> Option<usize> {
    let cb = prims.iter().fold(Aabb::EMPTY, |b, &p| b.grow(centers[p as usize]));
    let e = cb.max - cb.min;
    let axis = if e.x >= e.y && e.x >= e.z {
        0
    } else if e.y >= e.z {
        1
    } else {
        2
    };
    let mid = prims.len() / 2;
    prims.select_nth_unstable_by(mid, |&a, &b| centers[a as usize][axis].total_cmp(&centers[b as usize][axis]));
    Some(mid)
}
