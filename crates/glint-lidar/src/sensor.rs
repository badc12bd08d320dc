//! Bound sensors, their tick timing, and their live scans in every world of a batch.

use glam::{DMat3, DVec3};
use glint_core::{CoreError, Poses, PreparedRays, RayCaster, RayFilter, Scene, nearest_name};
use rayon::prelude::*;

use std::sync::Arc;

use crate::model::{
    Beam, BeamReturn, BeamRng, Candidate, LANES, LaneReports, Lanes, LegKind, MEDIUM_INDEX, MaterialLookup, NUDGE,
    Optics, Path, ReturnModel, Surface, SurfaceLanes, TickKey, Tracer, cross, fold, refract, slope, strengths,
};
use crate::pattern::{angles, beam_direction};
use crate::scan::{ReturnsPart, Scan, ScanPart};
use crate::{
    Continuation, LidarBinding, LidarError, MaterialTable, NirMaterial, ReturnParams, ReturnPreset, Returns,
    ScanConfig, ScanPattern, SecondaryCapture, SecondaryScope, SelfIgnore,
};

/// Where a sensor is in its pattern in one world.
#[derive(Clone, Copy, Debug, Default)]
struct Clock {
    /// Pattern revolutions since the episode started.
    revolutions: f64,
    /// Pattern units (bins, or points) cast since the episode started.
    emitted: u64,
    /// Ticks since the episode started (keys the return model's randomness).
    ticks: u64,
    /// Units `[from, to)` the last tick cast (since the episode started).
    last: (u64, u64),
}

/// One bound sensor.
#[derive(Clone, Debug)]
struct Sensor {
    binding: LidarBinding,
    /// Attach site, if one was given (it wins).
    site: Option<usize>,
    /// Body whose frame (or whose site's frame) carries the sensor.
    body: usize,
    /// Beam directions in the sensor frame for a spinning pattern (fixed).
    spinning: Vec<DVec3>,
    /// A spinning pattern's whole groups, cached: the beam offsets of a group in cast order,
    /// and every whole group's sensor-frame directions in that order, group after group.
    tile_order: Vec<usize>,
    tile_dirs: Vec<DVec3>,
    clocks: Vec<Clock>,
    scans: Vec<Scan>,
}

/// Pattern units a tick casts as one group: a group's beams are contiguous in the scan and
/// go to the ray core together. Eight bins make whole 4 × 4 tiles of a spinning pattern, and
/// gather enough beams onto one pane, mirror or pool for their continuations to fill packets
/// (four measured 3 % slower with the return model, sixteen slower still).
const GROUP_BINS: u64 = 8;
const GROUP_POINTS: u64 = 256;

/// Working arrays of one thread's groups.
#[derive(Default)]
struct GroupScratch {
    /// Beam offsets within the group, in cast order.
    order: Vec<usize>,
    dirs: Vec<DVec3>,
    dist: Vec<f64>,
    geomid: Vec<i32>,
    normal: Vec<DVec3>,
    extra: ExtraScratch,
}

/// Working arrays of the return model and the secondary capture.
#[derive(Default)]
struct ExtraScratch {
    /// Palette index of the material of each ray's first surface, where the return model
    /// runs and the bake knows it (`NO_MATERIAL` otherwise).
    material: Vec<u32>,
    /// The rays that continue straight through their first geom (for the return model or
    /// the pass-through capture), in scan order.
    through: Vec<usize>,
    /// The straight continuation of each ray that wanted one, cast from the sensor origin
    /// past its first geom: the surface behind it, distance from the origin.
    straight: Ahead,
    /// The fold of each ray the return model folds off a mirror first: the surface the
    /// folded ray meets, distance from its start just off the mirror.
    folded: Ahead,
    /// The refraction of each ray the return model bends into a medium first: the surface
    /// the bent ray meets, distance from its start just under the medium's surface.
    refracted: Ahead,
    /// The rays the model bends into a medium first.
    bent: Vec<usize>,
    /// Where each ray of one batch of folds or refractions starts.
    origins: Vec<DVec3>,
    /// The candidate strength of each ray's first surface (NaN without a material), and the
    /// incidence cosines.
    strength: Vec<f64>,
    cos: Vec<f64>,
    /// How the model goes about each ray.
    plan: Vec<Plan>,
    /// The second candidates of the rays planned [`Plan::Two`].
    second: Seconds,
    /// The rays reported one beam at a time.
    by_one: Vec<usize>,
    /// One batch of continuations: ray indices and directions, and the answers.
    rays: Vec<usize>,
    dirs: Vec<DVec3>,
    answers: Answers,
}

/// The ray core's answers to one batch.
#[derive(Default)]
struct Answers {
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
    fn surface(&self, i: usize) -> Option<Surface> {
        (self.geomid[i] >= 0).then(|| Surface {
            distance: self.dist[i],
            geomid: self.geomid[i],
            normal: self.normal[i],
        })
    }
}

const NO_MATERIAL: u32 = u32::MAX;

/// How the return model goes about one beam of a group.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Plan {
    /// No material at the first surface: no echo.
    Nothing,
    /// The first surface is the beam's only candidate.
    First,
    /// The first surface and the `k`th of [`Seconds`]: a beam that crosses one pane, mirror
    /// or water surface onto an opaque surface.
    Two(u32),
    /// Traced one leg at a time ([`ReturnModel::traced_return`]).
    Traced,
}

/// Second candidates, booked as the model's trace books them, with their strengths worked
/// out together.
#[derive(Default)]
struct Seconds {
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

/// Continuations cast ahead as packets for some rays of a group.
#[derive(Default)]
struct Ahead {
    /// Per ray, where its answer is in `hits` (`NOT_CAST`: none).
    slot: Vec<u32>,
    hits: Vec<Option<Surface>>,
}

const NOT_CAST: u32 = u32::MAX;

impl ExtraScratch {
    /// Ray `r`'s first continuation (of `kind`, passing through `through`) as cast ahead, in
    /// the model's terms: `None` when it was not cast ahead. `first` is the geom and distance
    /// of the ray's first surface.
    fn first_continuation(&self, r: usize, kind: LegKind, through: i32, first: (i32, f64)) -> Option<Option<Surface>> {
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

/// Every bound lidar of a scene, over `nworld` worlds. Sensors are addressed by 0-based index
/// in binding order.
#[derive(Clone, Debug)]
pub struct Lidars {
    sensors: Vec<Sensor>,
    nworld: usize,
    live: bool,
    /// The return model calibration, one set for every sensor.
    params: ReturnParams,
    /// Seed of the return model's randomness.
    seed: u64,
    /// Where hits find their NIR material; the return model runs while one is set.
    materials: Option<MaterialSource>,
    /// Per geom, what its MuJoCo material flags for secondary capture ([`FLAG_PASS`],
    /// [`FLAG_REFLECT`]).
    geom_flags: Vec<u8>,
    /// Per geom, the continuation class its authored NIR material gives it (for the flagged
    /// secondary-capture scope when no material source is loaded).
    geom_class: Vec<Option<Continuation>>,
    /// Tests: report every beam through [`ReturnModel::beam_return`], the reference the
    /// batched passes must equal.
    #[cfg(test)]
    one_by_one: bool,
}

/// A shared material lookup (usually a loaded bake).
#[derive(Clone)]
struct MaterialSource(Arc<dyn MaterialLookup>);

impl std::fmt::Debug for MaterialSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MaterialSource")
    }
}

/// The geom's MuJoCo material is translucent: a pass-through ray is worth casting.
const FLAG_PASS: u8 = 1;
/// The geom's MuJoCo material has a non-zero reflectance: a reflected ray is worth casting.
const FLAG_REFLECT: u8 = 2;

/// What each geom's MuJoCo material says about secondary capture in the flagged scope.
fn geom_flags(scene: &Scene) -> Vec<u8> {
    (0..scene.ngeom())
        .map(|g| {
            let m = scene.geom_matid[g];
            let (alpha, reflectance) = if m >= 0 {
                (scene.mat_rgba[m as usize][3], scene.mat_shading[m as usize][3])
            } else {
                (scene.geom_rgba[g][3], 0.0)
            };
            let mut flags = 0;
            if alpha < 1.0 {
                flags |= FLAG_PASS;
            }
            if reflectance > 0.0 {
                flags |= FLAG_REFLECT;
            }
            flags
        })
        .collect()
}

fn resolve(scene: &Scene, b: &LidarBinding) -> Result<(Option<usize>, usize), LidarError> {
    let unknown = |kind, target: &str, names: &[String]| LidarError::UnknownTarget {
        name: b.name.clone(),
        kind,
        target: target.into(),
        hint: nearest_name(target, names.iter().map(String::as_str))
            .map_or(String::new(), |n| format!("; did you mean '{n}'?")),
    };
    if let Some(site) = &b.attach_site {
        let s = scene.site_id(site).ok_or_else(|| unknown("site", site, &scene.site_name))?;
        return Ok((Some(s), scene.site_bodyid[s] as usize));
    }
    if let Some(body) = &b.attach_body {
        let id = scene.body_id(body).ok_or_else(|| unknown("body", body, &scene.body_name))?;
        return Ok((None, id));
    }
    Err(LidarError::NoAttachTarget { name: b.name.clone() })
}

impl Sensor {
    fn new(scene: &Scene, mut binding: LidarBinding, nworld: usize) -> Result<(Sensor, Vec<String>), LidarError> {
        let warnings = binding.scan.validate()?;
        if !binding.mount_offset.is_finite() {
            return Err(LidarError::OutOfRange {
                field: "mount_offset",
                value: binding.mount_offset.max_element(),
                range: "finite metres",
            });
        }
        let (site, body) = resolve(scene, &binding)?;
        if binding.name.is_empty() {
            binding.name = match site {
                Some(s) => scene.site_name[s].clone(),
                None => scene.body_name[body].clone(),
            };
        }
        let mut sensor = Sensor {
            binding,
            site,
            body,
            spinning: Vec::new(),
            tile_order: Vec::new(),
            tile_dirs: Vec::new(),
            clocks: Vec::new(),
            scans: Vec::new(),
        };
        sensor.configure(nworld);
        Ok((sensor, warnings))
    }

    /// Rebuilds the pattern and restarts every world's scan after a configuration change.
    fn configure(&mut self, nworld: usize) {
        let c = &self.binding.scan;
        self.spinning = match c.pattern {
            ScanPattern::Spinning => (0..c.beam_count()).map(|k| beam_direction(c, 0, k)).collect(),
            _ => Vec::new(),
        };
        self.clocks = vec![Clock::default(); nworld];
        self.scans = vec![Scan::new(c.beam_count(), false, false, false); nworld];
        (self.tile_order, self.tile_dirs) = (Vec::new(), Vec::new());
        if matches!(c.pattern, ScanPattern::Spinning) {
            let (mut order, mut dirs) = (Vec::new(), Vec::new());
            let whole = self.units() / GROUP_BINS * GROUP_BINS;
            for u0 in (0..whole).step_by(GROUP_BINS as usize) {
                self.group_rays((u0, u0 + GROUP_BINS), &mut order, &mut dirs);
                self.tile_dirs.extend_from_slice(&dirs);
            }
            self.tile_order = order;
        }
    }

    /// Gives every world's scan the parts the return model and the secondary capture need.
    fn set_layout(&mut self, returns: bool) {
        let capture = self.binding.secondary_capture;
        let pass = matches!(capture, SecondaryCapture::PassThrough | SecondaryCapture::Both);
        let reflected = matches!(capture, SecondaryCapture::Reflected | SecondaryCapture::Both);
        for scan in &mut self.scans {
            scan.set_layout(returns, pass, reflected);
        }
    }

    /// Sensor origin and orientation (columns: sensor axes) in world `w`.
    fn frame(&self, poses: &Poses, w: usize) -> (DVec3, DMat3) {
        let (pos, rot) = match self.site {
            Some(s) => poses.site(w, s),
            None => {
                let nbody = poses.xpos.len() / poses.nworld;
                (poses.xpos[w * nbody + self.body], poses.xmat[w * nbody + self.body])
            }
        };
        (pos + rot * self.binding.mount_offset, rot)
    }

    fn filter(&self, scene: &Scene) -> (RayFilter, i32) {
        let c = &self.binding.scan;
        let mut filter = RayFilter::from_group_mask(c.effective_group_mask(), true);
        let body = self.body as i32;
        let exclude = match c.self_ignore {
            // A sensor on the world body has no robot to ignore: it sees the whole world.
            _ if self.body == 0 => -1,
            SelfIgnore::None => -1,
            SelfIgnore::MountBody => body,
            SelfIgnore::WholeRobot => {
                let root = scene.body_rootid[self.body];
                // Attached to the world body: its "robot" is the world body alone.
                if root > 0 {
                    filter.exclude_tree = root;
                }
                body
            }
        };
        (filter, exclude)
    }

    /// Pattern units per revolution: azimuth bins (spinning), or points per cycle (which
    /// non-repetitive patterns keep in `azimuth_bins`).
    fn units(&self) -> u64 {
        self.binding.scan.azimuth_bins as u64
    }

    /// Advances world `w`'s clock by `dt` and returns the units to cast: `[from, to)` in
    /// units since the episode start (at most one revolution).
    fn advance(&mut self, w: usize, dt: f64) -> (u64, u64) {
        let (hz, units) = (self.binding.scan.rotation_hz, self.units());
        let clock = &mut self.clocks[w];
        clock.ticks += 1;
        clock.last = if hz <= 0.0 {
            // A frozen pattern: the whole of cycle 0, every tick.
            (0, units)
        } else {
            clock.revolutions += (hz * dt).min(1.0);
            // A whisker of slack absorbs rounding in the sum of revolutions.
            let target = ((clock.revolutions * units as f64) + 1e-6).floor() as u64;
            let from = clock.emitted.max(target.saturating_sub(units));
            clock.emitted = target;
            (from, target)
        };
        clock.last
    }

    /// Splits units `[from, to)` into groups of at most `GROUP_BINS` bins (or `GROUP_POINTS`
    /// points), aligned to multiples of that size within the revolution and never crossing
    /// its end, so each covers contiguous beams and whole groups match the cached tiles.
    fn groups(&self, from: u64, to: u64) -> Vec<(u64, u64)> {
        let units = self.units();
        let size = match self.binding.scan.pattern {
            ScanPattern::Spinning => GROUP_BINS,
            _ => GROUP_POINTS,
        };
        let mut groups = Vec::new();
        let mut u0 = from;
        while u0 < to {
            let rev = u0 / units * units;
            let u1 = (rev + ((u0 - rev) / size + 1) * size).min(to).min(rev + units);
            groups.push((u0, u1));
            u0 = u1;
        }
        groups
    }

    /// The cached sensor-frame directions of a whole, aligned spinning group, if it is one.
    fn whole_group(&self, (u0, u1): (u64, u64)) -> Option<&[DVec3]> {
        let first = (u0 % self.units()) as usize;
        let len = self.tile_order.len();
        let at = first / GROUP_BINS as usize * len;
        let aligned = first.is_multiple_of(GROUP_BINS as usize) && u1 - u0 == GROUP_BINS;
        if aligned && at + len <= self.tile_dirs.len() { Some(&self.tile_dirs[at..at + len]) } else { None }
    }

    /// Beam offsets (from the group's first beam) and sensor-frame directions of the group
    /// of units `[u0, u1)`, in cast order: 4 × 4 tiles of bins × channels for a spinning
    /// pattern (tighter packets than one bin's column), emission order otherwise.
    fn group_rays(&self, (u0, u1): (u64, u64), order: &mut Vec<usize>, dirs: &mut Vec<DVec3>) {
        order.clear();
        dirs.clear();
        let c = &self.binding.scan;
        let units = self.units();
        let first = (u0 % units) as usize;
        match c.pattern {
            ScanPattern::Spinning => {
                let channels = c.channels as usize;
                let bins = (u1 - u0) as usize;
                for c0 in (0..channels).step_by(4) {
                    for b in 0..bins {
                        for ch in c0..(c0 + 4).min(channels) {
                            let offset = b * channels + ch;
                            order.push(offset);
                            dirs.push(self.spinning[first * channels + offset]);
                        }
                    }
                }
            }
            _ => {
                for u in u0..u1 {
                    order.push((u - u0) as usize);
                    dirs.push(beam_direction(c, u / units, (u % units) as usize));
                }
            }
        }
    }
}

impl Lidars {
    /// Whether ticks report every beam through the one-beam model (tests only).
    fn one_by_one(&self) -> bool {
        #[cfg(test)]
        return self.one_by_one;
        #[cfg(not(test))]
        false
    }

    /// Binds `bindings` (in order) to `scene` for `nworld` worlds. Returns the sensors and
    /// any warnings (each sensor's group mask high bits, once).
    pub fn new(scene: &Scene, bindings: Vec<LidarBinding>, nworld: usize) -> Result<(Lidars, Vec<String>), LidarError> {
        let mut lidars = Lidars {
            sensors: Vec::new(),
            nworld: nworld.max(1),
            live: false,
            params: ReturnParams::default(),
            seed: 0,
            materials: None,
            geom_flags: geom_flags(scene),
            geom_class: vec![None; scene.ngeom()],
            #[cfg(test)]
            one_by_one: false,
        };
        let mut warnings = Vec::new();
        for b in bindings {
            warnings.extend(lidars.add(scene, b)?);
        }
        Ok((lidars, warnings))
    }

    /// Adds one sensor; returns its warnings. Nothing changes on an error.
    pub fn add(&mut self, scene: &Scene, binding: LidarBinding) -> Result<Vec<String>, LidarError> {
        let index = self.sensors.len();
        let (mut sensor, warnings) = Sensor::new(scene, binding, self.nworld)?;
        sensor.set_layout(self.materials.is_some());
        self.sensors.push(sensor);
        Ok(warnings.into_iter().map(|w| format!("lidar sensor {index}: {w}")).collect())
    }

    /// Number of sensors.
    pub fn len(&self) -> usize {
        self.sensors.len()
    }

    /// Whether no sensor is bound.
    pub fn is_empty(&self) -> bool {
        self.sensors.is_empty()
    }

    /// Number of worlds.
    pub fn nworld(&self) -> usize {
        self.nworld
    }

    fn sensor(&self, index: usize) -> Result<&Sensor, LidarError> {
        self.sensors.get(index).ok_or(LidarError::NoSuchSensor { index, count: self.sensors.len() })
    }

    fn sensor_mut(&mut self, index: usize) -> Result<&mut Sensor, LidarError> {
        let count = self.sensors.len();
        self.sensors.get_mut(index).ok_or(LidarError::NoSuchSensor { index, count })
    }

    fn check_world(&self, world: usize) -> Result<(), LidarError> {
        if world < self.nworld { Ok(()) } else { Err(LidarError::NoSuchWorld { world, nworld: self.nworld }) }
    }

    /// Fire the sensors on every tick (`true`), or only when a recorder asks (`false`, the
    /// default).
    pub fn set_live(&mut self, live: bool) {
        self.live = live;
    }

    /// Whether the sensors fire on every tick.
    pub fn live(&self) -> bool {
        self.live
    }

    /// Beam count of sensor `index`: `channels * azimuth_bins`.
    pub fn beam_count(&self, index: usize) -> Result<usize, LidarError> {
        Ok(self.sensor(index)?.binding.scan.beam_count())
    }

    /// The binding of sensor `index` (with its output name filled in).
    pub fn binding(&self, index: usize) -> Result<&LidarBinding, LidarError> {
        Ok(&self.sensor(index)?.binding)
    }

    /// The scan configuration of sensor `index`.
    pub fn config(&self, index: usize) -> Result<ScanConfig, LidarError> {
        Ok(self.sensor(index)?.binding.scan)
    }

    /// Replaces the scan configuration of sensor `index` in the running simulation: the beam
    /// count follows and every world's scan restarts. Validated first; nothing changes on an
    /// error. Returns the warnings.
    pub fn set_config(&mut self, index: usize, config: ScanConfig) -> Result<Vec<String>, LidarError> {
        let warnings = config.validate()?;
        let (nworld, returns) = (self.nworld, self.materials.is_some());
        let sensor = self.sensor_mut(index)?;
        sensor.binding.scan = config;
        sensor.configure(nworld);
        sensor.set_layout(returns);
        Ok(warnings.into_iter().map(|w| format!("lidar sensor {index}: {w}")).collect())
    }

    /// Chooses the secondary geometry the recorder captures for sensor `index`.
    pub fn set_secondary_capture(
        &mut self,
        index: usize,
        capture: SecondaryCapture,
        scope: SecondaryScope,
    ) -> Result<(), LidarError> {
        let returns = self.materials.is_some();
        let sensor = self.sensor_mut(index)?;
        sensor.binding.secondary_capture = capture;
        sensor.binding.secondary_scope = scope;
        sensor.set_layout(returns);
        Ok(())
    }

    /// The return model calibration (one set for every sensor; Generic until set).
    pub fn return_params(&self) -> ReturnParams {
        self.params
    }

    /// Replaces all seventeen return model parameters; validated first, nothing changes on
    /// an error.
    pub fn set_return_params(&mut self, params: ReturnParams) -> Result<(), LidarError> {
        params.validate()?;
        self.params = params;
        Ok(())
    }

    /// Writes the nine base parameters and keeps the eight optics parameters.
    pub fn set_return_base(&mut self, base: [f64; 9]) -> Result<(), LidarError> {
        self.params.set_base(base)
    }

    /// Applies a return preset: every parameter, optics included, takes the preset's value.
    pub fn set_return_preset(&mut self, preset: ReturnPreset) {
        self.params = preset.params();
    }

    /// Seeds the return model's randomness (noise, grazing dropout, porous gaps).
    pub fn set_seed(&mut self, seed: u64) {
        self.seed = seed;
    }

    /// Loads where hits find their NIR material (usually a bake): from the next tick on, every
    /// sensor also runs the return model and fills [`Scan::returns`]. `None` turns it off.
    pub fn set_materials(&mut self, materials: Option<Arc<dyn MaterialLookup>>) {
        self.materials = materials.map(MaterialSource);
        let returns = self.materials.is_some();
        for sensor in &mut self.sensors {
            sensor.set_layout(returns);
        }
    }

    /// Tells the flagged secondary-capture scope each geom's continuation class from the
    /// scene's NIR authoring (by its MuJoCo material's name), so a recording captures the
    /// geometry behind a hedge or a window whose MuJoCo material looks opaque. A loaded material
    /// source (bake) answers instead, per hit.
    pub fn set_capture_materials(&mut self, scene: &Scene, table: &MaterialTable) {
        self.geom_class = (0..scene.ngeom())
            .map(|g| {
                let m = scene.geom_matid[g];
                (m >= 0).then(|| table.get(&scene.mat_name[m as usize]).map(|n| n.continuation)).flatten()
            })
            .collect();
    }

    /// The return model's live measurement of sensor `index` in world `world`. An error when
    /// no material source (bake) is loaded: the model has no reflectivity to work from.
    pub fn returns(&self, index: usize, world: usize) -> Result<&Returns, LidarError> {
        self.scan(index, world)?.returns.as_ref().ok_or(LidarError::NoMaterials)
    }

    /// The live scan of sensor `index` in world `world`.
    pub fn scan(&self, index: usize, world: usize) -> Result<&Scan, LidarError> {
        self.check_world(world)?;
        Ok(&self.sensor(index)?.scans[world])
    }

    /// Copies the live ranges of sensor `index` in world `world` into `out` (metres, `-1`
    /// for no return); `out` must hold exactly the beam count. Returns the count written.
    pub fn scan_into(&self, index: usize, world: usize, out: &mut [f32]) -> Result<usize, LidarError> {
        let scan = self.scan(index, world)?;
        if out.len() != scan.len() {
            return Err(LidarError::BufferLength {
                what: "the range buffer",
                len: out.len(),
                sensor: index,
                beams: scan.len(),
            });
        }
        out.copy_from_slice(&scan.range);
        Ok(scan.len())
    }

    /// Azimuth (`atan2(y, x)`) and elevation (`asin(z)`) of every beam of sensor `index` for
    /// the current cycle of world `world`, radians, sensor frame. Both buffers must hold the
    /// beam count.
    pub fn beam_angles(&self, index: usize, world: usize, az: &mut [f32], el: &mut [f32]) -> Result<usize, LidarError> {
        self.check_world(world)?;
        let sensor = self.sensor(index)?;
        let c = &sensor.binding.scan;
        let beams = c.beam_count();
        for (what, len) in [("the azimuth buffer", az.len()), ("the elevation buffer", el.len())] {
            if len != beams {
                return Err(LidarError::BufferLength { what, len, sensor: index, beams });
            }
        }
        let units = sensor.units().max(1);
        let cycle = match c.pattern {
            ScanPattern::Spinning => 0,
            _ if c.rotation_hz <= 0.0 => 0,
            _ => sensor.clocks[world].emitted.saturating_sub(1) / units,
        };
        for k in 0..beams {
            let d = match c.pattern {
                ScanPattern::Spinning => sensor.spinning[k],
                _ => beam_direction(c, cycle, k),
            };
            let (a, e) = angles(d);
            (az[k], el[k]) = (a as f32, e as f32);
        }
        Ok(beams)
    }

    /// Origin and orientation (columns: the sensor's axes) of sensor `index` in world
    /// `world` for `poses`.
    pub fn frame(&self, index: usize, world: usize, poses: &Poses) -> Result<(DVec3, DMat3), LidarError> {
        self.check_world(world)?;
        Ok(self.sensor(index)?.frame(poses, world))
    }

    /// The ray filter and the excluded body (`-1`: none) that sensor `index`'s beams use: its
    /// group mask and self-ignore mode in the ray core's terms.
    pub fn ray_filter(&self, index: usize, scene: &Scene) -> Result<(RayFilter, i32), LidarError> {
        Ok(self.sensor(index)?.filter(scene))
    }

    /// The beams sensor `index` cast in world `world` on its last tick, in emission order
    /// (bin by bin, channels upward; points in firing order for non-repetitive patterns), into
    /// `out` (cleared first). Empty before the first tick of an episode.
    pub fn last_tick_beams(&self, index: usize, world: usize, out: &mut Vec<u32>) -> Result<(), LidarError> {
        self.check_world(world)?;
        let sensor = self.sensor(index)?;
        let (from, to) = sensor.clocks[world].last;
        let units = sensor.units();
        let per_unit = sensor.binding.scan.beam_count() / units as usize;
        out.clear();
        for u in from..to {
            let first = (u % units) as usize * per_unit;
            out.extend((first..first + per_unit).map(|k| k as u32));
        }
        Ok(())
    }

    /// Ticks sensor `index` has run in world `world` since the episode started.
    pub fn ticks(&self, index: usize, world: usize) -> Result<u64, LidarError> {
        self.check_world(world)?;
        Ok(self.sensor(index)?.clocks[world].ticks)
    }

    /// Restarts the pattern of every sensor in world `world` (an episode start); the live
    /// scans keep their values until overwritten.
    pub fn reset_world(&mut self, world: usize) -> Result<(), LidarError> {
        self.check_world(world)?;
        for s in &mut self.sensors {
            s.clocks[world] = Clock::default();
        }
        Ok(())
    }

    /// One tick of the lidar runner, `dt` seconds long, after the worlds stepped: every
    /// sensor casts the next slice of its pattern in every world (when live, or when
    /// `force` is set, as a recorder does), stamping each ray with its world's time in
    /// `times` (one per world). All worlds of a sensor go in one parallel call when their
    /// slices line up.
    pub fn tick(
        &mut self,
        scene: &Scene,
        poses: &Poses,
        caster: &RayCaster,
        dt: f64,
        times: &[f64],
        force: bool,
    ) -> Result<(), LidarError> {
        if !(self.live || force) {
            return Ok(());
        }
        if !(dt.is_finite() && dt >= 0.0) {
            return Err(LidarError::OutOfRange { field: "dt", value: dt, range: "finite, 0 or more seconds" });
        }
        if times.len() != self.nworld || poses.nworld != self.nworld {
            return Err(LidarError::Conflict(format!(
                "the lidars were bound for {} worlds but got poses for {} and {} times",
                self.nworld,
                poses.nworld,
                times.len()
            )));
        }
        let palette = self.materials.as_ref().map_or(&[][..], |m| m.0.palette());
        let optics: Vec<Optics> = palette.iter().map(|material| Optics::new(&self.params, material)).collect();
        let model = self.materials.as_ref().map(|m| Model {
            model: ReturnModel::new(self.params),
            seed: self.seed,
            materials: &*m.0,
            palette,
            optics: &optics,
        });
        let one_by_one = self.one_by_one();
        for (index, sensor) in self.sensors.iter_mut().enumerate() {
            let ctx = TickContext {
                sensor: index,
                model,
                geom_flags: &self.geom_flags,
                geom_class: &self.geom_class,
                one_by_one,
            };
            tick_sensor(sensor, scene, poses, caster, dt, times, &ctx)?;
        }
        Ok(())
    }
}

/// What a tick needs besides the sensor and the scene.
struct TickContext<'a> {
    sensor: usize,
    model: Option<Model<'a>>,
    geom_flags: &'a [u8],
    geom_class: &'a [Option<Continuation>],
    /// Report every beam through [`ReturnModel::beam_return`] (tests).
    one_by_one: bool,
}

/// The return model's inputs, shared by every sensor.
#[derive(Clone, Copy)]
struct Model<'a> {
    model: ReturnModel,
    seed: u64,
    materials: &'a dyn MaterialLookup,
    palette: &'a [NirMaterial],
    /// The optics of each palette entry under the model's calibration.
    optics: &'a [Optics],
}

/// One group of a tick: its units, its part of a world's scan, that world and its tick.
struct GroupJob<'a> {
    units: (u64, u64),
    part: ScanPart<'a>,
    world: usize,
    time: f64,
    tick: u64,
}

/// One sensor's tick in every world: each world's slice is cut into groups, and all groups of
/// all worlds are cast in one parallel loop, each writing straight into its part of the scan.
fn tick_sensor(
    sensor: &mut Sensor,
    scene: &Scene,
    poses: &Poses,
    caster: &RayCaster,
    dt: f64,
    times: &[f64],
    ctx: &TickContext,
) -> Result<(), LidarError> {
    let nworld = times.len();
    let slices: Vec<(u64, u64)> = (0..nworld).map(|w| sensor.advance(w, dt)).collect();
    let (filter, exclude) = sensor.filter(scene);
    let frames: Vec<(DVec3, DMat3)> = (0..nworld).map(|w| sensor.frame(poses, w)).collect();
    let prepared = caster.prepare(scene, poses, &filter)?;
    let mut scans = std::mem::take(&mut sensor.scans);
    let mut jobs = Vec::new();
    for (w, scan) in scans.iter_mut().enumerate() {
        let (from, to) = slices[w];
        let tick = sensor.clocks[w].ticks;
        split_into_jobs(sensor, scan, sensor.groups(from, to), (w, times[w], tick), &mut jobs);
    }
    let sensor_ref = &*sensor;
    let group = GroupContext { sensor: sensor_ref, prepared: &prepared, frames: &frames, exclude, tick: ctx };
    let result = jobs.into_par_iter().try_for_each_init(GroupScratch::default, |scratch, job| group.cast(job, scratch));
    sensor.scans = scans;
    result.map_err(LidarError::from)
}

/// Cuts `scan` into the disjoint parts that `groups` write and queues one job per group.
fn split_into_jobs<'a>(
    sensor: &Sensor,
    scan: &'a mut Scan,
    mut groups: Vec<(u64, u64)>,
    (world, time, tick): (usize, f64, u64),
    jobs: &mut Vec<GroupJob<'a>>,
) {
    let units = sensor.units();
    let per_unit = sensor.binding.scan.beam_count() / units as usize;
    groups.sort_by_key(|&(u0, _)| u0 % units);
    let mut rest = scan.part();
    let mut cursor = 0;
    for (u0, u1) in groups {
        let first = (u0 % units) as usize * per_unit;
        let len = (u1 - u0) as usize * per_unit;
        let (_, tail) = rest.split_at(first - cursor);
        let (part, tail) = tail.split_at(len);
        jobs.push(GroupJob { units: (u0, u1), part, world, time, tick });
        rest = tail;
        cursor = first + len;
    }
}

/// What every group of one sensor's tick shares.
struct GroupContext<'a> {
    sensor: &'a Sensor,
    prepared: &'a PreparedRays<'a>,
    frames: &'a [(DVec3, DMat3)],
    exclude: i32,
    tick: &'a TickContext<'a>,
}

/// Casts continuation rays for the return model and the secondary capture.
struct LiveTracer<'a> {
    prepared: &'a PreparedRays<'a>,
    world: usize,
    exclude: i32,
}

impl Tracer for LiveTracer<'_> {
    fn cast(&mut self, origin: DVec3, dir: DVec3, _: LegKind, _: usize, through: i32) -> Option<Surface> {
        let hit = self.prepared.cast_one(self.world, origin, dir, self.exclude, through)?;
        Some(Surface { distance: hit.dist, geomid: hit.geomid, normal: hit.normal })
    }
}

/// The rays of one group and their first surfaces.
struct Rays<'a> {
    origin: DVec3,
    dirs: &'a [DVec3],
    dist: &'a [f64],
    geomid: &'a [i32],
    normal: &'a [DVec3],
}

impl Rays<'_> {
    /// Ray `r`'s first surface.
    fn surface(&self, r: usize) -> Surface {
        Surface { distance: self.dist[r], geomid: self.geomid[r], normal: self.normal[r] }
    }
}

/// A beam's tracer that answers its first continuation (straight on, folded or refracted)
/// from the packets cast ahead, and everything else with single rays.
struct Prefetched<'a, 'b> {
    live: &'b mut LiveTracer<'a>,
    /// The continuations cast ahead, and the ray's index among them.
    ahead: &'b ExtraScratch,
    r: usize,
    /// The first surface's geom and distance.
    through: i32,
    first: f64,
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

impl GroupContext<'_> {
    /// Casts one group in its world and writes the results into its part of the scan.
    fn cast(&self, job: GroupJob, scratch: &mut GroupScratch) -> Result<(), CoreError> {
        let sensor = self.sensor;
        let GroupScratch { order, dirs, dist, geomid, normal, extra: ext } = scratch;
        let (origin, rot) = self.frames[job.world];
        let order: &[usize] = match sensor.whole_group(job.units) {
            Some(local) => {
                dirs.clear();
                dirs.extend(local.iter().map(|&d| rot * d));
                &sensor.tile_order
            }
            None => {
                sensor.group_rays(job.units, order, dirs);
                for d in dirs.iter_mut() {
                    *d = rot * *d;
                }
                order
            }
        };
        let n = dirs.len();
        dist.resize(n, 0.0);
        geomid.resize(n, 0);
        normal.resize(n, DVec3::ZERO);
        self.prepared.cast_from(job.world, origin, dirs, self.exclude, -1, dist, geomid, normal)?;
        let c = &sensor.binding.scan;
        let mut part = job.part;
        part.time.fill(job.time);
        let extra = part.returns.is_some() || part.pass_through.is_some() || part.reflected.is_some();
        for (r, &j) in order.iter().enumerate() {
            let (d, g) = (dist[r], geomid[r]);
            part.set_clean(j, c.is_hit(d, g).then(|| (d, g, origin + dirs[r] * d, normal[r])));
        }
        if !extra {
            return Ok(());
        }
        let rays = Rays { origin, dirs, dist, geomid, normal };
        self.prefetch(&part, &rays, job.world, ext)?;
        let mut live = LiveTracer { prepared: self.prepared, world: job.world, exclude: self.exclude };
        if let (Some(m), Some(returns)) = (&self.tick.model, part.returns.as_mut()) {
            let key = BeamRng::tick_key(m.seed, job.world as u64, self.tick.sensor as u64, job.tick);
            let first_beam = (job.units.0 % sensor.units()) as usize * (c.beam_count() / sensor.units() as usize);
            if self.tick.one_by_one {
                self.model_one_by_one(m, returns, order, &rays, ext, &mut live, (key, first_beam));
            } else {
                self.model_group(m, returns, order, &rays, ext, &mut live, (key, first_beam));
            }
        }
        if part.pass_through.is_some() || part.reflected.is_some() {
            self.capture(&mut part, order, &rays, ext, &mut live);
        }
        Ok(())
    }

    /// The return model of every beam of a group, in passes over the group: the candidates
    /// of most beams (a first surface, and where the beam crosses one pane, mirror or water
    /// surface, the opaque surface behind it), their strengths on vector lanes, then their
    /// detection, noise and echo choice on vector lanes too, 64 beams at a time. Beams that
    /// meet more (porous surfaces, two panes), and what the lanes leave (grazing draws, the
    /// power law, rare normal draws), go one beam at a time; both ways give the same reports
    /// to the bit (`tests::batched_reports_equal_the_one_beam_model_to_the_bit`).
    #[allow(clippy::too_many_arguments)]
    fn model_group(
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
        let window = (c.min_range, c.max_range);
        let params = m.model.params();
        let n = order.len();
        self.plan(m, rays, ext);
        // The first surfaces, 64 rays at a time: incidence, strength and (for beams with no
        // other candidate) the report, written at once where the lanes made it.
        let (mut surfaces, mut lanes, mut quick) = (SurfaceLanes::default(), Lanes::default(), LaneReports::default());
        ext.cos.clear();
        ext.strength.clear();
        ext.by_one.clear();
        for start in (0..n).step_by(LANES) {
            lanes.n = LANES.min(n - start);
            for (i, r) in (start..start + lanes.n).enumerate() {
                let cos = rays.dirs[r].dot(rays.normal[r]).abs();
                surfaces.set(params, i, m.optics.get(ext.material[r] as usize), cos);
                lanes.beam[i] = (first_beam + order[r]) as u64;
                lanes.set(0, i, (rays.dist[r], f64::NAN, cos, rays.geomid[r]));
            }
            surfaces.strengths(params, lanes.n, &mut lanes.strength[0]);
            ext.cos.extend_from_slice(&lanes.cos[0][..lanes.n]);
            ext.strength.extend_from_slice(&lanes.strength[0][..lanes.n]);
            m.model.report_lanes::<1>(window, key, &lanes, &mut quick);
            for (i, r) in (start..start + lanes.n).enumerate() {
                match (ext.plan[r], quick.get(i)) {
                    (Plan::Nothing, _) => returns.set(order[r], &BeamReturn::NONE),
                    (Plan::First, Some(report)) => returns.set(order[r], &report),
                    (Plan::First | Plan::Traced, _) => ext.by_one.push(r),
                    (Plan::Two(_), _) => {}
                }
            }
        }
        // The beams with two candidates.
        let second = &mut ext.second;
        strengths(params, m.optics, &second.material, &second.cos, Some(&second.loss), &mut second.strength);
        let pairs = ext.second.ray.len();
        for start in (0..pairs).step_by(LANES) {
            lanes.n = LANES.min(pairs - start);
            for (i, k) in (start..start + lanes.n).enumerate() {
                let (r, second) = (ext.second.ray[k], &ext.second);
                lanes.beam[i] = (first_beam + order[r]) as u64;
                lanes.set(0, i, (rays.dist[r], ext.strength[r], ext.cos[r], rays.geomid[r]));
                lanes.set(1, i, (second.range[k], second.strength[k], second.cos[k], second.geomid[k]));
            }
            m.model.report_lanes::<2>(window, key, &lanes, &mut quick);
            for (i, k) in (start..start + lanes.n).enumerate() {
                let r = ext.second.ray[k];
                match quick.get(i) {
                    Some(report) => returns.set(order[r], &report),
                    None => ext.by_one.push(r),
                }
            }
        }
        // What the lanes left, and the beams traced leg by leg.
        for &r in &ext.by_one {
            let rng = key.beam((first_beam + order[r]) as u64);
            let report = self.report_by_one(m, (window, rng), ext.plan[r], r, rays, ext, live);
            returns.set(order[r], &report);
        }
    }

    /// [`GroupContext::model_group`]'s reference: every beam through
    /// [`ReturnModel::beam_return`], with the continuations cast ahead.
    #[allow(clippy::too_many_arguments)]
    fn model_one_by_one(
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
    /// planned [`Plan::Two`] as [`ReturnModel::traced_return`] would: through the same
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

    /// The secondary geometry the recorder captures, for every beam of a group.
    fn capture(&self, part: &mut ScanPart, order: &[usize], rays: &Rays, ext: &ExtraScratch, live: &mut LiveTracer) {
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
            let class = self.material(ext.material[r]).map(|m| m.continuation).or_else(|| self.class_of(g));
            let secondary = if hit && (all || self.flagged(g, class, FLAG_REFLECT)) {
                // The return model's fold off a flat mirror, when prefetched, is this very ray.
                ext.folded.get(r).unwrap_or_else(|| {
                    let (point, folded) = (rays.origin + rays.dirs[r] * d, fold(rays.dirs[r], rays.normal[r]));
                    live.cast(point + folded * NUDGE, folded, LegKind::Folded, 1, -1)
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
    fn prefetch(&self, part: &ScanPart, rays: &Rays, world: usize, ext: &mut ExtraScratch) -> Result<(), CoreError> {
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
        let mut specular = false;
        for r in 0..n {
            let (d, g) = (rays.dist[r], rays.geomid[r]);
            let material = self.material(ext.material[r]);
            let class = material.map(|m| m.continuation).or_else(|| self.class_of(g));
            let hit = c.is_hit(d, g);
            let capture = part.pass_through.is_some() && hit && (all || self.flagged(g, class, FLAG_PASS));
            let model = matches!(class, Some(Continuation::Slab | Continuation::Porous));
            if g >= 0 && (capture || model) {
                ext.through.push(r);
            }
            match material.map(|m| m.continuation) {
                Some(Continuation::Specular) => specular = true,
                // Entering the medium from outside (the model leaves it on a far face).
                Some(Continuation::Medium) if rays.dirs[r].dot(rays.normal[r]) <= 0.0 => ext.bent.push(r),
                _ => {}
            }
        }
        self.prefetch_straight(rays, world, ext)?;
        self.prefetch_refractions(rays, world, ext)?;
        ext.folded.reset(n);
        if specular { self.prefetch_folds(rays, world, ext) } else { Ok(()) }
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

    /// Casts the refractions of the beams the return model bends into a medium first, as
    /// packets of rays from their own origins: each is the ray the model would cast, bent by
    /// Snell's law and starting `NUDGE` under the surface where its beam met it.
    fn prefetch_refractions(&self, rays: &Rays, world: usize, ext: &mut ExtraScratch) -> Result<(), CoreError> {
        ext.refracted.reset(rays.dirs.len());
        ext.rays.clear();
        ext.dirs.clear();
        ext.origins.clear();
        for &r in &ext.bent {
            let Some(bent) = refract(rays.dirs[r], rays.normal[r], 1.0 / MEDIUM_INDEX) else { continue };
            let point = rays.origin + rays.dirs[r] * rays.dist[r];
            if !(point.is_finite() && bent.is_finite()) {
                continue;
            }
            ext.rays.push(r);
            ext.dirs.push(bent);
            ext.origins.push(point + bent * NUDGE);
        }
        self.cast_each(world, ext, |ext| &mut ext.refracted)
    }

    /// Casts the batch in `ext` (rays, their origins and directions) and files the answers
    /// under `ahead`.
    fn cast_each(
        &self,
        world: usize,
        ext: &mut ExtraScratch,
        ahead: impl Fn(&mut ExtraScratch) -> &mut Ahead,
    ) -> Result<(), CoreError> {
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

    /// Casts the folds of the beams the return model folds off a mirror first, as packets of
    /// rays from their own origins: each is the ray the model would cast, `d − 2 (d·n) n`
    /// from `NUDGE` off the mirror where its beam met it. Off a flat mirror they are as
    /// coherent as the beams.
    fn prefetch_folds(&self, rays: &Rays, world: usize, ext: &mut ExtraScratch) -> Result<(), CoreError> {
        let Some(m) = &self.tick.model else { return Ok(()) };
        let params = m.model.params();
        let folds = |mat: &NirMaterial| {
            mat.continuation == Continuation::Specular && slope(params, mat) <= params.fold_max_slope
        };
        ext.rays.clear();
        ext.dirs.clear();
        ext.origins.clear();
        for (r, &index) in ext.material.iter().enumerate() {
            if !m.palette.get(index as usize).is_some_and(folds) {
                continue;
            }
            let (point, folded) = (rays.origin + rays.dirs[r] * rays.dist[r], fold(rays.dirs[r], rays.normal[r]));
            if point.is_finite() && folded.is_finite() {
                ext.rays.push(r);
                ext.dirs.push(folded);
                ext.origins.push(point + folded * NUDGE);
            }
        }
        self.cast_each(world, ext, |ext| &mut ext.folded)
    }

    /// The material of palette index `index` (`None` for `NO_MATERIAL`, or without a model).
    fn material(&self, index: u32) -> Option<&NirMaterial> {
        self.tick.model.as_ref()?.palette.get(index as usize)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Bake, BakeSettings, MaterialPreset, Metal, ScanPreset};
    use glint_mujoco::{Model as Mujoco, WorldBatch};

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
