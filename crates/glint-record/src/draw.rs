//! Drawing lidar scans: a top-down orthographic view of the returned points (PNGs, and the
//! frames of video proxies) and a range image of a spinning scan, each coloured by one of the
//! seed's colour-by modes through one of its ramps ([`ColourBy`], [`Ramp`]): the range image
//! by range alone ([`range_image_png`]) or by any mode ([`range_image_by_png`]).
//!
//! Callers convert their scan into [`Point`]s (or a flat range buffer) and pick a mode and a
//! ramp.

use std::f32::consts::{PI, TAU};
use std::path::Path;

use glint_lidar::{ColourBy, NAN_GREY, Ramp};
use image::{Rgb, RgbImage};

use crate::RecordError;
use crate::files::save_png;

/// Colour of every point in [`ColourBy::Solid`] mode, whatever the ramp.
const SOLID_GREEN: [u8; 3] = [0, 200, 0];

/// Ramp parameter used when a mode's scalar is degenerate (a single channel, all points at
/// one height, a single emission index): the middle of the ramp.
const DEGENERATE_T: f32 = 0.5;

/// One returned point of a scan, everything the colour modes need.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    /// Position in the world frame, metres.
    pub xyz: [f32; 3],
    /// Measured range, metres.
    pub range: f32,
    /// Laser channel (row) that produced the point, `0..channels`.
    pub channel: u32,
    /// Total channels (rows) of the sensor; 1 for Livox sensors.
    pub channels: u32,
    /// Azimuth in radians, sensor frame.
    pub azimuth: f32,
    /// Emission index of the beam within the scan.
    pub order: u32,
    /// `|cos|` of the angle between beam and surface normal, 0..1.
    pub cos_incidence: f32,
    /// What the return model and the bake say about the point.
    pub material: MaterialRead,
}

/// The material values of a point, for the material colour modes.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum MaterialRead {
    /// No bake or no return model: the material modes draw `Solid` green.
    #[default]
    Unconfigured,
    /// The bake has no material for the hit: dim grey.
    Hole,
    /// The values.
    Known {
        /// Return-model intensity (`-1`: the beam dropped).
        intensity: f32,
        /// Baked NIR reflectivity.
        nir: f32,
        /// Baked `F0 · metalness`.
        metal: f32,
        /// Drop probability of the first surface.
        drop: f32,
        /// Calibrated reflectivity (`-1`: the beam dropped).
        calibrated: f32,
    },
}

/// Ramp parameter of a material mode for `read`, or the fixed colour the mode draws instead.
fn material_scalar(read: MaterialRead, by: ColourBy) -> Result<f32, [u8; 3]> {
    let MaterialRead::Known { intensity, nir, metal, drop, calibrated } = read else {
        return Err(if read == MaterialRead::Hole { NAN_GREY } else { SOLID_GREEN });
    };
    let t = match by {
        ColourBy::Intensity if intensity >= 0.0 => intensity.min(1.0),
        ColourBy::NirReflectivity => nir,
        ColourBy::MetalReflectance => metal,
        ColourBy::DropoutProb => drop,
        ColourBy::CalibratedReflectivity if calibrated > 0.0 => (calibrated.log10() + 2.0) / 4.0,
        _ => return Err(NAN_GREY),
    };
    Ok(t.clamp(0.0, 1.0))
}

/// Ramp parameter of each point for `by`, normalised over `points` as [`top_down_png`]
/// documents. Unused (and meaningless) for [`ColourBy::Solid`].
fn scalars(points: &[Point], by: ColourBy) -> Vec<f32> {
    match by {
        ColourBy::Channel => points
            .iter()
            .map(|p| if p.channels > 1 { p.channel as f32 / (p.channels - 1) as f32 } else { DEGENERATE_T })
            .collect(),
        ColourBy::Range => {
            let max = points.iter().map(|p| p.range).filter(|r| r.is_finite()).fold(0.0f32, f32::max);
            points.iter().map(|p| if max > 0.0 { p.range / max } else { DEGENERATE_T }).collect()
        }
        ColourBy::Height => {
            let (lo, hi) = points
                .iter()
                .map(|p| p.xyz[2])
                .filter(|z| z.is_finite())
                .fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), z| (lo.min(z), hi.max(z)));
            points.iter().map(|p| if hi > lo { (p.xyz[2] - lo) / (hi - lo) } else { DEGENERATE_T }).collect()
        }
        ColourBy::Azimuth => points.iter().map(|p| (p.azimuth + PI).rem_euclid(TAU) / TAU).collect(),
        ColourBy::SampleOrder => {
            let max = points.iter().map(|p| p.order).max().unwrap_or(0);
            points.iter().map(|p| if max > 0 { p.order as f32 / max as f32 } else { DEGENERATE_T }).collect()
        }
        ColourBy::Solid => vec![0.0; points.len()],
        ColourBy::Incidence => points.iter().map(|p| p.cos_incidence).collect(),
        _ => points.iter().map(|p| material_scalar(p.material, by).unwrap_or(f32::NAN)).collect(),
    }
}

/// Orthographic top-down framing: world XY → pixel, +X to the right, +Y up.
#[derive(Clone, Copy, Debug)]
struct Frame {
    /// World X at the image centre.
    cx: f32,
    /// World Y at the image centre.
    cy: f32,
    /// Pixels per metre.
    scale: f32,
    /// Image side, pixels.
    size: u32,
}

impl Frame {
    /// Frames the XY bounds of the finite points, square (equal scale on both axes) with a 5%
    /// margin each side; `None` when no point is finite. A single point (zero extent) gets a
    /// 2 m wide view.
    fn fit(points: &[Point], size: u32) -> Option<Frame> {
        let mut lo = [f32::INFINITY; 2];
        let mut hi = [f32::NEG_INFINITY; 2];
        for p in points.iter().filter(|p| p.xyz.iter().all(|v| v.is_finite())) {
            for k in 0..2 {
                lo[k] = lo[k].min(p.xyz[k]);
                hi[k] = hi[k].max(p.xyz[k]);
            }
        }
        if lo[0] > hi[0] {
            return None;
        }
        let span = (hi[0] - lo[0]).max(hi[1] - lo[1]);
        let span = if span > 0.0 { span } else { 2.0 };
        let view = span * 1.1;
        Some(Frame { cx: 0.5 * (lo[0] + hi[0]), cy: 0.5 * (lo[1] + hi[1]), scale: size as f32 / view, size })
    }

    /// Pixel (column, row) holding world `(x, y)`, or `None` outside the image.
    fn pixel(&self, x: f32, y: f32) -> Option<(u32, u32)> {
        let half = 0.5 * self.size as f32;
        let col = ((x - self.cx) * self.scale + half).floor();
        let row = (half - (y - self.cy) * self.scale).floor();
        let inside = |v: f32| v >= 0.0 && v < self.size as f32;
        (inside(col) && inside(row)).then_some((col as u32, row as u32))
    }
}

/// An error drawing to `path`.
fn drawing(path: &Path, reason: String) -> RecordError {
    RecordError::Image { path: path.to_path_buf(), reason }
}

/// Top-down (orthographic, looking down -Z) PNG of `points`, `size` pixels square, framed on
/// the points' XY bounds with a 5% margin, black background, each point a 2x2 pixel square
/// coloured by `by` with `ramp` (Solid = flat green (0, 200, 0) whatever the ramp; Channel uses
/// channel/(channels-1), a single ramp colour when channels == 1; Range normalised by the max
/// range among the points; Height by min..max z of the points; Azimuth by (az + pi) / 2pi;
/// SampleOrder by order / max order; Incidence by cos_incidence). Points drawn in order of
/// increasing height so higher points stay on top. Returns an error naming the path if writing
/// fails; with no points writes an all-black image.
///
/// +X points right and +Y up in the image; both axes share one scale, so the longer XY extent
/// fills the image. Points with a non-finite coordinate are skipped; degenerate normalisations
/// (a single channel, one height, one emission index, no positive range) use the ramp's middle.
/// Errors if `size` is 0.
pub fn top_down_png(points: &[Point], by: ColourBy, ramp: Ramp, size: u32, path: &Path) -> Result<(), RecordError> {
    if size == 0 {
        return Err(drawing(path, "a top-down image is at least 1 pixel square".into()));
    }
    save_png(&top_down_image(points, by, ramp, size, None), path)
}

/// The top-down view of [`top_down_png`] as an image. `view` fixes the framing instead of
/// fitting it to the points: world (x, y) at the centre and the side's length in metres, so
/// successive frames of a video line up.
pub(crate) fn top_down_image(
    points: &[Point],
    by: ColourBy,
    ramp: Ramp,
    size: u32,
    view: Option<([f32; 2], f32)>,
) -> RgbImage {
    let mut img = RgbImage::new(size, size);
    let frame = match view {
        Some(([cx, cy], side)) => Some(Frame { cx, cy, scale: size as f32 / side.max(1e-3), size }),
        None => Frame::fit(points, size),
    };
    if let Some(frame) = frame {
        let colours = colours(points, by, ramp);
        let mut idx: Vec<usize> = (0..points.len()).filter(|&i| points[i].xyz.iter().all(|v| v.is_finite())).collect();
        idx.sort_by(|&a, &b| points[a].xyz[2].total_cmp(&points[b].xyz[2]));
        for i in idx {
            let [x, y, _] = points[i].xyz;
            let Some((col, row)) = frame.pixel(x, y) else { continue };
            let colour = colours[i];
            for (dc, dr) in [(0, 0), (1, 0), (0, 1), (1, 1)] {
                let (c, r) = (col + dc, row + dr);
                if c < size && r < size {
                    img.put_pixel(c, r, Rgb(colour));
                }
            }
        }
    }
    img
}

/// The colour of each point for `by` with `ramp`, its scalar normalised over `points` (see
/// [`top_down_png`]).
fn colours(points: &[Point], by: ColourBy, ramp: Ramp) -> Vec<[u8; 3]> {
    let ts = scalars(points, by);
    points
        .iter()
        .zip(ts)
        .map(|(p, t)| match by {
            ColourBy::Solid => SOLID_GREEN,
            _ if by.needs_material() => match material_scalar(p.material, by) {
                Ok(t) => ramp.colour(t),
                Err(fixed) => fixed,
            },
            _ => ramp.colour(t),
        })
        .collect()
}

/// Checks a range image's shape; `cells` is how many beams the caller holds.
fn check_range_image(cells: usize, channels: u32, bins: u32, max_range: f32, path: &Path) -> Result<(), RecordError> {
    let expected = channels as usize * bins as usize;
    if cells != expected {
        return Err(drawing(
            path,
            format!("a range image needs channels * bins = {channels} * {bins} = {expected} ranges, got {cells}"),
        ));
    }
    if channels == 0 || bins == 0 {
        return Err(drawing(path, format!("a range image needs a channel and a bin, got {channels} x {bins}")));
    }
    if !(max_range.is_finite() && max_range > 0.0) {
        return Err(drawing(path, format!("a range image's max_range must be positive, got {max_range}")));
    }
    Ok(())
}

/// Writes the range image of `cell` colours (indexed `bin * channels + channel`, `None`:
/// black) laid out as [`range_image_png`] documents.
fn save_range_image(cell: &[Option<[u8; 3]>], channels: u32, bins: u32, path: &Path) -> Result<(), RecordError> {
    let row_scale = if channels < 64 { 64u32.div_ceil(channels) } else { 1 };
    let height = channels * row_scale;
    let mut img = RgbImage::new(bins, height);
    for row in 0..height {
        let channel = channels - 1 - row / row_scale;
        for bin in 0..bins {
            if let Some(colour) = cell[bin as usize * channels as usize + channel as usize] {
                img.put_pixel(bin, row, Rgb(colour));
            }
        }
    }
    save_png(&img, path)
}

/// Range image PNG of a spinning scan: `channels` rows (row 0 at the TOP is the HIGHEST
/// channel, i.e. channel channels-1) by `bins` columns (column 0 = bin 0, +X, azimuth
/// increasing to the right), from `range` indexed `bin * channels + channel` (metres, negative
/// = no return), each pixel coloured by range / max_range with `ramp`, misses black. If
/// channels < 64 scale rows up by an integer factor so the image is at least 64 pixels tall.
/// Errors if range.len() != channels*bins (message names both numbers) or on write failure
/// (naming the path).
///
/// NaN ranges count as misses too. Also errors if `channels` or `bins` is 0 or `max_range` is
/// not a positive finite number.
pub fn range_image_png(
    range: &[f32],
    channels: u32,
    bins: u32,
    max_range: f32,
    ramp: Ramp,
    path: &Path,
) -> Result<(), RecordError> {
    check_range_image(range.len(), channels, bins, max_range, path)?;
    let cell: Vec<Option<[u8; 3]>> = range.iter().map(|&r| (r >= 0.0).then(|| ramp.colour(r / max_range))).collect();
    save_range_image(&cell, channels, bins, path)
}

/// Range image PNG of a spinning scan coloured by `by`: laid out as [`range_image_png`] lays
/// it out, one pixel per point, `points[i]` at beam index `beams[i]` (`bin * channels +
/// channel`; a later point of the same beam wins), beams without a point black. The colours
/// are [`top_down_png`]'s for the same points, except that [`ColourBy::Range`] is range /
/// `max_range`, as in [`range_image_png`], so the two functions draw the same image for it.
///
/// Errors if `points` and `beams` differ in length, a beam index is past `channels * bins`,
/// `channels` or `bins` is 0, `max_range` is not a positive finite number, or on write failure
/// (naming the path).
#[allow(clippy::too_many_arguments)]
pub fn range_image_by_png(
    points: &[Point],
    beams: &[u32],
    channels: u32,
    bins: u32,
    max_range: f32,
    by: ColourBy,
    ramp: Ramp,
    path: &Path,
) -> Result<(), RecordError> {
    let cells = channels as usize * bins as usize;
    check_range_image(cells, channels, bins, max_range, path)?;
    if points.len() != beams.len() {
        return Err(drawing(path, format!("{} points but {} beam indices", points.len(), beams.len())));
    }
    if let Some(&b) = beams.iter().find(|&&b| b as usize >= cells) {
        return Err(drawing(path, format!("beam index {b} is past the image's {channels} * {bins} = {cells} beams")));
    }
    let colours = match by {
        ColourBy::Range => points.iter().map(|p| ramp.colour(p.range / max_range)).collect(),
        _ => colours(points, by, ramp),
    };
    let mut cell = vec![None; cells];
    for (&b, colour) in beams.iter().zip(colours) {
        cell[b as usize] = Some(colour);
    }
    save_range_image(&cell, channels, bins, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glint_lidar::Spelled;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};

    /// A unique temp-file path that removes the file when dropped.
    struct TempPng(PathBuf);

    impl TempPng {
        fn new(tag: &str) -> TempPng {
            static COUNTER: AtomicU32 = AtomicU32::new(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            TempPng(std::env::temp_dir().join(format!("glint-draw-{}-{tag}-{n}.png", std::process::id())))
        }
    }

    impl Drop for TempPng {
        fn drop(&mut self) {
            let _ = std::fs::remove_file(&self.0);
        }
    }

    fn point(x: f32, y: f32, z: f32) -> Point {
        Point {
            xyz: [x, y, z],
            range: (x * x + y * y + z * z).sqrt(),
            channel: 0,
            channels: 1,
            azimuth: y.atan2(x),
            order: 0,
            cos_incidence: 1.0,
            material: MaterialRead::Unconfigured,
        }
    }

    #[test]
    fn draw_material_modes_fall_back_to_solid_and_grey() {
        let by = ColourBy::CalibratedReflectivity;
        assert_eq!(material_scalar(MaterialRead::Unconfigured, by), Err(SOLID_GREEN));
        assert_eq!(material_scalar(MaterialRead::Hole, by), Err(NAN_GREY));
        let known =
            |calibrated: f32| MaterialRead::Known { intensity: 2.0, nir: 0.3, metal: 0.0, drop: 0.25, calibrated };
        assert_eq!(material_scalar(known(1.0), by), Ok(0.5));
        assert_eq!(material_scalar(known(100.0), by), Ok(1.0));
        assert_eq!(material_scalar(known(-1.0), by), Err(NAN_GREY));
        assert_eq!(material_scalar(known(1.0), ColourBy::Intensity), Ok(1.0));
        assert_eq!(material_scalar(known(1.0), ColourBy::DropoutProb), Ok(0.25));
        assert!(ColourBy::all().filter(|m| m.needs_material()).count() == 5);
    }

    #[test]
    fn draw_ramps_hit_endpoints_and_clamp() {
        for ramp in Ramp::all() {
            let stops = ramp.stops();
            let (first, last) = (stops[0], stops[stops.len() - 1]);
            assert_eq!(ramp.colour(0.0), first, "{ramp}");
            assert_eq!(ramp.colour(1.0), last, "{ramp}");
            assert_eq!(ramp.colour(-3.0), first, "{ramp}");
            assert_eq!(ramp.colour(7.0), last, "{ramp}");
            assert_eq!(ramp.colour(f32::NEG_INFINITY), first, "{ramp}");
            assert_eq!(ramp.colour(f32::INFINITY), last, "{ramp}");
            assert_eq!(ramp.colour(f32::NAN), NAN_GREY, "{ramp}");
        }
        // Interior stops land exactly; halfway between stops is the midpoint.
        assert_eq!(Ramp::WarmGreenBlue.colour(0.5), [0, 200, 80]);
        assert_eq!(Ramp::WarmRedYellow.colour(0.5), [255, 40, 0]);
        assert_eq!(Ramp::Heat.colour(1.0 / 3.0), [255, 0, 0]);
        assert_eq!(Ramp::Heat.colour(2.0 / 3.0), [255, 255, 0]);
        assert_eq!(Ramp::Grayscale.colour(0.5), [148, 148, 148]);
        assert_eq!(Ramp::default(), Ramp::WarmRedYellow);
    }

    #[test]
    fn draw_top_down_writes_png_with_points_in_place() {
        // Corners of a 2 m square: the view is 2.2 m over 100 px, centred on the origin.
        let pts = [point(1.0, 1.0, 0.0), point(-1.0, 1.0, 0.0), point(-1.0, -1.0, 0.0), point(1.0, -1.0, 0.5)];
        let tmp = TempPng::new("top");
        top_down_png(&pts, ColourBy::Solid, Ramp::Heat, 100, &tmp.0).unwrap();
        let img = image::open(&tmp.0).unwrap().to_rgb8();
        assert_eq!(img.dimensions(), (100, 100));
        // (+1, +1) is top-right: column 50 + 1/2.2*100 = 95, row 50 - 45.45 = 4.
        assert_eq!(img.get_pixel(95, 4).0, SOLID_GREEN);
        assert_eq!(img.get_pixel(96, 5).0, SOLID_GREEN);
        // (-1, -1) is bottom-left.
        assert_eq!(img.get_pixel(4, 95).0, SOLID_GREEN);
        // Background is black.
        assert_eq!(img.get_pixel(50, 50).0, [0, 0, 0]);
        assert_eq!(img.get_pixel(0, 0).0, [0, 0, 0]);
        let lit = img.pixels().filter(|p| p.0 != [0, 0, 0]).count();
        assert_eq!(lit, 16, "four 2x2 squares");

        // Height colouring: the highest point gets the ramp's top colour.
        top_down_png(&pts, ColourBy::Height, Ramp::Heat, 100, &tmp.0).unwrap();
        let img = image::open(&tmp.0).unwrap().to_rgb8();
        assert_eq!(img.get_pixel(95, 95).0, Ramp::Heat.colour(1.0));
        assert_eq!(img.get_pixel(95, 4).0, Ramp::Heat.colour(0.0));
    }

    #[test]
    fn draw_top_down_higher_points_on_top() {
        // Same XY, different heights, listed highest first: the highest must win.
        let pts = [point(0.0, 0.0, 2.0), point(0.0, 0.0, 0.0), point(1.0, 1.0, 1.0)];
        let tmp = TempPng::new("stack");
        top_down_png(&pts, ColourBy::Height, Ramp::Grayscale, 64, &tmp.0).unwrap();
        let img = image::open(&tmp.0).unwrap().to_rgb8();
        let frame = Frame::fit(&pts, 64).unwrap();
        let (c, r) = frame.pixel(0.0, 0.0).unwrap();
        assert_eq!(img.get_pixel(c, r).0, [255, 255, 255]);
    }

    #[test]
    fn draw_top_down_empty_and_single_point() {
        let tmp = TempPng::new("empty");
        top_down_png(&[], ColourBy::Range, Ramp::default(), 32, &tmp.0).unwrap();
        let img = image::open(&tmp.0).unwrap().to_rgb8();
        assert_eq!(img.dimensions(), (32, 32));
        assert!(img.pixels().all(|p| p.0 == [0, 0, 0]));

        let pts = [point(3.0, -2.0, 1.0)];
        top_down_png(&pts, ColourBy::Channel, Ramp::WarmGreenBlue, 32, &tmp.0).unwrap();
        let img = image::open(&tmp.0).unwrap().to_rgb8();
        assert_eq!(img.get_pixel(16, 16).0, Ramp::WarmGreenBlue.colour(0.5));

        assert!(top_down_png(&pts, ColourBy::Solid, Ramp::Heat, 0, &tmp.0).is_err());
    }

    #[test]
    fn draw_write_failure_names_path() {
        // A folder that cannot be made: its parent is a file.
        let file = std::env::temp_dir().join(format!("glint-draw-not-a-folder-{}", std::process::id()));
        std::fs::write(&file, b"").unwrap();
        let path = file.join("x.png");
        let err = top_down_png(&[point(0.0, 0.0, 0.0)], ColourBy::Solid, Ramp::Heat, 8, &path).unwrap_err();
        assert!(format!("{err:#}").contains(&path.display().to_string()), "{err:#}");
        let err = range_image_png(&[1.0], 1, 1, 10.0, Ramp::Heat, &path).unwrap_err();
        assert!(format!("{err:#}").contains(&path.display().to_string()), "{err:#}");
        std::fs::remove_file(&file).unwrap();
    }

    #[test]
    fn draw_range_image_orientation() {
        let (channels, bins) = (16u32, 8u32);
        let mut range = vec![-1.0f32; (channels * bins) as usize];
        // Only the highest channel of bin 0 returns.
        range[(channels - 1) as usize] = 10.0;
        let tmp = TempPng::new("range");
        range_image_png(&range, channels, bins, 20.0, Ramp::WarmRedYellow, &tmp.0).unwrap();
        let img = image::open(&tmp.0).unwrap().to_rgb8();
        assert_eq!(img.dimensions(), (8, 64), "16 rows scaled 4x to 64");
        let lit = Ramp::WarmRedYellow.colour(0.5);
        for (c, r, p) in img.enumerate_pixels() {
            let expect = if c == 0 && r < 4 { lit } else { [0, 0, 0] };
            assert_eq!(p.0, expect, "pixel ({c}, {r})");
        }

        // Channel 0 of bin 3 lights the bottom block of column 3.
        let mut range = vec![-1.0f32; (channels * bins) as usize];
        range[(3 * channels) as usize] = 20.0;
        range_image_png(&range, channels, bins, 20.0, Ramp::WarmRedYellow, &tmp.0).unwrap();
        let img = image::open(&tmp.0).unwrap().to_rgb8();
        for (c, r, p) in img.enumerate_pixels() {
            let expect = if c == 3 && r >= 60 { Ramp::WarmRedYellow.colour(1.0) } else { [0, 0, 0] };
            assert_eq!(p.0, expect, "pixel ({c}, {r})");
        }

        // 64+ channels: no scaling. 24 channels: scaled 3x to 72.
        range_image_png(&vec![1.0; 64 * 2], 64, 2, 1.0, Ramp::Heat, &tmp.0).unwrap();
        assert_eq!(image::open(&tmp.0).unwrap().to_rgb8().dimensions(), (2, 64));
        range_image_png(&vec![f32::NAN; 24 * 5], 24, 5, 1.0, Ramp::Heat, &tmp.0).unwrap();
        let img = image::open(&tmp.0).unwrap().to_rgb8();
        assert_eq!(img.dimensions(), (5, 72));
        assert!(img.pixels().all(|p| p.0 == [0, 0, 0]), "NaN is a miss");
    }

    #[test]
    fn draw_range_image_by_mode() {
        let (channels, bins) = (2u32, 3u32);
        let mut pts = [point(1.0, 0.0, 0.0), point(0.0, 2.0, 1.0)];
        pts[1].channel = 1;
        pts[1].channels = 2;
        pts[0].channels = 2;
        let beams = [0, 2 * channels + 1];
        let tmp = TempPng::new("by");
        let read = |path: &Path| image::open(path).unwrap().to_rgb8();
        // Range: the same image as range_image_png draws from the ranges.
        range_image_by_png(&pts, &beams, channels, bins, 4.0, ColourBy::Range, Ramp::Heat, &tmp.0).unwrap();
        let by = read(&tmp.0);
        let mut range = vec![-1.0f32; (channels * bins) as usize];
        range[0] = pts[0].range;
        range[(2 * channels + 1) as usize] = pts[1].range;
        range_image_png(&range, channels, bins, 4.0, Ramp::Heat, &tmp.0).unwrap();
        assert_eq!(by, read(&tmp.0));
        assert_eq!(by.dimensions(), (3, 64));
        // Height: the lower point (channel 0 of bin 0: bottom left) gets the ramp's start, the
        // higher (channel 1 of bin 2: top right) its end; every other beam is black.
        range_image_by_png(&pts, &beams, channels, bins, 4.0, ColourBy::Height, Ramp::Heat, &tmp.0).unwrap();
        let img = read(&tmp.0);
        assert_eq!(img.get_pixel(0, 63).0, Ramp::Heat.colour(0.0));
        assert_eq!(img.get_pixel(2, 0).0, Ramp::Heat.colour(1.0));
        assert_eq!(img.get_pixel(1, 0).0, [0, 0, 0]);
        assert_ne!(img, by, "the mode changes the image");
        range_image_by_png(&pts, &beams, channels, bins, 4.0, ColourBy::Solid, Ramp::Heat, &tmp.0).unwrap();
        assert_eq!(read(&tmp.0).get_pixel(2, 0).0, SOLID_GREEN);
        // Bad input is named.
        let err = range_image_by_png(&pts, &[0], channels, bins, 4.0, ColourBy::Range, Ramp::Heat, &tmp.0);
        assert!(err.unwrap_err().to_string().contains("2 points but 1 beam indices"));
        let err = range_image_by_png(&pts, &[0, 6], channels, bins, 4.0, ColourBy::Range, Ramp::Heat, &tmp.0);
        assert!(err.unwrap_err().to_string().contains("beam index 6 is past"));
    }

    #[test]
    fn draw_range_image_wrong_length_errors() {
        let tmp = TempPng::new("len");
        let err = range_image_png(&[1.0; 10], 4, 3, 10.0, Ramp::Heat, &tmp.0).unwrap_err().to_string();
        assert!(err.contains("12") && err.contains("10"), "{err}");
        assert!(!tmp.0.exists());
        assert!(range_image_png(&[], 0, 3, 10.0, Ramp::Heat, &tmp.0).is_err());
        assert!(range_image_png(&[1.0], 1, 1, 0.0, Ramp::Heat, &tmp.0).is_err());
    }
}
