//! `glint scan`: steps a manifest's scene, scans with one of its lidars, and writes a PLY
//! point cloud, a range image (spinning units) and a top-down view of the returns.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use glint_lidar::{ColourBy, Ramp, Scan, ScanPattern, ScanPreset};
use glint_record::{MaterialRead, Point, range_image_png, top_down_png};
use glint_sim::{SimOptions, Simulation, WorldStatus};

use crate::print_warnings;

/// Arguments of `glint scan`.
#[derive(Args)]
pub struct ScanArgs {
    /// Scene manifest (TOML) with at least one `[[lidar]]` binding.
    manifest: PathBuf,
    /// Which lidar (0-based, in binding order).
    #[arg(long, default_value_t = 0)]
    sensor: usize,
    /// Apply a scan preset first: unitree-l1, livox-mid360, velodyne-vlp16, ouster-os1-64.
    #[arg(long)]
    preset: Option<ScanPreset>,
    /// Lidar ticks to run (each `1 / lidar_runner_hz` of the manifest's `[recorder]`, 10 ms
    /// by default); default: one revolution (one cycle for Livox).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    ticks: Option<u32>,
    /// Output folder (created if missing).
    #[arg(long, default_value = "out/scan")]
    out: PathBuf,
    /// Colour of the top-down view: channel, range, height, azimuth, sample-order, solid,
    /// incidence.
    #[arg(long, default_value = "range")]
    colour_by: ColourBy,
    /// Colour ramp: warm-green-blue, grayscale, heat, warm-red-yellow.
    #[arg(long, default_value = "warm-red-yellow")]
    ramp: Ramp,
    /// Apply the return model with the manifest's saved material bake (`glint bake` first)
    /// and its `[return_model]`: the top-down view draws the model's echoes (a mirror's
    /// phantoms included) and the material colour modes show real values; the PLY gains
    /// intensity, calibrated reflectivity and second-echo range.
    #[arg(long)]
    material: bool,
    /// Side of the top-down image, pixels.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(64..=8192))]
    size: u32,
}

pub fn run(args: ScanArgs) -> Result<()> {
    let mut sim = Simulation::from_loaded(crate::manifest_with_lidars(&args.manifest)?, SimOptions::default())?;
    let s = args.sensor;
    let mut config = sim.lidar(s)?.config();
    if let Some(preset) = args.preset {
        preset.apply(&mut config);
        sim.lidar_mut(s)?.set_config(config)?;
    }
    if args.material {
        sim.load_bake(None).context("--material needs the manifest's saved material bake")?;
    } else if args.colour_by.needs_material() {
        eprintln!(
            "warning: colour mode '{}' reads the return model and a bake: pass --material (drawing solid green)",
            args.colour_by
        );
    }
    print_warnings(&mut sim);
    sim.set_lidar_live(true);
    let dt = sim.runner().dt;
    let ticks = args.ticks.unwrap_or_else(|| {
        if config.rotation_hz > 0.0 { (1.0 / (config.rotation_hz * dt) - 1e-9).ceil() as u32 } else { 1 }
    });
    // The robot holds still: the scan is of the scene as it stands, whatever the controller.
    let still = vec![0.0; sim.model().nu()];
    let (mut cast_s, mut unstable) = (0.0, false);
    for _ in 0..ticks {
        let report = sim.step(Some(&still))?;
        cast_s += report.lidar_seconds;
        unstable |= report.status[0] == WorldStatus::Unstable;
    }
    if unstable {
        eprintln!("warning: MuJoCo found the simulation unstable and reset it during the scan");
    }

    let lidar = sim.lidar(s)?;
    let binding = lidar.binding().clone();
    let scan = lidar.scan(0)?;
    let points = points(&sim, s, args.colour_by)?;
    let channels = config.channels;
    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create output folder '{}'", args.out.display()))?;
    let stem = if binding.name.is_empty() { format!("lidar{s}") } else { binding.name.clone() };
    let ply = args.out.join(format!("{stem}.ply"));
    write_ply(&ply, scan, channels, &args.manifest, &stem)?;
    let top = args.out.join(format!("{stem}-top.png"));
    top_down_png(&points, args.colour_by, args.ramp, args.size, &top)?;
    let mut written = vec![ply, top];
    if matches!(config.pattern, ScanPattern::Spinning) {
        let image = args.out.join(format!("{stem}-range.png"));
        range_image_png(&scan.range, channels, config.azimuth_bins, config.max_range as f32, args.ramp, &image)?;
        written.push(image);
    }

    let beams = scan.len();
    if let Some(returns) = &scan.returns {
        let echoes = returns.range.iter().filter(|&&r| r >= 0.0).count();
        let second = returns.secondary_range.iter().filter(|&&r| r >= 0.0).count();
        println!(
            "return model ({}): {echoes} echoes ({:.1}% of beams), {second} second echoes",
            sim.bake_name(),
            100.0 * echoes as f64 / beams as f64
        );
    }
    let revolutions = if config.rotation_hz > 0.0 {
        (ticks as f64 * config.rotation_hz * dt).min(ticks as f64)
    } else {
        ticks as f64
    };
    let hits = scan.hits();
    println!("sensor {s} ('{stem}'): {beams} beams, {hits} hits ({:.1}% hit rate)", 100.0 * hits as f64 / beams as f64);
    println!(
        "{ticks} ticks of {:.0} ms, {:.2} revolutions, {:.3} ms per full scan",
        dt * 1e3,
        revolutions,
        1e3 * cast_s / revolutions.max(f64::MIN_POSITIVE)
    );
    for path in written {
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// The returned points of sensor `s`'s scan in world 0, each with what the colour modes read.
/// With the return model on, echo modes draw the model's echo along the beam (dropped beams
/// vanish, a mirror's phantoms appear) and surface modes the first surface, which they
/// describe even where its beam dropped.
fn points(sim: &Simulation, s: usize, by: ColourBy) -> Result<Vec<Point>> {
    let lidar = sim.lidar(s)?;
    let (scan, channels) = (lidar.scan(0)?, lidar.config().channels);
    let origin = lidar.frame(0)?.0.as_vec3();
    let (mut az, mut el) = (vec![0.0f32; scan.len()], vec![0.0f32; scan.len()]);
    lidar.beam_angles_into(0, &mut az, &mut el)?;
    let params = sim.return_params();
    let surface_mode = matches!(by, ColourBy::NirReflectivity | ColourBy::MetalReflectance | ColourBy::DropoutProb);
    let point = |k: usize| -> Option<Point> {
        let p = glam::Vec3::from(scan.point[k]);
        let dir = (p - origin).normalize_or_zero();
        let cos_incidence = dir.dot(glam::Vec3::from(scan.normal[k])).abs();
        let (xyz, range, material) = match &scan.returns {
            Some(returns) => {
                let read = match sim.material_at(scan.geomid[k] as usize, p.as_dvec3()) {
                    None => MaterialRead::Hole,
                    Some(m) => MaterialRead::Known {
                        intensity: returns.intensity[k],
                        nir: m.reflectivity,
                        metal: m.f0 * m.metalness,
                        drop: params.dropout_probability(&m, scan.range[k] as f64, cos_incidence as f64) as f32,
                        calibrated: returns.reflectivity[k],
                    },
                };
                let echo = returns.range[k];
                if surface_mode {
                    (scan.point[k], scan.range[k], read)
                } else if echo < 0.0 {
                    return None;
                } else {
                    ((origin + dir * echo).into(), echo, read)
                }
            }
            None => (scan.point[k], scan.range[k], MaterialRead::Unconfigured),
        };
        Some(Point {
            xyz,
            range,
            channel: k as u32 % channels,
            channels,
            azimuth: az[k],
            order: k as u32,
            cos_incidence,
            material,
        })
    };
    Ok((0..scan.len()).filter(|&k| scan.range[k] >= 0.0).filter_map(point).collect())
}

/// Writes the returns of `scan` as a binary little-endian PLY: world-frame x, y, z and, per
/// point, range, channel, bin, geom id and timestamp.
fn write_ply(path: &Path, scan: &Scan, channels: u32, manifest: &Path, name: &str) -> Result<()> {
    let hits: Vec<usize> = (0..scan.len()).filter(|&k| scan.range[k] >= 0.0).collect();
    let mut out = Vec::with_capacity(256 + hits.len() * 36);
    write!(
        out,
        "ply\nformat binary_little_endian 1.0\ncomment glint scan of {} (sensor '{name}'), world frame, metres\n\
         element vertex {}\nproperty float x\nproperty float y\nproperty float z\nproperty float range\n\
         property ushort channel\nproperty ushort bin\nproperty int geom\nproperty double timestamp\n{}end_header\n",
        manifest.display(),
        hits.len(),
        if scan.returns.is_some() {
            "property float intensity\nproperty float reflectivity\nproperty float secondary_range\n"
        } else {
            ""
        }
    )?;
    for &k in &hits {
        for c in scan.point[k] {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.extend_from_slice(&scan.range[k].to_le_bytes());
        out.extend_from_slice(&((k as u32 % channels) as u16).to_le_bytes());
        out.extend_from_slice(&((k as u32 / channels) as u16).to_le_bytes());
        out.extend_from_slice(&scan.geomid[k].to_le_bytes());
        out.extend_from_slice(&scan.time[k].to_le_bytes());
        if let Some(r) = &scan.returns {
            for v in [r.intensity[k], r.reflectivity[k], r.secondary_range[k]] {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    std::fs::write(path, out).with_context(|| format!("cannot write '{}'", path.display()))
}
