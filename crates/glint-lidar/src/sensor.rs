//! Bound sensors, their tick timing, and their live scans in every world of a batch.

use glam::{DMat3, DVec3};
use glint_core::{Poses, RayBatch, RayCaster, RayFilter, Scene, nearest_name};
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
    /// A whole spinning revolution in cast order: beam indices and their directions.
    revolution: (Vec<usize>, Vec<DVec3>),
    clocks: Vec<Clock>,
    scans: Vec<Scan>,
    /// Buffers reused from tick to tick.
    scratch: Scratch,
}

/// Per-tick working arrays, kept to avoid allocating on every tick.
#[derive(Clone, Debug, Default)]
struct Scratch {
    beams: Vec<usize>,
    local: Vec<DVec3>,
    pnt: Vec<DVec3>,
    vec: Vec<DVec3>,
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
            revolution: (Vec::new(), Vec::new()),
            clocks: Vec::new(),
            scans: Vec::new(),
            scratch: Scratch::default(),
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
        self.revolution = (Vec::new(), Vec::new());
        if matches!(c.pattern, ScanPattern::Spinning) {
            let mut rev = (Vec::new(), Vec::new());
            self.slice(0, self.units(), &mut rev.0, &mut rev.1);
            self.revolution = rev;
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

    /// Beam indices and directions (sensor frame) of units `[from, to)`, in cast order.
    fn slice(&self, from: u64, to: u64, beams: &mut Vec<usize>, dirs: &mut Vec<DVec3>) {
        beams.clear();
        dirs.clear();
        let c = &self.binding.scan;
        let units = self.units();
        match c.pattern {
            ScanPattern::Spinning => {
                // 4 × 4 tiles of bins × channels: tighter packets than one bin's column.
                let channels = c.channels as usize;
                let mut u0 = from;
                while u0 < to {
                    let u1 = (u0 + 4).min(to);
                    for c0 in (0..channels).step_by(4) {
                        for u in u0..u1 {
                            let bin = (u % units) as usize;
                            for ch in c0..(c0 + 4).min(channels) {
                                let k = bin * channels + ch;
                                beams.push(k);
                                dirs.push(self.spinning[k]);
                            }
                        }
                    }
                    u0 = u1;
                }
            }
            _ => {
                for u in from..to {
                    let k = (u % units) as usize;
                    beams.push(k);
                    dirs.push(beam_direction(c, u / units, k));
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

/// One sensor's tick in every world.
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
    let mut scratch = std::mem::take(&mut sensor.scratch);
    // Worlds whose slices match are cast together: the usual case is all of them.
    let mut w0 = 0;
    while w0 < nworld {
        let mut w1 = w0 + 1;
        while w1 < nworld && slices[w1] == slices[w0] {
            w1 += 1;
        }
        let (from, to) = slices[w0];
        let whole = to - from == sensor.units() && from % sensor.units() == 0 && !sensor.revolution.0.is_empty();
        // A whole revolution from bin 0 uses the cached cast order (taken out and put back,
        // so the scans can be written meanwhile).
        let (beams, local) = if whole {
            std::mem::take(&mut sensor.revolution)
        } else {
            let (mut beams, mut local) = (std::mem::take(&mut scratch.beams), std::mem::take(&mut scratch.local));
            sensor.slice(from, to, &mut beams, &mut local);
            (beams, local)
        };
        let result = if beams.is_empty() {
            Ok(())
        } else {
            cast(sensor, scene, poses, caster, w0..w1, (&beams, &local), &mut scratch, &filter, exclude, times)
        };
        if whole {
            sensor.revolution = (beams, local);
        } else {
            (scratch.beams, scratch.local) = (beams, local);
        }
        result?;
        w0 = w1;
    }
    sensor.scratch = scratch;
    Ok(())
}

/// Casts one slice (`beams` with sensor-frame directions `local`) in worlds `worlds` and
/// writes the results into their scans.
#[allow(clippy::too_many_arguments)]
fn cast(
    sensor: &mut Sensor,
    scene: &Scene,
    poses: &Poses,
    caster: &RayCaster,
    worlds: std::ops::Range<usize>,
    (beams, local): (&[usize], &[DVec3]),
    scratch: &mut Scratch,
    filter: &RayFilter,
    exclude: i32,
    times: &[f64],
) -> Result<(), LidarError> {
    let Scratch { pnt, vec, dist, geomid, normal, .. } = scratch;
    let (nray, nw) = (beams.len(), worlds.len());
    let frames: Vec<(DVec3, DMat3)> = worlds.clone().map(|w| sensor.frame(poses, w)).collect();
    // One origin serves a single world; several worlds need one per ray. Worlds are
    // prepared and written back in parallel, like the cast itself.
    pnt.clear();
    if nw == 1 {
        pnt.push(frames[0].0);
    } else {
        pnt.resize(nw * nray, DVec3::ZERO);
        pnt.par_chunks_mut(nray).zip(&frames).for_each(|(row, (o, _))| row.fill(*o));
    }
    vec.resize(nw * nray, DVec3::ZERO);
    vec.par_chunks_mut(nray).zip(&frames).for_each(|(row, (_, rot))| {
        for (v, &d) in row.iter_mut().zip(local) {
            *v = *rot * d;
        }
    });
    let n = nw * nray;
    dist.resize(n, 0.0);
    geomid.resize(n, 0);
    normal.resize(n, DVec3::ZERO);
    let batch = RayBatch { nray, pnt, vec, bodyexclude: &[exclude] };
    caster.rays_worlds_into(scene, poses, worlds.clone(), &batch, filter, dist, geomid, normal)?;
    let c = sensor.binding.scan;
    let total = c.beam_count();
    let runs = beam_runs(beams, total);
    let runs = &runs;
    let (dist, geomid, normal, vec) = (&*dist, &*geomid, &*normal, &*vec);
    sensor.scans[worlds.clone()].par_iter_mut().zip(&frames).zip(&times[worlds]).enumerate().for_each(
        |(j, ((scan, (o, _)), &t))| {
            let base = j * nray;
            // A slice is a contiguous run of beam indices (wrapping at the end of the pattern).
            for range in runs {
                scan.time[range.clone()].fill(t);
            }
            for (r, &k) in beams.iter().enumerate() {
                let i = base + r;
                let (d, g) = (dist[i], geomid[i]);
                if g >= 0 && c.min_range <= d && d < c.max_range {
                    let (p, n) = (*o + vec[i] * d, normal[i]);
                    scan.range[k] = d as f32;
                    scan.geomid[k] = g;
                    scan.point[k] = [p.x as f32, p.y as f32, p.z as f32];
                    scan.normal[k] = [n.x as f32, n.y as f32, n.z as f32];
                } else {
                    scan.range[k] = -1.0;
                    scan.geomid[k] = -1;
                    scan.point[k] = [0.0; 3];
                    scan.normal[k] = [0.0; 3];
                }
            }
        },
    );
    Ok(())
}

/// The beam indices of a slice as at most two contiguous runs (a slice wraps at most once):
/// from its smallest to largest index, unless that would cover beams it does not hold.
fn beam_runs(beams: &[usize], total: usize) -> Vec<std::ops::Range<usize>> {
    let (lo, hi) = beams.iter().fold((usize::MAX, 0), |(lo, hi), &k| (lo.min(k), hi.max(k)));
    if beams.is_empty() {
        return Vec::new();
    }
    if hi - lo + 1 == beams.len() {
        return std::iter::once(lo..hi + 1).collect();
    }
    // Wrapped: the gap is the beams not cast; mark which are present.
    let mut present = vec![false; total];
    for &k in beams {
        present[k] = true;
    }
    let mut runs = Vec::new();
    let mut k = 0;
    while k < total {
        if present[k] {
            let start = k;
            while k < total && present[k] {
                k += 1;
            }
            runs.push(start..k);
        } else {
            k += 1;
        }
    }
    runs
}
