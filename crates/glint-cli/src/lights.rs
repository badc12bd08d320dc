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
    /// Python package): the bundled arm scene (or `--scene`) with no rig and with each of the
    /// seed's five rigs; prints the foreground luminance table beside the seed's MuJoCo and Isaac Sim
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
    /// The scene to measure, an MJCF with a camera named `view` (256 x 256): default the
    /// bundled examples/lights/scene.xml, a Franka-like arm of primitives. Its asset paths
    /// resolve from its own folder; the patched MJCFs in the output folder name that folder
    /// as their mesh and texture directory. `make lights-report-franka` measures a real
    /// Franka's meshes this way (docs/lights.md).
    #[arg(long)]
    scene: Option<PathBuf>,
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

/// The files `glint lights report` writes into `out` (with `bundled`, the bundled scene too).
fn report_files(out: &Path, bundled: bool) -> Vec<PathBuf> {
    let mjcf = out.join("mjcf");
    let mut files = vec![out.join("report.json")];
    if bundled {
        files.push(mjcf.join("scene.xml"));
    }
    files.extend(RIGS.iter().map(|(name, _)| mjcf.join(format!("{name}.xml"))));
    for row in &SEED_TABLE {
        files.extend(["mujoco", "glint", "side_by_side"].map(|kind| out.join(format!("{}_{kind}.png", row.rig))));
    }
    files
}

fn report(args: ReportArgs) -> Result<()> {
    for f in report_files(&args.out, args.scene.is_none()) {
        glint_record::check_output(&f, crate::overwrite(args.force))?;
    }
    let mjcf_dir = args.out.join("mjcf");
    let (scene, asset_dir) = match &args.scene {
        None => {
            let scene = mjcf_dir.join("scene.xml");
            write_output(&scene, SCENE.as_bytes())?;
            (scene, None)
        }
        Some(path) => {
            let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
            let dir = std::fs::canonicalize(dir)
                .with_context(|| format!("the scene's folder {} (from --scene {})", dir.display(), path.display()))?;
            (path.clone(), Some(dir))
        }
    };
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
                let mut xml = lit.to_xml()?;
                if let Some(dir) = &asset_dir {
                    xml = with_asset_dirs(&xml, dir).with_context(|| format!("the patched scene of rig {name}"))?;
                }
                write_output(&path, xml.as_bytes())?;
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
    let scene_name = args
        .scene
        .as_ref()
        .map_or_else(|| "examples/lights/scene.xml (bundled)".to_string(), |p| p.display().to_string());
    let summary = serde_json::json!({ "mujoco_version": version, "scene": scene_name, "camera": CAMERA, "size": SIDE, "rows": rows });
    let json_path = args.out.join("report.json");
    write_output(&json_path, serde_json::to_string_pretty(&summary)?.as_bytes())?;
    if args.json {
        println!("{}", serde_json::to_string(&summary)?);
    } else {
        print_table(&rows, &version, &scene_name, &args.out);
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

fn print_table(rows: &[Row], version: &str, scene: &str, out: &Path) {
    let cell = |e: Option<&Exposure>| match e {
        None => "-".to_string(),
        Some(e) if e.dark.is_nan() => format!("{:.0} / {:.0} / -", e.mean, e.p05),
        Some(e) => format!("{:.0} / {:.0} / {:.1}%", e.mean, e.p05, e.dark * 100.0),
    };
    println!("scene: {scene}");
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

/// `xml` (MuJoCo's writer's output of a scene loaded from a file in `dir`) with its mesh and
/// texture directories made absolute, so that it loads from any folder: the `<compiler>`'s
/// `meshdir` and `texturedir` (else `assetdir`, else the scene's folder itself) joined to `dir`.
fn with_asset_dirs(xml: &str, dir: &Path) -> Result<String> {
    let escape = |p: &Path| -> Result<String> {
        let s = p.to_str().with_context(|| format!("the folder {} is not UTF-8", p.display()))?;
        Ok(s.replace('&', "&amp;").replace('"', "&quot;").replace('<', "&lt;").replace('>', "&gt;"))
    };
    let tag_at = |name: &str| {
        xml.match_indices(name)
            .map(|(i, _)| i)
            .find(|&i| xml[i + name.len()..].starts_with(|c: char| c.is_whitespace() || c == '/' || c == '>'))
    };
    let (start, end, attrs) = match tag_at("<compiler") {
        Some(start) => {
            let end = start + xml[start..].find('>').context("an unterminated <compiler> element")? + 1;
            let body = xml[start + "<compiler".len()..end - 1].trim_end_matches('/');
            (start, end, attributes(body))
        }
        None => {
            let root = tag_at("<mujoco").context("no <mujoco> element")?;
            let end = root + xml[root..].find('>').context("an unterminated <mujoco> element")? + 1;
            (end, end, Vec::new())
        }
    };
    let get = |key: &str| attrs.iter().find(|(k, _)| k == key).map(|(_, v)| unescape(v));
    let resolve = |key: &str| match get(key).or_else(|| get("assetdir")).filter(|v| !v.is_empty()) {
        Some(sub) => dir.join(sub),
        None => dir.to_path_buf(),
    };
    let mut element = String::from("<compiler");
    for (k, v) in attrs.iter().filter(|(k, _)| !["meshdir", "texturedir", "assetdir"].contains(&k.as_str())) {
        element.push_str(&format!(r#" {k}="{v}""#));
    }
    element.push_str(&format!(
        r#" meshdir="{}" texturedir="{}"/>"#,
        escape(&resolve("meshdir"))?,
        escape(&resolve("texturedir"))?
    ));
    if start == end {
        element.insert(0, '\n');
    }
    Ok(format!("{}{element}{}", &xml[..start], &xml[end..]))
}

/// XML text with its five predefined entities replaced.
fn unescape(text: &str) -> String {
    text.replace("&quot;", "\"").replace("&apos;", "'").replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")
}

/// The `key="value"` pairs of an element's attribute text (values as written, still escaped).
fn attributes(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(eq) = rest.find('=') {
        let key = rest[..eq].trim().to_string();
        let after = rest[eq + 1..].trim_start();
        let Some(quote) = after.chars().next().filter(|c| *c == '"' || *c == '\'') else { break };
        let Some(close) = after[1..].find(quote) else { break };
        out.push((key, after[1..1 + close].to_string()));
        rest = &after[close + 2..];
    }
    out
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn asset_dirs_become_absolute() {
        let dir = Path::new("/data/robot & co");
        let xml = "<mujoco model=\"m\">\n  <compiler angle=\"radian\" meshdir=\"meshes\"/>\n</mujoco>";
        let out = with_asset_dirs(xml, dir).unwrap();
        assert!(
            out.contains(
                r#"<compiler angle="radian" meshdir="/data/robot &amp; co/meshes" texturedir="/data/robot &amp; co"/>"#
            ),
            "{out}"
        );
        let out = with_asset_dirs("<mujoco model=\"m\">\n  <compiler assetdir='a'/>\n</mujoco>", dir).unwrap();
        assert!(
            out.contains(r#"<compiler meshdir="/data/robot &amp; co/a" texturedir="/data/robot &amp; co/a"/>"#),
            "{out}"
        );
        let out = with_asset_dirs("<mujoco model=\"m\">\n  <option timestep=\"0.002\"/>\n</mujoco>", dir).unwrap();
        assert!(out.starts_with("<mujoco model=\"m\">\n<compiler meshdir=\"/data/robot &amp; co\""), "{out}");
        assert!(with_asset_dirs("<robot/>", dir).is_err());
    }
}
