//! The robot's state at each tick, as a sensor: MuJoCo's `qpos`, `qvel` and `ctrl` and every
//! body's frame in the world (`xpos`, `xmat`), for outputs that record it (a session's
//! `state-NNN.parquet`) or place the robot's frames (the live MCAP files' and view's `/tf`).
//! Nothing is cast: the values are those the physics left; nobody pays for it unless an
//! output takes it.

use glam::DQuat;
use glint_mujoco::{JointKind, Model};

use crate::SimError;
use crate::sensors::{Demand, Frame, Sensor, SensorContext, SensorKind};

/// The robot's state (see the module's docs).
pub(crate) struct RobotState {
    /// One name per value of a row ([`state_names`]).
    names: Vec<String>,
    /// The row being handed out.
    row: Vec<f64>,
}

impl RobotState {
    /// The state of `model`'s worlds.
    pub(crate) fn new(model: &Model) -> RobotState {
        RobotState { names: state_names(model), row: Vec::new() }
    }
}

/// A name for each entry of `names` that has none: `<kind><index>`.
fn or_numbered(names: Vec<String>, kind: &str) -> Vec<String> {
    names.into_iter().enumerate().map(|(i, n)| if n.is_empty() { format!("{kind}{i}") } else { n }).collect()
}

/// The names of a state row's values, in its order: `qpos/<joint>` (a free joint's
/// `/x|y|z|qw|qx|qy|qz`, a ball's `/qw|qx|qy|qz`), `qvel/<joint>` (free: `/vx|vy|vz|wx|wy|wz`,
/// ball: `/wx|wy|wz`), `ctrl/<actuator>`, then `body/<body>/x|y|z|qw|qx|qy|qz` for every body
/// but the world. Joints, actuators and bodies without a name are numbered (`joint3`).
pub fn state_names(model: &Model) -> Vec<String> {
    let joints = model.joints();
    let joint_names = or_numbered(joints.iter().map(|j| j.name.clone()).collect(), "joint");
    let mut qpos = Vec::new();
    let mut qvel = Vec::new();
    for (joint, name) in joints.iter().zip(&joint_names) {
        let (pos, vel): (&[&str], &[&str]) = match joint.kind {
            JointKind::Free => (&["x", "y", "z", "qw", "qx", "qy", "qz"], &["vx", "vy", "vz", "wx", "wy", "wz"]),
            JointKind::Ball => (&["qw", "qx", "qy", "qz"], &["wx", "wy", "wz"]),
            JointKind::Slide | JointKind::Hinge => (&[""], &[""]),
        };
        let entry = |group: &str, c: &&str| {
            if c.is_empty() { format!("{group}/{name}") } else { format!("{group}/{name}/{c}") }
        };
        qpos.extend(pos.iter().map(|c| entry("qpos", c)));
        qvel.extend(vel.iter().map(|c| entry("qvel", c)));
    }
    let actuators = or_numbered(model.actuator_names(), "actuator");
    let bodies = or_numbered(model.scene().body_name.clone(), "body");
    let body_values = bodies
        .iter()
        .skip(1)
        .flat_map(|b| ["x", "y", "z", "qw", "qx", "qy", "qz"].into_iter().map(move |c| format!("body/{b}/{c}")));
    qpos.into_iter().chain(qvel).chain(actuators.iter().map(|a| format!("ctrl/{a}"))).chain(body_values).collect()
}

/// The model's body tree, named as [`state_names`] names the bodies.
pub(crate) fn body_tree(scene: &glint_core::Scene) -> Vec<glint_record::BodyLink> {
    or_numbered(scene.body_name.clone(), "body")
        .into_iter()
        .zip(&scene.body_parentid)
        .map(|(name, &parent)| glint_record::BodyLink { name, parent: parent.max(0) as usize })
        .collect()
}

impl Sensor for RobotState {
    fn kind(&self) -> SensorKind {
        SensorKind::State
    }

    fn name(&self) -> &str {
        "state"
    }

    fn tick(&mut self, _ctx: &SensorContext, _demand: &Demand) -> Result<(), SimError> {
        Ok(())
    }

    fn emit(
        &mut self,
        ctx: &SensorContext,
        world: usize,
        demand: &Demand,
        out: &mut dyn FnMut(usize, Frame<'_>) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        if !demand.wants(0, world) {
            return Ok(());
        }
        let nbody = ctx.scene.nbody();
        let range = world * nbody..(world + 1) * nbody;
        let (xpos, xmat) = (&ctx.poses.xpos[range.clone()], &ctx.poses.xmat[range]);
        self.row.clear();
        self.row.extend_from_slice(ctx.worlds.qpos(world));
        self.row.extend_from_slice(ctx.worlds.qvel(world));
        self.row.extend_from_slice(ctx.worlds.ctrl(world));
        for (p, m) in xpos.iter().zip(xmat).skip(1) {
            let q = DQuat::from_mat3(m).normalize();
            self.row.extend_from_slice(&[p.x, p.y, p.z, q.w, q.x, q.y, q.z]);
        }
        if self.row.len() != self.names.len() {
            return Err(SimError::Output(format!(
                "the robot state has {} values and {} names: the model's joints are not laid out as MuJoCo's qpos",
                self.row.len(),
                self.names.len()
            )));
        }
        out(0, Frame::State { values: &self.row, names: &self.names, xpos, xmat })
    }
}
