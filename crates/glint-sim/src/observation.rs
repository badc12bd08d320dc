//! The task contract's observation vector and action mapping: what an RL front end (the gRPC
//! `AgentService`, the Gymnasium environments) reads after each step and writes before it.
//! The layout comes from the manifest's `[[observation]]` components, in order.

use glint_manifest::ObservationComponent;
use glint_mujoco::JointKind;

use crate::Simulation;
use crate::sensors::SensorKind;

/// One component as laid out: where its values sit in the vector.
#[derive(Clone, Debug, PartialEq)]
struct Term {
    component: ObservationComponent,
    offset: usize,
    len: usize,
}

/// The observation vector's layout: its components in order, each value's name, its size.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ObservationLayout {
    terms: Vec<Term>,
    names: Vec<String>,
}

impl ObservationLayout {
    /// Values in the vector.
    pub fn size(&self) -> usize {
        self.names.len()
    }

    /// One name per value: `joint_positions/<joint>[i]`, `joint_velocities/<joint>[i]`,
    /// `lidar_ranges/<sensor>/<beam>`, `rangefinders/<sensor>[/<field>]`.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// The components, in order.
    pub fn components(&self) -> impl Iterator<Item = &ObservationComponent> {
        self.terms.iter().map(|t| &t.component)
    }

    /// The components in order as `(name, offset, length, material)`: where each sits in the
    /// vector, and whether a lidar component reads the return model's ranges.
    pub fn parts(&self) -> Vec<(String, usize, usize, bool)> {
        self.terms
            .iter()
            .map(|t| {
                let (name, material) = match t.component {
                    ObservationComponent::JointPositions => ("joint_positions".to_string(), false),
                    ObservationComponent::JointVelocities => ("joint_velocities".to_string(), false),
                    ObservationComponent::Rangefinders => ("rangefinders".to_string(), false),
                    ObservationComponent::LidarRanges { sensor, material, .. } => {
                        (format!("lidar_ranges/{sensor}"), material)
                    }
                };
                (name, t.offset, t.len, material)
            })
            .collect()
    }

    /// Whether a component reads a lidar (so the lidars must fire on every step).
    pub fn reads_lidar(&self) -> bool {
        self.terms.iter().any(|t| matches!(t.component, ObservationComponent::LidarRanges { beams: Some(_), .. }))
    }

    /// Whether a component reads unit `unit` of sensor `sensor` (so it must cast on every
    /// step): a `lidar_ranges` component of that lidar.
    pub(crate) fn reads(&self, (kind, _): (SensorKind, usize), unit: usize) -> bool {
        kind == SensorKind::Lidar
            && self.terms.iter().any(|t| {
                matches!(t.component, ObservationComponent::LidarRanges { beams: Some(_), sensor, .. } if sensor == unit)
            })
    }

    /// Appends `component`, whose values are called `names`.
    pub(crate) fn push(&mut self, component: ObservationComponent, names: Vec<String>) {
        self.terms.push(Term { component, offset: self.names.len(), len: names.len() });
        self.names.extend(names);
    }

    /// The components in order with where each sits: `(component, offset, length)`.
    pub(crate) fn terms(&self) -> impl Iterator<Item = (&ObservationComponent, usize, usize)> {
        self.terms.iter().map(|t| (&t.component, t.offset, t.len))
    }
}

/// Per `qpos` (`velocity = false`) or `qvel` entry, `<component>/<joint>` with an index for
/// joints that take several values.
pub(crate) fn joint_value_names(sim: &Simulation, velocity: bool) -> Vec<String> {
    let component = if velocity { "joint_velocities" } else { "joint_positions" };
    let mut names = Vec::new();
    for (joint, name) in sim.model().joints().iter().zip(sim.joint_names()) {
        let count = match (joint.kind, velocity) {
            (JointKind::Free, false) => 7,
            (JointKind::Free, true) => 6,
            (JointKind::Ball, false) => 4,
            (JointKind::Ball, true) => 3,
            _ => 1,
        };
        if count == 1 {
            names.push(format!("{component}/{name}"));
        } else {
            names.extend((0..count).map(|i| format!("{component}/{name}[{i}]")));
        }
    }
    names
}

pub(crate) fn copy_f64(out: &mut [f32], values: &[f64]) {
    for (o, v) in out.iter_mut().zip(values) {
        *o = *v as f32;
    }
}
