//! The small public types of a simulation's calls: how it is set up, which worlds a call acts
//! on, how a world's episode stands and what a step did.

use std::path::PathBuf;

use crate::task::TaskOutcome;

/// How a simulation is set up beyond its scene.
#[derive(Clone, Debug, PartialEq)]
pub struct SimOptions {
    /// Worlds simulated side by side (default 1).
    pub nworld: usize,
    /// The run seed (default: the manifest's `[return_model] seed`): each episode's seed
    /// derives from it and the episode's index ([`crate::Simulation::episode_seed`]).
    pub seed: Option<u64>,
    /// Simulated seconds per episode, a whole number of lidar ticks (else refused): a world
    /// reports [`WorldStatus::Ended`] once its episode is that long (default: episodes never
    /// end).
    pub episode_seconds: Option<f64>,
    /// The project folder bakes are saved in (`MaterialBakes/`) and recordings go under by
    /// default (default: the manifest's folder, or the current folder for a bare MJCF).
    pub project_dir: Option<PathBuf>,
    /// The lidar runner's rate, ticks per second, kept exactly or refused (a whole number of
    /// physics steps per tick); it wins over a manifest's `[recorder] lidar_runner_hz`. Default:
    /// the manifest's, else 100 where the timestep realises it and the nearest rate it realises
    /// otherwise (with [`crate::Warning::RunnerRate`] when the scene has lidars).
    pub runner_hz: Option<f64>,
    /// The index of the first episode (default 0): what its seed derives from and the number
    /// its files get in a recording. A run split across processes gives each its range of
    /// episodes, and each episode is then the same as in one run of them all.
    pub first_episode: u64,
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions {
            nworld: 1,
            seed: None,
            episode_seconds: None,
            project_dir: None,
            runner_hz: None,
            first_episode: 0,
        }
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
    /// stepping until it is reset, and those steps belong to no episode (no output writes
    /// them).
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
    /// Per world, simulated seconds since its episode began: MuJoCo's clock, the one
    /// definition of simulated time ([`crate::Simulation::time`] reads the same).
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
