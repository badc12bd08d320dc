//! glint-server: `glint serve`, the hazel.rpc gRPC services of LuckyEngine's API over one
//! [`glint_sim::Simulation`], so that its Python client (`luckyrobots`) works unchanged. The
//! simulation runs on its own thread ([`Engine`]) at a [`Pace`]; `LidarService` reads scans
//! from a snapshot of the last completed tick, which the loop copies when it is read (readers
//! of one tick share it), and `AgentService.Step` drives it in lockstep. Proto types stay in this crate: the services translate to and from
//! `glint-sim`'s calls. `docs/grpc.md` lists what is served.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

/// Writes one line to standard error, and never panics (`eprintln!` does when standard error
/// is closed, which would stop the simulation loop).
macro_rules! say {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}
pub(crate) use say;

mod agent;
pub mod bench;
mod camera;
mod codec;
mod engine;
mod error;
mod extensions;
mod lidar;
mod scan;
mod serve;
mod size;
#[cfg(test)]
mod tests;
mod unserved;

/// The hazel.rpc messages and services, generated from `proto/`.
#[allow(missing_docs, clippy::all, clippy::pedantic)]
pub mod proto {
    tonic::include_proto!("hazel.rpc");

    /// The plain scan message (the services answer with [`crate::ScanAnswer`]).
    pub use crate::scan::LidarScanResponse;

    /// glint's own extensions (`proto/glint.proto`, package `glint.rpc`).
    pub mod glint {
        tonic::include_proto!("glint.rpc");
    }

    /// The encoded descriptor set of every `.proto` file, for reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/hazel_rpc_descriptor.bin"));
}

pub use engine::{AddedOutput, Engine, EngineOptions, EngineStats, OutputMaker, Pace, Snapshot};
pub use error::ServerError;
pub use lidar::TICK_METADATA;
pub use scan::{ScanAnswer, SharedScan};
pub use serve::{DEFAULT_ADDR, DEFAULT_MAX_MESSAGE, SERVER_NICE, ServeOptions, ServeSummary, serve, server_runtime};
pub use unserved::{served_paths, served_summary};
