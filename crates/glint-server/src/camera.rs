//! Cameras over gRPC: `CameraService.ListCameras`, `GetCameraConfig` and `SetCameraConfig`
//! (size, flags and the depth-sensor model), and the frames that `AgentService.Step` answers
//! its `camera_requests` with (RGBA bytes for colour, gray16le depth at the camera's
//! `depth_scale` metres per code, measured by its model), as the `luckyrobots` client reads
//! them.

use glint_camera::{DebugChannel, DepthSensor, SensorModel};
use glint_core::Spelled;
use glint_record::depth_codes_scaled;
use glint_sim::{CameraOptions, MAX_CAMERA_SIDE, Simulation, camera_name, native_resolution};
use tonic::{Request, Response, Status};

use crate::engine::Engine;
use crate::proto::camera_service_server::CameraService;
use crate::proto::get_camera_config_request::Identifier as ConfigId;
use crate::proto::get_camera_frame_request::Identifier as FrameId;
use crate::proto::set_camera_config_request::Identifier as SetId;
use crate::proto::{
    CameraConfig, CameraConfigAck, CameraConfigResponse, CameraInfo, CameraStreamKind, EntityId,
    GetCameraConfigRequest, GetCameraFrameRequest, ImageFrame, ListCamerasRequest, ListCamerasResponse,
    NamedImageFrame, SetCameraConfigRequest,
};
use crate::size::{Limit, Size};

/// One camera's configuration as clients set it with `SetCameraConfig`.
#[derive(Clone, Debug, PartialEq)]
pub struct ServedCamera {
    /// Frame size when a request asks for 0 × 0 (`None`: the MJCF camera's).
    pub size: Option<(usize, usize)>,
    /// Reported back as set (glint serve --record records the manifest's bindings).
    pub record_mask: bool,
    /// Reported back as set, as `record_mask`.
    pub record_depth: bool,
    /// Whether Step answers requests for the camera.
    pub enabled: bool,
    /// How depth frames are measured.
    pub sensor: DepthSensor,
}

impl Default for ServedCamera {
    fn default() -> Self {
        ServedCamera {
            size: None,
            record_mask: true,
            record_depth: true,
            enabled: true,
            sensor: DepthSensor::default(),
        }
    }
}

impl ServedCamera {
    /// The configuration of camera `c` as `GetCameraConfig` reports it.
    fn config(&self, sim: &Simulation, c: usize) -> CameraConfig {
        let (width, height) = self.size.unwrap_or_else(|| native_resolution(sim.scene(), c));
        let d = &self.sensor;
        // The codes cannot say more than 65 535 steps.
        let max_range = d.max_range.min(d.depth_scale * f64::from(u16::MAX));
        CameraConfig {
            width: width as u32,
            height: height as u32,
            record_mask: self.record_mask,
            record_depth: self.record_depth,
            enabled: self.enabled,
            sensor_model: d.model.index() as u32,
            depth_scale: d.depth_scale as f32,
            max_range: max_range as f32,
            min_range: d.min_range as f32,
            detect_floor: d.detect_floor as f32,
            baseline: d.baseline as f32,
            subpixel_sigma: d.subpixel_sigma as f32,
            debug_channel: d.debug_channel.index() as u32,
        }
    }

    /// This camera with `config` applied, or what is wrong with it. A model newly chosen
    /// starts from its representative device's fields; the wire's fields then replace theirs.
    fn with_config(&self, config: &CameraConfig) -> Result<ServedCamera, String> {
        let model =
            SensorModel::from_index(i64::from(config.sensor_model)).map_err(|e| format!("sensor_model: {e}"))?;
        let debug_channel =
            DebugChannel::from_index(i64::from(config.debug_channel)).map_err(|e| format!("debug_channel: {e}"))?;
        let mut sensor = if model == self.sensor.model { self.sensor } else { DepthSensor::for_model(model) };
        sensor.debug_channel = debug_channel;
        for (name, value) in [
            ("depth_scale", config.depth_scale),
            ("max_range", config.max_range),
            ("min_range", config.min_range),
            ("detect_floor", config.detect_floor),
            ("baseline", config.baseline),
            ("subpixel_sigma", config.subpixel_sigma),
        ] {
            sensor.set_field(name, f64::from(value)).map_err(|e| e.to_string())?;
        }
        sensor.validate().map_err(|e| e.to_string())?;
        let size = match (config.width as usize, config.height as usize) {
            (0, 0) => None,
            (w, h) if (1..=MAX_CAMERA_SIDE).contains(&w) && (1..=MAX_CAMERA_SIDE).contains(&h) => Some((w, h)),
            (w, h) => {
                return Err(format!(
                    "{w}x{h} is out of range: give both sides from 1 to {MAX_CAMERA_SIDE} pixels, or 0 and 0 for the \
                     camera's own"
                ));
            }
        };
        Ok(ServedCamera {
            size,
            record_mask: config.record_mask,
            record_depth: config.record_depth,
            enabled: config.enabled,
            sensor,
        })
    }
}

/// The camera a config request names, if the scene has it.
fn find_camera(sim: &Simulation, name: Option<&str>, id: Option<u64>) -> Option<usize> {
    match (name, id) {
        (Some(name), _) => sim.camera_index(name).ok(),
        (None, Some(id)) => Some(id as usize).filter(|&c| c < sim.scene().ncam()),
        (None, None) => None,
    }
}

/// Bytes an `ImageFrame`'s fields other than its pixels take at most.
const FRAME_FIXED: usize = 64;

/// Bytes a `CameraInfo`'s id takes at most.
const INFO_FIXED: usize = 16;

/// `CameraService` over the engine's simulation.
#[derive(Clone)]
pub struct Cameras {
    engine: Engine,
    limit: Limit,
}

impl Cameras {
    /// The service over `engine`, answering within `limit`.
    pub fn new(engine: Engine, limit: Limit) -> Cameras {
        Cameras { engine, limit }
    }
}

#[tonic::async_trait]
impl CameraService for Cameras {
    async fn list_cameras(&self, _: Request<ListCamerasRequest>) -> Result<Response<ListCamerasResponse>, Status> {
        let limit = self.limit;
        let cameras = self
            .engine
            .query(move |core| -> Result<Vec<CameraInfo>, Status> {
                let (scene, ncam) = (core.sim.scene(), core.sim.scene().ncam());
                let info = |c: usize| Size::of(INFO_FIXED).field(camera_name(scene, c).len());
                let size = (0..ncam).fold(Size::answer(), |size, c| size.message(info(c)));
                limit.check(
                    format!("the list of the scene's {ncam} cameras"),
                    size,
                    "serve a scene with fewer cameras",
                )?;
                let entry = |c: usize| CameraInfo { id: Some(EntityId { id: c as u64 }), name: camera_name(scene, c) };
                Ok((0..ncam).map(entry).collect())
            })
            .await??;
        Ok(Response::new(ListCamerasResponse { cameras }))
    }

    async fn get_camera_config(
        &self,
        request: Request<GetCameraConfigRequest>,
    ) -> Result<Response<CameraConfigResponse>, Status> {
        let id = request.into_inner().identifier;
        let response = self
            .engine
            .query(move |core| {
                let (name, id) = match &id {
                    Some(ConfigId::Name(name)) => (Some(name.as_str()), None),
                    Some(ConfigId::Id(e)) => (None, Some(e.id)),
                    None => (None, None),
                };
                match find_camera(&core.sim, name, id) {
                    None => CameraConfigResponse { found: false, config: None },
                    Some(c) => CameraConfigResponse { found: true, config: Some(core.cameras[c].config(&core.sim, c)) },
                }
            })
            .await?;
        Ok(Response::new(response))
    }

    async fn set_camera_config(
        &self,
        request: Request<SetCameraConfigRequest>,
    ) -> Result<Response<CameraConfigAck>, Status> {
        let request = request.into_inner();
        let ack = self
            .engine
            .call(move |core| {
                let (name, id) = match &request.identifier {
                    Some(SetId::Name(name)) => (Some(name.as_str()), None),
                    Some(SetId::Id(e)) => (None, Some(e.id)),
                    None => return refused("the request names no camera: set its name or id".into()),
                };
                let Some(c) = find_camera(&core.sim, name, id) else {
                    let which = name.map_or_else(|| format!("id {}", id.unwrap_or_default()), |n| format!("'{n}'"));
                    return refused(format!(
                        "camera {which} does not exist (the scene has {} cameras; ListCameras names them)",
                        core.sim.scene().ncam()
                    ));
                };
                let Some(config) = &request.config else {
                    return refused(
                        "the request carries no config: send a full CameraConfig (read one with \
                                    GetCameraConfig, change it, send it back)"
                            .into(),
                    );
                };
                match core.cameras[c].with_config(config) {
                    Ok(camera) => {
                        core.cameras[c] = camera;
                        let cam = camera_name(core.sim.scene(), c);
                        CameraConfigAck { ok: true, message: format!("camera '{cam}' configured") }
                    }
                    Err(e) => refused(format!("camera '{}': {e}; nothing changed", camera_name(core.sim.scene(), c))),
                }
            })
            .await?;
        Ok(Response::new(ack))
    }
}

/// A refused `SetCameraConfig`: not ok, with why.
fn refused(message: String) -> CameraConfigAck {
    CameraConfigAck { ok: false, message }
}

/// A `camera_requests` entry resolved against the scene.
#[derive(Clone, Debug, PartialEq)]
pub struct FrameRequest {
    /// The name the frame is answered under (as asked).
    name: String,
    camera: usize,
    size: (usize, usize),
    depth: bool,
    /// How its depth is measured (the camera's `SetCameraConfig`).
    sensor: DepthSensor,
}

/// Resolves `requests` (by name or camera id; width and height 0 for the camera's configured
/// size) against the cameras as configured, or says which one cannot be answered.
pub fn resolve(
    sim: &Simulation,
    cameras: &[ServedCamera],
    requests: &[GetCameraFrameRequest],
) -> Result<Vec<FrameRequest>, String> {
    if !requests.is_empty() && sim.cameras_locked() {
        return Err("camera_requests are refused while glint serve --record records the manifest's [[camera]] \
                    bindings (their frames are in the session); drop the requests, or serve without --record"
            .into());
    }
    requests
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let (name, camera) = match &r.identifier {
                Some(FrameId::Name(n)) => {
                    let c = (0..sim.scene().ncam()).find(|&c| camera_name(sim.scene(), c) == *n);
                    let c = c.ok_or_else(|| format!("camera_requests[{i}]: {}", sim.camera_index(n).unwrap_err()))?;
                    (n.clone(), c)
                }
                Some(FrameId::Id(e)) if (e.id as usize) < sim.scene().ncam() => (camera_name(sim.scene(), e.id as usize), e.id as usize),
                Some(FrameId::Id(e)) => {
                    return Err(format!(
                        "camera_requests[{i}]: camera id {} does not exist (the scene has {} cameras; ListCameras names them)",
                        e.id,
                        sim.scene().ncam()
                    ));
                }
                None => return Err(format!("camera_requests[{i}] names no camera: set its name or id")),
            };
            let served = &cameras[camera];
            if !served.enabled {
                return Err(format!(
                    "camera_requests[{i}]: camera '{name}' is disabled (SetCameraConfig enabled = false); enable it"
                ));
            }
            let (nw, nh) = served.size.unwrap_or_else(|| native_resolution(sim.scene(), camera));
            let size = match (r.width as usize, r.height as usize) {
                (0, 0) => (nw, nh),
                (w, h) if (1..=MAX_CAMERA_SIDE).contains(&w) && (1..=MAX_CAMERA_SIDE).contains(&h) => (w, h),
                (w, h) => {
                    return Err(format!(
                        "camera_requests[{i}] asks for {w}x{h}: give both sides from 1 to {} pixels, or 0 and 0 for the \
                         camera's own {nw}x{nh}",
                        MAX_CAMERA_SIDE
                    ));
                }
            };
            let depth = r.kind == CameraStreamKind::CameraStreamDepth as i32;
            Ok(FrameRequest { name, camera, size, depth, sensor: served.sensor })
        })
        .collect()
}

impl FrameRequest {
    /// The frame's pixel bytes: RGBA for colour, two bytes a pixel for depth.
    fn data_len(&self) -> usize {
        let (w, h) = self.size;
        w.saturating_mul(h).saturating_mul(if self.depth { 2 } else { 4 })
    }
}

/// `size` with a `NamedImageFrame` added for each of `requests`.
pub fn with_frames(size: Size, requests: &[FrameRequest]) -> Size {
    requests.iter().fold(size, |size, r| {
        let frame = Size::of(FRAME_FIXED).field(r.data_len());
        size.message(Size::of(0).field(r.name.len()).message(frame))
    })
}

/// `requests` in words: "2 camera frames (overview 8192x8192 colour, overview 64x48 depth)",
/// the first few named.
pub fn describe(requests: &[FrameRequest]) -> String {
    const NAMED: usize = 4;
    let each = requests.iter().take(NAMED).map(|r| {
        let kind = if r.depth { "depth" } else { "colour" };
        format!("{} {}x{} {kind}", r.name, r.size.0, r.size.1)
    });
    let mut list = each.collect::<Vec<_>>().join(", ");
    if requests.len() > NAMED {
        list.push_str(&format!(", and {} more", requests.len() - NAMED));
    }
    match requests.len() {
        0 => "no camera frames".into(),
        1 => format!("1 camera frame ({list})"),
        n => format!("{n} camera frames ({list})"),
    }
}

/// Renders world `world` for `requests` and answers each with its frame.
pub fn frames(
    sim: &mut Simulation,
    world: usize,
    requests: &[FrameRequest],
    frame_number: u32,
    timestamp_ms: u64,
) -> Result<Vec<NamedImageFrame>, String> {
    if requests.is_empty() {
        return Ok(Vec::new());
    }
    // One binding per camera and size, with colour and depth as the requests ask.
    let mut options: Vec<CameraOptions> = Vec::new();
    let mut slot_of = Vec::with_capacity(requests.len());
    for r in requests {
        let found = options.iter().position(|o| o.camera == r.camera && o.resolution == Some(r.size));
        let slot = found.unwrap_or_else(|| {
            options.push(CameraOptions {
                resolution: Some(r.size),
                render_rgb: false,
                render_depth: false,
                render_seg: false,
                ..CameraOptions::new(r.camera)
            });
            options.len() - 1
        });
        options[slot].render_rgb |= !r.depth;
        options[slot].render_depth |= r.depth;
        if r.depth {
            options[slot].depth_sensor = r.sensor;
        }
        slot_of.push(slot);
    }
    // The same camera at two sizes renders as two cameras: bind the extra sizes in later passes.
    let mut answers: Vec<Option<NamedImageFrame>> = vec![None; requests.len()];
    let mut pending: Vec<usize> = (0..options.len()).collect();
    while !pending.is_empty() {
        let mut batch: Vec<usize> = Vec::new();
        for &s in &pending {
            if !batch.iter().any(|&b| options[b].camera == options[s].camera) {
                batch.push(s);
            }
        }
        pending.retain(|s| !batch.contains(s));
        sim.set_cameras(batch.iter().map(|&s| options[s].clone()).collect()).map_err(|e| e.to_string())?;
        let rendered = sim.render().map_err(|e| e.to_string())?;
        for (k, &s) in batch.iter().enumerate() {
            let (rgb, depth, _, w, h) = rendered.image(world, k);
            for (i, r) in requests.iter().enumerate().filter(|(i, _)| slot_of[*i] == s) {
                let frame = if r.depth {
                    let scale = r.sensor.depth_scale;
                    let codes = depth_codes_scaled(depth, scale);
                    let data: Vec<u8> = codes.iter().flat_map(|c| c.to_le_bytes()).collect();
                    image_frame(data, (w, h, 1), "gray16le", scale as f32, frame_number, timestamp_ms)
                } else {
                    let data: Vec<u8> = rgb.chunks_exact(3).flat_map(|p| [p[0], p[1], p[2], 255]).collect();
                    image_frame(data, (w, h, 4), "rgba", 0.0, frame_number, timestamp_ms)
                };
                answers[i] = Some(NamedImageFrame { name: r.name.clone(), frame: Some(frame) });
            }
        }
    }
    Ok(answers.into_iter().flatten().collect())
}

fn image_frame(
    data: Vec<u8>,
    (width, height, channels): (usize, usize, u32),
    format: &str,
    depth_scale: f32,
    frame_number: u32,
    timestamp_ms: u64,
) -> ImageFrame {
    ImageFrame {
        data,
        width: width as u32,
        height: height as u32,
        channels,
        format: format.into(),
        timestamp_ms,
        frame_number,
        depth_scale,
    }
}
