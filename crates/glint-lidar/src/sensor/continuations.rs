//! The continuations the return model and the secondary capture want, cast ahead as packets
//! for a whole group (straight on through slabs and foliage, folds off mirrors, refractions
//! into water), the tracers that hand them to the model, and the secondary geometry the
//! recorder captures.

use glam::DVec3;
use glint_core::{CoreError, PreparedRays};

use super::{ExtraScratch, FLAG_PASS, FLAG_REFLECT, GroupContext, NO_MATERIAL, Rays};
use crate::model::{LegKind, MEDIUM_INDEX, NUDGE, Surface, Tracer, fold, refract, slope};
use crate::scan::ScanPart;
use crate::{Continuation, NirMaterial, ReturnParams, SecondaryScope};

/// The ray core's answers to one batch.
#[derive(Default)]
pub(super) struct Answers {
    dist: Vec<f64>,
    geomid: Vec<i32>,
    normal: Vec<DVec3>,
}

impl Answers {
    /// The arrays, sized for `k` rays.
    fn sized(&mut self, k: usize) -> (&mut [f64], &mut [i32], &mut [DVec3]) {
        self.dist.resize(k, 0.0);
        self.geomid.resize(k, 0);
        self.normal.resize(k, DVec3::ZERO);
        (&mut self.dist[..], &mut self.geomid[..], &mut self.normal[..])
    }

    /// Answer `i`: the surface met, distance from the ray's origin, or `None`.
    #[inline]
    fn surface(&self, i: usize) -> Option<Surface> {
        (self.geomid[i] >= 0).then(|| Surface {
            distance: self.dist[i],
            geomid: self.geomid[i],
            normal: self.normal[i],
        })
    }
}

/// Continuations cast ahead as packets for some rays of a group.
#[derive(Default)]
pub(super) struct Ahead {
    /// Per ray, where its answer is in `hits` (`NOT_CAST`: none).
    slot: Vec<u32>,
    hits: Vec<Option<Surface>>,
}

const NOT_CAST: u32 = u32::MAX;

impl ExtraScratch {
    /// Ray `r`'s first continuation (of `kind`, passing through `through`) as cast ahead, in
    /// the model's terms: `None` when it was not cast ahead. `first` is the geom and distance
    /// of the ray's first surface.
    pub(super) fn first_continuation(
        &self,
        r: usize,
        kind: LegKind,
        through: i32,
        first: (i32, f64),
    ) -> Option<Option<Surface>> {
        match kind {
            // The model's leg starts just past the first surface; the prefetched distance
            // runs from the sensor.
            LegKind::Straight if through == first.0 => self
                .straight
                .get(r)
                .map(|behind| behind.map(|s| Surface { distance: s.distance - first.1 - NUDGE, ..s })),
            LegKind::Folded => self.folded.get(r),
            LegKind::Refracted => self.refracted.get(r),
            _ => None,
        }
    }
}

impl Ahead {
    /// Forgets every answer, for a group of `n` rays.
    fn reset(&mut self, n: usize) {
        self.slot.clear();
        self.slot.resize(n, NOT_CAST);
        self.hits.clear();
    }

    fn put(&mut self, r: usize, hit: Option<Surface>) {
        self.slot[r] = self.hits.len() as u32;
        self.hits.push(hit);
    }

    /// Ray `r`'s answer: `None` when it was not cast ahead.
    fn get(&self, r: usize) -> Option<Option<Surface>> {
        self.hits.get(self.slot[r] as usize).copied()
    }
}

/// Casts continuation rays for the return model and the secondary capture.
pub(super) struct LiveTracer<'a> {
    pub(super) prepared: &'a PreparedRays<'a>,
    pub(super) world: usize,
    pub(super) exclude: i32,
}

impl Tracer for LiveTracer<'_> {
    fn cast(&mut self, origin: DVec3, dir: DVec3, _: LegKind, _: usize, through: i32) -> Option<Surface> {
        let hit = self.prepared.cast_one(self.world, origin, dir, self.exclude, through)?;
        Some(Surface { distance: hit.dist, geomid: hit.geomid, normal: hit.normal })
    }
}

/// A beam's tracer that answers its first continuation (straight on, folded or refracted)
/// from the packets cast ahead, and everything else with single rays.
pub(super) struct Prefetched<'a, 'b> {
    pub(super) live: &'b mut LiveTracer<'a>,
    /// The continuations cast ahead, and the ray's index among them.
    pub(super) ahead: &'b ExtraScratch,
    pub(super) r: usize,
    /// The first surface's geom and distance.
    pub(super) through: i32,
    pub(super) first: f64,
}

impl Tracer for Prefetched<'_, '_> {
    fn cast(&mut self, origin: DVec3, dir: DVec3, kind: LegKind, depth: usize, through: i32) -> Option<Surface> {
        let ahead = if depth == 1 {
            self.ahead.first_continuation(self.r, kind, through, (self.through, self.first))
        } else {
            None
        };
        match ahead {
            Some(surface) => surface,
            None => self.live.cast(origin, dir, kind, depth, through),
        }
    }
}

/// The continuation the return model casts first off a surface of `material`, which the
/// prefetch casts ahead (a medium's only where the beam enters it).
pub(super) fn first_leg(params: &ReturnParams, material: &NirMaterial) -> Option<LegKind> {
    match material.continuation {
        Continuation::Slab | Continuation::Porous => Some(LegKind::Straight),
        Continuation::Medium => Some(LegKind::Refracted),
        Continuation::Specular if slope(params, material) <= params.fold_max_slope => Some(LegKind::Folded),
        Continuation::Specular | Continuation::Opaque => None,
    }
}

impl Rays<'_> {
    /// Where ray `r` meets its first surface.
    #[inline]
    fn point(&self, r: usize) -> DVec3 {
        self.origin + self.dirs[r] * self.dist[r]
    }

    /// The ray folded off ray `r`'s first surface: its start `NUDGE` off the surface, and
    /// `d − 2 (d·n) n`. The fold prefetch and the reflected capture cast this ray, and the
    /// return model's trace casts the same.
    #[inline]
    fn folded(&self, r: usize) -> (DVec3, DVec3) {
        let dir = fold(self.dirs[r], self.normal[r]);
        (self.point(r) + dir * NUDGE, dir)
    }
}

impl GroupContext<'_> {
    /// The secondary geometry the recorder captures, for every beam of a group.
    pub(super) fn capture(
        &self,
        part: &mut ScanPart,
        order: &[usize],
        rays: &Rays,
        ext: &ExtraScratch,
        live: &mut LiveTracer,
    ) {
        let c = &self.sensor.binding.scan;
        let all = self.sensor.binding.secondary_scope == SecondaryScope::AllSurfaces;
        for (r, &j) in order.iter().enumerate() {
            let (d, g) = (rays.dist[r], rays.geomid[r]);
            let hit = c.is_hit(d, g);
            if let Some(pass) = part.pass_through.as_mut() {
                // Prefetched from the sensor origin: the range is the sensor's.
                pass.set(j, 0.0, ext.straight.get(r).flatten().filter(|_| hit));
            }
            let Some(reflected) = part.reflected.as_mut() else { continue };
            let class = self.class_at(ext.material[r], g);
            let secondary = if hit && (all || self.flagged(g, class, FLAG_REFLECT)) {
                // The return model's fold off a flat mirror, when prefetched, is this very ray.
                ext.folded.get(r).unwrap_or_else(|| {
                    let (start, folded) = rays.folded(r);
                    live.cast(start, folded, LegKind::Folded, 1, -1)
                })
            } else {
                None
            };
            reflected.set(j, NUDGE, secondary);
        }
    }

    /// Looks up the first surfaces' classes, and casts as packets the continuations the
    /// return model and the capture will want: straight on through slabs and porous
    /// surfaces (from the sensor origin, one batch per geom crossed), into media, and off
    /// plane mirrors.
    pub(super) fn prefetch(
        &self,
        part: &ScanPart,
        rays: &Rays,
        world: usize,
        ext: &mut ExtraScratch,
    ) -> Result<(), CoreError> {
        let c = &self.sensor.binding.scan;
        let n = rays.dirs.len();
        let all = self.sensor.binding.secondary_scope == SecondaryScope::AllSurfaces;
        ext.through.clear();
        ext.bent.clear();
        match &self.tick.model {
            Some(m) => m.materials.indices_at(rays.origin, rays.dirs, rays.dist, rays.geomid, &mut ext.material),
            None => {
                ext.material.clear();
                ext.material.resize(n, NO_MATERIAL);
            }
        }
        let capture = part.pass_through.is_some();
        let legs = self.tick.model.as_ref().map_or(&[][..], |m| m.first_legs);
        ext.folds.clear();
        for r in 0..n {
            let (index, g) = (ext.material[r], rays.geomid[r]);
            let leg = legs.get(index as usize).copied().flatten();
            // Most rays: nothing to cast.
            if leg.is_none() && !capture {
                continue;
            }
            let pass =
                capture && c.is_hit(rays.dist[r], g) && (all || self.flagged(g, self.class_at(index, g), FLAG_PASS));
            if g >= 0 && (pass || leg == Some(LegKind::Straight)) {
                ext.through.push(r);
            }
            match leg {
                Some(LegKind::Folded) => ext.folds.push(r),
                // Entering the medium from outside (the model leaves it on a far face).
                Some(LegKind::Refracted) if rays.dirs[r].dot(rays.normal[r]) <= 0.0 => ext.bent.push(r),
                _ => {}
            }
        }
        self.prefetch_straight(rays, world, ext)?;
        // The refractions of the beams the model bends into a medium first: each the ray the
        // model would cast, bent by Snell's law and starting `NUDGE` under the surface where
        // its beam met it.
        self.cast_legs((world, n), ext, (|e| &e.bent, |e| &mut e.refracted), |r| {
            let bent = refract(rays.dirs[r], rays.normal[r], 1.0 / MEDIUM_INDEX)?;
            Some((rays.point(r) + bent * NUDGE, bent))
        })?;
        // The folds of the beams the model folds off a mirror first: each the ray the model
        // would cast, `d − 2 (d·n) n` from `NUDGE` off the mirror where its beam met it. Off a
        // flat mirror they are as coherent as the beams.
        self.cast_legs((world, n), ext, (|e| &e.folds, |e| &mut e.folded), |r| Some(rays.folded(r)))
    }

    /// Casts the straight continuations of `ext.through` from the sensor origin, one batch
    /// per geom crossed (a group rarely sees more than two).
    fn prefetch_straight(&self, rays: &Rays, world: usize, ext: &mut ExtraScratch) -> Result<(), CoreError> {
        ext.straight.reset(rays.dirs.len());
        while let Some(&first) = ext.through.first() {
            let geom = rays.geomid[first];
            ext.rays.clear();
            ext.rays.extend(ext.through.iter().filter(|&&r| rays.geomid[r] == geom));
            ext.through.retain(|&r| rays.geomid[r] != geom);
            ext.dirs.clear();
            ext.dirs.extend(ext.rays.iter().map(|&r| rays.dirs[r]));
            let out = ext.answers.sized(ext.rays.len());
            self.prepared.cast_from(world, rays.origin, &ext.dirs, self.exclude, geom, out.0, out.1, out.2)?;
            for (i, &r) in ext.rays.iter().enumerate() {
                ext.straight.put(r, ext.answers.surface(i));
            }
        }
        Ok(())
    }

    /// Casts, as packets of rays from their own origins, the continuation `leg(r)` (its start
    /// and direction, `None`: none) of each ray `r` that `list` names, and files the answers
    /// under `ahead`.
    fn cast_legs(
        &self,
        (world, n): (usize, usize),
        ext: &mut ExtraScratch,
        (list, ahead): (impl Fn(&ExtraScratch) -> &[usize], impl Fn(&mut ExtraScratch) -> &mut Ahead),
        leg: impl Fn(usize) -> Option<(DVec3, DVec3)>,
    ) -> Result<(), CoreError> {
        ahead(ext).reset(n);
        ext.rays.clear();
        ext.dirs.clear();
        ext.origins.clear();
        for k in 0..list(ext).len() {
            let r = list(ext)[k];
            let Some((start, dir)) = leg(r).filter(|(start, dir)| start.is_finite() && dir.is_finite()) else {
                continue;
            };
            ext.rays.push(r);
            ext.dirs.push(dir);
            ext.origins.push(start);
        }
        if ext.rays.is_empty() {
            return Ok(());
        }
        let out = ext.answers.sized(ext.rays.len());
        self.prepared.cast_each(world, &ext.origins, &ext.dirs, self.exclude, out.0, out.1, out.2)?;
        for i in 0..ext.rays.len() {
            let (r, surface) = (ext.rays[i], ext.answers.surface(i));
            ahead(ext).put(r, surface);
        }
        Ok(())
    }

    /// The material of palette index `index` (`None` for `NO_MATERIAL`, or without a model).
    fn material(&self, index: u32) -> Option<&NirMaterial> {
        self.tick.model.as_ref()?.palette.get(index as usize)
    }

    /// The continuation class of a hit on geom `g` whose material has palette index `index`:
    /// the material's, or without one, the geom's authored class, if any.
    fn class_at(&self, index: u32, g: i32) -> Option<Continuation> {
        self.material(index).map(|m| m.continuation).or_else(|| self.class_of(g))
    }

    /// The authored continuation class of geom `g`, if any.
    fn class_of(&self, g: i32) -> Option<Continuation> {
        usize::try_from(g).ok().and_then(|g| self.tick.geom_class.get(g).copied().flatten())
    }

    /// Whether a hit on `geom` (of continuation class `class`, when known) is flagged for the
    /// secondary ray `flag`.
    fn flagged(&self, geom: i32, class: Option<Continuation>, flag: u8) -> bool {
        let by_class = match class {
            Some(Continuation::Slab | Continuation::Medium | Continuation::Porous) => flag == FLAG_PASS,
            Some(Continuation::Specular) => flag == FLAG_REFLECT,
            _ => false,
        };
        by_class || self.tick.geom_flags[geom as usize] & flag != 0
    }
}
