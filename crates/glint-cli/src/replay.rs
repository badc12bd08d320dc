//! `glint replay`: lists a recorded session's episodes and sensors, reports per-beam metrics
//! (hit rate, range histogram, per-channel coverage), checks every file against its sidecar
//! (row count, schema, SHA-256) and reports `.partial` files, and with `--png` draws the
//! returns of a tick range.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::Args;
use glint_lidar::{ColourBy, Ramp, ScanConfig, ScanPattern, beam_direction};
use glint_record::{
    Dataset, FileCheck, LidarReader, MaterialRead, Point, SessionReport, Sidecar, check_session, partial_state,
    range_image_png, session_user, top_down_png,
};

/// Arguments of `glint replay`.
#[derive(Args)]
pub struct ReplayArgs {
    /// Session folder (`<output_dir>/session_<YYYYMMDD>_<HHMMSS>/`), or a dataset of shards
    /// (its folder or its `dataset.json`, as `glint.distributed` makes): every shard is
    /// reported and checked (with --episode, the shard that holds it), and every file against
    /// the catalog's SHA-256.
    session: PathBuf,
    /// Draw the selected returns into this folder (created if missing): a top-down view per
    /// file, and a range image for spinning units. Points are drawn in the SENSOR frame
    /// (+X forward, +Z up): the recording stores each beam's range and sensor-frame normal,
    /// not the sensor's world pose, so a moving sensor's ticks are drawn around its origin.
    #[arg(long)]
    png: Option<PathBuf>,
    /// Only this episode (metrics and drawings; the self-check always covers every file).
    #[arg(long)]
    episode: Option<u32>,
    /// Only the sensor with this name (the binding's name, or the `<Name>` of its files).
    #[arg(long)]
    sensor: Option<String>,
    /// Ticks to draw with --png, `A..B` (0-based within the episode, B excluded), `A..`,
    /// `..B` or one tick `A`; default every tick.
    #[arg(long, value_parser = parse_ticks)]
    ticks: Option<(u64, u64)>,
    /// Colour of the top-down view: channel, range, height, azimuth, sample-order, solid,
    /// incidence (the material modes need the return model, which recordings never apply).
    #[arg(long, default_value = "range")]
    colour_by: ColourBy,
    /// Colour ramp: warm-green-blue, grayscale, heat, warm-red-yellow.
    #[arg(long, default_value = "warm-red-yellow")]
    ramp: Ramp,
    /// Side of the top-down image, pixels.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(64..=8192))]
    size: u32,
    /// With --png, replace drawings that exist (else the replay refuses before drawing).
    #[arg(long, requires = "png")]
    force: bool,
    /// Play the episode (--episode, default the first) back over the Foxglove WebSocket
    /// protocol on this port of --live-host (0: a free one; the address is printed), with a
    /// time cursor Foxglove and Lichtblick show: play, pause, seek, speed. Runs until
    /// interrupted (Ctrl-C).
    #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "8765", conflicts_with = "png")]
    live: Option<u16>,
    /// The address the replay listens on (loopback unless told otherwise).
    #[arg(long, value_name = "HOST", default_value = "127.0.0.1", requires = "live")]
    live_host: String,
    /// With --live, start over at the end instead of stopping there.
    #[arg(long = "loop", requires = "live")]
    looped: bool,
}

/// Parses `A..B`, `A..`, `..B` or `A` into a half-open tick range.
impl ReplayArgs {
    /// Whether it draws PNGs (data), rather than only reporting.
    pub fn draws(&self) -> bool {
        self.png.is_some()
    }
}

fn parse_ticks(s: &str) -> Result<(u64, u64), String> {
    let bad = || format!("tick range '{s}' is not A..B, A.., ..B or A (0-based tick numbers, B excluded)");
    let num = |t: &str| t.trim().parse::<u64>().map_err(|_| bad());
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => {
            let a = if a.trim().is_empty() { 0 } else { num(a)? };
            let b = if b.trim().is_empty() { u64::MAX } else { num(b)? };
            (a, b)
        }
        None => {
            let a = num(s)?;
            (a, a.saturating_add(1))
        }
    };
    if a >= b {
        return Err(format!("tick range '{s}' is empty: its end must be above its start"));
    }
    Ok((a, b))
}

/// At most this many points are drawn per file; past it, a tick range is asked for.
const MAX_POINTS: usize = 5_000_000;

/// Bins of the range histogram.
const HISTOGRAM_BINS: usize = 10;

/// Per-beam metrics of one file, and the points to draw.
struct FileStats {
    rows: u64,
    hits: u64,
    ticks: u64,
    histogram: [u64; HISTOGRAM_BINS],
    /// Rows and hits per channel.
    channels: Vec<(u64, u64)>,
    points: Vec<Point>,
    /// Latest range per beam in the drawn ticks (spinning units), for the range image.
    range_image: Vec<f32>,
    truncated: bool,
}

/// Episode index from a file name `lidar-<Name>-NNN.parquet[.partial]`.
fn episode_of(path: &Path) -> Option<u32> {
    let name = path.file_name()?.to_string_lossy().into_owned();
    let stem = name.strip_suffix(".partial").unwrap_or(&name);
    let stem = stem.strip_suffix(".parquet")?;
    stem.rsplit('-').next()?.parse().ok()
}

/// Streams one file, row group by row group, into its metrics and (with `draw`) the points
/// of the chosen ticks.
fn stats(path: &Path, sidecar: &Sidecar, config: &ScanConfig, draw: Option<(u64, u64)>) -> Result<FileStats> {
    let spinning = matches!(config.pattern, ScanPattern::Spinning);
    let channels = if spinning { config.channels as usize } else { 1 };
    let max_range = config.max_range.max(f64::MIN_POSITIVE);
    let mut s = FileStats {
        rows: 0,
        hits: 0,
        ticks: 0,
        histogram: [0; HISTOGRAM_BINS],
        channels: vec![(0, 0); channels],
        points: Vec::new(),
        range_image: if spinning && draw.is_some() { vec![-1.0; config.beam_count()] } else { Vec::new() },
        truncated: false,
    };
    let reader = LidarReader::open(path)?;
    let (mut last_time, mut cycle, mut last_e) = (None::<f64>, 0u64, None::<u32>);
    // Non-repetitive rows split their emission index as the sidecar says.
    let split = sidecar.pattern.emission_split.unwrap_or(1);
    for part in reader {
        let t = part?;
        for r in 0..t.len() {
            if last_time != Some(t.timestamp[r]) {
                if last_time.is_some() {
                    s.ticks += 1;
                }
                last_time = Some(t.timestamp[r]);
            }
            let (bin, channel) = (t.bin[r] as u32, t.channel[r] as u32);
            let k = if spinning { bin * config.channels + channel } else { bin * split + channel };
            if !spinning {
                // Non-repetitive emission runs on through the episode: a new cycle starts
                // where the emission index wraps (a frozen pattern repeats cycle 0).
                if config.rotation_hz > 0.0 && last_e.is_some_and(|e| k <= e) {
                    cycle += 1;
                }
                last_e = Some(k);
            }
            let hit = t.hit[r] == 1;
            let ch = if spinning { (channel as usize).min(channels - 1) } else { 0 };
            s.rows += 1;
            s.channels[ch].0 += 1;
            if hit {
                s.hits += 1;
                s.channels[ch].1 += 1;
                let b = ((t.range[r] as f64 / max_range) * HISTOGRAM_BINS as f64) as usize;
                s.histogram[b.min(HISTOGRAM_BINS - 1)] += 1;
            }
            let Some((a, b)) = draw else { continue };
            if !(a..b).contains(&s.ticks) || !hit || (k as usize) >= config.beam_count() {
                continue;
            }
            if spinning {
                s.range_image[k as usize] = t.range[r];
            }
            if s.points.len() >= MAX_POINTS {
                s.truncated = true;
                continue;
            }
            let dir = beam_direction(config, cycle, k as usize).as_vec3();
            let n = glam::Vec3::from(t.normal[r]);
            let order = s.points.len() as u32;
            s.points.push(Point {
                xyz: (dir * t.range[r]).into(),
                range: t.range[r],
                channel: ch as u32,
                channels: channels as u32,
                azimuth: dir.y.atan2(dir.x),
                order,
                cos_incidence: dir.dot(n).abs(),
                material: MaterialRead::Unconfigured,
            });
        }
    }
    if last_time.is_some() {
        s.ticks += 1;
    }
    if s.rows != sidecar.rows {
        eprintln!(
            "warning: {} holds {} rows and its sidecar says {}; see the self-check below",
            path.display(),
            s.rows,
            sidecar.rows
        );
    }
    Ok(s)
}

/// Prints the metrics of one file.
fn print_stats(s: &FileStats, config: &ScanConfig) {
    let pct = |n: u64, of: u64| if of == 0 { 0.0 } else { 100.0 * n as f64 / of as f64 };
    println!("  {} rows in {} ticks, {} hits ({:.1}% hit rate)", s.rows, s.ticks, s.hits, pct(s.hits, s.rows));
    let width = config.max_range / HISTOGRAM_BINS as f64;
    println!("  range histogram (hits, {HISTOGRAM_BINS} bins to max_range {} m):", config.max_range);
    let most = s.histogram.iter().copied().max().unwrap_or(0).max(1);
    for (i, &n) in s.histogram.iter().enumerate() {
        let bar = "#".repeat(((n * 40).div_ceil(most)) as usize);
        let label = format!("{:.1}–{:.1} m", i as f64 * width, (i + 1) as f64 * width);
        println!("{}", format!("    {label:>16} {n:>10}  {bar}").trim_end());
    }
    if matches!(config.pattern, ScanPattern::Spinning) {
        println!("  channel coverage (share of beams with a hit):");
        for row in s.channels.chunks(8).enumerate() {
            let (first, chunk) = row;
            let cells: Vec<String> = chunk
                .iter()
                .enumerate()
                .map(|(j, &(rows, hits))| format!("ch {:>3} {:>5.1}%", first * 8 + j, pct(hits, rows)))
                .collect();
            println!("    {}", cells.join("   "));
        }
    } else {
        println!(
            "  channel coverage: one channel, {:.1}% of beams with a hit (a non-repetitive pattern: bin and channel are the high and low parts of the emission index, not a laser channel)",
            pct(s.hits, s.rows)
        );
    }
}

/// The drawings of the lidar file `file` in the folder `png`: its top-down view and, for a
/// spinning unit, its range image.
fn drawings(png: &Path, file: &Path, config: &ScanConfig) -> Vec<PathBuf> {
    let stem = file.file_stem().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let mut files = vec![png.join(format!("{stem}-top.png"))];
    if matches!(config.pattern, ScanPattern::Spinning) {
        files.push(png.join(format!("{stem}-range.png")));
    }
    files
}

/// The sidecar of a file the self-check could read, and the file's scan configuration.
fn described(f: &FileCheck) -> Option<(&Sidecar, ScanConfig)> {
    let sidecar = f.sidecar.as_ref()?;
    Some((sidecar, sidecar.sensor.scan))
}

/// Prints the self-check of every file; returns (ok, failed, incomplete). `live`: the session
/// is being recorded, so its `.partial` files are episodes in progress.
fn print_checks(report: &SessionReport, live: bool) -> (usize, usize, usize) {
    println!("self-check (each file against its sidecar: row count, schema, SHA-256):");
    let mut entries: BTreeMap<PathBuf, String> = BTreeMap::new();
    let (mut ok, mut failed) = (0, 0);
    for f in &report.files {
        let text = if f.ok() {
            ok += 1;
            "OK".to_string()
        } else {
            failed += 1;
            f.problems.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
        };
        entries.insert(f.path.clone(), text);
    }
    for p in report.partial.iter().filter(|_| live) {
        entries.insert(p.clone(), "being written (the run is recording this episode now)".into());
    }
    for p in report.partial.iter().filter(|_| !live) {
        let salvage = match partial_state(&report.dir.join(p)) {
            Ok(s) if s.row_groups > 0 => {
                format!("{} complete row group(s), {} rows, can be salvaged by `glint recover`", s.row_groups, s.rows)
            }
            Ok(_) => "no complete row group to salvage".into(),
            Err(e) => format!("its row-group journal cannot be read: {e}"),
        };
        entries.insert(p.clone(), format!("incomplete (the run ended before finishing the episode): {salvage}"));
    }
    for (path, text) in &entries {
        println!("  {}: {text}", path.display());
    }
    for p in &report.problems {
        println!("  session: {p}");
    }
    (ok, failed, report.partial.len())
}

pub fn run(args: ReplayArgs) -> Result<()> {
    if let Some(port) = args.live {
        return play_live(&args, port);
    }
    if args.ticks.is_some() && args.png.is_none() {
        bail!(
            "--ticks chooses the ticks --png draws, and no --png folder was given: add --png FOLDER, or drop --ticks"
        );
    }
    if Dataset::catalog_at(&args.session).is_some() {
        return replay_dataset(&args);
    }
    replay_session(&args, &args.session, true)
}

/// `glint replay` of a catalog: every shard's report (with `--episode`, the one shard that
/// holds it), then the catalog's hashes; fails if any shard or file does.
fn replay_dataset(args: &ReplayArgs) -> Result<()> {
    let dataset = Dataset::open(&args.session)?;
    let sessions = match args.episode {
        Some(e) => vec![dataset.session_of(e)?],
        None => dataset.sessions(),
    };
    println!("dataset {} ({} shards)", dataset.root().display(), dataset.sessions().len());
    let mut failed = Vec::new();
    for session in &sessions {
        if let Err(e) = replay_session(args, session, false) {
            println!("  {e:#}");
            failed.push(session.display().to_string());
        }
    }
    let mismatches = dataset.verify_catalog(args.episode)?;
    println!("catalog check (each listed file against the catalog's SHA-256):");
    for m in &mismatches {
        println!("  {}: {}", m.path.display(), m.reason);
    }
    if mismatches.is_empty() {
        println!("  every file as listed");
    }
    if !failed.is_empty() || !mismatches.is_empty() {
        bail!(
            "the dataset failed its self-check: {} shard(s) failed ({}), {} file(s) differ from the catalog",
            failed.len(),
            failed.join(", "),
            mismatches.len()
        );
    }
    Ok(())
}

/// The report of one session; `whole`: the session is the whole dataset (a catalog has
/// already found the shard that holds `--episode`).
fn replay_session(args: &ReplayArgs, dir: &Path, whole: bool) -> Result<()> {
    // Asked first: a run that ends while the files are checked leaves them finished.
    let recorder = session_user(dir)?.filter(|u| u.doing == "recording");
    let report = check_session(dir)?;
    match &report.meta {
        Some(m) => {
            println!("session {} (glint {}, created {})", dir.display(), m.glint_version, m.created_utc);
            println!(
                "  manifest {}, scene {}, seed {}, {} world(s), lidar ticks at {} Hz, controller: {}",
                m.manifest, m.scene, m.seed, m.worlds, m.lidar_runner_hz, m.controller
            );
            let names: Vec<String> = m.sensors.iter().map(|s| format!("{} '{}'", s.index, s.name)).collect();
            println!("  {} lidar sensor(s): {}", m.sensors.len(), names.join(", "));
        }
        None => println!("session {} (meta/info.json is unreadable; see the self-check below)", dir.display()),
    }
    if let Some(user) = &recorder {
        println!("  still being recorded: {user}; what is listed is what it has finished so far");
    }

    // Which files the metrics and drawings cover.
    if let Some(name) = &args.sensor {
        let known = |s: &Sidecar| s.sensor.name == *name || s.sensor.file_name == *name;
        if !report.files.iter().filter_map(|f| f.sidecar.as_ref()).any(known) {
            let mut names: Vec<String> =
                report.files.iter().filter_map(|f| f.sidecar.as_ref()).map(|s| s.sensor.name.clone()).collect();
            names.sort();
            names.dedup();
            bail!("the session has no recorded sensor '{name}' (it has: {})", names.join(", "));
        }
    }
    if let Some(e) = args.episode.filter(|_| whole) {
        let recorded = report.episodes.iter().any(|r| r.index == e)
            || report.files.iter().any(|f| episode_of(&f.path) == Some(e))
            || report.partial.iter().any(|p| episode_of(p) == Some(e));
        if !recorded {
            let list: Vec<String> = report.episodes.iter().map(|r| r.index.to_string()).collect();
            bail!(
                "the session has no episode {e} (recorded: {})",
                if list.is_empty() { "none".into() } else { list.join(", ") }
            );
        }
    }
    if args.colour_by.needs_material() {
        eprintln!(
            "warning: colour mode '{}' reads the return model, which recordings never apply (drawing solid green)",
            args.colour_by
        );
    }

    println!("episodes:");
    let mut listed = false;
    for e in report.episodes.iter().filter(|e| args.episode.is_none_or(|i| i == e.index)) {
        println!("  episode {}: {:.2} s, {} ticks, {}", e.index, e.length_s, e.ticks, e.status);
        listed = true;
    }
    let mut killed: Vec<u32> = report.partial.iter().filter_map(|p| episode_of(p)).collect();
    killed.sort_unstable();
    killed.dedup();
    for e in killed.into_iter().filter(|&e| args.episode.is_none_or(|i| i == e)) {
        match &recorder {
            Some(_) => println!("  episode {e}: being recorded"),
            None => println!("  episode {e}: incomplete (the run ended before finishing it; see `glint recover`)"),
        }
        listed = true;
    }
    if !listed {
        println!("  none finished");
    }

    let chosen: Vec<(&FileCheck, &Sidecar, ScanConfig)> = report
        .files
        .iter()
        .filter_map(|f| described(f).map(|(sidecar, config)| (f, sidecar, config)))
        .filter(|(_, sidecar, _)| {
            args.episode.is_none_or(|e| e == sidecar.episode)
                && args.sensor.as_ref().is_none_or(|n| *n == sidecar.sensor.name || *n == sidecar.sensor.file_name)
        })
        .collect();
    if let Some(png) = &args.png {
        for (f, _, config) in &chosen {
            for p in drawings(png, &f.path, config) {
                glint_record::check_output(&p, crate::overwrite(args.force))?;
            }
        }
    }
    let draw = args.png.as_ref().map(|_| args.ticks.unwrap_or((0, u64::MAX)));
    let mut drawn = 0;
    for &(f, sidecar, config) in &chosen {
        println!(
            "episode {}, sensor {} '{}' ({}, {}):",
            sidecar.episode,
            sidecar.sensor.index,
            sidecar.sensor.name,
            f.path.display(),
            sidecar.status
        );
        let s = match stats(&dir.join(&f.path), sidecar, &config, draw) {
            Ok(s) => s,
            Err(e) => {
                println!("  cannot read the rows: {e:#}");
                continue;
            }
        };
        print_stats(&s, &config);
        let Some(png) = &args.png else { continue };
        let files = drawings(png, &f.path, &config);
        if s.truncated {
            eprintln!(
                "warning: {} has more than {MAX_POINTS} returns in the chosen ticks; drawing the first {MAX_POINTS} (choose fewer with --ticks)",
                f.path.display()
            );
        }
        top_down_png(&s.points, args.colour_by, args.ramp, args.size, &files[0])?;
        println!("  wrote {} ({} points, sensor frame)", files[0].display(), s.points.len());
        if let Some(image) = files.get(1) {
            let max = config.max_range as f32;
            range_image_png(&s.range_image, config.channels, config.azimuth_bins, max, args.ramp, image)?;
            println!("  wrote {}", image.display());
        }
        drawn += 1;
    }
    if args.png.is_some() && drawn == 0 {
        eprintln!("warning: no finished file matches the chosen episode and sensor; nothing was drawn");
    }

    let (ok, failed, incomplete) = print_checks(&report, recorder.is_some());
    let files = ok + failed + incomplete;
    if recorder.is_some() {
        println!("{files} files: {ok} OK, {failed} failed, {incomplete} being written");
        if failed > 0 || !report.problems.is_empty() {
            bail!(
                "the session failed its self-check: {failed} finished file(s) failed, {} session problem(s)",
                report.problems.len()
            );
        }
        return Ok(());
    }
    println!("{files} files: {ok} OK, {failed} failed, {incomplete} incomplete");
    if !report.ok() {
        let mut why = Vec::new();
        if failed > 0 {
            why.push(format!("{failed} file(s) failed"));
        }
        if incomplete > 0 {
            why.push(format!(
                "{incomplete} file(s) are incomplete (run `glint recover {}` to salvage them)",
                dir.display()
            ));
        }
        if !report.problems.is_empty() {
            why.push(format!("{} session problem(s)", report.problems.len()));
        }
        bail!("the session failed its self-check: {}", why.join(", "));
    }
    Ok(())
}

/// `glint replay SESSION --live`: one episode over the Foxglove WebSocket protocol, until a
/// stopping signal.
fn play_live(args: &ReplayArgs, port: u16) -> Result<()> {
    let stop = crate::signals::Stop::install()?;
    let dataset = Dataset::open(&args.session)?;
    let episode = match args.episode {
        Some(n) => n,
        None => match dataset.episodes()?.first() {
            Some(e) => e.record.index,
            None => bail!("'{}' lists no finished episode to play", args.session.display()),
        },
    };
    let session = dataset.session_of(episode)?;
    let _reading = glint_record::SessionLock::shared(&session, "replay")?;
    let replay = glint_interop::Replay::load(&session, episode)
        .map_err(|e| anyhow::Error::from(e).context(format!("cannot play '{}'", session.display())))?;
    let (start, end) = replay.span();
    let flag = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            // Ends with the replay, or ends it at a stopping signal.
            while !stop.requested() && !flag.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            flag.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        let result = replay.serve((&args.live_host, port), args.looped, &flag, |port| {
            // The address a viewer connects to, on a line of its own (tests wait for it).
            println!("replay view: ws://{}:{port}", args.live_host);
            println!(
                "episode {episode}: {:.3} s of simulated time; playback starts when a viewer connects; Ctrl-C stops",
                (end - start) as f64 * 1e-9
            );
        });
        flag.store(true, std::sync::atomic::Ordering::Relaxed);
        result
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tick_ranges() {
        assert_eq!(parse_ticks("2..5"), Ok((2, 5)));
        assert_eq!(parse_ticks("3.."), Ok((3, u64::MAX)));
        assert_eq!(parse_ticks("..4"), Ok((0, 4)));
        assert_eq!(parse_ticks("7"), Ok((7, 8)));
        assert!(parse_ticks("5..2").unwrap_err().contains("empty"));
        assert!(parse_ticks("a..b").unwrap_err().contains("A..B"));
    }

    #[test]
    fn episodes_from_file_names() {
        assert_eq!(episode_of(Path::new("data/chunk-000/lidar-front-007.parquet")), Some(7));
        assert_eq!(episode_of(Path::new("data/chunk-001/lidar-a-b-1234.parquet.partial")), Some(1234));
        assert_eq!(episode_of(Path::new("lidar-front-000.json")), None);
    }
}
