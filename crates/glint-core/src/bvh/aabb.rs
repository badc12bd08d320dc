//! Axis-aligned boxes, the only shape a BVH knows, and the slab test's inverse direction.

use glam::DVec3;

/// An axis-aligned box. An empty box has `min > max` on every axis.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Aabb {
    /// Lower corner.
    pub min: DVec3,
    /// Upper corner.
    pub max: DVec3,
}

impl Aabb {
    /// The box that contains nothing; the identity of [`Aabb::union`].
    pub(crate) const EMPTY: Aabb = Aabb { min: DVec3::splat(f64::INFINITY), max: DVec3::splat(f64::NEG_INFINITY) };

    /// A box from its center and half-extents.
    #[inline]
    pub fn from_center_half(center: DVec3, half: DVec3) -> Self {
        Aabb { min: center - half, max: center + half }
    }

    /// The smallest box holding `self` and `other`.
    #[inline]
    pub(crate) fn union(&self, other: &Aabb) -> Aabb {
        Aabb { min: self.min.min(other.min), max: self.max.max(other.max) }
    }

    /// The smallest box holding `self` and the point `p`.
    #[inline]
    pub(crate) fn grow(&self, p: DVec3) -> Aabb {
        Aabb { min: self.min.min(p), max: self.max.max(p) }
    }

    /// Center point.
    #[inline]
    pub fn center(&self) -> DVec3 {
        0.5 * (self.min + self.max)
    }

    /// Half the surface area (enough for the surface-area heuristic); 0 for an empty box.
    #[inline]
    pub(crate) fn half_area(&self) -> f64 {
        let d = (self.max - self.min).max(DVec3::ZERO);
        d.x * d.y + d.y * d.z + d.z * d.x
    }

    /// Whether `other` lies inside `self` (boundaries included).
    #[inline]
    pub(crate) fn contains(&self, other: &Aabb) -> bool {
        self.min.cmple(other.min).all() && self.max.cmpge(other.max).all()
    }

    /// The box grown on every side by a margin that covers rounding in the slab test.
    #[inline]
    pub(super) fn padded(&self) -> Aabb {
        let scale = self.min.abs().max(self.max.abs()).max_element();
        let eps = 1e-9 * scale + 1e-12;
        Aabb { min: self.min - DVec3::splat(eps), max: self.max + DVec3::splat(eps) }
    }

    /// Entry distance of the ray `origin + t * dir`, `t` in `[0, tmax]`, or `None` on a miss.
    /// `inv_dir` is `1 / dir` by component, with zero components replaced by a huge finite
    /// value of the same sign (so the slab test never computes `0 * inf`).
    #[inline(always)]
    pub fn ray_entry(&self, origin: DVec3, inv_dir: DVec3, tmax: f64) -> Option<f64> {
        let t1 = (self.min - origin) * inv_dir;
        let t2 = (self.max - origin) * inv_dir;
        let near = t1.min(t2).max_element().max(0.0);
        let far = t1.max(t2).min_element().min(tmax);
        (near <= far).then_some(near)
    }
}

/// Component-wise `1 / dir` with zero components replaced by a huge finite value, so the slab
/// test never computes `0 * inf`.
#[inline]
pub(crate) fn inverse_direction(dir: DVec3) -> DVec3 {
    let inv = |d: f64| {
        if d.abs() > 1e-300 { 1.0 / d } else { 1e300_f64.copysign(d) }
    };
    DVec3::new(inv(dir.x), inv(dir.y), inv(dir.z))
}
