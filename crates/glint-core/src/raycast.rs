//! Ray queries with `mj_ray`'s semantics over a two-level acceleration structure: the
//! bottom level (one BVH per mesh and per height field) lives in the [`Scene`]; the top level
//! (one BVH per world over the geoms' world bounds) lives here and is refitted after each
//! step. Planes are infinite and tested outside the top level.

use std::sync::atomic::{AtomicBool, Ordering};

use glam::{DMat3, DVec3};
use rayon::prelude::*;

use crate::bvh::{Aabb, Bvh, Node4, Visitor, WIDTH, inverse_direction};
use crate::packet::{PACKET, Packet};
use crate::primitives::{self, MINVAL, to_local};
use crate::{CoreError, GeomType, Poses, Scene};

/// Number of geom groups a ray filter distinguishes (MuJoCo's `mjNGROUP`).
pub const NGROUP: usize = 6;

/// Which geoms rays can hit, as `mj_ray`'s `geomgroup` and `flg_static` arguments.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RayFilter {
    /// Groups whose geoms are included (groups outside 0..6 count as the nearest end);
    /// `None` includes every group.
    pub geomgroup: Option<[bool; NGROUP]>,
    /// Whether static geoms (on bodies welded to the world) are included.
    pub flg_static: bool,
    /// A root body (MuJoCo's `body_rootid`) whose whole kinematic tree rays pass through, or
    /// `-1`. Not an `mj_ray` argument: lidars use it to ignore their own robot.
    pub exclude_tree: i32,
}

impl Default for RayFilter {
    fn default() -> Self {
        RayFilter { geomgroup: None, flg_static: true, exclude_tree: -1 }
    }
}

impl RayFilter {
    /// A filter from a bit mask over the six groups (bit `i` includes group `i`).
    pub fn from_group_mask(mask: u8, flg_static: bool) -> Self {
        RayFilter { geomgroup: Some(std::array::from_fn(|i| mask & (1 << i) != 0)), flg_static, exclude_tree: -1 }
    }
}

/// A batch of rays for every world. Each array has length 1 (shared by every ray), `nray`
/// (shared by every world) or `nworld * nray` (world-major).
#[derive(Clone, Copy, Debug)]
pub struct RayBatch<'a> {
    /// Rays per world.
    pub nray: usize,
    /// Ray origins.
    pub pnt: &'a [DVec3],
    /// Ray directions; distances are reported in units of their length, as in `mj_ray`.
    pub vec: &'a [DVec3],
    /// Body whose geoms each ray ignores (`-1`: none); may be empty (no exclusion).
    pub bodyexclude: &'a [i32],
}

impl RayBatch<'_> {
    #[inline(always)]
    fn pick<T: Copy>(arr: &[T], nray: usize, w: usize, i: usize) -> T {
        match arr.len() {
            1 => arr[0],
            n if n == nray => arr[i],
            _ => arr[w * nray + i],
        }
    }

    fn check_shape(&self, field: &'static str, len: usize, nworld: usize, allow_empty: bool) -> Result<(), CoreError> {
        let n = self.nray;
        if (allow_empty && len == 0) || len == 1 || len == n || len == n * nworld {
            return Ok(());
        }
        Err(CoreError::Shape {
            field,
            len,
            expected: format!("it must hold 1, {n} (nray) or {} (nworld × nray) entries", n * nworld),
        })
    }

    /// Checks the directions and origins stored at `range` (indices into the arrays; entries
    /// past an array's end are skipped).
    fn check_rays(&self, range: std::ops::Range<usize>) -> Result<(), CoreError> {
        let vecs = &self.vec[range.start.min(self.vec.len())..range.end.min(self.vec.len())];
        if let Some(k) = vecs.iter().position(|v| !v.is_finite() || v.length_squared() < MINVAL * MINVAL) {
            let (index, v) = (range.start + k, vecs[k]);
            return Err(CoreError::BadDirection { index, x: v.x, y: v.y, z: v.z });
        }
        let pnts = &self.pnt[range.start.min(self.pnt.len())..range.end.min(self.pnt.len())];
        if let Some(k) = pnts.iter().position(|p| !p.is_finite()) {
            let (index, p) = (range.start + k, pnts[k]);
            return Err(CoreError::BadOrigin { index, x: p.x, y: p.y, z: p.z });
        }
        Ok(())
    }

    /// Whether the rays of flat indices `first..first + len` (world-major) have finite origins
    /// and usable directions: scans the parts of each array those rays use.
    fn chunk_ok(&self, first: usize, len: usize) -> bool {
        let good_dir = |v: &DVec3| v.is_finite() && v.length_squared() >= MINVAL * MINVAL;
        let good_pnt = |p: &DVec3| p.is_finite();
        self.used(self.vec, first, len).all(|part| part.iter().all(good_dir))
            && self.used(self.pnt, first, len).all(|part| part.iter().all(good_pnt))
    }

    /// The parts of `arr` (shaped by the broadcasting rules) that flat rays
    /// `first..first + len` read: at most two runs.
    fn used<'b>(&self, arr: &'b [DVec3], first: usize, len: usize) -> impl Iterator<Item = &'b [DVec3]> {
        let n = self.nray;
        let (a, b): (&[DVec3], &[DVec3]) = match arr.len() {
            1 => (arr, &[]),
            l if l == n && len < n => {
                let start = first % n;
                let end = start + len;
                if end <= n { (&arr[start..end], &[]) } else { (&arr[start..], &arr[..end - n]) }
            }
            l if l == n => (arr, &[]),
            _ => (&arr[first..first + len], &[]),
        };
        [a, b].into_iter()
    }

    /// Checks the shapes only (`rays_into` checks the rays chunk by chunk inside its parallel
    /// loop, where a serial pass would cost a visible share of the time).
    fn validate_shapes(&self, nworld: usize) -> Result<(), CoreError> {
        if self.nray == 0 || self.vec.is_empty() || self.pnt.is_empty() {
            return Err(CoreError::NoRays);
        }
        self.check_shape("pnt", self.pnt.len(), nworld, false)?;
        self.check_shape("vec", self.vec.len(), nworld, false)?;
        self.check_shape("bodyexclude", self.bodyexclude.len(), nworld, true)
    }

    /// Checks shapes and every ray.
    fn validate(&self, nworld: usize) -> Result<(), CoreError> {
        self.validate_shapes(nworld)?;
        self.check_rays(0..self.vec.len().max(self.pnt.len()))
    }
}

/// The answer for one ray: distance (`-1` on a miss), geom id (`-1` on a miss) and unit
/// world-frame surface normal (zero on a miss).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RayHit {
    /// Distance in units of the direction's length, or `-1`.
    pub dist: f64,
    /// Geom hit, or `-1`.
    pub geomid: i32,
    /// Outward unit normal at the hit, world frame.
    pub normal: DVec3,
}

impl RayHit {
    /// The answer for a ray that hits nothing.
    pub const MISS: RayHit = RayHit { dist: -1.0, geomid: -1, normal: DVec3::ZERO };
}

/// Answers for a batch, each array shaped `(nworld, nray)`.
#[derive(Clone, Debug, Default)]
pub struct RayHits {
    /// Distances, `-1` on a miss.
    pub dist: Vec<f64>,
    /// Geom ids, `-1` on a miss.
    pub geomid: Vec<i32>,
    /// Unit normals, zero on a miss.
    pub normal: Vec<DVec3>,
}

/// The top-level acceleration structure of every world, and the casting entry points.
#[derive(Clone, Debug)]
pub struct RayCaster {
    /// Geoms of type plane (tested against every ray).
    planes: Vec<u32>,
    /// Geoms in the top level, in primitive order.
    tlas_geoms: Vec<u32>,
    /// Their local-frame bounds.
    local_bounds: Vec<Aabb>,
    /// One top-level BVH per world.
    tlas: Vec<Bvh>,
    /// World bounds of the top-level geoms, shape `(nworld, ntlas)`.
    tlas_boxes: Vec<Vec<Aabb>>,
}

const CHUNK: usize = 1024;

/// World-frame bounds of a local box under the frame `(pos, rot)`, grown by a hair (a
/// nanometre per metre of the box's size and place): packets test each ray against these
/// bounds exactly, and a ray through a box's edge or corner could round to just outside its
/// unpadded bounds, a hit single rays (and MuJoCo) find.
fn world_bounds(local: &Aabb, pos: DVec3, rot: &DMat3) -> Aabb {
    let (c, h) = (local.center(), 0.5 * (local.max - local.min));
    let half = rot.x_axis.abs() * h.x + rot.y_axis.abs() * h.y + rot.z_axis.abs() * h.z;
    let center = pos + *rot * c;
    let hair = 1e-9 * (1.0 + center.abs().max_element() + half.max_element());
    Aabb::from_center_half(center, half + DVec3::splat(hair))
}

impl RayCaster {
    /// Builds the top level of every world of `poses`.
    pub fn new(scene: &Scene, poses: &Poses) -> RayCaster {
        let (mut planes, mut tlas_geoms, mut local_bounds) = (Vec::new(), Vec::new(), Vec::new());
        for g in 0..scene.ngeom() {
            if !scene.geom_visible(g) {
                continue;
            }
            match scene.geom_local_bounds(g) {
                None => planes.push(g as u32),
                Some(b) => {
                    tlas_geoms.push(g as u32);
                    local_bounds.push(b);
                }
            }
        }
        let mut caster = RayCaster { planes, tlas_geoms, local_bounds, tlas: Vec::new(), tlas_boxes: Vec::new() };
        caster.rebuild(poses);
        caster
    }

    /// Number of worlds the caster was built for.
    pub fn nworld(&self) -> usize {
        self.tlas.len()
    }

    fn boxes(&self, poses: &Poses, w: usize) -> Vec<Aabb> {
        let mut boxes = vec![Aabb::EMPTY; self.tlas_geoms.len()];
        world_boxes(&self.tlas_geoms, &self.local_bounds, poses, w, &mut boxes);
        boxes
    }

    /// Rebuilds every world's top level from scratch (use after large motions, or when the
    /// number of worlds changes).
    pub fn rebuild(&mut self, poses: &Poses) {
        self.tlas_boxes = (0..poses.nworld).into_par_iter().map(|w| self.boxes(poses, w)).collect();
        self.tlas = self.tlas_boxes.par_iter().map(|b| Bvh::build(b, 2)).collect();
    }

    /// Refits every world's top level to new poses (as MuJoCo Warp's `refit_bvh`), in parallel.
    pub fn refit(&mut self, poses: &Poses) {
        if self.tlas.len() != poses.nworld {
            return self.rebuild(poses);
        }
        let (geoms, local) = (&self.tlas_geoms, &self.local_bounds);
        self.tlas.par_iter_mut().zip(self.tlas_boxes.par_iter_mut()).enumerate().for_each(|(w, (bvh, boxes))| {
            refit_world(geoms, local, poses, w, boxes, bvh);
        });
    }

    /// Refits world `w` only.
    pub fn refit_world(&mut self, poses: &Poses, w: usize) {
        refit_world(&self.tlas_geoms, &self.local_bounds, poses, w, &mut self.tlas_boxes[w], &mut self.tlas[w]);
    }

    /// The top-level BVH of world `w` and its geom ids per primitive (for tests and stats).
    pub fn tlas(&self, w: usize) -> (&Bvh, &[u32]) {
        (&self.tlas[w], &self.tlas_geoms)
    }

    /// Whether geom `g` passes the filter's group and static tests.
    fn eligible(scene: &Scene, filter: &RayFilter) -> Vec<bool> {
        (0..scene.ngeom())
            .map(|g| {
                let body = scene.geom_bodyid[g] as usize;
                let group_ok =
                    filter.geomgroup.is_none_or(|gg| gg[scene.geom_group[g].clamp(0, NGROUP as i32 - 1) as usize]);
                let tree_ok = filter.exclude_tree < 0 || scene.body_rootid[body] != filter.exclude_tree;
                group_ok && tree_ok && (filter.flg_static || scene.body_weldid[body] != 0)
            })
            .collect()
    }

    /// Checks the batch against the caster and the output length; the rays themselves only
    /// when `rays` is set (`rays_into` checks them inside its parallel loop instead).
    fn check(&self, poses: &Poses, batch: &RayBatch, out_len: usize, rays: bool) -> Result<(), CoreError> {
        self.check_worlds(poses, 0..poses.nworld, batch, out_len, rays)
    }

    /// As `check`, for a query over the worlds `worlds` only.
    fn check_worlds(
        &self,
        poses: &Poses,
        worlds: std::ops::Range<usize>,
        batch: &RayBatch,
        out_len: usize,
        rays: bool,
    ) -> Result<(), CoreError> {
        if poses.nworld != self.tlas.len() {
            return Err(CoreError::Shape {
                field: "poses",
                len: poses.nworld,
                expected: format!("the ray caster was built for {} worlds", self.tlas.len()),
            });
        }
        if worlds.end > poses.nworld || worlds.is_empty() {
            return Err(CoreError::NoSuchWorld { world: worlds.end.max(1) - 1, nworld: poses.nworld });
        }
        let nworld = worlds.len();
        if rays {
            batch.validate(nworld)?;
        } else {
            batch.validate_shapes(nworld)?;
        }
        let want = nworld * batch.nray;
        if out_len != want {
            return Err(CoreError::Shape {
                field: "output",
                len: out_len,
                expected: format!("it must hold nworld × nray = {want} entries"),
            });
        }
        Ok(())
    }

    /// Casts every ray of `batch` in every world, closest hit, into caller-owned arrays of
    /// shape `(nworld, nray)`. Parallel over rays and worlds on the current rayon pool.
    #[allow(clippy::too_many_arguments)]
    pub fn rays_into(
        &self,
        scene: &Scene,
        poses: &Poses,
        batch: &RayBatch,
        filter: &RayFilter,
        dist: &mut [f64],
        geomid: &mut [i32],
        normal: &mut [DVec3],
    ) -> Result<(), CoreError> {
        self.rays_worlds_into(scene, poses, 0..poses.nworld, batch, filter, dist, geomid, normal)
    }

    /// As [`RayCaster::rays_into`], for the worlds `worlds` only: the batch's arrays and the
    /// outputs are shaped `(worlds.len(), nray)`, and batch world `k` is world
    /// `worlds.start + k`. Sensors whose worlds are at different points of a scan use it.
    #[allow(clippy::too_many_arguments)]
    pub fn rays_worlds_into(
        &self,
        scene: &Scene,
        poses: &Poses,
        worlds: std::ops::Range<usize>,
        batch: &RayBatch,
        filter: &RayFilter,
        dist: &mut [f64],
        geomid: &mut [i32],
        normal: &mut [DVec3],
    ) -> Result<(), CoreError> {
        let world0 = worlds.start;
        self.check_worlds(poses, worlds, batch, dist.len(), false)?;
        for (field, len) in [("geomid", geomid.len()), ("normal", normal.len())] {
            if len != dist.len() {
                return Err(CoreError::Shape {
                    field,
                    len,
                    expected: format!("it must hold as many entries as dist ({})", dist.len()),
                });
            }
        }
        let eligible = Self::eligible(scene, filter);
        let q = Query { scene, poses, eligible: &eligible, batch, world0, skip_geom: -1, own: false };
        let nray = batch.nray;
        let bad_ray = AtomicBool::new(false);
        dist.par_chunks_mut(CHUNK)
            .zip(geomid.par_chunks_mut(CHUNK))
            .zip(normal.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(chunk, ((dist, geomid), normal))| {
                let mut packet = Packet::empty();
                if !batch.chunk_ok(chunk * CHUNK, dist.len()) {
                    bad_ray.store(true, Ordering::Relaxed);
                    return;
                }
                let mut k = 0;
                while k < dist.len() {
                    let idx = chunk * CHUNK + k;
                    let (w, i) = (idx / nray, idx % nray);
                    let run = PACKET.min(dist.len() - k).min(nray - i);
                    let out = Out {
                        dist: &mut dist[k..k + run],
                        geomid: &mut geomid[k..k + run],
                        normal: &mut normal[k..k + run],
                    };
                    self.cast_run(&q, w, i, &mut packet, out);
                    k += run;
                }
            });
        if bad_ray.load(Ordering::Relaxed) {
            // Only on this path: the serial check finds and names the first bad ray.
            batch.validate(dist.len() / nray)?;
        }
        Ok(())
    }

    /// Resolves `filter` once for callers that run their own parallel loop and cast small
    /// groups of rays serially (a lidar writing each group straight into its scan).
    pub fn prepare<'a>(
        &'a self,
        scene: &'a Scene,
        poses: &'a Poses,
        filter: &RayFilter,
    ) -> Result<PreparedRays<'a>, CoreError> {
        if poses.nworld != self.tlas.len() {
            return Err(CoreError::Shape {
                field: "poses",
                len: poses.nworld,
                expected: format!("the ray caster was built for {} worlds", self.tlas.len()),
            });
        }
        Ok(PreparedRays { caster: self, scene, poses, eligible: Self::eligible(scene, filter) })
    }

    /// Casts rays `i..` of world `w` (as many as `out` holds, at most `PACKET`), as one packet
    /// when they share an origin and body exclusion and their directions share signs, as one
    /// packet per octant of directions when only the signs differ, else one by one.
    fn cast_run(&self, q: &Query, w: usize, i: usize, packet: &mut Packet, mut out: Out) {
        let (batch, run) = (q.batch, out.dist.len());
        let nray = batch.nray;
        let (o, exclude) = (RayBatch::pick(batch.pnt, nray, w, i), q.exclude(w, i));
        // Rays with their own origins carry them into the packet.
        let shared = run > 1
            && (q.own || (i..i + run).all(|k| RayBatch::pick(batch.pnt, nray, w, k) == o))
            && (batch.bodyexclude.len() <= 1 || (i..i + run).all(|k| q.exclude(w, k) == exclude));
        if shared && packet.set(o, run, |r| RayBatch::pick(batch.vec, nray, w, i + r)) {
            let best = self.cast_set_packet(q, w, |r| i + r, exclude, packet);
            for r in 0..run {
                out.set(r, best.hit(r));
            }
        } else if shared && run > 2 {
            self.cast_octants(q, w, i, exclude, packet, out);
        } else {
            for r in 0..run {
                out.set(r, self.cast(q, w, i + r));
            }
        }
    }

    /// Casts rays `i..` of world `w` that would make one packet but for the signs of their
    /// directions (a fan across an axis): a packet per octant, in ray order within each.
    #[inline(never)]
    fn cast_octants(&self, q: &Query, w: usize, i: usize, exclude: i32, packet: &mut Packet, mut out: Out) {
        let (batch, run) = (q.batch, out.dist.len());
        let dir = |r: usize| RayBatch::pick(batch.vec, batch.nray, w, i + r);
        // A zero component counts by its sign bit, as the packet's inverse directions do.
        let octant = |d: DVec3| (0..3).fold(0, |o, a| o | (usize::from(d[a].is_sign_negative()) << a));
        let (mut lanes, mut count) = ([[0u8; PACKET]; 8], [0usize; 8]);
        for r in 0..run {
            let o = octant(dir(r));
            lanes[o][count[o]] = r as u8;
            count[o] += 1;
        }
        let o = RayBatch::pick(batch.pnt, batch.nray, w, i);
        for (lanes, &n) in lanes.iter().zip(&count) {
            let ray = |k: usize| lanes[k] as usize;
            if n > 1 && packet.set(o, n, |k| dir(ray(k))) {
                let best = self.cast_set_packet(q, w, |k| i + ray(k), exclude, packet);
                for k in 0..n {
                    out.set(ray(k), best.hit(k));
                }
            } else {
                for r in lanes[..n].iter().map(|&r| r as usize) {
                    out.set(r, self.cast(q, w, i + r));
                }
            }
        }
    }

    /// Closest hits of the packet just `set` from rays of world `w` (ray `k` of the packet is
    /// the batch's ray `ray(k)`), from their shared origin or, for a query with `own`, each
    /// from its own.
    #[inline(always)]
    fn cast_set_packet(
        &self,
        q: &Query,
        w: usize,
        ray: impl Fn(usize) -> usize,
        exclude: i32,
        packet: &mut Packet,
    ) -> PacketBest {
        if q.own {
            self.cast_packet_own(q, w, ray, exclude, packet)
        } else {
            self.cast_packet::<false>(q, w, exclude, packet)
        }
    }

    /// Closest hits of a packet of rays of world `w` (ray `k` of the packet is the batch's
    /// ray `ray(k)`), each from its own origin. Kept apart so that the common packets' code is
    /// inlined as it would be without it.
    #[inline(never)]
    fn cast_packet_own(
        &self,
        q: &Query,
        w: usize,
        ray: impl Fn(usize) -> usize,
        exclude: i32,
        packet: &mut Packet,
    ) -> PacketBest {
        let nray = q.batch.nray;
        packet.set_origins(|k| RayBatch::pick(q.batch.pnt, nray, w, ray(k)));
        self.cast_packet::<true>(q, w, exclude, packet)
    }

    /// Closest hits of a packet of rays in world `w` (`OWN`: each ray from its own origin).
    fn cast_packet<const OWN: bool>(&self, q: &Query, w: usize, exclude: i32, p: &Packet) -> PacketBest {
        let (scene, eligible) = (q.scene, q.eligible);
        let (xpos, xmat) = q.poses.geoms(q.world0 + w);
        // The walk is built first and the planes offered into it: its closest hits (1 KB) are
        // then not copied in (the clean scan measured 4 % faster).
        let mut walk = PacketWalk::<OWN> {
            scene,
            xpos,
            xmat,
            eligible,
            exclude,
            skip_geom: q.skip_geom,
            geoms: &self.tlas_geoms,
            boxes: &self.tlas_boxes[q.world0 + w],
            p,
            best: PacketBest::new(OWN),
            packet_tmax: 0.0,
        };
        // What the one-ray path answers for a plane (the walk with own origins keeps normals
        // unit).
        let plane_normal = |g: usize| if OWN { xmat[g].z_axis.normalize() } else { xmat[g].z_axis };
        for &g in &self.planes {
            let g = g as usize;
            if q.usable(g, exclude) {
                let (t, n) = (p.plane::<OWN>(xpos[g], &xmat[g], scene.geom_size[g]), plane_normal(g));
                for (r, &t) in t.iter().enumerate().take(p.n) {
                    if t < f64::INFINITY {
                        walk.best.offer(r, g, t, n);
                    }
                }
            }
        }
        walk.update_tmax();
        self.tlas[q.world0 + w].walk(&mut walk);
        walk.best
    }

    /// Allocating wrapper of [`RayCaster::rays_into`].
    pub fn rays(
        &self,
        scene: &Scene,
        poses: &Poses,
        batch: &RayBatch,
        filter: &RayFilter,
    ) -> Result<RayHits, CoreError> {
        let n = poses.nworld * batch.nray;
        let mut hits = RayHits { dist: vec![0.0; n], geomid: vec![0; n], normal: vec![DVec3::ZERO; n] };
        self.rays_into(scene, poses, batch, filter, &mut hits.dist, &mut hits.geomid, &mut hits.normal)?;
        Ok(hits)
    }

    /// One ray in world `w`, as `mj_ray`.
    #[allow(clippy::too_many_arguments)]
    pub fn ray(
        &self,
        scene: &Scene,
        poses: &Poses,
        w: usize,
        pnt: DVec3,
        vec: DVec3,
        filter: &RayFilter,
        bodyexclude: i32,
    ) -> Result<RayHit, CoreError> {
        poses.check_world(w)?;
        let batch = RayBatch { nray: 1, pnt: &[pnt], vec: &[vec], bodyexclude: &[bodyexclude] };
        batch.validate(1)?;
        let eligible = Self::eligible(scene, filter);
        Ok(self.cast(
            &Query { scene, poses, eligible: &eligible, batch: &batch, world0: w, skip_geom: -1, own: false },
            0,
            0,
        ))
    }

    /// Any-hit query: `out[w * nray + i]` is true when ray `i` of world `w` hits an eligible
    /// geom at a distance below `max_dist` (an array with the batch's broadcasting rules).
    pub fn occluded_into(
        &self,
        scene: &Scene,
        poses: &Poses,
        batch: &RayBatch,
        filter: &RayFilter,
        max_dist: &[f64],
        out: &mut [bool],
    ) -> Result<(), CoreError> {
        self.check(poses, batch, out.len(), true)?;
        batch.check_shape("max_dist", max_dist.len(), poses.nworld, false)?;
        let eligible = Self::eligible(scene, filter);
        let q = Query { scene, poses, eligible: &eligible, batch, world0: 0, skip_geom: -1, own: false };
        let nray = batch.nray;
        out.par_chunks_mut(CHUNK).enumerate().for_each(|(chunk, out)| {
            for (k, o) in out.iter_mut().enumerate() {
                let idx = chunk * CHUNK + k;
                let (w, i) = (idx / nray, idx % nray);
                let tmax = RayBatch::pick(max_dist, nray, w, i);
                *o = self.occluded(&q, w, i, tmax);
            }
        });
        Ok(())
    }

    #[inline]
    fn cast(&self, q: &Query, w: usize, i: usize) -> RayHit {
        let scene = q.scene;
        let (pnt, vec, exclude) = q.ray(w, i);
        let (xpos, xmat) = q.poses.geoms(q.world0 + w);
        let usable = |g: usize| q.usable(g, exclude);

        let mut best = Best { t: f64::INFINITY, g: -1, n: DVec3::ZERO };
        for &g in &self.planes {
            let g = g as usize;
            if usable(g)
                && let Some((t, n)) = intersect_geom(scene, g, xpos[g], &xmat[g], pnt, vec, f64::INFINITY)
            {
                best.offer(g, t, n);
            }
        }
        let geoms = &self.tlas_geoms;
        let start = best.t;
        self.tlas[q.world0 + w].closest(pnt, inverse_direction(vec), start, |prim, tmax| {
            let g = geoms[prim as usize] as usize;
            if !usable(g) {
                return None;
            }
            let (t, n) = intersect_geom(scene, g, xpos[g], &xmat[g], pnt, vec, tmax)?;
            best.offer(g, t, n).then_some(t)
        });
        if best.g < 0 { RayHit::MISS } else { RayHit { dist: best.t, geomid: best.g, normal: best.n } }
    }

    #[inline]
    fn occluded(&self, q: &Query, w: usize, i: usize, max_dist: f64) -> bool {
        let scene = q.scene;
        let (pnt, vec, exclude) = q.ray(w, i);
        let (xpos, xmat) = q.poses.geoms(q.world0 + w);
        let usable = |g: usize| q.usable(g, exclude);
        let blocks = |g: usize| usable(g) && geom_blocks(scene, g, xpos[g], &xmat[g], pnt, vec, max_dist);
        self.planes.iter().any(|&g| blocks(g as usize))
            || self.tlas[q.world0 + w]
                .any(pnt, inverse_direction(vec), max_dist, |prim| blocks(self.tlas_geoms[prim as usize] as usize))
    }
}

/// A closest-hit query whose filter is resolved, from [`RayCaster::prepare`]. Each call
/// casts serially on the calling thread.
pub struct PreparedRays<'a> {
    caster: &'a RayCaster,
    scene: &'a Scene,
    poses: &'a Poses,
    eligible: Vec<bool>,
}

impl PreparedRays<'_> {
    /// One ray from `origin` along `dir` in world `world`, ignoring body `exclude` and geom
    /// `skip_geom` (`-1`: none), as `mj_ray` would answer with that geom removed: the
    /// continuation of a beam through a surface it has already crossed. `None` on a miss or a
    /// non-finite or zero-length ray.
    pub fn cast_one(&self, world: usize, origin: DVec3, dir: DVec3, exclude: i32, skip_geom: i32) -> Option<RayHit> {
        let batch = RayBatch { nray: 1, pnt: &[origin], vec: &[dir], bodyexclude: &[exclude] };
        if !batch.chunk_ok(0, 1) || world >= self.poses.nworld {
            return None;
        }
        let hit = self.caster.cast(&self.query(&batch, world, skip_geom), 0, 0);
        (hit.geomid >= 0).then_some(hit)
    }

    fn query<'q>(&'q self, batch: &'q RayBatch<'q>, world: usize, skip_geom: i32) -> Query<'q> {
        Query {
            scene: self.scene,
            poses: self.poses,
            eligible: &self.eligible,
            batch,
            world0: world,
            skip_geom,
            own: false,
        }
    }

    /// Casts the rays from `origin` along `dirs` in world `world`, ignoring body `exclude`
    /// and geom `skip_geom` (`-1`: none), into `dist`, `geomid` and `normal` (each as long as
    /// `dirs`). Rays go in packets in the order given, so neighbouring directions should be
    /// neighbours here. Skipping a geom gives the surfaces behind it: a lidar's beams
    /// continuing through a pane of glass, from the sensor's own origin.
    #[allow(clippy::too_many_arguments)]
    pub fn cast_from(
        &self,
        world: usize,
        origin: DVec3,
        dirs: &[DVec3],
        exclude: i32,
        skip_geom: i32,
        dist: &mut [f64],
        geomid: &mut [i32],
        normal: &mut [DVec3],
    ) -> Result<(), CoreError> {
        self.cast_lines(world, &[origin], dirs, (false, true), (exclude, skip_geom), (dist, geomid, normal))
    }

    /// Casts rays from their own `origins` along `dirs` (one origin per direction) in world
    /// `world`, ignoring body `exclude`, into `dist`, `geomid` and `normal`, as
    /// [`PreparedRays::cast_one`] would answer each. Rays that leave one surface together (a
    /// lidar's beams refracted into water, from where each met it) go in packets.
    #[allow(clippy::too_many_arguments)]
    pub fn cast_each(
        &self,
        world: usize,
        origins: &[DVec3],
        dirs: &[DVec3],
        exclude: i32,
        dist: &mut [f64],
        geomid: &mut [i32],
        normal: &mut [DVec3],
    ) -> Result<(), CoreError> {
        self.check_origins(origins, dirs)?;
        self.cast_lines(world, origins, dirs, (true, true), (exclude, -1), (dist, geomid, normal))
    }

    /// [`PreparedRays::cast_from`] (shared `origins`) or [`PreparedRays::cast_each`] (one per
    /// ray) for rays that are known to be good, ignoring body `exclude` and passing through
    /// geom `skip_geom` (`-1`: none), into `out` (distances, geoms and normals, each as long
    /// as `dirs`): the check of every origin and direction is skipped. For continuations of
    /// rays the core has already cast: a lidar's beams going on past a pane of glass along
    /// the same directions, or folded by a mirror from where each met it, with their starts
    /// and directions checked finite. A ray whose origin or direction is not finite, or
    /// whose direction is zero, gets an unspecified answer, never a panic.
    pub fn cast_trusted(
        &self,
        (world, origins, dirs): (usize, Origins, &[DVec3]),
        (exclude, skip_geom): (i32, i32),
        out: (&mut [f64], &mut [i32], &mut [DVec3]),
    ) -> Result<(), CoreError> {
        match origins {
            Origins::Shared(origin) => {
                self.cast_lines(world, &[origin], dirs, (false, false), (exclude, skip_geom), out)
            }
            Origins::Each(origins) => {
                self.check_origins(origins, dirs)?;
                self.cast_lines(world, origins, dirs, (true, false), (exclude, skip_geom), out)
            }
        }
    }

    /// One origin per direction.
    fn check_origins(&self, origins: &[DVec3], dirs: &[DVec3]) -> Result<(), CoreError> {
        if origins.len() == dirs.len() {
            return Ok(());
        }
        Err(CoreError::Shape {
            field: "origins",
            len: origins.len(),
            expected: format!("it must hold one entry per ray ({})", dirs.len()),
        })
    }

    /// The rays of [`PreparedRays::cast_from`] and [`PreparedRays::cast_each`]: from `origins`
    /// (one, or one per ray, `own`: packets carry each ray's own origin), checked first when
    /// `check`.
    fn cast_lines(
        &self,
        world: usize,
        origins: &[DVec3],
        dirs: &[DVec3],
        (own, check): (bool, bool),
        (exclude, skip_geom): (i32, i32),
        (dist, geomid, normal): (&mut [f64], &mut [i32], &mut [DVec3]),
    ) -> Result<(), CoreError> {
        self.poses.check_world(world)?;
        let nray = dirs.len();
        for (field, len) in [("dist", dist.len()), ("geomid", geomid.len()), ("normal", normal.len())] {
            if len != nray {
                return Err(CoreError::Shape {
                    field,
                    len,
                    expected: format!("it must hold one entry per ray ({nray})"),
                });
            }
        }
        if nray == 0 {
            return Ok(());
        }
        let batch = RayBatch { nray, pnt: origins, vec: dirs, bodyexclude: &[exclude] };
        if check && !batch.chunk_ok(0, nray) {
            batch.validate(1)?;
        }
        let q = Query { own, ..self.query(&batch, world, skip_geom) };
        let mut packet = Packet::empty();
        let mut i = 0;
        while i < nray {
            let run = PACKET.min(nray - i);
            let out =
                Out { dist: &mut dist[i..i + run], geomid: &mut geomid[i..i + run], normal: &mut normal[i..i + run] };
            self.caster.cast_run(&q, 0, i, &mut packet, out);
            i += run;
        }
        Ok(())
    }
}

/// Where the rays of [`PreparedRays::cast_trusted`] start.
#[derive(Clone, Copy, Debug)]
pub enum Origins<'a> {
    /// All from one point.
    Shared(DVec3),
    /// Each from its own, one per direction.
    Each(&'a [DVec3]),
}

/// What every ray of one query shares: the scene, the poses, the geoms the filter lets
/// through, and the batch.
#[derive(Clone, Copy)]
struct Query<'a> {
    scene: &'a Scene,
    poses: &'a Poses,
    eligible: &'a [bool],
    batch: &'a RayBatch<'a>,
    /// The world that the batch's world 0 stands for.
    world0: usize,
    /// A geom the rays pass through (`-1`: none).
    skip_geom: i32,
    /// Whether packets carry each ray's own origin (see [`PreparedRays::cast_each`]).
    own: bool,
}

impl Query<'_> {
    /// Origin, direction and excluded body of ray `i` of world `w`.
    #[inline(always)]
    fn ray(&self, w: usize, i: usize) -> (DVec3, DVec3, i32) {
        let b = self.batch;
        (RayBatch::pick(b.pnt, b.nray, w, i), RayBatch::pick(b.vec, b.nray, w, i), self.exclude(w, i))
    }

    #[inline(always)]
    fn exclude(&self, w: usize, i: usize) -> i32 {
        let b = self.batch;
        if b.bodyexclude.is_empty() { -1 } else { RayBatch::pick(b.bodyexclude, b.nray, w, i) }
    }

    /// Whether geom `g` can be hit by a ray that excludes body `exclude`.
    #[inline(always)]
    fn usable(&self, g: usize, exclude: i32) -> bool {
        self.eligible[g] && self.scene.geom_bodyid[g] != exclude && g as i32 != self.skip_geom
    }
}

/// Output slices for a run of rays.
struct Out<'a> {
    dist: &'a mut [f64],
    geomid: &'a mut [i32],
    normal: &'a mut [DVec3],
}

impl Out<'_> {
    #[inline(always)]
    fn set(&mut self, r: usize, hit: RayHit) {
        self.dist[r] = hit.dist;
        self.geomid[r] = hit.geomid;
        self.normal[r] = hit.normal;
    }
}

/// The closest hit so far of one ray.
struct Best {
    t: f64,
    g: i32,
    n: DVec3,
}

impl Best {
    /// Takes the hit when it is closer, or equally close on a lower geom id (MuJoCo scans
    /// geoms in id order and keeps the first of equal distances). Returns whether it did.
    #[inline(always)]
    fn offer(&mut self, g: usize, t: f64, n: DVec3) -> bool {
        let take = t < self.t || (t == self.t && (g as i32) < self.g);
        if take {
            *self = Best { t, g: g as i32, n };
        }
        take
    }
}

/// Closest hit of geom `g` at pose `(pos, rot)` with `t <= tmax`: distance and unit
/// world-frame normal.
#[inline]
fn intersect_geom(
    scene: &Scene,
    g: usize,
    pos: DVec3,
    rot: &DMat3,
    pnt: DVec3,
    vec: DVec3,
    tmax: f64,
) -> Option<(f64, DVec3)> {
    let kind = scene.geom_type[g];
    let (t, n) = match kind {
        GeomType::Mesh => {
            let mesh = &scene.mesh[scene.geom_dataid[g] as usize];
            let (t, n, _) = mesh.triangles().closest(to_local(rot, pnt - pos), to_local(rot, vec), tmax)?;
            (t, (*rot * n).normalize())
        }
        GeomType::Hfield => {
            let hf = &scene.hfield[scene.geom_dataid[g] as usize];
            let (t, n) = hf.intersect_local(to_local(rot, pnt - pos), to_local(rot, vec), tmax)?;
            (t, (*rot * n).normalize())
        }
        _ => primitives::intersect_primitive(kind, scene.geom_size[g], pos, rot, pnt, vec)?,
    };
    (t <= tmax).then_some((t, n))
}

/// Whether geom `g` is hit with `t < max_dist`.
#[inline]
fn geom_blocks(scene: &Scene, g: usize, pos: DVec3, rot: &DMat3, pnt: DVec3, vec: DVec3, max_dist: f64) -> bool {
    match scene.geom_type[g] {
        GeomType::Mesh => {
            let mesh = &scene.mesh[scene.geom_dataid[g] as usize];
            mesh.triangles().any(to_local(rot, pnt - pos), to_local(rot, vec), max_dist) && {
                // `any` accepts t == max_dist; the query wants strictly closer.
                intersect_geom(scene, g, pos, rot, pnt, vec, max_dist).is_some_and(|(t, _)| t < max_dist)
            }
        }
        _ => intersect_geom(scene, g, pos, rot, pnt, vec, max_dist).is_some_and(|(t, _)| t < max_dist),
    }
}

/// World bounds of the top-level geoms `geoms` (local bounds `local`) in world `w`.
fn world_boxes(geoms: &[u32], local: &[Aabb], poses: &Poses, w: usize, boxes: &mut [Aabb]) {
    let (xpos, xmat) = poses.geoms(w);
    for ((b, &g), l) in boxes.iter_mut().zip(geoms).zip(local) {
        *b = world_bounds(l, xpos[g as usize], &xmat[g as usize]);
    }
}

fn refit_world(geoms: &[u32], local: &[Aabb], poses: &Poses, w: usize, boxes: &mut [Aabb], bvh: &mut Bvh) {
    world_boxes(geoms, local, poses, w, boxes);
    bvh.refit(boxes);
}

/// Closest hits so far of a packet's rays (structure of arrays).
struct PacketBest {
    t: [f64; PACKET],
    g: [i32; PACKET],
    n: [DVec3; PACKET],
    /// Whether the normals offered are unit already (the walk with own origins, which offers
    /// what the one-ray path answers), so that they are handed out as they are.
    unit: bool,
}

impl PacketBest {
    fn new(unit: bool) -> Self {
        PacketBest { t: [f64::INFINITY; PACKET], g: [-1; PACKET], n: [DVec3::ZERO; PACKET], unit }
    }

    /// As [`Best::offer`], for ray `r`.
    #[inline(always)]
    fn offer(&mut self, r: usize, g: usize, t: f64, n: DVec3) {
        if t < self.t[r] || (t == self.t[r] && (g as i32) < self.g[r]) {
            (self.t[r], self.g[r], self.n[r]) = (t, g as i32, n);
        }
    }

    fn hit(&self, r: usize) -> RayHit {
        // Normals are kept unnormalized until here, so only the winner pays for it.
        if self.g[r] < 0 {
            RayHit::MISS
        } else {
            let n = if self.unit { self.n[r] } else { self.n[r].normalize() };
            RayHit { dist: self.t[r], geomid: self.g[r], normal: n }
        }
    }
}

/// A packet's walk through one world's top level.
struct PacketWalk<'a, const OWN: bool> {
    scene: &'a Scene,
    xpos: &'a [DVec3],
    xmat: &'a [DMat3],
    eligible: &'a [bool],
    exclude: i32,
    /// A geom the packet passes through (`-1`: none).
    skip_geom: i32,
    geoms: &'a [u32],
    boxes: &'a [Aabb],
    p: &'a Packet,
    best: PacketBest,
    /// The largest current best distance of the packet's rays.
    packet_tmax: f64,
}

impl<const OWN: bool> PacketWalk<'_, OWN> {
    fn update_tmax(&mut self) {
        let mut m = 0.0f64;
        for r in 0..self.p.n {
            m = if self.best.t[r] > m { self.best.t[r] } else { m };
        }
        self.packet_tmax = m;
    }

    /// The rays of `mask`, each from its own origin, against box `g`, all lanes at once: what
    /// `intersect_geom` answers each, to the bit (MuJoCo's bounding-sphere test, then the
    /// six-face loop in the box's frame, then the normal rotated back and normalized).
    #[inline(never)]
    fn own_box(&mut self, g: usize, mut mask: u32) {
        let (pos, rot, size) = (self.xpos[g], &self.xmat[g], self.scene.geom_size[g]);
        let radius_sqr = primitives::bounding_sphere_sqr(GeomType::Box, size);
        let (mut lpnt, mut lvec, mut passes) = ([[0.0; PACKET]; 3], [[0.0; PACKET]; 3], [false; PACKET]);
        for r in 0..PACKET {
            let (dif, d) = (self.p.origin(r) - pos, self.p.d[r]);
            passes[r] = primitives::BoundingSphere::with_radius(dif, radius_sqr).passes(d);
            let (l, v) = (to_local(rot, dif), to_local(rot, d));
            for a in 0..3 {
                (lpnt[a][r], lvec[a][r]) = (l[a], v[a]);
            }
        }
        let (mut t, mut face) = ([0.0; PACKET], [0u8; PACKET]);
        primitives::box_lanes(size, &lpnt, &lvec, &mut t, &mut face);
        // A box has six normals, and a packet's rays mostly meet the same face: each is worked
        // out once (a square root and a division that the winners would wait on in turn).
        let mut normals = [None; 6];
        while mask != 0 {
            let r = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            if passes[r] && face[r] < 6 && t[r] <= self.best.t[r] {
                let f = face[r] as usize;
                let n = *normals[f].get_or_insert_with(|| (*rot * primitives::face_normal(f)).normalize());
                self.best.offer(r, g, t[r], n);
            }
        }
    }
}

impl<const OWN: bool> Visitor for PacketWalk<'_, OWN> {
    #[inline(always)]
    fn entry4(&self, n: &Node4) -> [f64; WIDTH] {
        self.p.entry4::<OWN>(n, self.packet_tmax)
    }

    #[inline]
    fn prim(&mut self, prim: u32) -> bool {
        let g = self.geoms[prim as usize] as usize;
        if !self.eligible[g] || self.scene.geom_bodyid[g] == self.exclude || g as i32 == self.skip_geom {
            return false;
        }
        let mut mask = self.p.enters::<OWN>(&self.boxes[prim as usize], &self.best.t);
        if mask == 0 {
            return false;
        }
        let kind = self.scene.geom_type[g];
        // Rays with their own origins take the general path below: one instance of the
        // primitives' local tests keeps them inlined into the common packets' walk.
        if !OWN && matches!(kind, GeomType::Box | GeomType::Capsule | GeomType::Cylinder | GeomType::Ellipsoid) {
            // One local origin serves the whole packet; normals are rotated only for winners.
            let (pos, rot, size) = (self.xpos[g], &self.xmat[g], self.scene.geom_size[g]);
            let dif = self.p.o - pos;
            let (lpnt, sphere) = (to_local(rot, dif), primitives::BoundingSphere::new(kind, size, dif));
            let mut changed = false;
            while mask != 0 {
                let r = mask.trailing_zeros() as usize;
                mask &= mask - 1;
                if !sphere.passes(self.p.d[r]) {
                    continue;
                }
                let Some((t, n)) = primitives::intersect_local(kind, size, lpnt, to_local(rot, self.p.d[r])) else {
                    continue;
                };
                if t < self.best.t[r] || (t == self.best.t[r] && (g as i32) < self.best.g[r]) {
                    self.best.offer(r, g, t, *rot * n);
                    changed = true;
                }
            }
            if changed {
                self.update_tmax();
            }
            return false;
        }
        if OWN && kind == GeomType::Box {
            self.own_box(g, mask);
            self.update_tmax();
            return false;
        }
        while mask != 0 {
            let r = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let (d, tmax) = (self.p.d[r], self.best.t[r]);
            let o = if OWN { self.p.origin(r) } else { self.p.o };
            if let Some((t, n)) = intersect_geom(self.scene, g, self.xpos[g], &self.xmat[g], o, d, tmax) {
                self.best.offer(r, g, t, n);
            }
        }
        self.update_tmax();
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One sphere of radius 1 at (0, 0, 5), on the world body.
    fn sphere_scene() -> (Scene, Poses) {
        let scene = Scene {
            geom_type: vec![GeomType::Sphere],
            geom_size: vec![DVec3::new(1.0, 0.0, 0.0)],
            geom_group: vec![0],
            geom_bodyid: vec![0],
            geom_contype: vec![1],
            geom_conaffinity: vec![1],
            geom_dataid: vec![-1],
            geom_matid: vec![-1],
            geom_rgba: vec![[1.0; 4]],
            geom_name: vec!["ball".into()],
            body_parentid: vec![0],
            body_rootid: vec![0],
            body_weldid: vec![0],
            body_name: vec!["world".into()],
            ..Scene::default()
        };
        scene.validate().unwrap();
        let mut poses = Poses::new(&scene, 1);
        poses.geom_xpos[0] = DVec3::new(0.0, 0.0, 5.0);
        (scene, poses)
    }

    /// Rays from their own origins through a box's corners, tangent to its bounding sphere
    /// (where MuJoCo's pre-test, not the box, decides), in packets of shared signs: the box
    /// tests on lanes answer as single rays do.
    #[test]
    fn rays_grazing_box_corners_see_what_single_rays_see() {
        use rand::{Rng, SeedableRng};
        let (mut scene, mut poses) = sphere_scene();
        scene.geom_type[0] = GeomType::Box;
        scene.geom_size[0] = DVec3::new(0.25, 0.5, 0.75);
        poses.geom_xpos[0] = DVec3::ZERO;
        let caster = RayCaster::new(&scene, &poses);
        let prepared = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(52);
        let mut sign = || if rng.gen_bool(0.5) { 1.0 } else { -1.0 };
        let corner = DVec3::new(0.25 * sign(), 0.5 * sign(), 0.75 * sign());
        let (mut origins, mut dirs) = (Vec::new(), Vec::new());
        for k in 0..4000 {
            let a = k as f64 * 0.618;
            let across = DVec3::new(a.cos(), a.sin(), (3.0 * a).cos()).cross(corner).normalize();
            // Same signs for whole runs, so they go as packets.
            let d = if across.x < 0.0 { -across } else { across };
            origins.push(corner - 2.0 * d);
            dirs.push(d);
        }
        let mut order: Vec<usize> = (0..dirs.len()).collect();
        order.sort_by_key(|&k| (dirs[k].y < 0.0, dirs[k].z < 0.0));
        let (origins, dirs): (Vec<DVec3>, Vec<DVec3>) = order.iter().map(|&k| (origins[k], dirs[k])).unzip();
        let n = dirs.len();
        let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
        prepared.cast_each(0, &origins, &dirs, -1, &mut dist, &mut geomid, &mut normal).unwrap();
        let mut sphere_decides = 0;
        for k in 0..n {
            let one = prepared.cast_one(0, origins[k], dirs[k], -1, -1);
            assert_eq!(geomid[k], one.map_or(-1, |h| h.geomid), "ray {k}");
            if let Some(one) = one {
                assert_eq!((dist[k], normal[k]), (one.dist, one.normal), "ray {k}");
            }
            let bare = primitives::box_local(scene.geom_size[0], origins[k], dirs[k]).is_some();
            sphere_decides += usize::from(bare && one.is_none());
        }
        assert!(sphere_decides > 0, "no ray where the bounding sphere decides");
        // From one origin, as packets of beams: straight at each corner and edge midpoint.
        for origin in [DVec3::new(2.0, 1.5, 1.0), DVec3::new(-1.5, 0.7, -2.5)] {
            let targets =
                (0..27).map(|k| DVec3::new((k % 3) as f64 - 1.0, ((k / 3) % 3) as f64 - 1.0, (k / 9) as f64 - 1.0));
            let dirs: Vec<DVec3> = targets.map(|t| (t * scene.geom_size[0] - origin).normalize()).collect();
            let n = dirs.len();
            let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
            prepared.cast_from(0, origin, &dirs, -1, -1, &mut dist, &mut geomid, &mut normal).unwrap();
            for k in 0..n {
                let one = prepared.cast_one(0, origin, dirs[k], -1, -1);
                assert_eq!(geomid[k], one.map_or(-1, |h| h.geomid), "from {origin}, ray {k}");
            }
        }
    }

    #[test]
    fn a_bad_ray_deep_in_a_large_batch_is_named() {
        let (scene, poses) = sphere_scene();
        let caster = RayCaster::new(&scene, &poses);
        let mut dirs = vec![DVec3::Z; 10_000];
        let filter = RayFilter::default();
        let cast = |pnt: &[DVec3], vec: &[DVec3]| {
            caster.rays(&scene, &poses, &RayBatch { nray: 10_000, pnt, vec, bodyexclude: &[] }, &filter)
        };
        let hits = cast(&[DVec3::ZERO], &dirs).unwrap();
        assert!(hits.dist.iter().all(|&d| d == 4.0));
        dirs[7_777] = DVec3::new(f64::NAN, 0.0, 1.0);
        let err = cast(&[DVec3::ZERO], &dirs).unwrap_err();
        assert!(matches!(err, CoreError::BadDirection { index: 7_777, .. }), "{err}");
        dirs[7_777] = DVec3::Z;
        let mut origins = vec![DVec3::ZERO; 10_000];
        origins[9_999].x = f64::INFINITY;
        let err = cast(&origins, &dirs).unwrap_err();
        assert!(err.to_string().contains("ray 9999 starts at"), "{err}");
    }

    #[test]
    fn packets_and_single_rays_agree() {
        let (scene, poses) = sphere_scene();
        let caster = RayCaster::new(&scene, &poses);
        // A fan of coherent rays (packets) and the same rays one by one.
        let dirs: Vec<DVec3> =
            (0..64).map(|k| DVec3::new(0.005 * (k as f64 - 32.0), 0.01 * (k % 8) as f64, 1.0).normalize()).collect();
        let batch = RayBatch { nray: dirs.len(), pnt: &[DVec3::new(0.1, 0.0, 0.0)], vec: &dirs, bodyexclude: &[] };
        let hits = caster.rays(&scene, &poses, &batch, &RayFilter::default()).unwrap();
        for (i, &d) in dirs.iter().enumerate() {
            let one = caster.ray(&scene, &poses, 0, DVec3::new(0.1, 0.0, 0.0), d, &RayFilter::default(), -1).unwrap();
            assert_eq!((hits.dist[i], hits.geomid[i]), (one.dist, one.geomid));
            assert!((hits.normal[i] - one.normal).length() < 1e-15);
        }
        assert!(hits.geomid.iter().filter(|&&g| g == 0).count() > 30);
    }

    #[test]
    fn prepared_casts_match_batched_casts_and_name_bad_input() {
        let (scene, poses) = sphere_scene();
        let caster = RayCaster::new(&scene, &poses);
        let dirs: Vec<DVec3> =
            (0..100).map(|k| DVec3::new(0.01 * (k as f64 - 50.0), 0.02 * (k % 7) as f64, 1.0).normalize()).collect();
        let origin = DVec3::new(0.2, -0.1, 0.0);
        let filter = RayFilter::default();
        let batch = RayBatch { nray: dirs.len(), pnt: &[origin], vec: &dirs, bodyexclude: &[-1] };
        let want = caster.rays(&scene, &poses, &batch, &filter).unwrap();
        let prepared = caster.prepare(&scene, &poses, &filter).unwrap();
        let (mut dist, mut geomid, mut normal) = (vec![0.0; 100], vec![0; 100], vec![DVec3::ZERO; 100]);
        prepared.cast_from(0, origin, &dirs, -1, -1, &mut dist, &mut geomid, &mut normal).unwrap();
        assert_eq!((dist, geomid, normal), (want.dist, want.geomid.clone(), want.normal));
        assert!(want.geomid.contains(&0) && want.geomid.contains(&-1));
        // The sphere's own body excluded: nothing is hit.
        let (mut dist, mut geomid, mut normal) = (vec![0.0; 100], vec![0; 100], vec![DVec3::ZERO; 100]);
        prepared.cast_from(0, origin, &dirs, 0, -1, &mut dist, &mut geomid, &mut normal).unwrap();
        assert!(geomid.iter().all(|&g| g == -1));
        // So is it when the sphere itself is skipped, in packets and one ray at a time.
        prepared.cast_from(0, origin, &dirs, -1, 0, &mut dist, &mut geomid, &mut normal).unwrap();
        assert!(geomid.iter().all(|&g| g == -1));
        assert_eq!(prepared.cast_one(0, origin, DVec3::Z, -1, 0), None);
        assert_eq!(prepared.cast_one(0, origin, DVec3::Z, -1, -1).map(|h| h.geomid), Some(0));

        let mut bad = dirs.clone();
        bad[42] = DVec3::ZERO;
        let err = prepared.cast_from(0, origin, &bad, -1, -1, &mut dist, &mut geomid, &mut normal).unwrap_err();
        assert!(matches!(err, CoreError::BadDirection { index: 42, .. }), "{err}");
        let err = prepared.cast_from(1, origin, &dirs, -1, -1, &mut dist, &mut geomid, &mut normal).unwrap_err();
        assert!(matches!(err, CoreError::NoSuchWorld { world: 1, nworld: 1 }), "{err}");
        let err = prepared.cast_from(0, origin, &dirs, -1, -1, &mut dist[..5], &mut geomid, &mut normal).unwrap_err();
        assert!(err.to_string().contains("dist"), "{err}");
    }

    /// Primitives of every kind scattered around the origin, turned every which way, and a
    /// floor plane, all on the world body.
    fn cluttered_scene() -> (Scene, Poses) {
        let kinds = [GeomType::Box, GeomType::Sphere, GeomType::Capsule, GeomType::Cylinder, GeomType::Ellipsoid];
        let mut scene = Scene {
            geom_type: vec![GeomType::Plane],
            geom_size: vec![DVec3::new(0.0, 0.0, 1.0)],
            body_parentid: vec![0],
            body_rootid: vec![0],
            body_weldid: vec![0],
            body_name: vec!["world".into()],
            ..Scene::default()
        };
        let mut placed = vec![(DVec3::new(0.0, 0.0, -3.0), DMat3::IDENTITY)];
        for k in 0..40 {
            let f = k as f64;
            scene.geom_type.push(kinds[k % kinds.len()]);
            scene.geom_size.push(DVec3::new(0.3 + 0.1 * (k % 4) as f64, 0.2 + 0.15 * (k % 3) as f64, 0.25));
            let pos = DVec3::new(6.0 * (0.7 * f).sin(), 6.0 * (1.3 * f).cos(), 2.0 * (0.37 * f).sin());
            placed.push((pos, DMat3::from_euler(glam::EulerRot::ZYX, 0.4 * f, 0.9 * f, 0.2 * f)));
        }
        let n = scene.geom_type.len();
        scene.geom_group = vec![0; n];
        scene.geom_bodyid = vec![0; n];
        scene.geom_contype = vec![1; n];
        scene.geom_conaffinity = vec![1; n];
        scene.geom_dataid = vec![-1; n];
        scene.geom_matid = vec![-1; n];
        scene.geom_rgba = vec![[1.0; 4]; n];
        scene.geom_name = (0..n).map(|g| format!("g{g}")).collect();
        scene.validate().unwrap();
        let mut poses = Poses::new(&scene, 1);
        for (g, (pos, rot)) in placed.into_iter().enumerate() {
            (poses.geom_xpos[g], poses.geom_xmat[g]) = (pos, rot);
        }
        (scene, poses)
    }

    #[test]
    fn rays_cast_each_from_its_own_origin_see_what_single_rays_see() {
        let (scene, poses) = cluttered_scene();
        let caster = RayCaster::new(&scene, &poses);
        let prepared = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
        // Fans of coherent directions (packets), each ray from its own origin, spread as
        // beams refracted at a water surface would be (and wider).
        let mut seen = [0usize; 2];
        for fan in 0..24 {
            let (yaw, pitch) = (0.27 * fan as f64, 0.3 * ((fan % 5) as f64 - 2.0));
            let spread = 0.05 * (fan % 4) as f64;
            let (mut origins, mut dirs) = (Vec::new(), Vec::new());
            for k in 0..96 {
                let (a, b) = (yaw + 0.01 * (k % 12) as f64, pitch + 0.012 * (k / 12) as f64);
                dirs.push(DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin()));
                let wobble = DVec3::new((k % 7) as f64, (k % 5) as f64 - 2.0, (k % 3) as f64 - 1.0);
                origins.push(DVec3::new(0.3, -0.2, 0.1) + wobble * spread);
            }
            let n = dirs.len();
            let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
            prepared.cast_each(0, &origins, &dirs, -1, &mut dist, &mut geomid, &mut normal).unwrap();
            for k in 0..n {
                let one = prepared.cast_one(0, origins[k], dirs[k], -1, -1);
                assert_eq!(geomid[k], one.map_or(-1, |h| h.geomid), "fan {fan} ray {k}");
                if let Some(one) = one {
                    assert_eq!((dist[k], normal[k]), (one.dist, one.normal), "fan {fan} ray {k}");
                }
                seen[usize::from(geomid[k] >= 0)] += 1;
            }
        }
        assert!(seen[0] > 500 && seen[1] > 500, "hits and misses both tested: {seen:?}");

        let (mut dist, mut geomid, mut normal) = (vec![0.0; 2], vec![0; 2], vec![DVec3::ZERO; 2]);
        let dirs = [DVec3::X, DVec3::Y];
        let err = prepared.cast_each(0, &[DVec3::ZERO], &dirs, -1, &mut dist, &mut geomid, &mut normal);
        assert!(err.unwrap_err().to_string().contains("origins"));
        let bad = [DVec3::ZERO, DVec3::NAN];
        assert!(prepared.cast_each(0, &bad, &dirs, -1, &mut dist, &mut geomid, &mut normal).is_err());
    }

    /// The trusted casts answer good rays as the checked ones do, and bad rays (which they
    /// do not look for) without panicking, in packets and one by one.
    #[test]
    fn trusted_casts_answer_as_checked_ones_and_survive_bad_rays() {
        let (scene, poses) = cluttered_scene();
        let caster = RayCaster::new(&scene, &poses);
        let prepared = caster.prepare(&scene, &poses, &RayFilter::default()).unwrap();
        let dirs: Vec<DVec3> = (0..200)
            .map(|k| {
                let (a, b) = (0.031 * k as f64, 0.2 * ((k % 9) as f64 - 4.0) / 4.0);
                DVec3::new(a.cos() * b.cos(), a.sin() * b.cos(), b.sin())
            })
            .collect();
        let origins: Vec<DVec3> = (0..200).map(|k| DVec3::new(0.1, -0.2, 0.05 * (k % 5) as f64)).collect();
        let n = dirs.len();
        let answers = |trusted: bool, each: bool, origins: &[DVec3], dirs: &[DVec3]| {
            let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0; n], vec![DVec3::ZERO; n]);
            let out = (&mut dist[..], &mut geomid[..], &mut normal[..]);
            let done = match (trusted, each) {
                (false, false) => prepared.cast_from(0, origins[0], dirs, -1, 3, out.0, out.1, out.2),
                (true, false) => prepared.cast_trusted((0, Origins::Shared(origins[0]), dirs), (-1, 3), out),
                (false, true) => prepared.cast_each(0, origins, dirs, -1, out.0, out.1, out.2),
                (true, true) => prepared.cast_trusted((0, Origins::Each(origins), dirs), (-1, -1), out),
            };
            done.map(|()| (dist, geomid, normal))
        };
        for each in [false, true] {
            let checked = answers(false, each, &origins, &dirs).unwrap();
            assert_eq!(answers(true, each, &origins, &dirs).unwrap(), checked);
            assert!(checked.1.iter().any(|&g| g >= 0) && checked.1.contains(&-1));
        }
        let mut bad_dirs = dirs.clone();
        let mut bad_origins = origins.clone();
        for k in (0..n).step_by(3) {
            bad_dirs[k] = [DVec3::ZERO, DVec3::NAN, DVec3::INFINITY][k / 3 % 3];
            bad_origins[k] = DVec3::new(f64::NAN, 0.0, f64::NEG_INFINITY);
        }
        for each in [false, true] {
            assert!(answers(false, each, &bad_origins, &bad_dirs).is_err());
            assert!(answers(true, each, &bad_origins, &bad_dirs).is_ok());
        }
    }
}
