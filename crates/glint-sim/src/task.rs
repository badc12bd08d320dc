//! The built-in task of the RL environments (the manifest's `[task]`): reward the body for
//! coming closer to its goal, reward reaching it (which terminates the episode), penalise
//! steps in which its kinematic subtree touches another body. The time limit is the
//! simulation's episode length.

use glint_core::{GeomType, Poses, Scene, nearest_name};
use glint_manifest::Task;
use glint_mujoco::WorldBatch;

use crate::SimError;

/// What the task made of one world's step.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskOutcome {
    /// The step's reward: progress, goal and collision terms together.
    pub reward: f64,
    /// Metres the body came closer to the goal this step (negative: it went away).
    pub progress: f64,
    /// The body's distance to the goal after the step, metres.
    pub distance: f64,
    /// Whether the goal was reached this step (the episode terminates).
    pub reached: bool,
    /// Whether the body's subtree touched another body this step.
    pub collided: bool,
}

/// `[task]` resolved against the model, with each world's state.
#[derive(Clone, Debug)]
pub(crate) struct TaskState {
    task: Task,
    body: usize,
    /// Per body, whether it is in the rewarded body's subtree.
    in_tree: Vec<bool>,
    /// Per geom, whether touching it is allowed.
    touch_ok: Vec<bool>,
    /// Per world, the distance at the end of the last step (or the reset).
    distance: Vec<f64>,
    /// Contact pairs, reused.
    contacts: Vec<[i32; 2]>,
}

impl TaskState {
    /// Resolves `task` against `scene`, for `nworld` worlds; errors name the unknown body or
    /// geom and the nearest one there is.
    pub(crate) fn new(task: &Task, scene: &Scene, nworld: usize) -> Result<TaskState, SimError> {
        let unknown = |what: &str, name: &str, names: &[String]| {
            let hint = nearest_name(name, names.iter().map(String::as_str))
                .map_or(String::new(), |n| format!("; did you mean '{n}'?"));
            SimError::Setting(format!("[task] names {what} '{name}', which the model does not have{hint}"))
        };
        let body = scene.body_id(&task.body).ok_or_else(|| unknown("body", &task.body, &scene.body_name))?;
        let in_tree = (0..scene.nbody())
            .map(|mut b| {
                loop {
                    if b == body {
                        break true;
                    }
                    if b == 0 {
                        break false;
                    }
                    b = scene.body_parentid[b] as usize;
                }
            })
            .collect();
        let touch_ok = match &task.touch_ok {
            None => scene.geom_type.iter().map(|t| *t == GeomType::Plane).collect(),
            Some(names) => {
                let mut ok = vec![false; scene.geom_type.len()];
                for name in names {
                    let g = scene
                        .geom_name
                        .iter()
                        .position(|n| n == name)
                        .ok_or_else(|| unknown("geom", name, &scene.geom_name))?;
                    ok[g] = true;
                }
                ok
            }
        };
        Ok(TaskState { task: task.clone(), body, in_tree, touch_ok, distance: vec![0.0; nworld], contacts: Vec::new() })
    }

    /// The task.
    pub(crate) fn task(&self) -> &Task {
        &self.task
    }

    fn distance_now(&self, scene: &Scene, poses: &Poses, w: usize) -> f64 {
        let p = poses.xpos[w * scene.nbody() + self.body];
        let g = &self.task.goal;
        let (dx, dy) = (p.x - g[0], p.y - g[1]);
        let dz = g.get(2).map_or(0.0, |z| p.z - z);
        (dx * dx + dy * dy + dz * dz).sqrt()
    }

    /// Starts world `w`'s episode from where the body is now.
    pub(crate) fn restart(&mut self, scene: &Scene, poses: &Poses, w: usize) {
        self.distance[w] = self.distance_now(scene, poses, w);
    }

    /// World `w`'s outcome of the step just taken.
    pub(crate) fn evaluate(&mut self, scene: &Scene, worlds: &WorldBatch, w: usize) -> TaskOutcome {
        let distance = self.distance_now(scene, worlds.poses(), w);
        let progress = self.distance[w] - distance;
        self.distance[w] = distance;
        let mut contacts = std::mem::take(&mut self.contacts);
        worlds.contacts_into(w, &mut contacts);
        let bodies = &scene.geom_bodyid;
        let collided = contacts.iter().any(|&[a, b]| {
            let (a, b) = (a as usize, b as usize);
            let (ta, tb) = (self.in_tree[bodies[a] as usize], self.in_tree[bodies[b] as usize]);
            (ta && !tb && !self.touch_ok[b]) || (tb && !ta && !self.touch_ok[a])
        });
        self.contacts = contacts;
        let reached = distance <= self.task.goal_tolerance;
        let t = &self.task;
        let reward = t.progress_weight * progress + if reached { t.goal_reward } else { 0.0 }
            - if collided { t.collision_penalty } else { 0.0 };
        TaskOutcome { reward, progress, distance, reached, collided }
    }
}
