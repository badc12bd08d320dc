//! Video proxies: an H.264 `.mp4` of a sensor's returns, drawn top-down frame by frame and
//! encoded by the external `ffmpeg` program (found as `$GLINT_FFMPEG`, else `ffmpeg` on the
//! `PATH`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};

use anyhow::{Context, Result, bail};
use glam::Vec3;
use glint_lidar::Scan;
use image::RgbImage;

use crate::draw::{ColourBy, MaterialRead, Point, Ramp, top_down_image};

/// Side of a proxy frame in pixels (even, as H.264's 4:2:0 needs).
pub const FRAME_SIZE: u32 = 512;

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

/// One `.mp4` being encoded: frames go to ffmpeg's standard input as raw RGB.
pub struct VideoProxy {
    child: Child,
    stdin: Option<ChildStdin>,
    path: PathBuf,
}

impl VideoProxy {
    /// Starts encoding `path` at `fps` frames per second.
    pub fn start(ffmpeg: &Path, path: &Path, fps: f64) -> Result<VideoProxy> {
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
            .with_context(|| format!("cannot start '{}' to encode '{}'", ffmpeg.display(), path.display()))?;
        let stdin = child.stdin.take();
        Ok(VideoProxy { child, stdin, path: path.to_path_buf() })
    }

    /// Appends one frame.
    pub fn frame(&mut self, img: &RgbImage) -> Result<()> {
        let stdin = self.stdin.as_mut().context("the video proxy is already closed")?;
        stdin
            .write_all(img.as_raw())
            .with_context(|| format!("ffmpeg stopped taking frames for '{}'", self.path.display()))
    }

    /// Closes the stream and waits for ffmpeg to write the file.
    pub fn finish(mut self) -> Result<PathBuf> {
        drop(self.stdin.take());
        let out = self.child.wait_with_output().context("ffmpeg did not finish")?;
        if !out.status.success() {
            bail!("ffmpeg could not encode '{}': {}", self.path.display(), String::from_utf8_lossy(&out.stderr).trim());
        }
        Ok(self.path)
    }
}

/// A proxy frame of `scan`'s returns, world frame, centred on the sensor at `origin` and
/// `side` metres across.
pub fn frame(scan: &Scan, origin: Vec3, channels: u32, by: ColourBy, ramp: Ramp, side: f32) -> RgbImage {
    let points: Vec<Point> = (0..scan.len())
        .filter(|&k| scan.range[k] >= 0.0)
        .map(|k| {
            let p = Vec3::from(scan.point[k]);
            let dir = (p - origin).normalize_or_zero();
            Point {
                xyz: scan.point[k],
                range: scan.range[k],
                channel: k as u32 % channels,
                channels,
                azimuth: dir.y.atan2(dir.x),
                order: k as u32,
                cos_incidence: dir.dot(Vec3::from(scan.normal[k])).abs(),
                material: MaterialRead::Unconfigured,
            }
        })
        .collect();
    top_down_image(&points, by, ramp, FRAME_SIZE, Some(([origin.x, origin.y], side)))
}
