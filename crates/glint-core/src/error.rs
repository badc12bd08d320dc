//! The one error type of glint-core, phrased for the person who passed the bad input.

use thiserror::Error;

/// Why a scene or a ray query was rejected.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum CoreError {
    /// A ray query held no rays.
    #[error("the ray query holds no rays: pass at least one origin and direction")]
    NoRays,
    /// A ray direction was NaN, infinite or too short to define a direction.
    #[error(
        "ray {index} has direction ({x}, {y}, {z}), which is not a finite non-zero vector: give every ray a direction of non-zero length"
    )]
    BadDirection {
        /// Index of the ray in the query (world-major).
        index: usize,
        /// The direction's x component.
        x: f64,
        /// The direction's y component.
        y: f64,
        /// The direction's z component.
        z: f64,
    },
    /// A ray origin was NaN or infinite.
    #[error("ray {index} starts at ({x}, {y}, {z}), which is not a finite point")]
    BadOrigin {
        /// Index of the ray in the query (world-major).
        index: usize,
        /// The origin's x component.
        x: f64,
        /// The origin's y component.
        y: f64,
        /// The origin's z component.
        z: f64,
    },
    /// The model has a geom glint cannot cast rays against.
    #[error(
        "geom {geom} ('{name}') is {}, which glint cannot ray-cast (SDF geoms, shapes defined by a plugin, are not supported); remove it or give it a primitive or mesh type",
        geom_kind_words(*kind)
    )]
    UnsupportedGeom {
        /// Geom id.
        geom: usize,
        /// Geom name.
        name: String,
        /// MuJoCo's `mjtGeom` value.
        kind: i32,
    },
    /// A model array glint reads is missing or unreadable.
    #[error(
        "the model's `{field}` cannot be read: {reason}; glint reads mjModel's arrays by name (mujoco 3.x and 4.x have them all)"
    )]
    MissingArray {
        /// `mjModel`'s name for it.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// An array had a shape that does not fit the query.
    #[error("{field} has {len} entries, but {expected}")]
    Shape {
        /// Name of the array.
        field: &'static str,
        /// Its length.
        len: usize,
        /// What was expected, in words.
        expected: String,
    },
    /// A cast's reach was not a positive distance.
    #[error("a cast's reach must be a positive distance in units of the ray's direction, not {reach}")]
    BadReach {
        /// The reach given.
        reach: f64,
    },
    /// A world index was past the end of the batch.
    #[error("world {world} does not exist (the batch has {nworld} worlds)")]
    NoSuchWorld {
        /// The requested world.
        world: usize,
        /// How many worlds exist.
        nworld: usize,
    },
    /// A mesh or height field could not be used for ray casting.
    #[error("{kind} '{name}' is invalid: {reason}")]
    BadShape {
        /// "mesh" or "height field".
        kind: &'static str,
        /// Its name in the model.
        name: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// MuJoCo's geom type `kind` in words, for errors.
fn geom_kind_words(kind: i32) -> String {
    // mjGEOM_SDF
    if kind == 8 { format!("an SDF geom (MuJoCo geom type {kind})") } else { format!("of MuJoCo geom type {kind}") }
}
