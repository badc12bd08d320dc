//! One MCAP file of ROS 2 messages (profile `ros2`, schemas `ros2msg`, messages `cdr`),
//! written as `<name>.mcap.partial` and renamed when finished, so a file that claims to be
//! complete is complete. Chunks are zstd-compressed and written as they fill: a writer that
//! is killed leaves a `.partial` file that readers read up to its last whole chunk, and that
//! [`crate::recover_mcap`] closes.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};

use mcap::records::MessageHeader;
use mcap::{Compression, WriteOptions, Writer};

use crate::InteropError;
use crate::msgs::MessageType;

/// Uncompressed bytes per chunk: what a killed writer loses at most.
pub const CHUNK_BYTES: u64 = 4 << 20;

/// The `.partial` name a bag has while it is written.
pub fn partial_path(path: &Path) -> PathBuf {
    PathBuf::from(format!("{}.partial", path.display()))
}

/// An MCAP file being written.
pub struct Bag {
    writer: Writer<BufWriter<File>>,
    path: PathBuf,
    partial: PathBuf,
    schemas: BTreeMap<MessageType, u16>,
    channels: BTreeMap<String, (u16, u32)>,
    messages: u64,
}

impl Bag {
    /// Starts the file `path` (written as `path.partial` until [`Bag::finish`]).
    pub fn create(path: &Path) -> Result<Bag, InteropError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| InteropError::io("create", dir, e))?;
        }
        let partial = partial_path(path);
        let file = File::create(&partial).map_err(|e| InteropError::io("create", &partial, e))?;
        let writer =
            options().create(BufWriter::with_capacity(1 << 20, file)).map_err(|e| InteropError::mcap(&partial, e))?;
        Ok(Bag {
            writer,
            path: path.to_path_buf(),
            partial,
            schemas: BTreeMap::new(),
            channels: BTreeMap::new(),
            messages: 0,
        })
    }

    /// Writes one message of type `kind` on `topic`, logged and published at `time_ns`.
    pub fn write(&mut self, topic: &str, kind: MessageType, time_ns: u64, data: &[u8]) -> Result<(), InteropError> {
        let channel_id = match self.channels.get_mut(topic) {
            Some((id, _)) => *id,
            None => {
                let schema = match self.schemas.get(&kind) {
                    Some(&id) => id,
                    None => {
                        let id = self
                            .writer
                            .add_schema(kind.name(), "ros2msg", kind.definition().as_bytes())
                            .map_err(|e| InteropError::mcap(&self.partial, e))?;
                        self.schemas.insert(kind, id);
                        id
                    }
                };
                let id = self
                    .writer
                    .add_channel(schema, topic, "cdr", &channel_metadata(topic))
                    .map_err(|e| InteropError::mcap(&self.partial, e))?;
                self.channels.insert(topic.to_string(), (id, 0));
                id
            }
        };
        let entry = self.channels.get_mut(topic).expect("the channel was just added");
        let header = MessageHeader { channel_id, sequence: entry.1, log_time: time_ns, publish_time: time_ns };
        entry.1 += 1;
        self.messages += 1;
        self.writer.write_to_known_channel(&header, data).map_err(|e| InteropError::mcap(&self.partial, e))
    }

    /// Messages written so far.
    pub fn messages(&self) -> u64 {
        self.messages
    }

    /// Writes the summary and the footer and renames the file to its final name; returns it.
    pub fn finish(mut self) -> Result<PathBuf, InteropError> {
        self.writer.finish().map_err(|e| InteropError::mcap(&self.partial, e))?;
        let file = self
            .writer
            .into_inner()
            .into_inner()
            .map_err(|e| InteropError::io("write", &self.partial, e.into_error()))?;
        file.sync_all().map_err(|e| InteropError::io("write", &self.partial, e))?;
        std::fs::rename(&self.partial, &self.path).map_err(|e| InteropError::io("rename", &self.partial, e))?;
        Ok(self.path)
    }
}

/// The writer's settings: profile `ros2`, zstd chunks of [`CHUNK_BYTES`].
fn options() -> WriteOptions {
    WriteOptions::new()
        .profile("ros2")
        .library(concat!("glint ", env!("CARGO_PKG_VERSION")))
        .compression(Some(Compression::Zstd))
        .chunk_size(Some(CHUNK_BYTES))
        .compression_level(1)
}

/// Closes an MCAP file a killed writer left without its summary and footer: copies every
/// message of its whole chunks into `out` (a finished file) and returns how many; the bytes
/// after the last whole chunk are dropped.
pub fn recover_mcap(partial: &Path, out: &Path) -> Result<u64, InteropError> {
    let bytes = std::fs::read(partial).map_err(|e| InteropError::io("read", partial, e))?;
    // Not `out.partial`: that may be the file being read.
    let tmp = PathBuf::from(format!("{}.recovering", out.display()));
    let file = File::create(&tmp).map_err(|e| InteropError::io("create", &tmp, e))?;
    let mut writer =
        options().create(BufWriter::with_capacity(1 << 20, file)).map_err(|e| InteropError::mcap(&tmp, e))?;
    let mut copied = 0;
    let mut stream = mcap::MessageStream::new(&bytes).map_err(|e| InteropError::mcap(partial, e))?;
    // The stream ends with an error where the file was cut: everything before it is whole.
    for message in stream.by_ref() {
        let Ok(message) = message else { break };
        writer.write(&message).map_err(|e| InteropError::mcap(&tmp, e))?;
        copied += 1;
    }
    writer.finish().map_err(|e| InteropError::mcap(&tmp, e))?;
    drop(writer);
    std::fs::rename(&tmp, out).map_err(|e| InteropError::io("rename", &tmp, e))?;
    Ok(copied)
}

/// One MCAP file a killed `glint run --mcap` left `.partial`, as [`recover_session_mcap`]
/// found it.
#[derive(Debug)]
pub struct McapSalvage {
    /// The `.partial` file.
    pub partial: PathBuf,
    /// The finished file and the messages copied into it, or why it could not be closed (it
    /// is left as it is then).
    pub outcome: Result<(PathBuf, u64), InteropError>,
}

/// Closes every MCAP file left `.partial` in `session/mcap/` ([`recover_mcap`]), removing
/// each `.partial` that was closed; in file-name order.
pub fn recover_session_mcap(session: &Path) -> Vec<McapSalvage> {
    let Ok(entries) = std::fs::read_dir(session.join("mcap")) else { return Vec::new() };
    let mut partials: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".mcap.partial"))
        .collect();
    partials.sort();
    partials
        .into_iter()
        .map(|partial| {
            let done = partial.with_extension("");
            let outcome = recover_mcap(&partial, &done).and_then(|messages| {
                std::fs::remove_file(&partial).map_err(|e| InteropError::io("remove", &partial, e))?;
                Ok((done, messages))
            });
            McapSalvage { partial, outcome }
        })
        .collect()
}

/// rosbag2's QoS of a latched topic (reliable, transient local, as tf2's static broadcaster
/// offers it), so that `ros2 bag play` republishes `/tf_static` to late subscribers.
const LATCHED_QOS: &str = "- history: 3\n  depth: 0\n  reliability: 1\n  durability: 1\n  deadline:\n    sec: 9223372036\n    \
nsec: 854775807\n  lifespan:\n    sec: 9223372036\n    nsec: 854775807\n  liveliness: 1\n  liveliness_lease_duration:\n    \
sec: 9223372036\n    nsec: 854775807\n  avoid_ros_namespace_conventions: false\n";

/// A channel's metadata: rosbag2's `offered_qos_profiles` for `/tf_static`, none otherwise.
fn channel_metadata(topic: &str) -> BTreeMap<String, String> {
    match topic {
        "/tf_static" => BTreeMap::from([("offered_qos_profiles".to_string(), LATCHED_QOS.to_string())]),
        _ => BTreeMap::new(),
    }
}
