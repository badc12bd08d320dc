//! glint-core: the immutable [`Scene`], per-world [`Poses`], and ray casting that gives
//! MuJoCo's `mj_ray` answers through a two-level bounding volume hierarchy.
//!
//! Nothing here does I/O or calls C: `glint-mujoco` fills a [`Scene`] and [`Poses`] from
//! MuJoCo, and every sensor casts through a [`RayCaster`].
#![deny(missing_docs)]

mod bvh;
mod did_you_mean;
mod error;
mod geom;
mod hfield;
mod mesh;
mod packet;
mod poses;
mod primitives;
mod raycast;
mod scene;

pub use bvh::{Aabb, Bvh, inverse_direction};
pub use did_you_mean::nearest_name;
pub use error::CoreError;
pub use geom::GeomType;
pub use hfield::Hfield;
pub use mesh::Mesh;
pub use poses::Poses;
pub use poses::mat_from_mujoco;
pub use primitives::intersect_primitive;
pub use raycast::{
    Cast, CastOne, HitsMut, NGROUP, Origins, PreparedRays, RayBatch, RayCaster, RayFilter, RayHit, RayHits,
};
pub use scene::Scene;
