//! The one error type of glint-record, phrased for the person who asked for the recording or
//! the file.

use std::path::{Path, PathBuf};

use thiserror::Error;

/// What to tell someone whose recording stopped while writing `path`, from what the session
/// holds: with an episode left `.partial`, which session to `glint recover`; with nothing
/// in progress, that there is nothing to salvage; outside a session, nothing (`None`).
fn recover_advice(path: &Path) -> Option<String> {
    let session = path.ancestors().skip(1).find(|d| d.join("meta").is_dir())?;
    Some(if has_partial_episode(session) {
        format!(
            "run `glint recover {}` to salvage the episode in progress up to its last complete row group (finished episodes are intact)",
            session.display()
        )
    } else {
        format!("no episode was in progress, so there is nothing to salvage in '{}'", session.display())
    })
}

/// Whether the session at `dir` holds a `.parquet.partial` lidar file.
fn has_partial_episode(dir: &Path) -> bool {
    let list = |d: &Path| std::fs::read_dir(d).into_iter().flatten().flatten().map(|e| e.path()).collect::<Vec<_>>();
    list(&dir.join("data")).iter().flat_map(|chunk| list(chunk)).any(|f| {
        let name = f.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        name.starts_with("lidar-") && name.ends_with(".parquet.partial") && !name.contains(".poses.")
    })
}

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
    /// The disk filled while a file was written. The episode in progress is cut short, and
    /// stays salvageable by `glint recover` up to its last complete row group; finished
    /// episodes are intact.
    #[error("cannot {action} '{path}': no space left on device. {advice}")]
    NoSpace {
        /// What glint was doing ("write", "create", ...).
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What to do: free space, then `glint recover` the session.
        advice: String,
    },
    /// A file being recorded could not be written (other than for a full disk).
    #[error("cannot write '{path}': {reason}. {advice}")]
    Write {
        /// The file.
        path: PathBuf,
        /// What the writer reported.
        reason: String,
        /// What to do: `glint recover` the session.
        advice: String,
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
    /// Another process is recording or salvaging the session (or, for a salvage, reading it).
    #[error("cannot {verb} the session '{path}' now: {reason}")]
    InUse {
        /// What was refused: "recover", "export".
        verb: &'static str,
        /// The session folder.
        path: PathBuf,
        /// Who holds it and what to do.
        reason: String,
    },
    /// Another process is exporting into the same output folder right now.
    #[error(
        "'{path}' is being exported by another glint right now: a variant is never overwritten, so wait for that export and use its result, or choose another output folder"
    )]
    VariantBusy {
        /// The folder.
        path: PathBuf,
    },
    /// An output file cannot be written where it was asked for.
    #[error("cannot write '{path}': {reason}")]
    Output {
        /// The output path.
        path: PathBuf,
        /// Why, and what to do.
        reason: String,
    },
    /// A salvage log (a row-group journal, a pose log) is empty or damaged: what a full disk
    /// or a kill leaves as the log is created.
    #[error("'{path}' is not a usable {what}: {reason}")]
    Log {
        /// The log.
        path: PathBuf,
        /// "row-group journal" or "pose log".
        what: &'static str,
        /// What is wrong with it.
        reason: String,
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
    /// An I/O error on `path` while doing `action`; a full disk is [`RecordError::NoSpace`].
    pub(crate) fn io(action: &'static str, path: impl Into<PathBuf>, e: std::io::Error) -> RecordError {
        let path = path.into();
        if e.kind() == std::io::ErrorKind::StorageFull {
            let advice = match recover_advice(&path) {
                Some(a) => format!("Free space on that disk; {a}"),
                None => "Free space on that disk, or write elsewhere".to_string(),
            };
            return RecordError::NoSpace { action, path, advice };
        }
        RecordError::Io { action, path, reason: e.to_string() }
    }

    /// A failed write of the recording file `path` (the Parquet writer's error `e`).
    pub(crate) fn write(path: impl Into<PathBuf>, e: impl std::fmt::Display) -> RecordError {
        let path = path.into();
        let advice = match recover_advice(&path) {
            Some(a) => format!("The recording stopped: {a}"),
            None => "Nothing was written there".to_string(),
        };
        RecordError::Write { path, reason: e.to_string(), advice }
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
