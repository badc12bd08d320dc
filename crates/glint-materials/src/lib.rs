//! glint-materials: what every sensor reads of a scene's surfaces, owned by no one sensor
//! (`DESIGN.md`, "Materials"). Near-infrared materials per MuJoCo material ([`NirMaterial`],
//! its twelve [`MaterialPreset`]s, a [`MaterialTable`]), material bakes that give a hit on
//! collision geometry the visual surface's material ([`Bake`], behind [`MaterialLookup`]),
//! and the counter-based random streams keyed by (episode seed, sensor, tick, beam or pixel)
//! with the one episode-seed rule ([`episode_seed`], [`BeamRng`]). The lidars' return model
//! and the cameras' depth both read them.
//!
//! ```
//! use glint_materials::{BeamRng, MaterialPreset, episode_seed};
//!
//! let glass = MaterialPreset::ClearFloatGlass.material();
//! assert!(glass.transmission > 0.7);
//! // Episode 3 of run seed 7, sensor 1, tick 10: pixel 42's stream, the same on every thread.
//! let seed = episode_seed(7, 3);
//! let a = BeamRng::tick_key(seed, 1, 10).beam(42).uniform();
//! let b = BeamRng::new(seed, 1, 42, 10).uniform();
//! assert_eq!(a, b);
//! ```
#![deny(missing_docs)]
#![forbid(unsafe_code)]

mod bake;
mod error;
mod lookup;
mod material;
mod random;
mod ziggurat;

pub use bake::{
    BAKE_DIR, BAKE_FORMAT_VERSION, Bake, BakeRequest, BakeSettings, BakeStatus, bake_path, material_fingerprint,
    scene_fingerprint,
};
pub use error::MaterialError;
pub use glint_core::{Spelled, SpellingError};
pub use lookup::MaterialLookup;
pub use material::{Continuation, MaterialPreset, MaterialTable, Metal, NirMaterial};
pub use random::{BeamRng, TickKey, episode_seed};
pub use ziggurat::{ZIGGURAT, Ziggurat};
