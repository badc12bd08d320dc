//! glint-mujoco: the only crate that calls MuJoCo's C engine (through `mujoco-rs`). It loads
//! MJCF, extracts glint's immutable [`glint_core::Scene`], steps batches of worlds in
//! parallel and refreshes their [`glint_core::Poses`], and exposes MuJoCo's own `mj_ray` and
//! `mj_multiRay` as the reference that glint's ray caster is tested and benchmarked against.
#![deny(missing_docs)]

mod batch;
mod error;
mod model;
mod reference;

pub use batch::WorldBatch;
pub use error::MujocoError;
pub use model::Model;
pub use reference::MujocoRays;
