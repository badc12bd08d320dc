//! The physical model's beam-divergence footprints: each beam of a group cut into sub-rays
//! over its divergence cone ([`crate::physical::footprint_offsets`]), the sub-rays off its
//! axis cast together as one packet with their first continuations cast ahead as the axes'
//! are, and every sub-ray's echoes summed into one waveform per beam
//! ([`crate::ReturnModel`]'s `footprint_report`).

use glam::DVec3;
use glint_core::{Cast, CoreError, HitsMut, Origins};

use super::continuations::{LiveTracer, Prefetched};
use super::{ExtraScratch, GroupContext, Rays, ReturnInputs};
use crate::return_model::{Beam, Candidate, Surface, TickKey};
use crate::scan::ReturnsPart;

/// A group's footprint sub-rays off the beams' axes (the clean scan cast the axes), beam
/// after beam, the surfaces they meet, and their continuations cast ahead.
#[derive(Default)]
pub(super) struct Footprints {
    dirs: Vec<DVec3>,
    dist: Vec<f64>,
    geomid: Vec<i32>,
    normal: Vec<DVec3>,
    /// Their materials and continuations cast ahead (boxed: a scratch holds its footprints).
    ahead: Option<Box<ExtraScratch>>,
    /// One beam's candidates, over all its sub-rays.
    candidates: Vec<Candidate>,
}

impl Footprints {
    /// Sets the sub-rays of beams along `axes`, each turned by every one of `turns` (the
    /// tangents of its angular offsets along two axes across the beam).
    fn aim(&mut self, axes: &[DVec3], turns: &[(f64, f64)]) {
        self.dirs.clear();
        for &axis in axes {
            let (u, v) = axis.any_orthonormal_pair();
            self.dirs.extend(turns.iter().map(|&(a, b)| (axis + u * a + v * b).normalize()));
        }
        let n = self.dirs.len();
        self.dist.resize(n, 0.0);
        self.geomid.resize(n, -1);
        self.normal.resize(n, DVec3::ZERO);
    }

    /// The sub-rays as rays from `origin`.
    fn rays(&self, origin: DVec3) -> Rays<'_> {
        Rays { origin, dirs: &self.dirs, dist: &self.dist, geomid: &self.geomid, normal: &self.normal }
    }
}

impl GroupContext<'_> {
    /// The return model of every beam of a group over its footprint: the axis from the
    /// clean scan, the other sub-rays cast as one packet, each sub-ray weighing `1 / n` of
    /// the beam, all with their first continuations cast ahead.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn model_footprints(
        &self,
        m: &ReturnInputs,
        returns: &mut ReturnsPart,
        order: &[usize],
        rays: &Rays,
        ext: &mut ExtraScratch,
        live: &mut LiveTracer,
        beams: (TickKey, usize),
    ) -> Result<(), CoreError> {
        let mut fp = std::mem::take(&mut ext.footprints);
        let done = self.footprint_beams(m, (returns, order), rays, (ext, &mut fp), live, beams);
        ext.footprints = fp;
        done
    }

    /// [`GroupContext::model_footprints`] with the footprints' scratch `fp` apart from the
    /// axes' `ext`.
    fn footprint_beams(
        &self,
        m: &ReturnInputs,
        (returns, order): (&mut ReturnsPart, &[usize]),
        rays: &Rays,
        (ext, fp): (&ExtraScratch, &mut Footprints),
        live: &mut LiveTracer,
        (key, first_beam): (TickKey, usize),
    ) -> Result<(), CoreError> {
        let turns = &m.footprint[1..];
        let weight = 1.0 / m.footprint.len() as f64;
        fp.aim(rays.dirs, turns);
        let cast = Cast {
            world: live.world,
            origins: Origins::Shared(rays.origin),
            dirs: &fp.dirs,
            exclude_body: self.exclude,
            skip_geom: -1,
            trusted: rays.origin.is_finite(),
        };
        self.prepared.cast(cast, HitsMut { dist: &mut fp.dist, geomid: &mut fp.geomid, normal: &mut fp.normal })?;
        let mut ahead = fp.ahead.take().unwrap_or_default();
        self.prefetch(false, &fp.rays(rays.origin), live.world, &mut ahead)?;
        let c = &self.sensor.binding.scan;
        let window = (c.min_range, c.max_range);
        let material = |ext: &ExtraScratch, r: usize| m.palette.get(ext.material[r] as usize).copied();
        for (r, &j) in order.iter().enumerate() {
            let mut rng = key.beam((first_beam + j) as u64);
            fp.candidates.clear();
            let axis = Beam { origin: rays.origin, dir: rays.dirs[r], window };
            let first = material(ext, r).map(|material| (rays.surface(r), material));
            let mut tracer = Prefetched { live, ahead: ext, r, through: rays.geomid[r], first: rays.dist[r] };
            m.model.footprint_candidates(&axis, first, &mut tracer, m.materials, &mut rng, weight, &mut fp.candidates);
            for k in r * turns.len()..(r + 1) * turns.len() {
                let beam = Beam { dir: fp.dirs[k], ..axis };
                let surface = Surface { distance: fp.dist[k], geomid: fp.geomid[k], normal: fp.normal[k] };
                let first = material(&ahead, k).map(|material| (surface, material));
                let mut tracer =
                    Prefetched { live, ahead: &ahead, r: k, through: surface.geomid, first: surface.distance };
                m.model.footprint_candidates(
                    &beam,
                    first,
                    &mut tracer,
                    m.materials,
                    &mut rng,
                    weight,
                    &mut fp.candidates,
                );
            }
            returns.set(j, &m.model.footprint_report(window, &mut fp.candidates, &mut rng));
        }
        fp.ahead = Some(ahead);
        Ok(())
    }
}
