//! Prepared queries: a filter resolved once, for callers that run their own parallel loop and
//! cast small groups of rays serially.

use glam::DVec3;

use super::batch::RayBatch;
use super::caster::RayCaster;
use super::filter::RayFilter;
use super::hits::{Out, RayHit};
use super::query::Query;
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
        if poses.nworld != self.tlas.len() {
            return Err(CoreError::Shape {
                field: "poses",
                len: poses.nworld,
                expected: format!("the ray caster was built for {} worlds", self.tlas.len()),
            });
        }
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
