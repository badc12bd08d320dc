//! The live view: a run's ROS 2 messages on the Foxglove WebSocket protocol (the `foxglove`
//! crate's server, subprotocol `foxglove.sdk.v1`), so Foxglove or Lichtblick shows the point
//! clouds, the frames and the cameras while the simulation runs. Channels carry the messages
//! of the MCAP files (`cdr`, `ros2msg` schemas); world 0's episodes are shown. The server
//! listens on loopback unless told otherwise; nothing is encoded for a topic no client is
//! subscribed to.

use std::collections::BTreeMap;
use std::sync::Arc;

use foxglove::{ChannelBuilder, Context, PartialMetadata, RawChannel, Schema, WebSocketServer, WebSocketServerHandle};

use glint_sim::Simulation;

use crate::InteropError;
use crate::export::CloudSplit;
use crate::live::{Destination, LiveOutput, MessageSink};
use crate::msgs::MessageType;

/// A running live view.
pub struct LiveView {
    context: Arc<Context>,
    server: Option<WebSocketServerHandle>,
    port: u16,
}

impl LiveView {
    /// Starts the server on `host:port` (port 0: any free one).
    pub fn start(host: &str, port: u16) -> Result<LiveView, InteropError> {
        let context = Context::new();
        let server = WebSocketServer::new()
            .name(concat!("glint ", env!("CARGO_PKG_VERSION")))
            .context(&context)
            .bind(host, port)
            .start_blocking()
            .map_err(|e| InteropError::Setting(format!("cannot start the live view on {host}:{port}: {e}")))?;
        let port = server.port();
        Ok(LiveView { context, server: Some(server), port })
    }

    /// The port it listens on.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Clients connected now.
    pub fn clients(&self) -> usize {
        self.server.as_ref().map_or(0, |s| s.client_count())
    }

    /// The destination of a run's messages on this view (world 0).
    pub fn destination(&self) -> Box<dyn Destination> {
        Box::new(ViewChannels { context: self.context.clone(), channels: Arc::new(BTreeMap::new()) })
    }

    /// The output that shows `sim`'s world 0 on this view: its clouds per revolution in their
    /// drivers' layouts (and in glint's, with every colour-by field, on
    /// `/<lidar>/points/glint`), `/tf` with the body tree, its cameras.
    pub fn output(&self, sim: &Simulation) -> Result<LiveOutput, InteropError> {
        LiveOutput::build(self.destination(), sim, (None, CloudSplit::Revolution), true)
    }
}

impl Drop for LiveView {
    fn drop(&mut self) {
        if let Some(server) = self.server.take() {
            // Closes the clients' connections and stops listening.
            drop(server.stop());
        }
    }
}

/// The view's channels, one per topic announced.
struct ViewChannels {
    context: Arc<Context>,
    channels: Arc<BTreeMap<String, Arc<RawChannel>>>,
}

impl Destination for ViewChannels {
    fn announce(&mut self, topics: &[(String, MessageType)]) -> Result<(), InteropError> {
        let mut channels = BTreeMap::new();
        for (topic, kind) in topics {
            let schema = Schema::new(kind.name(), "ros2msg", kind.definition().into_bytes());
            let channel = ChannelBuilder::new(topic.as_str())
                .context(&self.context)
                .message_encoding("cdr")
                .schema(schema)
                .build_raw()
                .map_err(|e| InteropError::Setting(format!("cannot open the live view's channel '{topic}': {e}")))?;
            channels.insert(topic.clone(), channel);
        }
        self.channels = Arc::new(channels);
        Ok(())
    }

    fn open(&mut self, world: usize, _index: u32) -> Result<Option<Box<dyn MessageSink>>, InteropError> {
        Ok((world == 0).then(|| Box::new(ViewSink { channels: self.channels.clone() }) as Box<dyn MessageSink>))
    }
}

/// World 0's messages to the view's channels.
struct ViewSink {
    channels: Arc<BTreeMap<String, Arc<RawChannel>>>,
}

impl MessageSink for ViewSink {
    fn wants(&self, topic: &str) -> bool {
        self.channels.get(topic).is_some_and(|c| c.has_sinks())
    }

    fn send(&mut self, topic: &str, _kind: MessageType, time_ns: u64, data: &[u8]) -> Result<(), InteropError> {
        if let Some(channel) = self.channels.get(topic) {
            channel.log_with_meta(data, PartialMetadata { log_time: Some(time_ns) });
        }
        Ok(())
    }

    /// Clients connect at any time: `/tf_static` is sent again with every tick.
    fn latches(&self) -> bool {
        false
    }
}
