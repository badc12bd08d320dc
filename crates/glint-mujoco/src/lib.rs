//! glint-mujoco: the only crate that calls MuJoCo's C engine (through `mujoco-rs`). It loads
//! MJCF, extracts glint's immutable [`glint_core::Scene`], steps batches of worlds in
//! parallel and refreshes their [`glint_core::Poses`], and exposes MuJoCo's own `mj_ray` and
//! `mj_multiRay` as the reference that glint's ray caster is tested and benchmarked against.
//!
//! ```
//! use glam::DVec3;
//! use glint_core::{RayBatch, RayCaster, RayFilter};
//! use glint_mujoco::{Model, MujocoRays, WorldBatch};
//!
//! let xml = r#"<mujoco><worldbody>
//!     <geom type="plane" size="5 5 0.1"/>
//!     <body pos="2 0 1"><freejoint/><geom type="box" size="0.5 0.5 0.5"/></body>
//! </worldbody></mujoco>"#;
//! let model = Model::from_xml_str(xml)?;
//! let mut worlds = WorldBatch::new(&model, 2)?;
//! let mut caster = RayCaster::new(model.scene(), worlds.poses());
//! worlds.step(100); // the box falls onto the plane in both worlds
//! caster.refit(worlds.poses());
//!
//! let dirs = [DVec3::X, DVec3::NEG_Z];
//! let batch = RayBatch { nray: 2, pnt: &[DVec3::new(0.0, 0.0, 0.5)], vec: &dirs, bodyexclude: &[] };
//! let hits = caster.rays(model.scene(), worlds.poses(), &batch, &RayFilter::default())?;
//! assert_eq!(hits.geomid[0], 1); // the box, straight ahead
//! assert_eq!(hits.geomid[1], 0); // the plane, below
//! let mujoco = worlds.mj_ray(0, batch.pnt[0], dirs[0], &RayFilter::default(), -1);
//! assert!((hits.dist[0] - mujoco.dist).abs() < 1e-9);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![deny(missing_docs)]

mod batch;
mod error;
mod lights;
mod malloc;
mod model;
mod physics;
mod priority;
mod reference;
mod sensors;
mod tendons;
mod variants;

pub use batch::WorldBatch;
pub use error::MujocoError;
pub use lights::LitScene;
pub use malloc::settle_malloc;
pub use model::{Headlight, Joint, JointKind, Model};
pub use physics::{PhysicsFields, model_array};
pub use priority::lower_thread_priority;
pub use reference::MujocoRays;
pub use sensors::{Cutoff, RAY_FIELDS, Rangefinder, Rangefinders, SkippedRangefinder};
pub use variants::{SceneSpec, VariantModel};
