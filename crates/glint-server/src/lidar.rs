//! `LidarService`: the seed's 14 lidar calls. Reads (scans, counts, configurations, return
//! parameters, bake status) come from the loop's latest snapshot and never wait for a tick;
//! changes run on the loop thread between ticks. Every request field is checked as the
//! manifest's is, and a refusal is an `ok = false` naming the field, the value and the range.

use glint_lidar::{
    BakeRequest, RETURN_PARAMS, ReturnParams, ReturnPreset, ScanPattern, SecondaryCapture, SecondaryScope, SelfIgnore,
    Spelled,
};
use tonic::{Request, Response, Status};

use crate::engine::{Engine, SensorSnapshot};
use crate::proto::lidar_service_server::LidarService;
use crate::proto::{
    BakeLidarMaterialRequest, GetLidarReturnParamsRequest, GetLidarScanRequest, LidarAck, LidarBakeStatusResponse,
    LidarBeamAnglesResponse, LidarBeamCountResponse, LidarConfigResponse, LidarReturnParamsResponse,
    LidarSensorRequest, LoadLidarBakeRequest, SaveLidarBakeRequest, SetLidarConfigRequest, SetLidarLiveRequest,
    SetLidarPresetRequest, SetLidarReturnParamsRequest, SetLidarSecondaryCaptureRequest,
};
use crate::scan::{ScanAnswer, SharedScan};
use crate::size::{Limit, Size};

/// The metadata key carrying the loop tick a scan was taken at.
pub const TICK_METADATA: &str = "glint-tick";

/// The service over the loop.
pub struct Lidar {
    engine: Engine,
    /// The largest answer glint sends.
    limit: Limit,
}

impl Lidar {
    /// The service over `engine`, answering scans and beam angles within `limit`.
    pub fn new(engine: Engine, limit: Limit) -> Lidar {
        Lidar { engine, limit }
    }
}

/// How to ask for a smaller answer about a sensor's beams.
const FEWER_BEAMS: &str = "configure fewer beams (SetLidarConfig's channels x azimuth_bins)";

/// Checks that the scan `r` asks of `sensor` fits `limit`, before it is built.
fn check_scan(limit: Limit, sensor: &SensorSnapshot, r: &GetLidarScanRequest) -> Result<(), Status> {
    let beams = sensor.ranges.len();
    let arrays = 1 + 2 * r.want_intensity as usize + r.want_secondary as usize;
    let size = (0..arrays).fold(Size::answer(), |size, _| size.floats(beams));
    let arrays = if arrays == 1 { "1 array".to_string() } else { format!("{arrays} arrays") };
    let what = format!("a scan of lidar sensor {} ({beams} beams, {arrays})", r.sensor);
    limit.check(what, size, &format!("ask for fewer arrays (want_intensity, want_secondary), or {FEWER_BEAMS}"))
}

/// Checks that the beam angles of sensor `sensor`, of `beams` beams, fit `limit`, before
/// they are built.
fn check_angles(limit: Limit, sensor: usize, beams: usize) -> Result<(), Status> {
    let size = Size::answer().floats(beams).floats(beams);
    let what = format!("the beam angles of lidar sensor {sensor} ({beams} beams, 2 arrays)");
    limit.check(what, size, FEWER_BEAMS)
}

fn ack(ok: bool, message: impl Into<String>) -> Response<LidarAck> {
    Response::new(LidarAck { ok, message: message.into() })
}

fn refused(message: impl std::fmt::Display) -> Response<LidarAck> {
    ack(false, message.to_string())
}

/// The seed's words for a bad index.
fn no_sensor(index: u32) -> String {
    format!("no lidar sensor at index {index}")
}

/// A return parameter's field of `SetLidarReturnParamsRequest` as the value it sets: a base
/// field (a plain `float`) is always sent, an optics field (`optional`) only when present.
trait SentParam {
    fn sent(self) -> Option<f64>;
}

impl SentParam for f32 {
    fn sent(self) -> Option<f64> {
        Some(self.into())
    }
}

// f64 holds every f32 and every u32 exactly: max_returns 4294967295 stays itself.
impl<T: Into<f64>> SentParam for Option<T> {
    fn sent(self) -> Option<f64> {
        self.map(Into::into)
    }
}

/// A return parameter as its field of `LidarReturnParamsResponse`: an `f32`, or the `u32` of
/// `max_returns`.
trait WireParam<T> {
    fn wire(value: T) -> Self;
}

impl WireParam<f64> for f32 {
    fn wire(value: f64) -> f32 {
        value as f32
    }
}

impl WireParam<u32> for u32 {
    fn wire(value: u32) -> u32 {
        value
    }
}

/// Maps the return parameters to and from the proto's messages, whose fields are named by
/// [`RETURN_PARAMS`]' keys: field by field, by key (`glint_lidar::return_param_keys!`).
macro_rules! params_by_key {
    ($($key:ident),+) => {
        /// The request's parameters over `current`: base fields always replace, an absent
        /// optics field keeps its value, one sent as 0 means 0.
        fn merged_params(r: &SetLidarReturnParamsRequest, current: ReturnParams) -> [f64; 17] {
            [$(r.$key.sent().unwrap_or(f64::from(current.$key))),+]
        }

        fn params_response(p: &ReturnParams) -> LidarReturnParamsResponse {
            LidarReturnParamsResponse { $($key: WireParam::wire(p.$key)),+ }
        }
    };
}

glint_lidar::return_param_keys!(params_by_key);

/// `message` with each return parameter's seed name followed by its field name on the wire:
/// "maxRangeAtRef (max_range_at_ref)".
fn wire_names(message: &str) -> String {
    let mut out = message.to_string();
    for p in RETURN_PARAMS.iter().filter(|p| p.name != p.key) {
        out = out.replace(p.name, &format!("{} ({})", p.name, p.key));
    }
    out
}

fn config_response(s: &SensorSnapshot) -> LidarConfigResponse {
    let c = &s.config;
    LidarConfigResponse {
        found: true,
        scan_pattern: c.pattern.wire_code(),
        channels: c.channels,
        azimuth_bins: c.azimuth_bins,
        vfov_min_deg: c.vfov_min_deg as f32,
        vfov_max_deg: c.vfov_max_deg as f32,
        min_range: c.min_range as f32,
        max_range: c.max_range as f32,
        rotation_hz: c.rotation_hz as f32,
        geom_group_mask: c.geom_group_mask,
        self_ignore: c.self_ignore.index() as u32,
        secondary_capture: s.capture.0.index() as u32,
        secondary_scope: s.capture.1.index() as u32,
    }
}

#[tonic::async_trait]
impl LidarService for Lidar {
    async fn set_lidar_live(&self, request: Request<SetLidarLiveRequest>) -> Result<Response<LidarAck>, Status> {
        let live = request.into_inner().live;
        self.engine
            .call(move |core| {
                core.client_live = live;
                core.sync_live();
            })
            .await?;
        Ok(ack(true, if live { "lidars fire every step" } else { "lidars fire only while recording" }))
    }

    async fn set_lidar_config(&self, request: Request<SetLidarConfigRequest>) -> Result<Response<LidarAck>, Status> {
        let r = request.into_inner();
        let answer = self
            .engine
            .call(move |core| -> Result<String, String> {
                let sensor = r.sensor as usize;
                let mut lidar = core.sim.lidar_mut(sensor).map_err(|_| no_sensor(r.sensor))?;
                let mut c = lidar.get().config();
                c.pattern = ScanPattern::from_wire_code(r.scan_pattern, c.pattern).map_err(|e| e.to_string())?;
                c.self_ignore = SelfIgnore::from_index(r.self_ignore as i64).map_err(|e| e.to_string())?;
                (c.channels, c.azimuth_bins) = (r.channels, r.azimuth_bins);
                (c.vfov_min_deg, c.vfov_max_deg) = (r.vfov_min_deg as f64, r.vfov_max_deg as f64);
                (c.min_range, c.max_range) = (r.min_range as f64, r.max_range as f64);
                c.rotation_hz = r.rotation_hz as f64;
                // The seed keeps the low six bits: MuJoCo has six geom groups.
                c.geom_group_mask = r.geom_group_mask & 0x3f;
                lidar.set_config(c).map_err(|e| e.to_string())?;
                let mut message = format!("lidar sensor {sensor} now casts {} beams", c.beam_count());
                if r.geom_group_mask > 0x3f {
                    message.push_str(&format!(
                        "; geom_group_mask {} kept its low six bits ({}): MuJoCo has six geom groups",
                        r.geom_group_mask, c.geom_group_mask
                    ));
                }
                // What the change warns about (a rotation above the runner's rate, scanned at
                // the runner's): in the ack, and in the server's log.
                for warning in core.sim.take_warnings() {
                    crate::say!("warning: {warning}");
                    message.push_str(&format!("; {warning}"));
                }
                Ok(message)
            })
            .await?;
        Ok(answer.map_or_else(refused, |m| ack(true, m)))
    }

    async fn get_lidar_config(
        &self,
        request: Request<LidarSensorRequest>,
    ) -> Result<Response<LidarConfigResponse>, Status> {
        let snapshot = self.engine.snapshot();
        let sensor = snapshot.sensors.get(request.into_inner().sensor as usize);
        Ok(Response::new(sensor.map_or_else(LidarConfigResponse::default, config_response)))
    }

    async fn set_lidar_return_params(
        &self,
        request: Request<SetLidarReturnParamsRequest>,
    ) -> Result<Response<LidarAck>, Status> {
        let r = request.into_inner();
        let answer = self
            .engine
            .call(move |core| -> Result<(), String> {
                let values = merged_params(&r, core.sim.return_params());
                let params = ReturnParams::from_array(values).map_err(|e| wire_names(&e.to_string()))?;
                core.sim.set_return_params_ex(params).map_err(|e| wire_names(&e.to_string()))
            })
            .await?;
        Ok(answer.map_or_else(refused, |()| ack(true, "return parameters set")))
    }

    async fn get_lidar_return_params(
        &self,
        _request: Request<GetLidarReturnParamsRequest>,
    ) -> Result<Response<LidarReturnParamsResponse>, Status> {
        Ok(Response::new(params_response(&self.engine.snapshot().params)))
    }

    async fn set_lidar_preset(&self, request: Request<SetLidarPresetRequest>) -> Result<Response<LidarAck>, Status> {
        let preset = match ReturnPreset::from_index(request.into_inner().preset as i64) {
            Ok(p) => p,
            Err(e) => return Ok(refused(e)),
        };
        self.engine.call(move |core| core.sim.set_return_preset(preset)).await?;
        Ok(ack(true, format!("return preset {} applied", preset.name())))
    }

    async fn set_lidar_secondary_capture(
        &self,
        request: Request<SetLidarSecondaryCaptureRequest>,
    ) -> Result<Response<LidarAck>, Status> {
        let r = request.into_inner();
        let capture = match SecondaryCapture::from_index(r.capture as i64) {
            Ok(c) => c,
            Err(e) => return Ok(refused(e)),
        };
        let scope = match SecondaryScope::from_index(r.scope as i64) {
            Ok(s) => s,
            Err(e) => return Ok(refused(e)),
        };
        let answer = self
            .engine
            .call(move |core| -> Result<String, String> {
                let recording = core.sim.recording();
                let mut lidar = core.sim.lidar_mut(r.sensor as usize).map_err(|_| no_sensor(r.sensor))?;
                lidar.set_secondary_capture(capture, scope).map_err(|e| e.to_string())?;
                Ok(if recording {
                    format!(
                        "secondary capture {capture} ({scope}) is kept for the next recording: the one in progress \
                         keeps its columns"
                    )
                } else {
                    format!("secondary capture {capture} ({scope}) set")
                })
            })
            .await?;
        Ok(answer.map_or_else(refused, |m| ack(true, m)))
    }

    async fn bake_lidar_material(
        &self,
        request: Request<BakeLidarMaterialRequest>,
    ) -> Result<Response<LidarAck>, Status> {
        let r = request.into_inner();
        let bake = BakeRequest {
            cell_size: r.cell_size as f64,
            max_dim: r.max_dim,
            splat_radius: r.splat_radius,
            include_hidden: i32::try_from(r.include_hidden).unwrap_or(i32::MAX),
        };
        let answer = self
            .engine
            .call(move |core| -> Result<String, String> {
                let status = core.sim.bake_request(bake).map_err(|e| e.to_string())?;
                Ok(format!(
                    "baked {} cells of {} m ({} x {} x {}), {} filled",
                    status.dims.iter().map(|&d| d as u64).product::<u64>(),
                    status.cell_size,
                    status.dims[0],
                    status.dims[1],
                    status.dims[2],
                    status.filled_cells
                ))
            })
            .await?;
        Ok(answer.map_or_else(refused, |m| ack(true, m)))
    }

    async fn get_lidar_bake_status(
        &self,
        _request: Request<LidarSensorRequest>,
    ) -> Result<Response<LidarBakeStatusResponse>, Status> {
        // The bake is the scene's, shared by every sensor.
        let s = self.engine.snapshot().bake;
        Ok(Response::new(LidarBakeStatusResponse {
            valid: s.valid,
            format_version: s.format_version,
            cell_size_m: s.cell_size as f32,
            splat_radius: s.splat_radius,
            dim_x: s.dims[0],
            dim_y: s.dims[1],
            dim_z: s.dims[2],
            filled_cells: s.filled_cells,
            geom_materials: s.geom_materials,
            material_fingerprint: s.material_fingerprint,
            stale: s.stale,
        }))
    }

    async fn load_lidar_bake(&self, request: Request<LoadLidarBakeRequest>) -> Result<Response<LidarAck>, Status> {
        let name = request.into_inner().name;
        let answer = self
            .engine
            .call(move |core| {
                let name = if name.is_empty() { None } else { Some(name.as_str()) };
                // A stale bake loads, and the ack does not say so: GetLidarBakeStatus does.
                core.sim.load_bake(name).map(|_| core.sim.loaded_bake().unwrap_or_default().to_string())
            })
            .await?;
        Ok(answer.map_or_else(refused, |name| ack(true, format!("loaded bake '{name}'"))))
    }

    async fn save_lidar_bake(&self, request: Request<SaveLidarBakeRequest>) -> Result<Response<LidarAck>, Status> {
        let name = request.into_inner().name;
        let answer = self
            .engine
            .call(move |core| core.sim.save_bake(if name.is_empty() { None } else { Some(name.as_str()) }))
            .await?;
        Ok(answer.map_or_else(refused, |path| ack(true, format!("saved the bake to {}", path.display()))))
    }

    async fn get_lidar_scan(&self, request: Request<GetLidarScanRequest>) -> Result<Response<ScanAnswer>, Status> {
        let r = request.into_inner();
        // The last completed tick; readers of one tick share its copy, and the answer is
        // encoded from it (`scan.rs`).
        let snapshot = self.engine.fresh().await;
        let sensor = r.sensor as usize;
        let Some(s) = snapshot.sensors.get(sensor) else {
            return Ok(Response::new(ScanAnswer::default()));
        };
        check_scan(self.limit, s, &r)?;
        let tick = snapshot.tick;
        let scan = SharedScan::new(snapshot, sensor, r.material, r.want_secondary, r.want_intensity);
        let mut response = Response::new(ScanAnswer::Shared(scan));
        response.metadata_mut().insert(TICK_METADATA, tick.into());
        Ok(response)
    }

    async fn get_lidar_beam_count(
        &self,
        request: Request<LidarSensorRequest>,
    ) -> Result<Response<LidarBeamCountResponse>, Status> {
        let snapshot = self.engine.snapshot();
        let beams = snapshot.sensors.get(request.into_inner().sensor as usize).map_or(0, |s| s.config.beam_count());
        Ok(Response::new(LidarBeamCountResponse { beams: beams as u32 }))
    }

    async fn get_lidar_beam_angles(
        &self,
        request: Request<LidarSensorRequest>,
    ) -> Result<Response<LidarBeamAnglesResponse>, Status> {
        let sensor = request.into_inner().sensor as usize;
        // Checked on the snapshot first, so an answer too large never reaches the loop; and
        // again on the loop, where a configuration may have changed since.
        if let Some(s) = self.engine.snapshot().sensors.get(sensor) {
            check_angles(self.limit, sensor, s.config.beam_count())?;
        }
        let limit = self.limit;
        let answer = self
            .engine
            .query(move |core| -> Result<LidarBeamAnglesResponse, Status> {
                let Ok(lidar) = core.sim.lidar(sensor) else { return Ok(LidarBeamAnglesResponse::default()) };
                let beams = lidar.beam_count();
                check_angles(limit, sensor, beams)?;
                let (mut azimuth, mut elevation) = (vec![0.0; beams], vec![0.0; beams]);
                if lidar.beam_angles_into(0, &mut azimuth, &mut elevation).is_err() {
                    return Ok(LidarBeamAnglesResponse::default());
                }
                Ok(LidarBeamAnglesResponse { beams: beams as u32, azimuth, elevation })
            })
            .await??;
        Ok(Response::new(answer))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_optics_keep_their_values_and_zero_means_zero() {
        let current = ReturnParams { retro_gain: 800.0, max_returns: 2, spec_peak_max: 5.0, ..ReturnParams::default() };
        let request = SetLidarReturnParamsRequest {
            max_range_at_ref: 30.0,
            spec_peak_max: Some(0.0),
            ..SetLidarReturnParamsRequest::default()
        };
        let v = merged_params(&request, current);
        assert_eq!(v[0], 30.0);
        assert_eq!(v[1], 0.0, "a base field always replaces");
        assert_eq!(v[10], 0.0, "an optics field sent as 0 means 0");
        assert_eq!(v[11], 800.0, "an absent optics field keeps its value");
        assert_eq!(v[16], 2.0);
    }

    #[test]
    fn the_largest_max_returns_reaches_the_check_as_sent() {
        let request =
            SetLidarReturnParamsRequest { max_returns: Some(u32::MAX), ..SetLidarReturnParamsRequest::default() };
        let mut v = merged_params(&request, ReturnParams::default());
        assert_eq!(v[16], 4_294_967_295.0, "through f32 it was 4294967296");
        // Valid base fields, so the check reaches max_returns.
        v[..9].copy_from_slice(&ReturnParams::default().to_array()[..9]);
        let err = ReturnParams::from_array(v).unwrap_err().to_string();
        assert!(err.contains("4294967295") && !err.contains("4294967296"), "{err}");
    }

    #[test]
    fn the_response_carries_each_parameter_in_its_field() {
        let p = ReturnPreset::OusterOs1.params();
        let r = params_response(&p);
        assert_eq!((r.max_range_at_ref, r.noise_sigma0), (p.max_range_at_ref as f32, p.noise_sigma0 as f32));
        assert_eq!((r.retro_gain, r.max_returns), (p.retro_gain as f32, p.max_returns));
        let back = merged_params(&SetLidarReturnParamsRequest::default(), p);
        assert_eq!(back[9..], p.to_array()[9..], "absent optics keep theirs");
    }
}
