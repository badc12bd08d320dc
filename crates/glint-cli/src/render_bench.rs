//! `glint bench render`: glint's cameras against MuJoCo's classic renderer drawing the same
//! camera of the same scene, in one run.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use glint_mujoco::LitScene;
use glint_sim::{CameraOptions, Manifest, SimOptions, Simulation};
use serde::Serialize;

use crate::classic::{self, ClassicJob};
use crate::output::write_error;

/// Arguments of `glint bench render`.
#[derive(Args)]
pub struct RenderBenchArgs {
    /// An MJCF scene or a manifest (its light rig applied when `use_scenario_lights` is on).
    scene: PathBuf,
    /// The MJCF camera (default: the first).
    #[arg(long)]
    camera: Option<String>,
    /// Image side, pixels (square images).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..=4096))]
    res: u32,
    /// Worlds glint renders per call (MuJoCo draws one).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    worlds: u32,
    /// Shadows on, in both renderers.
    #[arg(long)]
    shadows: bool,
    /// Frames timed per measurement (after one warm-up).
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    frames: u32,
    /// Python with the `mujoco` package (default: $GLINT_PYTHON, else python3).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
    /// Time glint's depth with this depth-sensor model (`active-stereo`, `itof`,
    /// `structured-light`, `dtof-sparse`, or `all`) against its clean depth, in one run,
    /// instead of colour against MuJoCo. Each model with its representative device's fields
    /// (D435, Azure Kinect NFOV with 2 × 2 sub-pixels, Kinect v1, VL53L5CX: 8 × 8 zones of
    /// 8 × 8 rays) at the bench's image size.
    #[arg(long, value_name = "MODEL")]
    depth_model: Option<String>,
    /// Image size for `--depth-model`, pixels.
    #[arg(long, num_args = 2, value_names = ["WIDTH", "HEIGHT"], default_values_t = [640, 480])]
    depth_size: Vec<u32>,
}

/// The `--depth-model` report.
#[derive(Serialize)]
struct DepthReport {
    scene: PathBuf,
    camera: String,
    width: u32,
    height: u32,
    frames: u32,
    threads: usize,
    /// Clean depth (no model): frames per second on every thread.
    clean_fps: f64,
    models: Vec<DepthModelTiming>,
}

/// One model's timing.
#[derive(Serialize)]
struct DepthModelTiming {
    model: String,
    fps: f64,
    /// Its frame time over the clean depth's.
    cost_vs_clean: f64,
}

/// The report.
#[derive(Serialize)]
struct Report {
    scene: PathBuf,
    camera: String,
    res: u32,
    worlds: u32,
    shadows: bool,
    frames: u32,
    /// glint on one thread: frames per second (worlds × calls / seconds) and megapixels/s.
    glint_one_thread_fps: f64,
    glint_one_thread_mpix_s: f64,
    /// glint on every thread.
    glint_all_threads_fps: f64,
    glint_all_threads_mpix_s: f64,
    threads: usize,
    /// MuJoCo's classic renderer, Mesa's llvmpipe held to one thread.
    mujoco_fps: f64,
    mujoco_mpix_s: f64,
    mujoco_version: String,
    /// glint one thread / MuJoCo.
    speedup_one_thread: f64,
    /// glint all threads / MuJoCo.
    speedup_all_threads: f64,
    /// MuJoCo Warp's batch renderer on Warp's CPU device (one thread), the same worlds per
    /// call: frames per second, or null with `warp_unavailable` saying why.
    warp_fps: Option<f64>,
    warp_mpix_s: Option<f64>,
    warp_version: Option<String>,
    /// glint one thread / MuJoCo Warp.
    speedup_over_warp_one_thread: Option<f64>,
    /// Why MuJoCo Warp was not measured.
    warp_unavailable: Option<String>,
}

pub fn run(args: RenderBenchArgs) -> Result<()> {
    if let Some(model) = &args.depth_model {
        let report = depth_bench(&args, model)?;
        if args.json {
            println!("{}", serde_json::to_string(&report)?);
        } else {
            println!(
                "{} camera '{}' {}x{}, {} frames, {} threads: clean depth {:.1} fps",
                report.scene.display(),
                report.camera,
                report.width,
                report.height,
                report.frames,
                report.threads,
                report.clean_fps
            );
            for m in &report.models {
                println!("  {:<17} {:>8.1} fps  {:.2}x the clean depth's time", m.model, m.fps, m.cost_vs_clean);
            }
        }
        return Ok(());
    }
    let out = std::env::temp_dir().join(format!("glint-bench-render-{}", std::process::id()));
    std::fs::create_dir_all(&out).map_err(|e| write_error(&out, e))?;
    let result = bench(&args, &out);
    let _ = std::fs::remove_dir_all(&out);
    let report = result?;
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print(&report);
    }
    Ok(())
}

fn bench(args: &RenderBenchArgs, out: &Path) -> Result<Report> {
    let is_manifest = args.scene.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    let options = SimOptions { nworld: args.worlds as usize, ..SimOptions::default() };
    let (mut sim, scene, lit_xml) = if is_manifest {
        let manifest = Manifest::load(&args.scene)?;
        let lit_xml = match manifest.use_scenario_lights {
            true => Some(LitScene::from_xml_file(&manifest.scene, &manifest.lights)?.to_xml()?),
            false => None,
        };
        let scene = manifest.scene.clone();
        (Simulation::from_loaded(manifest, options)?, scene, lit_xml)
    } else {
        (Simulation::from_xml_file(&args.scene, Vec::new(), options)?, args.scene.clone(), None)
    };
    // A lit manifest's scene is written patched beside it for MuJoCo to load, removed after.
    let patched = match lit_xml {
        Some(xml) => {
            let path = scene.with_file_name(format!(".glint-bench-lit-{}.xml", std::process::id()));
            std::fs::write(&path, xml).map_err(|e| write_error(&path, e))?;
            Some(path)
        }
        None => None,
    };
    let mjcf = patched.clone().unwrap_or(scene);
    let result = measure(args, &mut sim, &mjcf, out);
    if let Some(path) = patched {
        let _ = std::fs::remove_file(path);
    }
    result
}

/// The camera `--camera` names, else the scene's first.
fn bench_camera(args: &RenderBenchArgs, sim: &Simulation) -> Result<usize> {
    match &args.camera {
        Some(name) => Ok(sim.camera_index(name)?),
        None if sim.scene().ncam() > 0 => Ok(0),
        None => bail!("'{}' has no camera: add a <camera> to the MJCF or pass --camera", args.scene.display()),
    }
}

fn measure(args: &RenderBenchArgs, sim: &mut Simulation, mjcf: &Path, out: &Path) -> Result<Report> {
    let camera = bench_camera(args, sim)?;
    let name = sim.scene().cam_name[camera].clone();
    if name.is_empty() {
        bail!("camera {camera} has no name, and MuJoCo's renderer is given the camera by name: name it in the MJCF");
    }
    let side = args.res as usize;
    let options = CameraOptions {
        resolution: Some((side, side)),
        use_shadows: args.shadows,
        render_depth: false,
        render_seg: false,
        ..CameraOptions::new(camera)
    };
    sim.set_cameras(vec![options])?;
    let pixels = sim.camera_layout().map_or(0, |l| l.pixels_per_world) * sim.nworld();
    let mut rgb = vec![0u8; pixels * 3];
    let mut time = |sim: &mut Simulation, threads: usize| -> Result<f64> {
        let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().context("a thread pool")?;
        pool.install(|| -> Result<f64> {
            let frames = glint_sim::Frames { rgb: Some(&mut rgb), depth: None, seg: None };
            sim.render_into(frames)?;
            let t0 = Instant::now();
            for _ in 0..args.frames {
                sim.render_into(glint_sim::Frames { rgb: Some(&mut rgb), depth: None, seg: None })?;
            }
            Ok(f64::from(args.frames) * f64::from(args.worlds) / t0.elapsed().as_secs_f64())
        })
    };
    let threads = rayon::current_num_threads();
    let one = time(sim, 1)?;
    let all = time(sim, threads)?;
    let job = ClassicJob {
        mjcf: mjcf.to_path_buf(),
        camera: name.clone(),
        size: (side, side),
        out: out.join("mujoco.rgb"),
        frames: args.frames,
    };
    let reply = classic::render(&classic::python(args.python.clone()), &[job], true)?;
    let seconds = reply.seconds_per_frame.first().copied().flatten().context("MuJoCo's renderer reported no timing")?;
    let mujoco = 1.0 / seconds;
    let warp_job = classic::WarpJob {
        mjcf,
        camera: &name,
        size: (side, side),
        worlds: args.worlds,
        shadows: args.shadows,
        frames: args.frames,
    };
    let (warp, warp_unavailable) = match classic::warp_render(&classic::python(args.python.clone()), &warp_job)? {
        Ok(reply) => (Some((f64::from(args.worlds) / reply.seconds_per_frame, reply.version)), None),
        Err(reason) => (None, Some(format!("{reason}; install mujoco-warp==3.17.0 (make pydeps pins it)"))),
    };
    let mpix = |fps: f64| fps * (side * side) as f64 / 1e6;
    Ok(Report {
        scene: args.scene.clone(),
        camera: name,
        res: args.res,
        worlds: args.worlds,
        shadows: args.shadows,
        frames: args.frames,
        glint_one_thread_fps: one,
        glint_one_thread_mpix_s: mpix(one),
        glint_all_threads_fps: all,
        glint_all_threads_mpix_s: mpix(all),
        threads,
        mujoco_fps: mujoco,
        mujoco_mpix_s: mpix(mujoco),
        mujoco_version: reply.version,
        speedup_one_thread: one / mujoco,
        speedup_all_threads: all / mujoco,
        warp_fps: warp.as_ref().map(|w| w.0),
        warp_mpix_s: warp.as_ref().map(|w| mpix(w.0)),
        speedup_over_warp_one_thread: warp.as_ref().map(|w| one / w.0),
        warp_version: warp.map(|w| w.1),
        warp_unavailable,
    })
}

fn print(r: &Report) {
    println!(
        "scene    {} camera '{}', {}x{}, {} world(s), shadows {}",
        r.scene.display(),
        r.camera,
        r.res,
        r.res,
        r.worlds,
        if r.shadows { "on" } else { "off" }
    );
    println!("{:<48} {:>12} {:>12}", "", "frames/s", "Mpixel/s");
    println!("{:<48} {:>12.1} {:>12.2}", "glint, 1 thread", r.glint_one_thread_fps, r.glint_one_thread_mpix_s);
    println!(
        "{:<48} {:>12.1} {:>12.2}",
        format!("glint, {} threads", r.threads),
        r.glint_all_threads_fps,
        r.glint_all_threads_mpix_s
    );
    println!(
        "{:<48} {:>12.1} {:>12.2}",
        format!("MuJoCo {} classic renderer (OSMesa, 1 thread)", r.mujoco_version),
        r.mujoco_fps,
        r.mujoco_mpix_s
    );
    match (r.warp_fps, r.warp_mpix_s, &r.warp_version) {
        (Some(fps), Some(mpix), Some(version)) => {
            println!("{:<48} {:>12.1} {:>12.2}", "MuJoCo Warp batch renderer (CPU, 1 thread)", fps, mpix);
            println!("  ({version})");
        }
        _ => println!("MuJoCo Warp not measured: {}", r.warp_unavailable.as_deref().unwrap_or("?")),
    }
    println!(
        "speed-up over MuJoCo, 1 thread            {:.2}x   (target >= 10x at 256x256 with shadows)",
        r.speedup_one_thread
    );
    println!("speed-up over MuJoCo, {} threads           {:.2}x", r.threads, r.speedup_all_threads);
    if let Some(x) = r.speedup_over_warp_one_thread {
        println!("speed-up over MuJoCo Warp, 1 thread       {x:.2}x   (target >= 5x at 256x256 with shadows)");
    }
}

/// `--depth-model`: glint's depth with each model asked against its clean depth, timed the
/// same way in one run.
fn depth_bench(args: &RenderBenchArgs, model: &str) -> Result<DepthReport> {
    use glint_camera::{DepthSensor, SensorModel};
    use glint_lidar::Spelled;
    let models: Vec<SensorModel> = match model {
        "all" => SensorModel::all().filter(|m| *m != SensorModel::None).collect(),
        name => vec![SensorModel::from_name(name).map_err(|e| anyhow::anyhow!("--depth-model: {e}, or all"))?],
    };
    let options = SimOptions { nworld: args.worlds as usize, ..SimOptions::default() };
    let mut sim = crate::render::load_scene(&args.scene, options)?;
    let camera = bench_camera(args, &sim)?;
    let (width, height) = (args.depth_size[0], args.depth_size[1]);
    // Seconds for `frames` frames with `sensor`.
    let mut time = |sensor: DepthSensor, frames: u32| -> Result<f64> {
        let options = CameraOptions {
            resolution: Some((width as usize, height as usize)),
            render_rgb: false,
            render_seg: false,
            depth_sensor: sensor,
            ..CameraOptions::new(camera)
        };
        sim.set_cameras(vec![options])?;
        let pixels = sim.camera_layout().map_or(0, |l| l.pixels_per_world) * sim.nworld();
        let mut depth = vec![0f32; pixels];
        sim.render_into(glint_sim::Frames { rgb: None, depth: Some(&mut depth), seg: None })?;
        let t0 = Instant::now();
        for _ in 0..frames {
            sim.render_into(glint_sim::Frames { rgb: None, depth: Some(&mut depth), seg: None })?;
        }
        Ok(t0.elapsed().as_secs_f64())
    };
    // Each model is timed in rounds alternating with the clean depth, so that the machine's
    // drift (clock, neighbours) falls on both sides of its ratio alike.
    const ROUNDS: u32 = 4;
    let per_round = args.frames.div_ceil(ROUNDS);
    let rate = |frames: u32, seconds: f64| f64::from(frames) * f64::from(args.worlds) / seconds;
    let (mut clean_total, mut timings) = (0.0, Vec::new());
    for m in &models {
        let (mut clean, mut model) = (0.0, 0.0);
        for _ in 0..ROUNDS {
            clean += time(DepthSensor::default(), per_round)?;
            model += time(DepthSensor::for_model(*m), per_round)?;
        }
        clean_total += clean;
        let fps = rate(per_round * ROUNDS, model);
        timings.push(DepthModelTiming { model: m.name().into(), fps, cost_vs_clean: model / clean });
    }
    let clean_fps = rate(per_round * ROUNDS * models.len() as u32, clean_total);
    Ok(DepthReport {
        scene: args.scene.clone(),
        camera: sim.scene().cam_name[camera].clone(),
        width,
        height,
        frames: args.frames,
        threads: rayon::current_num_threads(),
        clean_fps,
        models: timings,
    })
}
