//! Where a depth sensor's own light goes along one pixel's ray, read from the NIR materials
//! (`spec/depth-sensors.md`): the surfaces it returns from, how strongly, and what the
//! device's triangulation would match. Glass and water pass it on (a little glint from the
//! pane), foliage splits it between leaf and gap, mirrors (and glass that reflects more than
//! it passes, as low-E glass does at 905 nm) fold it into a virtual image.

use glam::DVec3;
use glint_materials::{Continuation, NirMaterial};

/// How many surfaces a path passes at most.
const MAX_SURFACES: usize = 4;
/// A retroreflector's return relative to a white matte surface head-on (≈: sheeting returns
/// about ten times more toward a co-located emitter than a Lambertian white).
const RETRO_GAIN: f64 = 10.0;
/// The narrowest glint lobe, radians: even a polished surface is not a perfect mirror at
/// the pixel's scale.
const MIN_SLOPE: f64 = 0.05;
/// A glint counts only above this return (reflectivity units at 1 m), so the tails of a
/// mirror's lobe make no holes.
const GLINT_MIN: f64 = 0.01;

/// One surface the light returns from.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Echo {
    /// Path length from the sensor, metres (folded paths included).
    pub range: f64,
    /// Return strength: reflectivity × cos θ / r², with glints, retroreflection and what
    /// was lost on the way.
    pub strength: f64,
    /// The surface's geom (−1: a skin).
    pub geom: i32,
    /// Whether a specular glint outshines the diffuse return there.
    pub glint: bool,
}

/// A path's returns, held inline (a path is followed for every pixel of every frame).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Echoes {
    items: [Echo; MAX_SURFACES],
    len: usize,
}

impl Echoes {
    fn push(&mut self, echo: Echo) {
        if self.len < MAX_SURFACES {
            self.items[self.len] = echo;
            self.len += 1;
        }
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn iter(&self) -> std::slice::Iter<'_, Echo> {
        self.items[..self.len].iter()
    }
}

impl std::ops::Index<usize> for Echoes {
    type Output = Echo;

    fn index(&self, i: usize) -> &Echo {
        &self.items[..self.len][i]
    }
}

/// The first surface met, as the debug channels report it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FirstSurface {
    pub material: NirMaterial,
    pub cos: f64,
}

/// What one pixel's light meets.
#[derive(Clone, Debug, Default)]
pub(crate) struct Path {
    /// Every return, in the order met.
    pub echoes: Echoes,
    /// The echo a triangulating device matches: the surface the path ends on, or the leaf a
    /// foliage draw kept it on.
    pub matched: Option<usize>,
    pub first: Option<FirstSurface>,
    /// Range of the first transparent surface (glass, water, foliage), metres; 0: none.
    pub transparent_range: f64,
    /// Share of the return lost behind transparent surfaces.
    pub suppression: f64,
    /// Range at which the path leaves the pixel's straight ray (a fold or its end): the point
    /// a second viewpoint must see.
    pub straight_range: f64,
}

/// A surface hit: distance along a unit direction, geom, normal.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Hit {
    pub dist: f64,
    pub geom: i32,
    pub normal: DVec3,
}

/// The diffuse (with retroreflection) and glint parts of a surface's return toward a
/// co-located emitter and receiver at incidence cosine `cos`, at 1 m.
pub(crate) fn surface_return(m: &NirMaterial, cos: f64) -> (f64, f64) {
    let (rho, retro, metal) = (f64::from(m.reflectivity), f64::from(m.retroreflective), f64::from(m.metalness));
    let diffuse = (1.0 - metal) * rho * ((1.0 - retro) * cos + retro * RETRO_GAIN);
    let slope = m.slope().max(MIN_SLOPE);
    // Back toward the sensor, a microfacet surface with Beckmann facets of RMS slope σ
    // reflects F0·D(θ)/(4 cos² θ) (D = exp(−tan²θ/σ²)/(π σ² cos⁴θ)); times π cos θ, on
    // the diffuse term's scale: F0·exp(−tan²θ/σ²)/(4 σ² cos⁵θ). Head-on a matte surface
    // (σ 1) adds F0/4, a polished one (σ 0.05) a glint a hundred times F0. None past 6σ.
    let cos = cos.abs().max(1e-3);
    // Two divisions, not four: this runs for every sub-pixel ray.
    let per_cos2 = (cos * cos).recip();
    let tan2 = per_cos2 - 1.0;
    let s2 = slope * slope;
    if tan2 > 36.0 * s2 {
        return (diffuse, 0.0);
    }
    let per_s2 = s2.recip();
    let per_cos5 = per_cos2 * per_cos2 * per_cos2 * cos;
    (diffuse, f64::from(m.f0) * (-tan2 * per_s2).exp() * 0.25 * per_s2 * per_cos5)
}

/// The return of an opaque surface of material `m` (geom `geom`) met at incidence cosine
/// `cos`, `range` metres from the sensor, the light not dimmed on the way.
pub(crate) fn opaque_echo(m: &NirMaterial, cos: f64, range: f64, geom: i32) -> Echo {
    let (diffuse, glint) = surface_return(m, cos);
    Echo { range, strength: (diffuse + glint) / (range * range), geom, glint: glint > diffuse + GLINT_MIN }
}

/// Follows the light from `origin` along unit `dir`, which first meets `first` (material
/// `first_material`); `material` gives a geom's NIR material and `cast` the next surface from
/// a point (passing through one geom). `gap` is a uniform draw in [0, 1) for this pixel and
/// frame: a foliage surface of transmission T keeps the match on its leaf when `gap ≥ T`.
pub(crate) fn follow(
    (origin, dir): (DVec3, DVec3),
    (first, first_material): (Hit, NirMaterial),
    material: &dyn Fn(i32) -> NirMaterial,
    cast: &dyn Fn(DVec3, DVec3, i32) -> Option<Hit>,
    gap: f64,
) -> Path {
    let mut path = Path::default();
    let (mut pos, mut dir, mut hit, mut m) = (origin, dir, first, first_material);
    let (mut range, mut weight, mut through, mut absorption) = (0.0, 1.0, 1.0, 0.0);
    let mut straight = true;
    for _ in 0..MAX_SURFACES {
        range += hit.dist;
        weight *= (-2.0 * absorption * hit.dist).exp();
        absorption = 0.0;
        let point = pos + dir * hit.dist;
        let normal = hit.normal.normalize_or_zero();
        let cos = normal.dot(dir).abs();
        if path.first.is_none() {
            path.first = Some(FirstSurface { material: m, cos });
        }
        let (diffuse, glint) = surface_return(&m, cos);
        let at = |share: f64| share / (range * range);
        let echo = |strength: f64| Echo { range, strength, geom: hit.geom, glint: glint > diffuse + GLINT_MIN };
        let t = f64::from(m.transmission);
        match m.continuation {
            Continuation::Opaque => {
                path.echoes.push(echo(at(weight * (diffuse + glint))));
                path.matched.get_or_insert(path.echoes.len() - 1);
                break;
            }
            Continuation::Porous => {
                path.echoes.push(echo(at(weight * (1.0 - t) * (diffuse + glint))));
                mark_transparent(&mut path, range);
                if gap >= t {
                    path.matched.get_or_insert(path.echoes.len() - 1);
                    if straight {
                        path.straight_range = range;
                        straight = false;
                    }
                }
                weight *= t;
                through *= t;
            }
            Continuation::Slab | Continuation::Medium => {
                path.echoes.push(echo(at(weight * glint)));
                mark_transparent(&mut path, range);
                let f0 = f64::from(m.f0);
                if m.continuation == Continuation::Slab && f0 > t * t {
                    // Reflects more than it passes: a mirror to the sensor.
                    weight *= f0 * f0;
                    (dir, straight) = fold(&mut path, dir, normal, range, straight);
                } else {
                    weight *= t * t;
                    through *= t * t;
                    if m.continuation == Continuation::Medium {
                        absorption = f64::from(m.absorption);
                    }
                }
            }
            Continuation::Specular => {
                path.echoes.push(echo(at(weight * glint)));
                let f0 = f64::from(m.f0);
                weight *= f0 * f0;
                (dir, straight) = fold(&mut path, dir, normal, range, straight);
            }
        }
        pos = point;
        let skip = hit.geom;
        match cast(pos, dir, skip) {
            Some(next) => {
                m = material(next.geom);
                hit = next;
            }
            None => break,
        }
    }
    if straight {
        path.straight_range = path.matched.map_or(range, |i| path.echoes[i].range);
    }
    path.suppression = 1.0 - through;
    // The path that leaves the scene after a leaf draw keeps the leaf; otherwise a path
    // with no surface to end on matches nothing.
    path
}

/// Notes the first transparent surface's range.
fn mark_transparent(path: &mut Path, range: f64) {
    if path.transparent_range == 0.0 {
        path.transparent_range = range;
    }
}

/// The direction after a mirror of `normal` folds `dir`; the path stops being straight at
/// `range` if it still was.
fn fold(path: &mut Path, dir: DVec3, normal: DVec3, range: f64, straight: bool) -> (DVec3, bool) {
    if straight {
        path.straight_range = range;
    }
    (dir - 2.0 * dir.dot(normal) * normal, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use glint_materials::MaterialPreset;

    /// A corridor along +x: surfaces at x = 1, 2, 3 (geoms 0, 1, 2), facing −x.
    fn along_x() -> impl Fn(DVec3, DVec3, i32) -> Option<Hit> {
        |pos: DVec3, dir: DVec3, skip: i32| {
            (0..3)
                .filter(|&g| g != skip)
                .map(|g| (g, (g as f64 + 1.0 - pos.x) / dir.x))
                .filter(|&(_, d)| d > 1e-9 && d.is_finite())
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .map(|(g, d)| Hit { dist: d, geom: g, normal: DVec3::NEG_X })
        }
    }

    fn run(materials: [NirMaterial; 3], gap: f64) -> Path {
        let cast = along_x();
        let first = cast(DVec3::ZERO, DVec3::X, -1).unwrap();
        follow((DVec3::ZERO, DVec3::X), (first, materials[0]), &|g| materials[g as usize], &cast, gap)
    }

    #[test]
    fn a_matte_wall_returns_reflectivity_over_range_squared() {
        let wall = MaterialPreset::Diffuse.material();
        let path = run([wall; 3], 0.5);
        assert_eq!(path.echoes.len(), 1);
        let e = path.echoes[0];
        assert!((e.strength - (0.5 + 0.04 / 4.0)).abs() < 1e-9 && e.range == 1.0, "{e:?}");
        assert_eq!((path.matched, path.straight_range, path.transparent_range), (Some(0), 1.0, 0.0));
    }

    #[test]
    fn glass_passes_its_share_twice_and_keeps_a_pane_echo() {
        let (glass, wall) = (MaterialPreset::ClearFloatGlass.material(), MaterialPreset::Diffuse.material());
        let path = run([glass, wall, wall], 0.5);
        assert_eq!(path.echoes.len(), 2);
        let t2 = 0.71f64 * 0.71;
        assert!((path.echoes[1].strength - t2 * 0.51 / 4.0).abs() < 1e-6, "{path:?}");
        assert!((path.suppression - (1.0 - t2)).abs() < 1e-6);
        assert_eq!((path.matched, path.transparent_range, path.straight_range), (Some(1), 1.0, 2.0));
        assert!(path.echoes[0].glint, "head-on, the pane glints");
    }

    #[test]
    fn foliage_keeps_the_leaf_or_the_gap_by_the_draw() {
        let (leaf, wall) = (MaterialPreset::Vegetation.material(), MaterialPreset::Diffuse.material());
        let on_leaf = run([leaf, wall, wall], 0.9);
        let in_gap = run([leaf, wall, wall], 0.1);
        assert_eq!((on_leaf.matched, in_gap.matched), (Some(0), Some(1)));
        assert_eq!(on_leaf.echoes.len(), 2, "both return to a time-of-flight sensor");
    }

    #[test]
    fn mirrors_and_low_e_glass_fold_the_path() {
        let mirror = MaterialPreset::Mirror.material();
        // Head-on, the mirror folds the light straight back: no wall in reach (it casts
        // toward −x from x = 1 and meets nothing).
        let path = run([mirror, MaterialPreset::Diffuse.material(), MaterialPreset::Diffuse.material()], 0.5);
        assert_eq!(path.matched, None);
        assert_eq!(path.straight_range, 1.0);
        let low_e = MaterialPreset::LowEGlass.material();
        let path = run([low_e, MaterialPreset::Diffuse.material(), MaterialPreset::Diffuse.material()], 0.5);
        assert_eq!(path.matched, None, "low-E glass reflects: the wall behind it is not seen");
    }
}
