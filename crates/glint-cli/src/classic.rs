//! MuJoCo's own renderers in a child process: the classic renderer (`mujoco.Renderer`, the
//! `mujoco` Python package), the reference `glint lights report` and `glint bench render`
//! compare against, and MuJoCo Warp's batch renderer on the CPU, which `glint bench render`
//! also times.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

const RENDER_SCRIPT: &str = include_str!("mujoco_render.py");
const WARP_SCRIPT: &str = include_str!("warp_render.py");

/// One image for MuJoCo to draw.
pub struct ClassicJob {
    /// The MJCF file.
    pub mjcf: PathBuf,
    /// The MJCF camera.
    pub camera: String,
    /// Width and height, pixels.
    pub size: (usize, usize),
    /// Where the raw RGB bytes go.
    pub out: PathBuf,
    /// Frames to time after a warm-up (0: draw once, untimed).
    pub frames: u32,
}

/// What the renderer said.
pub struct ClassicReply {
    /// The `mujoco` package's version.
    pub version: String,
    /// Per job, its seconds per frame when timed.
    pub seconds_per_frame: Vec<Option<f64>>,
}

/// The Python to run: `python`, else $GLINT_PYTHON, else python3.
pub fn python(python: Option<PathBuf>) -> PathBuf {
    python.or_else(|| std::env::var_os("GLINT_PYTHON").map(PathBuf::from)).unwrap_or_else(|| PathBuf::from("python3"))
}

/// Draws every job with MuJoCo's classic renderer; with `one_thread`, Mesa's software
/// rasterizer (llvmpipe, under OSMesa) is held to one thread.
pub fn render(python: &PathBuf, jobs: &[ClassicJob], one_thread: bool) -> Result<ClassicReply> {
    let request: Vec<_> = jobs
        .iter()
        .map(|j| {
            serde_json::json!({ "mjcf": j.mjcf, "camera": j.camera, "width": j.size.0, "height": j.size.1,
                                "out": j.out, "frames": j.frames })
        })
        .collect();
    let mut cmd = Command::new(python);
    cmd.arg("-c").arg(RENDER_SCRIPT).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    if std::env::var_os("MUJOCO_GL").is_none() {
        cmd.env("MUJOCO_GL", "osmesa");
    }
    if one_thread {
        cmd.env("LP_NUM_THREADS", "1");
    }
    let fix = "MuJoCo's classic renderer is reached through the `mujoco` Python package (mujoco==3.17.0): pass \
               --python or set GLINT_PYTHON to a Python that has it; headless, it needs MUJOCO_GL=osmesa and \
               Mesa's libOSMesa on the library path (`make lights-report` and `make bench` set up both)";
    let start = || format!("cannot start '{}': {fix}", python.display());
    let out = run_script(cmd, &serde_json::to_string(&request)?, start, "the renderer")?;
    if !out.status.success() {
        let last = last_line(&out.stderr);
        bail!("MuJoCo's renderer ('{}') failed: {last}\n{fix}", python.display());
    }
    let reply = json_reply(&out.stdout, "the renderer printed no version")?;
    let seconds_per_frame = reply["seconds_per_frame"]
        .as_array()
        .map(|a| a.iter().map(serde_json::Value::as_f64).collect())
        .unwrap_or_else(|| vec![None; jobs.len()]);
    Ok(ClassicReply { version: reply["mujoco"].as_str().unwrap_or("?").to_string(), seconds_per_frame })
}

/// What MuJoCo Warp is asked to time.
pub struct WarpJob<'a> {
    /// The MJCF file.
    pub mjcf: &'a std::path::Path,
    /// The MJCF camera.
    pub camera: &'a str,
    /// Width and height, pixels.
    pub size: (usize, usize),
    /// Worlds drawn per call.
    pub worlds: u32,
    /// Shadows on.
    pub shadows: bool,
    /// Frames timed after a warm-up.
    pub frames: u32,
}

/// MuJoCo Warp's timing.
pub struct WarpReply {
    /// The `mujoco-warp` and `warp-lang` versions.
    pub version: String,
    /// Seconds per call (every world drawn once).
    pub seconds_per_frame: f64,
}

/// Times MuJoCo Warp's renderer on Warp's CPU device; `Ok(Err(reason))` when the Python has
/// no MuJoCo Warp to import (the bench then says so instead of a figure).
pub fn warp_render(python: &PathBuf, job: &WarpJob) -> Result<std::result::Result<WarpReply, String>> {
    let request = serde_json::json!({ "mjcf": job.mjcf, "camera": job.camera, "width": job.size.0,
        "height": job.size.1, "worlds": job.worlds, "shadows": job.shadows, "frames": job.frames });
    let mut cmd = Command::new(python);
    cmd.arg("-c").arg(WARP_SCRIPT).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let out = run_script(cmd, &request.to_string(), || format!("cannot start '{}'", python.display()), "MuJoCo Warp")?;
    let last = last_line(&out.stderr);
    match out.status.code() {
        Some(0) => {}
        Some(3) => return Ok(Err(last)),
        _ => bail!("MuJoCo Warp's renderer ('{}') failed: {last}", python.display()),
    }
    let reply = json_reply(&out.stdout, "MuJoCo Warp printed no timing")?;
    let seconds_per_frame = reply["seconds_per_frame"].as_f64().context("MuJoCo Warp reported no timing")?;
    let version = format!(
        "mujoco-warp {} (warp-lang {})",
        reply["mujoco_warp"].as_str().unwrap_or("?"),
        reply["warp"].as_str().unwrap_or("?")
    );
    Ok(Ok(WarpReply { version, seconds_per_frame }))
}

/// Runs `cmd` (a Python script with its pipes set), hands it `request` on standard input and
/// waits for it; `start` words the error when it cannot start, `who` the others.
fn run_script(
    mut cmd: Command,
    request: &str,
    start: impl FnOnce() -> String,
    who: &str,
) -> Result<std::process::Output> {
    let mut child = cmd.spawn().with_context(start)?;
    let mut stdin = child.stdin.take().with_context(|| format!("{who}'s standard input"))?;
    stdin.write_all(request.as_bytes()).context("sending the render jobs")?;
    drop(stdin);
    child.wait_with_output().with_context(|| format!("waiting for {who}"))
}

/// The last non-empty line a script wrote (its error), or "no message".
fn last_line(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("no message").to_string()
}

/// The last line of `stdout` that is a JSON value; `missing` words the error when none is.
fn json_reply(stdout: &[u8], missing: &str) -> Result<serde_json::Value> {
    let text = String::from_utf8_lossy(stdout);
    text.lines().rev().find_map(|l| serde_json::from_str(l).ok()).with_context(|| format!("{missing}: {text}"))
}
