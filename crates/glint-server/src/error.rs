//! The one error type of glint-server: why the server could not start or stopped.

use thiserror::Error;

/// Why `glint serve` could not start, or stopped.
#[derive(Debug, Error)]
#[non_exhaustive]
pub enum ServerError {
    /// The simulation could not be built from the manifest.
    #[error(transparent)]
    Sim(#[from] glint_sim::SimError),
    /// The simulation loop could not start.
    #[error("{0}")]
    Start(String),
    /// The address could not be listened on.
    #[error("cannot listen on {addr}: {reason}; pick a free port (or port 0 for any) with --addr")]
    Bind {
        /// The address asked for.
        addr: String,
        /// What the operating system said.
        reason: String,
    },
    /// The TLS certificate or key could not be read or used.
    #[error("TLS: {0}")]
    Tls(String),
    /// The gRPC transport failed while serving.
    #[error("the gRPC server failed: {0}")]
    Transport(String),
}
