//! `glint bake`: builds the material bake of a manifest's scene (world 0 at its initial
//! state) with the manifest's `[materials.*]` and `[bake]` settings, and saves it to
//! `MaterialBakes/<name>.lvxb` beside the manifest; `--status` reports the saved bake against
//! the scene's current geoms and materials instead, and exits 1 when it does not match the
//! scene or is stale.

use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Args;
use glint_lidar::BakeStatus;
use glint_sim::{SimOptions, Simulation};

/// Arguments of `glint bake`.
#[derive(Args)]
pub struct BakeArgs {
    /// Scene manifest (TOML); the bake is saved to `MaterialBakes/<name>.lvxb` beside it.
    manifest: PathBuf,
    /// Bake name (default: the manifest's `[bake] name`, "scene" when unset).
    #[arg(long)]
    name: Option<String>,
    /// Grid cell size in metres, 0.001 to 10 (default: the manifest's `[bake] cell_size`).
    #[arg(long)]
    cell_size: Option<f64>,
    /// Cap on grid cells per axis, 1 to 1024 (default: the manifest's `[bake] max_dim`).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_dim: Option<u32>,
    /// Cells a visual geom's material spreads, 0 to 16 (default: the manifest's
    /// `[bake] splat_radius`).
    #[arg(long)]
    splat_radius: Option<i32>,
    /// Count hidden geoms (group 3 and above, or alpha 0) as visual.
    #[arg(long, conflicts_with = "exclude_hidden")]
    include_hidden: bool,
    /// Do not count hidden geoms as visual (the default unless the manifest says otherwise).
    #[arg(long)]
    exclude_hidden: bool,
    /// Report the saved bake (valid, matches_scene, stale, ...) instead of baking; exit status
    /// 1 when it does not match the scene or is stale.
    #[arg(long, conflicts_with_all = ["cell_size", "max_dim", "splat_radius", "include_hidden", "exclude_hidden"])]
    status: bool,
}

impl BakeArgs {
    /// Whether it only reports the saved bake (`--status`).
    pub fn status_only(&self) -> bool {
        self.status
    }
}

pub fn run(args: BakeArgs) -> Result<()> {
    let mut sim = Simulation::from_manifest(&args.manifest, SimOptions::default())?;
    let name = args.name.as_deref();
    let path = sim.bake_file(name)?;

    if args.status {
        let status = if path.exists() { sim.open_bake(name)?.status } else { BakeStatus::none() };
        print_status(&path, &status)?;
        let again =
            format!("glint bake {}{}", args.manifest.display(), name.map_or(String::new(), |n| format!(" --name {n}")));
        if !status.valid {
            eprintln!("no bake at '{}': run `{again}`", path.display());
        } else if !status.matches_scene {
            bail!(
                "the bake '{}' does not match the scene: it was made from another scene, or before the scene's geoms \
                 changed (scene fingerprint {:016x}, the scene's {:016x}); run `{again}`",
                path.display(),
                status.scene_fingerprint,
                glint_lidar::scene_fingerprint(sim.scene())
            );
        } else if status.stale {
            bail!(
                "the bake '{}' is stale: the scene's materials (or the bake format) changed since it was made; run `{again}`",
                path.display()
            );
        }
        return Ok(());
    }

    let mut settings = sim.bake_settings();
    if let Some(v) = args.cell_size {
        settings.cell_size = v;
    }
    if let Some(v) = args.max_dim {
        settings.max_dim = v;
    }
    if let Some(v) = args.splat_radius {
        settings.splat_radius = v;
    }
    if args.include_hidden {
        settings.include_hidden = true;
    }
    if args.exclude_hidden {
        settings.include_hidden = false;
    }
    settings.validate().context("bake settings (the manifest's [bake] with the flags given)")?;
    // World 0 at the model's initial state, kinematics computed (mj_forward).
    let start = Instant::now();
    let status = sim.bake(settings).context("cannot bake the scene")?;
    let took = start.elapsed().as_secs_f64();
    sim.save_bake(name)?;
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    eprintln!("baked {} geoms in {took:.2} s; wrote {bytes} bytes", sim.scene().ngeom());
    if status.cell_size != status.requested_cell_size {
        eprintln!(
            "note: the grid's cell is {} m, not the requested {} m: {} cells per axis (max_dim) cannot cover the \
             scene's static geometry at that size",
            status.cell_size, status.requested_cell_size, settings.max_dim
        );
    }
    print_status(&path, &status)
}

/// The bake's path, then its status: only `valid` when there is no bake, else every field of
/// its serde form, as TOML (`augmentation.json` holds the same, as JSON).
fn print_status(path: &Path, s: &BakeStatus) -> Result<()> {
    println!("bake = {:?}", path.display().to_string());
    if !s.valid {
        println!("valid = {}", s.valid);
        return Ok(());
    }
    let toml = toml::to_string(s).context("cannot write the bake status as TOML")?;
    println!("{}", toml.trim_end());
    Ok(())
}
