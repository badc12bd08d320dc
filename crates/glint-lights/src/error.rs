//! Why a rig cannot be read or translated.

use std::path::PathBuf;

use thiserror::Error;

/// A rig that cannot be read or translated, phrased for the person who wrote it.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum LightsError {
    /// The rig file cannot be read.
    #[error("cannot read light rig '{path}': {reason}")]
    Read {
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        reason: String,
    },
    /// An error inside a rig file.
    #[error("light rig '{path}': {error}")]
    File {
        /// The file.
        path: PathBuf,
        /// What is wrong inside it.
        error: Box<LightsError>,
    },
    /// Not valid TOML or JSON, or a value of the wrong type.
    #[error("not a valid light rig: {message}")]
    Parse {
        /// The parser's message.
        message: String,
    },
    /// A light's field is missing, unknown for its type or out of range.
    #[error("[[lights]] {index}: {message}")]
    Field {
        /// The light's index in the rig.
        index: usize,
        /// What is wrong and what to write instead.
        message: String,
    },
    /// Two lights of the rig share a name (USD needs one prim per light too).
    #[error(
        "[[lights]] {first} and {second} are both named `{name}`: light names must be unique within a rig; rename one"
    )]
    DuplicateName {
        /// The shared name.
        name: String,
        /// The first light's index.
        first: usize,
        /// The second light's index.
        second: usize,
    },
}
