//! `glint.rpc.GlintLidarService`: glint's own lidar calls beside LuckyEngine's (the physical
//! return model, docs/return-model.md). Changes run on the loop thread between ticks; a
//! refusal is a `success = false` naming the field, the value and the range.

use glint_lidar::{PhysicalModel, ReturnModelKind, Spelled};
use tonic::{Request, Response, Status};

use crate::engine::Engine;
use crate::proto::glint::glint_lidar_service_server::GlintLidarService;
use crate::proto::glint::{GetReturnModelRequest, PhysicalModel as WirePhysical, ReturnModel, ReturnModelAck};

/// The service over the loop.
pub struct GlintLidar {
    engine: Engine,
}

impl GlintLidar {
    /// The service over `engine`.
    pub fn new(engine: Engine) -> GlintLidar {
        GlintLidar { engine }
    }
}

/// The physical model's fields, field for field between glint's type and the wire's: one
/// list for both directions.
macro_rules! physical_fields {
    ($from:expr => $to:ident) => {
        $to {
            detection: $from.detection,
            noise: $from.noise,
            fresnel: $from.fresnel,
            two_bounce_mirrors: $from.two_bounce_mirrors,
            split_footprints: $from.split_footprints,
            water: $from.water,
            retro_base: $from.retro_base,
            saturation: $from.saturation,
            beam_divergence_deg: $from.beam_divergence_deg,
            false_alarm_rate: $from.false_alarm_rate,
            footprint_rays: $from.footprint_rays,
        }
    };
}

fn to_wire(p: &PhysicalModel) -> WirePhysical {
    physical_fields!(p => WirePhysical)
}

fn from_wire(w: &WirePhysical) -> PhysicalModel {
    // Proto3's unset 0 is the axis alone, as 1 is.
    PhysicalModel { footprint_rays: w.footprint_rays.max(1), ..physical_fields!(w => PhysicalModel) }
}

/// The request's model: `None` for the seed's, the terms for the physical one (every term on
/// without a `physical` message); an error in words for anything else.
fn requested(r: &ReturnModel) -> Result<Option<PhysicalModel>, String> {
    match ReturnModelKind::from_name(&r.model).map_err(|e| e.to_string())? {
        ReturnModelKind::Physical => Ok(Some(r.physical.as_ref().map_or_else(PhysicalModel::default, from_wire))),
        _ if r.physical.is_some() => Err("physical terms belong to model \"physical\"".into()),
        _ => Ok(None),
    }
}

#[tonic::async_trait]
impl GlintLidarService for GlintLidar {
    async fn get_return_model(&self, _: Request<GetReturnModelRequest>) -> Result<Response<ReturnModel>, Status> {
        let physics = self.engine.query(|core| core.sim.physical_model()).await?;
        Ok(Response::new(match physics {
            None => ReturnModel { model: ReturnModelKind::Seed.name().into(), physical: None },
            Some(p) => ReturnModel { model: ReturnModelKind::Physical.name().into(), physical: Some(to_wire(&p)) },
        }))
    }

    async fn set_return_model(&self, request: Request<ReturnModel>) -> Result<Response<ReturnModelAck>, Status> {
        let physics = match requested(&request.into_inner()) {
            Ok(p) => p,
            Err(message) => return Ok(Response::new(ReturnModelAck { success: false, message })),
        };
        let done =
            self.engine.call(move |core| core.sim.set_physical_model(physics).map_err(|e| e.to_string())).await?;
        Ok(Response::new(match done {
            Ok(()) => ReturnModelAck { success: true, message: "return model set".into() },
            Err(message) => ReturnModelAck { success: false, message },
        }))
    }
}
