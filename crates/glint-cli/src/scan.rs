//! `glint scan`: steps a manifest's scene, scans with one of its lidars, and writes a PLY
//! point cloud, a range image (spinning units) and a top-down view of the returns.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use glint_core::RayCaster;
use glint_lidar::{Bake, Continuation, Lidars, ScanPattern, ScanPreset, Strength, bake_path, drop_probability};
use glint_manifest::Manifest;
use glint_mujoco::{Model, WorldBatch};

use crate::draw::{ColourBy, MaterialRead, Point, Ramp, range_image_png, top_down_png};

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
    preset: Option<String>,
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
    let manifest = Manifest::load(&args.manifest)?;
    if manifest.lidar.is_empty() {
        bail!("manifest '{}' binds no lidar: add a [[lidar]] table (see docs/manifest.md)", args.manifest.display());
    }
    let model = Model::from_xml_file(&manifest.scene)?;
    let scene = model.scene().clone();
    let mut batch = WorldBatch::new(&model, 1)?;
    let mut caster = RayCaster::new(&scene, batch.poses());
    let (mut lidars, warnings) = Lidars::new(&scene, manifest.lidar.clone(), 1)?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    let s = args.sensor;
    let mut config = lidars.config(s)?;
    if let Some(p) = &args.preset {
        ScanPreset::from_name(p)?.apply(&mut config);
        for w in lidars.set_config(s, config)? {
            eprintln!("warning: {w}");
        }
    }
    let bake = if args.material { Some(load_bake(&manifest, &scene)?) } else { None };
    if let Some(bake) = &bake {
        lidars.set_materials(Some(std::sync::Arc::new(bake.clone())));
        lidars.set_return_params(manifest.return_params)?;
        lidars.set_seed(manifest.seed);
    } else if args.colour_by.needs_material() {
        eprintln!(
            "warning: colour mode '{}' reads the return model and a bake: pass --material (drawing solid green)",
            args.colour_by
        );
    }
    lidars.set_live(true);
    let tick_s = 1.0 / manifest.recorder.lidar_runner_hz;
    let ticks = args.ticks.unwrap_or_else(|| {
        if config.rotation_hz > 0.0 { (1.0 / (config.rotation_hz * tick_s) - 1e-9).ceil() as u32 } else { 1 }
    });
    let steps = ((tick_s / model.timestep()).round() as usize).max(1);
    let mut cast_s = 0.0;
    for _ in 0..ticks {
        batch.step(steps);
        caster.refit(batch.poses());
        let t = Instant::now();
        lidars.tick(&scene, batch.poses(), &caster, steps as f64 * model.timestep(), &[batch.time(0)], false)?;
        cast_s += t.elapsed().as_secs_f64();
    }
    if batch.unstable(0) {
        eprintln!("warning: MuJoCo found the simulation unstable and reset it during the scan");
    }

    let binding = lidars.binding(s)?.clone();
    let scan = lidars.scan(s, 0)?;
    let (origin, _) = lidars.frame(s, 0, batch.poses())?;
    let beams = scan.len();
    let (mut az, mut el) = (vec![0.0f32; beams], vec![0.0f32; beams]);
    lidars.beam_angles(s, 0, &mut az, &mut el)?;
    let channels = config.channels;
    let params = lidars.return_params();
    let points: Vec<Point> = (0..beams)
        .filter(|&k| scan.range[k] >= 0.0)
        .filter_map(|k| {
            let p = glam::Vec3::from(scan.point[k]);
            let dir = (p - origin.as_vec3()).normalize_or_zero();
            let cos_incidence = dir.dot(glam::Vec3::from(scan.normal[k])).abs();
            let (xyz, range, material) = match (&bake, scan.returns.as_ref()) {
                (Some(bake), Some(returns)) => {
                    // The model's echo along the beam: dropped beams vanish, phantoms appear.
                    let echo = returns.range[k];
                    let at = origin.as_vec3() + dir * echo.max(0.0);
                    let read = match bake.material_at(scan.geomid[k] as usize, p.as_dvec3()) {
                        None => MaterialRead::Hole,
                        Some(m) => {
                            let terms = Strength::of(&params, m, cos_incidence as f64);
                            let s = match m.continuation {
                                Continuation::Opaque | Continuation::Porous => terms.full(),
                                _ => terms.glint_only(),
                            };
                            MaterialRead::Known {
                                intensity: returns.intensity[k],
                                nir: m.reflectivity,
                                metal: m.f0 * m.metalness,
                                drop: drop_probability(&params, s, scan.range[k] as f64, cos_incidence as f64) as f32,
                                calibrated: returns.reflectivity[k],
                            }
                        }
                    };
                    // The modes that describe a surface show it even where its beam dropped.
                    let surface_mode = matches!(
                        args.colour_by,
                        ColourBy::NirReflectivity | ColourBy::MetalReflectance | ColourBy::DropoutProb
                    );
                    // Surface modes draw the first surface; echo modes draw the model's echo.
                    if surface_mode {
                        (scan.point[k], scan.range[k], read)
                    } else if echo < 0.0 {
                        return None;
                    } else {
                        (at.into(), echo, read)
                    }
                }
                _ => (scan.point[k], scan.range[k], MaterialRead::Unconfigured),
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
        })
        .collect();

    std::fs::create_dir_all(&args.out)
        .with_context(|| format!("cannot create output folder '{}'", args.out.display()))?;
    let stem = if binding.name.is_empty() { format!("lidar{s}") } else { binding.name.clone() };
    let ply = args.out.join(format!("{stem}.ply"));
    write_ply(&ply, scan, channels, &manifest.path, &stem)?;
    let top = args.out.join(format!("{stem}-top.png"));
    top_down_png(&points, args.colour_by, args.ramp, args.size, &top)?;
    let mut written = vec![ply, top];
    if matches!(config.pattern, ScanPattern::Spinning) {
        let image = args.out.join(format!("{stem}-range.png"));
        range_image_png(&scan.range, channels, config.azimuth_bins, config.max_range as f32, args.ramp, &image)?;
        written.push(image);
    }

    let hits = scan.hits();
    if let Some(returns) = &scan.returns {
        let echoes = returns.range.iter().filter(|&&r| r >= 0.0).count();
        let second = returns.secondary_range.iter().filter(|&&r| r >= 0.0).count();
        println!(
            "return model ({}): {echoes} echoes ({:.1}% of beams), {second} second echoes",
            manifest.bake.name,
            100.0 * echoes as f64 / beams as f64
        );
    }
    let dt = steps as f64 * model.timestep();
    let revolutions = if config.rotation_hz > 0.0 {
        (ticks as f64 * config.rotation_hz * dt).min(ticks as f64)
    } else {
        ticks as f64
    };
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

/// Loads the manifest's saved bake, warning when it is stale.
fn load_bake(manifest: &Manifest, scene: &glint_core::Scene) -> Result<Bake> {
    let dir = manifest.path.parent().unwrap_or(Path::new("."));
    let path = bake_path(dir, &manifest.bake.name)?;
    if !path.exists() {
        bail!(
            "--material needs a material bake, and there is none at '{}': run `glint bake {}` first",
            path.display(),
            manifest.path.display()
        );
    }
    let bake = Bake::load(&path)?;
    let table = manifest.material_table(scene)?;
    if bake.status(scene, &table).stale {
        eprintln!(
            "warning: the bake '{}' is stale (the materials changed since it was made): run `glint bake {}` again",
            path.display(),
            manifest.path.display()
        );
    }
    Ok(bake)
}

/// Writes the returns of `scan` as a binary little-endian PLY: world-frame x, y, z and, per
/// point, range, channel, bin, geom id and timestamp.
fn write_ply(path: &Path, scan: &glint_lidar::Scan, channels: u32, manifest: &Path, name: &str) -> Result<()> {
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
