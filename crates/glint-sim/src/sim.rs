//! The [`Simulation`]: the MuJoCo model and its worlds, the ray caster, and the parts it
//! orchestrates, each with its own small API: the [`Episodes`] (seeds, ticks, ends, the
//! task), the sensors behind the [`Sensor`] seam (the lidars, the cameras, any added), the
//! world state (per-world fields and variants), and the outputs behind the [`Output`] seam
//! (the Parquet recording, any added). [`Simulation::step`] is the one place where controls,
//! physics, refit, sensor ticks and outputs follow each other; it knows no sensor or output by
//! name.

mod build;
mod cameras;
#[path = "fields.rs"]
pub(crate) mod fields;
mod lidar;
#[path = "materials.rs"]
pub(crate) mod materials;
mod observe;
mod rangefinders;
mod recording;
mod world;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use glint_core::{RayCaster, Scene};
use glint_lidar::Runner;
use glint_manifest::{BakeConfig, Controller, Recorder, ResetConfig};
use glint_mujoco::{Model, VariantModel, WorldBatch};
use glint_record::EpisodeStatus;

use crate::controller::Drive;
use crate::episodes::Episodes;
use crate::fields::Fields;
use crate::materials::LoadedBake;
use crate::observation::ObservationLayout;
use crate::outputs::{EpisodeClose, Output, Outputs, TickFrame};
use crate::randomize::FieldDraws;
use crate::reset::Randomizer;
use crate::sensors::{Demand, Sensor, SensorContext, Sensors};
use crate::task::TaskState;
use crate::{SimError, StepReport, Warning, WorldStatus, Worlds};

pub(crate) use lidar::fill;
pub use lidar::{Lidar, LidarMut};
pub use world::VariantPlan;

/// The parts of a manifest a simulation keeps (defaults for a bare MJCF scene).
#[derive(Clone, Debug)]
pub(crate) struct Setup {
    pub(crate) manifest: Option<PathBuf>,
    pub(crate) scene: Option<PathBuf>,
    pub(crate) recorder: Recorder,
    pub(crate) bake: BakeConfig,
    pub(crate) table: glint_lidar::MaterialTable,
    pub(crate) controller: Controller,
    pub(crate) reset: ResetConfig,
    pub(crate) project_dir: PathBuf,
}

/// Each world's state beyond MuJoCo's data: its model fields, the variant it is on, and what
/// its episode drew from `[randomize]`.
struct WorldState {
    fields: Fields,
    draws: FieldDraws,
    drawn: Vec<BTreeMap<String, Vec<f64>>>,
    variants: Vec<VariantModel>,
    variant_of: Vec<Option<usize>>,
}

impl WorldState {
    fn variant_name(&self, w: usize) -> Option<&str> {
        self.variant_of[w].map(|k| self.variants[k].name.as_str())
    }
}

/// One simulated scene over a batch of worlds, with every sensor on it (`spec/sim.md`).
pub struct Simulation {
    model: Model,
    scene: Arc<Scene>,
    worlds: WorldBatch,
    rays: RayCaster,
    runner: Runner,
    episodes: Episodes,
    /// The built-in task (`[task]`), with each world's state.
    task: Option<TaskState>,
    drive: Drive,
    /// The `[reset]` draws of each episode's initial state.
    randomizer: Randomizer,
    world: WorldState,
    sensors: Sensors,
    outputs: Outputs,
    bake: Option<LoadedBake>,
    /// The task contract's observation vector (`[[observation]]`).
    observation: ObservationLayout,
    setup: Setup,
    warnings: Vec<Warning>,
}

/// World `w`'s open episode as its outputs hear of its end, if it has run: its ticks, its
/// length, its status (`unstable` wins: MuJoCo found the world unstable), what it drew and the
/// variant it ran on.
fn closing<'a>(
    episodes: &Episodes,
    worlds: &WorldBatch,
    world: &'a WorldState,
    w: usize,
    status: EpisodeStatus,
) -> Option<EpisodeClose<'a>> {
    let ticks = episodes.ticks(w);
    episodes.running(w).then(|| EpisodeClose {
        world: w,
        status: if worlds.unstable(w) { EpisodeStatus::Unstable } else { status },
        ticks,
        length_s: episodes.seconds(ticks),
        drawn: &world.drawn[w],
        variant: world.variant_name(w),
    })
}

impl std::fmt::Debug for Simulation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Simulation")
            .field("nworld", &self.nworld())
            .field("lidars", &self.lidar_count())
            .field("manifest", &self.setup.manifest)
            .finish_non_exhaustive()
    }
}

impl Simulation {
    /// Number of worlds.
    pub fn nworld(&self) -> usize {
        self.worlds.nworld()
    }

    /// The immutable scene every world shares.
    pub fn scene(&self) -> &Scene {
        &self.scene
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

    /// Seconds of simulated time per lidar tick (one agent step).
    pub fn runner_dt(&self) -> f64 {
        self.runner.dt
    }

    /// The lidar runner's rate, ticks per second: the one asked for, or the default (100), or
    /// the nearest to it the timestep realises ([`crate::SimOptions::runner_hz`]).
    pub fn runner_hz(&self) -> f64 {
        self.setup.recorder.lidar_runner_hz.unwrap_or(1.0 / self.runner.dt)
    }

    /// Lidar ticks per episode, when episodes have a length.
    pub fn episode_ticks(&self) -> Option<u64> {
        self.episodes.length()
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
        self.episodes.run_seed()
    }

    /// The seed of world `w`'s episode: [`glint_lidar::episode_seed`] of the run seed and the
    /// episode's index ([`Simulation::episode_index`]). It keys the return model's randomness
    /// and the `[reset]` draws of the episode's initial state.
    pub fn episode_seed(&self, w: usize) -> Result<u64, SimError> {
        self.world_ok(w)?;
        Ok(self.episodes.seed(w))
    }

    /// The index of world `w`'s episode: worlds start as episodes `0..nworld`, and each reset
    /// of a world whose episode has run gives it the next index (a reset with a seed numbers
    /// from 0 again).
    pub fn episode_index(&self, w: usize) -> Result<u64, SimError> {
        self.world_ok(w)?;
        Ok(self.episodes.index(w))
    }

    /// Lidar ticks world `w` has run in its episode.
    pub fn episode_tick(&self, w: usize) -> Result<u64, SimError> {
        self.world_ok(w)?;
        Ok(self.episodes.ticks(w))
    }

    /// Each world's simulated seconds since its episode began: MuJoCo's clock, as
    /// [`StepReport::time`] and the recordings' timestamps read it.
    pub fn time(&self) -> Vec<f64> {
        (0..self.nworld()).map(|w| self.worlds.time(w)).collect()
    }

    /// What every call since the last one had to warn about, oldest first.
    pub fn take_warnings(&mut self) -> Vec<Warning> {
        std::mem::take(&mut self.warnings)
    }

    /// An error unless world `world` exists.
    pub(crate) fn world_ok(&self, world: usize) -> Result<(), SimError> {
        let nworld = self.nworld();
        if world < nworld { Ok(()) } else { Err(SimError::NoSuchWorld { world, nworld }) }
    }

    /// The worlds `worlds` names, checked.
    fn world_list(&self, worlds: Worlds) -> Result<Vec<usize>, SimError> {
        let list = match worlds {
            Worlds::All => (0..self.nworld()).collect(),
            Worlds::One(w) => vec![w],
            Worlds::These(ws) => ws.to_vec(),
        };
        list.iter().try_for_each(|&w| self.world_ok(w))?;
        Ok(list)
    }

    /// Adds a sensor: from the next step it ticks with the others, for the worlds its outputs
    /// (or its own [`Sensor::fires`]) ask for, and restarts with every episode. Returns its
    /// position among the sensors (what [`crate::TickFrame::sensor`] gives).
    pub fn add_sensor(&mut self, sensor: Box<dyn Sensor>) -> usize {
        self.sensors.added.push(sensor);
        self.sensors.count() - 1
    }

    /// Adds an output: from the next step it gets the frames it wants and the episodes' ends.
    pub fn add_output(&mut self, output: Box<dyn Output>) {
        self.outputs.add(output);
        self.apply_surfaces();
    }

    /// Whether the lidars keep hit points and normals: as asked, or while an output reads
    /// them.
    fn apply_surfaces(&mut self) {
        let read = self.outputs.reads_surfaces();
        self.sensors.lidars.apply_surfaces(read);
    }

    /// A new episode in `worlds`: the episode that was running there ends (its outputs get
    /// its end as complete), MuJoCo resets the world to the model's initial state, the
    /// `[reset]` and `[randomize]` draws are made, and the controller, the task and every
    /// sensor start over. With `seed`, the run seed becomes `seed` and the worlds reset are
    /// numbered from 0 again, in order: the same seed gives the same episodes.
    pub fn reset(&mut self, worlds: Worlds, seed: Option<u64>) -> Result<(), SimError> {
        let list = self.world_list(worlds)?;
        if let Some(seed) = seed {
            self.episodes.reseed(seed);
        }
        for &w in &list {
            self.episodes.number(w, seed.is_some());
            self.end_episode(w, EpisodeStatus::Complete, false)?;
        }
        if list.len() == self.nworld() {
            self.worlds.reset();
        } else {
            list.iter().try_for_each(|&w| self.worlds.reset_world(w))?;
        }
        for &w in &list {
            self.randomizer.apply(&mut self.worlds, w, self.episodes.seed(w))?;
            self.draw_fields(w)?;
        }
        self.rays.rebuild(self.worlds.poses());
        for &w in &list {
            self.drive.reset(w);
            let seed = self.episodes.seed(w);
            for k in 0..self.sensors.count() {
                if let Some(sensor) = self.sensors.get_mut(k) {
                    sensor.restart(w, seed)?;
                }
            }
            if let Some(task) = &mut self.task {
                task.restart(&self.scene, self.worlds.poses(), w);
            }
        }
        Ok(())
    }

    /// Ends world `w`'s open episode, if it has run, as `status` (or `unstable`, with a
    /// warning, if MuJoCo found the world unstable) and tells the outputs. `close`: the world
    /// goes on stepping in no episode until it is reset.
    fn end_episode(&mut self, w: usize, status: EpisodeStatus, close: bool) -> Result<(), SimError> {
        let closing = closing(&self.episodes, &self.worlds, &self.world, w, status);
        let Some(finished_before) = self.episodes.end(w, close) else { return Ok(()) };
        if self.worlds.unstable(w) {
            self.warnings.push(Warning::WorldUnstable { world: w, episode: finished_before });
        }
        match closing {
            Some(end) => self.outputs.end_episode(&end, &mut self.warnings),
            None => Ok(()),
        }
    }

    /// One agent step: sets every world's controls (from `actions`, `nworld × nu` values world
    /// after world, or else from the controller), runs the physics steps of one lidar tick in
    /// every world, refits the ray caster, ticks every sensor for what is asked of it, and
    /// hands the frames to the outputs.
    pub fn step(&mut self, actions: Option<&[f64]>) -> Result<StepReport, SimError> {
        self.apply_controls(actions)?;
        self.advance()
    }

    /// One agent step driven by an agent in world `world`: its `actions` (one per actuator,
    /// [`Simulation::actuators`]) are checked ([`crate::check_actions`]), clamped to each
    /// actuator's control range and set as that world's controls, the controller drives the
    /// other worlds, and the step goes on as [`Simulation::step`]. Nothing is stepped on an
    /// error.
    pub fn step_agent(&mut self, world: usize, actions: &[f64]) -> Result<StepReport, SimError> {
        self.world_ok(world)?;
        let ranges = self.model.actuator_ctrlrange();
        crate::actions::check_actions(world, actions, &self.actuators())?;
        let clamped: Vec<f64> =
            actions.iter().zip(&ranges).map(|(&a, range)| range.map_or(a, |[lo, hi]| a.clamp(lo, hi))).collect();
        self.apply_controls(None)?;
        self.worlds.set_ctrl(world, &clamped)?;
        self.advance()
    }

    /// The step after the controls are set: physics, refit, sensors, outputs.
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
        self.episodes.tick();
        let times = self.time();
        let started = Instant::now();
        self.tick_sensors(&times)?;
        let lidar_seconds = started.elapsed().as_secs_f64();
        let status: Vec<WorldStatus> = (0..nworld).map(|w| self.episodes.status(w, self.worlds.unstable(w))).collect();
        // An episode that has run its length is ended now: no later tick is written to it.
        for w in 0..nworld {
            if self.episodes.due_to_end(w) {
                self.end_episode(w, EpisodeStatus::Complete, true)?;
            }
        }
        let task = match &mut self.task {
            Some(state) => (0..nworld).map(|w| state.evaluate(&self.scene, &self.worlds, w)).collect(),
            None => Vec::new(),
        };
        Ok(StepReport { status, time: times, lidar_seconds, task })
    }

    /// Ticks every sensor for what it, its readers and the outputs ask of it, and hands the
    /// frames the outputs take (of the worlds in an open episode) to them.
    fn tick_sensors(&mut self, times: &[f64]) -> Result<(), SimError> {
        let nworld = self.nworld();
        let seeds: Vec<u64> = (0..nworld).map(|w| self.episodes.seed(w)).collect();
        let ticks: Vec<u64> = (0..nworld).map(|w| self.episodes.ticks(w)).collect();
        for k in 0..self.sensors.count() {
            let Some((cast, write)) = self.demand(k, &ticks) else { continue };
            let ctx = SensorContext {
                scene: &self.scene,
                poses: self.worlds.poses(),
                caster: &self.rays,
                dt: self.runner.dt,
                times,
                episode_seeds: &seeds,
                episode_ticks: &ticks,
                materials: &self.setup.table,
                fields: &self.world.fields,
                worlds: &self.worlds,
            };
            let Some(sensor) = self.sensors.get_mut(k) else { continue };
            sensor.tick(&ctx, &cast)?;
            if !write.any() {
                continue;
            }
            let key = (sensor.kind(), k);
            let names: Vec<String> = (0..sensor.units()).map(|u| sensor.unit_name(u)).collect();
            let (outputs, warnings) = (&mut self.outputs, &mut self.warnings);
            for w in (0..nworld).filter(|&w| write.wants_world(w)) {
                let episode = (self.episodes.index(w), seeds[w]);
                sensor.emit(&ctx, w, &write, &mut |unit, frame| {
                    let (name, time, tick) = (&names[unit], times[w], ticks[w]);
                    let frame = TickFrame { world: w, time, tick, episode, sensor: key, unit, name, frame };
                    outputs.write(&frame, warnings)
                })?;
            }
        }
        Ok(())
    }

    /// What sensor `k` is asked for this tick: to cast, each unit in each world that fires on
    /// its own, that the observation reads, or that an output takes; to write, those an output
    /// takes, of the worlds in an open episode. `None` when the sensor is not there.
    fn demand(&self, k: usize, ticks: &[u64]) -> Option<(Demand, Demand)> {
        let sensor = self.sensors.get(k)?;
        let (units, nworld) = (sensor.units(), ticks.len());
        let key = (sensor.kind(), k);
        let (mut cast, mut write) = (Demand::none(units, nworld), Demand::none(units, nworld));
        for unit in 0..units {
            let pinned = sensor.fires(unit) || self.observation.reads(key, unit);
            for (w, &tick) in ticks.iter().enumerate() {
                if self.episodes.open(w) && self.outputs.wants(key, unit, w, tick) {
                    write.ask(unit, w);
                    cast.ask(unit, w);
                } else if pinned {
                    cast.ask(unit, w);
                }
            }
        }
        Some((cast, write))
    }

    fn apply_controls(&mut self, actions: Option<&[f64]>) -> Result<(), SimError> {
        let (nworld, nu) = (self.nworld(), self.model.nu());
        let Some(actions) = actions else {
            for w in 0..nworld {
                let t = self.worlds.time(w);
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
        if actions.iter().any(|a| !a.is_finite()) {
            let actuators = self.actuators();
            for (w, world_actions) in actions.chunks(nu.max(1)).enumerate() {
                crate::actions::check_actions(w, world_actions, &actuators)?;
            }
        }
        for w in 0..nworld {
            self.worlds.set_ctrl(w, &actions[w * nu..(w + 1) * nu])?;
        }
        Ok(())
    }
}
