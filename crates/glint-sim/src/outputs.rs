//! The output seam: what a tick produces goes to every output, one frame at a time (per
//! sensor unit and world), and so do the ends of episodes. An output says which frames it
//! wants ([`Output::wants`]): a sensor whose frames nobody wants (a camera between its
//! recording's frames) does not cast them. A world's episode begins for an output with the
//! first frame it gets of it, and ends with [`Output::end_episode`]; the ticks a world runs
//! after its episode reached its length, before it is reset, belong to no episode and are
//! not written.
//!
//! The Parquet session ([`crate::Simulation::arm_recording`]) is an output; a new format is
//! added with [`crate::Simulation::add_output`]. The gRPC server's snapshot is not one: an
//! output is handed every frame of every tick, and the server copies the sensors' last frames
//! only when a client may read them (`glint-server/src/engine.rs`), so a loop nobody polls
//! copies nothing.

use std::collections::BTreeMap;

use glint_record::EpisodeStatus;

use crate::sensors::{Frame, SensorKind};
use crate::{SimError, Warning};

/// One frame a tick produced, as an output gets it.
#[derive(Clone, Copy)]
pub struct TickFrame<'a> {
    /// The world.
    pub world: usize,
    /// MuJoCo's clock of the world: simulated seconds since its episode began.
    pub time: f64,
    /// The ticks the world's episode has run, this one included (1: its first).
    pub tick: u64,
    /// The world's episode index and seed.
    pub episode: (u64, u64),
    /// Which sensor: its kind and its position among the simulation's sensors.
    pub sensor: (SensorKind, usize),
    /// The sensor's unit (a lidar, a camera slot; 0 for a one-unit sensor).
    pub unit: usize,
    /// The unit's name.
    pub name: &'a str,
    /// What the unit produced.
    pub frame: Frame<'a>,
}

/// An episode's end, as an output hears of it.
#[derive(Clone, Copy, Debug)]
pub struct EpisodeClose<'a> {
    /// The world it ran in.
    pub world: usize,
    /// How it ended.
    pub status: EpisodeStatus,
    /// Lidar ticks it ran.
    pub ticks: u64,
    /// Its simulated length: ticks × the tick's length, seconds.
    pub length_s: f64,
    /// What the world drew from `[randomize]` for it, by `field/target`.
    pub drawn: &'a BTreeMap<String, Vec<f64>>,
    /// The variant (per-world assets) the world was on.
    pub variant: Option<&'a str>,
}

/// An output of a simulation (see the module's docs).
pub trait Output: Send {
    /// Whether it takes unit `unit` of sensor `sensor` (kind, position) in world `world` at
    /// episode tick `tick` (1: the episode's first). Every frame by default.
    fn wants(&self, _sensor: (SensorKind, usize), _unit: usize, _world: usize, _tick: u64) -> bool {
        true
    }

    /// Whether it reads the hit points and normals of lidar scans (so the lidars keep them).
    fn reads_surfaces(&self) -> bool {
        false
    }

    /// Takes one frame.
    fn write(&mut self, frame: &TickFrame) -> Result<(), SimError>;

    /// World `end.world`'s episode ended.
    fn end_episode(&mut self, _end: &EpisodeClose) -> Result<(), SimError> {
        Ok(())
    }

    /// What it had to warn about since the last call.
    fn take_warnings(&mut self) -> Vec<Warning> {
        Vec::new()
    }
}

/// The outputs of a simulation: the armed recording, if any, and the ones added.
#[derive(Default)]
pub(crate) struct Outputs {
    /// The Parquet session, while armed.
    pub(crate) recording: Option<crate::recording::Recording>,
    added: Vec<Box<dyn Output>>,
}

impl Outputs {
    /// Adds an output.
    pub(crate) fn add(&mut self, output: Box<dyn Output>) {
        self.added.push(output);
    }

    /// Every output, the recording first.
    fn all(&self) -> impl Iterator<Item = &(dyn Output + 'static)> {
        self.recording.iter().map(|r| r as &dyn Output).chain(self.added.iter().map(|o| &**o))
    }

    fn all_mut(&mut self) -> impl Iterator<Item = &mut (dyn Output + 'static)> {
        self.recording.iter_mut().map(|r| r as &mut dyn Output).chain(self.added.iter_mut().map(|o| &mut **o))
    }

    /// Whether any output takes that frame.
    pub(crate) fn wants(&self, sensor: (SensorKind, usize), unit: usize, world: usize, tick: u64) -> bool {
        self.all().any(|o| o.wants(sensor, unit, world, tick))
    }

    /// Whether any output reads lidar surfaces.
    pub(crate) fn reads_surfaces(&self) -> bool {
        self.all().any(|o| o.reads_surfaces())
    }

    /// Hands `frame` to every output that wants it; their warnings go to `warnings`.
    pub(crate) fn write(&mut self, frame: &TickFrame, warnings: &mut Vec<Warning>) -> Result<(), SimError> {
        for output in self.all_mut() {
            if output.wants(frame.sensor, frame.unit, frame.world, frame.tick) {
                output.write(frame)?;
                warnings.extend(output.take_warnings());
            }
        }
        Ok(())
    }

    /// Tells every output that an episode ended.
    pub(crate) fn end_episode(&mut self, end: &EpisodeClose, warnings: &mut Vec<Warning>) -> Result<(), SimError> {
        for output in self.all_mut() {
            output.end_episode(end)?;
            warnings.extend(output.take_warnings());
        }
        Ok(())
    }
}
