//! The return model over a group of beams: each beam planned (its first surface alone, or with
//! the opaque surface behind one pane, mirror or water surface, or traced leg by leg), the
//! candidates' strengths and reports worked out on vector lanes, and what the lanes leave
//! made one beam at a time.

use super::continuations::{LiveTracer, Prefetched};
use super::{ExtraScratch, GroupContext, Rays, ReturnInputs};
use crate::return_model::{
    Beam, BeamReturn, BeamRng, Candidate, LANES, LaneReports, Lanes, Path, SurfaceLanes, TickKey, cross,
};
use crate::scan::{CleanPart, ReturnsPart};
use crate::{Continuation, NirMaterial, PhysicalModel, ScanConfig};

/// How the return model goes about one beam of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Plan {
    /// No material at the first surface: no echo.
    Nothing,
    /// The first surface is the beam's only candidate.
    First,
    /// The first surface crosses onto another (slab, medium or specular), to be planned by
    /// [`GroupContext::plan_crossing`].
    Crossing,
    /// The first surface and the opaque surface behind one pane, mirror or water surface.
    Two,
    /// Traced one leg at a time ([`crate::ReturnModel::traced_return`]).
    Traced,
}

impl Plan {
    /// The plan of a beam by its first surface's material (`None`: no material), under the
    /// seed's model or `physics`. The physical model crosses surfaces by its own terms, and
    /// keeps a retroreflector's diffuse base, which the lanes' strengths leave out: beams
    /// whose first surface is either are traced.
    pub(super) fn of_first(material: Option<&NirMaterial>, physics: Option<PhysicalModel>) -> Plan {
        let Some(material) = material else { return Plan::Nothing };
        match material.continuation {
            Continuation::Opaque if physics.is_some_and(|p| p.adds_retro_base(material)) => Plan::Traced,
            Continuation::Opaque => Plan::First,
            Continuation::Porous => Plan::Traced,
            _ if physics.is_some() => Plan::Traced,
            _ => Plan::Crossing,
        }
    }
}

/// What [`GroupContext::plan_crossing`] makes of a beam.
enum Crossed {
    /// A second candidate behind the crossing.
    Two(Second),
    /// Otherwise: the first surface alone, or traced.
    Plan(Plan),
}

/// The second candidate of a beam that crosses one pane, mirror or water surface onto an
/// opaque surface, booked as [`crate::ReturnModel::traced_return`] books it, before its
/// strength.
struct Second {
    range: f64,
    cos: f64,
    /// The two-way loss of the crossing, which weighs the strength.
    loss: f64,
    /// Palette index of the surface's material.
    material: u32,
    geomid: i32,
}

/// A beam the lanes leave to [`crate::ReturnModel`] one beam at a time, with the candidates
/// the lanes worked out for it.
#[derive(Clone, Copy, Debug)]
pub(super) enum OneBeam {
    First(Candidate),
    Two(Candidate, Candidate),
    Traced,
}

/// The lanes of up to [`LANES`] consecutive beams of a group.
pub(super) struct Chunk {
    lanes: Lanes,
    reports: LaneReports,
    /// The first surfaces, and the second candidates of the lanes planned [`Plan::Two`].
    surfaces: [SurfaceLanes; 2],
    plan: [Plan; LANES],
    /// The two-way loss of each second candidate's crossing, which weighs its strength.
    loss: [f64; LANES],
}

impl Default for Chunk {
    fn default() -> Chunk {
        let (lanes, reports, surfaces) = Default::default();
        Chunk { lanes, reports, surfaces, plan: [Plan::Nothing; LANES], loss: [1.0; LANES] }
    }
}

impl GroupContext<'_> {
    /// The return model of every beam of a group, 64 beams at a time: each beam planned (its
    /// first surface alone, or with the opaque surface behind one pane, mirror or water
    /// surface), the candidates' strengths, detection, noise and echo choice on vector
    /// lanes. Beams that meet more (porous surfaces, two panes), and what the lanes leave
    /// (grazing draws, the power law), go one beam at a time; both ways give the same
    /// reports to the bit (`tests::batched_reports_equal_the_one_beam_model_to_the_bit`).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn model_group(
        &self,
        m: &ReturnInputs,
        (mut clean, returns): (CleanPart, &mut ReturnsPart),
        (order, ray_of): (&[usize], Option<&[usize]>),
        rays: &Rays,
        ext: &mut ExtraScratch,
        live: &mut LiveTracer,
        (key, first_beam): (TickKey, usize),
    ) {
        let c = &self.sensor.binding.scan;
        let mut inverse = std::mem::take(&mut ext.ray_of);
        if ray_of.is_none() {
            super::invert(order, &mut inverse);
        }
        let ray_of = ray_of.unwrap_or(&inverse);
        let beams = Beams { order, ray_of, scan: c, window: (c.min_range, c.max_range), key, first_beam };
        let mut chunk = ext.chunk.take().unwrap_or_default();
        ext.by_one.clear();
        for start in (0..order.len()).step_by(LANES) {
            self.report_chunk(m, &beams, rays, ext, (start, &mut chunk), (&mut clean, returns));
        }
        ext.chunk = Some(chunk);
        // What the lanes left, and the beams traced leg by leg.
        for &(r, how) in &ext.by_one {
            let rng = key.beam(beams.number(r));
            let report = self.report_by_one(m, (beams.window, rng), how, r, rays, ext, live);
            returns.set(order[r], &report);
        }
        ext.ray_of = inverse;
    }

    /// [`GroupContext::model_group`]'s reference: every beam through
    /// [`crate::ReturnModel::beam_return`], with the continuations cast ahead.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn model_one_by_one(
        &self,
        m: &ReturnInputs,
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

    /// The beams `start..` of a group (at most [`LANES`]) on the lanes of `chunk`: their
    /// clean returns written, planned, their candidates' strengths and reports worked out
    /// together, and each report written where the lanes made it; the others go to
    /// `ext.by_one`.
    fn report_chunk(
        &self,
        m: &ReturnInputs,
        beams: &Beams,
        rays: &Rays,
        ext: &mut ExtraScratch,
        (start, chunk): (usize, &mut Chunk),
        (clean, returns): (&mut CleanPart, &mut ReturnsPart),
    ) {
        let crossing = chunk.gather(m, beams, rays, ext, (start, clean));
        // The lanes' rays, read again where needed rather than stored (the gather is bound by
        // its stores).
        let ray_of = &beams.ray_of[start..];
        let pairs = self.plan_crossings(m, (rays, ray_of), ext, chunk, crossing);
        chunk.evaluate(m, beams, pairs);
        chunk.write((start, ray_of), returns, &mut ext.by_one);
    }

    /// Plans the lanes of bit mask `crossing`, whose first surface crosses onto another,
    /// setting the second candidates of those planned [`Plan::Two`]: whether there are any.
    fn plan_crossings(
        &self,
        m: &ReturnInputs,
        (rays, ray_of): (&Rays, &[usize]),
        ext: &ExtraScratch,
        chunk: &mut Chunk,
        mut crossing: u64,
    ) -> bool {
        let (mut pairs, mut retro) = (false, 0u64);
        while crossing != 0 {
            let i = crossing.trailing_zeros() as usize;
            crossing &= crossing - 1;
            let r = ray_of[i];
            chunk.plan[i] = match self.plan_crossing(m, rays, ext, r, &m.palette[ext.material[r] as usize]) {
                Crossed::Plan(plan) => plan,
                Crossed::Two(s) => {
                    retro |= u64::from(chunk.surfaces[1].put(i, &m.optics[s.material as usize], s.cos)) << i;
                    chunk.lanes.set(1, i, (s.range, s.cos, s.geomid));
                    chunk.loss[i] = s.loss;
                    pairs = true;
                    Plan::Two
                }
            };
        }
        chunk.surfaces[1].retro_terms(m.model.params(), retro);
        pairs
    }

    /// The report of ray `r` made one beam at a time (`how`), with the beam's window and
    /// random stream.
    #[allow(clippy::too_many_arguments)]
    fn report_by_one(
        &self,
        m: &ReturnInputs,
        (window, mut rng): ((f64, f64), BeamRng),
        how: OneBeam,
        r: usize,
        rays: &Rays,
        ext: &ExtraScratch,
        live: &mut LiveTracer,
    ) -> BeamReturn {
        match how {
            OneBeam::First(first) => m.model.report_one(window, &first, &mut rng),
            OneBeam::Two(first, second) => m.model.report(window, &[first, second], &mut rng),
            OneBeam::Traced => {
                let (surface, material) = (rays.surface(r), &m.palette[ext.material[r] as usize]);
                let beam = Beam { origin: rays.origin, dir: rays.dirs[r], window };
                let mut tracer = Prefetched { live, ahead: ext, r, through: surface.geomid, first: surface.distance };
                m.model.traced_return(&beam, (&surface, material), &mut tracer, m.materials, &mut rng)
            }
        }
    }

    /// The plan of ray `r`, whose first surface is a slab, medium or specular `material`,
    /// booking its second candidate as [`crate::ReturnModel::traced_return`] would: through
    /// the same crossing, from the same continuation cast ahead.
    fn plan_crossing(
        &self,
        m: &ReturnInputs,
        rays: &Rays,
        ext: &ExtraScratch,
        r: usize,
        material: &NirMaterial,
    ) -> Crossed {
        let params = m.model.params();
        let first = rays.surface(r);
        let mut path = Path::new(rays.origin, rays.dirs[r]);
        let (range, point) = path.reach(&first);
        if path.leaves(&first, material) {
            return Crossed::Plan(Plan::Traced);
        }
        // Porous surfaces, the only ones that draw a gap, are traced.
        let crossing = cross(params, &mut path, &first, material, false, || 1.0);
        let Some((kind, through)) = crossing.next else { return Crossed::Plan(Plan::First) };
        let Some(behind) = ext.first_continuation(r, kind, through, (first.geomid, first.distance)) else {
            return Crossed::Plan(Plan::Traced);
        };
        let Some(s) = behind else { return Crossed::Plan(Plan::First) };
        path.set_off(point, range);
        let (range, point) = path.reach(&s);
        let Some(index) = m.materials.index_at(s.geomid as usize, point).filter(|&i| i < m.palette.len()) else {
            return Crossed::Plan(Plan::First);
        };
        if m.palette[index].continuation != Continuation::Opaque {
            return Crossed::Plan(Plan::Traced);
        }
        let cos = path.dir.dot(s.normal).abs();
        Crossed::Two(Second { range, cos, loss: path.loss, material: index as u32, geomid: s.geomid })
    }
}

impl Chunk {
    /// Fills the lanes with the group's beams `start..` (at most [`LANES`]) and their first
    /// surfaces, and writes those beams' clean returns: bit mask of the lanes whose first
    /// surface crosses onto another.
    fn gather(
        &mut self,
        m: &ReturnInputs,
        beams: &Beams,
        rays: &Rays,
        ext: &ExtraScratch,
        (start, clean): (usize, &mut CleanPart),
    ) -> u64 {
        let Chunk { lanes, surfaces, plan, .. } = self;
        lanes.n = LANES.min(beams.order.len() - start);
        // The optics and plans past the palette's are those of no material.
        let no_material = m.palette.len();
        // One length for every array, so that one bounds check serves them all.
        let len = beams.order.len();
        let (dirs, normal, dist, geomid) =
            (&rays.dirs[..len], &rays.normal[..len], &rays.dist[..len], &rays.geomid[..len]);
        let (material, ray_of) = (&ext.material[..len], &beams.ray_of[..len]);
        let (mut crossing, mut retro) = (0u64, 0u64);
        for (i, j) in (start..start + lanes.n).enumerate() {
            let r = ray_of[j];
            let index = (material[r] as usize).min(no_material);
            let (d, g, dir, n) = (dist[r], geomid[r], dirs[r], normal[r]);
            clean.set(j, beams.scan.is_hit(d, g).then(|| (d, g, rays.origin + dir * d, n)));
            let cos = dir.dot(n).abs();
            retro |= u64::from(surfaces[0].put(i, &m.optics[index], cos)) << i;
            lanes.set(0, i, (d, cos, g));
            plan[i] = m.plans[index];
            crossing |= u64::from(plan[i] == Plan::Crossing) << i;
        }
        for (i, beam) in lanes.beam.iter_mut().enumerate() {
            *beam = (beams.first_beam + start + i) as u64;
        }
        // A NaN range is never detected: a lane has no second candidate until planned one.
        lanes.range[1] = [f64::NAN; LANES];
        surfaces[0].retro_terms(m.model.params(), retro);
        crossing
    }

    /// The candidates' strengths and the lanes' reports (`pairs`: some lanes have two
    /// candidates).
    fn evaluate(&mut self, m: &ReturnInputs, beams: &Beams, pairs: bool) {
        let (params, lanes) = (m.model.params(), &mut self.lanes);
        self.surfaces[0].strengths(params, lanes.n, &mut lanes.strength[0]);
        if pairs {
            self.surfaces[1].strengths(params, lanes.n, &mut lanes.strength[1]);
            for (s, loss) in lanes.strength[1].iter_mut().zip(&self.loss).take(lanes.n) {
                *s *= loss;
            }
            m.model.report_lanes::<2>(beams.window, beams.key, lanes, &mut self.reports);
        } else {
            m.model.report_lanes::<1>(beams.window, beams.key, lanes, &mut self.reports);
        }
    }

    /// Writes the reports the lanes made, of beams `start..`, and books the others in
    /// `by_one`.
    fn write(&self, (start, ray_of): (usize, &[usize]), returns: &mut ReturnsPart, by_one: &mut Vec<(usize, OneBeam)>) {
        let (lanes, reports) = (&self.lanes, &self.reports);
        returns.set_lanes(start, lanes.n, reports);
        for (i, &r) in ray_of[..lanes.n].iter().enumerate() {
            let candidate = |k: usize| Candidate {
                range: lanes.range[k][i],
                strength: lanes.strength[k][i],
                cos: lanes.cos[k][i],
                geomid: lanes.geomid[k][i],
                spread: 0.0,
            };
            let how = match self.plan[i] {
                Plan::Nothing => {
                    returns.set(start + i, &BeamReturn::NONE);
                    continue;
                }
                // Every crossing is planned by now.
                Plan::Traced | Plan::Crossing => OneBeam::Traced,
                _ if reports.made(i) => continue,
                Plan::First => OneBeam::First(candidate(0)),
                Plan::Two => OneBeam::Two(candidate(0), candidate(1)),
            };
            by_one.push((r, how));
        }
    }
}

/// What a group's beams share for their reports.
struct Beams<'a> {
    /// Ray `r` is beam `order[r]` of the group, and beam `first_beam + order[r]` of its tick;
    /// beam `j` is ray `ray_of[j]`.
    order: &'a [usize],
    ray_of: &'a [usize],
    /// The sensor's scan, which says what counts as a hit.
    scan: &'a ScanConfig,
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use glint_core::RayCaster;
    use glint_mujoco::{Model as Mujoco, WorldBatch};

    use crate::{
        Bake, BakeSettings, LidarBinding, Lidars, MaterialPreset, MaterialTable, Metal, NirMaterial, PhysicalModel,
        ReturnPreset, ScanConfig, ScanPreset,
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
        let bake = Arc::new(bake);
        let mut scan = ScanConfig::default();
        ScanPreset::OusterOs1_64.apply(&mut scan);
        // A frozen revolution: whole groups only. Then 10 Hz ticks of 140.3 bins, whose
        // last group is cut short (its cast order is built, not cached).
        for (rotation_hz, dt) in [(0.0, 0.01), (10.0, 0.0137)] {
            let scan = ScanConfig { rotation_hz, max_range: 40.0, ..scan };
            let binding = LidarBinding { attach_site: Some("lidar".into()), scan, ..LidarBinding::default() };
            let (mut lidars, _) = Lidars::new(scene, vec![binding], 1).unwrap();
            lidars.set_materials(Some(bake.clone()));
            lidars.set_seed(7);
            // Ouster: two echoes, every range under the reflectivity's sure range. Generic:
            // one echo, and beyond about 6 m the power law, which the lanes leave to the
            // one-beam path. Each under the seed's model and the physical one, whose reports
            // the group path makes one beam at a time from the lanes' strengths.
            let cases = [ReturnPreset::OusterOs1, ReturnPreset::Generic]
                .into_iter()
                .flat_map(|preset| [None, Some(PhysicalModel::default())].map(|physics| (preset, physics)));
            for (preset, physics) in cases {
                lidars.set_return_preset(preset);
                lidars.set_physical_model(physics).unwrap();
                let (mut reports, mut cast) = (Vec::new(), Vec::new());
                for one_by_one in [false, true] {
                    lidars.one_by_one = one_by_one;
                    lidars.reset_world(0).unwrap();
                    for _ in 0..2 {
                        lidars.tick(scene, batch.poses(), &caster, dt, &[0.0], true).unwrap();
                    }
                    lidars.last_tick_beams(0, 0, &mut cast).unwrap();
                    // Each cast beam's report and clean return, to the bit.
                    let (r, clean) = (lidars.returns(0, 0).unwrap(), lidars.scan(0, 0).unwrap());
                    let bits = |v: &[f32; 3]| v.map(f32::to_bits);
                    let surfaces = clean.surfaces.as_ref().unwrap();
                    let beams = cast.iter().map(|&k| k as usize).map(|k| {
                        let report = [r.range[k], r.secondary_range[k], r.intensity[k], r.reflectivity[k]];
                        let (point, normal) = (bits(&surfaces.point[k]), bits(&surfaces.normal[k]));
                        let hit = (clean.range[k].to_bits(), clean.geomid[k], point, normal);
                        (report.map(f32::to_bits), r.geomid[k], hit)
                    });
                    reports.push(beams.collect::<Vec<_>>());
                }
                let case = format!("{preset:?} at {rotation_hz} Hz, physical model {physics:?}");
                assert!(reports[0] == reports[1], "{case}");
                assert_eq!(cast.len() % 64, 0);
                if rotation_hz > 0.0 {
                    assert!(cast.len() / 64 % 8 != 0, "{case}: {} bins, no group cut short", cast.len() / 64);
                    continue;
                }
                // The scene exercises every path: echoes, second echoes, and beams with none.
                let batched = lidars.returns(0, 0).unwrap();
                let echoes = batched.range.iter().filter(|&&r| r > 0.0).count();
                let seconds = batched.secondary_range.iter().filter(|&&r| r > 0.0).count();
                assert!(echoes > 30_000 && echoes < batched.range.len(), "{case}: {echoes} echoes");
                assert_eq!(seconds > 100, preset == ReturnPreset::OusterOs1, "{case}: {seconds} second echoes");
            }
        }
    }
}
