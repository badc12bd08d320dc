//! The shapes rays meet in one world: each geom's type, size and mesh or height field, and
//! whether `mj_ray` sees it. The scene's own values are one set; a world whose geometry was
//! randomized or swapped (MuJoCo Warp's batched `geom_size` and `geom_dataid`, per-world
//! assets) reads its own, shared by every world that agrees with it. Meshes, height fields
//! and their BVHs stay in the [`Scene`], built once for every world.

use glam::DVec3;

use crate::bvh::Aabb;
use crate::{CoreError, GeomType, Hfield, Mesh, Scene};

/// One world's geometry, by MuJoCo's names, shape `(ngeom,)` each.
#[derive(Clone, Debug, PartialEq)]
pub struct Shapes {
    /// Geom type.
    pub geom_type: Vec<GeomType>,
    /// Size parameters (MuJoCo's meaning per type).
    pub geom_size: Vec<DVec3>,
    /// Mesh or height field id into the scene's; `-1` for primitives, and for a mesh or
    /// height-field geom with no shape in this world (an empty slot rays pass through).
    pub geom_dataid: Vec<i32>,
    /// Whether `mj_ray` can see the geom (its own alpha, or its material's, is not 0).
    pub geom_visible: Vec<bool>,
}

impl Shapes {
    /// The scene's own geometry.
    pub fn of(scene: &Scene) -> Shapes {
        Shapes {
            geom_type: scene.geom_type.clone(),
            geom_size: scene.geom_size.clone(),
            geom_dataid: scene.geom_dataid.clone(),
            geom_visible: (0..scene.ngeom()).map(|g| scene.geom_visible(g)).collect(),
        }
    }

    /// Number of geoms.
    pub fn ngeom(&self) -> usize {
        self.geom_type.len()
    }

    /// Whether geom `g` has a shape rays can meet: visible, and a mesh or height field when
    /// its type asks for one.
    pub fn solid(&self, g: usize) -> bool {
        self.geom_visible[g] && (!self.geom_type[g].has_data() || self.geom_dataid[g] >= 0)
    }

    /// Bounds of geom `g` in its own frame, or `None` for planes (infinite).
    pub fn local_bounds(&self, scene: &Scene, g: usize) -> Option<Aabb> {
        local_bounds(scene, self.geom_type[g], self.geom_size[g], self.geom_dataid[g])
    }

    /// The mesh of mesh geom `g` (which must have one).
    #[inline]
    pub fn mesh<'s>(&self, scene: &'s Scene, g: usize) -> &'s Mesh {
        &scene.mesh[self.geom_dataid[g] as usize]
    }

    /// The height field of height-field geom `g` (which must have one).
    #[inline]
    pub fn hfield<'s>(&self, scene: &'s Scene, g: usize) -> &'s Hfield {
        &scene.hfield[self.geom_dataid[g] as usize]
    }

    /// An error unless the arrays have the scene's geom count, every id refers to a mesh or
    /// height field of the scene and every size is finite and not negative.
    pub fn validate(&self, scene: &Scene) -> Result<(), CoreError> {
        let n = scene.ngeom();
        for (field, len) in [
            ("geom_type", self.geom_type.len()),
            ("geom_size", self.geom_size.len()),
            ("geom_dataid", self.geom_dataid.len()),
            ("geom_visible", self.geom_visible.len()),
        ] {
            if len != n {
                return Err(CoreError::Shape { field, len, expected: format!("the scene has {n} geoms") });
            }
        }
        for g in 0..n {
            let size = self.geom_size[g];
            if !size.is_finite() || size.min_element() < 0.0 {
                return Err(CoreError::Shape {
                    field: "geom_size",
                    len: n,
                    expected: format!("geom {g} has size {size}: sizes are finite and 0 or more"),
                });
            }
            let (kind, id) = (self.geom_type[g], self.geom_dataid[g]);
            let count = match kind {
                GeomType::Mesh => scene.mesh.len() as i32,
                GeomType::Hfield => scene.hfield.len() as i32,
                _ => 0,
            };
            if id < -1 || id >= count {
                return Err(CoreError::Shape {
                    field: "geom_dataid",
                    len: n,
                    expected: if count == 0 {
                        format!("geom {g} ({}) refers to {id}: a {} takes -1", kind.name(), kind.name())
                    } else {
                        format!(
                            "geom {g} ({}) refers to {id}: use -1 (no shape) or an id from 0 to {}",
                            kind.name(),
                            count - 1
                        )
                    },
                });
            }
        }
        Ok(())
    }
}

/// Bounds in its own frame of a geom of type `kind`, size `size` and mesh or height field
/// `dataid` (which must exist for those types), or `None` for planes (infinite).
pub(crate) fn local_bounds(scene: &Scene, kind: GeomType, size: DVec3, dataid: i32) -> Option<Aabb> {
    let half = match kind {
        GeomType::Plane => return None,
        GeomType::Sphere => DVec3::splat(size.x),
        GeomType::Capsule => DVec3::new(size.x, size.x, size.x + size.y),
        GeomType::Cylinder => DVec3::new(size.x, size.x, size.y),
        GeomType::Ellipsoid | GeomType::Box => size,
        GeomType::Mesh => return Some(scene.mesh[dataid as usize].bounds()),
        GeomType::Hfield => return Some(scene.hfield[dataid as usize].bounds()),
    };
    Some(Aabb::from_center_half(DVec3::ZERO, half))
}
