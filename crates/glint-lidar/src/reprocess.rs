//! The return model over a recording's clean geometry (`glint export`): each recorded beam is
//! rebuilt in the world from its pattern position and the tick's pose, and put through the
//! same model, the same pattern clock and the same noise keys as the live sensor.
//!
//! The first surface is the recorded hit, with the bake's material at its world point. The
//! model's continuations are answered from the recorded secondary geometry only: the first
//! straight leg from the pass-through hit, the first folded leg from the reflected hit, a
//! refracted leg (into water) approximated from the straight hit (the bent beam followed to
//! that hit's plane), and nothing deeper.

use glam::{DMat3, DVec3};

use crate::pattern::{PatternClock, Runner, beam_direction};
use crate::return_model::{Beam, BeamRng, LegKind, NUDGE, ReturnModel, Surface, TickKey, Tracer};
use crate::sensor::continuations::first_leg;
use crate::{BeamReturn, LidarError, MaterialLookup, PhysicalModel, ReturnParams, ScanConfig, ScanPattern};

/// How [`Reprocessor`] answers continuations, in words (for provenance files).
pub const RECORDED_CONTINUATIONS: &str = "from the recorded secondary columns only: the first straight leg (slab, porous gap) from sec_*, the first folded leg (specular) from refl_*, a refracted leg (into water) approximated from the straight sec_* hit (the bent beam followed to the plane of that hit, the straight distance where it never meets it), no deeper legs; where the recording captured no secondary ray, the beam has no continuation";

/// A hit as a recording stores it: range along its ray (`-1`: none), geom (`-1`: none) and the
/// surface normal in the sensor frame.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RecordedHit {
    /// Metres along the ray: from the sensor for a first or pass-through hit, from the first
    /// hit for a reflected one.
    pub range: f32,
    /// The geom, or `-1`.
    pub geom_id: i32,
    /// Unit normal, sensor frame.
    pub normal: [f32; 3],
}

impl RecordedHit {
    /// Whether it is a hit at all.
    fn is_hit(&self) -> bool {
        self.geom_id >= 0 && self.range >= 0.0
    }
}

/// What the model makes of one recorded beam.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Reprocessed {
    /// The model's report.
    pub report: BeamReturn,
    /// Whether the beam had a clean hit whose material the bake does not know (no echo).
    pub hole: bool,
    /// Whether the beam's first surface sends it on (glass, a gap, water, a mirror) while the
    /// recording holds no secondary column of that kind: the model saw nothing behind it.
    pub uncaptured: bool,
}

/// Re-runs the return model over one recorded sensor's episode, tick by tick.
pub struct Reprocessor<'a> {
    params: ReturnParams,
    model: ReturnModel,
    materials: &'a dyn MaterialLookup,
    config: ScanConfig,
    /// A spinning pattern's sensor-frame directions, fixed.
    spinning: Vec<DVec3>,
    clock: PatternClock,
    /// Simulated seconds per lidar tick.
    tick_dt: f64,
    seed: u64,
    sensor: u64,
    key: TickKey,
    origin: DVec3,
    rot: DMat3,
}

impl<'a> Reprocessor<'a> {
    /// A reprocessor of sensor `sensor` (the index that keys the live sensor's randomness),
    /// scanning with `config` on ticks of `runner`, under `params` and the episode's `seed`
    /// ([`crate::episode_seed`]), finding materials in `materials`. No tick has started.
    pub fn new(
        (params, seed): (ReturnParams, u64),
        materials: &'a dyn MaterialLookup,
        (config, runner): (ScanConfig, Runner),
        sensor: u64,
    ) -> Reprocessor<'a> {
        let spinning = match config.pattern {
            ScanPattern::Spinning => (0..config.beam_count()).map(|k| beam_direction(&config, 0, k)).collect(),
            _ => Vec::new(),
        };
        Reprocessor {
            params,
            model: ReturnModel::new(params),
            materials,
            config,
            spinning,
            clock: PatternClock::default(),
            tick_dt: runner.dt,
            seed,
            sensor,
            key: BeamRng::tick_key(seed, sensor, 0),
            origin: DVec3::ZERO,
            rot: DMat3::IDENTITY,
        }
    }

    /// The same reprocessor under the physical model's terms (`None`: the seed's model).
    pub fn with_physics(mut self, physics: Option<PhysicalModel>) -> Reprocessor<'a> {
        self.model = ReturnModel::with_physics(self.params, physics);
        self
    }

    /// Starts the episode's next lidar tick, with the sensor at `origin` turned by `rotation`.
    pub fn next_tick(&mut self, origin: DVec3, rotation: DMat3) {
        self.clock.advance(self.config.rotation_hz, self.config.azimuth_bins as u64, self.tick_dt);
        self.key = BeamRng::tick_key(self.seed, self.sensor, self.clock.ticks);
        (self.origin, self.rot) = (origin, rotation);
    }

    /// The model's report of beam `k` of the current tick (`bin * channels + channel` of a
    /// spinning pattern, the emission index of a non-repetitive one) whose first surface was
    /// `first`, with the recorded `pass_through` and `reflected` hits where the recording
    /// captured them. An error when the tick did not cast beam `k`.
    pub fn beam(
        &mut self,
        k: u64,
        first: RecordedHit,
        pass_through: Option<RecordedHit>,
        reflected: Option<RecordedHit>,
    ) -> Result<Reprocessed, LidarError> {
        let unit = self.unit(k)?;
        if !first.is_hit() {
            return Ok(Reprocessed { report: BeamReturn::NONE, hole: false, uncaptured: false });
        }
        let local = self.direction(k, unit);
        let (origin, rot) = (self.origin, self.rot);
        let dir = (rot * local).normalize();
        let range = first.range as f64;
        let surface = Surface { distance: range, geomid: first.geom_id, normal: world_normal(&rot, first.normal) };
        let material = self.materials.material_at(first.geom_id as usize, origin + dir * range);
        let uncaptured = material.and_then(|m| first_leg(&self.params, &m)).is_some_and(|leg| match leg {
            LegKind::Folded => reflected.is_none(),
            LegKind::Straight | LegKind::Refracted => pass_through.is_none(),
        });
        let straight = pass_through.and_then(|h| leg(h, range + NUDGE, &rot));
        let mut tracer = Recorded {
            // The straight hit's world point: the recorded range runs from the sensor.
            straight: straight.map(|s| (s, origin + dir * (s.distance + range + NUDGE))),
            folded: reflected.and_then(|h| leg(h, NUDGE, &rot)),
        };
        let beam = Beam { origin, dir, window: (self.config.min_range, self.config.max_range) };
        let mut rng = self.key.beam(k);
        let report =
            self.model.beam_return(&beam, material.map(|m| (surface, m)), &mut tracer, self.materials, &mut rng);
        Ok(Reprocessed { report, hole: material.is_none(), uncaptured })
    }

    /// The pattern unit (since the episode start) the current tick cast beam `k` in: an error
    /// when the sensor has no beam `k`, or the tick did not cast it. A spinning pattern's beams
    /// are the same every cycle, and their unit is not needed.
    fn unit(&self, k: u64) -> Result<u64, LidarError> {
        let c = &self.config;
        let beams = c.beam_count() as u64;
        if k >= beams {
            return Err(LidarError::Conflict(format!("beam {k} does not exist: the sensor has {beams} beams")));
        }
        if let ScanPattern::Spinning = c.pattern {
            return Ok(k);
        }
        let units = c.azimuth_bins as u64;
        self.clock.unit_at(k, units).ok_or_else(|| {
            let (from, to) = self.clock.last;
            LidarError::Conflict(format!(
                "emission {k} was not cast on tick {} (it cast units {from} to {to} of a {units}-point cycle)",
                self.clock.ticks
            ))
        })
    }

    /// Beam `k`'s direction in the sensor frame, cast in pattern unit `unit`.
    fn direction(&self, k: u64, unit: u64) -> DVec3 {
        match self.config.pattern {
            ScanPattern::Spinning => self.spinning[k as usize],
            _ => beam_direction(&self.config, unit / self.config.azimuth_bins as u64, k as usize),
        }
    }
}

/// Answers a beam's continuations from its recorded secondary geometry.
#[derive(Clone, Copy, Debug, Default)]
struct Recorded {
    /// The pass-through hit, its distance measured from just past the first surface, and
    /// where it is in the world.
    straight: Option<(Surface, DVec3)>,
    /// The reflected hit, likewise measured.
    folded: Option<Surface>,
}

impl Tracer for Recorded {
    fn cast(&mut self, origin: DVec3, dir: DVec3, kind: LegKind, depth: usize, _: i32) -> Option<Surface> {
        if depth != 1 {
            return None;
        }
        match kind {
            LegKind::Straight => self.straight.map(|(s, _)| s),
            LegKind::Refracted => self.straight.map(|(s, point)| refracted_leg(s, point, origin, dir)),
            LegKind::Folded => self.folded,
        }
    }
}

/// A refracted leg from `origin` along `dir`, approximated from the straight pass-through hit
/// `s` at world `point`: the bent beam is followed to that hit's plane (exact for a flat
/// bottom the bent beam also meets), or, where it runs parallel to or away from the plane, the
/// straight hit's distance is kept.
fn refracted_leg(s: Surface, point: DVec3, origin: DVec3, dir: DVec3) -> Surface {
    let facing = dir.dot(s.normal);
    let along = (point - origin).dot(s.normal);
    let t = if facing < -1e-6 { along / facing } else { f64::NAN };
    Surface { distance: if t.is_finite() && t >= 0.0 { t } else { s.distance }, ..s }
}

/// A recorded secondary hit as a continuation leg: `offset` metres of its recorded range lie
/// before the leg's start.
fn leg(hit: RecordedHit, offset: f64, rot: &DMat3) -> Option<Surface> {
    hit.is_hit().then(|| Surface {
        distance: (hit.range as f64 - offset).max(0.0),
        geomid: hit.geom_id,
        normal: world_normal(rot, hit.normal),
    })
}

fn world_normal(rot: &DMat3, n: [f32; 3]) -> DVec3 {
    let v = *rot * DVec3::new(n[0] as f64, n[1] as f64, n[2] as f64);
    v.try_normalize().unwrap_or(v)
}
