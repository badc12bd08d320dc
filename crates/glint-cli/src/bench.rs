//! `glint bench`: glint measured against its reference in one process, as ratios
//! (`glint_sim::bench` measures; this parses the arguments and prints the report).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};
use glam::DVec3;
use glint_interop::{LiveBench, McapBench, bench_live, bench_mcap};
use glint_lidar::ScanPreset;
use glint_sim::bench::{
    self, LidarBench, Pattern, RangefinderBench, RaysBench, RaysReport, RecordBench, ReturnsBench, VariantsBench,
};
use serde::Serialize;

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
    /// Steps worlds on per-world assets (the manifest's `[variants]` and `[randomize]`) and
    /// as many identical worlds (the manifest without them), every lidar firing, alternately
    /// in one process: their throughput ratio, and the geometry's bytes per world and shared.
    Variants(VariantsArgs),
    /// Times `glint run` of a manifest with the recorder on and off, alternately in one
    /// process, and reports the ratio: the cost of recording.
    Record(RecordArgs),
    /// Serves a manifest and measures it in one process: a GetLidarScan round trip with all
    /// four arrays against encoding and decoding the same message, scans per second for one
    /// and eight clients, and the loop's tick rate while served (no client, one client at 100
    /// scans per second, one and eight clients flat out) against the same loop with no server.
    Serve(ServeArgs),
    /// Renders one camera with glint (one thread and all threads) and with MuJoCo's classic
    /// renderer (the `mujoco` Python package, OSMesa held to one thread) in the same run, and
    /// prints frames and megapixels per second and the ratios.
    Render(crate::render_bench::RenderBenchArgs),
    /// Adds an array of MJCF `<rangefinder>` sensors to a scene and computes them with glint's
    /// BVH caster and with MuJoCo's own `mj_sensorPos` in the same process: both times, their
    /// ratio, and glint's values against MuJoCo's `sensordata` on every step of a run.
    Rangefinder(RangefinderArgs),
    /// Records a manifest's scene, then times `glint export --format mcap` of the session
    /// and reports it against the simulated time it holds (how many times real time).
    Mcap(McapArgs),
    /// Runs a manifest's episode loop with `--live`'s view on loopback (no client connected)
    /// and without it, alternately in one process, and reports what the view adds.
    Live(LiveArgs),
}

/// Arguments of `glint bench live`.
#[derive(Args)]
pub struct LiveArgs {
    /// Scene manifest (TOML).
    manifest: PathBuf,
    /// Simulated seconds per run.
    #[arg(long, default_value_t = 10.0, value_parser = bench_seconds)]
    seconds: f64,
    /// Runs of each kind (the median is reported), after one warm-up pair.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `glint bench mcap`.
#[derive(Args)]
pub struct McapArgs {
    /// Scene manifest (TOML).
    manifest: PathBuf,
    /// Simulated seconds recorded.
    #[arg(long, default_value_t = 10.0, value_parser = bench_seconds)]
    seconds: f64,
    /// Exports timed (the median is reported), after one warm-up export.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
    /// Where the session and the exports go (removed afterwards).
    #[arg(long, default_value = "out/bench-mcap")]
    out: PathBuf,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `glint bench rangefinder`.
#[derive(Args)]
pub struct RangefinderArgs {
    /// MJCF scene file.
    scene: PathBuf,
    /// Rangefinders added, looking along directions spread over the sphere.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    count: u32,
    /// Where they sit, X,Y,Z in metres (default: the site named `lidar`, else 0,0,1).
    #[arg(long, value_parser = parse_point, allow_hyphen_values = true)]
    origin: Option<DVec3>,
    /// Physics steps over which the values are compared with MuJoCo's.
    #[arg(long, default_value_t = 1000)]
    steps: u32,
    /// Timed runs per measurement (the median is reported), after one warm-up run.
    #[arg(long, default_value_t = 21, value_parser = clap::value_parser!(u32).range(5..))]
    repeats: u32,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `glint bench serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Scene manifest (TOML); its sensor 0 is scanned.
    manifest: PathBuf,
    /// Scans per client per measurement.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    calls: u32,
    /// Wall-clock seconds of each loop-rate measurement.
    #[arg(long, default_value_t = 3.0, value_parser = bench_seconds)]
    seconds: f64,
    /// Print one JSON object instead of text.
    #[arg(long)]
    json: bool,
}

fn bench_seconds(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 && v <= 3600.0 => Ok(v),
        _ => Err(format!("'{s}' is not a number of seconds in (0, 3600]")),
    }
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

/// Arguments of `glint bench variants`.
#[derive(Args)]
pub struct VariantsArgs {
    /// Scene manifest (TOML) with a `[variants]` table and lidars.
    manifest: PathBuf,
    /// Worlds of each kind.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    worlds: u32,
    /// Steps per timed run.
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(1..))]
    steps: u32,
    /// Timed runs per measurement (the median is reported).
    #[arg(long, default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..))]
    repeats: u32,
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
    /// Rounds, each timing every measurement once after a warm-up revolution (medians over
    /// rounds are reported, each ratio taken within a round).
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
    preset: ScanPreset,
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
    #[arg(long, value_parser = parse_point, allow_hyphen_values = true)]
    origin: Option<DVec3>,
    /// Number of worlds (each casts the whole pattern).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
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

/// Prints `report` as one JSON object, or else as text with `text`.
fn print<R: Serialize>(report: &R, json: bool, text: impl FnOnce(&R)) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string(report)?);
    } else {
        text(report);
    }
    Ok(())
}

pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Rays(a) => {
            let options = RaysBench {
                scene: a.scene,
                pattern: a.pattern,
                origin: a.origin,
                worlds: a.worlds,
                threads: a.threads,
                repeats: a.repeats,
            };
            print(&bench::rays(&options)?, a.json, print_table)
        }
        BenchCommand::Lidar(a) => {
            let options = LidarBench { scene: a.scene, preset: a.preset, worlds: a.worlds, repeats: a.repeats };
            print(&bench::lidar(&options)?, a.json, |r| {
                println!(
                    "scene    {} ({} world(s)), preset {}: {} beams, {} hits",
                    r.scene, r.worlds, r.preset, r.beams, r.hits
                );
                println!("one revolution through the sensor API  {:.3} ms", r.sensor_s * 1e3);
                println!("the same rays through the ray core     {:.3} ms", r.core_s * 1e3);
                println!("sensor / core                          {:.2}x", r.sensor_over_core);
            })
        }
        BenchCommand::Variants(a) => {
            let options = VariantsBench { manifest: a.manifest, worlds: a.worlds, steps: a.steps, repeats: a.repeats };
            print(&bench::variants(&options)?, a.json, |r| {
                println!(
                    "{}: {} worlds over {} variants ({} distinct geometries)",
                    r.manifest, r.worlds, r.variants, r.geometries
                );
                println!(
                    "meshes, each once for all worlds      {} ({:.1} MB with BVHs and shared geometry)",
                    r.meshes,
                    r.shared_bytes as f64 / 1e6
                );
                println!("geometry per world, randomized        {:.0} bytes", r.bytes_per_world);
                println!("geometry per world, identical         {:.0} bytes", r.bytes_per_identical_world);
                println!("world steps + scans per second, randomized  {:.0}", r.randomized_steps_per_s);
                println!("world steps + scans per second, identical   {:.0}", r.identical_steps_per_s);
                println!("randomized / identical                {:.3}x (target >= 0.9)", r.ratio);
            })
        }
        BenchCommand::Returns(a) => {
            let options = ReturnsBench { manifest: a.manifest, threads: a.threads, repeats: a.repeats };
            print(&bench::returns(&options)?, a.json, |r| {
                println!("{}: {} beams on {} thread(s)", r.manifest, r.beams, r.threads);
                println!("without secondary capture:");
                println!("  clean scan                        {:.3} ms, {} hits", r.clean_s * 1e3, r.clean_hits);
                println!(
                    "  material scan, two echoes         {:.3} ms, {} echoes, {} second echoes",
                    r.material_s * 1e3,
                    r.material_echoes,
                    r.secondary_echoes
                );
                println!("  material / clean                  {:.2}x", r.material_over_clean);
                println!(
                    "  physical model, two echoes        {:.3} ms, {:.2}x the seed's (target <= 1.5)",
                    r.physical_s * 1e3,
                    r.physical_over_seed
                );
                println!(
                    "  physical, {} footprint sub-rays    {:.3} ms, {:.2}x the seed's (target <= 4)",
                    bench::BENCH_FOOTPRINT_RAYS,
                    r.footprints_s * 1e3,
                    r.footprints_over_seed
                );
                println!("with the binding's capture ({}, {}) in both:", r.capture, r.scope);
                println!("  clean scan                        {:.3} ms", r.clean_captured_s * 1e3);
                println!("  material scan, two echoes         {:.3} ms", r.material_captured_s * 1e3);
                println!("  material / clean                  {:.2}x", r.material_over_clean_captured);
            })
        }
        BenchCommand::Record(a) => {
            let options = RecordBench { manifest: a.manifest, seconds: a.seconds, repeats: a.repeats, out: a.out };
            print(&bench::record(&options)?, a.json, |r| {
                println!("{}: {} simulated s, {} rows recorded", r.manifest, r.seconds, r.rows);
                println!("glint run, recorder on     {:.3} s", r.recording_s);
                println!("glint run, recorder off    {:.3} s", r.not_recording_s);
                println!("on / off                   {:.2}x", r.on_over_off);
            })
        }
        BenchCommand::Render(a) => crate::render_bench::run(a),
        BenchCommand::Live(a) => {
            let options = LiveBench { manifest: a.manifest, seconds: a.seconds, repeats: a.repeats };
            print(&bench_live(&options)?, a.json, |r| {
                println!("{}: {} simulated s, every lidar firing", r.manifest, r.seconds);
                println!("episode loop with the live view, no client   {:.3} s", r.live_s);
                println!("episode loop without it                      {:.3} s", r.plain_s);
                println!("what the view adds                           {:+.1} % (target <= 10 %)", r.overhead * 100.0);
            })
        }
        BenchCommand::Mcap(a) => {
            let options = McapBench { manifest: a.manifest, seconds: a.seconds, repeats: a.repeats, out: a.out };
            print(&bench_mcap(&options)?, a.json, |r| {
                println!("{}: {} simulated s recorded", r.manifest, r.seconds);
                println!("MCAP: {} messages, {} points, {:.1} MB", r.messages, r.points, r.bytes as f64 / 1e6);
                println!("glint export --format mcap   {:.3} s", r.export_s);
                println!("against real time            {:.1}x (target >= 5)", r.real_time_factor);
            })
        }
        BenchCommand::Rangefinder(a) => {
            let options = RangefinderBench {
                scene: a.scene,
                count: a.count as usize,
                origin: a.origin,
                steps: a.steps,
                repeats: a.repeats,
            };
            print(&bench::rangefinder(&options)?, a.json, |r| {
                println!(
                    "{}: {} rangefinders at ({:.3}, {:.3}, {:.3})",
                    r.scene, r.rangefinders, r.origin[0], r.origin[1], r.origin[2]
                );
                println!("glint, BVH caster, 1 thread          {:.3} ms", r.glint_s * 1e3);
                println!("MuJoCo mj_sensorPos, 1 thread        {:.3} ms", r.mujoco_s * 1e3);
                println!("speed-up over MuJoCo                 {:.2}x", r.speedup);
                println!(
                    "agreement with MuJoCo's sensordata over {} steps: {} of {} values differ by more than 1e-12 \
                     (largest difference {:.1e}; {} hits)",
                    r.steps_compared, r.mismatches, r.values_compared, r.max_abs_diff, r.hits
                );
            })
        }
        BenchCommand::Serve(a) => {
            let manifest = crate::manifest_with_lidars(&a.manifest)?;
            let options = glint_server::bench::ServeBench { manifest, calls: a.calls, seconds: a.seconds };
            print(&glint_server::bench::serve_bench(&options)?, a.json, |r| {
                println!(
                    "{}: sensor 0, {} beams, {} bytes per scan with all four arrays",
                    r.manifest, r.beams, r.message_bytes
                );
                println!("GetLidarScan round trip                   {:.3} ms", r.round_trip_s * 1e3);
                println!("encode + decode in-process (prost)        {:.3} ms", r.codec_s * 1e3);
                println!("encode + decode in-process (glint)        {:.3} ms", r.glint_codec_s * 1e3);
                println!(
                    "round trip / codec                        {:.2}x (target at most 3x)",
                    r.round_trip_over_codec
                );
                println!("scans per second, one client              {:.0}", r.scans_per_s_one_client);
                println!("scans per second, eight clients           {:.0}", r.scans_per_s_eight_clients);
                println!("loop ticks/s, no server                   {:.1}", r.ticks_per_s_alone);
                println!("loop ticks/s, served, no client           {:.1}", r.ticks_per_s_serving_idle);
                println!("loop ticks/s, one client at 100 scans/s   {:.1}", r.ticks_per_s_serving);
                println!("loop ticks/s, one client flat out         {:.1}", r.ticks_per_s_one_client_flat_out);
                println!("loop ticks/s, eight clients flat out      {:.1}", r.ticks_per_s_eight_clients);
                println!("(ratios: medians of {} slices, each against the loop alone in a slice beside it)", r.slices);
                println!("served, no client / no server             {:.2}x (target at least 0.95x)", r.idle_over_alone);
                println!(
                    "served at 100 scans/s / no server         {:.2}x (target at least 0.85x)",
                    r.serving_over_alone
                );
                println!("one client flat out / no server           {:.2}x", r.one_client_flat_out_over_alone);
                println!("eight clients flat out / no server        {:.2}x", r.eight_clients_over_alone);
                println!("snapshots published per served tick       {:.3}", r.publishes_per_tick);
            })
        }
    }
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
        "agreement with MuJoCo's mj_ray: {} hit/miss and {} geom mismatches, max |distance difference| {:.3e} m, \
         max |normal difference| {:.3e}",
        r.hit_mismatch, r.geom_mismatch, r.max_abs_diff_m, r.max_normal_diff
    );
    for (cause, rays) in &r.disagreements {
        println!("  {rays} rays disagree: {cause}");
    }
    if r.multiray_culled > 0 {
        println!(
            "  ({} rays where mj_multiRay's bounding-angle culling differs from mj_ray; glint matches mj_ray)",
            r.multiray_culled
        );
    }
}
