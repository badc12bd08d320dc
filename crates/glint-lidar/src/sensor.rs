//! Bound sensors, their tick timing, and their live scans in every world of a batch.

use glam::{DMat3, DVec3};
use glint_core::{CoreError, Poses, PreparedRays, RayCaster, RayFilter, Scene, nearest_name};
use rayon::prelude::*;

use crate::pattern::{angles, beam_direction};
use crate::{LidarBinding, LidarError, ScanConfig, ScanPattern, SecondaryCapture, SecondaryScope, SelfIgnore};

/// The live scan of one sensor in one world, one entry per beam (index
/// `bin * channels + channel`). Beams not yet cast hold a miss.
#[derive(Clone, Debug, Default)]
pub struct Scan {
    /// Metres along the beam, or `-1` for no return.
    pub range: Vec<f32>,
    /// Geom hit, or `-1`.
    pub geomid: Vec<i32>,
    /// Hit point in the world frame (zero for a miss).
    pub point: Vec<[f32; 3]>,
    /// Unit surface normal at the hit, world frame (zero for a miss).
    pub normal: Vec<[f32; 3]>,
    /// Simulation time of the tick that cast the beam (seconds), or `-1` before its first.
    pub time: Vec<f64>,
}

impl Scan {
    fn new(beams: usize) -> Scan {
        Scan {
            range: vec![-1.0; beams],
            geomid: vec![-1; beams],
            point: vec![[0.0; 3]; beams],
            normal: vec![[0.0; 3]; beams],
            time: vec![-1.0; beams],
        }
    }

    /// Number of beams.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Whether the scan has no beams.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }

    /// Number of beams with a return.
    pub fn hits(&self) -> usize {
        self.range.iter().filter(|&&r| r >= 0.0).count()
    }

    fn part(&mut self) -> ScanPart<'_> {
        ScanPart {
            range: &mut self.range,
            geomid: &mut self.geomid,
            point: &mut self.point,
            normal: &mut self.normal,
            time: &mut self.time,
        }
    }
}

/// A contiguous run of one scan's beams, written by one group of a tick.
struct ScanPart<'a> {
    range: &'a mut [f32],
    geomid: &'a mut [i32],
    point: &'a mut [[f32; 3]],
    normal: &'a mut [[f32; 3]],
    time: &'a mut [f64],
}

impl<'a> ScanPart<'a> {
    fn split_at(self, mid: usize) -> (ScanPart<'a>, ScanPart<'a>) {
        let (r0, r1) = self.range.split_at_mut(mid);
        let (g0, g1) = self.geomid.split_at_mut(mid);
        let (p0, p1) = self.point.split_at_mut(mid);
        let (n0, n1) = self.normal.split_at_mut(mid);
        let (t0, t1) = self.time.split_at_mut(mid);
        (
            ScanPart { range: r0, geomid: g0, point: p0, normal: n0, time: t0 },
            ScanPart { range: r1, geomid: g1, point: p1, normal: n1, time: t1 },
        )
    }
}

/// Where a sensor is in its pattern in one world.
#[derive(Clone, Copy, Debug, Default)]
struct Clock {
    /// Pattern revolutions since the episode started.
    revolutions: f64,
    /// Pattern units (bins, or points) cast since the episode started.
    emitted: u64,
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
/// go to the ray core together. Four bins make whole 4 × 4 tiles of a spinning pattern.
const GROUP_BINS: u64 = 4;
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
}

/// Every bound lidar of a scene, over `nworld` worlds. Sensors are addressed by 0-based index
/// in binding order.
#[derive(Clone, Debug)]
pub struct Lidars {
    sensors: Vec<Sensor>,
    nworld: usize,
    live: bool,
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
        self.scans = vec![Scan::new(c.beam_count()); nworld];
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
        if hz <= 0.0 {
            // A frozen pattern: the whole of cycle 0, every tick.
            return (0, units);
        }
        let clock = &mut self.clocks[w];
        clock.revolutions += (hz * dt).min(1.0);
        // A whisker of slack absorbs rounding in the sum of revolutions.
        let target = ((clock.revolutions * units as f64) + 1e-9).floor() as u64;
        let from = clock.emitted.max(target.saturating_sub(units));
        clock.emitted = target;
        (from, target)
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
    /// Binds `bindings` (in order) to `scene` for `nworld` worlds. Returns the sensors and
    /// any warnings (each sensor's group mask high bits, once).
    pub fn new(scene: &Scene, bindings: Vec<LidarBinding>, nworld: usize) -> Result<(Lidars, Vec<String>), LidarError> {
        let mut lidars = Lidars { sensors: Vec::new(), nworld: nworld.max(1), live: false };
        let mut warnings = Vec::new();
        for b in bindings {
            warnings.extend(lidars.add(scene, b)?);
        }
        Ok((lidars, warnings))
    }

    /// Adds one sensor; returns its warnings. Nothing changes on an error.
    pub fn add(&mut self, scene: &Scene, binding: LidarBinding) -> Result<Vec<String>, LidarError> {
        let index = self.sensors.len();
        let (sensor, warnings) = Sensor::new(scene, binding, self.nworld)?;
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
        let nworld = self.nworld;
        let sensor = self.sensor_mut(index)?;
        sensor.binding.scan = config;
        sensor.configure(nworld);
        Ok(warnings.into_iter().map(|w| format!("lidar sensor {index}: {w}")).collect())
    }

    /// Chooses the secondary geometry the recorder captures for sensor `index`.
    pub fn set_secondary_capture(
        &mut self,
        index: usize,
        capture: SecondaryCapture,
        scope: SecondaryScope,
    ) -> Result<(), LidarError> {
        let sensor = self.sensor_mut(index)?;
        sensor.binding.secondary_capture = capture;
        sensor.binding.secondary_scope = scope;
        Ok(())
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
        for sensor in &mut self.sensors {
            tick_sensor(sensor, scene, poses, caster, dt, times)?;
        }
        Ok(())
    }
}

/// One group of a tick: its units, its part of a world's scan, that world and its time.
struct GroupJob<'a> {
    units: (u64, u64),
    part: ScanPart<'a>,
    world: usize,
    time: f64,
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
        split_into_jobs(sensor, scan, sensor.groups(from, to), w, times[w], &mut jobs);
    }
    let sensor_ref = &*sensor;
    let result = jobs.into_par_iter().try_for_each_init(GroupScratch::default, |scratch, job| {
        cast_group(sensor_ref, &prepared, &frames, exclude, job, scratch)
    });
    sensor.scans = scans;
    result.map_err(LidarError::from)
}

/// Cuts `scan` into the disjoint parts that `groups` write and queues one job per group.
fn split_into_jobs<'a>(
    sensor: &Sensor,
    scan: &'a mut Scan,
    mut groups: Vec<(u64, u64)>,
    world: usize,
    time: f64,
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
        jobs.push(GroupJob { units: (u0, u1), part, world, time });
        rest = tail;
        cursor = first + len;
    }
}

/// Casts one group in its world and writes the results into its part of the scan.
fn cast_group(
    sensor: &Sensor,
    prepared: &PreparedRays,
    frames: &[(DVec3, DMat3)],
    exclude: i32,
    job: GroupJob,
    scratch: &mut GroupScratch,
) -> Result<(), CoreError> {
    let GroupScratch { order, dirs, dist, geomid, normal } = scratch;
    let (origin, rot) = frames[job.world];
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
    prepared.cast_from(job.world, origin, dirs, exclude, dist, geomid, normal)?;
    let c = &sensor.binding.scan;
    let part = job.part;
    part.time.fill(job.time);
    for (r, &j) in order.iter().enumerate() {
        let (d, g) = (dist[r], geomid[r]);
        if g >= 0 && c.min_range <= d && d < c.max_range {
            let (p, nrm) = (origin + dirs[r] * d, normal[r]);
            part.range[j] = d as f32;
            part.geomid[j] = g;
            part.point[j] = [p.x as f32, p.y as f32, p.z as f32];
            part.normal[j] = [nrm.x as f32, nrm.y as f32, nrm.z as f32];
        } else {
            part.range[j] = -1.0;
            part.geomid[j] = -1;
            part.point[j] = [0.0; 3];
            part.normal[j] = [0.0; 3];
        }
    }
    Ok(())
}
