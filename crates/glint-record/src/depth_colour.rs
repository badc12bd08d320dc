//! A depth image to look at: depths coloured along a ramp (near orange, far blue), holes
//! black, and under the image a legend strip: the ramp with its near, middle and far depths
//! in metres.

use std::path::Path;

use glint_lidar::Ramp;

use crate::RecordError;

/// The legend strip's height, pixels.
const LEGEND: usize = 26;
/// Glyph scale: the 3 × 5 font drawn at 2×.
const SCALE: usize = 2;
/// Below this width the labels would overlap: the strip shows the ramp alone.
const MIN_LABELLED_WIDTH: usize = 96;

/// 3 × 5 glyphs, one row per 3 bits (top row first): the digits, `.` and `m`.
fn glyph(c: char) -> Option<[u8; 5]> {
    Some(match c {
        '0' => [0b111, 0b101, 0b101, 0b101, 0b111],
        '1' => [0b010, 0b110, 0b010, 0b010, 0b111],
        '2' => [0b111, 0b001, 0b111, 0b100, 0b111],
        '3' => [0b111, 0b001, 0b111, 0b001, 0b111],
        '4' => [0b101, 0b101, 0b111, 0b001, 0b001],
        '5' => [0b111, 0b100, 0b111, 0b001, 0b111],
        '6' => [0b111, 0b100, 0b111, 0b101, 0b111],
        '7' => [0b111, 0b001, 0b001, 0b001, 0b001],
        '8' => [0b111, 0b101, 0b111, 0b101, 0b111],
        '9' => [0b111, 0b101, 0b111, 0b001, 0b111],
        '.' => [0b000, 0b000, 0b000, 0b000, 0b010],
        'm' => [0b000, 0b000, 0b110, 0b111, 0b101],
        _ => return None,
    })
}

/// An RGB canvas.
struct Canvas {
    width: usize,
    rgb: Vec<u8>,
}

impl Canvas {
    fn set(&mut self, x: usize, y: usize, colour: [u8; 3]) {
        let at = (y * self.width + x) * 3;
        if let Some(px) = self.rgb.get_mut(at..at + 3) {
            px.copy_from_slice(&colour);
        }
    }

    /// `text` with its top left corner at (`x`, `y`), in white.
    fn text(&mut self, x: usize, y: usize, text: &str) {
        for (i, c) in text.chars().enumerate() {
            let Some(rows) = glyph(c) else { continue };
            let left = x + i * 4 * SCALE;
            for (r, bits) in rows.iter().enumerate() {
                for col in 0..3 {
                    if bits >> (2 - col) & 1 == 1 {
                        for (dx, dy) in (0..SCALE).flat_map(|dx| (0..SCALE).map(move |dy| (dx, dy))) {
                            self.set(left + col * SCALE + dx, y + r * SCALE + dy, [255; 3]);
                        }
                    }
                }
            }
        }
    }
}

/// The width `text` takes, pixels.
fn text_width(text: &str) -> usize {
    text.chars().count() * 4 * SCALE - SCALE
}

/// Writes `depth` (`width × height` metres, 0 for no depth) as a colour PNG with a legend
/// strip; the ramp spans the valid depths' range. Returns that range (near, far).
pub fn write_depth_colour_png(
    path: &Path,
    depth: &[f32],
    (width, height): (usize, usize),
) -> Result<(f32, f32), RecordError> {
    let bad = |reason: String| RecordError::Image { path: path.to_path_buf(), reason };
    if depth.len() != width * height {
        return Err(bad(format!("the depth frame holds {} values, not {width} × {height}", depth.len())));
    }
    let valid = depth.iter().copied().filter(|&z| z > 0.0 && z.is_finite());
    let (near, far) = valid.fold((f32::INFINITY, 0.0f32), |(lo, hi), z| (lo.min(z), hi.max(z)));
    let (near, far) = if near.is_finite() { (near, far) } else { (0.0, 0.0) };
    let span = (far - near).max(1e-6);
    let ramp = Ramp::WarmGreenBlue;
    let mut canvas = Canvas { width, rgb: Vec::with_capacity(width * (height + LEGEND) * 3) };
    for &z in depth {
        let colour = if z > 0.0 && z.is_finite() { ramp.colour((z - near) / span) } else { [0; 3] };
        canvas.rgb.extend_from_slice(&colour);
    }
    canvas.rgb.resize(width * (height + LEGEND) * 3, 0);
    let margin = 4.min(width / 8);
    for x in margin..width.saturating_sub(margin) {
        let t = (x - margin) as f32 / (width - 2 * margin).max(2) as f32;
        for y in height + 2..height + 10 {
            canvas.set(x, y, ramp.colour(t));
        }
    }
    if width >= MIN_LABELLED_WIDTH {
        let label = |z: f32| format!("{z:.2}m");
        let labels = [label(near), label((near + far) / 2.0), label(far)];
        let y = height + 13;
        canvas.text(margin, y, &labels[0]);
        canvas.text((width - text_width(&labels[1])) / 2, y, &labels[1]);
        canvas.text(width - margin - text_width(&labels[2]), y, &labels[2]);
    }
    let img = image::RgbImage::from_raw(width as u32, (height + LEGEND) as u32, canvas.rgb)
        .ok_or_else(|| bad("the canvas has the wrong size".into()))?;
    img.save(path).map_err(|e| bad(e.to_string()))?;
    Ok((near, far))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depths_take_the_ramp_and_holes_stay_black() {
        let dir = std::env::temp_dir().join(format!("glint-depth-colour-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("d.png");
        let (w, h) = (128, 8);
        let depth: Vec<f32> =
            (0..w * h).map(|p| if p % w == 0 { 0.0 } else { 1.0 + (p % w) as f32 / w as f32 }).collect();
        let (near, far) = write_depth_colour_png(&path, &depth, (w, h)).unwrap();
        assert!((near - (1.0 + 1.0 / 128.0)).abs() < 1e-6 && (far - (1.0 + 127.0 / 128.0)).abs() < 1e-6);
        let img = image::open(&path).unwrap().to_rgb8();
        assert_eq!(img.dimensions(), (w as u32, (h + LEGEND) as u32));
        assert_eq!(img.get_pixel(0, 0).0, [0, 0, 0], "a hole is black");
        assert_eq!(img.get_pixel(1, 0).0, Ramp::WarmGreenBlue.colour(0.0), "the nearest takes the ramp's start");
        assert_eq!(img.get_pixel(127, 3).0, Ramp::WarmGreenBlue.colour(1.0));
        // The labels are drawn in white under the ramp.
        let white = (0..w as u32).filter(|&x| img.get_pixel(x, (h + 15) as u32).0 == [255; 3]).count();
        assert!(white > 10, "{white}");
        assert!(write_depth_colour_png(&path, &depth[1..], (w, h)).is_err());
        let _ = std::fs::remove_dir_all(dir);
    }
}
