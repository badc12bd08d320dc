//! `glint render`: one frame of every bound camera of one world, as PNG and NumPy files.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;
use glint_sim::{CameraFrames, CameraOptions, MAX_CAMERA_SIDE, SimOptions, Simulation};

use crate::output::write_error;
use crate::print_warnings;

/// Arguments of `glint render`.
#[derive(Args)]
pub struct RenderArgs {
    /// A scene manifest (its `[[camera]]` bindings, else every camera of its scene) or an
    /// MJCF file (every camera).
    scene: PathBuf,
    /// Render only these MJCF cameras (repeat for several). Each writes the outputs its MJCF
    /// `output` attribute names (MuJoCo's default: rgb), or its `[[camera]]` binding's.
    #[arg(long = "camera")]
    cameras: Vec<String>,
    /// Which world to write (0-based).
    #[arg(long, default_value_t = 0)]
    world: usize,
    /// Worlds to simulate (all are rendered; `--world` is written).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    worlds: u32,
    /// Simulation steps before the frame (each one tick of the manifest's runner, its
    /// controller driving; 10 ms by default).
    #[arg(long, default_value_t = 0)]
    steps: u32,
    /// The runner's ticks per second, which `--steps` counts: kept exactly or refused (a whole
    /// number of physics steps a tick). Default: the manifest's `[recorder] lidar_runner_hz`,
    /// else 100 where the scene's timestep realises it and the nearest rate it does otherwise.
    #[arg(long, value_parser = runner_hz)]
    runner_hz: Option<f64>,
    /// Override the width and height of every camera, pixels (1 to 8192 each).
    #[arg(long, num_args = 2, value_names = ["WIDTH", "HEIGHT"], value_parser = side)]
    size: Option<Vec<usize>>,
    /// Render without shadows.
    #[arg(long)]
    no_shadows: bool,
    /// Render without textures.
    #[arg(long)]
    no_textures: bool,
    /// Output folder (created if missing).
    #[arg(long, default_value = "out/render")]
    out: PathBuf,
    /// Replace output files that exist (else the render refuses before it starts).
    #[arg(long)]
    force: bool,
}

/// A `--runner-hz` rate: a positive, finite number of ticks per second.
fn runner_hz(s: &str) -> Result<f64, String> {
    match s.trim().parse::<f64>() {
        Ok(hz) if hz.is_finite() && hz > 0.0 => Ok(hz),
        _ => Err(format!("'{s}' is not a rate: give ticks per second, a number above 0")),
    }
}

/// A `--size` side: a whole number of pixels the renderer takes.
fn side(s: &str) -> Result<usize, String> {
    match s.trim().parse::<i64>() {
        Ok(n) if (1..=MAX_CAMERA_SIDE as i64).contains(&n) => Ok(n as usize),
        _ => Err(format!("'{s}' is not an image side: give a whole number of pixels from 1 to {MAX_CAMERA_SIDE}")),
    }
}

/// The simulation of `scene`: a manifest (`.toml`) or an MJCF file.
pub(crate) fn load_scene(scene: &Path, options: SimOptions) -> Result<Simulation> {
    let is_manifest = scene.extension().is_some_and(|e| e.eq_ignore_ascii_case("toml"));
    Ok(if is_manifest {
        Simulation::from_manifest(scene, options)?
    } else {
        Simulation::from_xml_file(scene, Vec::new(), options)?
    })
}

pub fn run(args: RenderArgs) -> Result<()> {
    let options = SimOptions { nworld: args.worlds as usize, runner_hz: args.runner_hz, ..SimOptions::default() };
    let mut sim = load_scene(&args.scene, options)?;
    print_warnings(&mut sim);
    if args.world >= sim.nworld() {
        bail!(
            "world {} does not exist (--worlds {}): pick one from 0 to {}",
            args.world,
            sim.nworld(),
            sim.nworld() - 1
        );
    }
    let mut cameras: Vec<CameraOptions> = match (&args.cameras[..], sim.camera_layout()) {
        ([], Some(layout)) => layout.cameras.iter().map(|(_, o)| o.clone()).collect(),
        ([], None) => {
            (0..sim.scene().ncam()).map(|c| CameraOptions::from_mjcf(sim.scene(), c)).collect::<Result<_, _>>()?
        }
        (names, _) => names
            .iter()
            .map(|n| Ok(CameraOptions::from_mjcf(sim.scene(), sim.camera_index(n)?)?))
            .collect::<Result<_>>()?,
    };
    if cameras.is_empty() {
        bail!(
            "'{}' has no cameras: add a <camera> to the MJCF (and a [[camera]] binding to the manifest)",
            args.scene.display()
        );
    }
    for c in &mut cameras {
        if let Some(size) = &args.size {
            c.resolution = Some((size[0], size[1]));
        }
        c.use_shadows &= !args.no_shadows;
        c.use_textures &= !args.no_textures;
    }
    sim.set_cameras(cameras)?;
    let layout = sim.camera_layout().map(|l| l.cameras.clone()).unwrap_or_default();
    for (model, options) in &layout {
        for (_, p) in camera_files(&args.out, &model.name, options) {
            glint_record::check_output(&p, crate::overwrite(args.force))?;
        }
    }
    for _ in 0..args.steps {
        sim.step(None)?;
    }
    let frames = sim.render()?;
    for slot in 0..frames.layout.cameras.len() {
        write_camera(&frames, args.world, slot, &args.out)?;
    }
    Ok(())
}

/// One file of a camera's outputs.
#[derive(Clone, Copy)]
enum Output {
    RgbPng,
    DepthPng,
    DepthColourPng,
    DepthNpy,
    SegPng,
    SegNpy,
}

/// One camera's outputs in `out`, as its options ask: `NAME_rgb.png`, `NAME_depth.png`
/// (16-bit codes of the camera's `depth_scale`, millimetres by default),
/// `NAME_depth_colour.png` (coloured, with a legend), `NAME_depth.npy`, `NAME_seg.png` (a
/// colour per geom) and `NAME_seg.npy`.
fn camera_files(out: &Path, name: &str, options: &CameraOptions) -> Vec<(Output, PathBuf)> {
    let stem = glint_record::camera_file_name(name);
    let wanted = [
        (options.render_rgb, Output::RgbPng, "rgb.png"),
        (options.render_depth, Output::DepthPng, "depth.png"),
        (options.render_depth, Output::DepthColourPng, "depth_colour.png"),
        (options.render_depth, Output::DepthNpy, "depth.npy"),
        (options.render_seg, Output::SegPng, "seg.png"),
        (options.render_seg, Output::SegNpy, "seg.npy"),
    ];
    wanted.iter().filter(|w| w.0).map(|&(_, kind, suffix)| (kind, out.join(format!("{stem}_{suffix}")))).collect()
}

/// Writes one camera's outputs ([`camera_files`]).
fn write_camera(frames: &CameraFrames, world: usize, slot: usize, out: &Path) -> Result<()> {
    let (model, options) = &frames.layout.cameras[slot];
    let (rgb, depth, seg, w, h) = frames.image(world, slot);
    for (kind, p) in camera_files(out, &model.name, options) {
        match kind {
            Output::RgbPng => glint_record::write_rgb_png(&p, rgb, w, h)?,
            Output::DepthPng => {
                glint_record::write_depth_png_scaled(&p, depth, (w, h), options.depth_sensor.depth_scale)?
            }
            Output::DepthColourPng => {
                glint_record::write_depth_colour_png(&p, depth, (w, h))?;
            }
            Output::DepthNpy => {
                write_npy(&p, "<f4", h, w, &depth.iter().flat_map(|d| d.to_le_bytes()).collect::<Vec<u8>>())?
            }
            Output::SegPng => {
                let colours: Vec<u8> = seg.iter().flat_map(|&g| seg_colour(g)).collect();
                glint_record::write_rgb_png(&p, &colours, w, h)?;
            }
            Output::SegNpy => {
                write_npy(&p, "<i4", h, w, &seg.iter().flat_map(|g| g.to_le_bytes()).collect::<Vec<u8>>())?
            }
        }
        println!("wrote {}", p.display());
    }
    Ok(())
}

/// A distinct colour per geom id (black for the background), as MuJoCo's segmentation
/// rendering picks them: Halton points of bases 2, 3 and 5.
fn seg_colour(g: i32) -> [u8; 3] {
    if g < 0 {
        return [0; 3];
    }
    let halton = |mut i: u32, base: u32| {
        let (mut f, mut r) = (1.0f64, 0.0f64);
        while i > 0 {
            f /= base as f64;
            r += f * (i % base) as f64;
            i /= base;
        }
        r
    };
    let i = g as u32 + 10;
    [2, 3, 5].map(|b| ((0.1 + 0.8 * halton(i, b)) * 255.0).round() as u8)
}

/// A NumPy `.npy` file (format 1.0) of a C-ordered `rows × cols` array of `dtype`.
fn write_npy(path: &Path, dtype: &str, rows: usize, cols: usize, data: &[u8]) -> Result<()> {
    let mut header = format!("{{'descr': '{dtype}', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    // The magic, version and length take 10 bytes; the header ends in a newline, padded so
    // the data starts on a multiple of 64.
    let total = (10 + header.len() + 1).div_ceil(64) * 64;
    header.push_str(&" ".repeat(total - 10 - header.len() - 1));
    header.push('\n');
    let mut file = glint_record::OutputFile::create(path, glint_record::Overwrite::Replace)?;
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    bytes.extend_from_slice(&(header.len() as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(data);
    file.write_all(&bytes).map_err(|e| write_error(path, e))?;
    Ok(file.finish()?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npy_header_is_aligned_and_says_the_shape() {
        let dir = std::env::temp_dir().join(format!("glint-npy-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let p = dir.join("a.npy");
        write_npy(&p, "<f4", 2, 3, &[0u8; 24]).unwrap();
        let bytes = std::fs::read(&p).unwrap();
        let len = u16::from_le_bytes([bytes[8], bytes[9]]) as usize;
        assert_eq!((10 + len) % 64, 0);
        let header = std::str::from_utf8(&bytes[10..10 + len]).unwrap();
        assert!(header.contains("'shape': (2, 3)") && header.ends_with('\n'));
        assert_eq!(bytes.len(), 10 + len + 24);
        assert_eq!(seg_colour(-1), [0, 0, 0]);
        assert_ne!(seg_colour(0), seg_colour(1));
    }
}
