//! A camera frame as ROS 2 messages, the same for a recording read back and a live run: its
//! topics, its optical frame, its intrinsics, its depth (`16UC1`) and its colour (PNG).

use glam::{DQuat, DVec3};
use glint_record::{CameraStreamInfo, DEPTH_PNG_SCALE, depth_codes_scaled};

use crate::InteropError;
use crate::export::ros_name;
use crate::live::MessageSink;
use crate::msgs::{self, MessageType, Transform, nanoseconds};

/// A MuJoCo camera's frame (−Z forward, +Y up) turned into ROS's optical frame (+Z forward,
/// +Y down): half a turn about X.
pub(crate) const OPTICAL_FROM_MUJOCO: DQuat = DQuat::from_xyzw(1.0, 0.0, 0.0, 0.0);

/// The optical frame of camera `name` (+Z forward, +Y down, as ROS's images are).
pub(crate) fn optical_frame(name: &str) -> String {
    format!("{}_optical", ros_name(name))
}

/// `world` → camera `name`'s optical frame at `time`, from the MuJoCo camera's pose.
pub(crate) fn camera_transform(name: &str, time: f64, origin: DVec3, rotation: DQuat) -> Transform {
    Transform::in_world(&optical_frame(name), time, origin, rotation * OPTICAL_FROM_MUJOCO)
}

/// The topics of one camera's messages.
pub(crate) struct CameraTopics {
    /// `/<cam>/camera_info`.
    pub(crate) info: String,
    /// `/<cam>/depth/image_raw`, or a debug stream's `/<cam>/<stream>/image_raw`.
    pub(crate) depth: String,
    /// `/<cam>/image/compressed`.
    pub(crate) colour: String,
}

impl CameraTopics {
    pub(crate) fn of(info: &CameraStreamInfo) -> CameraTopics {
        let name = ros_name(&info.camera);
        let depth = match &info.depth_sensor {
            Some(model) if !model.is_depth_map() => format!("/{name}/{}/image_raw", ros_name(&model.stream)),
            _ => format!("/{name}/depth/image_raw"),
        };
        CameraTopics { info: format!("/{name}/camera_info"), depth, colour: format!("/{name}/image/compressed") }
    }

    /// The topics `info`'s stream sends, with their types.
    pub(crate) fn announced(info: &CameraStreamInfo) -> Vec<(String, MessageType)> {
        let t = CameraTopics::of(info);
        let mut topics = Vec::new();
        if info.intrinsics.is_some() {
            topics.push((t.info, MessageType::CameraInfo));
        }
        if info.depth {
            topics.push((t.depth, MessageType::Image));
        }
        if info.rgb {
            topics.push((t.colour, MessageType::CompressedImage));
        }
        topics
    }
}

/// A camera frame's depth, as the renderer made it or as a recording holds it.
pub(crate) enum Depth<'a> {
    /// Metres (0 for nothing hit), coded at the camera's `depth_scale` when sent.
    Metres(&'a [f32]),
    /// 16-bit codes of the camera's `depth_scale`, as the session's PNGs hold them.
    Codes(&'a [u16]),
}

/// One camera frame at `time`: its intrinsics, its depth and its colour, each when the
/// stream has it and `sink` reads its topic. A depth map goes out in millimetres (ROS's
/// depth convention), a debug stream in its own codes.
pub(crate) fn send_camera_frame(
    sink: &mut dyn MessageSink,
    info: &CameraStreamInfo,
    time: f64,
    rgb: Option<&[u8]>,
    depth: Option<Depth>,
) -> Result<(), InteropError> {
    let (ns, topics, frame_id) = (nanoseconds(time), CameraTopics::of(info), optical_frame(&info.camera));
    let size = (info.width as u32, info.height as u32);
    if let Some(k) = info.intrinsics
        && sink.wants(&topics.info)
    {
        sink.send(&topics.info, MessageType::CameraInfo, ns, &msgs::camera_info(ns, &frame_id, size, k))?;
    }
    if let Some(depth) = depth
        && sink.wants(&topics.depth)
    {
        let coded;
        let codes = match depth {
            Depth::Codes(codes) => codes,
            Depth::Metres(metres) => {
                coded = depth_codes_scaled(metres, info.depth_scale);
                &coded
            }
        };
        let data = depth_message_data(info, codes);
        sink.send(
            &topics.depth,
            MessageType::Image,
            ns,
            &msgs::image(ns, &frame_id, size, "16UC1", size.0 * 2, &data),
        )?;
    }
    if let Some(rgb) = rgb
        && sink.wants(&topics.colour)
    {
        let png = encode_png(rgb, size)
            .map_err(|e| InteropError::Setting(format!("cannot encode a frame of camera '{}': {e}", info.camera)))?;
        let msg = msgs::compressed_image(ns, &frame_id, "png", &png);
        sink.send(&topics.colour, MessageType::CompressedImage, ns, &msg)?;
    }
    Ok(())
}

/// The `16UC1` bytes of a depth frame recorded as `codes` of the camera's `depth_scale`:
/// millimetres for a depth map, a debug stream's own codes.
fn depth_message_data(info: &CameraStreamInfo, codes: &[u16]) -> Vec<u8> {
    let to_mm = match &info.depth_sensor {
        Some(model) if !model.is_depth_map() => None,
        _ => Some(info.depth_scale / DEPTH_PNG_SCALE),
    };
    let mut data = Vec::with_capacity(codes.len() * 2);
    for &code in codes {
        let code = match to_mm {
            Some(scale) if scale != 1.0 => (code as f64 * scale).round().clamp(0.0, u16::MAX as f64) as u16,
            _ => code,
        };
        data.extend_from_slice(&code.to_le_bytes());
    }
    data
}

fn encode_png(rgb: &[u8], (width, height): (u32, u32)) -> Result<Vec<u8>, image::ImageError> {
    use image::ImageEncoder;
    let mut png = Vec::new();
    image::codecs::png::PngEncoder::new_with_quality(
        &mut png,
        image::codecs::png::CompressionType::Fast,
        image::codecs::png::FilterType::Adaptive,
    )
    .write_image(rgb, width, height, image::ExtendedColorType::Rgb8)?;
    Ok(png)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_optical_frame_looks_along_the_mujoco_camera() {
        // A MuJoCo camera looks along its −Z; the optical frame along its +Z.
        let forward = OPTICAL_FROM_MUJOCO * DVec3::Z;
        assert!((forward - DVec3::NEG_Z).length() < 1e-12);
        let down = OPTICAL_FROM_MUJOCO * DVec3::Y;
        assert!((down - DVec3::NEG_Y).length() < 1e-12);
    }
}
