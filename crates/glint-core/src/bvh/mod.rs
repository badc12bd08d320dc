//! A bounding volume hierarchy that knows only boxes: built once with a binned surface-area
//! heuristic, refitted in place when the boxes move, and traversed front to back with a
//! caller's intersection closure. Used for mesh and height-field triangles (bottom level) and
//! for the geoms of one world (top level).

mod aabb;
mod build;
mod collapse;
mod nodes;
mod refit;
mod traverse;
mod tree;
mod validate;

pub use aabb::Aabb;
pub(crate) use aabb::inverse_direction;
pub(crate) use nodes::{Node4, WIDTH};
pub(crate) use traverse::{MaskedVisitor, Visitor};
pub use tree::Bvh;
