//! Each episode's initial state: the model's, then the manifest's `[reset]` draws, seeded by
//! the episode's seed ([`glint_lidar::episode_seed`]).

use glam::{DQuat, DVec3};
use glint_core::nearest_name;
use glint_manifest::ResetConfig;
use glint_mujoco::{Joint, JointKind, Model, WorldBatch};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::SimError;

/// `[reset]` resolved against the model: where each draw goes in `qpos`.
#[derive(Clone, Debug, Default)]
pub(crate) struct Randomizer {
    /// Per randomized hinge or slide joint: its `qpos` address and noise half-width.
    joints: Vec<(usize, f64)>,
    /// Per randomized free body: its free joint's `qpos` address, position ranges and yaw
    /// range (radians).
    bodies: Vec<(usize, [[f64; 2]; 3], [f64; 2])>,
}

impl Randomizer {
    /// Resolves `config` against `model`: every joint must be a hinge or slide, every body must
    /// be on a free joint.
    pub(crate) fn new(config: &ResetConfig, model: &Model) -> Result<Randomizer, SimError> {
        let joints = model.joints();
        let joint_names = || joints.iter().map(|j| j.name.as_str());
        let mut out = Randomizer::default();
        for (name, noise) in &config.joints {
            let Some(joint) = joints.iter().find(|j| &j.name == name) else {
                return Err(SimError::Reset(format!(
                    "[reset.joints] names the joint '{name}', which the model does not have{}",
                    did_you_mean(name, joint_names())
                )));
            };
            if !matches!(joint.kind, JointKind::Hinge | JointKind::Slide) {
                return Err(SimError::Reset(format!(
                    "[reset.joints] {name} is a {:?} joint: only hinge and slide joints take noise; \
                     give a free body's start ranges in [reset.bodies.<body>]",
                    joint.kind
                )));
            }
            check_noise(joint, *noise)?;
            out.joints.push((joint.qposadr, *noise));
        }
        let scene = model.scene();
        for b in &config.bodies {
            let Some(body) = scene.body_name.iter().position(|n| n == &b.body) else {
                return Err(SimError::Reset(format!(
                    "[reset.bodies.{}] names a body the model does not have{}",
                    b.body,
                    did_you_mean(&b.body, scene.body_name.iter().map(String::as_str))
                )));
            };
            let Some(free) = joints.iter().find(|j| j.body == body && j.kind == JointKind::Free) else {
                return Err(SimError::Reset(format!(
                    "[reset.bodies.{}]: the body has no free joint, so its start pose cannot be drawn; \
                     randomize its hinge or slide joints in [reset.joints] instead",
                    b.body
                )));
            };
            let yaw = [b.yaw_deg[0].to_radians(), b.yaw_deg[1].to_radians()];
            out.bodies.push((free.qposadr, b.position, yaw));
        }
        Ok(out)
    }

    /// Whether it draws nothing.
    pub(crate) fn is_empty(&self) -> bool {
        self.joints.is_empty() && self.bodies.is_empty()
    }

    /// Draws world `w`'s initial state from its current (just reset) one, seeded by `seed`.
    pub(crate) fn apply(&self, worlds: &mut WorldBatch, w: usize, seed: u64) -> Result<(), SimError> {
        if self.is_empty() {
            return Ok(());
        }
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let mut draw = |[lo, hi]: [f64; 2]| if lo < hi { rng.gen_range(lo..=hi) } else { lo };
        let mut qpos = worlds.qpos(w).to_vec();
        for &(adr, noise) in &self.joints {
            qpos[adr] += draw([-noise, noise]);
        }
        for &(adr, position, yaw) in &self.bodies {
            let offset = DVec3::new(draw(position[0]), draw(position[1]), draw(position[2]));
            for (k, d) in offset.to_array().into_iter().enumerate() {
                qpos[adr + k] += d;
            }
            // MuJoCo's quaternion is (w, x, y, z); the turn is about world +Z.
            let q = DQuat::from_xyzw(qpos[adr + 4], qpos[adr + 5], qpos[adr + 6], qpos[adr + 3]);
            let turned = (DQuat::from_rotation_z(draw(yaw)) * q).normalize();
            qpos[adr + 3..adr + 7].copy_from_slice(&[turned.w, turned.x, turned.y, turned.z]);
        }
        Ok(worlds.set_qpos(w, &qpos)?)
    }
}

/// The largest noise half-width of a hinge, radians: a full turn either way (a wider draw
/// only wraps around again).
const MAX_HINGE_NOISE: f64 = std::f64::consts::TAU;

/// A joint's noise half-width is physically meaningful: a hinge's is at most a full turn, and
/// a limited joint's draws stay inside its range (a draw outside starts every episode against
/// the limit, pushed back by a constraint force, which is what "unstable" looked like).
fn check_noise(joint: &Joint, noise: f64) -> Result<(), SimError> {
    let name = &joint.name;
    if joint.kind == JointKind::Hinge && noise > MAX_HINGE_NOISE {
        return Err(SimError::Reset(format!(
            "[reset.joints] {name} = {noise}: a hinge's noise half-width is in radians, at most \
             {MAX_HINGE_NOISE:.4} (a full turn either way)"
        )));
    }
    if let Some([lo, hi]) = joint.range {
        let (from, to) = (joint.qpos0 - noise, joint.qpos0 + noise);
        if from < lo || to > hi {
            let room = (joint.qpos0 - lo).min(hi - joint.qpos0).max(0.0);
            return Err(SimError::Reset(format!(
                "[reset.joints] {name} = {noise}: draws from {from} to {to} would start outside the joint's \
                 range [{lo}, {hi}]; give at most {room} (its initial position is {})",
                joint.qpos0
            )));
        }
    }
    Ok(())
}

fn did_you_mean<'a>(name: &str, names: impl Iterator<Item = &'a str>) -> String {
    nearest_name(name, names).map_or_else(String::new, |n| format!("; did you mean '{n}'?"))
}
