//! `glint replay SESSION --live`: a recorded episode played back over the Foxglove WebSocket
//! protocol with a time cursor. The episode's messages are those of `glint export --format
//! mcap` (written to a scratch file and read back in time order); the server declares the
//! episode's time range and the `PlaybackControl` capability, so Foxglove and Lichtblick show
//! their playback bar: play, pause, seek and speed are the client's requests, answered with
//! the playback state. Messages go out paced by simulated time (× the speed), with the
//! server's time broadcast as the cursor moves. Playback starts when the first client
//! connects; at the end it stops (`Ended`), or starts over with `looped`.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use foxglove::websocket::{PlaybackCommand, PlaybackControlRequest, PlaybackState, PlaybackStatus, ServerListener};
use foxglove::{ChannelBuilder, Context, PartialMetadata, RawChannel, Schema, WebSocketServer, WebSocketServerHandle};

use crate::InteropError;
use crate::export::{McapOptions, export_mcap};
use crate::msgs::MessageType;

/// One message of the episode.
struct Logged {
    time_ns: u64,
    topic: usize,
    data: Vec<u8>,
}

/// A recorded episode's messages, in time order.
pub struct Replay {
    episode: u32,
    topics: Vec<(String, MessageType)>,
    messages: Vec<Logged>,
}

impl Replay {
    /// Episode `episode` of `session` as the MCAP export writes it.
    pub fn load(session: &Path, episode: u32) -> Result<Replay, InteropError> {
        let scratch = std::env::temp_dir().join(format!("glint-replay-{}-{episode}", std::process::id()));
        let _ = std::fs::remove_dir_all(&scratch);
        let options = McapOptions { episodes: Some(vec![episode]), ..McapOptions::default() };
        let written = export_mcap(session, &scratch, &options);
        let read = written.and_then(|files| {
            let file = files.first().ok_or_else(|| InteropError::Setting("the export wrote no file".into()))?;
            let bytes = std::fs::read(&file.path).map_err(|e| InteropError::io("read", &file.path, e))?;
            Replay::from_mcap(&bytes, &file.path, episode)
        });
        let _ = std::fs::remove_dir_all(&scratch);
        read
    }

    fn from_mcap(bytes: &[u8], path: &Path, episode: u32) -> Result<Replay, InteropError> {
        let mut topics: Vec<(String, MessageType)> = Vec::new();
        let mut index: BTreeMap<String, usize> = BTreeMap::new();
        let mut messages = Vec::new();
        let stream = mcap::MessageStream::new(bytes).map_err(|e| InteropError::mcap(path, e))?;
        for message in stream {
            let message = message.map_err(|e| InteropError::mcap(path, e))?;
            let topic = message.channel.topic.clone();
            let k = match index.get(&topic) {
                Some(&k) => k,
                None => {
                    let schema = message.channel.schema.as_ref().map(|s| s.name.clone()).unwrap_or_default();
                    let kind = MessageType::ALL.into_iter().find(|t| t.name() == schema).ok_or_else(|| {
                        InteropError::Setting(format!("'{}' has a channel of unknown type '{schema}'", path.display()))
                    })?;
                    topics.push((topic.clone(), kind));
                    index.insert(topic, topics.len() - 1);
                    topics.len() - 1
                }
            };
            messages.push(Logged { time_ns: message.log_time, topic: k, data: message.data.into_owned() });
        }
        // Stable: messages of one time keep the file's order.
        messages.sort_by_key(|m| m.time_ns);
        Ok(Replay { episode, topics, messages })
    }

    /// The episode played.
    pub fn episode(&self) -> u32 {
        self.episode
    }

    /// Messages in the episode.
    pub fn messages(&self) -> usize {
        self.messages.len()
    }

    /// The first and last message times, nanoseconds of simulated time.
    pub fn span(&self) -> (u64, u64) {
        let first = self.messages.first().map_or(0, |m| m.time_ns);
        (first, self.messages.last().map_or(first, |m| m.time_ns))
    }

    /// Serves the episode on `host:port` (0: any free port) until `stop` is set; `listening`
    /// is told the port once clients can connect.
    pub fn serve(
        self,
        (host, port): (&str, u16),
        looped: bool,
        stop: &AtomicBool,
        listening: impl FnOnce(u16),
    ) -> Result<(), InteropError> {
        let (start, end) = self.span();
        let context = Context::new();
        let cursor = Arc::new(Mutex::new(Cursor::new(start)));
        let server = WebSocketServer::new()
            .name(concat!("glint replay ", env!("CARGO_PKG_VERSION")))
            .context(&context)
            .bind(host, port)
            .playback_time_range(start, end)
            .capabilities([foxglove::websocket::Capability::Time])
            .listener(Arc::new(Controls {
                cursor: cursor.clone(),
                times: self.messages.iter().map(|m| m.time_ns).collect(),
            }))
            .start_blocking()
            .map_err(|e| InteropError::Setting(format!("cannot start the replay's server on {host}:{port}: {e}")))?;
        let channels = self.channels(&context)?;
        listening(server.port());
        self.play(&server, &channels, &cursor, looped, stop);
        drop(server.stop());
        Ok(())
    }

    fn channels(&self, context: &Arc<Context>) -> Result<Vec<Arc<RawChannel>>, InteropError> {
        self.topics
            .iter()
            .map(|(topic, kind)| {
                ChannelBuilder::new(topic.as_str())
                    .context(context)
                    .message_encoding("cdr")
                    .schema(Schema::new(kind.name(), "ros2msg", kind.definition().into_bytes()))
                    .build_raw()
                    .map_err(|e| InteropError::Setting(format!("cannot open the replay's channel '{topic}': {e}")))
            })
            .collect()
    }

    /// The playback loop: sends what is due at the cursor's time, every few milliseconds.
    fn play(
        &self,
        server: &WebSocketServerHandle,
        channels: &[Arc<RawChannel>],
        cursor: &Mutex<Cursor>,
        looped: bool,
        stop: &AtomicBool,
    ) {
        let (start, end) = self.span();
        let mut last = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(5));
            let now = Instant::now();
            let mut c = cursor.lock().unwrap_or_else(PoisonError::into_inner);
            if !c.started && server.client_count() > 0 {
                c.started = true;
                c.playing = true;
            }
            if !c.playing {
                last = now;
                continue;
            }
            if std::mem::take(&mut c.resend_latched) {
                // A seek skips the latched messages before it (`/tf_static`): they go again.
                for m in self.messages[..c.next].iter().filter(|m| self.topics[m.topic].0 == "/tf_static") {
                    channels[m.topic].log_with_meta(&m.data, PartialMetadata { log_time: Some(m.time_ns) });
                }
            }
            c.time = (c.time + ((now - last).as_nanos() as f64 * c.speed as f64) as u64).min(end);
            last = now;
            while let Some(m) = self.messages.get(c.next).filter(|m| m.time_ns <= c.time) {
                channels[m.topic].log_with_meta(&m.data, PartialMetadata { log_time: Some(m.time_ns) });
                c.next += 1;
            }
            server.broadcast_time(c.time);
            if c.next == self.messages.len() {
                if looped {
                    c.seek(start, 0);
                } else {
                    c.playing = false;
                    server.broadcast_playback_state(c.state(PlaybackStatus::Ended, false, None));
                }
            }
        }
    }
}

/// Where playback stands.
struct Cursor {
    /// Simulated time shown, ns.
    time: u64,
    /// The next message to send.
    next: usize,
    playing: bool,
    speed: f32,
    /// Whether playback has begun (at the first client).
    started: bool,
    /// Whether the latched messages before the cursor are to be sent again (after a seek).
    resend_latched: bool,
}

impl Cursor {
    fn new(start: u64) -> Cursor {
        Cursor { time: start, next: 0, playing: false, speed: 1.0, started: false, resend_latched: false }
    }

    fn seek(&mut self, time: u64, next: usize) {
        self.time = time;
        self.next = next;
        self.resend_latched = true;
    }

    fn state(&self, status: PlaybackStatus, did_seek: bool, request_id: Option<String>) -> PlaybackState {
        PlaybackState { status, current_time: self.time, playback_speed: self.speed, did_seek, request_id }
    }
}

/// The clients' playback requests.
struct Controls {
    cursor: Arc<Mutex<Cursor>>,
    /// Every message's time, in order (where a seek lands).
    times: Vec<u64>,
}

impl ServerListener for Controls {
    fn on_playback_control_request(&self, request: PlaybackControlRequest) -> Option<PlaybackState> {
        let mut c = self.cursor.lock().unwrap_or_else(PoisonError::into_inner);
        c.started = true;
        if request.playback_speed.is_finite() && request.playback_speed > 0.0 {
            c.speed = request.playback_speed;
        }
        if let Some(t) = request.seek_time {
            let next = self.times.partition_point(|&m| m < t);
            c.seek(t, next);
        }
        c.playing = request.playback_command == PlaybackCommand::Play && c.next < self.times.len();
        let status = match (c.playing, c.next < self.times.len()) {
            (true, _) => PlaybackStatus::Playing,
            (false, true) => PlaybackStatus::Paused,
            (false, false) => PlaybackStatus::Ended,
        };
        Some(c.state(status, request.seek_time.is_some(), Some(request.request_id)))
    }
}
