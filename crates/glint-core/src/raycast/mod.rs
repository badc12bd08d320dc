//! Ray queries with `mj_ray`'s semantics over a two-level acceleration structure: the
//! bottom level (one BVH per mesh and per height field) lives in the [`Scene`]; the top level
//! (one BVH per world over the geoms' world bounds) lives here and is refitted after each
//! step. Planes are infinite and tested outside the top level.
//!
//! [`Scene`]: crate::Scene

mod batch;
mod batched;
mod caster;
mod dispatch;
mod filter;
mod hits;
mod one_ray;
mod packet_walk;
mod prepared;
mod query;
mod runs;
#[cfg(test)]
mod tests;

pub use batch::RayBatch;
pub use caster::{RayCaster, WorldTopLevel};
pub use filter::{NGROUP, RayFilter};
pub use hits::{HitsMut, RayHit, RayHits};
pub use prepared::{Cast, CastOne, Origins, PreparedRays};
