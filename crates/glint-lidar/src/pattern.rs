//! Beam directions in the sensor frame (+X forward, +Z up, +Z the rotation axis): the
//! spinning grid and the non-repetitive generators. Beam `k` of cycle `c` of a
//! non-repetitive pattern is emitted at pattern time `(c * N + k) / (N * rate)`; its
//! direction depends on that time, so consecutive cycles differ and coverage fills in.

use std::f64::consts::TAU;

use glam::DVec3;

use crate::{NonRepetitive, ScanConfig, ScanPattern};

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
