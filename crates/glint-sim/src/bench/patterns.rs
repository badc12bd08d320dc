//! Ray direction sets for `glint bench rays`: the beam layouts of common lidars, in the
//! sensor frame (X forward, Z up). The full scan-pattern machinery (timing, presets,
//! non-repetitive generators) lives in glint-lidar; these are the static direction sets a
//! benchmark needs.

use std::str::FromStr;

use glam::DVec3;

use crate::SimError;

/// A named direction set, or `N` directions spread evenly over the sphere.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pattern {
    /// Velodyne VLP-16: 16 channels over −15°…15°, 1 800 azimuth bins (28 800 rays).
    Vlp16,
    /// Ouster OS1-64: 64 channels over −22.5°…22.5°, 1 024 azimuth bins (65 536 rays).
    Os1_64,
    /// Livox Mid-360 field of view (360° × −7°…52°) covered by 20 000 rays of one 0.1 s
    /// cycle, laid out on a golden-angle spiral.
    Mid360,
    /// `N` directions on a Fibonacci sphere.
    Sphere(usize),
}

/// The most rays a `Sphere` pattern may have (16 Mi).
pub const MAX_SPHERE_RAYS: usize = 1 << 24;

impl FromStr for Pattern {
    type Err = SimError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "vlp16" => Ok(Pattern::Vlp16),
            "os1-64" => Ok(Pattern::Os1_64),
            "mid360" => Ok(Pattern::Mid360),
            _ => match s.parse::<usize>() {
                Ok(0) => Err(SimError::Setting("a pattern of 0 rays casts nothing: give at least 1".into())),
                Ok(n) if n > MAX_SPHERE_RAYS => Err(SimError::Setting(format!(
                    "a pattern of {n} rays is more than a benchmark casts (at most {MAX_SPHERE_RAYS}, \
                     256 times an OS1-64 revolution, about 1.6 GB of rays and hits): give fewer"
                ))),
                Ok(n) => Ok(Pattern::Sphere(n)),
                Err(_) => Err(SimError::Setting(format!(
                    "unknown pattern '{s}': use vlp16, os1-64, mid360 or a number of rays (1 to {MAX_SPHERE_RAYS})"
                ))),
            },
        }
    }
}

/// Unit direction at azimuth `az` (from +X, counter-clockwise about +Z) and elevation `el`.
fn direction(az: f64, el: f64) -> DVec3 {
    DVec3::new(el.cos() * az.cos(), el.cos() * az.sin(), el.sin())
}

/// A spinning unit's rays, index `bin * channels + channel`.
fn spinning(channels: usize, bins: usize, vmin_deg: f64, vmax_deg: f64) -> Vec<DVec3> {
    let (vmin, vmax) = (vmin_deg.to_radians(), vmax_deg.to_radians());
    let mut out = Vec::with_capacity(channels * bins);
    for b in 0..bins {
        let az = std::f64::consts::TAU * b as f64 / bins as f64;
        for c in 0..channels {
            let el = if channels == 1 { vmin } else { vmin + (vmax - vmin) * c as f64 / (channels - 1) as f64 };
            out.push(direction(az, el));
        }
    }
    out
}

/// `n` directions with elevations uniform in `sin(el)` over `[el_min, el_max]` and
/// golden-angle azimuths.
fn spiral(n: usize, el_min_deg: f64, el_max_deg: f64) -> Vec<DVec3> {
    let golden = std::f64::consts::PI * (3.0 - 5f64.sqrt());
    let (z0, z1) = (el_min_deg.to_radians().sin(), el_max_deg.to_radians().sin());
    (0..n)
        .map(|i| {
            let z = z0 + (z1 - z0) * (i as f64 + 0.5) / n as f64;
            direction(golden * i as f64, z.asin())
        })
        .collect()
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Pattern::Vlp16 => write!(f, "vlp16"),
            Pattern::Os1_64 => write!(f, "os1-64"),
            Pattern::Mid360 => write!(f, "mid360"),
            Pattern::Sphere(n) => write!(f, "{n}"),
        }
    }
}

/// Side of the square tiles (bins × channels) that spinning patterns are cast in.
const TILE: usize = 4;

/// Reorders a spinning layout (index `bin * channels + channel`) into `TILE × TILE` tiles
/// of neighbouring bins and channels (two tiles make one packet of 32 rays, 4 bins × 8
/// channels, tighter than 32 channels of one bin). Leftover bins or channels form smaller
/// tiles.
fn tiled(dirs: &[DVec3], channels: usize) -> Vec<DVec3> {
    let bins = dirs.len() / channels;
    let mut out = Vec::with_capacity(dirs.len());
    for b0 in (0..bins).step_by(TILE) {
        for c0 in (0..channels).step_by(TILE) {
            for b in b0..(b0 + TILE).min(bins) {
                for c in c0..(c0 + TILE).min(channels) {
                    out.push(dirs[b * channels + c]);
                }
            }
        }
    }
    out
}

impl Pattern {
    /// `dirs` (a spinning layout with `channels` rows) in the tiled cast order.
    pub fn cast_order_of(&self, dirs: &[DVec3], channels: usize) -> Vec<DVec3> {
        tiled(dirs, channels)
    }

    /// The directions in the order glint casts them, which is the order its lidar sensors
    /// use: spinning patterns in 4 × 4 tiles of bins × channels (coherent packets), the
    /// others in emission order. The same array goes to MuJoCo.
    pub fn cast_order(&self) -> Vec<DVec3> {
        match *self {
            Pattern::Vlp16 => tiled(&self.directions(), 16),
            Pattern::Os1_64 => tiled(&self.directions(), 64),
            _ => self.directions(),
        }
    }

    /// The unit directions of the pattern.
    pub fn directions(&self) -> Vec<DVec3> {
        match *self {
            Pattern::Vlp16 => spinning(16, 1800, -15.0, 15.0),
            Pattern::Os1_64 => spinning(64, 1024, -22.5, 22.5),
            Pattern::Mid360 => spiral(20_000, -7.0, 52.0),
            Pattern::Sphere(n) => spiral(n, -90.0, 90.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_units() {
        assert_eq!(Pattern::Vlp16.directions().len(), 28_800);
        assert_eq!(Pattern::Os1_64.directions().len(), 65_536);
        assert_eq!(Pattern::Mid360.directions().len(), 20_000);
        for d in Pattern::Mid360.directions() {
            assert!((d.length() - 1.0).abs() < 1e-12);
            let el = d.z.asin().to_degrees();
            assert!((-7.0..=52.0).contains(&el));
        }
        let os = Pattern::Os1_64.directions();
        assert!((os[0].z.asin().to_degrees() + 22.5).abs() < 1e-9);
        assert!((os[63].z.asin().to_degrees() - 22.5).abs() < 1e-9);
        // bin 1 is one step counter-clockwise from +X
        assert!(os[64].y > 0.0);
    }

    #[test]
    fn cast_order_is_a_permutation_in_tiles() {
        let dirs = Pattern::Os1_64.directions();
        let tiled = Pattern::Os1_64.cast_order();
        assert_eq!(tiled.len(), dirs.len());
        // First tile: bins 0..4, channels 0..4.
        assert_eq!(tiled[..4], dirs[..4]);
        assert_eq!(tiled[4..8], dirs[64..68]);
        let key = |d: &DVec3| (d.x.to_bits(), d.y.to_bits(), d.z.to_bits());
        let mut a: Vec<_> = dirs.iter().map(key).collect();
        let mut b: Vec<_> = tiled.iter().map(key).collect();
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
        assert_eq!(Pattern::Mid360.cast_order(), Pattern::Mid360.directions());
    }

    #[test]
    fn parse_errors_name_the_pattern() {
        assert!("vlp-16".parse::<Pattern>().unwrap_err().to_string().contains("unknown pattern 'vlp-16'"));
        assert!("0".parse::<Pattern>().is_err());
        assert_eq!("1000".parse::<Pattern>().unwrap(), Pattern::Sphere(1000));
    }
}
