//! A bounding volume hierarchy that knows only boxes: built once with a binned surface-area
//! heuristic, refitted in place when the boxes move, and traversed front to back with a
//! caller's intersection closure. Used for mesh and height-field triangles (bottom level) and
//! for the geoms of one world (top level).

use glam::DVec3;

use crate::wide::{BinaryNode, Wide, ray_entry4};
pub(crate) use crate::wide::{Node4, Visitor, WIDTH};

/// An axis-aligned box. An empty box has `min > max` on every axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner.
    pub min: DVec3,
    /// Upper corner.
    pub max: DVec3,
}

impl Aabb {
    /// The box that contains nothing; the identity of [`Aabb::union`].
    pub const EMPTY: Aabb = Aabb { min: DVec3::splat(f64::INFINITY), max: DVec3::splat(f64::NEG_INFINITY) };

    /// A box from its center and half-extents.
    pub fn from_center_half(center: DVec3, half: DVec3) -> Self {
        Aabb { min: center - half, max: center + half }
    }

    /// The smallest box holding `self` and `other`.
    pub fn union(&self, other: &Aabb) -> Aabb {
        Aabb { min: self.min.min(other.min), max: self.max.max(other.max) }
    }

    /// The smallest box holding `self` and the point `p`.
    pub fn grow(&self, p: DVec3) -> Aabb {
        Aabb { min: self.min.min(p), max: self.max.max(p) }
    }

    /// Center point.
    pub fn center(&self) -> DVec3 {
        0.5 * (self.min + self.max)
    }

    /// Half the surface area (enough for the surface-area heuristic); 0 for an empty box.
    pub fn half_area(&self) -> f64 {
        let d = (self.max - self.min).max(DVec3::ZERO);
        d.x * d.y + d.y * d.z + d.z * d.x
    }

    /// Whether `other` lies inside `self` (boundaries included).
    pub fn contains(&self, other: &Aabb) -> bool {
        self.min.cmple(other.min).all() && self.max.cmpge(other.max).all()
    }

    /// The box grown on every side by a margin that covers rounding in the slab test.
    fn padded(&self) -> Aabb {
        let scale = self.min.abs().max(self.max.abs()).max_element();
        let eps = 1e-9 * scale + 1e-12;
        Aabb { min: self.min - DVec3::splat(eps), max: self.max + DVec3::splat(eps) }
    }

    /// Entry distance of the ray `origin + t * dir`, `t` in `[0, tmax]`, or `None` on a miss.
    /// `inv_dir` comes from [`inverse_direction`].
    #[inline(always)]
    pub fn ray_entry(&self, origin: DVec3, inv_dir: DVec3, tmax: f64) -> Option<f64> {
        let t1 = (self.min - origin) * inv_dir;
        let t2 = (self.max - origin) * inv_dir;
        let near = t1.min(t2).max_element().max(0.0);
        let far = t1.max(t2).min_element().min(tmax);
        (near <= far).then_some(near)
    }
}

/// Component-wise `1 / dir` with zero components replaced by a huge finite value, so the slab
/// test never computes `0 * inf`.
#[inline]
pub fn inverse_direction(dir: DVec3) -> DVec3 {
    let inv = |d: f64| {
        if d.abs() > 1e-300 { 1.0 / d } else { 1e300_f64.copysign(d) }
    };
    DVec3::new(inv(dir.x), inv(dir.y), inv(dir.z))
}

type Node = BinaryNode;

/// A binary BVH over primitive boxes. Primitives are referred to by their index in the box
/// slice given to [`Bvh::build`].
#[derive(Clone, Debug)]
pub struct Bvh {
    nodes: Vec<Node>,
    prims: Vec<u32>,
    /// The 4-wide form traversal uses, derived from `nodes`.
    wide: Wide,
}

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
            wide: Wide::default(),
        };
        if boxes.is_empty() {
            return bvh;
        }
        let centers: Vec<DVec3> = boxes.iter().map(Aabb::center).collect();
        bvh.nodes.push(Node { bounds: Aabb::EMPTY, start: 0, count: boxes.len() as u32 });
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
            bvh.nodes.push(Node { bounds: Aabb::EMPTY, start: start as u32, count: mid as u32 });
            bvh.nodes.push(Node { bounds: Aabb::EMPTY, start: (start + mid) as u32, count: (count - mid) as u32 });
            bvh.nodes[node] = Node { bounds: bvh.nodes[node].bounds, start: left as u32, count: 0 };
            work.push((left, depth + 1));
            work.push((left + 1, depth + 1));
        }
        bvh.wide = Wide::from_binary(&bvh.nodes);
        bvh
    }

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

    /// Visits leaves front to back along the ray and calls `hit(prim, tmax)` for each of their
    /// primitives; `hit` returns the primitive's distance when it is closer than (or ties with)
    /// `tmax`, which then shrinks. Returns the final `tmax`.
    #[inline]
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
    /// crosses; stops at the first.
    #[inline]
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

    /// Front-to-back traversal driven by `v`: subtrees whose box `v.entry4` rejects are
    /// skipped, nearer children are visited first, and `v.prim` returns true to stop.
    /// Returns whether it stopped early.
    #[inline(always)]
    pub(crate) fn walk(&self, v: &mut impl Visitor) -> bool {
        self.wide.walk(&self.prims, v)
    }

    /// Depth of the deepest leaf (1 for a single leaf), for tests and statistics.
    pub fn depth(&self) -> usize {
        fn go(nodes: &[Node], i: usize) -> usize {
            let n = nodes[i];
            if n.count > 0 { 1 } else { 1 + go(nodes, n.start as usize).max(go(nodes, n.start as usize + 1)) }
        }
        if self.nodes.is_empty() { 0 } else { go(&self.nodes, 0) }
    }
}

/// Splits `prims` in place along the best binned-SAH plane; returns the size of the left part,
/// or `None` when a leaf is cheaper (or no split separates the centers).
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

impl Bvh {
    /// Returns the primitive order and renumbers the primitives so that leaves refer to
    /// `0..n` in leaf order; the caller stores its primitives in the returned order.
    pub(crate) fn take_order(&mut self) -> Vec<u32> {
        let n = self.prims.len() as u32;
        std::mem::replace(&mut self.prims, (0..n).collect())
    }
}
