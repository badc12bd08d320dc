//! Prepared queries: a filter resolved once, for callers that run their own parallel loop and
//! cast small groups of rays serially.

use glam::DVec3;

use super::batch::RayBatch;
use super::caster::RayCaster;
use super::dispatch::intersect_geom;
use super::filter::RayFilter;
use super::hits::{HitsMut, RayHit};
use super::query::Query;
use crate::isa::{Isa, with_isa};
use crate::packet::{PACKET, Packet};
use crate::primitives;
use crate::{CoreError, Poses, Scene, SkinSurface, nearest_skin};

impl RayCaster {
    /// Resolves `filter` once for callers that run their own parallel loop and cast small
    /// groups of rays serially (a lidar writing each group straight into its scan).
    pub fn prepare<'a>(
        &'a self,
        scene: &'a Scene,
        poses: &'a Poses,
        filter: &RayFilter,
    ) -> Result<PreparedRays<'a>, CoreError> {
        self.check_poses(poses)?;
        Ok(PreparedRays { caster: self, scene, poses, eligible: filter.eligible(scene), skins: None })
    }
}

/// The skins a [`PreparedRays`] meets besides the geoms.
struct Skins<'a> {
    /// Per world, its posed skins.
    per_world: &'a [Vec<SkinSurface>],
    /// Per skin of the scene, whether the rays meet it.
    admitted: Vec<bool>,
}

/// A closest-hit query whose filter is resolved, from [`RayCaster::prepare`]. Each call
/// casts serially on the calling thread.
pub struct PreparedRays<'a> {
    caster: &'a RayCaster,
    scene: &'a Scene,
    poses: &'a Poses,
    eligible: Vec<bool>,
    skins: Option<Skins<'a>>,
}

/// The rays of one [`PreparedRays::cast`], and what they pass through.
#[derive(Clone, Copy, Debug)]
pub struct Cast<'a> {
    /// The world the rays are cast in.
    pub world: usize,
    /// Where the rays start: one point for all, or one point per direction.
    pub origins: Origins<'a>,
    /// Ray directions; distances are reported in units of their length, as in `mj_ray`.
    pub dirs: &'a [DVec3],
    /// A body whose geoms the rays ignore (`-1`: none).
    pub exclude_body: i32,
    /// A geom the rays pass through (`-1`: none), answered as `mj_ray` would answer with that
    /// geom removed: the surfaces behind it.
    pub skip_geom: i32,
    /// Whether the rays are known to be good, so that the check of every origin and direction
    /// is skipped: for continuations of rays the core has already cast, with their starts and
    /// directions checked finite by the caller. A trusted ray whose origin or direction is not
    /// finite, or whose direction is zero, gets an unspecified answer, never a panic.
    pub trusted: bool,
}

/// Where the rays of a [`Cast`] start.
#[derive(Clone, Copy, Debug)]
pub enum Origins<'a> {
    /// All from one point: a lidar's beams from its origin, or continuing along the same
    /// directions past a pane of glass.
    Shared(DVec3),
    /// Each from its own, one per direction: a lidar's beams folded by a mirror or refracted
    /// into water, from where each met it. Packets carry each ray's own origin.
    Each(&'a [DVec3]),
}

/// The ray of one [`PreparedRays::cast_one`].
#[derive(Clone, Copy, Debug)]
pub struct CastOne {
    /// The world the ray is cast in.
    pub world: usize,
    /// Where the ray starts.
    pub origin: DVec3,
    /// Its direction; the distance is reported in units of its length.
    pub dir: DVec3,
    /// A body whose geoms the ray ignores (`-1`: none).
    pub exclude_body: i32,
    /// A geom the ray passes through (`-1`: none).
    pub skip_geom: i32,
}

impl<'a> PreparedRays<'a> {
    /// The same queries, meeting also the skins `per_world` (one list per world, from
    /// [`SkinSurface::pose_world`]) that `admitted` admits (one entry per skin of the scene):
    /// a nearer skin wins over the geom, reported as geom id `ngeom + skin` with its face's
    /// normal. `mj_ray` sees no skin; a lidar that opts in does. A cast's `skip_geom` of
    /// `ngeom + skin` passes through that skin.
    pub fn with_skins(mut self, per_world: &'a [Vec<SkinSurface>], admitted: Vec<bool>) -> Self {
        self.skins = Some(Skins { per_world, admitted });
        self
    }

    /// Casts the rays of `cast` into `out`, whose arrays are each as long as `cast.dirs`
    /// (and so is `cast.origins` when it gives one origin per ray). Rays go in packets in
    /// the order given, so neighbouring directions should be neighbours here. Fails, naming
    /// what is wrong, for arrays of the wrong length, a world that does not exist, or (unless
    /// `cast.trusted`) a ray with a non-finite origin or a zero or non-finite direction.
    pub fn cast(&self, cast: Cast, out: HitsMut) -> Result<(), CoreError> {
        self.cast_within(cast, f64::INFINITY, out)
    }

    /// [`PreparedRays::cast`] of surfaces nearer than `reach` only (in units of each
    /// direction's length): a ray whose first surface lies at `reach` or beyond is a miss.
    /// The walk prunes everything past `reach` from the start, so a visibility test (is
    /// anything between here and there?) costs far less than a closest hit. Fails as `cast`
    /// does, and for a `reach` that is NaN or not positive.
    pub fn cast_within(&self, cast: Cast, reach: f64, out: HitsMut) -> Result<(), CoreError> {
        if reach.is_nan() || reach <= 0.0 {
            return Err(CoreError::BadReach { reach });
        }
        let Cast { world, origins, dirs, exclude_body, skip_geom, trusted } = cast;
        let shared;
        let (origins, own) = match origins {
            Origins::Shared(origin) => {
                shared = [origin];
                (&shared[..], false)
            }
            Origins::Each(origins) => {
                self.check_origins(origins, dirs)?;
                (origins, true)
            }
        };
        let HitsMut { dist, geomid, normal } = out;
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
        let batch = RayBatch { nray, pnt: origins, vec: dirs, bodyexclude: &[exclude_body] };
        if !trusted && !batch.chunk_ok(0, nray) {
            batch.validate(1)?;
        }
        let q = Query { own, reach, ..self.query(&batch, world, skip_geom) };
        let mut packet = Packet::empty();
        // One choice of instruction set per cast: every packet of it takes that path.
        with_isa!(isa => {
            let mut i = 0;
            while i < nray {
                let run = PACKET.min(nray - i);
                let out = HitsMut {
                    dist: &mut dist[i..i + run],
                    geomid: &mut geomid[i..i + run],
                    normal: &mut normal[i..i + run],
                };
                self.caster.cast_run(isa, &q, 0, i, &mut packet, out);
                i += run;
            }
        });
        if let Some(skins) = &self.skins {
            for r in 0..nray {
                let origin = origins[if own { r } else { 0 }];
                let hit = RayHit { dist: dist[r], geomid: geomid[r], normal: normal[r] };
                let met = self.meet_skins(skins, world, skip_geom, (origin, dirs[r]), hit, reach);
                (dist[r], geomid[r], normal[r]) = (met.dist, met.geomid, met.normal);
            }
        }
        Ok(())
    }

    /// `hit`, or the skin the ray meets first if one is nearer.
    fn meet_skins(
        &self,
        skins: &Skins,
        world: usize,
        skip_geom: i32,
        (origin, dir): (DVec3, DVec3),
        hit: RayHit,
        reach: f64,
    ) -> RayHit {
        let Some(posed) = skins.per_world.get(world) else { return hit };
        let ngeom = self.scene.ngeom();
        let skipped = usize::try_from(skip_geom).ok().and_then(|g| g.checked_sub(ngeom));
        let admit = |p: &SkinSurface| skins.admitted.get(p.skin) == Some(&true) && Some(p.skin) != skipped;
        let reach = if hit.geomid >= 0 { hit.dist } else { reach };
        match nearest_skin(posed, admit, origin, dir, reach) {
            Some(h) if h.t < reach => RayHit { dist: h.t, geomid: (ngeom + h.skin) as i32, normal: h.face_normal },
            _ => hit,
        }
    }

    /// One ray, as [`PreparedRays::cast`] would answer it: `None` on a miss or for a
    /// non-finite or zero-length ray (or a world that does not exist). For the continuation
    /// of one beam through a surface it has already crossed.
    #[inline]
    pub fn cast_one(&self, ray: CastOne) -> Option<RayHit> {
        let CastOne { world, origin, dir, exclude_body, skip_geom } = ray;
        let batch = RayBatch { nray: 1, pnt: &[origin], vec: &[dir], bodyexclude: &[exclude_body] };
        if !batch.chunk_ok(0, 1) || world >= self.poses.nworld {
            return None;
        }
        let q = self.query(&batch, world, skip_geom);
        let mut hit = with_isa!(isa => self.caster.cast(isa, &q, 0, 0));
        if let Some(skins) = &self.skins {
            hit = self.meet_skins(skins, world, skip_geom, (origin, dir), hit, f64::INFINITY);
        }
        (hit.geomid >= 0).then_some(hit)
    }

    /// Whether the filter lets rays meet geom `geom` (false for a geom that does not exist).
    pub fn admits(&self, geom: usize) -> bool {
        self.eligible.get(geom).copied().unwrap_or(false)
    }

    /// The hit of one ray on geom `geom` alone, nearer than `reach` (in units of the
    /// direction's length), as [`PreparedRays::cast_one`] would find that geom's surface:
    /// `None` where it misses, where the filter leaves the geom out, or for a world or geom
    /// that does not exist. `ray`'s excluded body and skipped geom are not consulted. For
    /// asking whether a surface known to overlap another (a visual geom over its collision
    /// twin) meets the ray where that one does, without a walk of the scene.
    pub fn cast_geom(&self, ray: CastOne, geom: usize, reach: f64) -> Option<RayHit> {
        let CastOne { world, origin, dir, .. } = ray;
        if world >= self.poses.nworld || !self.admits(geom) {
            return None;
        }
        let geo = self.caster.set(world).geometry(self.scene);
        let (xpos, xmat) = self.poses.geoms(world);
        let (kind, size) = (geo.shapes.geom_type[geom], geo.shapes.geom_size[geom]);
        if primitives::segment_misses(kind, size, origin - xpos[geom], dir, reach) {
            return None;
        }
        let hit =
            with_isa!(isa => isa.run(|| intersect_geom(isa, geo, geom, xpos[geom], &xmat[geom], origin, dir, reach)));
        hit.filter(|&(dist, _)| dist < reach).map(|(dist, normal)| RayHit { dist, geomid: geom as i32, normal })
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
            reach: f64::INFINITY,
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
}
