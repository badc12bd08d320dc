//! `glint bench`: glint measured against MuJoCo in one process, as ratios.

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use glam::DVec3;
use glint_core::{HitsMut, Mesh, RayBatch, RayCaster, RayFilter};
use glint_mujoco::{Model, MujocoRays, WorldBatch};
use serde::Serialize;

use crate::patterns::Pattern;

/// The benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Casts one sensor's rays with glint and with MuJoCo's `mj_multiRay` in the same process
    /// and prints both rates, their ratio and their agreement.
    Rays(RaysArgs),
    /// Times a full revolution of a lidar preset through the sensor API (slicing, frames,
    /// range cuts, the live scan) against the same rays through the bare ray core.
    Lidar(LidarArgs),
    /// Times a full revolution of a manifest's first lidar with the return model (material
    /// scan, two echoes) against the clean scan of the same revolution, without secondary
    /// capture and with the binding's own capture in both.
    Returns(ReturnsArgs),
    /// Times `glint run` of a manifest with the recorder on and off, alternately in one
    /// process, and reports the ratio: the cost of recording.
    Record(RecordArgs),
}

/// Arguments of `glint bench record`.
#[derive(Args)]
pub struct RecordArgs {
    /// Scene manifest (TOML).
    manifest: PathBuf,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 10.0)]
    seconds: f64,
    /// Runs of each kind (the median is reported), after one warm-up pair.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
    /// Where the recorded sessions go (removed afterwards).
    #[arg(long, default_value = "out/bench-record")]
    out: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `glint bench returns`.
#[derive(Args)]
pub struct ReturnsArgs {
    /// Scene manifest (TOML): its scene, first lidar (and its secondary capture), materials
    /// and return model.
    manifest: PathBuf,
    /// Threads (default 1, so the ratio is not a measure of parallel scaling).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    threads: u32,
    /// Timed runs per measurement (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(5..))]
    repeats: u32,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `glint bench lidar`.
#[derive(Args)]
pub struct LidarArgs {
    /// MJCF scene file with a site named `lidar`.
    scene: PathBuf,
    /// Scan preset: unitree-l1, livox-mid360, velodyne-vlp16 or ouster-os1-64.
    #[arg(long, default_value = "ouster-os1-64")]
    preset: String,
    /// Number of worlds.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    worlds: u32,
    /// Timed runs per measurement (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(5..))]
    repeats: u32,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `glint bench rays`.
#[derive(Args)]
pub struct RaysArgs {
    /// MJCF scene file.
    scene: PathBuf,
    /// Ray layout: vlp16, os1-64, mid360, or a number of rays spread over the sphere.
    /// Spinning layouts are cast in 4 × 4 tiles of bins × channels, as glint's sensors
    /// cast them; MuJoCo gets the same rays in the same order.
    #[arg(long, default_value = "os1-64")]
    pattern: Pattern,
    /// Sensor origin X,Y,Z in metres (default: the site named `lidar`, else 0,0,1).
    #[arg(long, value_parser = parse_point)]
    origin: Option<DVec3>,
    /// Number of worlds (each casts the whole pattern).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    worlds: u32,
    /// Threads for glint's parallel run (default: all cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    threads: Option<u32>,
    /// Timed runs per measurement (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 7, value_parser = clap::value_parser!(u32).range(5..))]
    repeats: u32,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    json: bool,
}

fn parse_point(s: &str) -> Result<DVec3, String> {
    let parts: Vec<&str> = s.split(',').collect();
    let bad = || format!("'{s}' is not a point: write X,Y,Z in metres, e.g. 0,0,1.5");
    if parts.len() != 3 {
        return Err(bad());
    }
    let v: Vec<f64> = parts.iter().map(|p| p.trim().parse::<f64>()).collect::<Result<_, _>>().map_err(|_| bad())?;
    let p = DVec3::new(v[0], v[1], v[2]);
    if !p.is_finite() {
        return Err(format!("'{s}' is not a finite point"));
    }
    Ok(p)
}

/// What `glint bench rays --json` prints.
#[derive(Serialize)]
struct RaysReport {
    scene: String,
    pattern: String,
    ngeom: usize,
    ntriangle: usize,
    worlds: usize,
    threads: usize,
    origin: [f64; 3],
    rays: usize,
    glint_rays_per_s: f64,
    glint_rays_per_s_1thread: f64,
    mujoco_rays_per_s: f64,
    speedup_1thread: f64,
    thread_scaling: f64,
    /// Building every mesh's BVH (done once per model), seconds.
    blas_build_s: f64,
    /// Building the top-level BVH of every world, seconds.
    bvh_build_s: f64,
    /// Refitting one world's top-level BVH, seconds.
    refit_s: f64,
    refit_fraction_of_scan: f64,
    /// Rays that hit in glint and miss in MuJoCo's `mj_ray`, or the reverse.
    hit_mismatch: usize,
    /// Largest distance difference with MuJoCo over rays both hit, metres.
    max_abs_diff_m: f64,
    /// Rays where `mj_multiRay` differs from `mj_ray` (its bounding-angle culling) and glint
    /// agrees with `mj_ray`.
    multiray_culled: usize,
    hits: usize,
}

/// Median wall time of `repeats` runs of `f` after one warm-up run.
fn median_time(repeats: u32, mut f: impl FnMut()) -> f64 {
    f();
    let mut times: Vec<f64> = (0..repeats)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .collect();
    times.sort_by(f64::total_cmp);
    times[times.len() / 2]
}

fn pool(threads: usize) -> Result<rayon::ThreadPool> {
    rayon::ThreadPoolBuilder::new().num_threads(threads).build().context("cannot start the thread pool")
}

pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Rays(args) => rays(args),
        BenchCommand::Lidar(args) => lidar(args),
        BenchCommand::Returns(args) => returns(args),
        BenchCommand::Record(args) => record(args),
    }
}

fn rays(args: RaysArgs) -> Result<()> {
    let model = Model::from_xml_file(&args.scene)?;
    let scene = model.scene().clone();
    let nworld = args.worlds as usize;
    let mut batch = WorldBatch::new(&model, nworld)?;
    let origin = match args.origin {
        Some(p) => p,
        None => scene.site_id("lidar").map_or(DVec3::new(0.0, 0.0, 1.0), |s| batch.poses().site(0, s).0),
    };
    let dirs = args.pattern.cast_order();
    if dirs.is_empty() {
        bail!("the pattern has no rays");
    }
    let nray = dirs.len();
    let threads = args.threads.map_or_else(rayon::current_num_threads, |t| t as usize);
    let filter = RayFilter::default();

    // Every timed phase runs in a pool made for it and dropped after it: idle rayon workers
    // spin for a while, and on a small machine a spinning pool would steal the cores the next
    // phase is timing.
    let phase = |n: usize| pool(n);
    let (caster, blas_build_s, bvh_build_s, refit_s) = phase(1)?.install(|| {
        // Bottom level: rebuild every mesh's BVH as model loading does (height fields are small).
        let blas_build_s = median_time(args.repeats, || {
            for m in &scene.mesh {
                std::hint::black_box(Mesh::new(m.name.clone(), m.vert.clone(), m.face.clone(), Vec::new()).ok());
            }
        });
        let mut caster = RayCaster::new(&scene, batch.poses());
        let bvh_build_s = median_time(args.repeats, || caster = RayCaster::new(&scene, batch.poses()));
        let refit_s = median_time(args.repeats.max(50), || caster.refit_world(batch.poses(), 0));
        (caster, blas_build_s, bvh_build_s, refit_s)
    });

    let pnt = [origin];
    let rays = RayBatch { nray, pnt: &pnt, vec: &dirs, bodyexclude: &[-1] };
    let total = nworld * nray;
    let (mut dist, mut geomid, mut normal) = (vec![0.0; total], vec![0i32; total], vec![DVec3::ZERO; total]);
    let mut cast = || {
        let out = HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal };
        caster.rays_into(&scene, batch.poses(), &rays, &filter, out)
    };
    // Each timed run repeats the scan until it lasts about 20 ms, so waking the workers of a
    // fresh pool is not part of the figure.
    let t_once = {
        let t = Instant::now();
        phase(1)?.install(&mut cast)?;
        t.elapsed().as_secs_f64()
    };
    let reps = ((0.02 / t_once).ceil() as usize).clamp(1, 1000);
    let mut timed = |n: usize| -> Result<f64> {
        let p = phase(n)?;
        let t = p.install(|| {
            median_time(args.repeats, || {
                for _ in 0..reps {
                    cast().expect("validated above");
                }
            })
        });
        drop(p);
        std::thread::sleep(std::time::Duration::from_millis(20));
        Ok(t / reps as f64)
    };
    let t1 = timed(1)?;
    let tn = timed(threads)?;
    let (dist, geomid) = {
        phase(1)?.install(&mut cast)?;
        (dist, geomid)
    };

    let dirs_arr: Vec<[f64; 3]> = dirs.iter().map(|d| d.to_array()).collect();
    let (mut mdist, mut mgeom, mut mnormal) = (vec![0.0; nray], vec![0i32; nray], vec![[0.0; 3]; nray]);
    let mujoco_all = |batch: &mut WorldBatch, mdist: &mut [f64], mgeom: &mut [i32], mnormal: &mut [[f64; 3]]| {
        for w in 0..nworld {
            batch.mj_multi_ray(w, origin, &dirs_arr, &filter, -1, 1e10, mdist, mgeom, mnormal);
        }
    };
    let tm = median_time(args.repeats, || mujoco_all(&mut batch, &mut mdist, &mut mgeom, &mut mnormal));

    // Agreement: compare with mj_multiRay ray by ray; where they differ, ask mj_ray (the
    // exact reference), since mj_multiRay's bounding-angle culling can drop geoms.
    let (mut hit_mismatch, mut max_abs_diff_m, mut hits, mut multiray_culled) = (0usize, 0.0f64, 0usize, 0usize);
    for w in 0..nworld {
        batch.mj_multi_ray(w, origin, &dirs_arr, &filter, -1, 1e10, &mut mdist, &mut mgeom, &mut mnormal);
        for i in 0..nray {
            let (g, d) = (geomid[w * nray + i], dist[w * nray + i]);
            hits += usize::from(g >= 0);
            let (mut mg, mut md) = (mgeom[i], mdist[i]);
            if mg != g {
                let exact = batch.mj_ray(w, origin, dirs[i], &filter, -1);
                multiray_culled += usize::from(exact.geomid == g);
                (mg, md) = (exact.geomid, exact.dist);
            }
            if (g >= 0) != (mg >= 0) {
                hit_mismatch += 1;
            } else if g >= 0 {
                max_abs_diff_m = max_abs_diff_m.max((d - md).abs());
            }
        }
    }

    let report = RaysReport {
        scene: args.scene.display().to_string(),
        pattern: args.pattern.to_string(),
        ngeom: scene.ngeom(),
        ntriangle: scene
            .geom_dataid
            .iter()
            .zip(&scene.geom_type)
            .filter(|(_, t)| **t == glint_core::GeomType::Mesh)
            .map(|(&d, _)| scene.mesh[d as usize].nface())
            .sum(),
        worlds: nworld,
        threads,
        origin: origin.to_array(),
        rays: total,
        glint_rays_per_s: total as f64 / tn,
        glint_rays_per_s_1thread: total as f64 / t1,
        mujoco_rays_per_s: total as f64 / tm,
        speedup_1thread: tm / t1,
        thread_scaling: t1 / tn,
        blas_build_s,
        bvh_build_s,
        refit_s,
        refit_fraction_of_scan: refit_s / (t1 / nworld as f64),
        hit_mismatch,
        max_abs_diff_m,
        multiray_culled,
        hits,
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        print_table(&report);
    }
    Ok(())
}

fn print_table(r: &RaysReport) {
    println!(
        "scene    {} ({} geoms, {} mesh triangles in geoms), {} world(s)",
        r.scene, r.ngeom, r.ntriangle, r.worlds
    );
    println!(
        "pattern  {}: {} rays from ({:.3}, {:.3}, {:.3}), {} hits",
        r.pattern, r.rays, r.origin[0], r.origin[1], r.origin[2], r.hits
    );
    println!("{:<34} {:>14}", "", "rays/s");
    println!("{:<34} {:>14.0}", "glint, 1 thread", r.glint_rays_per_s_1thread);
    println!("{:<34} {:>14.0}", format!("glint, {} threads", r.threads), r.glint_rays_per_s);
    println!("{:<34} {:>14.0}", "MuJoCo mj_multiRay, 1 thread", r.mujoco_rays_per_s);
    println!("speed-up over MuJoCo (1 thread each)  {:.2}x", r.speedup_1thread);
    println!("thread scaling ({} threads / 1)        {:.2}x", r.threads, r.thread_scaling);
    println!(
        "BVH build: meshes {:.1} ms (once per model), top level {:.3} ms; refit of one world {:.4} ms ({:.2}% of one scan)",
        r.blas_build_s * 1e3,
        r.bvh_build_s * 1e3,
        r.refit_s * 1e3,
        100.0 * r.refit_fraction_of_scan
    );
    println!(
        "agreement with MuJoCo's mj_ray: {} hit/miss mismatches, max |distance difference| {:.3e} m",
        r.hit_mismatch, r.max_abs_diff_m
    );
    if r.multiray_culled > 0 {
        println!(
            "  ({} rays where mj_multiRay's bounding-angle culling differs from mj_ray; glint matches mj_ray)",
            r.multiray_culled
        );
    }
}

/// What `glint bench lidar --json` prints.
#[derive(Serialize)]
struct LidarReport {
    scene: String,
    preset: String,
    worlds: usize,
    beams: usize,
    sensor_s: f64,
    core_s: f64,
    sensor_over_core: f64,
    hits: usize,
}

fn lidar(args: LidarArgs) -> Result<()> {
    use glint_lidar::{LidarBinding, Lidars, ScanConfig, ScanPreset, beam_direction};
    let model = Model::from_xml_file(&args.scene)?;
    let scene = model.scene().clone();
    let nworld = args.worlds as usize;
    let batch = WorldBatch::new(&model, nworld)?;
    let preset = ScanPreset::from_name(&args.preset)?;
    // A frozen pattern casts the whole revolution in one tick.
    let config = ScanConfig { rotation_hz: 0.0, ..ScanConfig::from_preset(preset) };
    let site = scene.site_id("lidar").context("the scene has no site named 'lidar' to attach the sensor to")?;
    let binding =
        LidarBinding { attach_site: Some(scene.site_name[site].clone()), scan: config, ..LidarBinding::default() };
    let (mut lidars, _) = Lidars::new(&scene, vec![binding], nworld)?;
    let caster = RayCaster::new(&scene, batch.poses());
    let times = vec![0.0; nworld];
    let one = pool(1)?;
    let sensor_s = one.install(|| {
        median_time(args.repeats, || {
            lidars.tick(&scene, batch.poses(), &caster, 0.01, &times, true).expect("validated at binding");
        })
    });
    // The same rays, in the same (tiled) order, through the bare core.
    let beams = config.beam_count();
    let (origin, rot) = batch.poses().site(0, site);
    let dirs: Vec<DVec3> = (0..beams).map(|k| rot * beam_direction(&config, 0, k)).collect();
    let order = crate::patterns::Pattern::Os1_64.cast_order_of(&dirs, config.channels as usize);
    // The same filter and self-ignore exclusion as the sensor's beams.
    let (filter, exclude) = lidars.ray_filter(0, &scene)?;
    let pnt = [origin];
    let rays = RayBatch { nray: beams, pnt: &pnt, vec: &order, bodyexclude: &[exclude] };
    let n = nworld * beams;
    let (mut dist, mut geomid, mut normal) = (vec![0.0; n], vec![0i32; n], vec![DVec3::ZERO; n]);
    let core_s = one.install(|| {
        median_time(args.repeats, || {
            let out = HitsMut { dist: &mut dist, geomid: &mut geomid, normal: &mut normal };
            caster.rays_into(&scene, batch.poses(), &rays, &filter, out).expect("valid");
        })
    });
    let report = LidarReport {
        scene: args.scene.display().to_string(),
        preset: preset.name().into(),
        worlds: nworld,
        beams,
        sensor_s,
        core_s,
        sensor_over_core: sensor_s / core_s,
        hits: lidars.scan(0, 0)?.hits(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!(
            "scene    {} ({} world(s)), preset {}: {} beams, {} hits",
            report.scene, nworld, report.preset, beams, report.hits
        );
        println!("one revolution through the sensor API  {:.3} ms", sensor_s * 1e3);
        println!("the same rays through the ray core     {:.3} ms", core_s * 1e3);
        println!("sensor / core                          {:.2}x", report.sensor_over_core);
    }
    Ok(())
}

/// What `glint bench returns --json` prints.
#[derive(Serialize)]
struct ReturnsReport {
    manifest: String,
    beams: usize,
    threads: u32,
    clean_s: f64,
    material_s: f64,
    material_over_clean: f64,
    capture: String,
    clean_captured_s: f64,
    material_captured_s: f64,
    material_over_clean_captured: f64,
    clean_hits: usize,
    material_echoes: usize,
    secondary_echoes: usize,
}

fn returns(args: ReturnsArgs) -> Result<()> {
    use glint_lidar::{Bake, Lidars, ReturnParams, ScanConfig, SecondaryCapture};
    use std::sync::Arc;
    let manifest = glint_manifest::Manifest::load(&args.manifest)?;
    let binding = manifest.lidar.first().cloned().context("the manifest binds no lidar")?;
    let model = Model::from_xml_file(&manifest.scene)?;
    let scene = model.scene().clone();
    let batch = WorldBatch::new(&model, 1)?;
    let caster = RayCaster::new(&scene, batch.poses());
    let table = manifest.material_table(&scene)?;
    let bake = Arc::new(Bake::build(&scene, batch.poses(), &table, manifest.bake.settings)?);
    let frozen = ScanConfig { rotation_hz: 0.0, ..binding.scan };
    let (capture, scope) = (binding.secondary_capture, binding.secondary_scope);
    let binding = glint_lidar::LidarBinding { scan: frozen, ..binding };
    let (mut lidars, _) = Lidars::new(&scene, vec![binding], 1)?;
    lidars.set_return_params(ReturnParams { max_returns: 2, ..manifest.return_params })?;
    lidars.set_seed(manifest.seed);
    let pool = pool(args.threads as usize)?;
    // One timed revolution with the capture and the material source given.
    let mut time = |capture: SecondaryCapture, materials: bool| -> Result<f64> {
        lidars.set_secondary_capture(0, capture, scope)?;
        lidars.set_materials(materials.then(|| bake.clone() as Arc<dyn glint_lidar::MaterialLookup>));
        Ok(pool.install(|| {
            median_time(args.repeats, || {
                lidars.tick(&scene, batch.poses(), &caster, 0.01, &[0.0], true).expect("validated at binding");
            })
        }))
    };
    let clean_s = time(SecondaryCapture::Off, false)?;
    let material_s = time(SecondaryCapture::Off, true)?;
    let clean_captured_s = time(capture, false)?;
    let material_captured_s = time(capture, true)?;
    let (clean, r) = (lidars.scan(0, 0)?, lidars.returns(0, 0)?);
    let report = ReturnsReport {
        manifest: args.manifest.display().to_string(),
        beams: r.range.len(),
        threads: args.threads,
        clean_s,
        material_s,
        material_over_clean: material_s / clean_s,
        capture: format!("{capture:?}"),
        clean_captured_s,
        material_captured_s,
        material_over_clean_captured: material_captured_s / clean_captured_s,
        clean_hits: clean.hits(),
        material_echoes: r.range.iter().filter(|&&x| x >= 0.0).count(),
        secondary_echoes: r.secondary_range.iter().filter(|&&x| x >= 0.0).count(),
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
        return Ok(());
    }
    println!("{}: {} beams on {} thread(s)", report.manifest, report.beams, report.threads);
    println!("without secondary capture:");
    println!("  clean scan                        {:.3} ms, {} hits", clean_s * 1e3, report.clean_hits);
    println!(
        "  material scan, two echoes         {:.3} ms, {} echoes, {} second echoes",
        material_s * 1e3,
        report.material_echoes,
        report.secondary_echoes
    );
    println!("  material / clean                  {:.2}x", report.material_over_clean);
    println!("with the binding's capture ({capture:?}, {scope:?}) in both:");
    println!("  clean scan                        {:.3} ms", clean_captured_s * 1e3);
    println!("  material scan, two echoes         {:.3} ms", material_captured_s * 1e3);
    println!("  material / clean                  {:.2}x", report.material_over_clean_captured);
    Ok(())
}

/// What `glint bench record --json` prints.
#[derive(Serialize)]
struct RecordReport {
    manifest: String,
    seconds: f64,
    rows: u64,
    recording_s: f64,
    not_recording_s: f64,
    on_over_off: f64,
}

fn record(args: RecordArgs) -> Result<()> {
    let run = |no_record: bool| -> Result<crate::run::Outcome> {
        let run_args = crate::run::RunArgs::for_bench(&args.manifest, args.seconds, &args.out, no_record);
        crate::run::execute(&run_args, true)
    };
    let (mut on, mut off, mut rows) = (Vec::new(), Vec::new(), 0);
    // Warm-up pair, then alternate so drift on a shared machine hits both alike.
    run(true)?;
    run(false)?;
    for _ in 0..args.repeats {
        off.push(run(true)?.wall_s);
        let recorded = run(false)?;
        rows = recorded.rows;
        on.push(recorded.wall_s);
    }
    std::fs::remove_dir_all(&args.out).ok();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (recording_s, not_recording_s) = (median(&mut on), median(&mut off));
    let report = RecordReport {
        manifest: args.manifest.display().to_string(),
        seconds: args.seconds,
        rows,
        recording_s,
        not_recording_s,
        on_over_off: recording_s / not_recording_s,
    };
    if args.json {
        println!("{}", serde_json::to_string(&report)?);
    } else {
        println!("{}: {} simulated s, {} rows recorded", report.manifest, args.seconds, rows);
        println!("glint run, recorder on     {:.3} s", recording_s);
        println!("glint run, recorder off    {:.3} s", not_recording_s);
        println!("on / off                   {:.2}x", report.on_over_off);
    }
    Ok(())
}
