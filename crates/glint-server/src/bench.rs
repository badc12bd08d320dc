//! `glint bench serve`: the server measured against its references in one process. A
//! `GetLidarScan` round trip with all four arrays against encoding and decoding the same
//! message in-process; scans per second for one and for eight clients; and the loop's tick
//! rate while served (no client; one client polling at 100 scans per second, twice a realtime
//! runner's 50 Hz; one and eight clients polling back to back) against the same loop (the
//! same simulation settings) stepped with no server at all.
//!
//! The loop rates are taken in turns: for each load, a slice of the bare loop (the server's
//! loop held meanwhile) and a slice of the served loop, in alternating order, repeated; each
//! ratio is the median of its slices' ratios, so a machine whose other work comes and goes skews both sides of a
//! ratio alike. Both loops run on threads at the process's own priority (the server's threads
//! run lower, as in `glint serve`).

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use glint_sim::{Manifest, SimOptions, Simulation};
use prost::Message;
use serde::Serialize;
use tokio::sync::oneshot;
use tonic::transport::Channel;

use crate::ServerError;
use crate::engine::{Engine, EngineOptions, Pace};
use crate::proto::agent_service_client::AgentServiceClient;
use crate::proto::lidar_service_client::LidarServiceClient;
use crate::proto::{GetLidarScanRequest, LidarScanResponse, SetLidarLiveRequest, StepRequest};
use crate::scan::{ScanAnswer, SharedScan};
use crate::serve::{DEFAULT_MAX_MESSAGE, FRAME, ServeOptions, WINDOW, serve_engine};

/// What to measure.
#[derive(Clone, Debug)]
pub struct ServeBench {
    /// The scene manifest, loaded and checked; its sensor 0 is scanned.
    pub manifest: Manifest,
    /// Scans per client per measurement (the round trip is their mean).
    pub calls: u32,
    /// Wall-clock seconds each loop-rate measurement runs.
    pub seconds: f64,
}

/// The figures, each a ratio against its reference measured in the same run.
#[derive(Clone, Debug, Serialize)]
pub struct ServeReport {
    /// The manifest.
    pub manifest: String,
    /// Beams of sensor 0.
    pub beams: usize,
    /// Bytes of one scan message with all four arrays.
    pub message_bytes: usize,
    /// `GetLidarScan` round trip, seconds (one client, one call at a time; the median of five
    /// batches' means).
    pub round_trip_s: f64,
    /// In-process encode plus decode of the same message with prost's generated code,
    /// seconds (likewise).
    pub codec_s: f64,
    /// In-process encode from the shared snapshot plus decode, as the server and the
    /// benchmark's client do them (`ScanAnswer`), seconds (likewise).
    pub glint_codec_s: f64,
    /// Round trip over codec (target: at most 3).
    pub round_trip_over_codec: f64,
    /// Scans per second, one client.
    pub scans_per_s_one_client: f64,
    /// Scans per second, eight clients together.
    pub scans_per_s_eight_clients: f64,
    /// Ticks per second of the loop with no server (free pace, lidars live; the median of its
    /// slices).
    pub ticks_per_s_alone: f64,
    /// Loop ticks per second with the server up and no client.
    pub ticks_per_s_serving_idle: f64,
    /// Loop ticks per second while one client polls 100 scans per second.
    pub ticks_per_s_serving: f64,
    /// Loop ticks per second while one client polls back to back.
    pub ticks_per_s_one_client_flat_out: f64,
    /// Loop ticks per second while eight clients poll back to back.
    pub ticks_per_s_eight_clients: f64,
    /// Served with no client, over alone (target: at least 0.95).
    pub idle_over_alone: f64,
    /// Served to a client polling 100 scans per second, over alone (target: at least 0.85).
    pub serving_over_alone: f64,
    /// One client polling back to back, over alone. The client and the server's encoding share
    /// the machine's cores with the loop, which runs its lidar tick on all of them.
    pub one_client_flat_out_over_alone: f64,
    /// Eight clients polling back to back, over alone (likewise).
    pub eight_clients_over_alone: f64,
    /// Slices of each loop-rate measurement (each ratio is the median of as many).
    pub slices: usize,
    /// Snapshots the served loop published while its rates were measured, per tick.
    pub publishes_per_tick: f64,
}

fn err(what: &str, e: impl std::fmt::Display) -> ServerError {
    ServerError::Transport(format!("{what}: {e}"))
}

/// A server on a free loopback port, with a handle on its loop.
pub(crate) struct Served {
    pub(crate) addr: SocketAddr,
    pub(crate) engine: Engine,
    stop: oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), ServerError>>,
}

impl Served {
    /// Stops the server and waits for it.
    pub(crate) async fn stop(self) -> Result<(), ServerError> {
        drop(self.engine);
        let _ = self.stop.send(());
        self.task.await.map_err(|e| err("the server task", e))?
    }
}

/// Starts a server for `manifest` at `pace`. The loop is started on this thread, which runs at
/// the process's priority, so the loop does too (as under `glint serve`).
pub(crate) async fn start(manifest: &Manifest, pace: Pace) -> Result<Served, ServerError> {
    let options = ServeOptions {
        engine: EngineOptions { manifest: manifest.clone(), nworld: 1, pace, record: None, seed: None, output: None },
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        tls: None,
        max_message: DEFAULT_MAX_MESSAGE * 16,
    };
    let started = tokio::task::block_in_place(|| Engine::start(options.engine.clone()))?;
    let engine = started.0.clone();
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    let (addr_tx, addr_rx) = oneshot::channel();
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = stop_rx.await;
        };
        serve_engine(&options, started, shutdown, move |a| {
            let _ = addr_tx.send(a);
        })
        .await
        .map(|_| ())
    });
    match addr_rx.await {
        Ok(addr) => Ok(Served { addr, engine, stop: stop_tx, task }),
        Err(_) => Err(task
            .await
            .map_err(|e| err("the server task", e))?
            .err()
            .unwrap_or_else(|| err("the server", "stopped"))),
    }
}

pub(crate) async fn channel(addr: SocketAddr) -> Result<Channel, ServerError> {
    Channel::from_shared(format!("http://{addr}"))
        .map_err(|e| err("address", e))?
        .initial_stream_window_size(WINDOW)
        .initial_connection_window_size(2 * WINDOW)
        .max_frame_size(FRAME)
        .tcp_nodelay(true)
        .connect()
        .await
        .map_err(|e| err("connect", e))
}

pub(crate) async fn client(addr: SocketAddr) -> Result<LidarServiceClient<Channel>, ServerError> {
    Ok(LidarServiceClient::new(channel(addr).await?).max_decoding_message_size(DEFAULT_MAX_MESSAGE * 16))
}

const ALL_ARRAYS: GetLidarScanRequest =
    GetLidarScanRequest { sensor: 0, material: true, want_secondary: true, want_intensity: true };

/// `calls` scans from `clients` clients at once; scans per second and the last tick seen.
async fn poll(addr: SocketAddr, clients: usize, calls: u32) -> Result<f64, ServerError> {
    let mut lidars = Vec::new();
    for _ in 0..clients {
        lidars.push(client(addr).await?);
    }
    let started = Instant::now();
    let tasks: Vec<_> = lidars
        .into_iter()
        .map(|mut c| {
            tokio::spawn(async move {
                for _ in 0..calls {
                    c.get_lidar_scan(ALL_ARRAYS).await.map_err(|e| err("GetLidarScan", e))?;
                }
                Ok::<(), ServerError>(())
            })
        })
        .collect();
    for t in tasks {
        t.await.map_err(|e| err("a client", e))??;
    }
    Ok((clients as u64 * calls as u64) as f64 / started.elapsed().as_secs_f64())
}

/// Batches of each measurement; the median is reported.
const REPEATS: usize = 5;

/// The shortest slice of a loop-rate measurement, seconds (unless `--seconds` is shorter):
/// a few hundred ticks of the showroom.
const SLICE_S: f64 = 0.25;

/// The most slices a loop-rate measurement is cut into.
const MAX_SLICES: usize = 20;

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

/// The manifest's loop with no server, set as the server sets its own: lidars live, no hit
/// points or normals kept.
fn bare_loop(manifest: &Manifest) -> Result<Simulation, ServerError> {
    let mut sim = Simulation::from_loaded(manifest.clone(), SimOptions::default())?;
    sim.set_keep_surfaces(false);
    sim.set_lidar_live(true);
    sim.step(None)?;
    Ok(sim)
}

/// Ticks per second of `sim` stepped for `seconds` on this thread.
fn bare_rate_of(sim: &mut Simulation, seconds: f64) -> Result<f64, ServerError> {
    let started = Instant::now();
    let mut ticks = 0u64;
    while ticks == 0 || started.elapsed().as_secs_f64() < seconds {
        sim.step(None)?;
        ticks += 1;
    }
    Ok(ticks as f64 / started.elapsed().as_secs_f64())
}

/// What polls the served loop during a slice.
#[derive(Clone, Copy)]
enum Load {
    /// No client.
    Idle,
    /// One client, a scan every so often.
    Every(Duration),
    /// So many clients, back to back.
    FlatOut(usize),
}

/// Ticks per second of the served loop over `seconds` while `load` polls it with `clients`.
async fn served_rate(
    engine: &Engine,
    clients: &[LidarServiceClient<Channel>],
    load: Load,
    seconds: f64,
) -> Result<f64, ServerError> {
    let (count, period) = match load {
        Load::Idle => (0, None),
        Load::Every(period) => (1, Some(period)),
        Load::FlatOut(n) => (n, None),
    };
    let first = engine.stats().ticks;
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(seconds);
    let pollers: Vec<_> = clients[..count]
        .iter()
        .cloned()
        .map(|mut c| {
            tokio::spawn(async move {
                let mut next = Instant::now();
                while Instant::now() < deadline {
                    c.get_lidar_scan(ALL_ARRAYS).await.map_err(|e| err("GetLidarScan", e))?;
                    if let Some(period) = period {
                        next += period;
                        tokio::time::sleep_until(next.into()).await;
                    }
                }
                Ok::<(), ServerError>(())
            })
        })
        .collect();
    for p in pollers {
        p.await.map_err(|e| err("a client", e))??;
    }
    tokio::time::sleep_until(deadline.into()).await;
    let ticks = engine.stats().ticks.saturating_sub(first);
    Ok(ticks as f64 / started.elapsed().as_secs_f64())
}

/// Runs the benchmark (on its own runtime).
pub fn serve_bench(options: &ServeBench) -> Result<ServeReport, ServerError> {
    // The server's runtime, as glint serve runs it (its clients share it here).
    let runtime = crate::server_runtime().map_err(|e| err("the benchmark's runtime", e))?;
    runtime.block_on(run(options))
}

async fn run(options: &ServeBench) -> Result<ServeReport, ServerError> {
    let calls = options.calls.max(1);
    // Round trips against a lockstep server, so the loop is idle while the scans are served.
    let manifest = &options.manifest;
    let served = start(manifest, Pace::Lockstep).await?;
    let addr = served.addr;
    let mut lidar = client(addr).await?;
    lidar.set_lidar_live(SetLidarLiveRequest { live: true }).await.map_err(|e| err("SetLidarLive", e))?;
    let mut agent = AgentServiceClient::new(channel(addr).await?);
    let nu = agent
        .get_agent_schema(crate::proto::GetAgentSchemaRequest::default())
        .await
        .map_err(|e| err("GetAgentSchema", e))?
        .into_inner()
        .schema
        .map_or(0, |s| s.action_size);
    let step = StepRequest { actions: vec![0.0; nu as usize], ..StepRequest::default() };
    let stepped = agent.step(step).await.map_err(|e| err("Step", e))?.into_inner();
    if !stepped.success {
        return Err(err("Step", stepped.message));
    }
    let scan = lidar.get_lidar_scan(ALL_ARRAYS).await.map_err(|e| err("GetLidarScan", e))?.into_inner().into_message();
    let shared = ScanAnswer::Shared(SharedScan::new(served.engine.fresh().await, 0, true, true, true));
    // Batches of round trips and of in-process codecs, alternated; the medians are compared.
    let (mut trips, mut codecs, mut glint_codecs, mut bytes) = (Vec::new(), Vec::new(), Vec::new(), 0);
    for _ in 0..REPEATS {
        let started = Instant::now();
        for _ in 0..calls {
            lidar.get_lidar_scan(ALL_ARRAYS).await.map_err(|e| err("GetLidarScan", e))?;
        }
        trips.push(started.elapsed().as_secs_f64() / calls as f64);
        let started = Instant::now();
        for _ in 0..calls {
            let encoded = scan.encode_to_vec();
            bytes = encoded.len();
            let decoded = LidarScanResponse::decode(encoded.as_slice()).map_err(|e| err("decode", e))?;
            std::hint::black_box(decoded);
        }
        codecs.push(started.elapsed().as_secs_f64() / calls as f64);
        let started = Instant::now();
        for _ in 0..calls {
            let encoded = shared.encode_to_vec();
            let decoded = ScanAnswer::decode(encoded.as_slice()).map_err(|e| err("decode", e))?;
            std::hint::black_box(decoded);
        }
        glint_codecs.push(started.elapsed().as_secs_f64() / calls as f64);
    }
    let (round_trip_s, codec_s, glint_codec_s) = (median(&mut trips), median(&mut codecs), median(&mut glint_codecs));
    let scans_per_s_one_client = poll(addr, 1, calls).await?;
    let scans_per_s_eight_clients = poll(addr, 8, calls).await?;
    served.stop().await?;

    // The loop's rate in free pace, served with no client, one client at 100 scans per second,
    // one and eight clients back to back, each against the bare loop in a slice beside it.
    let mut bare = tokio::task::block_in_place(|| bare_loop(manifest))?;
    let served = start(manifest, Pace::Free).await?;
    let mut clients = Vec::new();
    for _ in 0..8 {
        clients.push(client(served.addr).await?);
    }
    clients[0].set_lidar_live(SetLidarLiveRequest { live: true }).await.map_err(|e| err("SetLidarLive", e))?;
    let loads = [Load::Idle, Load::Every(Duration::from_millis(10)), Load::FlatOut(1), Load::FlatOut(8)];
    // Slices of a quarter second or more, as many as fit (at most twenty).
    let slices = ((options.seconds / SLICE_S).floor() as usize).clamp(1, MAX_SLICES);
    let slice = options.seconds / slices as f64;
    // Both loops warmed up first.
    {
        let _held = served.engine.pause().await.map_err(|e| err("pausing the loop", e.message()))?;
        tokio::task::block_in_place(|| bare_rate_of(&mut bare, slice.min(0.2)))?;
    }
    served_rate(&served.engine, &clients, Load::Idle, slice.min(0.2)).await?;
    let (mut alone, mut rates, mut ratios) = (Vec::new(), vec![Vec::new(); loads.len()], vec![Vec::new(); loads.len()]);
    let before = served.engine.stats();
    let mut served_ticks = 0;
    for turn in 0..slices {
        for (k, load) in loads.iter().enumerate() {
            // The bare slice first in every other pair, the served one in the others, so that
            // neither side always follows the other.
            let bare_first = (turn + k) % 2 == 0;
            let mut bare_rate = 0.0;
            if bare_first {
                let _held = served.engine.pause().await.map_err(|e| err("pausing the loop", e.message()))?;
                bare_rate = tokio::task::block_in_place(|| bare_rate_of(&mut bare, slice))?;
            }
            let ticks = served.engine.stats().ticks;
            let rate = served_rate(&served.engine, &clients, *load, slice).await?;
            served_ticks += served.engine.stats().ticks - ticks;
            if !bare_first {
                let _held = served.engine.pause().await.map_err(|e| err("pausing the loop", e.message()))?;
                bare_rate = tokio::task::block_in_place(|| bare_rate_of(&mut bare, slice))?;
            }
            alone.push(bare_rate);
            rates[k].push(rate);
            ratios[k].push(rate / bare_rate);
        }
    }
    let publishes = served.engine.stats().publishes - before.publishes;
    drop(clients);
    served.stop().await?;
    let ticks_per_s_alone = median(&mut alone);
    let [idle, polled, one, eight] = [0, 1, 2, 3].map(|k| median(&mut rates[k]));
    let [idle_ratio, polled_ratio, one_ratio, eight_ratio] = [0, 1, 2, 3].map(|k| median(&mut ratios[k]));

    Ok(ServeReport {
        manifest: options.manifest.path.display().to_string(),
        beams: scan.ranges.len(),
        message_bytes: bytes,
        round_trip_s,
        codec_s,
        glint_codec_s,
        round_trip_over_codec: round_trip_s / codec_s,
        scans_per_s_one_client,
        scans_per_s_eight_clients,
        ticks_per_s_alone,
        ticks_per_s_serving_idle: idle,
        ticks_per_s_serving: polled,
        ticks_per_s_one_client_flat_out: one,
        ticks_per_s_eight_clients: eight,
        idle_over_alone: idle_ratio,
        serving_over_alone: polled_ratio,
        one_client_flat_out_over_alone: one_ratio,
        eight_clients_over_alone: eight_ratio,
        slices,
        publishes_per_tick: publishes as f64 / served_ticks.max(1) as f64,
    })
}
