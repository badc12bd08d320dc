//! What can go wrong writing another tool's format.

use std::path::{Path, PathBuf};

use glint_record::RecordError;

/// An error of an export to another tool's format; each names the file and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum InteropError {
    /// The recording could not be read.
    #[error(transparent)]
    Record(#[from] RecordError),
    /// The simulation a benchmark runs failed.
    #[error(transparent)]
    Sim(#[from] glint_sim::SimError),
    /// A file could not be read or written.
    #[error("cannot {op} '{}': {source}", path.display())]
    Io {
        /// What was being done.
        op: &'static str,
        /// The file.
        path: PathBuf,
        /// The system's error.
        source: std::io::Error,
    },
    /// The MCAP library refused a record.
    #[error("cannot write the MCAP file '{}': {reason}", path.display())]
    Mcap {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        reason: String,
    },
    /// The request does not fit the recording.
    #[error("{0}")]
    Setting(String),
}

impl InteropError {
    pub(crate) fn io(op: &'static str, path: &Path, source: std::io::Error) -> InteropError {
        let source = if source.raw_os_error() == Some(28) {
            std::io::Error::new(source.kind(), "no space left on device: free some space, or choose another --out")
        } else {
            source
        };
        InteropError::Io { op, path: path.to_path_buf(), source }
    }

    pub(crate) fn mcap(path: &Path, e: mcap::McapError) -> InteropError {
        match e {
            mcap::McapError::Io(io) => InteropError::io("write", path, io),
            e => InteropError::Mcap { path: path.to_path_buf(), reason: e.to_string() },
        }
    }
}
