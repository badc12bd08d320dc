//! Camera streams of a session, in LeRobot's `videos/` layout: per camera and episode, the
//! RGB frames as an H.264 `.mp4` (through `ffmpeg`), the depth frames as 16-bit PNGs in
//! millimetres, and a sidecar with the intrinsics and each frame's time and camera pose.
//!
//! ```text
//! videos/chunk-000/observation.images.<Cam>/episode_000000.mp4
//! videos/chunk-000/observation.images.<Cam>/episode_000000.json
//! depth/chunk-000/observation.depth.<Cam>/episode_000000/frame_000000.png
//! ```

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::RecordError;
use crate::session::write_json;
use crate::video::{RecordWarning, find_ffmpeg};

/// Millimetres: depth PNG codes are metres / this.
pub const DEPTH_PNG_SCALE: f64 = 0.001;

/// Depth in metres as 16-bit codes of [`DEPTH_PNG_SCALE`] (millimetres): 0 where nothing is
/// hit, 65 535 (65.535 m) at most.
pub fn depth_codes(depth: &[f32]) -> Vec<u16> {
    depth_codes_scaled(depth, DEPTH_PNG_SCALE)
}

/// Depth in metres as 16-bit codes of `scale` metres each (`round(z / scale)`, clamped): 0
/// where nothing is hit or the depth is invalid.
pub fn depth_codes_scaled(depth: &[f32], scale: f64) -> Vec<u16> {
    depth.iter().map(|&m| (f64::from(m) / scale).round().clamp(0.0, f64::from(u16::MAX)) as u16).collect()
}

/// Writes a `width` × `height` depth image (metres) as a 16-bit grey PNG of [`depth_codes`].
pub fn write_depth_png(path: &Path, depth: &[f32], width: usize, height: usize) -> Result<(), RecordError> {
    write_depth_png_scaled(path, depth, (width, height), DEPTH_PNG_SCALE)
}

/// [`write_depth_png`] in codes of `scale` metres.
pub fn write_depth_png_scaled(
    path: &Path,
    depth: &[f32],
    (width, height): (usize, usize),
    scale: f64,
) -> Result<(), RecordError> {
    let codes = depth_codes_scaled(depth, scale);
    let img =
        image::ImageBuffer::<image::Luma<u16>, Vec<u16>>::from_raw(width as u32, height as u32, codes).ok_or_else(
            || RecordError::Image { path: path.to_path_buf(), reason: "the depth frame has the wrong size".into() },
        )?;
    crate::files::save_png(&img, path)
}

/// What a camera stream records and how.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CameraStreamInfo {
    /// The MJCF camera's name (its files' `<Cam>`, sanitised).
    pub camera: String,
    /// Width and height, pixels.
    pub width: usize,
    /// Height, pixels.
    pub height: usize,
    /// Frames per second of simulated time.
    pub fps: f64,
    /// Focal lengths and principal point in pixels (`fx, fy, cx, cy`; rows top to bottom), or
    /// for an orthographic camera `None`.
    pub intrinsics: Option<[f64; 4]>,
    /// Whether colour is recorded.
    pub rgb: bool,
    /// Whether depth is recorded.
    pub depth: bool,
    /// Metres per 16-bit depth code (PNG grey level; 0 is invalid or nothing hit).
    #[serde(rename = "depth_png_scale")]
    pub depth_scale: f64,
    /// The depth-sensor model that measured the depth, when one did (absent: the clean
    /// depth, equal to `mj_ray`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth_sensor: Option<DepthModelInfo>,
}

/// The depth-sensor model of a recorded camera, by the `[[camera]]` keys.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DepthModelInfo {
    /// `none`, `active-stereo`, `itof`, `structured-light` or `dtof-sparse`.
    pub sensor_model: String,
    /// What the depth stream carries: `depth`, or a debug channel's name (then it is not a
    /// depth map: its codes are the channel's value over `depth_png_scale`).
    pub stream: String,
    /// Which dToF target a zone reports (`strongest` or `closest`).
    pub target_order: String,
    /// Every calibration field by its `[[camera]]` key.
    #[serde(flatten)]
    pub fields: std::collections::BTreeMap<String, f64>,
}

impl DepthModelInfo {
    /// Whether the depth stream is a depth map (not a debug channel).
    pub fn is_depth_map(&self) -> bool {
        self.stream == "depth"
    }
}

/// A camera whose depth stream carries a debug channel, as `meta/info.json` lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DebugStream {
    /// The camera's name.
    pub camera: String,
    /// The debug channel's name.
    pub channel: String,
}

/// One recorded frame's time and camera pose (world frame; MuJoCo's camera looks along −Z
/// with +Y up).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FramePose {
    /// Frame index in the episode.
    pub frame: u64,
    /// Simulation time, seconds.
    pub time: f64,
    /// Camera position, metres.
    pub pos: [f64; 3],
    /// Camera orientation, quaternion (w, x, y, z).
    pub quat: [f64; 4],
}

/// A camera stream's sidecar read back (`videos/…/episode_NNNNNN.json`).
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CameraSidecar {
    /// What the stream records.
    #[serde(flatten)]
    pub info: CameraStreamInfo,
    /// Every frame's time and pose.
    pub frames: Vec<FramePose>,
}

/// Reads a camera stream's sidecar.
pub fn read_camera_sidecar(path: &Path) -> Result<CameraSidecar, RecordError> {
    let text = std::fs::read_to_string(path).map_err(|e| RecordError::io("read", path, e))?;
    serde_json::from_str(&text).map_err(|e| RecordError::Json {
        path: path.to_path_buf(),
        what: "camera sidecar",
        reason: e.to_string(),
    })
}

/// The depth frame `frame` of a stream, in its episode's depth folder `dir`.
pub fn depth_frame_file(dir: &Path, frame: u64) -> PathBuf {
    dir.join(format!("frame_{frame:06}.png"))
}

/// One camera's stream in one episode.
pub struct CameraStream {
    info: CameraStreamInfo,
    sidecar: PathBuf,
    video: Option<(Child, Option<ChildStdin>, PathBuf)>,
    depth_dir: Option<PathBuf>,
    frames: Vec<FramePose>,
    warnings: Vec<RecordWarning>,
}

/// `<Cam>`: the name with every character outside `[A-Za-z0-9_-]` replaced by `_`.
pub fn camera_file_name(name: &str) -> String {
    name.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// The `.mp4` of camera `name`'s episode `index`, relative to the session folder.
pub fn camera_video_file(index: u32, name: &str) -> PathBuf {
    Path::new("videos")
        .join(format!("chunk-{:03}", index / 1000))
        .join(format!("observation.images.{}", camera_file_name(name)))
        .join(format!("episode_{index:06}.mp4"))
}

/// The folder of camera `name`'s depth frames of episode `index`, relative to the session
/// folder.
pub fn camera_depth_dir(index: u32, name: &str) -> PathBuf {
    Path::new("depth")
        .join(format!("chunk-{:03}", index / 1000))
        .join(format!("observation.depth.{}", camera_file_name(name)))
        .join(format!("episode_{index:06}"))
}

impl CameraStream {
    /// Opens the stream of episode `index` in the session folder `dir`. Without `ffmpeg` the
    /// colour video is dropped with a warning (depth and the sidecar are still written).
    pub fn begin(dir: &Path, index: u32, info: CameraStreamInfo) -> Result<CameraStream, RecordError> {
        let video_path = dir.join(camera_video_file(index, &info.camera));
        let folder = video_path.parent().unwrap_or(dir).to_path_buf();
        std::fs::create_dir_all(&folder).map_err(|e| RecordError::io("create", &folder, e))?;
        let sidecar = video_path.with_extension("json");
        let mut warnings = Vec::new();
        let video = if info.rgb {
            match find_ffmpeg() {
                Some(ffmpeg) => match start_video(&ffmpeg, &video_path, &info) {
                    Ok((child, stdin)) => Some((child, Some(stdin), video_path)),
                    Err(problem) => {
                        warnings.push(RecordWarning::VideoProxy { path: video_path, problem });
                        None
                    }
                },
                None => {
                    warnings.push(RecordWarning::NoFfmpeg);
                    None
                }
            }
        } else {
            None
        };
        let depth_dir = if info.depth {
            let d = dir.join(camera_depth_dir(index, &info.camera));
            std::fs::create_dir_all(&d).map_err(|e| RecordError::io("create", &d, e))?;
            Some(d)
        } else {
            None
        };
        Ok(CameraStream { info, sidecar, video, depth_dir, frames: Vec::new(), warnings })
    }

    /// Appends the next frame (its index set here): see [`CameraStream::write`].
    pub fn write_next(&mut self, rgb: &[u8], depth: &[f32], pose: FramePose) -> Result<(), RecordError> {
        let frame = self.frames.len() as u64;
        self.write(rgb, depth, FramePose { frame, ..pose })
    }

    /// Appends a frame: `rgb` (`width × height × 3` bytes) and `depth` (metres, 0 for nothing
    /// hit), each when the stream records it, taken at `pose`.
    pub fn write(&mut self, rgb: &[u8], depth: &[f32], pose: FramePose) -> Result<(), RecordError> {
        if let Some((_, stdin, path)) = &mut self.video {
            let written = stdin.as_mut().map(|s| s.write_all(rgb));
            if !matches!(written, Some(Ok(()))) {
                let problem = "ffmpeg stopped taking frames".to_string();
                self.warnings.push(RecordWarning::VideoProxy { path: path.clone(), problem });
                *stdin = None;
            }
        }
        if let Some(d) = &self.depth_dir {
            let path = depth_frame_file(d, pose.frame);
            write_depth_png_scaled(&path, depth, (self.info.width, self.info.height), self.info.depth_scale)?;
        }
        self.frames.push(pose);
        Ok(())
    }

    /// What went wrong beside the stream since the last call.
    pub fn take_warnings(&mut self) -> Vec<RecordWarning> {
        std::mem::take(&mut self.warnings)
    }

    /// Closes the video, writes the sidecar, and returns the files written (relative to the
    /// session folder `dir`) with any warnings.
    pub fn finish(mut self, dir: &Path) -> Result<(Vec<PathBuf>, Vec<RecordWarning>), RecordError> {
        let mut files = Vec::new();
        if let Some((child, stdin, path)) = self.video.take() {
            drop(stdin);
            match child.wait_with_output() {
                Ok(out) if out.status.success() => files.push(path),
                Ok(out) => self.warnings.push(RecordWarning::VideoProxy {
                    path,
                    problem: format!("ffmpeg could not encode it: {}", String::from_utf8_lossy(&out.stderr).trim()),
                }),
                Err(e) => self
                    .warnings
                    .push(RecordWarning::VideoProxy { path, problem: format!("ffmpeg did not finish: {e}") }),
            }
        }
        #[derive(Serialize)]
        struct Sidecar<'a> {
            #[serde(flatten)]
            info: &'a CameraStreamInfo,
            frames: &'a [FramePose],
        }
        write_json(&self.sidecar, &Sidecar { info: &self.info, frames: &self.frames })?;
        files.push(self.sidecar.clone());
        if let Some(d) = &self.depth_dir {
            files.push(d.clone());
        }
        let files = files.into_iter().map(|p| p.strip_prefix(dir).map(Path::to_path_buf).unwrap_or(p)).collect();
        Ok((files, self.warnings))
    }
}

/// Starts ffmpeg encoding raw RGB frames of `info`'s size into `path` (padded to even sides,
/// as H.264's 4:2:0 needs).
fn start_video(ffmpeg: &Path, path: &Path, info: &CameraStreamInfo) -> Result<(Child, ChildStdin), String> {
    let size = format!("{}x{}", info.width, info.height);
    let mut child = Command::new(ffmpeg)
        .args(["-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", &size])
        .args(["-r", &format!("{:.3}", info.fps), "-i", "-", "-vf", "pad=ceil(iw/2)*2:ceil(ih/2)*2"])
        .args(["-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-movflags", "+faststart"])
        .arg(path)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start '{}': {e}", ffmpeg.display()))?;
    let stdin = child.stdin.take().ok_or_else(|| "ffmpeg has no standard input".to_string())?;
    Ok((child, stdin))
}
