//! The seed's exposure measurement: luminance statistics of an image's foreground, and the
//! seed's table of what Isaac Sim and MuJoCo measured for each rig.

use serde::Serialize;

/// Side of the seed's foreground square on its 256 × 256 images; other sizes use the same
/// share of the image (160 / 256 of each side), centred.
pub const FOREGROUND: usize = 160;
/// A pixel darker than this (luminance 0–255) counts as dark.
pub const DARK_BELOW: f64 = 20.0;

/// Foreground luminance statistics of one image.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Exposure {
    /// Mean luminance, 0–255.
    pub mean: f64,
    /// 5th percentile of the luminance (nearest rank).
    pub p05: f64,
    /// Share of foreground pixels below [`DARK_BELOW`], 0–1.
    pub dark: f64,
}

/// Rec. 601 luma of an 8-bit RGB pixel (what image libraries' grayscale conversion gives).
pub fn luminance(rgb: [u8; 3]) -> f64 {
    0.299 * rgb[0] as f64 + 0.587 * rgb[1] as f64 + 0.114 * rgb[2] as f64
}

/// The exposure of the central foreground of a `width` × `height` RGB image (rows top to
/// bottom, 3 bytes per pixel). `None` when `rgb` is not that size or the image is empty.
pub fn exposure(rgb: &[u8], width: usize, height: usize) -> Option<Exposure> {
    if width == 0 || height == 0 || rgb.len() != width * height * 3 {
        return None;
    }
    let side = |n: usize| (n * FOREGROUND / 256).max(1);
    let (fw, fh) = (side(width), side(height));
    let (x0, y0) = ((width - fw) / 2, (height - fh) / 2);
    let mut lum: Vec<f64> = Vec::with_capacity(fw * fh);
    for y in y0..y0 + fh {
        for x in x0..x0 + fw {
            let i = (y * width + x) * 3;
            lum.push(luminance([rgb[i], rgb[i + 1], rgb[i + 2]]));
        }
    }
    let n = lum.len();
    let mean = lum.iter().sum::<f64>() / n as f64;
    let dark = lum.iter().filter(|&&l| l < DARK_BELOW).count() as f64 / n as f64;
    lum.sort_by(f64::total_cmp);
    let rank = ((0.05 * n as f64).ceil() as usize).clamp(1, n);
    Some(Exposure { mean, p05: lum[rank - 1], dark })
}

/// The structural similarity (SSIM, Wang et al. 2004) of two `width` × `height` RGB images'
/// luma: an 11 × 11 Gaussian window (σ = 1.5), K1 = 0.01, K2 = 0.03, averaged over every
/// window inside the image. 1 for identical images. `None` when a buffer is not that size
/// or the image is smaller than the window.
pub fn ssim(a: &[u8], b: &[u8], width: usize, height: usize) -> Option<f64> {
    const R: usize = 5;
    if a.len() != width * height * 3 || b.len() != a.len() || width < 2 * R + 1 || height < 2 * R + 1 {
        return None;
    }
    let luma = |img: &[u8]| -> Vec<f64> { img.chunks_exact(3).map(|p| luminance([p[0], p[1], p[2]])).collect() };
    let (x, y) = (luma(a), luma(b));
    let g: Vec<f64> = (0..=2 * R).map(|i| (-((i as f64 - R as f64).powi(2)) / (2.0 * 1.5 * 1.5)).exp()).collect();
    let norm: f64 = g.iter().sum::<f64>().powi(2);
    let (c1, c2) = ((0.01f64 * 255.0).powi(2), (0.03f64 * 255.0).powi(2));
    let mut total = 0.0;
    let mut count = 0usize;
    for cy in R..height - R {
        for cx in R..width - R {
            let (mut mx, mut my, mut xx, mut yy, mut xy) = (0.0, 0.0, 0.0, 0.0, 0.0);
            for (j, gj) in g.iter().enumerate() {
                for (i, gi) in g.iter().enumerate() {
                    let k = (cy + j - R) * width + cx + i - R;
                    let wgt = gi * gj / norm;
                    mx += wgt * x[k];
                    my += wgt * y[k];
                    xx += wgt * x[k] * x[k];
                    yy += wgt * y[k] * y[k];
                    xy += wgt * x[k] * y[k];
                }
            }
            let (vx, vy, cov) = (xx - mx * mx, yy - my * my, xy - mx * my);
            total += ((2.0 * mx * my + c1) * (2.0 * cov + c2)) / ((mx * mx + my * my + c1) * (vx + vy + c2));
            count += 1;
        }
    }
    Some(total / count as f64)
}

/// One row of the seed's measurement table.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct SeedRow {
    /// The rig's file stem under `examples/lights/rigs` (`baseline`: no rig).
    pub rig: &'static str,
    /// The seed's description.
    pub label: &'static str,
    /// Isaac Sim 5.0's figures (none for the baseline).
    pub isaac: Option<Exposure>,
    /// MuJoCo's figures (the baseline gives mean and p05 only: `dark` is NaN).
    pub mujoco: Exposure,
    /// How far glint's MuJoCo render may be from `mujoco.mean`, as a share (the sideways
    /// disk's placement is not in the seed, hence its wider band).
    pub tolerance: f64,
}

const fn e(mean: f64, p05: f64, dark_percent: f64) -> Exposure {
    Exposure { mean, p05, dark: dark_percent / 100.0 }
}

/// The seed's table, with the no-rig baseline first.
pub const SEED_TABLE: [SeedRow; 6] = [
    SeedRow {
        rig: "baseline",
        label: "no rig (the scene's own lights)",
        isaac: None,
        mujoco: e(116.0, 51.0, f64::NAN),
        tolerance: 0.10,
    },
    SeedRow {
        rig: "distant",
        label: "distant 2000 cd, polar 30°",
        isaac: Some(e(209.0, 156.0, 0.0)),
        mujoco: e(210.0, 56.0, 0.5),
        tolerance: 0.10,
    },
    SeedRow {
        rig: "sphere",
        label: "sphere 1500 cd, r 0.1 at z 1.5",
        isaac: Some(e(96.0, 62.0, 0.0)),
        mujoco: e(106.0, 25.0, 3.4),
        tolerance: 0.10,
    },
    SeedRow {
        rig: "disk_down",
        label: "disk 1500 cd, r 0.3 at z 1.5, down",
        isaac: Some(e(111.0, 74.0, 0.0)),
        mujoco: e(106.0, 25.0, 3.8),
        tolerance: 0.10,
    },
    SeedRow {
        rig: "disk_side",
        label: "disk 1500 cd, r 0.3 at z 0.5, sideways",
        isaac: Some(e(104.0, 76.0, 0.0)),
        mujoco: e(65.0, 25.0, 3.0),
        tolerance: 0.15,
    },
    SeedRow {
        rig: "dome",
        label: "dome 1000 cd",
        isaac: Some(e(195.0, 135.0, 0.0)),
        mujoco: e(191.0, 71.0, 0.0),
        tolerance: 0.10,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn foreground_is_the_central_square() {
        // A 256² image, black but for a white central 160² square.
        let mut rgb = vec![0u8; 256 * 256 * 3];
        for y in 48..208 {
            for x in 48..208 {
                rgb[(y * 256 + x) * 3..][..3].copy_from_slice(&[255; 3]);
            }
        }
        let e = exposure(&rgb, 256, 256).unwrap();
        assert!((e.mean - 255.0).abs() < 1e-9 && e.p05 > 254.9 && e.dark == 0.0, "{e:?}");
        // One column more of black inside the square is seen.
        for y in 48..208 {
            rgb[(y * 256 + 48) * 3..][..3].copy_from_slice(&[0; 3]);
        }
        let e = exposure(&rgb, 256, 256).unwrap();
        assert!((e.dark - 1.0 / 160.0).abs() < 1e-12, "{e:?}");
    }

    #[test]
    fn ssim_is_one_for_equal_images_and_drops_with_structure() {
        let a: Vec<u8> = (0..32 * 32 * 3).map(|i| ((i / 3) % 32 * 8) as u8).collect();
        assert!((ssim(&a, &a, 32, 32).unwrap() - 1.0).abs() < 1e-12);
        let flat = vec![128u8; a.len()];
        let s = ssim(&a, &flat, 32, 32).unwrap();
        assert!(s < 0.5, "{s}");
        let brighter: Vec<u8> = a.iter().map(|&v| v.saturating_add(10)).collect();
        assert!(ssim(&a, &brighter, 32, 32).unwrap() > 0.9);
        assert!(ssim(&a, &a, 8, 8).is_none());
    }

    #[test]
    fn percentile_and_luma() {
        assert!((luminance([255, 0, 0]) - 76.245).abs() < 1e-9);
        // 100 pixels of a 10 × 10 image (foreground 6 × 6 = 36): 5th percentile is rank 2.
        let mut rgb = vec![100u8; 10 * 10 * 3];
        for i in [22, 23] {
            rgb[i * 3..][..3].copy_from_slice(&[10; 3]);
        }
        let e = exposure(&rgb, 10, 10).unwrap();
        assert_eq!(e.p05, 10.0);
        assert!((e.dark - 2.0 / 36.0).abs() < 1e-12);
        assert!(exposure(&rgb, 10, 9).is_none());
    }
}
