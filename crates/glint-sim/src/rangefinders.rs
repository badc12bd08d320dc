//! The MJCF `<rangefinder>` sensors of a simulation as one [`Sensor`]: every site-attached
//! rangefinder of the model (extracted by [`glint_mujoco::Model::rangefinders`]), cast in
//! every world as one batch through the BVH ([`glint_core::RayCaster::rays_worlds_into`]) and
//! turned into MuJoCo's `sensordata` values as `engine_sensor.c` does: the ray from the site
//! along its z axis, every group, static geoms included, the site's body excluded; the fields
//! its `data` attribute names, `-1` for the distance and depth of a miss; the cutoff clamped.
//! The values equal MuJoCo's `sensordata` for the same state (`tests/rangefinders.rs`).

use glam::DVec3;
use glint_core::{Poses, RayBatch, RayCaster, RayFilter, RayHits, Scene};
use glint_mujoco::{Model, RAY_FIELDS, Rangefinder};

use crate::sensors::{Demand, Frame, Sensor, SensorContext, SensorKind};
use crate::{SimError, Warning};

/// Rays and hits of one cast, reused between casts.
#[derive(Default)]
struct Scratch {
    pnt: Vec<DVec3>,
    vec: Vec<DVec3>,
    hits: RayHits,
}

/// Every site-attached rangefinder of a model, as one sensor of one unit whose frame in a
/// world is all their values ([`Frame::Rangefinders`]).
pub(crate) struct RangefinderSet {
    finders: Vec<Rangefinder>,
    /// One name per value (see [`Rangefinder::value_names`]).
    names: Vec<String>,
    /// Per ray, the body it ignores (the site's).
    bodies: Vec<i32>,
    /// `(nworld, names.len())`, as the last tick cast them.
    values: Vec<f64>,
    scratch: Scratch,
}

impl RangefinderSet {
    /// The model's rangefinders in `nworld` worlds, and a warning for each one glint leaves
    /// to MuJoCo (camera-attached, delayed, sampled at an interval). `None` when glint
    /// computes none.
    pub fn from_model(model: &Model, nworld: usize) -> (Option<RangefinderSet>, Vec<Warning>) {
        let all = model.rangefinders();
        let warnings =
            all.skipped.into_iter().map(|s| Warning::RangefinderSkipped { sensor: s.name, reason: s.reason }).collect();
        if all.sensors.is_empty() {
            return (None, warnings);
        }
        (Some(RangefinderSet::new(all.sensors, nworld)), warnings)
    }

    /// The rangefinders `finders` in `nworld` worlds.
    pub fn new(finders: Vec<Rangefinder>, nworld: usize) -> RangefinderSet {
        let names: Vec<String> = finders.iter().flat_map(Rangefinder::value_names).collect();
        let bodies = finders.iter().map(|f| f.body).collect();
        let values = vec![0.0; nworld * names.len()];
        RangefinderSet { finders, names, bodies, values, scratch: Scratch::default() }
    }

    /// The rangefinders, in MuJoCo's sensor order.
    pub fn finders(&self) -> &[Rangefinder] {
        &self.finders
    }

    /// One name per value, in the order of a world's values.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// Values per world.
    pub fn width(&self) -> usize {
        self.names.len()
    }

    /// Casts every rangefinder in the worlds `worlds` of `poses` as one batch and writes their
    /// values, `(worlds.len(), width)`, into `out`: MuJoCo's `sensordata` for those states.
    pub fn cast_into(
        &self,
        scene: &Scene,
        poses: &Poses,
        caster: &RayCaster,
        worlds: std::ops::Range<usize>,
        out: &mut [f64],
    ) -> Result<(), SimError> {
        let mut scratch = Scratch::default();
        cast(&self.finders, &self.bodies, &mut scratch, (scene, poses, caster), worlds, out)
    }
}

/// [`RangefinderSet::cast_into`] with its parts apart, so that the set's own values can be
/// the output.
fn cast(
    finders: &[Rangefinder],
    bodies: &[i32],
    scratch: &mut Scratch,
    (scene, poses, caster): (&Scene, &Poses, &RayCaster),
    worlds: std::ops::Range<usize>,
    out: &mut [f64],
) -> Result<(), SimError> {
    let (nray, nworld) = (finders.len(), worlds.len());
    let width: usize = finders.iter().map(|f| f.dim).sum();
    if out.len() != nworld * width {
        return Err(SimError::BufferLength {
            what: "the rangefinder buffer",
            len: out.len(),
            expected: format!("{nworld} worlds of {width} values: {}", nworld * width),
        });
    }
    if nray == 0 || nworld == 0 {
        return Ok(());
    }
    let nsite = scene.nsite();
    let Scratch { pnt, vec, hits } = scratch;
    pnt.clear();
    vec.clear();
    for w in worlds.clone() {
        for f in finders {
            let k = w * nsite + f.site;
            pnt.push(poses.site_xpos[k]);
            // The site's z axis: column 2 of its rotation (MuJoCo's xmat[2], [5], [8]).
            vec.push(poses.site_xmat[k].z_axis);
        }
    }
    let n = nworld * nray;
    hits.dist.resize(n, 0.0);
    hits.geomid.resize(n, 0);
    hits.normal.resize(n, DVec3::ZERO);
    let batch = RayBatch { nray, pnt, vec, bodyexclude: bodies };
    let filter = RayFilter::default(); // every group, flg_static = 1: mj_ray(..., NULL, 1, ...)
    let hits_mut = glint_core::HitsMut { dist: &mut hits.dist, geomid: &mut hits.geomid, normal: &mut hits.normal };
    caster.rays_worlds_into(scene, poses, worlds, &batch, &filter, hits_mut)?;
    let mut o = 0;
    for (r, ((origin, dir), (&dist, normal))) in
        pnt.iter().zip(vec.iter()).zip(hits.dist.iter().zip(&hits.normal)).enumerate()
    {
        let f = &finders[r % nray];
        let start = o;
        fill(&mut out[o..o + f.dim], f.fields, dist, *origin, *dir, *normal);
        o += f.dim;
        for v in &mut out[start..o] {
            *v = f.cutoff.apply(*v);
        }
    }
    Ok(())
}

/// One ray's values as MuJoCo's `fill_raydata` writes them for a site-attached rangefinder.
fn fill(out: &mut [f64], fields: u32, dist: f64, origin: DVec3, dir: DVec3, normal: DVec3) {
    let hit = dist >= 0.0;
    let mut i = 0;
    let mut put = |v: &[f64]| {
        out[i..i + v.len()].copy_from_slice(v);
        i += v.len();
    };
    for (bit, (field, _)) in RAY_FIELDS.iter().enumerate() {
        if fields & (1 << bit) == 0 {
            continue;
        }
        match *field {
            "dist" | "depth" => put(&[dist]),
            "dir" => put(&if hit { dir.to_array() } else { [0.0; 3] }),
            "origin" => put(&origin.to_array()),
            // mju_addScl3(point, origin, direction, dist): origin + direction * dist.
            "point" => put(&if hit { (origin + dir * dist).to_array() } else { [0.0; 3] }),
            _ => put(&if hit { normal.to_array() } else { [0.0; 3] }),
        }
    }
}

impl Sensor for RangefinderSet {
    fn kind(&self) -> SensorKind {
        SensorKind::Rangefinder
    }

    fn name(&self) -> &str {
        "rangefinders"
    }

    fn tick(&mut self, ctx: &SensorContext, demand: &Demand) -> Result<(), SimError> {
        let nworld = demand.nworld();
        let Some(first) = (0..nworld).find(|&w| demand.wants(0, w)) else { return Ok(()) };
        let last = (0..nworld).rev().find(|&w| demand.wants(0, w)).expect("one world is wanted");
        let width = self.width();
        let out = &mut self.values[first * width..(last + 1) * width];
        let parts = (ctx.scene, ctx.poses, ctx.caster);
        cast(&self.finders, &self.bodies, &mut self.scratch, parts, first..last + 1, out)
    }

    fn emit(
        &mut self,
        _ctx: &SensorContext,
        world: usize,
        demand: &Demand,
        out: &mut dyn FnMut(usize, Frame<'_>) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        if !demand.wants(0, world) {
            return Ok(());
        }
        let width = self.width();
        out(0, Frame::Rangefinders { values: &self.values[world * width..(world + 1) * width], names: &self.names })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_miss_fills_as_mujoco_does() {
        let mut out = [9.0; 14];
        fill(&mut out, 63, -1.0, DVec3::new(1.0, 2.0, 3.0), DVec3::Z, DVec3::X);
        assert_eq!(out, [-1.0, 0.0, 0.0, 0.0, 1.0, 2.0, 3.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -1.0]);
        let mut out = [9.0; 14];
        fill(&mut out, 63, 2.0, DVec3::new(1.0, 2.0, 3.0), DVec3::Z, DVec3::X);
        assert_eq!(out, [2.0, 0.0, 0.0, 1.0, 1.0, 2.0, 3.0, 1.0, 2.0, 5.0, 1.0, 0.0, 0.0, 2.0]);
    }
}
