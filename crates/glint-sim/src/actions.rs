//! The one check of an agent's actions, which every front end (Python, gRPC) makes through
//! the simulation: the same mistake gets the same error, whichever way it came.

use crate::SimError;

/// Refuses world `world`'s `actions` unless they hold one finite value per actuator of
/// `actuators` (their names and control ranges, [`crate::Simulation::actuators`]): a wrong
/// length is [`SimError::BufferLength`], a NaN or an infinity [`SimError::Action`] naming the
/// world and the actuator.
pub fn check_actions(world: usize, actions: &[f64], actuators: &[(String, Option<[f64; 2]>)]) -> Result<(), SimError> {
    if actions.len() != actuators.len() {
        return Err(SimError::BufferLength {
            what: "the action vector",
            len: actions.len(),
            expected: format!("the model has {} actuators (nu), one action each", actuators.len()),
        });
    }
    match actions.iter().position(|a| !a.is_finite()) {
        Some(index) => {
            Err(SimError::Action { world, index, actuator: actuators[index].0.clone(), value: actions[index] })
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_finite_action_per_actuator() {
        let actuators = vec![("vx".to_string(), Some([-2.0, 2.0])), ("wz".to_string(), None)];
        assert!(check_actions(0, &[1.0, -5.0], &actuators).is_ok());
        let err = check_actions(0, &[1.0], &actuators).unwrap_err().to_string();
        assert!(err.contains("holds 1 values") && err.contains("2 actuators"), "{err}");
        let err = check_actions(3, &[1.0, f64::NAN], &actuators).unwrap_err();
        assert!(matches!(err, SimError::Action { world: 3, index: 1, .. }));
        assert_eq!(err.to_string(), "world 3's action 1 (wz) is NaN: every action must be a finite number");
    }
}
