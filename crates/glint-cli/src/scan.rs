//! `glint scan`: steps a manifest's scene, scans with one of its lidars, and writes a PLY
//! point cloud, a range image (spinning units) and a top-down view of the returns. With
//! `--material` every output shows the return model's measurement through the loaded bake:
//! points at the measured range along each beam (noise, a mirror's phantoms behind it, the
//! bottom under water), and second echoes as extra PLY points.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use glint_lidar::{ColourBy, Ramp, Scan, ScanPattern, ScanPreset, Surfaces};
use glint_record::{MaterialRead, Point, range_image_by_png, top_down_png};
use glint_sim::{SimOptions, Simulation, WorldStatus};

use crate::print_warnings;

/// Arguments of `glint scan`.
#[derive(Args)]
pub struct ScanArgs {
    /// Scene manifest (TOML) with at least one `[[lidar]]` binding.
    manifest: PathBuf,
    /// Which lidar (0-based, in binding order).
    #[arg(long, default_value_t = 0, value_parser = sensor_index)]
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
    /// Colour of the top-down view and the range image: channel, range, height, azimuth,
    /// sample-order, solid, incidence; with --material also intensity, nir-reflectivity,
    /// metal-reflectance, dropout-prob, calibrated-reflectivity.
    #[arg(long, default_value = "range")]
    colour_by: ColourBy,
    /// Colour ramp: warm-green-blue, grayscale, heat, warm-red-yellow.
    #[arg(long, default_value = "warm-red-yellow")]
    ramp: Ramp,
    /// Apply the return model with the manifest's saved material bake (`glint bake` first)
    /// and its `[return_model]`: the PLY, the range image and the top-down view show the
    /// measured returns (noisy ranges, a mirror's phantoms behind it, dropped beams gone) and
    /// the material colour modes real values; the PLY gains intensity, calibrated
    /// reflectivity and an `echo` field (0: strongest, 1: the second echo, an extra point).
    #[arg(long)]
    material: bool,
    /// With --material, scan with a bake that does not match the scene (made from another
    /// scene, or before its geoms changed), which is refused otherwise.
    #[arg(long, requires = "material")]
    allow_mismatch: bool,
    /// Side of the top-down image, pixels.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(64..=8192))]
    size: u32,
    /// Replace output files that exist (else the scan refuses before it starts).
    #[arg(long)]
    force: bool,
}

/// The files a scan of sensor `stem` writes into `out`: the PLY, the top-down view and, for a
/// spinning unit, the range image.
fn output_files(out: &Path, stem: &str, spinning: bool) -> Vec<PathBuf> {
    let mut files = vec![out.join(format!("{stem}.ply")), out.join(format!("{stem}-top.png"))];
    if spinning {
        files.push(out.join(format!("{stem}-range.png")));
    }
    files
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
        let status = sim.load_bake(None).context("--material needs the manifest's saved material bake")?;
        if !status.matches_scene && !args.allow_mismatch {
            bail!(
                "the bake '{}' ('{}') does not match the scene: it was made from another scene, or before the scene's \
                 geoms changed. Bake again with `glint bake {}`, or pass --allow-mismatch to scan with it anyway",
                sim.bake_name(),
                sim.bake_file(None)?.display(),
                args.manifest.display()
            );
        }
    } else if args.colour_by.needs_material() {
        eprintln!(
            "warning: colour mode '{}' reads the return model and a bake: pass --material (drawing solid green)",
            args.colour_by
        );
    }
    print_warnings(&mut sim);
    let name = sim.lidar(s)?.binding().name.clone();
    let stem = if name.is_empty() { format!("lidar{s}") } else { name };
    let files = output_files(&args.out, &stem, matches!(config.pattern, ScanPattern::Spinning));
    for f in &files {
        glint_record::check_output(f, crate::overwrite(args.force))?;
    }
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
    let scan = lidar.scan(0)?;
    let (points, point_beams) = points(&sim, s, args.colour_by)?;
    let channels = config.channels;
    let origin = lidar.frame(0)?.0.as_vec3();
    let echoes = echoes(scan, surfaces(scan)?, origin);
    write_ply(&files[0], scan, &echoes, channels, &args.manifest, &stem)?;
    top_down_png(&points, args.colour_by, args.ramp, args.size, &files[1])?;
    if let Some(image) = files.get(2) {
        let max_range = config.max_range as f32;
        let (bins, by, ramp) = (config.azimuth_bins, args.colour_by, args.ramp);
        range_image_by_png(&points, &point_beams, channels, bins, max_range, by, ramp, image)?;
    }

    let beams = scan.len();
    if let Some(returns) = &scan.returns {
        let echoes = returns.range.iter().filter(|&&r| r >= 0.0).count();
        let second = returns.secondary_range.iter().filter(|&&r| r >= 0.0).count();
        println!(
            "return model ({}): {echoes} echoes ({:.1}% of beams), {second} second echoes; the PLY holds both",
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
    for path in &files {
        println!("wrote {}", path.display());
    }
    Ok(())
}

/// The returned points of sensor `s`'s scan in world 0, each with what the colour modes read,
/// and the beam index of each. With the return model on, echo modes draw the model's
/// strongest echo along the beam (dropped beams vanish, a mirror's phantoms appear) and
/// surface modes the first surface, which they describe even where its beam dropped.
fn points(sim: &Simulation, s: usize, by: ColourBy) -> Result<(Vec<Point>, Vec<u32>)> {
    let lidar = sim.lidar(s)?;
    let (scan, channels) = (lidar.scan(0)?, lidar.config().channels);
    let origin = lidar.frame(0)?.0.as_vec3();
    let surfaces = surfaces(scan)?;
    let (mut az, mut el) = (vec![0.0f32; scan.len()], vec![0.0f32; scan.len()]);
    lidar.beam_angles_into(0, &mut az, &mut el)?;
    let params = sim.return_params();
    let surface_mode = matches!(by, ColourBy::NirReflectivity | ColourBy::MetalReflectance | ColourBy::DropoutProb);
    let point = |k: usize| -> Option<Point> {
        let p = glam::Vec3::from(surfaces.point[k]);
        let dir = (p - origin).normalize_or_zero();
        let cos_incidence = dir.dot(glam::Vec3::from(surfaces.normal[k])).abs();
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
                    (surfaces.point[k], scan.range[k], read)
                } else if echo < 0.0 {
                    return None;
                } else {
                    ((origin + dir * echo).into(), echo, read)
                }
            }
            None => (surfaces.point[k], scan.range[k], MaterialRead::Unconfigured),
        };
        let (_, channel) = bin_channel(k as u32, channels);
        Some(Point { xyz, range, channel, channels, azimuth: az[k], order: k as u32, cos_incidence, material })
    };
    Ok((0..scan.len()).filter(|&k| scan.range[k] >= 0.0).filter_map(|k| Some((point(k)?, k as u32))).unzip())
}

/// The scan's hit points and normals (the CLI's simulations keep them).
fn surfaces(scan: &Scan) -> Result<&Surfaces> {
    scan.surfaces.as_ref().context("the scan kept no hit points: keep the lidars' surfaces (Lidars::set_keep_surfaces)")
}

/// The seed's split of a beam index: `index = bin * channels + channel`. For a
/// non-repetitive pattern (one channel) the bin is the emission index.
fn bin_channel(index: u32, channels: u32) -> (u32, u32) {
    (index / channels, index % channels)
}

/// `--sensor`: a 0-based index.
fn sensor_index(s: &str) -> Result<usize, String> {
    s.parse().map_err(|_| {
        format!("'{s}' is not a sensor index: a whole number from 0 (sensors count from 0 in binding order)")
    })
}

/// One point of the PLY: a return of beam `beam`.
#[derive(Clone, Copy, Debug)]
struct Echo {
    beam: u32,
    /// 0: the strongest (or, in a clean scan, the only) return; 1: the second echo.
    echo: u8,
    /// World frame, metres.
    xyz: [f32; 3],
    range: f32,
    /// The geom the return came from; `-1` for a second echo, which the model does not name.
    geom: i32,
    /// The return model's intensity and calibrated reflectivity (`-1`: none or not known).
    intensity: f32,
    reflectivity: f32,
}

/// The PLY's points: a clean scan's hits, or, with the return model on, each beam's measured
/// echoes placed along the beam at their measured (booked) ranges, strongest first.
fn echoes(scan: &Scan, surfaces: &Surfaces, origin: glam::Vec3) -> Vec<Echo> {
    let mut out = Vec::with_capacity(scan.hits());
    for k in (0..scan.len()).filter(|&k| scan.range[k] >= 0.0) {
        let beam = k as u32;
        let Some(r) = &scan.returns else {
            let (intensity, reflectivity) = (-1.0, -1.0);
            let (xyz, range, geom) = (surfaces.point[k], scan.range[k], scan.geomid[k]);
            out.push(Echo { beam, echo: 0, xyz, range, geom, intensity, reflectivity });
            continue;
        };
        // The model measures only beams with a first surface, along the direction to it.
        let dir = (glam::Vec3::from(surfaces.point[k]) - origin).normalize_or_zero();
        let at = |range: f32| (origin + dir * range).into();
        if r.range[k] >= 0.0 {
            let (intensity, reflectivity) = (r.intensity[k], r.reflectivity[k]);
            let (xyz, range, geom) = (at(r.range[k]), r.range[k], r.geomid[k]);
            out.push(Echo { beam, echo: 0, xyz, range, geom, intensity, reflectivity });
        }
        if r.secondary_range[k] >= 0.0 {
            let range = r.secondary_range[k];
            out.push(Echo { beam, echo: 1, xyz: at(range), range, geom: -1, intensity: -1.0, reflectivity: -1.0 });
        }
    }
    out
}

/// Writes `echoes` as a binary little-endian PLY: world-frame x, y, z and, per point, range,
/// channel, bin, geom id and timestamp; a material scan adds intensity, calibrated
/// reflectivity and echo.
fn write_ply(path: &Path, scan: &Scan, echoes: &[Echo], channels: u32, manifest: &Path, name: &str) -> Result<()> {
    let material = scan.returns.is_some();
    let mut out = Vec::with_capacity(512 + echoes.len() * 45);
    write!(
        out,
        "ply\nformat binary_little_endian 1.0\ncomment glint scan of {} (sensor '{name}'), world frame, metres\n{}\
         element vertex {}\nproperty float x\nproperty float y\nproperty float z\nproperty float range\n\
         property ushort channel\nproperty ushort bin\nproperty int geom\nproperty double timestamp\n{}end_header\n",
        manifest.display(),
        if material {
            "comment material scan: points at the measured range along each beam; echo 0 is the strongest, 1 the \
             second; geom -1 and intensity, reflectivity -1 where not known\n"
        } else {
            ""
        },
        echoes.len(),
        if material { "property float intensity\nproperty float reflectivity\nproperty uchar echo\n" } else { "" }
    )?;
    for e in echoes {
        let k = e.beam as usize;
        for c in e.xyz {
            out.extend_from_slice(&c.to_le_bytes());
        }
        out.extend_from_slice(&e.range.to_le_bytes());
        let (bin, channel) = bin_channel(e.beam, channels);
        out.extend_from_slice(&(channel as u16).to_le_bytes());
        out.extend_from_slice(&(bin as u16).to_le_bytes());
        out.extend_from_slice(&e.geom.to_le_bytes());
        out.extend_from_slice(&scan.time[k].to_le_bytes());
        if material {
            out.extend_from_slice(&e.intensity.to_le_bytes());
            out.extend_from_slice(&e.reflectivity.to_le_bytes());
            out.push(e.echo);
        }
    }
    let mut file = glint_record::OutputFile::create(path, glint_record::Overwrite::Replace)?;
    file.write_all(&out).map_err(|e| crate::output::write_error(path, e))?;
    Ok(file.finish()?)
}
