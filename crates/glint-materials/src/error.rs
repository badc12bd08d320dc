//! The one error type of glint-materials, phrased for the person who authored the material
//! or asked for the bake.

use thiserror::Error;

/// Why a material, a bake or its settings were rejected.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum MaterialError {
    /// A numeric field was outside its range (or not finite).
    #[error("{what} field `{field}` is {}, outside its range {range}", glint_core::readable(*value))]
    OutOfRange {
        /// "material" or "bake".
        what: &'static str,
        /// Field name as in the manifest.
        field: &'static str,
        /// The rejected value.
        value: f64,
        /// The allowed range, in words.
        range: &'static str,
    },
    /// Two things contradict each other (a bake's geoms and the scene's).
    #[error("{0}")]
    Conflict(String),
    /// A name that becomes part of a file name (a bake's) uses characters a file name cannot.
    #[error("{what} '{name}' is not usable: {rule}")]
    InvalidName {
        /// What kind of name.
        what: &'static str,
        /// The name given.
        name: String,
        /// What a valid name looks like.
        rule: &'static str,
    },
    /// A material bake file could not be written or read: missing, truncated, corrupt
    /// (checksum mismatch), not a bake at all (no `LVXB` magic), or written by a newer glint.
    #[error("material bake '{}': {reason}", path.display())]
    Bake {
        /// The bake file.
        path: std::path::PathBuf,
        /// What is wrong with it, in words.
        reason: String,
    },
    /// The poses handed to a bake are not those of the scene (a bug in the caller).
    #[error(transparent)]
    Core(#[from] glint_core::CoreError),
    /// An unknown name or index for an enumerated setting (a preset, a metal).
    #[error(transparent)]
    Spelling(#[from] glint_core::SpellingError),
}
