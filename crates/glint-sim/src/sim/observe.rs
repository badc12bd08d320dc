//! The observation vector of every world, as the manifest's `[[observation]]` lays it out
//! ([`ObservationLayout`]), the action mapping's names, and the other queries of the worlds
//! (the task, the steered body, rays): what an RL front end reads after each step and writes
//! before it.

use glint_core::{RayBatch, RayFilter, RayHits};
use glint_manifest::ObservationComponent;
use rayon::prelude::*;

use super::{Simulation, fill};
use crate::observation::{ObservationLayout, copy_f64, joint_value_names};
use crate::task::TaskState;
use crate::{SimError, Warning};

impl Simulation {
    /// Lays the observation vector out from `components` (the manifest's `[[observation]]`)
    /// and makes it the one [`Simulation::observe`] fills. A `lidar_ranges` component without
    /// a positive `beams` emits nothing, with one warning; one whose `beams` differs from its
    /// sensor's beam count is kept (padded with `-1` or cut), with one warning. An unknown
    /// sensor is an error; nothing changes on an error.
    pub fn set_observation(&mut self, components: &[ObservationComponent]) -> Result<(), SimError> {
        let mut layout = ObservationLayout::default();
        let mut warnings = Vec::new();
        for (index, component) in components.iter().enumerate() {
            let names = match component {
                ObservationComponent::JointPositions => joint_value_names(self, false),
                ObservationComponent::JointVelocities => joint_value_names(self, true),
                ObservationComponent::Rangefinders => {
                    self.rangefinder_names().iter().map(|n| format!("rangefinders/{n}")).collect()
                }
                ObservationComponent::LidarRanges { beams, sensor, .. } => {
                    let count = self.lidar_count();
                    if *sensor >= count {
                        return Err(SimError::Setting(format!(
                            "[[observation]] {index} (lidar_ranges) reads lidar sensor {sensor}, and {count} sensors \
                             are bound: give a sensor index below {count}"
                        )));
                    }
                    let actual = self.lidar(*sensor)?.config().beam_count();
                    match beams {
                        None => warnings.push(Warning::ObservationBeams { index, sensor: *sensor, actual }),
                        Some(b) if *b != actual => {
                            warnings.push(Warning::ObservationBeamsDiffer { index, sensor: *sensor, beams: *b, actual })
                        }
                        Some(_) => {}
                    }
                    (0..beams.unwrap_or(0)).map(|k| format!("lidar_ranges/{sensor}/{k}")).collect()
                }
            };
            layout.push(component.clone(), names);
        }
        self.observation = layout;
        self.warnings.extend(warnings);
        Ok(())
    }

    /// The observation vector's layout.
    pub fn observation(&self) -> &ObservationLayout {
        &self.observation
    }

    /// Writes world `world`'s observation into `out` (exactly [`ObservationLayout::size`]
    /// values): joint positions and velocities and the rangefinders' values as they are now
    /// (the rangefinders cast for the observation), and each `lidar_ranges`
    /// component from its sensor's live scan, `-1` past the scan and for no return. A material
    /// component needs a loaded bake.
    pub fn observe(&self, world: usize, out: &mut [f32]) -> Result<(), SimError> {
        self.world_ok(world)?;
        let size = self.observation.size();
        if out.len() != size {
            return Err(SimError::BufferLength {
                what: "the observation buffer",
                len: out.len(),
                expected: format!("the observation has {size} values"),
            });
        }
        let mut ranges = Vec::new();
        self.observe_into(world, out, &mut ranges)?;
        for (out, src) in ranges {
            fill(out, src);
        }
        Ok(())
    }

    /// [`Simulation::observe`] of every world into `out` (`nworld` rows of
    /// [`ObservationLayout::size`] values); the lidar ranges, most of the values, are copied
    /// side by side on the thread pool.
    pub fn observe_all(&self, out: &mut [f32]) -> Result<(), SimError> {
        let (nworld, size) = (self.nworld(), self.observation.size());
        if out.len() != nworld * size {
            return Err(SimError::BufferLength {
                what: "the observation buffer",
                len: out.len(),
                expected: format!("{nworld} worlds of {size} values: {}", nworld * size),
            });
        }
        let mut ranges = Vec::new();
        for (w, row) in out.chunks_mut(size.max(1)).enumerate() {
            self.observe_into(w, row, &mut ranges)?;
        }
        ranges.into_par_iter().for_each(|(out, src)| {
            fill(out, src);
        });
        Ok(())
    }

    /// Writes world `world`'s joint terms into `out` (its observation vector) and queues each
    /// `lidar_ranges` term as (where in `out`, the scan's ranges) for the caller to copy.
    fn observe_into<'o, 's>(
        &'s self,
        world: usize,
        out: &'o mut [f32],
        ranges: &mut Vec<(&'o mut [f32], &'s [f32])>,
    ) -> Result<(), SimError> {
        let mut rest = out;
        let mut at = 0;
        for (component, offset, len) in self.observation.terms() {
            let (_, tail) = std::mem::take(&mut rest).split_at_mut(offset - at);
            let (out, tail) = tail.split_at_mut(len);
            (rest, at) = (tail, offset + len);
            match *component {
                ObservationComponent::JointPositions => copy_f64(out, self.worlds.qpos(world)),
                ObservationComponent::JointVelocities => copy_f64(out, self.worlds.qvel(world)),
                ObservationComponent::Rangefinders => copy_f64(out, &self.rangefinders_of(world)?),
                ObservationComponent::LidarRanges { sensor, material, .. } => {
                    ranges.push((out, self.lidar(sensor)?.ranges(world, material)?));
                }
            }
        }
        Ok(())
    }

    /// Runs `f` with this simulation on a worker of the thread pool, so that the steps and
    /// observations it makes hand work to the pool once: called from a thread outside the
    /// pool, each [`Simulation::step`] and [`Simulation::observe_all`] wakes the pool and waits
    /// for it on its own (about 5 % of a 16-world gym step, measured).
    pub fn in_pool<R: Send>(&mut self, f: impl FnOnce(&mut Simulation) -> R + Send) -> R {
        rayon::scope(|_| f(self))
    }

    /// The manifest's `[task]`, if it has one.
    pub fn task(&self) -> Option<&glint_manifest::Task> {
        self.task.as_ref().map(TaskState::task)
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

    /// Each actuator's name (`actuator<i>` when unnamed) and the range its control is clamped
    /// to (`None`: not limited), in actuator order: the action vector's layout.
    pub fn actuators(&self) -> Vec<(String, Option<[f64; 2]>)> {
        let names = self.model.actuator_names();
        let ranges = self.model.actuator_ctrlrange();
        names
            .into_iter()
            .zip(ranges)
            .enumerate()
            .map(|(i, (n, r))| (if n.is_empty() { format!("actuator{i}") } else { n }, r))
            .collect()
    }

    /// World `world`'s generalized positions now (MuJoCo's `qpos`, `nq` values).
    pub fn joint_positions(&self, world: usize) -> Result<&[f64], SimError> {
        self.world_ok(world)?;
        Ok(self.worlds.qpos(world))
    }

    /// World `world`'s generalized velocities now (MuJoCo's `qvel`, `nv` values).
    pub fn joint_velocities(&self, world: usize) -> Result<&[f64], SimError> {
        self.world_ok(world)?;
        Ok(self.worlds.qvel(world))
    }

    /// Each joint's name (`joint<j>` when unnamed), in joint order.
    pub fn joint_names(&self) -> Vec<String> {
        let joints = self.model.joints().into_iter().enumerate();
        joints.map(|(j, joint)| if joint.name.is_empty() { format!("joint{j}") } else { joint.name }).collect()
    }

    /// The controls world `world` runs with now (MuJoCo's `ctrl`).
    pub fn controls(&self, world: usize) -> Result<&[f64], SimError> {
        self.world_ok(world)?;
        Ok(self.worlds.ctrl(world))
    }
}
