//! The model's MJCF rangefinders as a simulation shows them: their values now, in every world.

use super::Simulation;
use crate::SimError;

impl Simulation {
    /// One name per rangefinder value, in the order [`Simulation::rangefinders_into`] writes
    /// them: the sensor's name for a rangefinder that reports its distance alone (MuJoCo's
    /// default), `<sensor>/<field>` (`dist`, `depth`) and `<sensor>/<field>_<x|y|z>` (`dir`,
    /// `origin`, `point`, `normal`) for the fields of its `data` attribute. Empty when the
    /// model has no site-attached rangefinder.
    pub fn rangefinder_names(&self) -> &[String] {
        self.sensors.rangefinders.as_ref().map_or(&[], |r| r.names())
    }

    /// Every rangefinder's values in every world as the worlds stand now (after the last step
    /// or reset), `(nworld, rangefinder_names().len())` into `out`, cast as one batch through
    /// the BVH: MuJoCo's `sensordata` for those rangefinders, `-1` for a distance that hits
    /// nothing.
    pub fn rangefinders_into(&self, out: &mut [f64]) -> Result<(), SimError> {
        let nworld = self.nworld();
        match &self.sensors.rangefinders {
            Some(set) => set.cast_into(&self.scene, self.worlds.poses(), &self.rays, 0..nworld, out),
            None if out.is_empty() => Ok(()),
            None => Err(SimError::BufferLength {
                what: "the rangefinder buffer",
                len: out.len(),
                expected: "the model has no site-attached rangefinder: 0 values".into(),
            }),
        }
    }

    /// World `world`'s rangefinder values now (what [`Simulation::observe`] reads).
    pub(crate) fn rangefinders_of(&self, world: usize) -> Result<Vec<f64>, SimError> {
        let mut out = vec![0.0; self.rangefinder_names().len()];
        if let Some(set) = &self.sensors.rangefinders {
            set.cast_into(&self.scene, self.worlds.poses(), &self.rays, world..world + 1, &mut out)?;
        }
        Ok(out)
    }

    /// [`Simulation::rangefinders_into`] into a new array.
    pub fn rangefinders(&self) -> Result<Vec<f64>, SimError> {
        let mut out = vec![0.0; self.nworld() * self.rangefinder_names().len()];
        self.rangefinders_into(&mut out)?;
        Ok(out)
    }

    /// World `w`'s MuJoCo `sensordata` (every sensor of the model, `nsensordata` values) as
    /// its last step or reset left it: the reference the rangefinders are tested against.
    pub fn sensordata(&self, w: usize) -> Result<&[f64], SimError> {
        self.world_ok(w)?;
        Ok(self.worlds.sensordata(w))
    }

    /// The site-attached MJCF rangefinders glint computes, in MuJoCo's sensor order (where
    /// each one's values sit in [`Simulation::sensordata`]: its `adr` and `dim`).
    pub fn rangefinder_sensors(&self) -> &[glint_mujoco::Rangefinder] {
        self.sensors.rangefinders.as_ref().map_or(&[], |r| r.finders())
    }
}
