//! A packet's walk through one world's top level: the planes offered first, then the BVH
//! walked once for all its rays, each leaf's geoms tested for the rays that enter their box.

use glam::{DMat3, DVec3};

use super::batch::RayBatch;
use super::caster::{Geometry, RayCaster};
use super::dispatch::intersect_geom;
use super::hits::{HitsMut, RayHit, beats, beats_lanes};
use super::query::Query;
use crate::GeomType;
use crate::bvh::{Aabb, Node4, Visitor, WIDTH};
use crate::isa::{Isa, Lanes, Mask};
use crate::lanes::{self, LANES};
use crate::mesh::LocalRays;
use crate::packet::{PACKET, Packet, fold_lanes};
use crate::primitives::{self, to_local};

impl RayCaster {
    /// Closest hits of the packet just `set` from rays of world `w` (ray `k` of the packet is
    /// the batch's ray `ray(k)`), from their shared origin or, for a query with `own`, each
    /// from its own.
    #[inline(always)]
    pub(super) fn cast_set_packet<I: Isa>(
        &self,
        isa: I,
        q: &Query,
        w: usize,
        ray: impl Fn(usize) -> usize,
        exclude: i32,
        packet: &mut Packet,
    ) -> PacketBest {
        if q.own {
            self.cast_packet_own(isa, q, w, ray, exclude, packet)
        } else {
            self.cast_packet::<I, false>(isa, q, w, exclude, packet)
        }
    }

    /// Closest hits of a packet of rays of world `w` (ray `k` of the packet is the batch's
    /// ray `ray(k)`), each from its own origin. Kept apart so that the common packets' code is
    /// inlined as it would be without it.
    #[inline(never)]
    fn cast_packet_own<I: Isa>(
        &self,
        isa: I,
        q: &Query,
        w: usize,
        ray: impl Fn(usize) -> usize,
        exclude: i32,
        packet: &mut Packet,
    ) -> PacketBest {
        isa.run(
            #[inline(always)]
            || {
                let nray = q.batch.nray;
                packet.set_origins(|k| RayBatch::pick(q.batch.pnt, nray, w, ray(k)));
                self.cast_packet::<I, true>(isa, q, w, exclude, packet)
            },
        )
    }

    /// Closest hits of a packet of rays in world `w` (`OWN`: each ray from its own origin).
    /// Each function of the packet's walk that is kept out of line enters `I` itself (free
    /// where it is inlined after all): code out of line is compiled for the build's CPU.
    fn cast_packet<I: Isa, const OWN: bool>(
        &self,
        isa: I,
        q: &Query,
        w: usize,
        exclude: i32,
        p: &Packet,
    ) -> PacketBest {
        isa.run(
            #[inline(always)]
            || self.walk_packet::<I, OWN>(isa, q, w, exclude, p),
        )
    }

    /// [`RayCaster::cast_packet`]'s body, compiled for `I`.
    #[inline(always)]
    fn walk_packet<I: Isa, const OWN: bool>(
        &self,
        isa: I,
        q: &Query,
        w: usize,
        exclude: i32,
        p: &Packet,
    ) -> PacketBest {
        let set = self.set(q.world0 + w);
        let (geo, eligible) = (set.geometry(q.scene), q.eligible);
        let (xpos, xmat) = q.poses.geoms(q.world0 + w);
        // The walk is built first and the planes offered into it, so that its closest hits
        // (1 KB) are never copied in.
        let mut walk = PacketWalk::<I, OWN> {
            isa,
            geo,
            xpos,
            xmat,
            eligible,
            exclude,
            skip_geom: q.skip_geom,
            geoms: &set.tlas_geoms,
            boxes: &self.tlas_boxes[q.world0 + w],
            p,
            best: PacketBest::new(OWN, q.reach),
            packet_tmax: 0.0,
        };
        // What the one-ray path answers for a plane (the walk with own origins keeps normals
        // unit).
        let plane_normal = |g: usize| if OWN { xmat[g].z_axis.normalize() } else { xmat[g].z_axis };
        for &g in &set.planes {
            let g = g as usize;
            if q.usable(g, exclude) {
                let (t, n) = (p.plane::<OWN>(xpos[g], &xmat[g], geo.shapes.geom_size[g]), plane_normal(g));
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
}

/// Rays of a packet from which a box is tested on all the packet's lanes at once.
const SHARED_BOX_LANES: u32 = 4;
/// Rays of a packet from which they walk a mesh together rather than one by one.
const MESH_PACKET_LANES: u32 = 4;

/// Closest hits so far of a packet's rays (structure of arrays).
pub(super) struct PacketBest {
    t: [f64; PACKET],
    /// Geom ids as floats (exact), so that the box lanes compare and pick them with the
    /// distances.
    g: [f64; PACKET],
    /// Normals by axis.
    n: [[f64; PACKET]; 3],
    /// Whether the normals offered are unit already (the walk with own origins, which offers
    /// what the one-ray path answers), so that they are handed out as they are.
    unit: bool,
}

impl PacketBest {
    /// No hit yet, on rays that reach `reach`.
    fn new(unit: bool, reach: f64) -> Self {
        PacketBest { t: [reach; PACKET], g: [-1.0; PACKET], n: [[0.0; PACKET]; 3], unit }
    }

    /// Whether a hit on geom `g` at `t` [`beats`] ray `r`'s best so far.
    #[inline(always)]
    fn beats(&self, r: usize, g: usize, t: f64) -> bool {
        beats(t, g, self.t[r], self.g[r] as i32)
    }

    /// Takes the hit for ray `r` when it beats the best so far.
    #[inline(always)]
    fn offer(&mut self, r: usize, g: usize, t: f64, n: DVec3) {
        if self.beats(r, g, t) {
            (self.t[r], self.g[r]) = (t, g as f64);
            (self.n[0][r], self.n[1][r], self.n[2][r]) = (n.x, n.y, n.z);
        }
    }

    /// Writes the answer of each of the packet's first `n` lanes `k` into `out` at `ray(k)`.
    #[inline]
    pub(super) fn write(&self, n: usize, out: &mut HitsMut, ray: impl Fn(usize) -> usize) {
        // Normals were kept unnormalized until here, and are normalized on all lanes at once:
        // glam's `normalize` (`v * (1 / sqrt(v · v))`), the same operations in the same order.
        let mut unit = self.n;
        if !self.unit {
            let [xs, ys, zs] = &mut unit;
            for ((x, y), z) in xs.iter_mut().zip(ys.iter_mut()).zip(zs.iter_mut()) {
                let inv = 1.0 / (*x * *x + *y * *y + *z * *z).sqrt();
                (*x, *y, *z) = (*x * inv, *y * inv, *z * inv);
            }
        }
        for (k, (&g, &t)) in self.g.iter().zip(&self.t).enumerate().take(n) {
            let hit = if g < 0.0 {
                RayHit::MISS
            } else {
                RayHit { dist: t, geomid: g as i32, normal: DVec3::new(unit[0][k], unit[1][k], unit[2][k]) }
            };
            out.set(ray(k), hit);
        }
    }
}

/// A packet's walk through one world's top level, on the instruction set `I`.
struct PacketWalk<'a, I, const OWN: bool> {
    isa: I,
    geo: Geometry<'a>,
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

impl<I: Isa, const OWN: bool> PacketWalk<'_, I, OWN> {
    fn update_tmax(&mut self) {
        self.packet_tmax = fold_lanes(&self.best.t, self.p.n, 0.0, |t, m| t > m);
    }

    /// The rays of `mask`, each from its own origin, against box `g`, all lanes at once: what
    /// `intersect_geom` answers each, to the bit (MuJoCo's bounding-sphere test, then the
    /// six-face loop in the box's frame, then the normal rotated back and normalized).
    #[inline(never)]
    fn own_box(&mut self, g: usize, mask: u32) {
        self.isa.run(
            #[inline(always)]
            || self.own_box_on(g, mask),
        )
    }

    /// [`PacketWalk::own_box`]'s body, compiled for `I`.
    #[inline(always)]
    fn own_box_on(&mut self, g: usize, mut mask: u32) {
        let (pos, rot, size) = (self.xpos[g], &self.xmat[g], self.geo.shapes.geom_size[g]);
        let radius_sqr = primitives::bounding_sphere_sqr(GeomType::Box, size);
        let (mut lpnt, mut lvec, mut passes) = ([[0.0; PACKET]; 3], [[0.0; PACKET]; 3], [false; PACKET]);
        for r in 0..PACKET {
            let (dif, d) = (self.p.origin(r) - pos, self.p.dir(r));
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

impl<I: Isa, const OWN: bool> PacketWalk<'_, I, OWN> {
    /// The rays of `mask` against mesh `g`, walking its BVH together: what `intersect_geom`
    /// answers each, to the bit (the walk's distance and triangle, the normal rotated into
    /// the world frame and normalized).
    #[inline(never)]
    fn mesh(&mut self, g: usize, mask: u32) {
        self.isa.run(
            #[inline(always)]
            || self.mesh_on(g, mask),
        )
    }

    /// [`PacketWalk::mesh`]'s body, compiled for `I`.
    #[inline(always)]
    fn mesh_on(&mut self, g: usize, mask: u32) {
        let tris = self.geo.shapes.mesh(self.geo.scene, g).triangles();
        let (pos, rot) = (self.xpos[g], &self.xmat[g]);
        let p = self.p;
        let shared = to_local(rot, p.o - pos);
        let origin = |r: usize| if OWN { to_local(rot, p.origin(r) - pos) } else { shared };
        let mut rays = LocalRays::new(mask, origin, |r| to_local(rot, p.dir(r)), &self.best.t);
        let mut found = tris.closest_packet::<I, OWN>(self.isa, &mut rays, mask);
        while found != 0 {
            let r = found.trailing_zeros() as usize;
            found &= found - 1;
            let (t, i) = rays.hit(r);
            // Normalized where the packet hands normals out as offered; else once, in `write`.
            let n = *rot * tris.stored_normal(i);
            self.best.offer(r, g, t, if OWN { n.normalize() } else { n });
        }
        self.update_tmax();
    }

    /// The rays of `mask`, all from the packet's origin, against box `g` on all lanes at once:
    /// what `intersect_local` answers each, to the bit (MuJoCo's bounding-sphere test, then
    /// the entry-face decision where it is clear and the six-face loop where it is not), with
    /// the normal rotated into the world frame for the winners. Eight lanes at a time on
    /// `I`'s vectors, from the directions to the packet's closest hits.
    #[inline(never)]
    fn shared_box(&mut self, g: usize, mask: u32) {
        self.isa.run(
            #[inline(always)]
            || self.shared_box_on(g, mask),
        )
    }

    /// [`PacketWalk::shared_box`]'s body, compiled for `I`.
    #[inline(always)]
    fn shared_box_on(&mut self, g: usize, mask: u32) {
        let isa = self.isa;
        let xmat = self.xmat;
        let (pos, rot, size) = (self.xpos[g], &xmat[g], self.geo.shapes.geom_size[g]);
        let dif = self.p.o - pos;
        let lpnt = to_local(rot, dif);
        let sphere = primitives::BoundingSphere::new(GeomType::Box, size, dif);
        let entry = primitives::EntryAxes::new(size, lpnt);
        // Each face's normal rotated into the world frame once (as `offer_local_hits` rotates
        // a winner's), picked per lane.
        let normals: [DVec3; 6] = std::array::from_fn(|f| *rot * primitives::face_normal(f));
        let [dx, dy, dz] = &self.p.dir_axis;
        let (splat, gf) = (|x| isa.splat(x), g as f64);
        let best = &mut self.best;
        let (mut won, mut unclear_mask) = (0u32, 0u32);
        for b in 0..PACKET / LANES {
            let bits = (mask >> (LANES * b)) & 0xff;
            if bits == 0 {
                continue;
            }
            let d = [lanes::load(isa, dx, b), lanes::load(isa, dy, b), lanes::load(isa, dz, b)];
            // Written out, not through `array::from_fn` or `fold`: a closure they left out of
            // line would lose `I` (`Isa::run`).
            let lvec = [
                lanes::dot(&lanes::splat3(isa, rot.x_axis), &d),
                lanes::dot(&lanes::splat3(isa, rot.y_axis), &d),
                lanes::dot(&lanes::splat3(isa, rot.z_axis), &d),
            ];
            let (t, face, unclear) = match &entry {
                Some(entry) => entry.lanes(isa, lvec),
                None => primitives::box_lanes8(isa, size, lpnt, lvec),
            };
            let passes = sphere.passes8(isa, d);
            let offered = isa.of_bits(bits) & passes & !unclear & face.simd_lt(splat(6.0));
            let (best_t, best_g) = (lanes::load(isa, &best.t, b), lanes::load(isa, &best.g, b));
            let wins = offered & beats_lanes(isa, t, gf, best_t, best_g);
            lanes::store(&mut best.t, b, wins.select(t, best_t));
            lanes::store(&mut best.g, b, wins.select(splat(gf), best_g));
            for (a, n) in best.n.iter_mut().enumerate() {
                let mut normal = splat(0.0);
                for (f, face_normal) in normals.iter().enumerate() {
                    normal = face.simd_eq(splat(f as f64)).select(splat(face_normal[a]), normal);
                }
                let kept = lanes::load(isa, n, b);
                lanes::store(n, b, wins.select(normal, kept));
            }
            won |= wins.to_bitmask() << (LANES * b);
            unclear_mask |= (unclear & passes).to_bitmask() << (LANES * b);
        }
        // Near edges and corners: MuJoCo's six-face loop, one ray at a time.
        let unclear_mask = unclear_mask & mask;
        if unclear_mask != 0 {
            let all = primitives::BoundingSphere::with_radius(dif, None);
            self.offer_local_hits(g, unclear_mask, &all, rot, |_, d| {
                primitives::box_local(size, lpnt, to_local(rot, d))
            });
        }
        if won != 0 {
            self.update_tmax();
        }
    }

    /// Offers the hits on geom `g` of the rays of `mask` (all from the packet's origin) that
    /// pass MuJoCo's bounding-sphere test: `hit(r, d)` answers ray `r`, along `d`, in the
    /// geom's frame, and only the winners' normals are rotated by `rot` into the world frame.
    /// Updates the packet's bound when some ray's best changed.
    #[inline(always)]
    fn offer_local_hits(
        &mut self,
        g: usize,
        mut mask: u32,
        sphere: &primitives::BoundingSphere,
        rot: &DMat3,
        mut hit: impl FnMut(usize, DVec3) -> Option<primitives::LocalHit>,
    ) {
        let mut changed = false;
        while mask != 0 {
            let r = mask.trailing_zeros() as usize;
            mask &= mask - 1;
            let d = self.p.dir(r);
            if !sphere.passes(d) {
                continue;
            }
            if let Some((t, n)) = hit(r, d)
                && self.best.beats(r, g, t)
            {
                self.best.offer(r, g, t, *rot * n);
                changed = true;
            }
        }
        if changed {
            self.update_tmax();
        }
    }
}

impl<I: Isa, const OWN: bool> Visitor for PacketWalk<'_, I, OWN> {
    #[inline(always)]
    fn entry4(&self, n: &Node4) -> [f64; WIDTH] {
        self.p.entry4::<OWN>(n, self.packet_tmax)
    }

    #[inline]
    fn prim(&mut self, prim: u32) -> bool {
        // Free where the walk inlines it (as it does), its own entry to `I` where it does not.
        self.isa.run(
            #[inline(always)]
            || self.prim_on(prim),
        )
    }
}

impl<I: Isa, const OWN: bool> PacketWalk<'_, I, OWN> {
    /// [`Visitor::prim`].
    #[inline(always)]
    fn prim_on(&mut self, prim: u32) -> bool {
        let g = self.geoms[prim as usize] as usize;
        if !self.eligible[g] || self.geo.scene.geom_bodyid[g] == self.exclude || g as i32 == self.skip_geom {
            return false;
        }
        let mut mask = self.p.enters::<I, OWN>(self.isa, &self.boxes[prim as usize], &self.best.t);
        if mask == 0 {
            return false;
        }
        let kind = self.geo.shapes.geom_type[g];
        if kind == GeomType::Mesh && mask.count_ones() >= MESH_PACKET_LANES {
            self.mesh(g, mask);
            return false;
        }
        // A few rays are quicker one at a time than on all the packet's lanes.
        if !OWN && kind == GeomType::Box && mask.count_ones() >= SHARED_BOX_LANES {
            self.shared_box(g, mask);
            return false;
        }
        // Rays with their own origins take the general path below: one instance of the
        // primitives' local tests keeps them inlined into the common packets' walk.
        if !OWN && matches!(kind, GeomType::Box | GeomType::Capsule | GeomType::Cylinder | GeomType::Ellipsoid) {
            let xmat = self.xmat;
            let (pos, rot, size) = (self.xpos[g], &xmat[g], self.geo.shapes.geom_size[g]);
            let dif = self.p.o - pos;
            let (lpnt, sphere) = (to_local(rot, dif), primitives::BoundingSphere::new(kind, size, dif));
            self.offer_local_hits(g, mask, &sphere, rot, |_, d| {
                primitives::intersect_local(kind, size, lpnt, to_local(rot, d))
            });
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
            let (d, tmax) = (self.p.dir(r), self.best.t[r]);
            let o = if OWN { self.p.origin(r) } else { self.p.o };
            if let Some((t, n)) = intersect_geom(self.isa, self.geo, g, self.xpos[g], &self.xmat[g], o, d, tmax) {
                self.best.offer(r, g, t, n);
            }
        }
        self.update_tmax();
        false
    }
}
