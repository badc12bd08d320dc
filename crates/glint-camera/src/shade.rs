//! MuJoCo's classic lighting: OpenGL's fixed-function model as `mjr_render` sets it up
//! (colour material for ambient and diffuse, a local viewer, no two-sided lighting, global
//! ambient only when the scene has no light at all), evaluated per pixel.

use glam::{DVec3, Vec3};

/// The classic renderer draws at most this many lights, the headlight included.
pub const MAX_LIGHTS: usize = 8;
/// The global ambient OpenGL gets when a scene has no light at all.
pub const NO_LIGHT_AMBIENT: f32 = 0.3;

/// A light as the renderer sees it, in the world frame.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Light {
    /// MuJoCo's `mjtLightType`: 0 spot, 1 directional; others (point, image) give no light in
    /// the classic renderer.
    pub light_type: i32,
    /// Position.
    pub pos: DVec3,
    /// Unit direction it shines along.
    pub dir: DVec3,
    /// Ambient colour.
    pub ambient: Vec3,
    /// Diffuse colour.
    pub diffuse: Vec3,
    /// Specular colour.
    pub specular: Vec3,
    /// Constant, linear and quadratic attenuation (spots).
    pub attenuation: [f32; 3],
    /// Spot cutoff, degrees.
    pub cutoff: f32,
    /// Spot exponent.
    pub exponent: f32,
    /// Whether it casts shadows.
    pub castshadow: bool,
}

/// What a world may set of a light besides the scene's values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LightPlacement {
    /// MuJoCo's `mjtLightType`.
    pub light_type: i32,
    /// Position, world frame.
    pub pos: DVec3,
    /// Unit direction, world frame.
    pub dir: DVec3,
    /// Diffuse colour.
    pub diffuse: [f32; 3],
    /// Whether it casts shadows.
    pub castshadow: bool,
}

impl Light {
    /// Light `i` of `scene` placed as `at` says, its other values the scene's.
    pub fn of_scene(scene: &glint_core::Scene, i: usize, at: LightPlacement) -> Light {
        Light {
            light_type: at.light_type,
            pos: at.pos,
            dir: at.dir,
            ambient: Vec3::from_array(scene.light_ambient[i]),
            diffuse: Vec3::from_array(at.diffuse),
            specular: Vec3::from_array(scene.light_specular[i]),
            attenuation: scene.light_attenuation[i],
            cutoff: scene.light_spot[i][0],
            exponent: scene.light_spot[i][1],
            castshadow: at.castshadow,
        }
    }

    /// Every active light of `scene` in world `w`, where `poses` put it, as the model
    /// compiled it.
    pub fn scene_lights(scene: &glint_core::Scene, poses: &glint_core::Poses, w: usize) -> Vec<Light> {
        let n = scene.nlight();
        (0..n)
            .filter(|&i| scene.light_active[i])
            .map(|i| {
                let at = LightPlacement {
                    light_type: scene.light_type[i],
                    pos: poses.light_xpos[w * n + i],
                    dir: poses.light_xdir[w * n + i],
                    diffuse: scene.light_diffuse[i],
                    castshadow: scene.light_castshadow[i],
                };
                Light::of_scene(scene, i, at)
            })
            .collect()
    }
}

/// What a surface is made of, from its geom and material.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Surface {
    /// Colour (ambient and diffuse reflectance).
    pub color: Vec3,
    /// Specular reflectance (grey).
    pub specular: f32,
    /// Phong exponent (MuJoCo's shininess × 128).
    pub shininess: f32,
    /// Emission, as a share of the colour.
    pub emission: f32,
}

impl Light {
    /// MuJoCo's headlight: a directional light at the camera along its view.
    pub fn headlight(pos: DVec3, forward: DVec3, ambient: Vec3, diffuse: Vec3, specular: Vec3) -> Light {
        Light {
            light_type: 1,
            pos,
            dir: forward,
            ambient,
            diffuse,
            specular,
            attenuation: [1.0, 0.0, 0.0],
            cutoff: 180.0,
            exponent: 0.0,
            castshadow: false,
        }
    }

    /// Whether the classic renderer lights with it at all.
    pub fn lights(&self) -> bool {
        matches!(self.light_type, 0 | 1)
    }

    /// The unit direction from `p` toward the light, and how far the light is (infinite for
    /// a directional light).
    #[inline]
    pub fn toward(&self, p: DVec3) -> (DVec3, f64) {
        if self.light_type == 1 {
            (-self.dir, f64::INFINITY)
        } else {
            let d = self.pos - p;
            let len = d.length();
            (if len > 0.0 { d / len } else { -self.dir }, len)
        }
    }

    /// The light's contribution at `p` (unit normal `n`, unit direction to the viewer `v`)
    /// on `surface`, before texturing: [`Lamp::contribution`].
    pub fn contribution(&self, p: DVec3, n: DVec3, v: DVec3, surface: &Surface) -> Vec3 {
        Lamp::new(*self).contribution(p, n, v, surface)
    }
}

/// A light ready to shade many points: what every lookup would otherwise work out again (its
/// unit direction and the cosine of its spot cutoff) worked out once.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Lamp {
    light: Light,
    unit_dir: DVec3,
    cos_cutoff: f32,
}

impl std::ops::Deref for Lamp {
    type Target = Light;

    fn deref(&self) -> &Light {
        &self.light
    }
}

impl Lamp {
    pub(crate) fn new(light: Light) -> Lamp {
        Lamp { light, unit_dir: light.dir.normalize_or_zero(), cos_cutoff: light.cutoff.to_radians().cos() }
    }

    /// Whether a spot light shines nowhere along `l` (the unit direction toward it from a
    /// point): the point lies outside its cone, where it gives no light at all.
    #[inline]
    pub(crate) fn beyond_cone(&self, l: DVec3) -> bool {
        self.light.light_type == 0 && self.light.cutoff < 180.0 && (((-l).dot(self.unit_dir)) as f32) < self.cos_cutoff
    }

    /// The light's contribution at `p` (unit normal `n`, unit direction to the viewer `v`)
    /// on `surface`, before texturing: OpenGL's attenuation × spot × (ambient + diffuse +
    /// specular).
    #[inline]
    pub(crate) fn contribution(&self, p: DVec3, n: DVec3, v: DVec3, surface: &Surface) -> Vec3 {
        let light = &self.light;
        if !light.lights() {
            return Vec3::ZERO;
        }
        let (l, dist) = light.toward(p);
        if self.beyond_cone(l) {
            return Vec3::ZERO;
        }
        let mut scale = 1.0f32;
        if light.light_type == 0 {
            let [c, lin, q] = light.attenuation.map(f64::from);
            let att = c + lin * dist + q * dist * dist;
            scale = if att > 0.0 { (1.0 / att) as f32 } else { 1.0 };
            if light.cutoff < 180.0 {
                let cos = (-l).dot(self.unit_dir);
                scale *= power(cos.max(0.0) as f32, light.exponent);
            }
        }
        let ndl = n.dot(l);
        let mut c = light.ambient * surface.color;
        if ndl > 0.0 {
            c += light.diffuse * surface.color * ndl as f32;
            if surface.specular > 0.0 && light.specular != Vec3::ZERO {
                let ndh = n.dot((l + v).normalize_or_zero()).max(0.0) as f32;
                // Below 1 − 7 / shininess the highlight is under e⁻⁷ of the light's specular:
                // less than a unit of 8-bit colour, so the power is not worth taking.
                if ndh > 0.0 && ndh >= 1.0 - 7.0 / surface.shininess.max(7.0) {
                    c += light.specular * surface.specular * power(ndh, surface.shininess);
                }
            }
        }
        c * scale
    }
}

/// `x^y` for `x` in [0, 1]: by multiplications when `y` is a small whole number (MJCF's
/// spot exponents usually are), else `powf`.
#[inline]
fn power(x: f32, y: f32) -> f32 {
    if y == 0.0 {
        1.0
    } else if y.fract() == 0.0 && (1.0..=64.0).contains(&y) {
        x.powi(y as i32)
    } else {
        x.powf(y)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn white() -> Surface {
        Surface { color: Vec3::ONE, specular: 0.0, shininess: 0.0, emission: 0.0 }
    }

    #[test]
    fn directional_light_is_lambertian() {
        let l = Light::headlight(DVec3::ZERO, DVec3::NEG_Z, Vec3::ZERO, Vec3::splat(0.8), Vec3::ZERO);
        let up = l.contribution(DVec3::ZERO, DVec3::Z, DVec3::Z, &white());
        assert!((up.x - 0.8).abs() < 1e-6);
        let tilted = l.contribution(DVec3::ZERO, DVec3::new(0.0, 0.6, 0.8), DVec3::Z, &white());
        assert!((tilted.x - 0.64).abs() < 1e-6);
        let away = l.contribution(DVec3::ZERO, DVec3::NEG_Z, DVec3::Z, &white());
        assert_eq!(away, Vec3::ZERO);
    }

    #[test]
    fn spot_cutoff_exponent_and_attenuation() {
        let spot = Light {
            light_type: 0,
            pos: DVec3::new(0.0, 0.0, 2.0),
            dir: DVec3::NEG_Z,
            ambient: Vec3::ZERO,
            diffuse: Vec3::ONE,
            specular: Vec3::ZERO,
            attenuation: [1.0, 0.0, 0.25],
            cutoff: 45.0,
            exponent: 2.0,
            castshadow: true,
        };
        // Straight below: 1 / (1 + 0.25·4) = 0.5.
        let below = spot.contribution(DVec3::ZERO, DVec3::Z, DVec3::Z, &white());
        assert!((below.x - 0.5).abs() < 1e-6, "{below}");
        // Outside the 45° cone: nothing, not even ambient.
        let outside = spot.contribution(DVec3::new(3.0, 0.0, 0.0), DVec3::Z, DVec3::Z, &white());
        assert_eq!(outside, Vec3::ZERO);
        // A point light is not drawn by the classic renderer.
        let point = Light { light_type: 2, ..spot };
        assert_eq!(point.contribution(DVec3::ZERO, DVec3::Z, DVec3::Z, &white()), Vec3::ZERO);
    }
}
