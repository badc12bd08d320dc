//! The simulation loop behind the services: one thread owns the [`Simulation`] and runs it at
//! the chosen [`Pace`]; requests reach it as jobs. What readers see is a [`Snapshot`]: the
//! settings in force and world 0's scans as of a completed tick.
//!
//! A snapshot is copied when someone needs it, not after every tick: once after each job that
//! may change something (a lockstep `Step` included: one copy per sensor per `Step`), before a
//! job when ticks have completed since the last copy (so a long job never holds up a scan
//! reader), and when a scan reader finds the last copy older than the last completed tick
//! ([`Engine::fresh`]: the readers of one tick share one copy). A loop nobody reads copies
//! nothing, and a tick never waits for a reader.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, RwLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use glint_lidar::{BakeStatus, ReturnParams, ScanConfig, SecondaryCapture, SecondaryScope};
use glint_record::EpisodeStatus;
use glint_sim::{Manifest, Output, RecordingOptions, RecordingSummary, SimOptions, Simulation};
use tokio::sync::{oneshot, watch};

use crate::ServerError;

/// How the simulation advances while the server runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Pace {
    /// One lidar tick per tick of simulated time, on the wall clock (a running engine in
    /// play mode). The default.
    Realtime,
    /// Ticks back to back, as fast as the machine goes.
    Free,
    /// Only `AgentService.Step` advances the simulation (RL training).
    Lockstep,
}

impl Pace {
    /// The spelling on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Pace::Realtime => "realtime",
            Pace::Free => "free",
            Pace::Lockstep => "lockstep",
        }
    }
}

/// What the loop is built from.
#[derive(Clone, Debug)]
pub struct EngineOptions {
    /// The scene manifest, loaded and checked.
    pub manifest: Manifest,
    /// Worlds side by side; agent `agent_N` is world N.
    pub nworld: usize,
    /// How the simulation advances.
    pub pace: Pace,
    /// Record episodes (delimited by `ResetAgent`) into a session under this folder.
    pub record: Option<PathBuf>,
    /// The run seed (default: the manifest's).
    pub seed: Option<u64>,
    /// An output the front end adds once the simulation is built (`glint serve --live`).
    pub output: Option<AddedOutput>,
}

/// Makes an output for the loop's simulation once it is built (it may read the simulation's
/// sensors); an error stops the server from starting.
pub type OutputMaker = dyn Fn(&Simulation) -> Result<Box<dyn Output>, String> + Send + Sync;

/// An output a front end adds to the loop (see [`EngineOptions::output`]).
#[derive(Clone)]
pub struct AddedOutput(pub Arc<OutputMaker>);

impl std::fmt::Debug for AddedOutput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("AddedOutput(..)")
    }
}

/// One sensor as of the last publish (world 0).
#[derive(Clone, Debug, Default)]
pub struct SensorSnapshot {
    /// Its scan configuration.
    pub config: ScanConfig,
    /// Its secondary capture as last set.
    pub capture: (SecondaryCapture, SecondaryScope),
    /// Clean ranges per beam, `-1` for no return.
    pub ranges: Vec<f32>,
    /// The return model's channels, when a bake is loaded.
    pub returns: Option<ReturnChannels>,
}

/// The return model's per-beam channels of one scan.
#[derive(Clone, Debug, Default)]
pub struct ReturnChannels {
    /// Measured range of the strongest echo.
    pub range: Vec<f32>,
    /// Second echo (`-1` for none; all `-1` when `max_returns < 2`).
    pub secondary: Vec<f32>,
    /// Intensity, `-1` where not resolvable.
    pub intensity: Vec<f32>,
    /// Calibrated reflectivity, `-1` where not resolvable.
    pub reflectivity: Vec<f32>,
}

/// What readers see: the last completed tick of world 0, and the settings in force.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Ticks the loop has completed since the server started.
    pub tick: u64,
    /// Every sensor, in binding order.
    pub sensors: Vec<SensorSnapshot>,
    /// The return model's calibration.
    pub params: ReturnParams,
    /// The loaded bake's status.
    pub bake: BakeStatus,
}

/// What does not change while the server runs: the model's and the task's layout.
#[derive(Clone, Debug)]
pub struct StaticInfo {
    /// Worlds (agents).
    pub nworld: usize,
    /// The pace.
    pub pace: Pace,
    /// MuJoCo's `nq`, `nv`, `nu`.
    pub nq: usize,
    /// Degrees of freedom.
    pub nv: usize,
    /// Joint names, in joint order.
    pub joint_names: Vec<String>,
    /// Actuator names (the action vector's layout) with their control ranges.
    pub actuators: Vec<(String, Option<[f64; 2]>)>,
    /// The observation vector's value names.
    pub observation_names: Vec<String>,
}

/// What the loop has done for its readers since it started: the counters a test or a
/// benchmark reads ([`Engine::stats`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Ticks completed.
    pub ticks: u64,
    /// Snapshots published.
    pub publishes: u64,
    /// Sensor scans copied into snapshots (one per sensor per publish).
    pub sensor_copies: u64,
}

/// What the loop thread and the services share.
struct Shared {
    /// The latest snapshot.
    cell: RwLock<Arc<Snapshot>>,
    /// Ticks the loop has completed (the snapshot may be older).
    completed: AtomicU64,
    /// A refresh job is queued and has not started.
    refresh_asked: AtomicBool,
    /// The tick of the latest snapshot, for readers waiting on a refresh; `u64::MAX` once the
    /// loop has stopped.
    published: watch::Sender<u64>,
    publishes: AtomicU64,
    sensor_copies: AtomicU64,
}

impl Shared {
    /// The snapshot in the cell (a poisoned lock still holds the last one published).
    fn latest(&self) -> Arc<Snapshot> {
        self.cell.read().map_or_else(|poisoned| poisoned.into_inner().clone(), |s| s.clone())
    }
}

/// The loop's state, handed to each job.
pub struct Core {
    /// The simulation.
    pub sim: Simulation,
    /// Whether a client asked the lidars to fire every step.
    pub client_live: bool,
    /// Per MJCF camera, its configuration as clients set it.
    pub cameras: Vec<crate::camera::ServedCamera>,
    tick: u64,
    shared: Arc<Shared>,
    /// The snapshot before the current one, refilled by the next publish when unshared.
    spare: Option<Arc<Snapshot>>,
    stop: bool,
    last_error: Option<String>,
}

type Job = Box<dyn FnOnce(&mut Core) + Send>;

/// The services' handle on the loop: jobs in, snapshots out.
#[derive(Clone)]
pub struct Engine {
    jobs: Sender<Job>,
    shared: Arc<Shared>,
    info: Arc<StaticInfo>,
}

/// The loop held between ticks until this is dropped ([`Engine::pause`]).
pub(crate) struct Paused {
    _release: mpsc::Sender<()>,
}

/// The loop thread, to stop when the server stops.
pub struct EngineThread {
    thread: JoinHandle<Option<RecordingSummary>>,
}

impl Engine {
    /// Builds the simulation on its own thread and starts the loop; returns once the
    /// simulation is built (or failed to build).
    pub fn start(options: EngineOptions) -> Result<(Engine, EngineThread), ServerError> {
        let (jobs, inbox) = mpsc::channel::<Job>();
        let (ready_tx, ready_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("glint-sim".into())
            .spawn(move || match Core::build(&options) {
                Ok((core, info)) => {
                    let _ = ready_tx.send(Ok((core.shared.clone(), info)));
                    core.run(options.pace, &inbox)
                }
                Err(e) => {
                    let _ = ready_tx.send(Err(e));
                    None
                }
            })
            .map_err(|e| ServerError::Start(format!("cannot start the simulation thread: {e}")))?;
        let (shared, info) = ready_rx
            .recv()
            .map_err(|_| ServerError::Start("the simulation thread stopped while building the scene".into()))??;
        Ok((Engine { jobs, shared, info: Arc::new(info) }, EngineThread { thread }))
    }

    /// The latest snapshot, never waiting for the loop: the settings in force (every job that
    /// changes one publishes before it answers); its scans may be some ticks old (see
    /// [`Engine::fresh`]).
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.shared.latest()
    }

    /// A snapshot of the last tick completed when this was called. When the latest snapshot
    /// is older, the loop copies one between its ticks (at most one tick's wait; never during
    /// one) and every reader waiting for it shares it. Once the loop has stopped, the latest.
    pub async fn fresh(&self) -> Arc<Snapshot> {
        let want = self.shared.completed.load(Ordering::SeqCst);
        let current = self.shared.latest();
        if current.tick >= want {
            return current;
        }
        let mut published = self.shared.published.subscribe();
        if !self.shared.refresh_asked.swap(true, Ordering::SeqCst) {
            let job: Job = Box::new(|core: &mut Core| {
                core.shared.refresh_asked.store(false, Ordering::SeqCst);
                core.refresh();
            });
            if self.jobs.send(job).is_err() {
                return current;
            }
        }
        let _ = published.wait_for(|&tick| tick >= want).await;
        self.shared.latest()
    }

    /// What the loop has done for its readers so far.
    pub fn stats(&self) -> EngineStats {
        EngineStats {
            ticks: self.shared.completed.load(Ordering::SeqCst),
            publishes: self.shared.publishes.load(Ordering::SeqCst),
            sensor_copies: self.shared.sensor_copies.load(Ordering::SeqCst),
        }
    }

    /// The layout that does not change.
    pub fn info(&self) -> &StaticInfo {
        &self.info
    }

    /// Runs `f` on the loop thread between ticks and returns its answer; a snapshot is
    /// published after it. A panic inside `f` is answered as an internal error, and the loop
    /// goes on.
    pub async fn call<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Core) -> R + Send + 'static,
    ) -> Result<R, tonic::Status> {
        self.submit(move |core| {
            // Ticks completed since the last copy are published first, so scan readers do not
            // wait for this job.
            core.refresh();
            let answer = f(core);
            // Published before the answer leaves, so a client's next read sees the change.
            core.print_warnings();
            core.publish();
            answer
        })
        .await
    }

    /// Runs `f` on the loop thread between ticks and returns its answer, publishing nothing:
    /// for jobs that only read the simulation. A panic is answered as in [`Engine::call`].
    pub async fn query<R: Send + 'static>(
        &self,
        f: impl FnOnce(&Core) -> R + Send + 'static,
    ) -> Result<R, tonic::Status> {
        self.submit(move |core| f(core)).await
    }

    async fn submit<R: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Core) -> R + Send + 'static,
    ) -> Result<R, tonic::Status> {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |core| {
            let _ = tx.send(f(core));
        });
        self.jobs.send(job).map_err(|_| tonic::Status::unavailable("the simulation loop has stopped"))?;
        rx.await.map_err(|_| {
            tonic::Status::internal("the request failed inside the simulation loop (see the server's log)")
        })
    }

    /// Holds the loop between ticks until the answer is dropped (the benchmark measures the
    /// bare loop meanwhile); returns once the loop is held.
    pub(crate) async fn pause(&self) -> Result<Paused, tonic::Status> {
        let (release, held) = mpsc::channel::<()>();
        let (started, ready) = oneshot::channel::<()>();
        let job: Job = Box::new(move |_core| {
            let _ = started.send(());
            let _ = held.recv();
        });
        self.jobs.send(job).map_err(|_| tonic::Status::unavailable("the simulation loop has stopped"))?;
        ready.await.map_err(|_| tonic::Status::internal("the simulation loop did not pause"))?;
        Ok(Paused { _release: release })
    }

    /// Asks the loop to stop after the job in hand.
    pub fn request_stop(&self) {
        let _ = self.jobs.send(Box::new(|core: &mut Core| core.stop = true));
    }
}

impl EngineThread {
    /// Waits for the loop to stop; the recording's summary when one was armed.
    pub fn join(self) -> Option<RecordingSummary> {
        self.thread.join().ok().flatten()
    }
}

impl Core {
    fn build(options: &EngineOptions) -> Result<(Core, StaticInfo), ServerError> {
        let sim_options = SimOptions { nworld: options.nworld, seed: options.seed, ..SimOptions::default() };
        let mut sim = Simulation::from_loaded(options.manifest.clone(), sim_options)?;
        // The RPCs send ranges and the return model's channels, never hit points or normals:
        // the scans keep those only while recording.
        sim.set_keep_surfaces(false);
        for w in sim.take_warnings() {
            crate::say!("warning: {w}");
        }
        if let Some(dir) = &options.record {
            let dir = sim.arm_recording(&RecordingOptions { out: Some(dir.clone()), episodes: 0 })?;
            crate::say!("glint serve: recording episodes (delimited by ResetAgent) into {}", dir.display());
        }
        if let Some(AddedOutput(make)) = &options.output {
            let output = make(&sim).map_err(ServerError::Start)?;
            sim.add_output(output);
        }
        let info = StaticInfo {
            nworld: sim.nworld(),
            pace: options.pace,
            nq: sim.joint_positions(0)?.len(),
            nv: sim.joint_velocities(0)?.len(),
            joint_names: sim.joint_names(),
            actuators: sim.actuators(),
            observation_names: sim.observation().names().to_vec(),
        };
        let empty =
            Arc::new(Snapshot { tick: 0, sensors: Vec::new(), params: sim.return_params(), bake: sim.bake_status() });
        let shared = Arc::new(Shared {
            cell: RwLock::new(empty),
            completed: AtomicU64::new(0),
            refresh_asked: AtomicBool::new(false),
            published: watch::Sender::new(0),
            publishes: AtomicU64::new(0),
            sensor_copies: AtomicU64::new(0),
        });
        let cameras = vec![crate::camera::ServedCamera::default(); sim.scene().ncam()];
        let mut core =
            Core { sim, client_live: false, cameras, tick: 0, shared, spare: None, stop: false, last_error: None };
        core.sync_live();
        core.publish();
        Ok((core, info))
    }

    /// Fires the lidars on every step when a client asked for it, or when recording (the
    /// simulation does that itself), or when the observation reads a lidar (likewise).
    pub fn sync_live(&mut self) {
        self.sim.set_lidar_live(self.client_live);
    }

    /// Counts a completed tick. Nothing is copied: the job the tick ran in publishes it, and
    /// between jobs a reader asks for it ([`Engine::fresh`]).
    pub fn ticked(&mut self) {
        self.tick += 1;
        self.shared.completed.store(self.tick, Ordering::SeqCst);
    }

    /// Publishes when ticks have completed since the latest snapshot.
    fn refresh(&mut self) {
        if self.shared.latest().tick < self.tick {
            self.publish();
        }
    }

    /// Publishes world 0's scans and the settings in force. The snapshot two publishes back
    /// is refilled in place when no reader holds it any more, so a publish neither allocates
    /// nor faults in fresh pages for its copy.
    fn publish(&mut self) {
        let previous = self.shared.latest();
        let mut next =
            self.spare.take().and_then(|mut s| Arc::get_mut(&mut s).is_some().then_some(s)).unwrap_or_else(|| {
                Arc::new(Snapshot { tick: 0, sensors: Vec::new(), params: previous.params, bake: previous.bake })
            });
        drop(previous);
        let fill = Arc::get_mut(&mut next).expect("a fresh or unshared snapshot");
        fill.tick = self.tick;
        fill.params = self.sim.return_params();
        // Cached by the simulation until its bake changes (the scene and material table do not).
        fill.bake = self.sim.bake_status();
        fill.sensors.resize_with(self.sim.lidar_count(), SensorSnapshot::default);
        for (s, out) in fill.sensors.iter_mut().enumerate() {
            let Ok(lidar) = self.sim.lidar(s) else { continue };
            out.config = lidar.config();
            out.capture = lidar.secondary_capture();
            let scan = lidar.scan(0).ok();
            copy_into(&mut out.ranges, scan.map_or(&[][..], |s| &s.range));
            match scan.and_then(|s| s.returns.as_ref()) {
                Some(r) => {
                    let channels = out.returns.get_or_insert_with(ReturnChannels::default);
                    copy_into(&mut channels.range, &r.range);
                    copy_into(&mut channels.secondary, &r.secondary_range);
                    copy_into(&mut channels.intensity, &r.intensity);
                    copy_into(&mut channels.reflectivity, &r.reflectivity);
                }
                None => out.returns = None,
            }
        }
        let sensors = fill.sensors.len() as u64;
        let old = match self.shared.cell.write() {
            Ok(mut slot) => std::mem::replace(&mut *slot, next),
            Err(poisoned) => std::mem::replace(&mut *poisoned.into_inner(), next),
        };
        self.spare = Some(old);
        self.shared.publishes.fetch_add(1, Ordering::SeqCst);
        self.shared.sensor_copies.fetch_add(sensors, Ordering::SeqCst);
        self.shared.published.send_replace(self.tick);
    }

    /// Prints what the simulation had to warn about.
    pub fn print_warnings(&mut self) {
        for w in self.sim.take_warnings() {
            crate::say!("warning: {w}");
        }
    }

    fn run_job(&mut self, job: Job) {
        if catch_unwind(AssertUnwindSafe(|| job(self))).is_err() {
            crate::say!("error: a request panicked inside the simulation loop; the loop goes on");
            self.publish();
        }
    }

    /// One free-running tick: the controller's controls, physics, lidars, recording.
    fn free_tick(&mut self) {
        match self.sim.step(None) {
            Ok(_) => {
                self.last_error = None;
                self.ticked();
            }
            Err(e) => {
                let text = e.to_string();
                if self.last_error.as_deref() != Some(text.as_str()) {
                    crate::say!("error: the simulation loop could not step: {text}");
                }
                self.last_error = Some(text);
            }
        }
        self.print_warnings();
    }

    fn run(mut self, pace: Pace, inbox: &Receiver<Job>) -> Option<RecordingSummary> {
        let dt = Duration::from_secs_f64(self.sim.runner().dt);
        let mut next = Instant::now();
        while !self.stop {
            match pace {
                Pace::Lockstep => match inbox.recv() {
                    Ok(job) => self.run_job(job),
                    Err(_) => break,
                },
                Pace::Free => {
                    while let Ok(job) = inbox.try_recv() {
                        self.run_job(job);
                    }
                    if !self.stop {
                        self.free_tick();
                    }
                }
                Pace::Realtime => {
                    // Serve jobs until the tick is due, then tick; a loop that fell behind by
                    // more than a few ticks starts its schedule again rather than racing.
                    loop {
                        let now = Instant::now();
                        if now >= next || self.stop {
                            break;
                        }
                        match inbox.recv_timeout(next - now) {
                            Ok(job) => self.run_job(job),
                            Err(RecvTimeoutError::Timeout) => break,
                            Err(RecvTimeoutError::Disconnected) => return self.finish(),
                        }
                    }
                    if self.stop {
                        break;
                    }
                    self.free_tick();
                    next += dt;
                    if Instant::now() > next + dt * 4 {
                        next = Instant::now();
                    }
                }
            }
        }
        self.finish()
    }

    /// Closes an armed recording (open episodes as interrupted).
    fn finish(mut self) -> Option<RecordingSummary> {
        if !self.sim.recording() {
            return None;
        }
        let summary = match self.sim.stop_recording(EpisodeStatus::Interrupted) {
            Ok(summary) => Some(summary),
            Err(e) => {
                crate::say!("error: the recording could not be closed: {e}");
                None
            }
        };
        self.print_warnings();
        summary
    }
}

impl Drop for Core {
    /// Readers waiting for a refresh get the latest snapshot once the loop has stopped.
    fn drop(&mut self) {
        self.shared.published.send_replace(u64::MAX);
    }
}

/// `out` made a copy of `src`, reusing its allocation.
fn copy_into(out: &mut Vec<f32>, src: &[f32]) {
    out.clear();
    out.extend_from_slice(src);
}
