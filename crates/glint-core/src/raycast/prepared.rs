//! Prepared queries: a filter resolved once, for callers that run their own parallel loop and
//! cast small groups of rays serially.

use glam::DVec3;

use super::batch::RayBatch;
use super::caster::RayCaster;
use super::filter::RayFilter;
use super::hits::{HitsMut, RayHit};
use super::query::Query;
use crate::isa::with_isa;
use crate::packet::{PACKET, Packet};
use crate::{CoreError, Poses, Scene};

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
        Ok(PreparedRays { caster: self, scene, poses, eligible: filter.eligible(scene) })
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

impl PreparedRays<'_> {
    /// Casts the rays of `cast` into `out`, whose arrays are each as long as `cast.dirs`
    /// (and so is `cast.origins` when it gives one origin per ray). Rays go in packets in
    /// the order given, so neighbouring directions should be neighbours here. Fails, naming
    /// what is wrong, for arrays of the wrong length, a world that does not exist, or (unless
    /// `cast.trusted`) a ray with a non-finite origin or a zero or non-finite direction.
    pub fn cast(&self, cast: Cast, out: HitsMut) -> Result<(), CoreError> {
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
        let q = Query { own, ..self.query(&batch, world, skip_geom) };
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
        Ok(())
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
        let hit = with_isa!(isa => self.caster.cast(isa, &q, 0, 0));
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
