//! Material-informed variants of a recorded session (`spec/recording.md`, "Replay and
//! export"): every lidar file's clean geometry re-processed through the return model under a
//! material bake, written beside an `augmentation.json` that traces the variant to its sources.
//!
//! The rows go through glint-lidar's [`Reprocessor`], tick by tick of the pose table: the live
//! sensor's pattern clock, beam directions and noise keys, with the model's continuations
//! answered from the recorded secondary columns. This module reads, checks and writes files.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, Float64Array, Int32Array, RecordBatch, UInt16Array};
use arrow_schema::{DataType, SchemaRef};
use glam::DMat3;
use glint_lidar::{
    BakeStatus, BeamReturn, MaterialLookup, PhysicalModel, RECORDED_CONTINUATIONS, RecordedHit, Reprocessor,
    ReturnParams, Runner, ScanConfig, Spelled,
};
use parquet::arrow::ArrowWriter;
use serde::{Deserialize, Serialize};

use crate::RecordError;
use crate::files::{HashWriter, zstd_properties};
use crate::lock::{SessionLock, hold_output};
use crate::poses::{PoseReader, PoseTable, pose_path};
use crate::reader::{LidarReader, LidarTable, SecondaryColumns, open_table, values};
use crate::session::write_json;
use crate::sidecar::{ColumnDescription, SessionMeta, Sidecar, read_session_meta};
use crate::verify::{episode_lines, verified_sidecar};

/// The provenance file in a variant folder.
pub const AUGMENTATION_FILE: &str = "augmentation.json";

/// Version of the variant layout and of `augmentation.json`.
pub const VARIANT_FORMAT_VERSION: u32 = 1;

/// What a variant is computed with.
#[derive(Clone, Copy)]
pub struct ExportSettings<'a> {
    /// The return model's calibration.
    pub params: ReturnParams,
    /// The run seed its randomness derives from: each episode is keyed with
    /// [`glint_lidar::episode_seed`] of this seed and its index. `None` (the default a user
    /// wants): each episode's own recorded seed, as the live sensor drew it.
    pub seed: Option<u64>,
    /// Where hits find their NIR material (a loaded [`glint_lidar::Bake`]).
    pub materials: &'a dyn MaterialLookup,
    /// Go on past a missing or damaged source file (or one a killed run left `.partial`),
    /// listing it in [`Augmentation::skipped`]; else it is an error naming it.
    pub skip_damaged: bool,
    /// The physical return model's terms, or `None` for the seed's model.
    pub physics: Option<PhysicalModel>,
}

fn seed_model() -> String {
    "seed".into()
}

impl std::fmt::Debug for ExportSettings<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportSettings").field("params", &self.params).field("seed", &self.seed).finish_non_exhaustive()
    }
}

/// The bake a variant was made with.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BakeRecord {
    /// Its name (`MaterialBakes/<name>.lvxb`).
    pub name: String,
    /// Its file.
    pub path: String,
    /// The fingerprint of the materials it was baked from, 16 hex digits.
    pub material_fingerprint: String,
    /// Its full status against the scene's current materials.
    pub status: BakeStatus,
}

/// What the caller knows of a variant's inputs beyond the session: the manifest, the preset's
/// name and the bake.
#[derive(Clone, Debug, PartialEq)]
pub struct Provenance {
    /// The scene manifest whose materials were checked against the bake.
    pub manifest: String,
    /// The return preset's name, or `manifest` for the manifest's `[return_model]`.
    pub return_preset: String,
    /// The bake.
    pub bake: BakeRecord,
}

/// One exported file: its source, the source's pose table and the variant, with hashes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct VariantFile {
    /// Episode index.
    pub episode: u32,
    /// Sensor index.
    pub sensor: usize,
    /// Sensor name.
    pub sensor_name: String,
    /// The episode seed the rows' randomness was keyed with.
    pub seed: u64,
    /// The source lidar file, relative to the session folder.
    pub source: String,
    /// Its SHA-256 (equal to its sidecar's).
    pub source_sha256: String,
    /// Its pose table, relative to the session folder.
    pub poses: String,
    /// The pose table's SHA-256.
    pub poses_sha256: String,
    /// The variant file, relative to the variant folder.
    pub variant: String,
    /// The variant file's SHA-256.
    pub variant_sha256: String,
    /// Rows (one per recorded row).
    pub rows: u64,
    /// Rows with a clean hit.
    pub clean_hits: u64,
    /// Clean hits whose material the bake does not know (no echo).
    pub holes: u64,
    /// Rows with a primary echo.
    pub echoes: u64,
    /// Rows with a second echo.
    pub second_echoes: u64,
    /// Rows whose first surface sends the beam on (glass, a gap, water, a mirror) while the
    /// recording captured no secondary geometry of that kind: nothing behind them, no
    /// phantom.
    #[serde(default)]
    pub uncaptured: u64,
}

/// `augmentation.json`: where a variant came from and how it was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Augmentation {
    /// Version of the variant layout and of this file (1).
    pub format_version: u32,
    /// The glint that made it.
    pub glint_version: String,
    /// The source session folder (absolute).
    pub source_session: String,
    /// The scene manifest the bake was checked against.
    pub manifest: String,
    /// The return preset's name, or `manifest` for the manifest's `[return_model]`.
    pub return_preset: String,
    /// All seventeen return parameters by the seed's names.
    pub return_params: ReturnParams,
    /// The return model that ran: `seed` or `physical` (variants made before glint had a
    /// physical model read as `seed`).
    #[serde(default = "seed_model")]
    pub return_model: String,
    /// The physical model's terms, when it ran.
    #[serde(default)]
    pub physical_model: Option<PhysicalModel>,
    /// The run seed the episodes' seeds were derived from, or `null`: each episode's recorded
    /// seed (every file lists the seed it was keyed with).
    pub seed: Option<u64>,
    /// The bake.
    pub bake: BakeRecord,
    /// Whether the bake was stale (exported anyway, as asked).
    pub stale: bool,
    /// How the model's continuations were answered, in words.
    pub continuations: String,
    /// The variant files' columns.
    pub columns: Vec<ColumnDescription>,
    /// Every exported file.
    pub files: Vec<VariantFile>,
    /// Source files not exported, with why (missing, damaged, or left `.partial` by a killed
    /// run), when the export was told to skip them.
    pub skipped: Vec<String>,
}

/// The variant file's columns: (name, type, unit, meaning).
const VARIANT_COLUMNS: [(&str, DataType, &str, &str); 8] = [
    ("timestamp", DataType::Float64, "s", "Seconds since the start of the episode, as recorded"),
    ("bin", DataType::UInt16, "", "As recorded: azimuth bin, or the high part of the emission index (non-repetitive)"),
    ("channel", DataType::UInt16, "", "As recorded: vertical channel, or the low part of the emission index"),
    ("range", DataType::Float32, "m", "Measured range of the primary (strongest) echo, noise included; -1 = no echo"),
    ("intensity", DataType::Float32, "", "Intensity of the primary echo; -1 = no echo"),
    (
        "reflectivity_calibrated",
        DataType::Float32,
        "",
        "Calibrated reflectivity (the strength S, 1 = a perfect matte surface head-on) of the primary echo; -1 = no echo",
    ),
    ("secondary_range", DataType::Float32, "m", "Measured range of the second echo; -1 = none, or a single-echo unit"),
    (
        "geom_id",
        DataType::Int32,
        "",
        "MuJoCo geom of the primary echo (a phantom reports the surface it folded onto); -1 = no echo",
    ),
];

/// The variant file's column descriptions.
pub fn variant_columns() -> Vec<ColumnDescription> {
    crate::schema::describe(&VARIANT_COLUMNS)
}

fn variant_schema() -> SchemaRef {
    crate::schema::schema_of(&VARIANT_COLUMNS)
}

/// Walks a pose table alongside the lidar rows, tick by tick.
struct PoseCursor {
    path: PathBuf,
    reader: PoseReader,
    table: PoseTable,
    /// Row of `table` of the current tick (`None` before the first).
    i: Option<usize>,
}

impl PoseCursor {
    fn open(path: &Path) -> Result<PoseCursor, RecordError> {
        let reader = PoseReader::open(path)?;
        Ok(PoseCursor { path: path.to_path_buf(), reader, table: PoseTable::default(), i: None })
    }

    /// Moves the reprocessor on, tick by tick of the pose table (empty ticks included), to the
    /// tick stamped `t` (never backwards).
    fn seek(&mut self, t: f64, reprocessor: &mut Reprocessor) -> Result<(), RecordError> {
        while self.i.is_none_or(|i| self.table.timestamp[i] != t) {
            let mut next = self.i.map_or(0, |i| i + 1);
            while next >= self.table.len() {
                self.table = self.reader.next().ok_or_else(|| RecordError::Inconsistent {
                    path: self.path.clone(),
                    reason: format!(
                        "it has no pose for the tick at t = {t} s that the lidar file records (its ticks must follow the lidar file's, in order)"
                    ),
                })??;
                next = 0;
            }
            self.i = Some(next);
            reprocessor.next_tick(self.table.position[next], DMat3::from_quat(self.table.rotation[next]));
        }
        Ok(())
    }
}

/// The variant file of one source file, being written (`.partial` until it is complete).
struct VariantWriter {
    partial: PathBuf,
    path: PathBuf,
    writer: ArrowWriter<HashWriter>,
    schema: SchemaRef,
}

/// The variant columns of one batch of rows.
#[derive(Default)]
struct VariantRows {
    range: Vec<f32>,
    intensity: Vec<f32>,
    reflectivity: Vec<f32>,
    secondary: Vec<f32>,
    geom: Vec<i32>,
}

impl VariantRows {
    fn push(&mut self, r: &BeamReturn) {
        self.range.push(r.range);
        self.intensity.push(r.intensity);
        self.reflectivity.push(r.reflectivity);
        self.secondary.push(r.secondary_range);
        self.geom.push(r.geomid);
    }
}

impl VariantWriter {
    fn create(path: PathBuf) -> Result<VariantWriter, RecordError> {
        let mut partial = path.clone().into_os_string();
        partial.push(".partial");
        let partial = PathBuf::from(partial);
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(|e| RecordError::io("create", dir, e))?;
        }
        let file = File::create_new(&partial).map_err(|e| RecordError::io("create", &partial, e))?;
        // Nothing in the file depends on when or where it was written: the same inputs give
        // the same bytes.
        let props = zstd_properties().build();
        let schema = variant_schema();
        let writer = ArrowWriter::try_new(HashWriter::new(file), schema.clone(), Some(props))
            .map_err(|e| RecordError::parquet(&partial, e))?;
        Ok(VariantWriter { partial, path, writer, schema })
    }

    fn write(&mut self, src: LidarTable, rows: VariantRows) -> Result<(), RecordError> {
        let cols: Vec<ArrayRef> = vec![
            Arc::new(Float64Array::from(src.timestamp)),
            Arc::new(UInt16Array::from(src.bin)),
            Arc::new(UInt16Array::from(src.channel)),
            Arc::new(Float32Array::from(rows.range)),
            Arc::new(Float32Array::from(rows.intensity)),
            Arc::new(Float32Array::from(rows.reflectivity)),
            Arc::new(Float32Array::from(rows.secondary)),
            Arc::new(Int32Array::from(rows.geom)),
        ];
        let batch =
            RecordBatch::try_new(self.schema.clone(), cols).map_err(|e| RecordError::parquet(&self.partial, e))?;
        self.writer.write(&batch).map_err(|e| self.failed(e))?;
        self.writer.flush().map_err(|e| self.failed(e))
    }

    /// A failed write of the variant file, as the user should read it: a full disk as such,
    /// with what becomes of the variant.
    fn failed(&self, e: impl std::fmt::Display) -> RecordError {
        let reason = match self.writer.inner().failed {
            Some(std::io::ErrorKind::StorageFull) => "no space left on device".to_string(),
            Some(_) | None => e.to_string(),
        };
        RecordError::Output {
            path: self.partial.clone(),
            reason: format!("{reason}; the unfinished variant is removed (free space and export again)"),
        }
    }

    /// Finishes the file, renames it into place and returns its SHA-256.
    fn finish(mut self) -> Result<String, RecordError> {
        self.writer.finish().map_err(|e| self.failed(e))?;
        let sha256 = self.writer.inner_mut().finish(&self.partial).map_err(|e| self.failed(e))?;
        std::fs::rename(&self.partial, &self.path).map_err(|e| RecordError::io("rename", &self.partial, e))?;
        Ok(sha256)
    }
}

/// One source file's rows through the model.
struct FileJob<'a> {
    source: &'a Path,
    config: ScanConfig,
    /// The lidar ticks the file was recorded on.
    runner: Runner,
    sensor: u64,
    /// The episode's seed.
    seed: u64,
    settings: &'a ExportSettings<'a>,
}

/// Counts of one file.
#[derive(Default)]
struct Counts {
    rows: u64,
    clean_hits: u64,
    holes: u64,
    echoes: u64,
    second_echoes: u64,
    uncaptured: u64,
}

impl FileJob<'_> {
    fn run(&self, reader: LidarReader, poses: &mut PoseCursor, out: &mut VariantWriter) -> Result<Counts, RecordError> {
        let c = &self.config;
        let calibration = (self.settings.params, self.seed);
        let mut reprocessor = Reprocessor::new(calibration, self.settings.materials, (*c, self.runner), self.sensor)
            .with_physics(self.settings.physics);
        let split = c.channels.max(1) as u64;
        let mut counts = Counts::default();
        for part in reader {
            let table = part?;
            let mut rows = VariantRows::default();
            for r in 0..table.len() {
                let t = table.timestamp[r];
                poses.seek(t, &mut reprocessor)?;
                let (bin, channel) = (table.bin[r] as u64, table.channel[r] as u64);
                let inconsistent = |reason: String| RecordError::Inconsistent {
                    path: self.source.to_path_buf(),
                    reason: format!("row at t = {t} s has bin {bin} and channel {channel}: {reason}"),
                };
                if channel >= split {
                    return Err(inconsistent(format!("channels run below {split}")));
                }
                let first = RecordedHit { range: table.range[r], geom_id: table.geom_id[r], normal: table.normal[r] };
                let secondary = |cols: Option<&SecondaryColumns>| {
                    cols.map(|s| RecordedHit { range: s.range[r], geom_id: s.geom_id[r], normal: s.normal[r] })
                };
                let (pass, reflected) = (secondary(table.pass_through.as_ref()), secondary(table.reflected.as_ref()));
                let beam = reprocessor
                    .beam(bin * split + channel, first, pass, reflected)
                    .map_err(|e| inconsistent(e.to_string()))?;
                counts.clean_hits += u64::from(first.geom_id >= 0 && first.range >= 0.0);
                counts.holes += u64::from(beam.hole);
                counts.echoes += u64::from(beam.report.range >= 0.0);
                counts.second_echoes += u64::from(beam.report.secondary_range >= 0.0);
                counts.uncaptured += u64::from(beam.uncaptured);
                rows.push(&beam.report);
            }
            counts.rows += table.len() as u64;
            out.write(table, rows)?;
        }
        Ok(counts)
    }
}

/// Whether `e` is about a source file itself (missing, changed, unreadable) rather than the
/// export's own output.
fn damaged(e: &RecordError) -> bool {
    matches!(
        e,
        RecordError::Changed { .. }
            | RecordError::NoPoses { .. }
            | RecordError::Parquet { .. }
            | RecordError::Schema { .. }
            | RecordError::Inconsistent { .. }
            | RecordError::Json { .. }
    ) || matches!(e, RecordError::Io { action, .. } if *action == "open" || *action == "read")
}

/// `path` relative to `base`, with `/` separators.
fn relative(path: &Path, base: &Path) -> String {
    path.strip_prefix(base).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

/// The finished lidar files of a session (`data/chunk-*/lidar-*.parquet`, pose tables
/// excluded) in path order, and the `.partial` ones.
fn session_files(session: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), RecordError> {
    let data = session.join("data");
    let list = |dir: &Path| -> Result<Vec<PathBuf>, RecordError> {
        let rd = std::fs::read_dir(dir).map_err(|e| RecordError::io("list", dir, e))?;
        let mut out = Vec::new();
        for e in rd {
            out.push(e.map_err(|e| RecordError::io("list", dir, e))?.path());
        }
        out.sort();
        Ok(out)
    };
    let (mut files, mut partial) = (Vec::new(), Vec::new());
    for chunk in list(&data)? {
        let chunk_name = chunk.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        if !chunk.is_dir() || !chunk_name.starts_with("chunk-") {
            continue;
        }
        for path in list(&chunk)? {
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            if !name.starts_with("lidar-") || name.contains(".poses.") || name.contains(".beams.") {
                continue;
            }
            if name.ends_with(".parquet") {
                files.push(path);
            } else if name.ends_with(".parquet.partial") {
                partial.push(path);
            }
        }
    }
    Ok((files, partial))
}

/// Re-processes every finished lidar file of the session at `session` through the return
/// model under `settings`, into the new folder `out` (an error if it exists: a variant is never
/// overwritten): `out/data/chunk-NNN/lidar-<Name>-NNN.parquet` per source file, and
/// `out/augmentation.json`. Each source file and pose table is checked against its sidecar's
/// SHA-256 first. Rows stream one row group at a time, so memory stays flat however long the
/// episodes. On any error the half-written folder is removed. The same inputs and seed give
/// byte-identical variant files.
pub fn export_variant(
    session: &Path,
    out: &Path,
    settings: &ExportSettings,
    provenance: Provenance,
) -> Result<Augmentation, RecordError> {
    if let Some(p) = settings.physics.filter(|p| p.footprint_rays > 1) {
        return Err(RecordError::Setting(format!(
            "footprint_rays = {} casts sub-rays around each beam, and a recording keeps each beam's own surfaces \
             only: export with footprint_rays = 1, or run the scene with footprints live",
            p.footprint_rays
        )));
    }
    let meta = read_session_meta(session)?;
    let _reading = SessionLock::shared(session, "export")?;
    let (mut files, partial) = session_files(session)?;
    let missing = listed_but_missing(session)?;
    if !settings.skip_damaged {
        if let Some(path) = missing.first() {
            return Err(RecordError::Damaged {
                path: path.clone(),
                reason: "meta/episodes.jsonl lists it, and it does not exist".into(),
            });
        }
        if let Some(path) = partial.first() {
            return Err(RecordError::Damaged {
                path: path.clone(),
                reason: "a killed run left it unfinished (run `glint recover` on the session first)".into(),
            });
        }
    }
    files.retain(|f| !missing.contains(f));
    if files.is_empty() {
        return Err(RecordError::NotASession {
            path: session.to_path_buf(),
            reason: "it has no finished lidar files (data/chunk-*/lidar-*.parquet) to export".into(),
        });
    }
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| RecordError::io("create", parent, e))?;
    }
    let _writing = hold_output(out)?;
    if out.exists() {
        return Err(RecordError::VariantExists { path: out.to_path_buf() });
    }
    // Written aside and renamed when whole, so an interrupted export leaves nothing in the
    // way of the next (which clears what an earlier interrupted one left aside: only the
    // holder of the output's lock touches it).
    let aside = PathBuf::from(format!("{}.partial", out.display()));
    if aside.exists() {
        std::fs::remove_dir_all(&aside).map_err(|e| RecordError::io("remove the unfinished", &aside, e))?;
    }
    std::fs::create_dir(&aside).map_err(|e| RecordError::io("create", &aside, e))?;
    let skipped: Vec<(PathBuf, String)> = missing
        .iter()
        .map(|p| (p.clone(), "missing (meta/episodes.jsonl lists it)".to_string()))
        .chain(partial.iter().map(|p| (p.clone(), "incomplete (the run was killed)".to_string())))
        .collect();
    let result = export_into(session, &aside, settings, provenance, &meta, (&files, skipped));
    match result {
        Ok(augmentation) => {
            std::fs::rename(&aside, out).map_err(|e| RecordError::io("rename", &aside, e))?;
            Ok(augmentation)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&aside);
            Err(e)
        }
    }
}

/// The lidar files `meta/episodes.jsonl` lists that are not in the session.
fn listed_but_missing(session: &Path) -> Result<Vec<PathBuf>, RecordError> {
    let log = session.join("meta").join("episodes.jsonl");
    let text = std::fs::read_to_string(&log).map_err(|e| RecordError::io("read", &log, e))?;
    // A line that does not read is the self-check's to report (`glint replay`).
    let listed = episode_lines(&text).filter_map(|(_, e)| e.ok()).flat_map(|e| e.files);
    Ok(listed.map(|f| session.join(f)).filter(|p| !p.exists()).collect())
}

fn export_into(
    session: &Path,
    out: &Path,
    settings: &ExportSettings,
    provenance: Provenance,
    meta: &SessionMeta,
    (files, mut skipped): (&[PathBuf], Vec<(PathBuf, String)>),
) -> Result<Augmentation, RecordError> {
    let mut exported = Vec::with_capacity(files.len());
    for source in files {
        match export_file(session, source, out, settings, meta) {
            Ok(file) => exported.push(file),
            Err(e) if settings.skip_damaged && damaged(&e) => skipped.push((source.clone(), e.to_string())),
            Err(e) => return Err(e),
        }
    }
    let stale = provenance.bake.status.stale;
    let absolute = std::fs::canonicalize(session).unwrap_or_else(|_| session.to_path_buf());
    let augmentation = Augmentation {
        format_version: VARIANT_FORMAT_VERSION,
        glint_version: env!("CARGO_PKG_VERSION").into(),
        source_session: absolute.to_string_lossy().into_owned(),
        manifest: provenance.manifest,
        return_preset: provenance.return_preset,
        return_params: settings.params,
        return_model: if settings.physics.is_some() { "physical" } else { "seed" }.into(),
        physical_model: settings.physics,
        seed: settings.seed,
        bake: provenance.bake,
        stale,
        continuations: RECORDED_CONTINUATIONS.into(),
        columns: variant_columns(),
        files: exported,
        skipped: skipped.iter().map(|(p, why)| format!("{}: {why}", relative(p, session))).collect(),
    };
    write_json(&out.join(AUGMENTATION_FILE), &augmentation).map_err(|e| match e {
        RecordError::NoSpace { path, .. } => RecordError::Output {
            path,
            reason: "no space left on device; the unfinished variant is removed (free space and export again)".into(),
        },
        e => e,
    })?;
    Ok(augmentation)
}

fn export_file(
    session: &Path,
    source: &Path,
    out: &Path,
    settings: &ExportSettings,
    meta: &SessionMeta,
) -> Result<VariantFile, RecordError> {
    let sidecar = verified_sidecar(source)?;
    let config = sidecar.sensor.scan;
    let changed = |reason: String| RecordError::Changed { path: source.to_path_buf(), reason };
    let entry = sidecar.poses.as_ref().ok_or_else(|| RecordError::NoPoses { path: source.to_path_buf() })?;
    let (source_sha256, poses_sha256) = (sidecar.sha256.clone(), entry.sha256.clone());
    let poses = pose_path(source);
    let reader = LidarReader::open(source)?;
    if reader.capture() != sidecar.sensor.secondary_capture || reader.rows() != sidecar.rows {
        return Err(changed(format!(
            "it has {} rows with {} columns, and the sidecar says {} rows recorded with secondary_capture '{}'",
            reader.rows(),
            reader.capture().name(),
            sidecar.rows,
            sidecar.sensor.secondary_capture
        )));
    }
    let rel = relative(source, session);
    let target = out.join(&rel);
    let mut writer = VariantWriter::create(target.clone())?;
    let mut cursor = PoseCursor::open(&poses)?;
    let job = FileJob {
        source,
        config,
        runner: Runner::nearest(meta.physics_timestep, meta.lidar_runner_hz),
        sensor: sidecar.sensor.index as u64,
        seed: episode_seed_of(&sidecar, settings.seed, source)?,
        settings,
    };
    let counts = job.run(reader, &mut cursor, &mut writer)?;
    let variant_sha256 = writer.finish()?;
    Ok(VariantFile {
        episode: sidecar.episode,
        sensor: sidecar.sensor.index,
        sensor_name: sidecar.sensor.name.clone(),
        seed: job.seed,
        source: rel.clone(),
        source_sha256,
        poses: relative(&poses, session),
        poses_sha256,
        variant: rel,
        variant_sha256,
        rows: counts.rows,
        clean_hits: counts.clean_hits,
        holes: counts.holes,
        echoes: counts.echoes,
        second_echoes: counts.second_echoes,
        uncaptured: counts.uncaptured,
    })
}

/// The seed episode `sidecar` is re-processed with: derived from `run_seed` when given, else
/// the one it was recorded with.
fn episode_seed_of(sidecar: &Sidecar, run_seed: Option<u64>, source: &Path) -> Result<u64, RecordError> {
    match (run_seed, sidecar.episode_seed) {
        (Some(run), _) => Ok(glint_lidar::episode_seed(run, sidecar.episode as u64)),
        (None, Some(seed)) => Ok(seed),
        (None, None) => Err(RecordError::Setting(format!(
            "'{}' was recorded before episodes had their own seeds: give the run seed to derive them from (--seed N)",
            source.display()
        ))),
    }
}

/// Rows of a variant file, column by column.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct VariantTable {
    /// Seconds since the episode start, as recorded.
    pub timestamp: Vec<f64>,
    /// As recorded.
    pub bin: Vec<u16>,
    /// As recorded.
    pub channel: Vec<u16>,
    /// Measured range of the primary echo (m), `-1` for none.
    pub range: Vec<f32>,
    /// Its intensity, `-1` for none.
    pub intensity: Vec<f32>,
    /// Its calibrated reflectivity, `-1` for none.
    pub reflectivity_calibrated: Vec<f32>,
    /// Measured range of the second echo (m), `-1` for none.
    pub secondary_range: Vec<f32>,
    /// Geom of the primary echo, `-1` for none.
    pub geom_id: Vec<i32>,
}

impl VariantTable {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Whether there are no rows.
    pub fn is_empty(&self) -> bool {
        self.range.is_empty()
    }
}

/// Reads a whole variant file (the columns `augmentation.json` describes).
pub fn read_variant_file(path: &Path) -> Result<VariantTable, RecordError> {
    let mut t = VariantTable::default();
    for part in VariantReader::open(path)? {
        let part = part?;
        t.timestamp.extend(part.timestamp);
        t.bin.extend(part.bin);
        t.channel.extend(part.channel);
        t.range.extend(part.range);
        t.intensity.extend(part.intensity);
        t.reflectivity_calibrated.extend(part.reflectivity_calibrated);
        t.secondary_range.extend(part.secondary_range);
        t.geom_id.extend(part.geom_id);
    }
    Ok(t)
}

/// Reads a variant file in batches of at most 262 144 rows.
pub(crate) struct VariantReader {
    path: PathBuf,
    batches: parquet::arrow::arrow_reader::ParquetRecordBatchReader,
    rows: u64,
}

impl VariantReader {
    /// Opens `path`, which must hold the variant columns.
    pub(crate) fn open(path: &Path) -> Result<VariantReader, RecordError> {
        let (batches, rows) = open_table(path, &VARIANT_COLUMNS, "variant file")?;
        Ok(VariantReader { path: path.to_path_buf(), batches, rows })
    }

    /// Rows in the file (from its footer).
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }
}

impl Iterator for VariantReader {
    type Item = Result<VariantTable, RecordError>;

    fn next(&mut self) -> Option<Self::Item> {
        use arrow_array::types::{Float32Type, Float64Type, Int32Type, UInt16Type};
        let batch = self.batches.next()?;
        let path = &self.path;
        let read = || -> Result<VariantTable, RecordError> {
            let b = batch.map_err(|e| RecordError::parquet(path, e))?;
            let c = |i: usize| b.column(i).as_ref();
            Ok(VariantTable {
                timestamp: values::<Float64Type>(path, c(0))?,
                bin: values::<UInt16Type>(path, c(1))?,
                channel: values::<UInt16Type>(path, c(2))?,
                range: values::<Float32Type>(path, c(3))?,
                intensity: values::<Float32Type>(path, c(4))?,
                reflectivity_calibrated: values::<Float32Type>(path, c(5))?,
                secondary_range: values::<Float32Type>(path, c(6))?,
                geom_id: values::<Int32Type>(path, c(7))?,
            })
        };
        Some(read())
    }
}

/// Checks the variant file at `path` against the SHA-256 its variant folder's
/// `augmentation.json` records (the folder is the nearest one above it with that file).
pub(crate) fn verify_variant_file(path: &Path) -> Result<(), RecordError> {
    let root = path.ancestors().skip(1).find(|d| d.join(AUGMENTATION_FILE).is_file()).ok_or_else(|| {
        RecordError::Inconsistent {
            path: path.to_path_buf(),
            reason: format!("no folder above it has the {AUGMENTATION_FILE} that describes its variant"),
        }
    })?;
    let augmentation = read_augmentation(root)?;
    let rel = relative(path, root);
    let entry = augmentation.files.iter().find(|f| f.variant == rel).ok_or_else(|| RecordError::Changed {
        path: path.to_path_buf(),
        reason: format!("{} does not list it", root.join(AUGMENTATION_FILE).display()),
    })?;
    crate::verify::verify_hash(path, &entry.variant_sha256, "the variant's augmentation.json")
}

/// Reads a variant folder's `augmentation.json`.
pub fn read_augmentation(variant: &Path) -> Result<Augmentation, RecordError> {
    let path = variant.join(AUGMENTATION_FILE);
    let text = std::fs::read_to_string(&path).map_err(|e| RecordError::io("read", &path, e))?;
    serde_json::from_str(&text).map_err(|e| RecordError::Json {
        path,
        what: "augmentation file",
        reason: e.to_string(),
    })
}
