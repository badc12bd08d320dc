//! The one error type of glint-record, phrased for the person who asked for the recording or
//! the file.

use std::path::PathBuf;

use thiserror::Error;

/// Why a recording could not be written, read or checked.
#[derive(Debug, Error, Clone, PartialEq)]
#[non_exhaustive]
pub enum RecordError {
    /// An image could not be drawn or written.
    #[error("cannot write the image '{path}': {reason}")]
    Image {
        /// The image file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// A file or folder could not be created, written, read or renamed.
    #[error("cannot {action} '{path}': {reason}")]
    Io {
        /// What glint was doing ("create", "write", "read", "rename", ...).
        action: &'static str,
        /// The file or folder.
        path: PathBuf,
        /// The operating system's reason.
        reason: String,
    },
    /// A file is not a Parquet file, or is damaged or cut short.
    #[error("'{path}' is not a readable Parquet file: {reason}")]
    Parquet {
        /// The file.
        path: PathBuf,
        /// What the Parquet reader or writer reported.
        reason: String,
    },
    /// A Parquet file does not hold glint's lidar columns (a foreign file, or one whose
    /// schema does not match its sidecar).
    #[error("'{path}' does not have glint's lidar schema: {reason}")]
    Schema {
        /// The file.
        path: PathBuf,
        /// Which column is missing, extra or of the wrong type.
        reason: String,
    },
    /// A JSON file of the session (sidecar, `info.json`, `episodes.jsonl`) is missing or
    /// malformed.
    #[error("'{path}' is not a valid glint {what}: {reason}")]
    Json {
        /// The file.
        path: PathBuf,
        /// "sidecar", "session info" or "episode log".
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The folder is not a recording session.
    #[error("'{path}' is not a glint recording session: {reason}")]
    NotASession {
        /// The folder.
        path: PathBuf,
        /// What is missing.
        reason: String,
    },
    /// A sensor index past the end of the session's sensors.
    #[error("lidar sensor {index} is not recorded in this session ({count} sensors are)")]
    NoSuchSensor {
        /// The requested index.
        index: usize,
        /// How many sensors the session records.
        count: usize,
    },
    /// Two sensors would write files of the same name.
    #[error(
        "lidar sensors {first} and {second} would both record to files named 'lidar-{name}-NNN.parquet': give the bindings distinct names"
    )]
    DuplicateName {
        /// The earlier sensor.
        first: usize,
        /// The later sensor.
        second: usize,
        /// The sanitised name they share.
        name: String,
    },
    /// An episode index was begun twice in one session.
    #[error("episode {index} is already recorded in this session ('{path}' exists)")]
    EpisodeExists {
        /// The episode index.
        index: u32,
        /// A file of that episode that is already there.
        path: PathBuf,
    },
    /// A tick handed to the recorder does not fit the sensor it names.
    #[error("cannot record a tick of lidar sensor {sensor}: {reason}")]
    Tick {
        /// The sensor index.
        sensor: usize,
        /// What does not fit.
        reason: String,
    },
    /// A session setting is unusable.
    #[error("invalid session setting: {0}")]
    Setting(String),
    /// A recorded file no longer matches its sidecar (hash, rows or columns).
    #[error("'{path}' does not match its sidecar: {reason} (`glint replay` runs the session's self-check)")]
    Changed {
        /// The file.
        path: PathBuf,
        /// What differs.
        reason: String,
    },
    /// A lidar file has no pose table (sessions of format version 1 recorded none).
    #[error(
        "'{path}' has no pose table (the session was recorded before glint recorded sensor poses, format version 1): record the session again to export it"
    )]
    NoPoses {
        /// The lidar file.
        path: PathBuf,
    },
    /// A source file of an export is missing or damaged.
    #[error(
        "'{}' cannot be exported: {reason}; pass --skip-damaged to export the rest (augmentation.json then lists what was skipped)",
        path.display()
    )]
    Damaged {
        /// The source file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// An export's output folder exists; variants are never overwritten.
    #[error("'{path}' already exists: a variant is never overwritten; choose another output folder or remove it")]
    VariantExists {
        /// The folder.
        path: PathBuf,
    },
    /// A file's rows contradict the rest of the session (a row without a pose, a beam the
    /// sensor does not have).
    #[error("'{path}' does not fit its session: {reason}")]
    Inconsistent {
        /// The file.
        path: PathBuf,
        /// What does not fit.
        reason: String,
    },
}

impl RecordError {
    /// An I/O error on `path` while doing `action`.
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, e: std::io::Error) -> RecordError {
        RecordError::Io { action, path: path.into(), reason: e.to_string() }
    }

    /// A Parquet error on `path`.
    pub(crate) fn parquet(path: impl Into<PathBuf>, e: impl std::fmt::Display) -> RecordError {
        RecordError::Parquet { path: path.into(), reason: e.to_string() }
    }

    /// A schema problem in `path`.
    pub(crate) fn schema(path: impl Into<PathBuf>, reason: impl Into<String>) -> RecordError {
        RecordError::Schema { path: path.into(), reason: reason.into() }
    }
}
