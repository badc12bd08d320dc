//! Video proxies: an H.264 `.mp4` beside a lidar file, the sensor's returns drawn top-down
//! about ten times a second of simulated time and encoded by the external `ffmpeg` program
//! (found as `$GLINT_FFMPEG`, else `ffmpeg` on the `PATH`). A proxy that fails is dropped
//! with a warning; the Parquet recording never depends on one.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use glam::{DVec3, Vec3};
use glint_lidar::{ColourBy, Ramp, Scan};
use image::RgbImage;

use crate::draw::{MaterialRead, Point, top_down_image};

/// Side of a proxy frame in pixels (even, as H.264's 4:2:0 needs).
const FRAME_SIZE: u32 = 512;

/// Which sensors of a session get a video proxy, drawn how.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VideoSettings {
    /// Every sensor gets one (the recorder's `record_video_proxy`); otherwise only those whose
    /// binding asks (`video_proxy`).
    pub all_sensors: bool,
    /// What the frames are coloured by.
    pub colour_by: ColourBy,
}

/// Something that went wrong beside a recording, which the recording itself survives.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RecordWarning {
    /// Video proxies were asked for, and no `ffmpeg` runs.
    NoFfmpeg,
    /// A video proxy could not be started, fed or finished, and was dropped.
    VideoProxy {
        /// The `.mp4` file.
        path: PathBuf,
        /// What went wrong.
        problem: String,
    },
}

impl std::fmt::Display for RecordWarning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RecordWarning::NoFfmpeg => f.write_str(
                "video proxies are on, but ffmpeg was not found (install it, or set GLINT_FFMPEG to its path); \
                 recording without them",
            ),
            RecordWarning::VideoProxy { path, problem } => {
                write!(f, "video proxy '{}': {problem}; the lidar recording goes on without it", path.display())
            }
        }
    }
}

/// The `ffmpeg` program to use, if one runs: `$GLINT_FFMPEG`, else `ffmpeg` on the `PATH`.
pub fn find_ffmpeg() -> Option<PathBuf> {
    let candidate = std::env::var_os("GLINT_FFMPEG").map_or_else(|| PathBuf::from("ffmpeg"), PathBuf::from);
    let runs = Command::new(&candidate)
        .arg("-version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    runs.then_some(candidate)
}

/// Frames per second of a proxy on a runner of `tick_hz`, and how many ticks apart its frames
/// are: about ten a second.
pub(crate) fn frame_rate(tick_hz: f64) -> (f64, u64) {
    let every = (tick_hz / 10.0).round().max(1.0) as u64;
    (tick_hz / every as f64, every)
}

/// One `.mp4` being encoded: frames go to ffmpeg's standard input as raw RGB.
pub(crate) struct VideoProxy {
    child: Child,
    stdin: Option<ChildStdin>,
    path: PathBuf,
}

impl VideoProxy {
    /// Starts encoding `path` at `fps` frames per second.
    pub(crate) fn start(ffmpeg: &Path, path: &Path, fps: f64) -> Result<VideoProxy, RecordWarning> {
        let size = format!("{FRAME_SIZE}x{FRAME_SIZE}");
        let mut child = Command::new(ffmpeg)
            .args(["-loglevel", "error", "-y", "-f", "rawvideo", "-pix_fmt", "rgb24", "-s", &size])
            .args(["-r", &format!("{fps:.3}"), "-i", "-", "-c:v", "libx264", "-preset", "veryfast"])
            .args(["-pix_fmt", "yuv420p", "-movflags", "+faststart"])
            .arg(path)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| warning(path, format!("cannot start '{}': {e}", ffmpeg.display())))?;
        let stdin = child.stdin.take();
        Ok(VideoProxy { child, stdin, path: path.to_path_buf() })
    }

    /// Appends a frame of `scan`'s returns, centred on the sensor at `origin` and `side`
    /// metres across.
    pub(crate) fn frame(
        &mut self,
        scan: &Scan,
        origin: DVec3,
        channels: u32,
        by: ColourBy,
        side: f32,
    ) -> Result<(), RecordWarning> {
        let img = frame(scan, origin.as_vec3(), channels, by, side);
        let stdin = self.stdin.as_mut().ok_or_else(|| warning(&self.path, "it is already closed".into()))?;
        stdin.write_all(img.as_raw()).map_err(|e| warning(&self.path, format!("ffmpeg stopped taking frames: {e}")))
    }

    /// Closes the stream and waits for ffmpeg to write the file.
    pub(crate) fn finish(mut self) -> Result<PathBuf, RecordWarning> {
        drop(self.stdin.take());
        let out =
            self.child.wait_with_output().map_err(|e| warning(&self.path, format!("ffmpeg did not finish: {e}")))?;
        if !out.status.success() {
            let why = String::from_utf8_lossy(&out.stderr).trim().to_string();
            return Err(warning(&self.path, format!("ffmpeg could not encode it: {why}")));
        }
        Ok(self.path)
    }
}

fn warning(path: &Path, problem: String) -> RecordWarning {
    RecordWarning::VideoProxy { path: path.to_path_buf(), problem }
}

/// A proxy frame of `scan`'s returns, world frame, centred on the sensor at `origin` and
/// `side` metres across.
fn frame(scan: &Scan, origin: Vec3, channels: u32, by: ColourBy, side: f32) -> RgbImage {
    // Beams cast before the scan kept surfaces have no point to draw.
    let Some(surfaces) = &scan.surfaces else {
        return top_down_image(&[], by, Ramp::default(), FRAME_SIZE, Some(([origin.x, origin.y], side)));
    };
    let points: Vec<Point> = (0..scan.len())
        .filter(|&k| scan.range[k] >= 0.0 && surfaces.known(k))
        .map(|k| {
            let p = Vec3::from(surfaces.point[k]);
            let dir = (p - origin).normalize_or_zero();
            Point {
                xyz: surfaces.point[k],
                range: scan.range[k],
                channel: k as u32 % channels,
                channels,
                azimuth: dir.y.atan2(dir.x),
                order: k as u32,
                cos_incidence: dir.dot(Vec3::from(surfaces.normal[k])).abs(),
                material: MaterialRead::Unconfigured,
            }
        })
        .collect();
    top_down_image(&points, by, Ramp::default(), FRAME_SIZE, Some(([origin.x, origin.y], side)))
}
