//! The controllers a simulation drives its robot with when no actions are given: zero
//! control, constant velocities, waypoints and replay of a recorded action file (see
//! `[controller]` in docs/manifest.md).

use std::path::Path;

use glam::DVec3;
use glint_core::nearest_name;
use glint_manifest::Controller;
use glint_mujoco::{Model, WorldBatch};

use crate::SimError;

type Result<T> = std::result::Result<T, SimError>;

/// Yaw-rate gain of the waypoint controller (1/s): turn rate per radian of heading error.
const YAW_GAIN: f64 = 2.0;

/// A resolved controller: actuator indices instead of names, per-world state.
#[derive(Debug)]
pub(crate) struct Drive {
    kind: Kind,
    nu: usize,
    /// Each actuator's control range, to clamp commands to.
    ranges: Vec<Option<[f64; 2]>>,
}

#[derive(Debug)]
enum Kind {
    Zero,
    Constant(Vec<(usize, f64)>),
    Waypoints {
        body: usize,
        points: Vec<[f64; 2]>,
        speed: f64,
        axes: [usize; 2],
        yaw: Option<usize>,
        tolerance: f64,
        repeat: bool,
        next: Vec<usize>,
    },
    Replay {
        columns: Vec<usize>,
        rows: Vec<(f64, Vec<f64>)>,
    },
}

fn actuator(model: &Model, name: &str) -> Result<usize> {
    let names = model.actuator_names();
    names.iter().position(|n| n == name).ok_or_else(|| {
        let hint = nearest_name(name, names.iter().map(String::as_str))
            .map_or_else(|| format!("it has {}", names.join(", ")), |n| format!("did you mean '{n}'?"));
        SimError::Controller(format!("names actuator '{name}', which the model does not have; {hint}"))
    })
}

impl Drive {
    /// Resolves `controller` against `model` for `nworld` worlds.
    pub(crate) fn new(controller: &Controller, model: &Model, nworld: usize) -> Result<Drive> {
        let kind = match controller {
            Controller::Velocity { ctrl } => {
                Kind::Constant(ctrl.iter().map(|(n, c)| Ok((actuator(model, n)?, *c))).collect::<Result<_>>()?)
            }
            Controller::Waypoints { body, points, speed, x, y, yaw, tolerance, repeat } => {
                let scene = model.scene();
                let b = scene.body_id(body).ok_or_else(|| {
                    let hint = nearest_name(body, scene.body_name.iter().map(String::as_str))
                        .map_or(String::new(), |n| format!("; did you mean '{n}'?"));
                    SimError::Controller(format!("steers body '{body}', which the model does not have{hint}"))
                })?;
                Kind::Waypoints {
                    body: b,
                    points: points.clone(),
                    speed: *speed,
                    axes: [actuator(model, x)?, actuator(model, y)?],
                    yaw: yaw.as_deref().map(|n| actuator(model, n)).transpose()?,
                    tolerance: *tolerance,
                    repeat: *repeat,
                    next: vec![0; nworld],
                }
            }
            Controller::Replay { actions } => read_actions(actions, model)?,
            _ => Kind::Zero,
        };
        Ok(Drive { kind, nu: model.nu(), ranges: model.actuator_ctrlrange() })
    }

    /// Where the steered body of a waypoint route is in world `w` (x, y), for the summary.
    pub(crate) fn position(&self, batch: &WorldBatch, w: usize) -> Option<(String, [f64; 2])> {
        let Kind::Waypoints { body, .. } = &self.kind else { return None };
        let poses = batch.poses();
        let nbody = poses.xpos.len() / poses.nworld;
        let p = poses.xpos[w * nbody + *body];
        Some((batch.model().scene().body_name[*body].clone(), [p.x, p.y]))
    }

    /// Starts world `w`'s episode over (waypoints from the first).
    pub(crate) fn reset(&mut self, w: usize) {
        if let Kind::Waypoints { next, .. } = &mut self.kind
            && let Some(n) = next.get_mut(w)
        {
            *n = 0;
        }
    }

    /// Sets world `w`'s controls for episode time `t` from its current state.
    pub(crate) fn apply(&mut self, batch: &mut WorldBatch, w: usize, t: f64) -> Result<()> {
        let mut ctrl = vec![0.0; self.nu];
        match &mut self.kind {
            Kind::Zero => {}
            Kind::Constant(pairs) => {
                for &(i, c) in pairs.iter() {
                    ctrl[i] = c;
                }
            }
            Kind::Waypoints { body, points, speed, axes, yaw, tolerance, repeat, next } => {
                let poses = batch.poses();
                let nbody = poses.xpos.len() / poses.nworld;
                let (pos, rot) = (poses.xpos[w * nbody + *body], poses.xmat[w * nbody + *body]);
                let Some(velocity) = steer(pos, points, &mut next[w], *speed, *tolerance, *repeat) else {
                    return Ok(batch.set_ctrl(w, &ctrl)?);
                };
                ctrl[axes[0]] = velocity.x;
                ctrl[axes[1]] = velocity.y;
                if let Some(yaw) = yaw {
                    let heading = rot.x_axis.y.atan2(rot.x_axis.x);
                    let error = (velocity.y.atan2(velocity.x) - heading + std::f64::consts::PI)
                        .rem_euclid(std::f64::consts::TAU)
                        - std::f64::consts::PI;
                    ctrl[*yaw] = YAW_GAIN * error;
                }
            }
            Kind::Replay { columns, rows } => {
                // Zero-order hold: the last row at or before t.
                let i = rows.partition_point(|(time, _)| *time <= t);
                if i > 0 {
                    for (&a, &v) in columns.iter().zip(&rows[i - 1].1) {
                        ctrl[a] = v;
                    }
                }
            }
        }
        for (c, range) in ctrl.iter_mut().zip(&self.ranges) {
            if let Some([lo, hi]) = range {
                *c = c.clamp(*lo, *hi);
            }
        }
        Ok(batch.set_ctrl(w, &ctrl)?)
    }
}

/// World-frame (x, y) velocity toward the current waypoint, advancing past reached ones;
/// `None` once a non-repeating route is done.
fn steer(pos: DVec3, points: &[[f64; 2]], next: &mut usize, speed: f64, tolerance: f64, repeat: bool) -> Option<DVec3> {
    for _ in 0..points.len() {
        let [x, y] = *points.get(*next)?;
        let to = DVec3::new(x - pos.x, y - pos.y, 0.0);
        if to.length() > tolerance {
            // Slow down over the last half metre so the base does not overshoot.
            return Some(to.normalize() * speed.min(to.length() * 2.0));
        }
        *next += 1;
        if *next == points.len() {
            if !repeat {
                return None;
            }
            *next = 0;
        }
    }
    None
}

/// Reads a CSV action file: a header `time,<actuator>,…`, then at least one row of finite
/// numbers whose times are 0 or more and increase row by row. Errors name the file and the
/// line.
fn read_actions(path: &Path, model: &Model) -> Result<Kind> {
    let bad = |line: Option<usize>, reason: String| SimError::Actions { path: path.to_path_buf(), line, reason };
    let text =
        std::fs::read_to_string(path).map_err(|e| bad(None, format!("cannot be read ([controller] actions): {e}")))?;
    let mut lines = text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty() && !l.starts_with('#'));
    let Some((_, header)) = lines.next() else { return Err(bad(None, "is empty".into())) };
    let names: Vec<&str> = header.split(',').map(str::trim).collect();
    if names.first() != Some(&"time") || names.len() < 2 {
        return Err(bad(None, format!("must start with a header `time,<actuator>,...`, not `{header}`")));
    }
    let columns = names[1..].iter().map(|n| actuator(model, n)).collect::<Result<Vec<_>>>()?;
    let mut rows: Vec<(f64, Vec<f64>)> = Vec::new();
    for (index, text) in lines {
        let line = Some(index + 1);
        let values = action_row(text, names.len()).map_err(|reason| bad(line, reason))?;
        next_time(values[0], rows.last().map(|(t, _)| *t)).map_err(|reason| bad(line, reason))?;
        rows.push((values[0], values[1..].to_vec()));
    }
    if rows.is_empty() {
        return Err(bad(
            None,
            format!("has a header but no rows: add one row per change, `time,{}` from time 0", names[1..].join(",")),
        ));
    }
    Ok(Kind::Replay { columns, rows })
}

/// The numbers of one row of an action file, which has `columns` columns.
fn action_row(text: &str, columns: usize) -> std::result::Result<Vec<f64>, String> {
    let values = text
        .split(',')
        .map(|v| v.trim().parse::<f64>().ok().filter(|v| v.is_finite()))
        .collect::<Option<Vec<f64>>>()
        .ok_or_else(|| format!("`{text}` is not a row of finite numbers"))?;
    if values.len() != columns {
        return Err(format!("{} values, but the header names {columns} columns", values.len()));
    }
    Ok(values)
}

/// Checks a row's time: seconds from the episode's start, 0 or more, after the previous row's
/// (two rows at one time would leave the first never applied).
fn next_time(time: f64, previous: Option<f64>) -> std::result::Result<(), String> {
    if time < 0.0 {
        return Err(format!("time {time} is negative: times are seconds from the episode's start, 0 or more"));
    }
    match previous {
        Some(p) if time <= p => {
            Err(format!("time {time} does not come after the previous row's {p}: times must increase from row to row"))
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waypoints_are_visited_in_order_and_repeat() {
        let points = [[1.0, 0.0], [1.0, 1.0]];
        let mut next = 0;
        let v = steer(DVec3::ZERO, &points, &mut next, 0.5, 0.1, true).unwrap();
        assert!((v - DVec3::new(0.5, 0.0, 0.0)).length() < 1e-12);
        let v = steer(DVec3::new(1.0, 0.05, 0.0), &points, &mut next, 0.5, 0.1, true).unwrap();
        assert_eq!(next, 1);
        assert!(v.y > 0.0 && v.x.abs() < 1e-12);
        steer(DVec3::new(1.0, 1.0, 0.0), &points, &mut next, 0.5, 0.1, true).unwrap();
        assert_eq!(next, 0);
        let mut done = 1;
        assert!(steer(DVec3::new(1.0, 1.0, 0.0), &points, &mut done, 0.5, 0.1, false).is_none());
    }
}
