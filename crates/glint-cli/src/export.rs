//! `glint export`: re-processes a recorded session's clean geometry through the return model
//! under a material bake into a material-informed variant folder with an `augmentation.json`
//! provenance file (`glint_record::export_variant` does the work; this resolves the manifest,
//! the bake and its staleness, the preset and the seed).

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use glint_interop::{CloudSplit, LeRobotOptions, McapOptions, PointLayout, export_lerobot, export_mcap};
use glint_lidar::{ReturnPreset, Spelled};
use glint_record::{BakeRecord, Dataset, ExportSettings, Provenance, export_variant};
use glint_sim::{SimOptions, Simulation};

/// Arguments of `glint export`.
#[derive(Args)]
pub struct ExportArgs {
    /// Recorded session folder (`session_<date>_<time>/`, as `glint run` makes), or a
    /// dataset of shards (its folder or its `dataset.json`, as `glint.distributed` makes):
    /// exported as one (a variant of a dataset holds one variant per shard, under
    /// `shards/<shard>/`).
    session: PathBuf,
    /// What to write: `variant` (the return model under a bake, into a variant folder; needs
    /// --bake), `mcap` (ROS 2 messages in one MCAP file per episode, for Foxglove, Rerun and
    /// `ros2 bag play`) or `lerobot` (a LeRobot v3.0 dataset: robot state, actions, lidar
    /// ranges, camera videos).
    #[arg(long, value_enum, default_value_t = Format::Variant)]
    format: Format,
    /// Material bake to use: `MaterialBakes/<NAME>.lvxb` beside the session's manifest (made by
    /// `glint bake`). Needed by `--format variant`; with `--format mcap`, the bake whose NIR
    /// reflectivity glint's layout's `nir_reflectivity` field carries (default: a variant's).
    #[arg(long, value_name = "NAME")]
    bake: Option<String>,
    /// `--format mcap`: an exported variant (its folder name under SESSION/variants/, or its
    /// path) whose measured echoes, intensity and calibrated reflectivity the clouds carry.
    #[arg(long, value_name = "NAME")]
    variant: Option<String>,
    /// `--format mcap`: every lidar's point layout, `ouster`, `velodyne`, `livox` or `glint`
    /// (default: that of the ROS 2 driver of the unit its scan preset copies; glint's own for
    /// other patterns).
    #[arg(long, value_name = "L", value_parser = parse_layout)]
    layout: Option<PointLayout>,
    /// `--format mcap`: one point cloud per revolution (as the drivers publish) or per lidar
    /// tick.
    #[arg(long, value_enum, default_value_t = Split::Revolution)]
    split: Split,
    /// `--format mcap` or `lerobot`: only this episode (repeatable; default: every episode).
    #[arg(long, value_name = "N")]
    episode: Vec<u32>,
    /// `--format lerobot`: the task every frame is labelled with (default: the scene's name).
    #[arg(long, value_name = "TEXT")]
    task: Option<String>,
    /// Return model: `seed` (the seed's formulas) or `physical` (glint's physical model, with
    /// the manifest's `[return_model.physical]` terms, else every term on). Default: the
    /// manifest's `[return_model] model`.
    #[arg(long, value_name = "M", value_parser = parse_model)]
    model: Option<glint_lidar::ReturnModelKind>,
    /// Return model preset: generic, unitree-l1, livox-mid360 or ouster-os1 (default: the
    /// manifest's `[return_model]`).
    #[arg(long, value_name = "P")]
    return_preset: Option<ReturnPreset>,
    /// Run seed to derive each episode's seed from, as `glint run --seed N` does (default:
    /// each episode's own recorded seed, so the variant draws what the live sensor drew).
    #[arg(long, value_name = "N", value_parser = crate::parse_seed)]
    seed: Option<u64>,
    /// Output folder, which must not exist (default:
    /// `SESSION/variants/<bake>-<preset>-seed<N>/`, or `…-recorded-seeds/`).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Export with a stale bake (one baked before the scene's materials last changed); the
    /// variant's augmentation.json records `stale: true`.
    #[arg(long)]
    allow_stale: bool,
    /// Export the files that can be read and list the missing or damaged ones (and any a
    /// killed run left `.partial`) in augmentation.json's `skipped`, instead of refusing.
    #[arg(long)]
    skip_damaged: bool,
    /// Scene manifest (default: the one the session's meta/info.json records).
    #[arg(long, value_name = "PATH")]
    manifest: Option<PathBuf>,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    Variant,
    Mcap,
    Lerobot,
}

#[derive(Clone, Copy, ValueEnum)]
enum Split {
    Revolution,
    Tick,
}

fn parse_model(s: &str) -> Result<glint_lidar::ReturnModelKind, String> {
    glint_lidar::ReturnModelKind::from_name(s).map_err(|e| e.to_string())
}

fn parse_layout(s: &str) -> Result<PointLayout, String> {
    s.parse()
}

/// `path` made absolute where it exists, as text.
fn absolute(path: &Path) -> String {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}

pub fn run(args: ExportArgs) -> Result<()> {
    match args.format {
        Format::Mcap => return run_mcap(&args),
        Format::Lerobot => return run_lerobot(&args),
        Format::Variant => {}
    }
    if args.task.is_some() {
        bail!("--task belongs to `--format lerobot`");
    }
    let mcap_only = [
        ("--variant", args.variant.is_some()),
        ("--layout", args.layout.is_some()),
        ("--episode", !args.episode.is_empty()),
    ];
    if let Some((flag, _)) = mcap_only.iter().find(|(_, given)| *given) {
        bail!("{flag} belongs to `--format mcap`; a variant export re-processes every episode");
    }
    let Some(bake) = args.bake.clone() else {
        bail!(
            "a variant export needs a material bake: pass --bake NAME (made by `glint bake MANIFEST`), or \
             --format mcap to write the session as ROS 2 messages"
        );
    };
    let dataset = Dataset::open(&args.session)?;
    let meta = dataset.meta();
    // Held to the end: a session being recorded or salvaged is refused before any work.
    let _reading = dataset.lock_shared("export")?;
    let manifest_path = match &args.manifest {
        Some(p) => p.clone(),
        None if meta.manifest.is_empty() => bail!(
            "the session '{}' records no manifest in meta/info.json: pass --manifest PATH",
            args.session.display()
        ),
        None => PathBuf::from(&meta.manifest),
    };
    if !manifest_path.exists() {
        bail!(
            "the session's manifest '{}' (recorded in {}) does not exist here: pass --manifest PATH",
            manifest_path.display(),
            args.session.join("meta").join("info.json").display()
        );
    }
    let sim = Simulation::from_manifest(&manifest_path, SimOptions::default())?;
    let recorded_scene = std::fs::canonicalize(&meta.scene).ok();
    let scene = sim.scene_path().unwrap_or(Path::new(""));
    if recorded_scene.is_some() && recorded_scene != std::fs::canonicalize(scene).ok() {
        eprintln!(
            "warning: the session was recorded in '{}', and the manifest now names '{}': geom ids must match",
            meta.scene,
            scene.display()
        );
    }

    let saved = sim.open_bake(Some(&bake))?;
    let (status, path) = (saved.status, &saved.path);
    if status.stale {
        let rebuild = if bake == sim.bake_name() { String::new() } else { format!(" --name {}", bake) };
        // A bake of another scene describes other geoms; a stale one, this scene's old materials.
        let why = if status.matches_scene {
            "is stale: the scene's NIR materials (or the bake format) changed since it was baked"
        } else {
            "does not match the scene: it was baked from another scene (its geoms and bodies differ)"
        };
        if !args.allow_stale {
            bail!(
                "the bake '{}' ('{}') {why}. Rebuild it with `glint bake {}{rebuild}`, or pass --allow-stale to export \
                 with it anyway (augmentation.json then records stale: true)",
                bake,
                path.display(),
                manifest_path.display(),
            );
        }
        eprintln!("warning: the bake '{}' {why}; exporting anyway (--allow-stale)", bake);
    }

    // Named after the preset the parameters are, or `manifest` for a tuned `[return_model]`.
    let (params, preset) = match args.return_preset {
        Some(p) => (p.params(), p.name().to_string()),
        None => {
            let manifest = sim.return_params();
            let named = ReturnPreset::all().find(|p| p.params() == manifest);
            (manifest, named.map_or_else(|| "manifest".to_string(), |p| p.name().to_string()))
        }
    };
    let seed = args.seed;
    let mut physics = match args.model {
        None => sim.physical_model(),
        Some(glint_lidar::ReturnModelKind::Physical) => Some(sim.physical_model().unwrap_or_default()),
        Some(_) => None,
    };
    if let Some(p) = physics.as_mut().filter(|p| p.footprint_rays > 1) {
        eprintln!(
            "warning: the manifest's footprint_rays = {} casts sub-rays around each beam, and a recording keeps each \
             beam's own surfaces only: this export runs the physical model without footprints (footprint_rays = 1 in \
             augmentation.json)",
            p.footprint_rays
        );
        p.footprint_rays = 1;
    }
    let seeds = seed.map_or_else(|| "recorded-seeds".to_string(), |n| format!("seed{n}"));
    let model = if physics.is_some() { "-physical" } else { "" };
    let out = args
        .out
        .clone()
        .unwrap_or_else(|| dataset.root().join("variants").join(format!("{}-{preset}{model}-{seeds}", bake)));
    if out.exists() {
        bail!(
            "'{}' already exists: a variant is never overwritten (choose another --seed, --return-preset or --out, \
             or remove it)",
            out.display()
        );
    }

    let fingerprint = format!("{:016x}", status.material_fingerprint);
    let provenance = Provenance {
        manifest: absolute(&manifest_path),
        return_preset: preset,
        bake: BakeRecord { name: bake.clone(), path: absolute(path), material_fingerprint: fingerprint, status },
    };
    let settings = ExportSettings { params, seed, materials: &*saved.bake, skip_damaged: args.skip_damaged, physics };
    let mut preset_name = String::new();
    for session in dataset.sessions() {
        let part = dataset.part_of(&out, &session);
        let aug = export_variant(&session, &part, &settings, provenance.clone()).map_err(|e| match e {
            // These name the session and the folder already.
            e @ (glint_record::RecordError::InUse { .. } | glint_record::RecordError::VariantBusy { .. }) => e.into(),
            e => anyhow::Error::from(e).context(format!("cannot export '{}'", session.display())),
        })?;
        report_variant(&aug);
        preset_name = aug.return_preset;
    }
    println!(
        "variant: {} (bake '{}' {}, return preset {}, {})",
        out.display(),
        bake,
        if status.stale { "STALE" } else { "up to date" },
        preset_name,
        seed.map_or_else(|| "each episode's recorded seed".to_string(), |n| format!("episode seeds from run seed {n}"))
    );
    match dataset.is_catalog() {
        true => println!("provenance: augmentation.json in each shard's variant, {}", out.join("shards").display()),
        false => println!("provenance: {}", out.join(glint_record::AUGMENTATION_FILE).display()),
    }
    Ok(())
}

/// Prints what a variant export wrote, and warns of what it skipped or could not place.
fn report_variant(aug: &glint_record::Augmentation) {
    for f in &aug.files {
        let pct = |n: u64| if f.rows > 0 { 100.0 * n as f64 / f.rows as f64 } else { 0.0 };
        println!(
            "episode {}, sensor {} '{}': {} rows, {} clean hits ({:.1}%), {} echoes ({:.1}%), {} second echoes, {} holes (no material)",
            f.episode,
            f.sensor,
            f.sensor_name,
            f.rows,
            f.clean_hits,
            pct(f.clean_hits),
            f.echoes,
            pct(f.echoes),
            f.second_echoes,
            f.holes
        );
    }
    for s in &aug.skipped {
        eprintln!("warning: skipped {s}");
    }
    for f in aug.files.iter().filter(|f| f.uncaptured > 0) {
        eprintln!(
            "warning: episode {}, sensor '{}': {} beams met glass, water, a gap or a mirror, and the session captured no \
             secondary geometry of that kind, so the variant has nothing behind them and no phantoms; record with \
             secondary_capture = \"both\" to export them",
            f.episode, f.sensor_name, f.uncaptured
        );
    }
}

/// `glint export --format lerobot`: a LeRobot v3.0 dataset in `--out` (default
/// `SESSION/lerobot/`).
fn run_lerobot(args: &ExportArgs) -> Result<()> {
    let unused = [
        ("--bake", args.bake.is_some()),
        ("--variant", args.variant.is_some()),
        ("--layout", args.layout.is_some()),
        ("--return-preset", args.return_preset.is_some()),
        ("--seed", args.seed.is_some()),
        ("--model", args.model.is_some()),
    ];
    if let Some((flag, _)) = unused.iter().find(|(_, given)| *given) {
        bail!("{flag} does not apply to `--format lerobot`, which writes the recorded state, ranges and cameras");
    }
    let dataset = Dataset::open(&args.session)?;
    let _reading = dataset.lock_shared("export")?;
    let out = args.out.clone().unwrap_or_else(|| dataset.root().join("lerobot"));
    let options =
        LeRobotOptions { episodes: (!args.episode.is_empty()).then(|| args.episode.clone()), task: args.task.clone() };
    let done = export_lerobot(&args.session, &out, &options).map_err(|e| {
        anyhow::Error::from(e).context(format!("cannot export '{}' as a LeRobot dataset", args.session.display()))
    })?;
    for w in &done.warnings {
        eprintln!("warning: {w}");
    }
    println!(
        "LeRobot {} dataset: {} episode(s), {} frames at {} fps, features {}: {}",
        glint_interop::LEROBOT_VERSION,
        done.episodes,
        done.frames,
        done.fps,
        done.features.join(", "),
        done.dir.display()
    );
    Ok(())
}

/// `glint export --format mcap`: one MCAP file per episode under `--out` (default
/// `SESSION/mcap/`, or `SESSION/mcap/<variant>/` for a variant).
fn run_mcap(args: &ExportArgs) -> Result<()> {
    if args.model.is_some() {
        bail!("--model belongs to a variant export (`--bake NAME`); an MCAP export of a variant carries its model");
    }
    let dataset = Dataset::open(&args.session)?;
    let meta = dataset.meta();
    // With --format mcap, --bake names the bake glint's layout reads NIR reflectivity from.
    let bake = match &args.bake {
        Some(name) => {
            let manifest = args.manifest.clone().unwrap_or_else(|| PathBuf::from(&meta.manifest));
            let dir = manifest.parent().map(Path::to_path_buf).unwrap_or_default();
            let path = glint_lidar::bake_path(&dir, name)?;
            if !path.is_file() {
                bail!(
                    "there is no bake '{name}' at {} (make it with `glint bake {}`), and --format mcap reads NIR \
                     reflectivity from it",
                    path.display(),
                    manifest.display()
                );
            }
            Some(path)
        }
        None => None,
    };
    let _reading = dataset.lock_shared("export")?;
    let variant = args.variant.as_ref().map(|v| {
        let dir = PathBuf::from(v);
        if dir.is_dir() { dir } else { dataset.root().join("variants").join(v) }
    });
    if let Some(v) = &variant
        && !dataset.part_of(v, &dataset.sessions()[0]).join(glint_record::AUGMENTATION_FILE).is_file()
    {
        bail!(
            "'{}' is not an exported variant (it has no {}): make one with `glint export {} --bake NAME`",
            v.display(),
            glint_record::AUGMENTATION_FILE,
            args.session.display()
        );
    }
    let out = args.out.clone().unwrap_or_else(|| {
        let base = dataset.root().join("mcap");
        match &variant {
            Some(v) => base.join(v.file_name().unwrap_or_default()),
            None => base,
        }
    });
    let options = McapOptions {
        layout: args.layout,
        split: match args.split {
            Split::Revolution => CloudSplit::Revolution,
            Split::Tick => CloudSplit::Tick,
        },
        variant,
        episodes: (!args.episode.is_empty()).then(|| args.episode.clone()),
        bake,
    };
    let files = export_mcap(&args.session, &out, &options)
        .map_err(|e| anyhow::Error::from(e).context(format!("cannot export '{}' as MCAP", args.session.display())))?;
    for f in &files {
        println!(
            "episode {}: {} messages, {} point clouds, {} points: {}",
            f.episode,
            f.messages,
            f.clouds,
            f.points,
            f.path.display()
        );
        for w in &f.warnings {
            eprintln!("warning: episode {}: {w}", f.episode);
        }
    }
    if files.is_empty() {
        eprintln!("warning: the session lists no finished episode: nothing written");
    }
    Ok(())
}
