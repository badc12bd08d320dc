//! Texture lookups as OpenGL does them for MuJoCo's classic renderer: 2D textures repeat and
//! are filtered through a mipmap chosen by the pixel's footprint (so a distant checker floor
//! greys out as it does there); cube and skybox textures pick a face by the major axis.

use glam::{DVec3, Vec3};
use glint_core::{Texture, TextureKind};

/// A texture ready for lookups: linear RGB in 0–1, and for 2D textures its mip levels.
#[derive(Clone, Debug)]
pub struct Sampler {
    kind: TextureKind,
    /// Level 0 first; each level half the size of the one before (at least 1 × 1).
    levels: Vec<Level>,
}

#[derive(Clone, Debug)]
struct Level {
    width: usize,
    height: usize,
    texels: Vec<Vec3>,
    /// `1 / width` and `1 / height`, for wrapping texel indices without a division.
    per_size: [f64; 2],
}

impl Level {
    fn new(width: usize, height: usize, texels: Vec<Vec3>) -> Level {
        Level { width, height, texels, per_size: [1.0 / width as f64, 1.0 / height as f64] }
    }

    /// Whether this base level of a cube texture is one image that every face shows (else
    /// six faces stacked), as `mjr_uploadTexture` tells them apart.
    fn is_one_cube_face(&self) -> bool {
        self.height < 6 * self.width
    }

    /// Bilinear lookup at (s, t) in texel units, wrapping (2D) or clamping (cube faces).
    fn bilinear(&self, s: f64, t: f64, wrap: bool) -> Vec3 {
        bilinear(&self.texels, self.width, self.height, s, t, wrap.then_some(self.per_size))
    }

    /// The next mip level as Mesa's `glGenerateMipmap` makes it (a linear blit from this
    /// level): each texel a bilinear lookup, clamped at the edges, at its centre mapped into
    /// this level. For even sizes that is the 2 × 2 box average; for odd ones (a 255-texel
    /// texture) the lookups drift across the texels, so that thin bright lines stay bright
    /// in the small levels, as they do in MuJoCo's renderer under OSMesa.
    fn half(&self) -> Level {
        let (w, h) = ((self.width / 2).max(1), (self.height / 2).max(1));
        let (sx, sy) = (self.width as f64 / w as f64, self.height as f64 / h as f64);
        let mut texels = Vec::with_capacity(w * h);
        for y in 0..h {
            for x in 0..w {
                let (s, t) = ((x as f64 + 0.5) * sx, (y as f64 + 0.5) * sy);
                texels.push(self.bilinear(s, t, false));
            }
        }
        Level::new(w, h, texels)
    }

    /// The next level of a cube texture (six square faces stacked): each face halved alone.
    fn half_faces(&self) -> Level {
        let side = self.width;
        let faces: Vec<Level> =
            self.texels.chunks_exact(side * side).map(|f| Level::new(side, side, f.to_vec()).half()).collect();
        let w = faces[0].width;
        Level::new(w, 6 * w, faces.into_iter().flat_map(|f| f.texels).collect())
    }
}

/// log₂ of `x` > 0 to within 0.01: the exponent, and the mantissa's by a quadratic (a mip
/// level needs no more, and `log2` was a tenth of a frame).
#[inline]
fn log2_approx(x: f64) -> f64 {
    let bits = x.to_bits();
    let exponent = ((bits >> 52) & 0x7ff) as f64 - 1023.0;
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    exponent + (-0.344_845 * m + 2.024_658) * m - 1.674_873
}

/// Bilinear lookup at (s, t) in texel units in a `width` × `height` image, wrapping
/// (`wrap`: `1 / width` and `1 / height`) or clamping at its edges.
fn bilinear(texels: &[Vec3], width: usize, height: usize, s: f64, t: f64, wrap: Option<[f64; 2]>) -> Vec3 {
    let (x, y) = (s - 0.5, t - 0.5);
    let (x0, y0) = (x.floor(), y.floor());
    let (fx, fy) = ((x - x0) as f32, (y - y0) as f32);
    // The texel at or before the sample and the one after it, wrapped or clamped.
    let pair = |i: f64, n: usize, axis: usize| -> (usize, usize) {
        if let Some(per_size) = wrap {
            let a = wrap_index(i, n, per_size[axis]);
            (a, if a + 1 == n { 0 } else { a + 1 })
        } else {
            let i = i as i64;
            (i.clamp(0, n as i64 - 1) as usize, (i + 1).clamp(0, n as i64 - 1) as usize)
        }
    };
    let (xa, xb) = pair(x0, width, 0);
    let (ya, yb) = pair(y0, height, 1);
    let at = |x: usize, y: usize| texels[y * width + x];
    let top = at(xa, ya).lerp(at(xb, ya), fx);
    let bottom = at(xa, yb).lerp(at(xb, yb), fx);
    top.lerp(bottom, fy)
}

/// Whole `i` (a texel index, any sign) modulo `n` (`per_n` = 1 / n), without a division (a
/// repeated texture's coordinates run far past one repeat, and this runs four times per
/// lookup): `i - k·n` is exact for whole numbers below 2⁵³, and a `k` off by one from
/// rounding is corrected.
#[inline]
fn wrap_index(i: f64, n: usize, per_n: f64) -> usize {
    let n = n as f64;
    if (0.0..n).contains(&i) {
        return i as usize;
    }
    let mut a = i - (i * per_n).floor() * n;
    if a < 0.0 {
        a += n;
    } else if a >= n {
        a -= n;
    }
    a as usize
}

/// The sRGB transfer function's inverse (IEC 61966-2-1), as OpenGL applies it to an sRGB
/// texture's texels.
pub(crate) fn srgb_to_linear(c: f32) -> f32 {
    if c <= 0.04045 { c / 12.92 } else { ((c + 0.055) / 1.055).powf(2.4) }
}

impl Sampler {
    /// The sampler of `texture` (grey-scale textures lit as grey; alpha is not used). An sRGB
    /// texture is linearised texel by texel, as OpenGL decodes a `GL_SRGB8` texture (the mip
    /// levels are then averaged in linear light, as `glGenerateMipmap` does for one).
    pub fn new(texture: &Texture) -> Sampler {
        let n = texture.nchannel.max(1);
        let decode: [f32; 256] = std::array::from_fn(|b| {
            let c = b as f32 / 255.0;
            if texture.srgb { srgb_to_linear(c) } else { c }
        });
        let texels = texture
            .data
            .chunks_exact(n)
            .map(|p| {
                let c = |i: usize| decode[p[i.min(n - 1).min(if n >= 3 { 2 } else { 0 })] as usize];
                Vec3::new(c(0), c(1), c(2))
            })
            .collect();
        let base = Level::new(texture.width.max(1), texture.height.max(1), texels);
        let mut levels = vec![base];
        // A cube texture given as one image is that image on every face (`mjr_uploadTexture`),
        // mipmapped as a 2D image is.
        let one_image_cube = texture.kind != TextureKind::TwoD && levels[0].is_one_cube_face();
        if texture.kind == TextureKind::TwoD || one_image_cube {
            while levels.last().is_some_and(|l| l.width > 1 || l.height > 1) {
                let next = levels.last().map(Level::half).expect("a level");
                levels.push(next);
            }
        } else if levels[0].height == 6 * levels[0].width {
            // Cube faces are mipmapped too (`glGenerateMipmap(GL_TEXTURE_CUBE_MAP)`).
            while levels.last().is_some_and(|l| l.width > 1) {
                let next = levels.last().map(Level::half_faces).expect("a level");
                levels.push(next);
            }
        }
        Sampler { kind: texture.kind, levels }
    }

    /// How the texture is mapped.
    pub fn kind(&self) -> TextureKind {
        self.kind
    }

    /// A 2D lookup at texture coordinates (s, t) (one repeat per unit), for a pixel whose
    /// footprint spans `footprint` texture units: trilinear between the two nearest levels.
    pub fn sample_2d(&self, s: f64, t: f64, footprint: f64) -> Vec3 {
        let base = &self.levels[0];
        let texels = footprint * base.width.max(base.height) as f64;
        self.trilinear(texels, |l| l.bilinear(s * l.width as f64, t * l.height as f64, true))
    }

    /// `at` of the two levels nearest a footprint of `texels` texels of level 0, blended
    /// (`GL_LINEAR_MIPMAP_LINEAR`).
    fn trilinear(&self, texels: f64, at: impl Fn(&Level) -> Vec3) -> Vec3 {
        let lod = if texels > 1.0 { log2_approx(texels).min((self.levels.len() - 1) as f64) } else { 0.0 };
        let (l0, frac) = (lod.floor() as usize, (lod - lod.floor()) as f32);
        let a = at(&self.levels[l0]);
        if frac > 0.0 && l0 + 1 < self.levels.len() { a.lerp(at(&self.levels[l0 + 1]), frac) } else { a }
    }

    /// A cube-map lookup along `r` (OpenGL's face selection; faces stacked +X, −X, +Y, −Y,
    /// +Z, −Z, each `width` × `width`) for a pixel that spans `angle` radians of directions:
    /// trilinear between the two nearest levels, as `GL_LINEAR_MIPMAP_LINEAR` samples it.
    pub fn sample_cube(&self, r: DVec3, angle: f64) -> Vec3 {
        let (ax, ay, az) = (r.x.abs(), r.y.abs(), r.z.abs());
        let (face, sc, tc, ma) = if ax >= ay && ax >= az {
            if r.x >= 0.0 { (0, -r.z, -r.y, ax) } else { (1, r.z, -r.y, ax) }
        } else if ay >= az {
            if r.y >= 0.0 { (2, r.x, r.z, ay) } else { (3, r.x, -r.z, ay) }
        } else if r.z >= 0.0 {
            (4, r.x, -r.y, az)
        } else {
            (5, -r.x, -r.y, az)
        };
        if ma <= 0.0 {
            return Vec3::ZERO;
        }
        let side = self.levels[0].width;
        let (u, v) = ((sc / ma + 1.0) / 2.0, (tc / ma + 1.0) / 2.0);
        // A face coordinate changes by (|r| / ma)² per radian at most (at the face's edge).
        let stretch = r.length_squared() / (ma * ma);
        let texels = angle * stretch * side as f64 / 2.0;
        if self.levels[0].is_one_cube_face() {
            // A cube texture given as one image: all faces show it, each mipmapped.
            return self.trilinear(texels, |l| l.bilinear(u * l.width as f64, v * l.height as f64, false));
        }
        self.trilinear(texels, |l| {
            let side = l.width;
            let face_texels = &l.texels[face * side * side..(face + 1) * side * side];
            bilinear(face_texels, side, side, u * side as f64, v * side as f64, None)
        })
    }
}

#[cfg(test)]
mod tests {
    use glint_core::{Texture, TextureKind};

    #[test]
    fn texel_indices_wrap_as_the_euclidean_remainder() {
        for n in [1usize, 2, 3, 7, 64, 255, 256, 4096] {
            for i in (-100_000i64..100_000).step_by(7).chain([i64::from(i32::MIN), 1 << 40, -(1 << 40) - 3]) {
                let wrapped = super::wrap_index(i as f64, n, 1.0 / n as f64);
                assert_eq!(wrapped, i.rem_euclid(n as i64) as usize, "{i} mod {n}");
            }
        }
    }

    #[test]
    fn srgb_textures_are_linearised_and_linear_ones_are_not() {
        let texture =
            |srgb| Texture { kind: TextureKind::TwoD, width: 1, height: 1, nchannel: 3, data: vec![128, 0, 255], srgb };
        let linear = super::Sampler::new(&texture(false)).sample_2d(0.5, 0.5, 0.0);
        assert!((linear.x - 128.0 / 255.0).abs() < 1e-6 && linear.y == 0.0 && linear.z == 1.0, "{linear}");
        let srgb = super::Sampler::new(&texture(true)).sample_2d(0.5, 0.5, 0.0);
        // sRGB 128 is 21.6 % linear light; the ends stay where they are.
        assert!((srgb.x - 0.2158).abs() < 1e-3 && srgb.y == 0.0 && (srgb.z - 1.0).abs() < 1e-6, "{srgb}");
    }

    #[test]
    fn a_cube_texture_of_one_image_is_mipmapped_on_every_face() {
        // A black-and-white checkerboard of single texels, as one image.
        let side = 64;
        let data = (0..side * side).flat_map(|i| [if (i % side + i / side) % 2 == 0 { 255u8 } else { 0 }; 3]).collect();
        let texture = Texture { kind: TextureKind::Cube, width: side, height: side, nchannel: 3, data, srgb: false };
        let sampler = super::Sampler::new(&texture);
        for dir in
            [glam::DVec3::new(1.0, 0.13, -0.27), glam::DVec3::new(0.21, -1.0, 0.37), glam::DVec3::new(0.3, -0.2, 1.0)]
        {
            // A pixel spanning many texels sees their average, as GL_LINEAR_MIPMAP_LINEAR does.
            let far = sampler.sample_cube(dir, 0.5);
            assert!((far.x - 0.5).abs() < 0.02, "{dir}: {far}");
        }
        // A pixel within one texel, at its centre, sees that texel.
        let centre = 1.0 / side as f64;
        let texel = sampler.sample_cube(glam::DVec3::new(1.0, centre, centre), 1e-4);
        assert!(texel.x < 0.02 || texel.x > 0.98, "a texel centre: {texel}");
    }

    #[test]
    fn log2_approx_is_close() {
        for x in [1.0, 1.5, 2.0, 3.7, 100.0, 1e6] {
            assert!((super::log2_approx(x) - f64::log2(x)).abs() < 0.01, "{x}");
        }
    }
}
