//! The episode loop: episodes of every world, one [`Simulation::step`] per lidar tick, until
//! each episode has run its length or the caller asks to stop (`glint run`, `glint bench
//! record`).

use std::time::Instant;

use glint_record::EpisodeStatus;

use crate::{RecordingSummary, SimError, Simulation, StepReport, Warning, Worlds};

/// What a front end hears of a run, and how it stops one.
pub trait RunObserver {
    /// Episode `episode` (counted from 0 over the run) begins in every world.
    fn episode_started(&mut self, _episode: u32, _ticks: u64) {}

    /// A step of the episode has run.
    fn stepped(&mut self, _report: &StepReport) {}

    /// Episode `episode` has ended in every world (the simulation holds its final state).
    fn episode_ended(&mut self, _episode: u32, _sim: &Simulation) {}

    /// Whether to stop: checked before every step. The episode in progress is ended as
    /// interrupted.
    fn stop(&self) -> bool {
        false
    }

    /// Something to pass on to the user, as it happens (the simulation's warnings are drained
    /// into this during a run).
    fn warning(&mut self, warning: Warning);
}

/// A run that says nothing (its warnings are dropped) and runs to its end.
#[derive(Clone, Copy, Debug, Default)]
pub struct Quiet;

impl RunObserver for Quiet {
    fn warning(&mut self, _warning: Warning) {}
}

/// What a run did.
#[derive(Clone, Debug, PartialEq)]
pub struct RunOutcome {
    /// Episodes run (the last one perhaps interrupted), per world.
    pub episodes: u32,
    /// Simulated seconds over every world.
    pub sim_seconds: f64,
    /// Wall-clock seconds of the episodes, their files finished.
    pub wall_seconds: f64,
    /// Whether the observer stopped it.
    pub interrupted: bool,
    /// What the recording wrote, if one was armed.
    pub recording: Option<RecordingSummary>,
}

impl Simulation {
    /// Runs `episodes` episodes in every world: each begins with a reset and runs
    /// [`Simulation::episode_ticks`] steps with the controller. A recording, if armed, gets
    /// every world's episodes and is stopped at the end (the last episode marked interrupted
    /// if the observer stopped the run).
    pub fn run(&mut self, episodes: u32, observer: &mut impl RunObserver) -> Result<RunOutcome, SimError> {
        let ticks = self.episode_ticks().ok_or(SimError::NoEpisodeLength)?;
        let dt = self.runner().dt;
        let started = Instant::now();
        let (mut sim_seconds, mut interrupted, mut run) = (0.0, false, 0);
        for episode in 0..episodes {
            self.reset(Worlds::All, None)?;
            self.pass_warnings(observer);
            observer.episode_started(episode, ticks);
            let mut done = 0;
            while done < ticks {
                if observer.stop() {
                    interrupted = true;
                    break;
                }
                let report = self.step(None)?;
                self.pass_warnings(observer);
                observer.stepped(&report);
                done += 1;
            }
            sim_seconds += done as f64 * dt * self.nworld() as f64;
            run += 1;
            observer.episode_ended(episode, self);
            if interrupted {
                break;
            }
        }
        let status = if interrupted { EpisodeStatus::Interrupted } else { EpisodeStatus::Complete };
        self.end_episodes(status)?;
        let recording = if self.recording() { Some(self.stop_recording(status)?) } else { None };
        let wall_seconds = started.elapsed().as_secs_f64();
        self.pass_warnings(observer);
        Ok(RunOutcome { episodes: run, sim_seconds, wall_seconds, interrupted, recording })
    }

    fn pass_warnings(&mut self, observer: &mut impl RunObserver) {
        for w in self.take_warnings() {
            observer.warning(w);
        }
    }
}
