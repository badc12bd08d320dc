//! Beam directions in the sensor frame (+X forward, +Z up, +Z the rotation axis): the
//! spinning grid and the non-repetitive generators. Beam `k` of cycle `c` of a
//! non-repetitive pattern is emitted at pattern time `(c * N + k) / (N * rate)`; its
//! direction depends on that time, so consecutive cycles differ and coverage fills in.

use std::f64::consts::TAU;

use glam::DVec3;

use crate::{LidarError, NonRepetitive, ScanConfig, ScanPattern};

/// Unit direction at azimuth `az` (from +X, counter-clockwise about +Z) and elevation `el`.
pub(crate) fn direction(az: f64, el: f64) -> DVec3 {
    DVec3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin())
}

/// Triangle wave in `[0, 1]` with period 1 (uniform dwell over its range, unlike a sine).
fn tri(x: f64) -> f64 {
    1.0 - (2.0 * x.rem_euclid(1.0) - 1.0).abs()
}

/// Pattern rate used to time emissions: `rotation_hz`, or a nominal 10 Hz when the pattern is
/// frozen (`rotation_hz = 0`), which only sets the spacing of a frozen pattern's points.
fn pattern_rate(c: &ScanConfig) -> f64 {
    if c.rotation_hz > 0.0 { c.rotation_hz } else { 10.0 }
}

/// Direction of beam `k` (index `bin * channels + channel`) of cycle `cycle`.
pub fn beam_direction(c: &ScanConfig, cycle: u64, k: usize) -> DVec3 {
    let (vmin, vmax) = (c.vfov_min_deg.to_radians(), c.vfov_max_deg.to_radians());
    let elevation = |u: f64| vmin + (vmax - vmin) * u;
    match c.pattern {
        ScanPattern::Spinning => {
            let channels = c.channels as usize;
            let (bin, channel) = (k / channels, k % channels);
            let az = TAU * bin as f64 / c.azimuth_bins as f64;
            let u = if channels == 1 { 0.0 } else { channel as f64 / (channels - 1) as f64 };
            direction(az, elevation(u))
        }
        ScanPattern::NonRepetitive(generator) => {
            let n = c.azimuth_bins as u64;
            let g = cycle * n + k as u64;
            let rate = pattern_rate(c);
            match generator {
                NonRepetitive::Mid360 => {
                    // Four beams fire together (one sample), 90° apart in azimuth.
                    let (sample, beam) = (g / 4, (g % 4) as f64);
                    let t = sample as f64 * 4.0 / (n as f64 * rate);
                    let az = TAU * (MID360_SPIN_HZ * t + beam / 4.0);
                    let u = tri(MID360_PRECESSION_HZ * t + beam * 0.25 + beam * MID360_BEAM_SKEW);
                    direction(az, elevation(u))
                }
                NonRepetitive::UnitreeL1 => {
                    let t = g as f64 / (n as f64 * rate);
                    direction(TAU * L1_SLOW_HZ * t, elevation(tri(L1_FAST_HZ * t)))
                }
                NonRepetitive::Risley { spin_hz, prism_hz } => {
                    let t = g as f64 / (n as f64 * rate);
                    let u = 0.5 + 0.25 * ((TAU * prism_hz[0] * t).sin() + (TAU * prism_hz[1] * t).sin());
                    direction(TAU * spin_hz * t, elevation(u))
                }
            }
        }
    }
}

/// Mid-360 azimuth sweep (revolutions per second): "about 160", and deliberately not a
/// multiple of the 10 Hz cycle so cycles never line up.
const MID360_SPIN_HZ: f64 = 160.3;
/// Mid-360 elevation precession (cycles per second), incommensurate with the spin.
const MID360_PRECESSION_HZ: f64 = 5.2326;
/// Small per-beam phase offset so the four beams never share a ring.
const MID360_BEAM_SKEW: f64 = 0.0618;
/// Unitree L1 slow motor (azimuth, revolutions per second).
const L1_SLOW_HZ: f64 = 11.3;
/// Unitree L1 fast motor (elevation sweeps per second).
const L1_FAST_HZ: f64 = 187.1;

/// Azimuth `atan2(y, x)` in `[-π, π]` and elevation `asin(z)` of a unit direction.
pub fn angles(d: DVec3) -> (f64, f64) {
    (d.y.atan2(d.x), d.z.clamp(-1.0, 1.0).asin())
}

/// The lidar runner's rate when nobody asks for one: 100 ticks per second (the seed's 10 ms).
pub const DEFAULT_RUNNER_HZ: f64 = 100.0;

/// The lidar runner: each lidar tick groups a whole number of physics steps (the seed's
/// default groups 10 ms of them), and lasts exactly that long.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Runner {
    /// Physics steps per lidar tick.
    pub steps: usize,
    /// Simulated seconds per lidar tick: `steps` physics timesteps.
    pub dt: f64,
}

/// The rate a sensor of `rotation_hz` revolutions per second really scans at on a runner of
/// `tick_hz` ticks per second: the seed's rule, at most one revolution per tick.
pub fn effective_rotation_hz(rotation_hz: f64, tick_hz: f64) -> f64 {
    rotation_hz.min(tick_hz)
}

impl Runner {
    /// The runner of `hz` ticks per second over physics steps of `timestep` seconds: the
    /// nearest whole number of steps, at least one.
    pub fn nearest(timestep: f64, hz: f64) -> Runner {
        let steps = ((1.0 / (hz * timestep)).round() as usize).max(1);
        Runner { steps, dt: steps as f64 * timestep }
    }

    /// [`Runner::nearest`], refused unless `hz` ticks per second is a whole number of steps
    /// of `timestep` (a rate that cannot be realised is never changed); the error names the
    /// rates that can be.
    pub fn exact(timestep: f64, hz: f64) -> Result<Runner, LidarError> {
        if !(timestep.is_finite() && timestep > 0.0 && hz.is_finite() && hz > 0.0) {
            return Err(LidarError::RunnerRate(format!(
                "a lidar runner of {hz} ticks per second over physics steps of {timestep} s cannot run: both must be positive"
            )));
        }
        let runner = Runner::nearest(timestep, hz);
        let steps = 1.0 / (hz * timestep);
        if (steps - runner.steps as f64).abs() > 1e-6 * steps.max(1.0) {
            let rate = |n: f64| {
                let text = format!("{:.4}", 1.0 / (n * timestep));
                let steps = if n == 1.0 { "1 step".to_string() } else { format!("{n} steps") };
                format!("{} ({steps})", text.trim_end_matches('0').trim_end_matches('.'))
            };
            let fewer = steps.floor().max(1.0);
            return Err(LidarError::RunnerRate(format!(
                "lidar_runner_hz = {hz} is {steps:.3} physics steps of {timestep} s per tick, not a whole number; \
                 use a rate of whole steps, such as {} or {}",
                rate(fewer),
                rate(fewer + 1.0)
            )));
        }
        Ok(runner)
    }

    /// The runner of a rate `asked` explicitly ([`Runner::exact`]: exact or refused), or, with
    /// none asked, of [`DEFAULT_RUNNER_HZ`] where `timestep` realises it and of the nearest
    /// rate it realises otherwise ([`Runner::nearest`]: whole steps, at least one). Returns
    /// the runner and its rate in ticks per second: the rate asked, or the default, whenever
    /// that is the one realised (so that it reads back as written), else `1 / dt`.
    pub fn resolve(timestep: f64, asked: Option<f64>) -> Result<(Runner, f64), LidarError> {
        if let Some(hz) = asked {
            return Ok((Runner::exact(timestep, hz)?, hz));
        }
        match Runner::exact(timestep, DEFAULT_RUNNER_HZ) {
            Ok(runner) => Ok((runner, DEFAULT_RUNNER_HZ)),
            Err(_) if timestep.is_finite() && timestep > 0.0 => {
                let runner = Runner::nearest(timestep, DEFAULT_RUNNER_HZ);
                Ok((runner, 1.0 / runner.dt))
            }
            Err(e) => Err(e),
        }
    }
}

/// Where a sensor is in its pattern since its episode started. This is the one rule for
/// which pattern units (bins, or points) each tick casts: the live sensor advances it every
/// tick, and re-processing a recording advances it again, tick by tick, by the same tick
/// length ([`Runner`]), so that both sum the same floating-point numbers.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct PatternClock {
    /// Pattern revolutions since the episode started.
    revolutions: f64,
    /// Pattern units cast since the episode started.
    pub(crate) emitted: u64,
    /// Ticks since the episode started (keys the return model's randomness).
    pub(crate) ticks: u64,
    /// Units `[from, to)` the last tick cast, counted since the episode started.
    pub(crate) last: (u64, u64),
}

impl PatternClock {
    /// Advances by a tick of `dt` seconds of a pattern of `units` units turning at
    /// `rotation_hz`, and returns the units to cast: at most one revolution, the whole of
    /// cycle 0 every tick for a frozen pattern (`rotation_hz = 0`).
    pub(crate) fn advance(&mut self, rotation_hz: f64, units: u64, dt: f64) -> (u64, u64) {
        self.ticks += 1;
        self.last = if rotation_hz <= 0.0 {
            (0, units)
        } else {
            self.revolutions += (rotation_hz * dt).min(1.0);
            // A whisker of slack absorbs rounding in the sum of revolutions.
            let target = ((self.revolutions * units as f64) + 1e-6).floor() as u64;
            let from = self.emitted.max(target.saturating_sub(units));
            self.emitted = target;
            (from, target)
        };
        self.last
    }

    /// The unit (since the episode start) the last tick cast at position `e` of the
    /// pattern's cycle, if it cast one there.
    pub(crate) fn unit_at(&self, e: u64, units: u64) -> Option<u64> {
        let (from, to) = self.last;
        if units == 0 || from >= to {
            return None;
        }
        let u = from + (e % units + units - from % units) % units;
        (u < to && e < units).then_some(u)
    }
}

#[cfg(test)]
mod clock_tests {
    use super::{PatternClock, Runner};

    #[test]
    fn runners_are_whole_steps_or_refused() {
        assert_eq!(Runner::exact(0.002, 100.0).unwrap(), Runner { steps: 5, dt: 5.0 * 0.002 });
        assert_eq!(Runner::exact(0.002, 50.0).unwrap().steps, 10);
        assert_eq!(Runner::exact(0.002, 500.0).unwrap().steps, 1);
        let err = Runner::exact(0.002, 60.0).unwrap_err().to_string();
        assert!(err.contains("lidar_runner_hz = 60") && err.contains("8.333") && err.contains("62.5"), "{err}");
        assert!(Runner::exact(0.002, 1000.0).is_err(), "half a step per tick");
        assert!(Runner::exact(0.0, 100.0).is_err() && Runner::exact(0.002, f64::NAN).is_err());
        assert_eq!(Runner::nearest(0.002, 60.0).steps, 8);
    }

    #[test]
    fn a_default_rate_the_timestep_cannot_realise_is_the_nearest_it_can() {
        // The default as written wherever it is realised.
        assert_eq!(Runner::resolve(0.002, None).unwrap(), (Runner { steps: 5, dt: 5.0 * 0.002 }, 100.0));
        // dm_control's pendulum: 0.02 s steps cannot tick 100 times a second; one step a tick can.
        let (runner, hz) = Runner::resolve(0.02, None).unwrap();
        assert_eq!((runner.steps, runner.dt, hz), (1, 0.02, 50.0));
        // 0.003 s: 3.33 steps, so 3 (111.1 Hz).
        let (runner, hz) = Runner::resolve(0.003, None).unwrap();
        assert_eq!(runner.steps, 3);
        assert!((hz - 1.0 / 0.009).abs() < 1e-9, "{hz}");
        // An explicit rate is exact or refused, as before.
        assert_eq!(Runner::resolve(0.002, Some(50.0)).unwrap(), (Runner { steps: 10, dt: 10.0 * 0.002 }, 50.0));
        let err = Runner::resolve(0.02, Some(100.0)).unwrap_err().to_string();
        assert!(err.contains("lidar_runner_hz = 100 is 0.500 physics steps of 0.02 s"), "{err}");
        assert!(Runner::resolve(0.0, None).is_err() && Runner::resolve(f64::NAN, None).is_err());
    }

    #[test]
    fn each_tick_casts_the_units_after_the_last_and_at_most_a_revolution() {
        let mut clock = PatternClock::default();
        // A 10 Hz pattern of 1000 units on a 30 ms tick: 300 units a tick, across cycles.
        assert_eq!(clock.advance(10.0, 1000, 0.03), (0, 300));
        assert_eq!(clock.advance(10.0, 1000, 0.03), (300, 600));
        for _ in 0..2 {
            clock.advance(10.0, 1000, 0.03);
        }
        assert_eq!(clock.last, (900, 1200));
        assert_eq!(
            (clock.unit_at(950, 1000), clock.unit_at(100, 1000), clock.unit_at(500, 1000)),
            (Some(950), Some(1100), None)
        );
        // A tick longer than a revolution casts one revolution; a frozen pattern all of cycle 0.
        assert_eq!(clock.advance(10.0, 1000, 0.5), (1200, 2200));
        assert_eq!(clock.advance(0.0, 1000, 0.01), (0, 1000));
        assert_eq!(clock.ticks, 6);
        assert_eq!(clock.unit_at(1000, 1000), None);
    }
}
