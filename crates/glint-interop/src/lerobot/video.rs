//! LeRobot's video features written by `ffmpeg`: colour as H.264 (`yuv420p`, or `yuv444p` for
//! odd sides), depth as LeRobot's depth video (12-bit codes of its logarithmic quantizer,
//! `gray12le`, HEVC lossless), one keyframe every two frames, at the dataset's rate.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde_json::{Value, json};

use crate::InteropError;

/// LeRobot's depth quantizer (`lerobot.datasets.depth_utils.quantize_depth`, logarithmic):
/// 12-bit codes over `[depth_min, depth_max]` metres, with a `shift` before the logarithm.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct DepthQuantizer {
    pub(crate) depth_min: f64,
    pub(crate) depth_max: f64,
    pub(crate) shift: f64,
}

/// LeRobot's largest depth code (12 bits).
const DEPTH_QMAX: f32 = 4095.0;

impl DepthQuantizer {
    /// LeRobot's defaults (0.01 m, 3.5 m shift) up to `depth_max` metres.
    pub(crate) fn up_to(depth_max: f64) -> DepthQuantizer {
        DepthQuantizer { depth_min: 0.01, depth_max, shift: 3.5 }
    }

    /// The code of `metres`, computed in float32 as LeRobot's numpy code does (0 for depths
    /// at or below `depth_min`, such as the invalid pixels).
    pub(crate) fn code(&self, metres: f32) -> u16 {
        let log_min = (self.depth_min + self.shift).ln();
        let log_max = (self.depth_max + self.shift).ln();
        let norm = ((metres + self.shift as f32).ln() - log_min as f32) / (log_max - log_min) as f32;
        let code = (norm * DEPTH_QMAX).round_ties_even();
        if code.is_nan() { 0 } else { code.clamp(0.0, DEPTH_QMAX) as u16 }
    }

    /// The `video.*` entries LeRobot reads the quantizer back from.
    pub(crate) fn info(&self) -> [(&'static str, Value); 4] {
        [
            ("video.depth_min", json!(self.depth_min)),
            ("video.depth_max", json!(self.depth_max)),
            ("video.shift", json!(self.shift)),
            ("video.use_log", json!(true)),
        ]
    }
}

/// How a video feature is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum VideoKind {
    /// 8-bit RGB frames.
    Colour,
    /// 12-bit depth codes.
    Depth,
}

/// The constant rate factor of the colour videos (visually lossless for H.264).
const COLOUR_CRF: u32 = 18;

impl VideoKind {
    fn input_pix_fmt(self) -> &'static str {
        match self {
            VideoKind::Colour => "rgb24",
            VideoKind::Depth => "gray12le",
        }
    }

    /// The pixel format written for a `width` × `height` video.
    fn pix_fmt(self, (width, height): (usize, usize)) -> &'static str {
        match self {
            VideoKind::Colour if width % 2 == 0 && height % 2 == 0 => "yuv420p",
            VideoKind::Colour => "yuv444p",
            VideoKind::Depth => "gray12le",
        }
    }

    fn codec_args(self) -> Vec<String> {
        let args = match self {
            VideoKind::Colour => format!("-c:v libx264 -crf {COLOUR_CRF} -g 2"),
            VideoKind::Depth => "-c:v libx265 -x265-params lossless=1:log-level=error -g 2".to_string(),
        };
        args.split(' ').map(str::to_string).collect()
    }

    /// The feature's `info` block, as LeRobot 0.6 writes it.
    pub(crate) fn info(self, size: (usize, usize), fps: u32, depth: Option<&DepthQuantizer>) -> Value {
        let (width, height) = size;
        let mut info = serde_json::Map::new();
        let is_depth = self == VideoKind::Depth;
        if is_depth {
            info.insert("is_depth_map".into(), json!(true));
            info.insert("depth_unit".into(), json!("m"));
        }
        let (codec, crf, extra) = match self {
            VideoKind::Colour => ("h264", json!(COLOUR_CRF), json!({})),
            VideoKind::Depth => ("hevc", Value::Null, json!({"x265-params": "lossless=1"})),
        };
        let entries = [
            ("video.height", json!(height)),
            ("video.width", json!(width)),
            ("video.codec", json!(codec)),
            ("video.pix_fmt", json!(self.pix_fmt(size))),
            ("video.fps", json!(fps)),
            ("video.channels", json!(if is_depth { 1 } else { 3 })),
            ("has_audio", json!(false)),
            ("video.g", json!(2)),
            ("video.crf", crf),
            ("video.preset", Value::Null),
            ("video.fast_decode", json!(0)),
            ("video.video_backend", json!("pyav")),
            ("video.extra_options", extra),
        ];
        for (k, v) in entries {
            info.insert(k.into(), v);
        }
        if !is_depth {
            info.insert("is_depth_map".into(), json!(false));
        }
        for (k, v) in depth.map(DepthQuantizer::info).into_iter().flatten() {
            info.insert(k.into(), v);
        }
        Value::Object(info)
    }
}

/// A video being encoded: frames go to `ffmpeg`'s standard input.
pub(crate) struct VideoWriter {
    child: Child,
    stdin: Option<ChildStdin>,
    path: PathBuf,
    frame_bytes: usize,
}

impl VideoWriter {
    /// Starts encoding `path` (which must not exist) of `kind`, `size` pixels at `fps`.
    pub(crate) fn start(
        ffmpeg: &Path,
        path: &Path,
        kind: VideoKind,
        size: (usize, usize),
        fps: u32,
    ) -> Result<VideoWriter, InteropError> {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| InteropError::io("create", dir, e))?;
        }
        let (width, height) = size;
        let mut child = Command::new(ffmpeg)
            .args(["-loglevel", "error", "-nostdin", "-f", "rawvideo", "-pix_fmt", kind.input_pix_fmt()])
            .args(["-video_size", &format!("{width}x{height}"), "-framerate", &fps.to_string(), "-i", "-"])
            .args(kind.codec_args())
            .args(["-pix_fmt", kind.pix_fmt(size), "-movflags", "+faststart", "-n"])
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| InteropError::Setting(format!("cannot start '{}': {e}", ffmpeg.display())))?;
        let stdin = child.stdin.take();
        let bytes_per_pixel = if kind == VideoKind::Colour { 3 } else { 2 };
        Ok(VideoWriter { child, stdin, path: path.to_path_buf(), frame_bytes: width * height * bytes_per_pixel })
    }

    /// Appends one frame (RGB bytes, or little-endian 16-bit codes).
    pub(crate) fn frame(&mut self, bytes: &[u8]) -> Result<(), InteropError> {
        if bytes.len() != self.frame_bytes {
            return Err(InteropError::Setting(format!(
                "a frame of '{}' has {} bytes where {} were expected",
                self.path.display(),
                bytes.len(),
                self.frame_bytes
            )));
        }
        let stdin = self.stdin.as_mut().expect("open until finish");
        if let Err(e) = stdin.write_all(bytes) {
            // ffmpeg stopped: its own message says why.
            let why = self.stop().err().map_or_else(|| e.to_string(), |err| err.to_string());
            return Err(InteropError::Setting(why));
        }
        Ok(())
    }

    fn stop(&mut self) -> Result<(), InteropError> {
        drop(self.stdin.take());
        let mut stderr = String::new();
        if let Some(mut err) = self.child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut err, &mut stderr);
        }
        let status = self.child.wait().map_err(|e| InteropError::io("encode", &self.path, e))?;
        if status.success() {
            return Ok(());
        }
        Err(InteropError::Setting(format!("ffmpeg cannot encode '{}': {}", self.path.display(), stderr.trim())))
    }

    /// Finishes the file.
    pub(crate) fn finish(mut self) -> Result<(), InteropError> {
        self.stop()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn depth_codes_follow_lerobots_quantizer() {
        let q = DepthQuantizer::up_to(10.0);
        // lerobot.datasets.depth_utils.quantize_depth(np.array([...], np.float32), input_unit="m")
        assert_eq!(q.code(0.0), 0);
        assert_eq!(q.code(0.01), 0);
        assert_eq!(q.code(10.0), 4095);
        assert_eq!(q.code(20.0), 4095);
        let mid = q.code(1.0);
        let norm = ((1.0f64 + 3.5).ln() - 3.51f64.ln()) / (13.5f64.ln() - 3.51f64.ln());
        assert_eq!(mid, (norm * 4095.0).round() as u16);
    }
}
