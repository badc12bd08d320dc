//! `glint points`: writes the point cloud of one sensor's episode of a recording (or of an
//! exported variant of it) as PLY, PCD or KITTI `.bin`, in the world or the sensor frame
//! (`glint_record::recorded_points` does the work).

use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};
use glint_record::{
    Dataset, OutputFile, PointFormat, PointFrame, lidar_file, recorded_points, session_user, write_points,
};

/// Arguments of `glint points`.
#[derive(Args)]
pub struct PointsArgs {
    /// Recorded session folder (`session_<date>_<time>/`, as `glint run` makes), or a
    /// dataset of shards (its folder or its `dataset.json`, as `glint.distributed` makes).
    session: PathBuf,
    /// Episode index.
    #[arg(long, default_value_t = 0)]
    episode: u32,
    /// Sensor, by name or index (default: the first one recorded).
    #[arg(long)]
    sensor: Option<String>,
    /// Output format: ply (every per-point field), pcd (binary, every field) or kitti (N × 4
    /// float32: x, y, z, intensity).
    #[arg(long, value_enum, default_value_t = Format::Ply)]
    format: Format,
    /// Frame of the points: world (through the pose table) or sensor.
    #[arg(long, value_enum, default_value_t = Frame::World)]
    frame: Frame,
    /// An exported variant (its folder name under SESSION/variants/, or its path): points at
    /// the measured ranges, second echoes included, with their intensity. A dataset's variant
    /// holds one variant per shard (`glint export DATASET --bake NAME`).
    #[arg(long, value_name = "NAME")]
    variant: Option<String>,
    /// Output file, `-` for standard output (default:
    /// `SESSION/points/lidar-<Name>-NNN[-<variant>].<ply|pcd|bin>`, a dataset's own
    /// `points/` for a dataset). A device or a pipe
    /// (`/dev/null`, a named pipe) is written into; an existing file only with --force.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Replace the output file if it exists.
    #[arg(long)]
    force: bool,
}

impl PointsArgs {
    /// Whether the points go to standard output (a report, ended quietly by a closed pipe).
    pub fn to_stdout(&self) -> bool {
        self.out.as_ref().is_some_and(|o| o.as_os_str() == "-")
    }
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Ply,
    Pcd,
    Kitti,
}

#[derive(Clone, Copy, ValueEnum)]
enum Frame {
    World,
    Sensor,
}

pub fn run(args: PointsArgs) -> Result<()> {
    let dataset = Dataset::open(&args.session)?;
    let session = dataset.session_of(args.episode)?;
    let meta = dataset.meta();
    let sensor = match &args.sensor {
        None => meta.sensors.first(),
        Some(s) => meta.sensors.iter().find(|d| &d.name == s || &d.file_name == s || d.index.to_string() == *s),
    };
    let Some(sensor) = sensor else {
        let names: Vec<String> = meta.sensors.iter().map(|d| format!("{} '{}'", d.index, d.name)).collect();
        bail!(
            "the session records no sensor {}: it has {}",
            args.sensor.as_deref().map_or_else(|| "at all".into(), |s| format!("'{s}'")),
            if names.is_empty() { "none".into() } else { names.join(", ") }
        );
    };
    let rel = lidar_file(args.episode, &sensor.file_name);
    let lidar = session.join(&rel);
    if !lidar.exists() {
        let partial = PathBuf::from(format!("{}.partial", lidar.display()));
        if partial.exists()
            && let Some(user) = session_user(&session)?
        {
            bail!(
                "episode {} of sensor '{}' is still being written ('{}'): {user}; ask again once the episode ends",
                args.episode,
                sensor.name,
                partial.display()
            );
        }
        if partial.exists() {
            bail!(
                "episode {} of sensor '{}' was cut short ('{}' is still .partial): run `glint recover {}` first",
                args.episode,
                sensor.name,
                partial.display(),
                session.display()
            );
        }
        bail!(
            "the session has no episode {} of sensor '{}' ('{}' does not exist)",
            args.episode,
            sensor.name,
            lidar.display()
        );
    }
    let variant = args.variant.as_ref().map(|v| {
        let dir = PathBuf::from(v);
        let dir = if dir.is_dir() { dir } else { dataset.root().join("variants").join(v) };
        dataset.part_of(&dir, &session).join(&rel)
    });
    if let Some(v) = &variant
        && !v.exists()
    {
        bail!(
            "the variant has no file '{}': export it with `glint export {} --bake NAME`, or check --variant",
            v.display(),
            args.session.display()
        );
    }
    let frame = match args.frame {
        Frame::World => PointFrame::World,
        Frame::Sensor => PointFrame::Sensor,
    };
    let (format, ext) = match args.format {
        Format::Ply => (PointFormat::Ply, "ply"),
        Format::Pcd => (PointFormat::Pcd, "pcd"),
        Format::Kitti => (PointFormat::Kitti, "bin"),
    };
    let cloud = recorded_points(&lidar, variant.as_deref(), frame)?;
    let frame_name = if frame == PointFrame::World { "world" } else { "sensor" };
    let comment = format!("glint points of {} ({frame_name} frame, metres)", rel.display());
    let out = args.out.clone().unwrap_or_else(|| {
        let stem = rel.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
        let suffix = args.variant.as_ref().map_or_else(String::new, |v| format!("-{}", sanitise(v)));
        dataset.root().join("points").join(format!("{stem}{suffix}.{ext}"))
    });
    if out.as_os_str() == "-" {
        let mut stdout = std::io::stdout().lock();
        return crate::output::quiet_on_closed_pipe(write_points(&cloud, format, &comment, &mut stdout));
    }
    let mut file = OutputFile::create(&out, crate::overwrite(args.force))?;
    write_points(&cloud, format, &comment, &mut file).map_err(|e| crate::output::write_error(&out, e))?;
    file.finish()?;
    println!("{} points: {}", cloud.len(), out.display());
    Ok(())
}

/// `name` safe for a file name (a variant given by path keeps its last part).
fn sanitise(name: &str) -> String {
    let last = std::path::Path::new(name).file_name().map_or_else(|| name.into(), |n| n.to_string_lossy().into_owned());
    last.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' || c == '_' { c } else { '_' }).collect()
}
