//! glint-lidar: lidar sensors on glint's ray core. A [`LidarBinding`] attaches a sensor to a
//! body or site with a [`ScanConfig`] (the seed's fields and ranges, or one of the four
//! [`ScanPreset`]s); [`Lidars`] holds every bound sensor over a batch of worlds, advances each
//! sensor's pattern by `rotation_hz × dt` per tick and casts only that slice, and keeps the
//! newest value per beam in a [`Scan`].
#![deny(missing_docs)]

mod bake;
mod config;
mod error;
mod material;
mod model;
mod params;
mod pattern;
mod scan;
mod sensor;

pub use bake::{
    BAKE_DIR, BAKE_FORMAT_VERSION, Bake, BakeRequest, BakeSettings, BakeStatus, bake_path, material_fingerprint,
};
pub use config::{
    LidarBinding, NonRepetitive, ScanConfig, ScanPattern, ScanPreset, SecondaryCapture, SecondaryScope, SelfIgnore,
};
pub use error::LidarError;
pub use material::{Continuation, MaterialPreset, MaterialTable, Metal, NirMaterial};
pub use model::{
    Beam, BeamReturn, BeamRng, LegKind, MAX_INTERACTIONS, MEDIUM_INDEX, MaterialLookup, ReturnModel, Strength, Surface,
    Tracer, drop_probability, refract, slope,
};
pub use params::{RETURN_PARAM_NAMES, ReturnParams, ReturnPreset};
pub use pattern::{angles, beam_direction};
pub use scan::{Returns, Scan, SecondaryHits};
pub use sensor::Lidars;
