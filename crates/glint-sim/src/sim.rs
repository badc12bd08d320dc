//! The [`Simulation`]: built once from a scene, it owns the model, the worlds, the ray caster,
//! the lidars, the material bake, the controller, the runner and the recording, and
//! [`Simulation::step`] is the one place where controls, physics, refit, lidar tick and
//! recording follow each other.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use glint_core::{RayBatch, RayCaster, RayFilter, RayHits, Scene};
use glint_lidar::{LidarBinding, Lidars, MaterialTable, ReturnParams, ReturnPreset, Runner, ScanConfig, episode_seed};
use glint_manifest::{BakeConfig, Controller, Manifest, Recorder, ResetConfig};
use glint_mujoco::{LitScene, Model, SceneSpec, VariantModel, WorldBatch};
use glint_record::{EpisodeStatus, SessionInfo, VideoSettings};

use crate::camera::Cameras;
use crate::controller::Drive;
use crate::fields::Fields;
use crate::materials::LoadedBake;
use crate::observation::ObservationLayout;
use crate::randomize::FieldDraws;
pub(crate) use crate::recording::RecordedCamera;
use crate::recording::{Recording, RecordingOptions, RecordingSummary, SensorTick};
use crate::reset::Randomizer;
use crate::task::{TaskOutcome, TaskState};
use crate::{SimError, VariantPlan, Warning};

/// How a simulation is set up beyond its scene.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    /// Worlds simulated side by side (default 1).
    pub nworld: usize,
    /// The run seed (default: the manifest's `[return_model] seed`): each episode's seed
    /// derives from it and the episode's index ([`Simulation::episode_seed`]).
    pub seed: Option<u64>,
    /// Simulated seconds per episode, a whole number of lidar ticks (else refused): a world
    /// reports [`WorldStatus::Ended`] once its episode is that long (default: episodes never
    /// end).
    pub episode_seconds: Option<f64>,
    /// The project folder bakes are saved in (`MaterialBakes/`) and recordings go under by
    /// default (default: the manifest's folder, or the current folder for a bare MJCF).
    pub project_dir: Option<PathBuf>,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions { nworld: 1, seed: None, episode_seconds: None, project_dir: None }
    }
}

/// Which worlds a call acts on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Worlds<'a> {
    /// Every world.
    All,
    /// One world.
    One(usize),
    /// These worlds.
    These(&'a [usize]),
}

/// How a world's episode stands after a step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum WorldStatus {
    /// Running.
    Ok,
    /// MuJoCo found the world unstable during this episode and reset its state (this wins
    /// over `Ended`).
    Unstable,
    /// The episode has run its length ([`SimOptions::episode_seconds`]); the world keeps
    /// stepping until it is reset.
    Ended,
}

impl WorldStatus {
    /// Gymnasium's `(terminated, truncated)` for a world in this status whose task body did
    /// (`reached`) or did not reach the goal: terminated when it reached the goal or MuJoCo
    /// found it unstable, truncated when its episode has run its length. Every front end
    /// reports an episode's end by this rule.
    pub fn terminated_truncated(self, reached: bool) -> (bool, bool) {
        (reached || self == WorldStatus::Unstable, self == WorldStatus::Ended)
    }
}

/// What one step did.
#[derive(Clone, Debug, PartialEq)]
pub struct StepReport {
    /// Per world, how its episode stands.
    pub status: Vec<WorldStatus>,
    /// Per world, simulated seconds since its episode began (MuJoCo's time).
    pub time: Vec<f64>,
    /// Wall-clock seconds the lidar tick took (every sensor, every world).
    pub lidar_seconds: f64,
    /// Per world, what the manifest's `[task]` made of the step (empty without one).
    pub task: Vec<TaskOutcome>,
}

/// Beams a sensor has cast and how many of them hit, over every world since the simulation was
/// built.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LidarStats {
    /// Beams cast.
    pub beams: u64,
    /// Beams with a hit inside the sensor's range.
    pub hits: u64,
}

/// Where each world is in its episode.
#[derive(Clone, Copy, Debug, Default)]
struct EpisodeClock {
    /// Lidar ticks since the episode began.
    ticks: u64,
    /// Episodes the world finished before this one.
    episode: u64,
}

/// The parts of a manifest a simulation keeps (defaults for a bare MJCF scene).
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    pub(crate) manifest: Option<PathBuf>,
    pub(crate) scene: Option<PathBuf>,
    pub(crate) recorder: Recorder,
    pub(crate) bake: BakeConfig,
    pub(crate) table: MaterialTable,
    pub(crate) controller: Controller,
    pub(crate) reset: ResetConfig,
    pub(crate) project_dir: PathBuf,
}

impl Setup {
    /// The defaults of a scene without a manifest: zero control, the default recorder with its
    /// sessions under `project_dir`, no materials, no `[reset]`.
    fn bare(scene: Option<PathBuf>, project_dir: PathBuf) -> Setup {
        let recorder = Recorder::default();
        Setup {
            manifest: None,
            scene,
            recorder: Recorder { output_dir: project_dir.join(&recorder.output_dir), ..recorder },
            bake: BakeConfig::default(),
            table: MaterialTable::default(),
            controller: Controller::Zero,
            reset: ResetConfig::default(),
            project_dir,
        }
    }
}

/// One simulated scene over a batch of worlds, with every sensor on it (`spec/sim.md`).
pub struct Simulation {
    pub(crate) model: Model,
    pub(crate) scene: Arc<Scene>,
    pub(crate) worlds: WorldBatch,
    pub(crate) rays: RayCaster,
    pub(crate) lidars: Lidars,
    /// The scene's lidar bindings (names filled in, secondary capture as last set): what a
    /// new recording starts from.
    pub(crate) bindings: Vec<LidarBinding>,
    pub(crate) bake: Option<LoadedBake>,
    drive: Drive,
    /// The `[reset]` draws of each episode's initial state.
    randomizer: Randomizer,
    runner: Runner,
    clocks: Vec<EpisodeClock>,
    /// Per world, the index of its episode (what its seed derives from).
    episodes: Vec<u64>,
    /// The index the next new episode gets.
    next_episode: u64,
    /// Lidar ticks per episode, when episodes have a length.
    episode_ticks: Option<u64>,
    pub(crate) recording: Option<Recording>,
    /// Whether the scans keep hit points and normals outside recordings.
    keep_surfaces: bool,
    stats: Vec<LidarStats>,
    pub(crate) setup: Setup,
    /// The run seed.
    seed: u64,
    pub(crate) warnings: Vec<Warning>,
    /// A tick's beams in emission order, reused.
    beams: Vec<u32>,
    /// The task contract's observation vector (`[[observation]]`).
    pub(crate) observation: ObservationLayout,
    /// The built-in task (`[task]`), with each world's state.
    task: Option<TaskState>,
    /// Each world's fields (MuJoCo Warp's batched model fields).
    pub(crate) fields: Fields,
    /// The cameras that render, once set.
    pub(crate) cameras: Option<Cameras>,
    /// The manifest's `[randomize]` draws, and per world what its episode drew.
    field_draws: FieldDraws,
    drawn: Vec<BTreeMap<String, Vec<f64>>>,
    /// The compiled variants (per-world assets), and which one each world is on.
    pub(crate) variants: Vec<VariantModel>,
    pub(crate) world_variant: Vec<Option<usize>>,
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation")
            .field("nworld", &self.nworld())
            .field("lidars", &self.lidars.len())
            .field("manifest", &self.setup.manifest)
            .finish_non_exhaustive()
    }
}

impl Simulation {
    /// The scene of the manifest at `path` (its MJCF, lidars, materials, bake settings, return
    /// model, controller and recorder), over `options.nworld` worlds.
    pub fn from_manifest(path: impl AsRef<Path>, options: SimOptions) -> Result<Simulation, SimError> {
        Simulation::from_loaded(Manifest::load(path)?, options)
    }

    /// [`Simulation::from_manifest`] of a manifest already loaded (and checked by the caller).
    pub fn from_loaded(manifest: Manifest, options: SimOptions) -> Result<Simulation, SimError> {
        let (model, light_warnings, spec) = lit_model(&manifest)?;
        let table = manifest.material_table(model.scene())?;
        let dir = manifest.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let setup = Setup {
            manifest: Some(manifest.path.clone()),
            scene: Some(manifest.scene.clone()),
            recorder: manifest.recorder.clone(),
            bake: manifest.bake.clone(),
            table,
            controller: manifest.controller.clone(),
            reset: manifest.reset.clone(),
            project_dir: options.project_dir.clone().unwrap_or_else(|| dir.to_path_buf()),
        };
        let calibration = (manifest.return_params, options.seed.unwrap_or(manifest.seed));
        // The task's time limit is the episode length, unless the caller gives one.
        let task_seconds = manifest.task.as_ref().and_then(|t| t.episode_seconds);
        let options = SimOptions { episode_seconds: options.episode_seconds.or(task_seconds), ..options };
        let mut sim = Simulation::build(model, manifest.lidar, setup, calibration, &options)?;
        sim.warnings.extend(light_warnings);
        if let Some(spec) = spec {
            let plan = VariantPlan { variants: manifest.variants.clone(), assign: manifest.variant_assign.clone() };
            sim.apply_variants(&spec, &plan)?;
        }
        sim.field_draws = FieldDraws::new(&manifest.randomize, &sim.scene, &sim.fields)?;
        for w in 0..sim.nworld() {
            sim.draw_fields(w)?;
        }
        if !manifest.cameras.is_empty() {
            let options = manifest.cameras.iter().map(|c| sim.camera_options(c)).collect::<Result<Vec<_>, _>>()?;
            let rates: Vec<(usize, f64)> =
                options.iter().zip(&manifest.cameras).map(|(o, c)| (o.camera, c.rate_hz)).collect();
            sim.set_cameras(options)?;
            for (camera, rate) in rates {
                sim.set_camera_rate(camera, rate)?;
            }
        }
        sim.set_observation(&manifest.observation)?;
        if let Some(task) = &manifest.task {
            let mut state = TaskState::new(task, &sim.scene, sim.nworld())?;
            for w in 0..sim.nworld() {
                state.restart(&sim, w);
            }
            sim.task = Some(state);
        }
        Ok(sim)
    }

    /// The MJCF scene `xml` with the lidars `bindings`, Generic return model, zero control
    /// and the default recorder, over `options.nworld` worlds.
    pub fn from_xml(xml: &str, bindings: Vec<LidarBinding>, options: SimOptions) -> Result<Simulation, SimError> {
        let model = Model::from_xml_str(xml)?;
        let project_dir = options.project_dir.clone().unwrap_or_else(|| PathBuf::from("."));
        let calibration = (ReturnParams::default(), options.seed.unwrap_or(0));
        Simulation::build(model, bindings, Setup::bare(None, project_dir), calibration, &options)
    }

    /// [`Simulation::from_xml`] of the MJCF file at `path` (its includes, meshes and textures
    /// resolve from it; bakes and recordings go beside it unless `options` says otherwise).
    pub fn from_xml_file(
        path: impl AsRef<Path>,
        bindings: Vec<LidarBinding>,
        options: SimOptions,
    ) -> Result<Simulation, SimError> {
        let path = path.as_ref();
        let model = Model::from_xml_file(path)?;
        let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let project_dir = options.project_dir.clone().unwrap_or_else(|| dir.to_path_buf());
        let calibration = (ReturnParams::default(), options.seed.unwrap_or(0));
        let setup = Setup::bare(Some(path.to_path_buf()), project_dir);
        Simulation::build(model, bindings, setup, calibration, &options)
    }

    fn build(
        model: Model,
        bindings: Vec<LidarBinding>,
        setup: Setup,
        (params, seed): (ReturnParams, u64),
        options: &SimOptions,
    ) -> Result<Simulation, SimError> {
        let scene = model.scene().clone();
        let nworld = options.nworld;
        let runner = Runner::exact(model.timestep(), setup.recorder.lidar_runner_hz)?;
        let episode_ticks = options.episode_seconds.map(|s| whole_ticks(s, runner)).transpose()?;
        for (s, b) in bindings.iter().enumerate() {
            check_rotation(s, &b.scan, runner)?;
        }
        let randomizer = Randomizer::new(&setup.reset, &model)?;
        crate::memory::check_worlds(&model, &bindings, nworld)?;
        let mut worlds = WorldBatch::new(&model, nworld)?;
        for w in 0..nworld {
            randomizer.apply(&mut worlds, w, episode_seed(seed, w as u64))?;
        }
        let rays = RayCaster::new(&scene, worlds.poses());
        let (mut lidars, lidar_warnings) = Lidars::new(&scene, bindings, nworld)?;
        // The flagged capture scope reads the scene's NIR classes (a hedge's gaps, a window).
        lidars.set_capture_materials(&scene, &setup.table);
        lidars.set_return_params(params)?;
        for w in 0..nworld {
            lidars.set_world_seed(w, episode_seed(seed, w as u64))?;
        }
        let drive = Drive::new(&setup.controller, &model, nworld)?;
        let bindings = (0..lidars.len()).map(|s| lidars.binding(s).cloned()).collect::<Result<_, _>>()?;
        let warnings = lidar_warnings.into_iter().map(|(sensor, warning)| Warning::Lidar { sensor, warning }).collect();
        let fields = Fields::new(&scene, &worlds.physics(0)?);
        Ok(Simulation {
            stats: vec![LidarStats::default(); lidars.len()],
            model,
            scene,
            worlds,
            rays,
            lidars,
            bindings,
            bake: None,
            drive,
            randomizer,
            runner,
            clocks: vec![EpisodeClock::default(); nworld],
            episodes: (0..nworld as u64).collect(),
            next_episode: nworld as u64,
            episode_ticks,
            recording: None,
            keep_surfaces: true,
            setup,
            seed,
            warnings,
            beams: Vec::new(),
            observation: ObservationLayout::default(),
            task: None,
            fields,
            cameras: None,
            field_draws: FieldDraws::default(),
            drawn: vec![BTreeMap::new(); nworld],
            variants: Vec::new(),
            world_variant: vec![None; nworld],
        })
    }

    /// Number of worlds.
    pub fn nworld(&self) -> usize {
        self.worlds.nworld()
    }

    /// The immutable scene every world shares.
    pub fn scene(&self) -> &Scene {
        &self.scene
    }

    /// The scene world `w` was compiled as: its variant's (whose meshes and height fields
    /// are the shared scene's), or the shared scene.
    pub(crate) fn world_scene(&self, w: usize) -> &Scene {
        match self.world_variant[w] {
            Some(k) => &self.variants[k].scene,
            None => &self.scene,
        }
    }

    /// Every world's frames after the last step or reset (MuJoCo's `xpos`, `xmat`,
    /// `geom_xpos`…, world after world: body `b` of world `w` is row `w * nbody + b`).
    pub fn poses(&self) -> &glint_core::Poses {
        self.worlds.poses()
    }

    /// The MuJoCo model.
    pub fn model(&self) -> &Model {
        &self.model
    }

    /// The runner: physics steps per lidar tick, and the tick's length.
    pub fn runner(&self) -> Runner {
        self.runner
    }

    /// Lidar ticks per episode, when episodes have a length.
    pub fn episode_ticks(&self) -> Option<u64> {
        self.episode_ticks
    }

    /// The manifest the simulation was built from, if it was.
    pub fn manifest_path(&self) -> Option<&Path> {
        self.setup.manifest.as_deref()
    }

    /// The MJCF scene file, when the simulation was built from a manifest.
    pub fn scene_path(&self) -> Option<&Path> {
        self.setup.scene.as_deref()
    }

    /// The project folder (bakes, default recordings).
    pub fn project_dir(&self) -> &Path {
        &self.setup.project_dir
    }

    /// The run seed every episode's seed derives from.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The seed of world `w`'s episode: [`glint_lidar::episode_seed`] of the run seed and the
    /// episode's index ([`Simulation::episode_index`]). It keys the return model's randomness
    /// and the `[reset]` draws of the episode's initial state.
    pub fn episode_seed(&self, w: usize) -> Result<u64, SimError> {
        self.world_ok(w)?;
        Ok(self.seed_of(w))
    }

    /// Draws world `w`'s `[randomize]` values for its episode, from the episode's seed.
    fn draw_fields(&mut self, w: usize) -> Result<(), SimError> {
        if !self.field_draws.is_empty() {
            let (seed, nworld) = (self.seed_of(w), self.nworld());
            self.drawn[w] = self.field_draws.apply(&mut self.fields, (w, nworld), seed)?;
            let changed = self.field_draws.fields();
            self.sync_world_fields(w, &changed)?;
        }
        Ok(())
    }

    /// What world `w`'s episode drew from `[randomize]`, by `field/target`.
    pub fn drawn_fields(&self, w: usize) -> Result<&BTreeMap<String, Vec<f64>>, SimError> {
        self.world_ok(w)?;
        Ok(&self.drawn[w])
    }

    /// World `w`'s episode seed (`w` checked by the caller).
    fn seed_of(&self, w: usize) -> u64 {
        episode_seed(self.seed, self.episodes[w])
    }

    /// The index of world `w`'s episode: worlds start as episodes `0..nworld`, and each reset
    /// of a world whose episode has run gives it the next index (a reset with a seed numbers
    /// from 0 again).
    pub fn episode_index(&self, w: usize) -> Result<u64, SimError> {
        self.world_ok(w)?;
        Ok(self.episodes[w])
    }

    /// Fires every lidar on every step (`true`), or only while recording (`false`, the
    /// default): the seed's `SetLidarLive`.
    pub fn set_lidar_live(&mut self, live: bool) {
        self.lidars.set_live(live);
    }

    /// Whether the lidars fire on every step.
    pub fn lidar_live(&self) -> bool {
        self.lidars.live()
    }

    /// Keep each beam's hit point and normal in the scans ([`glint_lidar::Scan::surfaces`];
    /// `true`, the default), or only while recording (`false`: a tick then writes ranges and
    /// geoms alone, faster where nothing reads the surfaces, such as observations of ranges).
    pub fn set_keep_surfaces(&mut self, keep: bool) {
        self.keep_surfaces = keep;
        self.apply_keep_surfaces();
    }

    /// Whether the scans keep hit points and normals outside recordings.
    pub fn keeps_surfaces(&self) -> bool {
        self.keep_surfaces
    }

    /// A recording writes each beam's normal, so the scans keep surfaces while one is armed.
    fn apply_keep_surfaces(&mut self) {
        self.lidars.set_keep_surfaces(self.keep_surfaces || self.recording.is_some());
    }

    /// Number of lidar sensors.
    pub fn lidar_count(&self) -> usize {
        self.lidars.len()
    }

    /// What every call since the last one had to warn about, oldest first.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }

    /// The worlds `worlds` names, checked.
    fn world_list(&self, worlds: Worlds) -> Result<Vec<usize>, SimError> {
        let list = match worlds {
            Worlds::All => (0..self.nworld()).collect(),
            Worlds::One(w) => vec![w],
            Worlds::These(ws) => ws.to_vec(),
        };
        for &w in &list {
            self.world_ok(w)?;
        }
        Ok(list)
    }

    /// An error unless world `world` exists.
    pub(crate) fn world_ok(&self, world: usize) -> Result<(), SimError> {
        let nworld = self.nworld();
        if world < nworld { Ok(()) } else { Err(SimError::NoSuchWorld { world, nworld }) }
    }

    /// A new episode in `worlds`: the episode that was running there ends (and its recording,
    /// if one is armed, is finished as complete), MuJoCo resets the world to the model's
    /// initial state, the `[reset]` draws are made, and the controller and every lidar's
    /// pattern start over. Each world whose episode had run gets the next episode index, and
    /// so a new episode seed. With `seed`, the run seed becomes `seed` and the worlds reset are
    /// numbered from 0 again, in order: the same seed gives the same episodes.
    pub fn reset(&mut self, worlds: Worlds, seed: Option<u64>) -> Result<(), SimError> {
        let list = self.world_list(worlds)?;
        if let Some(seed) = seed {
            self.seed = seed;
            self.next_episode = 0;
        }
        for &w in &list {
            if seed.is_some() || self.clocks[w].ticks > 0 {
                self.episodes[w] = self.next_episode;
                self.next_episode += 1;
            }
            self.end_episode(w, EpisodeStatus::Complete)?;
        }
        if list.len() == self.nworld() {
            self.worlds.reset();
        } else {
            for &w in &list {
                self.worlds.reset_world(w)?;
            }
        }
        for &w in &list {
            let seed = self.seed_of(w);
            self.randomizer.apply(&mut self.worlds, w, seed)?;
            self.lidars.set_world_seed(w, seed)?;
            self.draw_fields(w)?;
        }
        self.rays.rebuild(self.worlds.poses());
        for &w in &list {
            self.drive.reset(w);
            self.lidars.reset_world(w)?;
            self.clocks[w].ticks = 0;
        }
        if let Some(mut task) = self.task.take() {
            for &w in &list {
                task.restart(self, w);
            }
            self.task = Some(task);
        }
        Ok(())
    }

    /// Ends world `w`'s episode if it has run: finishes its recording as `status`, or as
    /// `unstable` (and says so) if MuJoCo found the world unstable.
    pub(crate) fn end_episode(&mut self, w: usize, mut status: EpisodeStatus) -> Result<(), SimError> {
        let clock = self.clocks[w];
        if clock.ticks == 0 {
            return Ok(());
        }
        if self.worlds.unstable(w) {
            self.warnings.push(Warning::WorldUnstable { world: w, episode: clock.episode });
            status = EpisodeStatus::Unstable;
        }
        if let Some(recording) = &mut self.recording {
            let length = clock.ticks as f64 * self.runner.dt;
            let variant = self.world_variant[w].map(|k| self.variants[k].name.as_str());
            recording.end_episode((w, &self.drawn[w], variant), status, length, &mut self.warnings)?;
        }
        self.clocks[w] = EpisodeClock { ticks: 0, episode: clock.episode + 1 };
        Ok(())
    }

    /// Runs `f` with this simulation on a worker of the thread pool, so that the steps and
    /// observations it makes hand work to the pool once: called from a thread outside the
    /// pool, each [`Simulation::step`] and [`Simulation::observe_all`] wakes the pool and waits
    /// for it on its own (about 5 % of a 16-world gym step, measured).
    pub fn in_pool<R: Send>(&mut self, f: impl FnOnce(&mut Simulation) -> R + Send) -> R {
        rayon::scope(|_| f(self))
    }

    /// One agent step: sets every world's controls (from `actions`, `nworld × nu` values world
    /// after world, or else from the controller), runs the physics steps of one lidar tick in
    /// every world, refits the ray caster, ticks every lidar (when live or recording), and
    /// writes the tick when recording.
    pub fn step(&mut self, actions: Option<&[f64]>) -> Result<StepReport, SimError> {
        self.apply_controls(actions)?;
        self.advance()
    }

    /// One agent step driven by an agent in world `world`: its `actions` (one per actuator,
    /// [`Simulation::actuators`]) are clamped to each actuator's control range and set as
    /// that world's controls, the controller drives the other worlds, and the step goes on as
    /// [`Simulation::step`]. A wrong length or a value that is not finite is an error naming
    /// it, and nothing is stepped.
    pub fn step_agent(&mut self, world: usize, actions: &[f64]) -> Result<StepReport, SimError> {
        self.world_ok(world)?;
        let ranges = self.model.actuator_ctrlrange();
        if actions.len() != ranges.len() {
            return Err(SimError::BufferLength {
                what: "the action vector",
                len: actions.len(),
                expected: format!("the model has {} actuators (nu), one action each", ranges.len()),
            });
        }
        if let Some(i) = actions.iter().position(|a| !a.is_finite()) {
            return Err(SimError::Setting(format!(
                "action {i} ({}) is {}: every action must be a finite number",
                self.actuators()[i].0,
                actions[i]
            )));
        }
        let clamped: Vec<f64> =
            actions.iter().zip(&ranges).map(|(&a, range)| range.map_or(a, |[lo, hi]| a.clamp(lo, hi))).collect();
        self.apply_controls(None)?;
        self.worlds.set_ctrl(world, &clamped)?;
        self.advance()
    }

    /// The step after the controls are set: physics, refit, lidar tick, recording.
    fn advance(&mut self) -> Result<StepReport, SimError> {
        // On a worker of the thread pool: the step's parallel parts then start from inside
        // the pool, rather than each waking the pool and waiting on it from outside.
        rayon::scope(|_| self.advance_in_pool())
    }

    fn advance_in_pool(&mut self) -> Result<StepReport, SimError> {
        let nworld = self.nworld();
        // Each world's top level is refitted right after its physics, on the same thread.
        match self.rays.top_levels(nworld) {
            Some(tops) => self.worlds.step_then(self.runner.steps, tops, |mut top, xpos, xmat| top.refit(xpos, xmat)),
            None => {
                self.worlds.step(self.runner.steps);
                self.rays.refit(self.worlds.poses());
            }
        }
        let times: Vec<f64> = (0..nworld).map(|w| self.worlds.time(w)).collect();
        let recording = self.recording.is_some();
        let started = Instant::now();
        // An observation that reads a lidar needs it cast on every step, live or not.
        let force = recording || self.observation.reads_lidar();
        let fired = self.lidars.live() || force;
        self.lidars.tick(&self.scene, self.worlds.poses(), &self.rays, self.runner.dt, &times, force)?;
        let lidar_seconds = started.elapsed().as_secs_f64();
        for clock in &mut self.clocks {
            clock.ticks += 1;
        }
        if fired {
            self.count_and_record(&times)?;
        }
        let status = (0..nworld).map(|w| self.status(w)).collect();
        let task = match self.task.take() {
            Some(mut state) => {
                let outcomes = (0..nworld).map(|w| state.evaluate(self, w)).collect();
                self.task = Some(state);
                outcomes
            }
            None => Vec::new(),
        };
        Ok(StepReport { status, time: times, lidar_seconds, task })
    }

    fn apply_controls(&mut self, actions: Option<&[f64]>) -> Result<(), SimError> {
        let (nworld, nu) = (self.nworld(), self.model.nu());
        let Some(actions) = actions else {
            for w in 0..nworld {
                let t = self.clocks[w].ticks as f64 * self.runner.dt;
                self.drive.apply(&mut self.worlds, w, t)?;
            }
            return Ok(());
        };
        if actions.len() != nworld * nu {
            return Err(SimError::BufferLength {
                what: "the action array",
                len: actions.len(),
                expected: format!("a step takes nworld × nu = {nworld} × {nu} controls, world after world"),
            });
        }
        for w in 0..nworld {
            self.worlds.set_ctrl(w, &actions[w * nu..(w + 1) * nu])?;
        }
        Ok(())
    }

    /// Counts the beams and hits of the tick just cast and writes it to the recording.
    fn count_and_record(&mut self, times: &[f64]) -> Result<(), SimError> {
        let mut beams = std::mem::take(&mut self.beams);
        for (s, stats) in self.stats.iter_mut().enumerate() {
            for (w, &time) in times.iter().enumerate() {
                let (cast, hits) = self.lidars.last_tick_counts(s, w)?;
                stats.beams += cast;
                stats.hits += hits;
                if let Some(recording) = &mut self.recording {
                    self.lidars.last_tick_beams(s, w, &mut beams)?;
                    let scan = self.lidars.scan(s, w)?;
                    let frame = self.lidars.frame(s, w, self.worlds.poses())?;
                    let episode_seed = episode_seed(self.seed, self.episodes[w]);
                    let tick = SensorTick { sensor: s, time, scan, beams: &beams, frame, episode_seed };
                    recording.write(w, &tick, &mut self.warnings)?;
                }
            }
        }
        self.beams = beams;
        self.record_cameras(times)
    }

    fn status(&self, w: usize) -> WorldStatus {
        if self.worlds.unstable(w) {
            WorldStatus::Unstable
        } else if self.episode_ticks.is_some_and(|n| self.clocks[w].ticks >= n) {
            WorldStatus::Ended
        } else {
            WorldStatus::Ok
        }
    }

    /// The manifest's `[task]`, if it has one.
    pub fn task(&self) -> Option<&glint_manifest::Task> {
        self.task.as_ref().map(TaskState::task)
    }

    /// Lidar ticks world `w` has run in its episode.
    pub fn episode_tick(&self, w: usize) -> Result<u64, SimError> {
        self.world_ok(w)?;
        Ok(self.clocks[w].ticks)
    }

    /// Beams sensor `sensor` has cast and hit, over every world since the simulation was built.
    pub fn lidar_stats(&self, sensor: usize) -> Result<LidarStats, SimError> {
        self.stats.get(sensor).copied().ok_or(SimError::NoSuchSensor { index: sensor, count: self.stats.len() })
    }

    /// Where the body the controller steers is in world `w` (its name and world x, y), when the
    /// controller steers one (waypoints).
    pub fn steered_body(&self, w: usize) -> Option<(String, [f64; 2])> {
        self.drive.position(&self.worlds, w)
    }

    /// Rays through every world with MuJoCo's `mj_multiRay` semantics: distances, geoms and
    /// normals shaped `(nworld, nray)`, `-1` for a miss.
    pub fn rays(&self, batch: &RayBatch, filter: &RayFilter) -> Result<RayHits, SimError> {
        Ok(self.rays.rays(&self.scene, self.worlds.poses(), batch, filter)?)
    }

    /// Applies a return-model preset: every one of the seventeen parameters takes its value.
    pub fn set_return_preset(&mut self, preset: ReturnPreset) {
        self.lidars.set_return_preset(preset);
    }

    /// Writes the nine base return parameters (the seed's `SetLidarReturnParams`), keeping the
    /// eight optics parameters; nothing changes on an error.
    pub fn set_return_params(&mut self, base: [f64; 9]) -> Result<(), SimError> {
        Ok(self.lidars.set_return_base(base)?)
    }

    /// Writes all seventeen return parameters (`SetLidarReturnParamsEx`); nothing changes on
    /// an error.
    pub fn set_return_params_ex(&mut self, params: ReturnParams) -> Result<(), SimError> {
        Ok(self.lidars.set_return_params(params)?)
    }

    /// The return model's calibration.
    pub fn return_params(&self) -> ReturnParams {
        self.lidars.return_params()
    }

    /// Ticks world `w` has run in its episode.
    pub(crate) fn clocks_ticks(&self, w: usize) -> u64 {
        self.clocks[w].ticks
    }

    /// The seed of world `w`'s episode.
    pub(crate) fn world_episode_seed(&self, w: usize) -> u64 {
        episode_seed(self.seed, self.episodes[w])
    }

    /// Seconds of simulated time per lidar tick (one agent step).
    pub fn runner_dt(&self) -> f64 {
        self.runner.dt
    }

    /// Whether a recording is armed.
    pub fn recording(&self) -> bool {
        self.recording.is_some()
    }

    /// Arms a recording: a new session folder under `options.out` (default: the manifest's
    /// `[recorder] output_dir`) with video proxies as the recorder asks. Each world's episode
    /// is recorded from its next step until its next reset or [`Simulation::stop_recording`].
    /// As the seed's recorder does when it arms, every lidar's scan configuration goes back
    /// to the scene's (changes made with `set_config` are undone) while secondary-capture
    /// choices are kept. Returns the session folder.
    pub fn arm_recording(&mut self, options: &RecordingOptions) -> Result<PathBuf, SimError> {
        if self.recording.is_some() {
            return Err(SimError::NotRecording("a recording is already armed: stop it before arming another"));
        }
        for (s, binding) in self.bindings.iter().enumerate() {
            if self.lidars.config(s)? != binding.scan {
                self.lidars.set_config(s, binding.scan)?;
            }
            self.lidars.set_secondary_capture(s, binding.secondary_capture, binding.secondary_scope)?;
        }
        let out = options.out.clone().unwrap_or_else(|| self.setup.recorder.output_dir.clone());
        let info = self.session_info(options.episodes);
        let r = &self.setup.recorder;
        let video = VideoSettings { all_sensors: r.record_video_proxy, colour_by: r.video_colour_by };
        let cameras = self.recorded_cameras();
        crate::memory::check_recording(self.nworld(), &self.rows_per_episode())?;
        let recording = Recording::create(&out, &info, (video, cameras), &mut self.warnings)?;
        let dir = recording.dir().to_path_buf();
        self.recording = Some(recording);
        self.apply_keep_surfaces();
        Ok(dir)
    }

    /// Per lidar, the rows a recorded episode gets (`None` without a set episode length):
    /// the beams it casts a tick, at most a revolution's, over the episode's ticks.
    fn rows_per_episode(&self) -> Vec<Option<u64>> {
        let hz = self.setup.recorder.lidar_runner_hz;
        let per_tick = |b: &LidarBinding| {
            let beams = b.scan.beam_count() as f64;
            let share = if b.scan.rotation_hz > 0.0 { (b.scan.rotation_hz / hz).min(1.0) } else { 1.0 };
            (beams * share).ceil() as u64
        };
        self.bindings.iter().map(|b| self.episode_ticks.map(|ticks| per_tick(b) * ticks)).collect()
    }

    fn session_info(&self, episodes: u32) -> SessionInfo {
        let manifest = self.setup.manifest.clone().unwrap_or_default();
        SessionInfo {
            manifest_text: std::fs::read_to_string(&manifest).unwrap_or_default(),
            manifest,
            scene: self.setup.scene.clone().unwrap_or_default(),
            seed: self.seed,
            episodes: episodes * self.nworld() as u32,
            seconds_per_episode: self.episode_ticks.map_or(0.0, |n| n as f64 * self.runner.dt),
            worlds: self.nworld(),
            physics_timestep: self.model.timestep(),
            lidar_runner_hz: self.setup.recorder.lidar_runner_hz,
            controller: format!("{:?}", self.setup.controller),
            mujoco_version: Model::mujoco_version(),
            sensors: self.bindings.clone(),
        }
    }

    /// Stops the recording: every world's open episode is finished as `status` (interrupted,
    /// when a run was stopped early; `unstable` for a world MuJoCo found unstable), and the
    /// secondary-capture choices made while recording take effect. Returns what the recording wrote.
    pub fn stop_recording(&mut self, status: EpisodeStatus) -> Result<RecordingSummary, SimError> {
        let recording = self.recording.as_mut().ok_or(SimError::NotRecording("no recording is armed"))?;
        for (w, clock) in self.clocks.iter().enumerate() {
            let status = if self.worlds.unstable(w) { EpisodeStatus::Unstable } else { status };
            let length = clock.ticks as f64 * self.runner.dt;
            let variant = self.world_variant[w].map(|k| self.variants[k].name.as_str());
            recording.end_episode((w, &self.drawn[w], variant), status, length, &mut self.warnings)?;
        }
        let summary = recording.summary();
        self.recording = None;
        self.apply_keep_surfaces();
        for (s, binding) in self.bindings.iter().enumerate() {
            self.lidars.set_secondary_capture(s, binding.secondary_capture, binding.secondary_scope)?;
        }
        Ok(summary)
    }

    /// The scene's binding of sensor `s` (what a recording starts from).
    pub(crate) fn scene_binding_mut(&mut self, s: usize) -> &mut LidarBinding {
        &mut self.bindings[s]
    }
}

/// The lidar ticks of an episode of `seconds`, refused unless it is a whole number of ticks
/// (an episode length is never rounded); the error names the nearest lengths that are.
fn whole_ticks(seconds: f64, runner: Runner) -> Result<u64, SimError> {
    let hz = 1.0 / runner.dt;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(SimError::Rate(format!("the episode length is {seconds} s: give a positive number of seconds")));
    }
    let ticks = seconds / runner.dt;
    let whole = ticks.round();
    if whole >= 1.0 && (ticks - whole).abs() <= 1e-6 * whole.max(1.0) {
        return Ok(whole as u64);
    }
    let length = |n: f64| format!("{} s ({n} ticks)", trim(n * runner.dt));
    let (below, above) = (ticks.floor().max(1.0), ticks.floor().max(0.0) + 1.0);
    let choices = if below == above { length(above) } else { format!("{} or {}", length(below), length(above)) };
    Err(SimError::Rate(format!(
        "an episode of {seconds} s is {ticks:.3} lidar ticks of {} s (lidar_runner_hz = {}), not a whole number: \
         give a whole number of ticks, such as {choices}, or change [recorder] lidar_runner_hz",
        trim(runner.dt),
        trim(hz)
    )))
}

/// `v` with at most six decimals and no trailing zeros.
fn trim(v: f64) -> String {
    let text = format!("{v:.6}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// Refuses a configuration of sensor `sensor` that turns faster than one revolution per tick
/// of `runner` (the seed: a sensor cannot scan faster than one revolution per tick).
pub(crate) fn check_rotation(sensor: usize, config: &ScanConfig, runner: Runner) -> Result<(), SimError> {
    let hz = 1.0 / runner.dt;
    if config.rotation_hz > hz * (1.0 + 1e-9) {
        return Err(SimError::Rate(format!(
            "lidar sensor {sensor}: rotation_hz = {} is above the lidar runner's {} ticks per second, and a sensor \
             cannot scan faster than one revolution per tick: give rotation_hz at most {}, or raise \
             [recorder] lidar_runner_hz",
            trim(config.rotation_hz),
            trim(hz),
            trim(hz)
        )));
    }
    Ok(())
}

/// The manifest's scene, lit by its rig when `use_scenario_lights` is on (the rig applied
/// through MuJoCo's model editing before compiling), with what the rig warns about; a rig
/// without the opt-in is ignored, as the seed says, with a warning.
///
/// With `[variants]`, also the spec the variants compile from (the lit one when lit).
fn lit_model(manifest: &Manifest) -> Result<(Model, Vec<Warning>, Option<SceneSpec>), SimError> {
    let rig = &manifest.lights;
    let variants = !manifest.variants.is_empty();
    if manifest.use_scenario_lights {
        let (model, translation, spec) = LitScene::from_xml_file(&manifest.scene, rig)?.into_parts();
        let warnings = translation.warnings.into_iter().map(Warning::Light).collect();
        return Ok((model, warnings, variants.then_some(spec)));
    }
    let model = Model::from_xml_file(&manifest.scene)?;
    let ignored = (!rig.lights.is_empty()).then_some(Warning::RigIgnored { lights: rig.lights.len() });
    let spec = if variants { Some(SceneSpec::from_xml_file(&manifest.scene)?) } else { None };
    Ok((model, ignored.into_iter().collect(), spec))
}
