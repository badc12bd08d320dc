//! Every body's frame in the world (MuJoCo's `xpos`, `xmat`) at each tick, as a sensor, for
//! outputs that place the robot's frames (the live MCAP files' and view's `/tf`). Nothing is
//! cast: the frames are those the physics left; nobody pays for it unless an output takes it.

use crate::SimError;
use crate::sensors::{Demand, Frame, Sensor, SensorContext, SensorKind};

/// The bodies' poses (see the module's docs).
pub(crate) struct BodyPoses;

impl Sensor for BodyPoses {
    fn kind(&self) -> SensorKind {
        SensorKind::Bodies
    }

    fn name(&self) -> &str {
        "bodies"
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
        out(0, Frame::Bodies { xpos: &ctx.poses.xpos[range.clone()], xmat: &ctx.poses.xmat[range] })
    }
}
