//! The sensor seam: what every sensor of a simulation shares. A sensor is bound to the model
//! when it is made (a site, a body, a camera), ticks once per agent step after the physics
//! and the ray caster's refit, casts through the [`RayCaster`] for every world it is asked
//! for, and hands each world's frame to the outputs. It reads the scene's materials and its
//! worlds' episode seeds from the [`SensorContext`], and restarts what it keeps per episode
//! when a world is reset.
//!
//! The lidars, the cameras, the model's MJCF rangefinders (`rangefinders.rs`) and the robot's
//! state (`state.rs`) implement
//! [`Sensor`]; a new kind (a depth-sensor model, a user's own) is added with
//! [`crate::Simulation::add_sensor`], and [`crate::Simulation::step`] ticks it without knowing
//! what it is.

use glam::{DMat3, DVec3};
use glint_core::{Poses, RayCaster, Scene};
use glint_lidar::{MaterialTable, Scan};

use crate::SimError;

/// What a sensor reads on a tick.
#[derive(Clone, Copy)]
pub struct SensorContext<'a> {
    /// The scene every world shares.
    pub scene: &'a Scene,
    /// Every world's frames after the tick's physics.
    pub poses: &'a Poses,
    /// The ray caster, refitted to `poses`.
    pub caster: &'a RayCaster,
    /// Seconds of simulated time per tick.
    pub dt: f64,
    /// Per world, MuJoCo's clock: the simulated seconds since its episode began.
    pub times: &'a [f64],
    /// Per world, its episode's seed: what a sensor's randomness is keyed with.
    pub episode_seeds: &'a [u64],
    /// Per world, the ticks its episode has run, this one included.
    pub episode_ticks: &'a [u64],
    /// The scene's near-infrared materials, by MuJoCo material.
    pub materials: &'a MaterialTable,
    /// Each world's model fields (colours, materials, lights) as the cameras read them.
    pub(crate) fields: &'a crate::fields::Fields,
    /// The worlds' MuJoCo data (the robot state sensor reads `qpos`, `qvel`, `ctrl`).
    pub(crate) worlds: &'a glint_mujoco::WorldBatch,
}

/// What kind of sensor a frame comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SensorKind {
    /// The lidars: one unit per bound lidar.
    Lidar,
    /// The cameras: one unit per camera set to render.
    Camera,
    /// The model's MJCF `<rangefinder>` sensors: one unit, every rangefinder's values.
    Rangefinder,
    /// The robot's state: one unit, MuJoCo's `qpos`, `qvel`, `ctrl` and every body's frame.
    State,
    /// A sensor added with [`crate::Simulation::add_sensor`]: one unit of values per world.
    Values,
}

/// One unit's frame in one world after a tick.
#[derive(Clone, Copy)]
#[non_exhaustive]
pub enum Frame<'a> {
    /// A lidar's scan after the tick, with the beams this tick cast (emission order) and the
    /// sensor's pose (origin; rotation whose columns are its axes).
    Lidar {
        /// The live scan: the newest value of every beam.
        scan: &'a Scan,
        /// The beams the tick cast.
        beams: &'a [u32],
        /// The sensor's origin and rotation in the world.
        pose: (DVec3, DMat3),
    },
    /// A camera's image.
    Camera {
        /// The MJCF camera.
        camera: usize,
        /// 8-bit RGB, rows top to bottom (empty when the camera renders no colour).
        rgb: &'a [u8],
        /// Depth along the optical axis, metres (empty when it renders no depth).
        depth: &'a [f32],
        /// Width and height, pixels.
        size: (usize, usize),
        /// The camera's origin and rotation in the world.
        pose: (DVec3, DMat3),
    },
    /// Every MJCF rangefinder's values in the world, as MuJoCo's `sensordata` holds them
    /// (in sensor order), with one name per value.
    Rangefinders {
        /// The values: `-1` for the distance of a ray that hits nothing.
        values: &'a [f64],
        /// One name per value: the sensor's, or `<sensor>/<field>`.
        names: &'a [String],
    },
    /// A sensor's values.
    Values(&'a [f32]),
    /// The robot's state: MuJoCo's `qpos`, `qvel` and `ctrl` and every body's frame in the
    /// world (the scene's `body_name` and `body_parentid` name and link them; body 0 is the
    /// world).
    State {
        /// `qpos`, `qvel`, `ctrl`, then each body's (but the world's) position and quaternion
        /// (`w x y z`), one name per value in `names`.
        values: &'a [f64],
        /// One name per value (`qpos/<joint>`, `ctrl/<actuator>`, `body/<body>/x`, …).
        names: &'a [String],
        /// Positions, one per body.
        xpos: &'a [DVec3],
        /// Orientations (columns: the body's axes), one per body.
        xmat: &'a [DMat3],
    },
}

/// Which frames a sensor is asked for this tick: per unit and world.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Demand {
    nworld: usize,
    wanted: Vec<bool>,
}

impl Demand {
    /// Nothing asked of `units` units in `nworld` worlds.
    pub fn none(units: usize, nworld: usize) -> Demand {
        Demand { nworld, wanted: vec![false; units * nworld] }
    }

    /// Asks for unit `unit`'s frame in world `world`.
    pub fn ask(&mut self, unit: usize, world: usize) {
        self.wanted[unit * self.nworld + world] = true;
    }

    /// Whether unit `unit`'s frame in world `world` is asked for.
    pub fn wants(&self, unit: usize, world: usize) -> bool {
        self.wanted[unit * self.nworld + world]
    }

    /// Whether any unit's frame in world `world` is asked for.
    pub fn wants_world(&self, world: usize) -> bool {
        (0..self.units()).any(|u| self.wants(u, world))
    }

    /// Whether anything is asked for.
    pub fn any(&self) -> bool {
        self.wanted.iter().any(|&w| w)
    }

    /// Units the demand covers.
    pub fn units(&self) -> usize {
        self.wanted.len() / self.nworld.max(1)
    }

    /// Worlds the demand covers.
    pub fn nworld(&self) -> usize {
        self.nworld
    }
}

/// A sensor of a simulation (see the module's docs).
pub trait Sensor: Send {
    /// Its kind.
    fn kind(&self) -> SensorKind {
        SensorKind::Values
    }

    /// Its name, as outputs and errors give it.
    fn name(&self) -> &str;

    /// How many units it has (lidars, cameras; one for most sensors).
    fn units(&self) -> usize {
        1
    }

    /// Unit `unit`'s name.
    fn unit_name(&self, _unit: usize) -> String {
        self.name().to_string()
    }

    /// Whether unit `unit` casts on every tick on its own (a live lidar), whoever reads it.
    fn fires(&self, _unit: usize) -> bool {
        false
    }

    /// Casts what `demand` asks for, after the worlds stepped.
    fn tick(&mut self, ctx: &SensorContext, demand: &Demand) -> Result<(), SimError>;

    /// Hands world `world`'s frames of the units `demand` asked for to `out`, as the tick
    /// left them.
    fn emit(
        &mut self,
        ctx: &SensorContext,
        world: usize,
        demand: &Demand,
        out: &mut dyn FnMut(usize, Frame<'_>) -> Result<(), SimError>,
    ) -> Result<(), SimError>;

    /// World `world` starts a new episode, seeded `episode_seed`: what the sensor keeps per
    /// episode starts over.
    fn restart(&mut self, _world: usize, _episode_seed: u64) -> Result<(), SimError> {
        Ok(())
    }
}

/// The sensors of a simulation: the lidars, the cameras once set, the model's MJCF
/// rangefinders (when it has any), the robot's state, and any added, numbered in that order (a
/// slot stays numbered while it is empty, so an added sensor's number never changes).
pub(crate) struct Sensors {
    pub(crate) lidars: crate::lidar_set::LidarSet,
    pub(crate) cameras: Option<crate::camera_set::CameraSet>,
    pub(crate) rangefinders: Option<crate::rangefinders::RangefinderSet>,
    pub(crate) state: crate::state::RobotState,
    pub(crate) added: Vec<Box<dyn Sensor>>,
}

impl Sensors {
    /// Slots before those added: the lidars, the cameras, the rangefinders and the state.
    const FIXED: usize = 4;

    pub(crate) fn count(&self) -> usize {
        Self::FIXED + self.added.len()
    }

    /// Sensor `k`, `None` for an empty slot.
    pub(crate) fn get_mut(&mut self, k: usize) -> Option<&mut (dyn Sensor + 'static)> {
        match k {
            0 => Some(&mut self.lidars),
            1 => self.cameras.as_mut().map(|c| c as &mut (dyn Sensor + 'static)),
            2 => self.rangefinders.as_mut().map(|r| r as &mut (dyn Sensor + 'static)),
            3 => Some(&mut self.state),
            k => self.added.get_mut(k - Self::FIXED).map(|s| &mut **s),
        }
    }

    /// Sensor `k`, `None` for an empty slot.
    pub(crate) fn get(&self, k: usize) -> Option<&(dyn Sensor + 'static)> {
        match k {
            0 => Some(&self.lidars),
            1 => self.cameras.as_ref().map(|c| c as &(dyn Sensor + 'static)),
            2 => self.rangefinders.as_ref().map(|r| r as &(dyn Sensor + 'static)),
            3 => Some(&self.state),
            k => self.added.get(k - Self::FIXED).map(|s| &**s),
        }
    }
}
