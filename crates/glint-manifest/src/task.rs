//! `[task]`: the built-in reward of the RL environments: bring a body to a goal position,
//! without collisions, within a time limit.
//!
//! ```toml
//! [task]
//! body = "robot"              # the body whose position is rewarded
//! goal = [2.0, -3.0]          # world x, y (or x, y, z), metres
//! goal_tolerance = 0.25       # within it the goal is reached and the episode terminates
//! episode_seconds = 20.0      # time limit: the episode is truncated after it
//! progress_weight = 1.0       # reward per metre the body comes closer to the goal
//! goal_reward = 10.0          # once, on reaching the goal
//! collision_penalty = 1.0     # per step the body's tree touches another body
//! touch_ok = ["floor"]        # geoms it may touch (default: the planes)
//! ```

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ManifestError;

/// The built-in task (`[task]`). Names are checked against the model when the simulation is
/// built. Its serde form (the keys of `[task]`) is how front ends show it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Task {
    /// The body whose position is rewarded.
    pub body: String,
    /// The goal, world frame, metres: x, y and, when given, z.
    pub goal: Vec<f64>,
    /// Distance within which the goal is reached, metres (default 0.25).
    pub goal_tolerance: f64,
    /// The time limit, simulated seconds, if any.
    pub episode_seconds: Option<f64>,
    /// Reward per metre the body comes closer to the goal (default 1).
    pub progress_weight: f64,
    /// Reward on reaching the goal (default 10).
    pub goal_reward: f64,
    /// Penalty per step in which the body's tree touches another body (default 1).
    pub collision_penalty: f64,
    /// Geoms the body may touch without penalty; `None`: every plane (and no key in the
    /// serde form).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub touch_ok: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTask {
    body: String,
    goal: Vec<f64>,
    goal_tolerance: Option<f64>,
    episode_seconds: Option<f64>,
    progress_weight: Option<f64>,
    goal_reward: Option<f64>,
    collision_penalty: Option<f64>,
    touch_ok: Option<Vec<String>>,
}

impl RawTask {
    /// The checked table.
    pub(crate) fn task(&self, path: &Path) -> Result<Task, ManifestError> {
        let value = |message: String| ManifestError::Value { path: path.to_path_buf(), message };
        if !(2..=3).contains(&self.goal.len()) || self.goal.iter().any(|g| !g.is_finite()) {
            return Err(value(format!(
                "[task] goal = {:?}: give the goal's world x, y (or x, y, z) in metres, finite numbers",
                self.goal
            )));
        }
        let positive = |key: &str, v: Option<f64>, default: f64| match v {
            None => Ok(default),
            Some(v) if v.is_finite() && v > 0.0 => Ok(v),
            Some(v) => Err(value(format!("[task] {key} = {v}: give a finite number above 0"))),
        };
        let weight = |key: &str, v: Option<f64>, default: f64| match v {
            None => Ok(default),
            Some(v) if v.is_finite() && v >= 0.0 => Ok(v),
            Some(v) => Err(value(format!("[task] {key} = {v}: give a finite number, 0 or more"))),
        };
        Ok(Task {
            body: self.body.clone(),
            goal: self.goal.clone(),
            goal_tolerance: positive("goal_tolerance", self.goal_tolerance, 0.25)?,
            episode_seconds: self.episode_seconds.map(|s| positive("episode_seconds", Some(s), s)).transpose()?,
            progress_weight: weight("progress_weight", self.progress_weight, 1.0)?,
            goal_reward: weight("goal_reward", self.goal_reward, 10.0)?,
            collision_penalty: weight("collision_penalty", self.collision_penalty, 1.0)?,
            touch_ok: self.touch_ok.clone(),
        })
    }
}
