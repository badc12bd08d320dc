//! `glint lights`: a UsdLux-style rig translated into MJCF `<light>` elements (`translate`),
//! and the seed's exposure measurement rendered by MuJoCo's own classic renderer (`report`).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use glint_lights::{Exposure, Rig, SEED_TABLE, SeedRow, exposure, ssim};
use glint_mujoco::LitScene;
use glint_sim::{CameraOptions, SimOptions, Simulation};

use crate::classic::{self, ClassicJob};
use crate::output::{save_rgb, write_output};

/// `glint lights` commands.
#[derive(Subcommand)]
pub enum LightsCommand {
    /// Translates a light rig (TOML `[[lights]]` tables, or JSON) for an MJCF scene: prints the
    /// `<light>` elements and the headlight, logs each warning with its fix, and with `--out`
    /// writes the patched MJCF (scene lights off, headlight ambient only, rig lights added).
    Translate(TranslateArgs),
    /// Renders the seed's light-rig measurement with MuJoCo's classic renderer (the `mujoco`
    /// Python package): the bundled arm scene with no rig and with each of the seed's five
    /// rigs; prints the foreground luminance table beside the seed's MuJoCo and Isaac Sim
    /// columns and writes the PNGs, the patched MJCFs and report.json.
    Report(ReportArgs),
}

/// Arguments of `glint lights translate`.
#[derive(Args)]
pub struct TranslateArgs {
    /// The rig file: TOML with `[[lights]]` tables, or JSON (`.json`).
    rig: PathBuf,
    /// The MJCF scene the rig lights (its light names decide `_scenario` suffixes).
    #[arg(long)]
    mjcf: PathBuf,
    /// Write the patched MJCF here (MuJoCo's writer; includes are inlined). Asset paths stay
    /// as the scene wrote them, so write it beside the scene.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Print the translation as one JSON object instead of MJCF lines.
    #[arg(long)]
    json: bool,
    /// Replace the --out file if it exists.
    #[arg(long)]
    force: bool,
}

/// Arguments of `glint lights report`.
#[derive(Args)]
pub struct ReportArgs {
    /// Output folder for the PNGs, the patched MJCFs and report.json (created if missing).
    #[arg(long, default_value = "out/lights")]
    out: PathBuf,
    /// Python with the `mujoco` package (default: $GLINT_PYTHON, else python3). MuJoCo
    /// renders headless with MUJOCO_GL=osmesa (set unless MUJOCO_GL is already set).
    #[arg(long)]
    python: Option<PathBuf>,
    /// Print one JSON object instead of the table.
    #[arg(long)]
    json: bool,
    /// Replace the report's files if the folder holds them already (else it refuses before
    /// it starts).
    #[arg(long)]
    force: bool,
}

pub fn run(cmd: LightsCommand) -> Result<()> {
    match cmd {
        LightsCommand::Translate(args) => translate(args),
        LightsCommand::Report(args) => report(args),
    }
}

fn translate(args: TranslateArgs) -> Result<()> {
    if let Some(out) = &args.out {
        glint_record::check_output(out, crate::overwrite(args.force))?;
    }
    let rig = Rig::load(&args.rig)?;
    let lit = LitScene::from_xml_file(&args.mjcf, &rig)?;
    for w in &lit.translation.warnings {
        eprintln!("warning: {w}");
    }
    if args.json {
        println!("{}", serde_json::to_string_pretty(&lit.translation)?);
    } else {
        for l in &lit.translation.lights {
            println!("{}", l.to_xml());
        }
        let h = lit.model.headlight();
        println!(
            r#"<headlight ambient="{}" diffuse="0 0 0" specular="0 0 0"/>"#,
            h.ambient.map(|c| format!("{c:.6}").trim_end_matches('0').trim_end_matches('.').to_string()).join(" ")
        );
    }
    if let Some(out) = &args.out {
        write_output(out, lit.to_xml()?.as_bytes())?;
        eprintln!("wrote {}", out.display());
    }
    Ok(())
}

/// The bundled measurement scene and the seed's rigs.
const SCENE: &str = include_str!("../../../examples/lights/scene.xml");
const RIGS: [(&str, &str); 5] = [
    ("distant", include_str!("../../../examples/lights/rigs/distant.toml")),
    ("sphere", include_str!("../../../examples/lights/rigs/sphere.toml")),
    ("disk_down", include_str!("../../../examples/lights/rigs/disk_down.toml")),
    ("disk_side", include_str!("../../../examples/lights/rigs/disk_side.toml")),
    ("dome", include_str!("../../../examples/lights/rigs/dome.toml")),
];
const CAMERA: &str = "view";
/// How far glint's foreground mean may be from MuJoCo's.
const GLINT_TOLERANCE: f64 = 0.10;
/// The SSIM glint's render should reach against MuJoCo's.
const SSIM_TARGET: f64 = 0.85;
const SIDE: usize = 256;

/// One rendered row of the report.
#[derive(serde::Serialize)]
struct Row {
    rig: &'static str,
    label: &'static str,
    mujoco: Exposure,
    glint: Exposure,
    /// |glint.mean − mujoco.mean| / mujoco.mean.
    glint_mean_error: f64,
    /// SSIM of glint's render against MuJoCo's.
    ssim: f64,
    seed_mujoco: Exposure,
    seed_isaac: Option<Exposure>,
    /// |mujoco.mean − seed| / seed.
    mean_error: f64,
    tolerance: f64,
    png: PathBuf,
}

/// The files `glint lights report` writes into `out`.
fn report_files(out: &Path) -> Vec<PathBuf> {
    let mjcf = out.join("mjcf");
    let mut files = vec![mjcf.join("scene.xml"), out.join("report.json")];
    files.extend(RIGS.iter().map(|(name, _)| mjcf.join(format!("{name}.xml"))));
    for row in &SEED_TABLE {
        files.extend(["mujoco", "glint", "side_by_side"].map(|kind| out.join(format!("{}_{kind}.png", row.rig))));
    }
    files
}

fn report(args: ReportArgs) -> Result<()> {
    for f in report_files(&args.out) {
        glint_record::check_output(&f, crate::overwrite(args.force))?;
    }
    let mjcf_dir = args.out.join("mjcf");
    let scene = mjcf_dir.join("scene.xml");
    write_output(&scene, SCENE.as_bytes())?;
    let mut jobs = Vec::new();
    for row in &SEED_TABLE {
        let mjcf = match RIGS.iter().find(|(name, _)| *name == row.rig) {
            None => scene.clone(),
            Some((name, toml)) => {
                let rig = Rig::from_toml_str(toml).with_context(|| format!("the bundled rig {name}"))?;
                let lit = LitScene::from_xml_file(&scene, &rig)?;
                for w in &lit.translation.warnings {
                    eprintln!("warning: rig {name}: {w}");
                }
                let path = mjcf_dir.join(format!("{name}.xml"));
                write_output(&path, lit.to_xml()?.as_bytes())?;
                path
            }
        };
        let raw = args.out.join(format!("{}.rgb", row.rig));
        jobs.push((row, mjcf, raw));
    }
    let classic: Vec<ClassicJob> = jobs
        .iter()
        .map(|(_, mjcf, raw)| ClassicJob {
            mjcf: mjcf.clone(),
            camera: CAMERA.into(),
            size: (SIDE, SIDE),
            out: raw.clone(),
            frames: 0,
        })
        .collect();
    let version = classic::render(&classic::python(args.python.clone()), &classic, false)?.version;
    let mut rows = Vec::new();
    for (seed, mjcf, raw) in &jobs {
        let rgb = std::fs::read(raw).with_context(|| format!("reading MuJoCo's render {}", raw.display()))?;
        let _ = std::fs::remove_file(raw);
        let measured = exposure(&rgb, SIDE, SIDE)
            .with_context(|| format!("MuJoCo's render of {} is not {SIDE}x{SIDE} RGB", seed.rig))?;
        let png = args.out.join(format!("{}_mujoco.png", seed.rig));
        save_rgb(&png, &rgb, SIDE, SIDE)?;
        let ours = render_with_glint(mjcf)?;
        save_rgb(&args.out.join(format!("{}_glint.png", seed.rig)), &ours, SIDE, SIDE)?;
        save_rgb(&args.out.join(format!("{}_side_by_side.png", seed.rig)), &side_by_side(&rgb, &ours), 2 * SIDE, SIDE)?;
        let glint = exposure(&ours, SIDE, SIDE).context("glint's render")?;
        let similarity = ssim(&rgb, &ours, SIDE, SIDE).context("glint's render")?;
        rows.push(row(seed, measured, (glint, similarity), png));
    }
    let summary = serde_json::json!({ "mujoco_version": version, "camera": CAMERA, "size": SIDE, "rows": rows });
    let json_path = args.out.join("report.json");
    write_output(&json_path, serde_json::to_string_pretty(&summary)?.as_bytes())?;
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        print_table(&rows, &version, &args.out);
    }
    Ok(())
}

fn row(seed: &SeedRow, measured: Exposure, (glint, ssim): (Exposure, f64), png: PathBuf) -> Row {
    Row {
        rig: seed.rig,
        label: seed.label,
        mujoco: measured,
        glint,
        glint_mean_error: (glint.mean - measured.mean).abs() / measured.mean,
        ssim,
        seed_mujoco: seed.mujoco,
        seed_isaac: seed.isaac,
        mean_error: (measured.mean - seed.mujoco.mean).abs() / seed.mujoco.mean,
        tolerance: seed.tolerance,
        png,
    }
}

fn print_table(rows: &[Row], version: &str, out: &Path) {
    let cell = |e: Option<&Exposure>| match e {
        None => "-".to_string(),
        Some(e) if e.dark.is_nan() => format!("{:.0} / {:.0} / -", e.mean, e.p05),
        Some(e) => format!("{:.0} / {:.0} / {:.1}%", e.mean, e.p05, e.dark * 100.0),
    };
    println!("foreground (central 160x160 of {SIDE}x{SIDE}) luminance: mean / p05 / share below 20");
    println!(
        "{:<40} {:>18} {:>18} {:>18} {:>18} {:>12} {:>16} {:>6}",
        "rig",
        format!("MuJoCo {version}"),
        "seed MuJoCo 3.12",
        "seed Isaac Sim 5.0",
        "glint",
        "MuJoCo/seed",
        "glint/MuJoCo",
        "SSIM"
    );
    for r in rows {
        let verdict = |ok: bool| if ok { "ok" } else { "OUT" };
        println!(
            "{:<40} {:>18} {:>18} {:>18} {:>18} {:>8.1}% {:>3} {:>12.1}% {:>3} {:>6.3}",
            r.label,
            cell(Some(&r.mujoco)),
            cell(Some(&r.seed_mujoco)),
            cell(r.seed_isaac.as_ref()),
            cell(Some(&r.glint)),
            r.mean_error * 100.0,
            verdict(r.mean_error <= r.tolerance),
            r.glint_mean_error * 100.0,
            verdict(r.glint_mean_error <= GLINT_TOLERANCE),
            r.ssim
        );
    }
    println!(
        "targets: MuJoCo within 10% of the seed (15% for the sideways disk); glint within {:.0}% of MuJoCo, SSIM >= {SSIM_TARGET}",
        GLINT_TOLERANCE * 100.0
    );
    println!("PNGs (MuJoCo, glint, side by side), patched MJCFs and report.json in {}", out.display());
}

/// glint's render of the measurement camera of the MJCF at `path`, 256 × 256 RGB.
fn render_with_glint(path: &Path) -> Result<Vec<u8>> {
    let mut sim = Simulation::from_xml_file(path, Vec::new(), SimOptions::default())?;
    let camera = sim.camera_index(CAMERA)?;
    sim.set_cameras(vec![CameraOptions { resolution: Some((SIDE, SIDE)), ..CameraOptions::new(camera) }])?;
    Ok(sim.render()?.rgb)
}

/// Two `SIDE`-square images side by side.
fn side_by_side(left: &[u8], right: &[u8]) -> Vec<u8> {
    let row = SIDE * 3;
    left.chunks_exact(row).zip(right.chunks_exact(row)).flat_map(|(l, r)| l.iter().chain(r).copied()).collect()
}
