//! The return model over a group of beams: each beam planned (its first surface alone, or with
//! the opaque surface behind one pane, mirror or water surface, or traced leg by leg), the
//! candidates' strengths and reports worked out on vector lanes, and what the lanes leave
//! made one beam at a time.

use super::continuations::{LiveTracer, Prefetched};
use super::{ExtraScratch, GroupContext, Model, Rays};
use crate::model::{
    Beam, BeamReturn, BeamRng, Candidate, LANES, LaneReports, Lanes, Path, SurfaceLanes, TickKey, cross, strengths,
};
use crate::scan::ReturnsPart;
use crate::{Continuation, NirMaterial};

/// How the return model goes about one beam of a group.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Plan {
    /// No material at the first surface: no echo.
    Nothing,
    /// The first surface is the beam's only candidate.
    First,
    /// The first surface and the `k`th of [`Seconds`]: a beam that crosses one pane, mirror
    /// or water surface onto an opaque surface.
    Two(u32),
    /// Traced one leg at a time ([`crate::ReturnModel::traced_return`]).
    Traced,
}

/// Second candidates, booked as the model's trace books them, with their strengths worked
/// out together.
#[derive(Default)]
pub(super) struct Seconds {
    /// The ray each belongs to.
    ray: Vec<usize>,
    range: Vec<f64>,
    cos: Vec<f64>,
    loss: Vec<f64>,
    /// Palette index of the surface's material.
    material: Vec<u32>,
    geomid: Vec<i32>,
    strength: Vec<f64>,
}

impl Seconds {
    /// Forgets every candidate (`strength` is refilled whole by [`strengths`]).
    fn clear(&mut self) {
        self.ray.clear();
        self.range.clear();
        self.cos.clear();
        self.loss.clear();
        self.material.clear();
        self.geomid.clear();
    }

    fn push(&mut self, r: usize, (range, cos, loss): (f64, f64, f64), material: u32, geomid: i32) -> Plan {
        self.ray.push(r);
        self.range.push(range);
        self.cos.push(cos);
        self.loss.push(loss);
        self.material.push(material);
        self.geomid.push(geomid);
        Plan::Two(self.geomid.len() as u32 - 1)
    }

    fn candidate(&self, k: usize) -> Candidate {
        Candidate { range: self.range[k], strength: self.strength[k], cos: self.cos[k], geomid: self.geomid[k] }
    }
}

impl GroupContext<'_> {
    /// The return model of every beam of a group, in passes over the group: the candidates
    /// of most beams (a first surface, and where the beam crosses one pane, mirror or water
    /// surface, the opaque surface behind it), their strengths on vector lanes, then their
    /// detection, noise and echo choice on vector lanes too, 64 beams at a time. Beams that
    /// meet more (porous surfaces, two panes), and what the lanes leave (grazing draws, the
    /// power law, rare normal draws), go one beam at a time; both ways give the same reports
    /// to the bit (`tests::batched_reports_equal_the_one_beam_model_to_the_bit`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn model_group(
        &self,
        m: &Model,
        returns: &mut ReturnsPart,
        order: &[usize],
        rays: &Rays,
        ext: &mut ExtraScratch,
        live: &mut LiveTracer,
        (key, first_beam): (TickKey, usize),
    ) {
        let c = &self.sensor.binding.scan;
        let beams = Beams { order, window: (c.min_range, c.max_range), key, first_beam };
        self.plan(m, rays, ext);
        let mut lanes = (Lanes::default(), LaneReports::default());
        ext.by_one.clear();
        report_firsts(m, &beams, rays, ext, &mut lanes, returns);
        report_pairs(m, &beams, rays, ext, &mut lanes, returns);
        // What the lanes left, and the beams traced leg by leg.
        for &r in &ext.by_one {
            let rng = key.beam(beams.number(r));
            let report = self.report_by_one(m, (beams.window, rng), ext.plan[r], r, rays, ext, live);
            returns.set(order[r], &report);
        }
    }

    /// [`GroupContext::model_group`]'s reference: every beam through
    /// [`crate::ReturnModel::beam_return`], with the continuations cast ahead.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn model_one_by_one(
        &self,
        m: &Model,
        returns: &mut ReturnsPart,
        order: &[usize],
        rays: &Rays,
        ext: &ExtraScratch,
        live: &mut LiveTracer,
        (key, first_beam): (TickKey, usize),
    ) {
        let c = &self.sensor.binding.scan;
        for (r, &j) in order.iter().enumerate() {
            let mut rng = key.beam((first_beam + j) as u64);
            let first = m.palette.get(ext.material[r] as usize).map(|material| (rays.surface(r), *material));
            let beam = Beam { origin: rays.origin, dir: rays.dirs[r], window: (c.min_range, c.max_range) };
            let mut tracer = Prefetched { live, ahead: ext, r, through: rays.geomid[r], first: rays.dist[r] };
            returns.set(j, &m.model.beam_return(&beam, first, &mut tracer, m.materials, &mut rng));
        }
    }

    /// The report of ray `r` (planned `plan`) made one beam at a time, with the beam's
    /// window and random stream.
    #[allow(clippy::too_many_arguments)]
    fn report_by_one(
        &self,
        m: &Model,
        (window, mut rng): ((f64, f64), BeamRng),
        plan: Plan,
        r: usize,
        rays: &Rays,
        ext: &ExtraScratch,
        live: &mut LiveTracer,
    ) -> BeamReturn {
        let first =
            Candidate { range: rays.dist[r], strength: ext.strength[r], cos: ext.cos[r], geomid: rays.geomid[r] };
        match plan {
            Plan::Nothing => BeamReturn::NONE,
            Plan::First => m.model.report_one(window, &first, &mut rng),
            Plan::Two(k) => m.model.report(window, &[first, ext.second.candidate(k as usize)], &mut rng),
            Plan::Traced => {
                let (surface, material) = (rays.surface(r), &m.palette[ext.material[r] as usize]);
                let beam = Beam { origin: rays.origin, dir: rays.dirs[r], window };
                let mut tracer = Prefetched { live, ahead: ext, r, through: first.geomid, first: first.range };
                m.model.traced_return(&beam, (&surface, material), &mut tracer, m.materials, &mut rng)
            }
        }
    }

    /// Plans every beam of a group (`ext.plan`), booking the second candidates of the beams
    /// planned [`Plan::Two`] as [`crate::ReturnModel::traced_return`] would: through the same
    /// crossing, from the same continuation cast ahead.
    fn plan(&self, m: &Model, rays: &Rays, ext: &mut ExtraScratch) {
        ext.plan.clear();
        ext.second.clear();
        for r in 0..rays.dirs.len() {
            let plan = match m.palette.get(ext.material[r] as usize) {
                None => Plan::Nothing,
                Some(material) => match material.continuation {
                    Continuation::Opaque => Plan::First,
                    Continuation::Porous => Plan::Traced,
                    _ => self.plan_crossing(m, rays, ext, r, material),
                },
            };
            ext.plan.push(plan);
        }
    }

    /// The plan of ray `r`, whose first surface is a slab, medium or specular `material`.
    fn plan_crossing(&self, m: &Model, rays: &Rays, ext: &mut ExtraScratch, r: usize, material: &NirMaterial) -> Plan {
        let params = m.model.params();
        let first = rays.surface(r);
        let mut path = Path::new(rays.origin, rays.dirs[r]);
        let (range, point) = path.reach(&first);
        if path.leaves(&first, material) {
            return Plan::Traced;
        }
        // Porous surfaces, the only ones that draw a gap, are traced.
        let crossing = cross(params, &mut path, &first, material, false, || 1.0);
        let Some((kind, through)) = crossing.next else { return Plan::First };
        let Some(behind) = ext.first_continuation(r, kind, through, (first.geomid, first.distance)) else {
            return Plan::Traced;
        };
        let Some(s) = behind else { return Plan::First };
        path.set_off(point, range);
        let (range, point) = path.reach(&s);
        let Some(index) = m.materials.index_at(s.geomid as usize, point).filter(|&i| i < m.palette.len()) else {
            return Plan::First;
        };
        if m.palette[index].continuation != Continuation::Opaque {
            return Plan::Traced;
        }
        let cos = path.dir.dot(s.normal).abs();
        ext.second.push(r, (range, cos, path.loss), index as u32, s.geomid)
    }
}

/// What a group's beams share for their reports.
struct Beams<'a> {
    /// Ray `r` is beam `order[r]` of the group, and beam `first_beam + order[r]` of its tick.
    order: &'a [usize],
    first_beam: usize,
    /// The sensor's `[min_range, max_range)`.
    window: (f64, f64),
    key: TickKey,
}

impl Beams<'_> {
    /// Ray `r`'s beam number in its tick (the key of its random stream).
    fn number(&self, r: usize) -> u64 {
        (self.first_beam + self.order[r]) as u64
    }
}

/// The first surfaces of a group's rays, 64 at a time: incidence and strength (kept in
/// `ext` for the pairs), and the report of each beam with no other candidate, written where
/// the lanes made it; the others go to `ext.by_one`.
fn report_firsts(
    m: &Model,
    beams: &Beams,
    rays: &Rays,
    ext: &mut ExtraScratch,
    (lanes, quick): &mut (Lanes, LaneReports),
    returns: &mut ReturnsPart,
) {
    let (params, n) = (m.model.params(), beams.order.len());
    let mut surfaces = SurfaceLanes::default();
    ext.cos.clear();
    ext.strength.clear();
    for start in (0..n).step_by(LANES) {
        lanes.n = LANES.min(n - start);
        for (i, r) in (start..start + lanes.n).enumerate() {
            let cos = rays.dirs[r].dot(rays.normal[r]).abs();
            surfaces.set(params, i, m.optics.get(ext.material[r] as usize), cos);
            lanes.beam[i] = beams.number(r);
            lanes.set(0, i, (rays.dist[r], f64::NAN, cos, rays.geomid[r]));
        }
        surfaces.strengths(params, lanes.n, &mut lanes.strength[0]);
        ext.cos.extend_from_slice(&lanes.cos[0][..lanes.n]);
        ext.strength.extend_from_slice(&lanes.strength[0][..lanes.n]);
        m.model.report_lanes::<1>(beams.window, beams.key, lanes, quick);
        for (i, r) in (start..start + lanes.n).enumerate() {
            match (ext.plan[r], quick.get(i)) {
                (Plan::Nothing, _) => returns.set(beams.order[r], &BeamReturn::NONE),
                (Plan::First, Some(report)) => returns.set(beams.order[r], &report),
                (Plan::First | Plan::Traced, _) => ext.by_one.push(r),
                (Plan::Two(_), _) => {}
            }
        }
    }
}

/// The beams with two candidates, 64 at a time: the second candidates' strengths, then each
/// beam's report, written where the lanes made it; the others go to `ext.by_one`.
fn report_pairs(
    m: &Model,
    beams: &Beams,
    rays: &Rays,
    ext: &mut ExtraScratch,
    (lanes, quick): &mut (Lanes, LaneReports),
    returns: &mut ReturnsPart,
) {
    let second = &mut ext.second;
    strengths(m.model.params(), m.optics, &second.material, &second.cos, Some(&second.loss), &mut second.strength);
    let pairs = ext.second.ray.len();
    for start in (0..pairs).step_by(LANES) {
        lanes.n = LANES.min(pairs - start);
        for (i, k) in (start..start + lanes.n).enumerate() {
            let (r, second) = (ext.second.ray[k], &ext.second);
            lanes.beam[i] = beams.number(r);
            lanes.set(0, i, (rays.dist[r], ext.strength[r], ext.cos[r], rays.geomid[r]));
            lanes.set(1, i, (second.range[k], second.strength[k], second.cos[k], second.geomid[k]));
        }
        m.model.report_lanes::<2>(beams.window, beams.key, lanes, quick);
        for (i, k) in (start..start + lanes.n).enumerate() {
            let r = ext.second.ray[k];
            match quick.get(i) {
                Some(report) => returns.set(beams.order[r], &report),
                None => ext.by_one.push(r),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use glint_core::RayCaster;
    use glint_mujoco::{Model as Mujoco, WorldBatch};

    use crate::{
        Bake, BakeSettings, LidarBinding, Lidars, MaterialPreset, MaterialTable, Metal, NirMaterial, ReturnPreset,
        Returns, ScanConfig, ScanPreset,
    };

    /// The showroom's materials, as its manifest authors them.
    fn showroom_materials() -> MaterialTable {
        let mut table = MaterialTable::default();
        let presets = [
            ("storefront_glass", MaterialPreset::ClearFloatGlass),
            ("mirror_silver", MaterialPreset::Mirror),
            ("pool_water", MaterialPreset::StillWater),
            ("hedge_leaves", MaterialPreset::Vegetation),
            ("sign_retro", MaterialPreset::Retroreflector),
            ("car_paint", MaterialPreset::GlossDarkPaint),
            ("shelf_steel", MaterialPreset::PolishedMetal),
        ];
        for (name, preset) in presets {
            table.set(name, preset.material()).unwrap();
        }
        let mut steel = MaterialPreset::PolishedMetal.material();
        steel.set_metal(Metal::Steel);
        table.set("shelf_steel", steel).unwrap();
        for (name, reflectivity) in [("wall_paint", 0.85), ("back_wall", 0.85), ("pool_tiles", 0.8)] {
            table.set(name, NirMaterial { reflectivity, ..MaterialPreset::Diffuse.material() }).unwrap();
        }
        table
    }

    #[test]
    fn batched_reports_equal_the_one_beam_model_to_the_bit() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/showroom/showroom.xml");
        let model = Mujoco::from_xml_file(path).unwrap();
        let scene = model.scene();
        let batch = WorldBatch::new(&model, 1).unwrap();
        let caster = RayCaster::new(scene, batch.poses());
        let table = showroom_materials();
        let bake = Bake::build(scene, batch.poses(), &table, BakeSettings::default()).unwrap();
        let mut scan = ScanConfig::default();
        ScanPreset::OusterOs1_64.apply(&mut scan);
        let scan = ScanConfig { rotation_hz: 0.0, max_range: 40.0, ..scan };
        let binding = LidarBinding { attach_site: Some("lidar".into()), scan, ..LidarBinding::default() };
        let (mut lidars, _) = Lidars::new(scene, vec![binding], 1).unwrap();
        lidars.set_materials(Some(Arc::new(bake)));
        lidars.set_seed(7);
        // Ouster: two echoes, every range under the reflectivity's sure range. Generic: one
        // echo, and beyond about 6 m the power law, which the lanes leave to the one-beam path.
        for preset in [ReturnPreset::OusterOs1, ReturnPreset::Generic] {
            lidars.set_return_preset(preset);
            let mut reports = Vec::new();
            for one_by_one in [false, true] {
                lidars.one_by_one = one_by_one;
                lidars.reset_world(0).unwrap();
                lidars.tick(scene, batch.poses(), &caster, 0.01, &[0.0], true).unwrap();
                reports.push(lidars.returns(0, 0).unwrap().clone());
            }
            let (batched, reference) = (&reports[0], &reports[1]);
            let bits = |r: &Returns| {
                let f = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                (f(&r.range), f(&r.secondary_range), f(&r.intensity), f(&r.reflectivity), r.geomid.clone())
            };
            assert!(bits(batched) == bits(reference), "{preset:?}");
            // The scene exercises every path: echoes, second echoes, and beams with none.
            let echoes = batched.range.iter().filter(|&&r| r > 0.0).count();
            let seconds = batched.secondary_range.iter().filter(|&&r| r > 0.0).count();
            assert!(echoes > 30_000 && echoes < batched.range.len(), "{preset:?}: {echoes} echoes");
            assert_eq!(seconds > 100, preset == ReturnPreset::OusterOs1, "{preset:?}: {seconds} second echoes");
        }
    }
}
