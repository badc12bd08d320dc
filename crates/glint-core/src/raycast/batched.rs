//! The batched queries over every world (or a range of worlds), parallel on the rayon pool:
//! closest hits into caller-owned arrays or allocated ones, one ray as `mj_ray`, any-hit.

use std::sync::atomic::{AtomicBool, Ordering};

use glam::DVec3;
use rayon::prelude::*;

use super::batch::RayBatch;
use super::caster::RayCaster;
use super::filter::RayFilter;
use super::hits::{HitsMut, RayHit, RayHits};
use super::query::Query;
use crate::isa::with_isa;
use crate::packet::{PACKET, Packet};
use crate::{CoreError, Poses, Scene};

const CHUNK: usize = 1024;

/// What `check_worlds` checks of a batch besides its shapes.
#[derive(Clone, Copy)]
enum Checks {
    /// Every ray too.
    Rays,
    /// The shapes only: `rays_worlds_into` checks the rays chunk by chunk inside its parallel
    /// loop, where a serial pass would cost a visible share of the time.
    Shapes,
}

impl RayCaster {
    /// Checks a query over the worlds `worlds`: the poses against the caster, the worlds, the
    /// batch's shapes (and its rays, as `checks` says) and the output length.
    fn check_worlds(
        &self,
        poses: &Poses,
        worlds: std::ops::Range<usize>,
        batch: &RayBatch,
        out_len: usize,
        checks: Checks,
    ) -> Result<(), CoreError> {
        self.check_poses(poses)?;
        if worlds.end > poses.nworld || worlds.is_empty() {
            return Err(CoreError::NoSuchWorld { world: worlds.end.max(1) - 1, nworld: poses.nworld });
        }
        let nworld = worlds.len();
        match checks {
            Checks::Rays => batch.validate(nworld)?,
            Checks::Shapes => batch.validate_shapes(nworld)?,
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
    pub fn rays_into(
        &self,
        scene: &Scene,
        poses: &Poses,
        batch: &RayBatch,
        filter: &RayFilter,
        out: HitsMut,
    ) -> Result<(), CoreError> {
        self.rays_worlds_into(scene, poses, 0..poses.nworld, batch, filter, out)
    }

    /// As [`RayCaster::rays_into`], for the worlds `worlds` only: the batch's arrays and the
    /// outputs are shaped `(worlds.len(), nray)`, and batch world `k` is world
    /// `worlds.start + k`. Sensors whose worlds are at different points of a scan use it.
    pub fn rays_worlds_into(
        &self,
        scene: &Scene,
        poses: &Poses,
        worlds: std::ops::Range<usize>,
        batch: &RayBatch,
        filter: &RayFilter,
        out: HitsMut,
    ) -> Result<(), CoreError> {
        let HitsMut { dist, geomid, normal } = out;
        let world0 = worlds.start;
        self.check_worlds(poses, worlds, batch, dist.len(), Checks::Shapes)?;
        for (field, len) in [("geomid", geomid.len()), ("normal", normal.len())] {
            if len != dist.len() {
                return Err(CoreError::Shape {
                    field,
                    len,
                    expected: format!("it must hold as many entries as dist ({})", dist.len()),
                });
            }
        }
        let eligible = filter.eligible(scene);
        let q =
            Query { scene, poses, eligible: &eligible, batch, world0, skip_geom: -1, own: false, reach: f64::INFINITY };
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
                // One choice of instruction set per chunk: every packet of it takes that path.
                with_isa!(isa => {
                    let mut k = 0;
                    while k < dist.len() {
                        let idx = chunk * CHUNK + k;
                        let (w, i) = (idx / nray, idx % nray);
                        let run = PACKET.min(dist.len() - k).min(nray - i);
                        let out = HitsMut {
                            dist: &mut dist[k..k + run],
                            geomid: &mut geomid[k..k + run],
                            normal: &mut normal[k..k + run],
                        };
                        self.cast_run(isa, &q, w, i, &mut packet, out);
                        k += run;
                    }
                });
            });
        if bad_ray.load(Ordering::Relaxed) {
            // Only on this path: the serial check finds and names the first bad ray.
            batch.validate(dist.len() / nray)?;
        }
        Ok(())
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
        self.rays_into(scene, poses, batch, filter, hits.as_hits_mut())?;
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
        let eligible = filter.eligible(scene);
        let q = Query {
            scene,
            poses,
            eligible: &eligible,
            batch: &batch,
            world0: w,
            skip_geom: -1,
            own: false,
            reach: f64::INFINITY,
        };
        Ok(with_isa!(isa => self.cast(isa, &q, 0, 0)))
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
        self.check_worlds(poses, 0..poses.nworld, batch, out.len(), Checks::Rays)?;
        batch.check_shape("max_dist", max_dist.len(), poses.nworld)?;
        let eligible = filter.eligible(scene);
        let q = Query {
            scene,
            poses,
            eligible: &eligible,
            batch,
            world0: 0,
            skip_geom: -1,
            own: false,
            reach: f64::INFINITY,
        };
        let nray = batch.nray;
        out.par_chunks_mut(CHUNK).enumerate().for_each(|(chunk, out)| {
            with_isa!(isa => {
                for (k, o) in out.iter_mut().enumerate() {
                    let idx = chunk * CHUNK + k;
                    let (w, i) = (idx / nray, idx % nray);
                    let tmax = RayBatch::pick(max_dist, nray, w, i);
                    *o = self.occluded(isa, &q, w, i, tmax);
                }
            })
        });
        Ok(())
    }
}
