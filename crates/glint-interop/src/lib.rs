//! glint's recordings in the formats other robotics tools read: ROS 2 messages (CDR, written
//! by glint) in MCAP files that Foxglove, Lichtblick, Rerun and `ros2 bag play` open, from a
//! recorded session (`glint export --format mcap`, [`export_mcap`]) or while a run goes on
//! (`glint run --mcap`, [`LiveOutput`]), and the same messages on a live view over the
//! Foxglove WebSocket protocol (`--live`, [`LiveView`]), or played back from a recording with
//! a time cursor (`glint replay --live`, [`Replay`]); and as a LeRobot v3.0 dataset
//! (`glint export --format lerobot`, [`export_lerobot`]).
//!
//! The point clouds copy the field layouts of the real units' ROS 2 drivers ([`PointLayout`]);
//! the messages' definitions are ROS 2 Jazzy's ([`MessageType`]).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

mod bag;
mod bench;
mod camera;
mod cdr;
mod clouds;
mod error;
mod export;
mod layout;
mod lerobot;
mod live;
mod mounts;
mod msgs;
mod replay;
mod view;

pub use bag::{Bag, CHUNK_BYTES, McapSalvage, partial_path, recover_mcap, recover_session_mcap};
pub use bench::{LiveBench, LiveReport, McapBench, McapReport, bench_live, bench_mcap};
pub use cdr::Cdr;
pub use error::InteropError;
pub use export::{CloudSplit, McapEpisode, McapOptions, export_mcap, ros_name};
pub use layout::{LidarPoint, PointLayout};
pub use lerobot::{LEROBOT_VERSION, LeRobotExport, LeRobotOptions, export_lerobot};
pub use live::{Destination, LiveOutput, MessageSink};
pub use msgs::{Datatype, MessageType, PointField, Transform, nanoseconds};
pub use replay::Replay;
pub use view::LiveView;

/// The message encoders, one per ROS 2 type glint writes.
pub mod messages {
    pub use crate::msgs::{PointCloud2, camera_info, compressed_image, image, tf_message};
}
