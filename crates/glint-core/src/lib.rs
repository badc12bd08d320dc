//! glint-core: the immutable [`Scene`], per-world [`Poses`], and ray casting that gives
//! MuJoCo's `mj_ray` answers through a two-level bounding volume hierarchy.
//!
//! Nothing here does I/O or calls C: `glint-mujoco` fills a [`Scene`] and [`Poses`] from
//! MuJoCo, and every sensor casts through a [`RayCaster`].
#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod bvh;
mod did_you_mean;
mod error;
mod extract;
mod geom;
mod hfield;
mod isa;
mod lanes;
mod mesh;
mod model_arrays;
mod packet;
mod poses;
mod primitives;
mod raycast;
mod scene;
mod shapes;
mod skin;
mod skin_surface;
mod spelling;
mod texture;
mod values;
mod variant;

pub use crate::{
    bvh::{Aabb, Bvh},
    did_you_mean::nearest_name,
    error::CoreError,
    extract::textures_from_arrays,
    geom::GeomType,
    hfield::Hfield,
    isa::lane_isa,
    mesh::Mesh,
    model_arrays::{ArraySource, ArraySpec, Element, MODEL_ARRAYS, ModelArrays, ModelCounts, Visual},
    poses::{Poses, TendonSegment, mat_from_mujoco},
    primitives::intersect_primitive,
    raycast::{
        Cast, CastOne, HitsMut, NGROUP, Origins, PreparedRays, RayBatch, RayCaster, RayFilter, RayHit, RayHits,
        WorldTopLevel,
    },
    scene::Scene,
    shapes::Shapes,
    skin::{PosedSkin, Skin, SkinBone},
    skin_surface::{SkinHit, SkinSurface, barycentric, nearest_skin, skin_blocks},
    spelling::{Spelled, SpellingError},
    texture::{Texture, TextureKind},
    values::{Exact, readable, struct_fields},
    variant::{AssetEdit, EditTarget, Variant},
};
