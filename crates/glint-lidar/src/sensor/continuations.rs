//! The continuations the return model and the secondary capture want, cast ahead as packets
//! for a whole group (straight on through slabs and foliage, folds off mirrors, refractions
//! into water), the tracers that hand them to the model, and the secondary geometry the
//! recorder captures.

use glam::DVec3;
use glint_core::{Cast, CastOne, CoreError, HitsMut, Origins, PreparedRays};

use super::{ExtraScratch, FLAG_PASS, FLAG_REFLECT, GroupContext, NO_MATERIAL, Rays};
use crate::return_model::{LegKind, MEDIUM_INDEX, NUDGE, Surface, Tracer, fold, refract, slope};
use crate::scan::ScanPart;
use crate::{Continuation, NirMaterial, ReturnParams, SecondaryScope};

/// Continuations cast ahead as packets for some rays of a group: the ray core writes its
/// answers straight into these arrays.
#[derive(Default)]
pub(super) struct Ahead {
    /// Per ray, where its answer is in the arrays (`NOT_CAST`: none).
    slot: Vec<u32>,
    dist: Vec<f64>,
    geomid: Vec<i32>,
    normal: Vec<DVec3>,
}

const NOT_CAST: u32 = u32::MAX;

impl ExtraScratch {
    /// Ray `r`'s first continuation (of `kind`, passing through `through`) as cast ahead, in
    /// the model's terms: `None` when it was not cast ahead. `first` is the geom and distance
    /// of the ray's first surface.
    #[inline]
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
        self.dist.clear();
        self.geomid.clear();
        self.normal.clear();
    }

    /// Room for the answers of rays `rays`, in that order, for the ray core to write.
    fn batch(&mut self, rays: &[usize]) -> HitsMut<'_> {
        let start = self.dist.len();
        for (k, &r) in rays.iter().enumerate() {
            self.slot[r] = (start + k) as u32;
        }
        let len = start + rays.len();
        self.dist.resize(len, 0.0);
        self.geomid.resize(len, 0);
        self.normal.resize(len, DVec3::ZERO);
        HitsMut { dist: &mut self.dist[start..], geomid: &mut self.geomid[start..], normal: &mut self.normal[start..] }
    }

    /// Ray `r`'s answer (the surface met, distance from the ray's start, or a miss), `None`
    /// when it was not cast ahead.
    #[inline]
    fn get(&self, r: usize) -> Option<Option<Surface>> {
        let i = self.slot[r] as usize;
        let geomid = *self.geomid.get(i)?;
        Some((geomid >= 0).then(|| Surface { distance: self.dist[i], geomid, normal: self.normal[i] }))
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
        let hit = self.prepared.cast_one(CastOne {
            world: self.world,
            origin,
            dir,
            exclude_body: self.exclude,
            skip_geom: through,
        })?;
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
pub(crate) fn first_leg(params: &ReturnParams, material: &NirMaterial) -> Option<LegKind> {
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
            let class = self.class_at(live.world, ext.material[r], g);
            let secondary = if hit && (all || self.flagged(live.world, g, class, FLAG_REFLECT)) {
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
    /// return model and the pass-through capture (`capture`) will want: straight on through
    /// slabs and porous surfaces (from the sensor origin, one batch per geom crossed), into
    /// media, and off plane mirrors (and panes, for the physical model's ghosts).
    pub(super) fn prefetch(
        &self,
        capture: bool,
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
        let legs = self.tick.model.as_ref().map_or(&[][..], |m| m.first_legs);
        // The physical model's ghost off a pane is the pane's fold: cast with the mirrors'.
        let ghosts = self.tick.model.as_ref().filter(|m| m.model.physics().is_some_and(|p| p.fresnel));
        let ghost_of = |index: u32| {
            ghosts.and_then(|m| m.palette.get(index as usize)).is_some_and(|m| m.continuation == Continuation::Slab)
        };
        ext.folds.clear();
        for r in 0..n {
            let (index, g) = (ext.material[r], rays.geomid[r]);
            let leg = legs.get(index as usize).copied().flatten();
            // Most rays: nothing to cast.
            if leg.is_none() && !capture {
                continue;
            }
            let pass = capture
                && c.is_hit(rays.dist[r], g)
                && (all || self.flagged(world, g, self.class_at(world, index, g), FLAG_PASS));
            if g >= 0 && (pass || leg == Some(LegKind::Straight)) {
                ext.through.push(r);
            }
            match leg {
                Some(LegKind::Folded) => ext.folds.push(r),
                Some(LegKind::Straight) if ghost_of(index) && rays.dirs[r].dot(rays.normal[r]) <= 0.0 => {
                    ext.folds.push(r)
                }
                // Entering the medium from outside (the model leaves it on a far face).
                Some(LegKind::Refracted) if rays.dirs[r].dot(rays.normal[r]) <= 0.0 => ext.bent.push(r),
                _ => {}
            }
        }
        self.prefetch_straight(rays, world, ext)?;
        let ExtraScratch { bent, refracted, folds, folded, rays: batch, origins, dirs, .. } = ext;
        // The refractions of the beams the model bends into a medium first: each the ray the
        // model would cast, bent by Snell's law and starting `NUDGE` under the surface where
        // its beam met it.
        self.cast_legs((world, n), (bent, refracted), (batch, origins, dirs), |r| {
            let bent = refract(rays.dirs[r], rays.normal[r], 1.0 / MEDIUM_INDEX)?;
            Some((rays.point(r) + bent * NUDGE, bent))
        })?;
        // The folds of the beams the model folds off a mirror first: each the ray the model
        // would cast, `d − 2 (d·n) n` from `NUDGE` off the mirror where its beam met it. Off a
        // flat mirror they are as coherent as the beams.
        self.cast_legs((world, n), (folds, folded), (batch, origins, dirs), |r| Some(rays.folded(r)))
    }

    /// Casts the straight continuations of `ext.through` from the sensor origin, one batch
    /// per geom crossed (a group rarely sees more than two).
    fn prefetch_straight(&self, rays: &Rays, world: usize, ext: &mut ExtraScratch) -> Result<(), CoreError> {
        let ExtraScratch { through, straight, rays: batch, dirs, .. } = ext;
        straight.reset(rays.dirs.len());
        while let Some(&first) = through.first() {
            // This geom's rays into the batch, the others kept for the next.
            let geom = rays.geomid[first];
            batch.clear();
            dirs.clear();
            through.retain(|&r| {
                let on_geom = rays.geomid[r] == geom;
                if on_geom {
                    batch.push(r);
                    dirs.push(rays.dirs[r]);
                }
                !on_geom
            });
            let out = straight.batch(batch);
            // The group's own directions and origin, which its primary cast checked.
            let cast = Cast {
                world,
                origins: Origins::Shared(rays.origin),
                dirs,
                exclude_body: self.exclude,
                skip_geom: geom,
                trusted: true,
            };
            self.prepared.cast(cast, out)?;
        }
        Ok(())
    }

    /// Casts, as packets of rays from their own origins, the continuation `leg(r)` (its start
    /// and direction, `None`: none) of each ray `r` of `list`, and files the answers under
    /// `ahead`; `scratch` holds the batch's rays, starts and directions.
    fn cast_legs(
        &self,
        (world, n): (usize, usize),
        (list, ahead): (&[usize], &mut Ahead),
        (batch, origins, dirs): (&mut Vec<usize>, &mut Vec<DVec3>, &mut Vec<DVec3>),
        leg: impl Fn(usize) -> Option<(DVec3, DVec3)>,
    ) -> Result<(), CoreError> {
        ahead.reset(n);
        batch.clear();
        origins.clear();
        dirs.clear();
        for &r in list {
            let Some((start, dir)) = leg(r).filter(|(start, dir)| start.is_finite() && dir.is_finite()) else {
                continue;
            };
            batch.push(r);
            origins.push(start);
            dirs.push(dir);
        }
        if batch.is_empty() {
            return Ok(());
        }
        let out = ahead.batch(batch);
        // Starts and directions filtered finite above; directions unit (folds and refractions of
        // unit directions about unit normals).
        let cast = Cast {
            world,
            origins: Origins::Each(origins),
            dirs,
            exclude_body: self.exclude,
            skip_geom: -1,
            trusted: true,
        };
        self.prepared.cast(cast, out)
    }

    /// The material of palette index `index` (`None` for `NO_MATERIAL`, or without a model).
    fn material(&self, index: u32) -> Option<&NirMaterial> {
        self.tick.model.as_ref()?.palette.get(index as usize)
    }

    /// The continuation class of a hit on geom `g` whose material has palette index `index`:
    /// the material's, or without one, the geom's authored class, if any.
    fn class_at(&self, world: usize, index: u32, g: i32) -> Option<Continuation> {
        self.material(index).map(|m| m.continuation).or_else(|| self.class_of(world, g))
    }

    /// The authored continuation class of geom `g`, if any.
    fn class_of(&self, world: usize, g: i32) -> Option<Continuation> {
        let rows = self.tick.geom_class;
        usize::try_from(g).ok().and_then(|g| rows[world % rows.len()].get(g).copied().flatten())
    }

    /// Whether a hit on `geom` (of continuation class `class`, when known) is flagged for the
    /// secondary ray `flag`.
    fn flagged(&self, world: usize, geom: i32, class: Option<Continuation>, flag: u8) -> bool {
        let by_class = match class {
            Some(Continuation::Slab | Continuation::Medium | Continuation::Porous) => flag == FLAG_PASS,
            Some(Continuation::Specular) => flag == FLAG_REFLECT,
            _ => false,
        };
        let rows = self.tick.geom_flags;
        by_class || rows[world % rows.len()][geom as usize] & flag != 0
    }
}
