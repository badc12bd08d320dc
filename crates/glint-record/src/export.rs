//! Material-informed variants of a recorded session (`spec/recording.md`, "Replay and
//! export"): every lidar file's clean geometry re-processed through the return model under a
//! material bake, written beside an `augmentation.json` that traces the variant to its sources.
//!
//! Per row with a clean hit (`geom_id >= 0`), the beam is rebuilt in the world: its direction in
//! the sensor frame from `bin` and `channel` (the pattern's generator), turned with the tick's
//! pose from the pose table, as are the recorded normals. The first surface is the recorded
//! hit, with the bake's material at the world point. The return model's continuations are
//! answered from the recorded secondary columns only ([`Recorded`]): the first straight leg
//! from `sec_*`, the first folded leg from `refl_*`, a refracted leg (into water) approximated
//! from the straight `sec_*` hit (the bent beam followed to that hit's plane), and nothing
//! deeper. Randomness is keyed like the live sensor's:
//! (seed, world, sensor, tick within the episode from 1, beam).

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float32Array, Float64Array, Int32Array, RecordBatch, UInt16Array};
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use glam::{DMat3, DVec3};
use glint_lidar::{
    BakeStatus, Beam, BeamReturn, BeamRng, LegKind, MaterialLookup, NUDGE, RETURN_PARAM_NAMES, ReturnModel,
    ReturnParams, ScanConfig, ScanPattern, Surface, TickKey, Tracer, beam_direction,
};
use parquet::arrow::ArrowWriter;
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::RecordError;
use crate::poses::{PoseReader, PoseTable, pose_path};
use crate::reader::{LidarReader, LidarTable, SecondaryColumns};
use crate::schema::EMISSION_SPLIT;
use crate::session::write_json;
use crate::sidecar::{ColumnDescription, read_session_meta, read_sidecar};
use crate::writer::{HashWriter, file_sha256, zstd_properties};

/// The provenance file in a variant folder.
pub const AUGMENTATION_FILE: &str = "augmentation.json";

/// Version of the variant layout and of `augmentation.json`.
pub const VARIANT_FORMAT_VERSION: u32 = 1;

/// What a variant is computed with.
#[derive(Clone, Copy)]
pub struct ExportSettings<'a> {
    /// The return model's calibration.
    pub params: ReturnParams,
    /// The seed of its randomness.
    pub seed: u64,
    /// Where hits find their NIR material (a loaded [`glint_lidar::Bake`]).
    pub materials: &'a dyn MaterialLookup,
}

impl std::fmt::Debug for ExportSettings<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportSettings").field("params", &self.params).field("seed", &self.seed).finish_non_exhaustive()
    }
}

/// A [`BakeStatus`] as `augmentation.json` records it (the fingerprint in hex, as
/// `glint bake --status` prints it).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BakeStatusRecord {
    /// Whether a bake was loaded.
    pub valid: bool,
    /// Its format version.
    pub format_version: u32,
    /// The grid's cell size, metres.
    pub cell_size: f64,
    /// Its splat radius, cells.
    pub splat_radius: i32,
    /// Grid cells along x, y, z.
    pub dims: [u32; 3],
    /// Grid cells holding a material.
    pub filled_cells: u64,
    /// Entries of its per-geom table.
    pub geom_materials: u64,
    /// The fingerprint of the materials it was baked from, 16 hex digits.
    pub material_fingerprint: String,
    /// Whether it was stale against the scene's materials when the variant was made.
    pub stale: bool,
}

impl From<BakeStatus> for BakeStatusRecord {
    fn from(s: BakeStatus) -> BakeStatusRecord {
        BakeStatusRecord {
            valid: s.valid,
            format_version: s.format_version,
            cell_size: s.cell_size,
            splat_radius: s.splat_radius,
            dims: s.dims,
            filled_cells: s.filled_cells,
            geom_materials: s.geom_materials,
            material_fingerprint: format!("{:016x}", s.material_fingerprint),
            stale: s.stale,
        }
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
    pub status: BakeStatusRecord,
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

/// The seventeen return parameters by name (the seed's camelCase, in its order).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ParamsRecord(pub ReturnParams);

impl Serialize for ParamsRecord {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let values = self.0.to_array();
        let mut map = s.serialize_map(Some(values.len()))?;
        for (i, (name, v)) in RETURN_PARAM_NAMES.iter().zip(values).enumerate() {
            if i == RETURN_PARAM_NAMES.len() - 1 {
                map.serialize_entry(name, &self.0.max_returns)?;
            } else {
                map.serialize_entry(name, &v)?;
            }
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for ParamsRecord {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<ParamsRecord, D::Error> {
        let map = std::collections::BTreeMap::<String, f64>::deserialize(d)?;
        let mut values = [0.0; 17];
        for (slot, name) in values.iter_mut().zip(RETURN_PARAM_NAMES) {
            *slot = *map
                .get(name)
                .ok_or_else(|| serde::de::Error::custom(format!("return parameter {name} is missing")))?;
        }
        ReturnParams::from_array(values).map(ParamsRecord).map_err(serde::de::Error::custom)
    }
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
    /// The world whose randomness the rows were keyed with (`episode % worlds`).
    pub world: u64,
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
}

/// `augmentation.json`: where a variant came from and how it was made.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Augmentation {
    /// [`VARIANT_FORMAT_VERSION`].
    pub format_version: u32,
    /// The glint that made it.
    pub glint_version: String,
    /// The source session folder (absolute).
    pub source_session: String,
    /// The scene manifest the bake was checked against.
    pub manifest: String,
    /// The return preset's name, or `manifest` for the manifest's `[return_model]`.
    pub return_preset: String,
    /// All seventeen return parameters by name.
    pub return_params: ParamsRecord,
    /// The seed of the model's randomness.
    pub seed: u64,
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
    /// Source files not exported, with why (a killed run's `.partial` files).
    pub skipped: Vec<String>,
}

/// How continuations are answered, as `augmentation.json` says it.
const CONTINUATIONS: &str = "from the recorded secondary columns only: the first straight leg (slab, porous gap) from sec_*, the first folded leg (specular) from refl_*, a refracted leg (into water) approximated from the straight sec_* hit (the bent beam followed to the plane of that hit, the straight distance where it never meets it), no deeper legs; where the recording captured no secondary ray, the beam has no continuation";

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
    VARIANT_COLUMNS
        .iter()
        .map(|(name, t, unit, meaning)| ColumnDescription {
            name: (*name).into(),
            data_type: crate::schema::type_name(t),
            unit: (*unit).into(),
            meaning: (*meaning).into(),
        })
        .collect()
}

fn variant_schema() -> SchemaRef {
    Arc::new(Schema::new(
        VARIANT_COLUMNS.iter().map(|(name, t, _, _)| Field::new(*name, t.clone(), false)).collect::<Vec<_>>(),
    ))
}

/// Answers a beam's continuations from its recorded secondary geometry.
#[derive(Clone, Copy, Debug, Default)]
struct Recorded {
    /// The pass-through hit, its distance measured from just past the first surface, and
    /// where it is in the world.
    straight: Option<(Surface, DVec3)>,
    /// The reflected hit, likewise measured.
    folded: Option<Surface>,
}

impl Tracer for Recorded {
    fn cast(&mut self, origin: DVec3, dir: DVec3, kind: LegKind, depth: usize, _: i32) -> Option<Surface> {
        if depth != 1 {
            return None;
        }
        match kind {
            LegKind::Straight => self.straight.map(|(s, _)| s),
            LegKind::Refracted => self.straight.map(|(s, point)| refracted_leg(s, point, origin, dir)),
            LegKind::Folded => self.folded,
            _ => None,
        }
    }
}

/// A refracted leg from `origin` along `dir`, approximated from the straight pass-through hit
/// `s` at world `point`: the bent beam is followed to that hit's plane (exact for a flat
/// bottom the bent beam also meets), or, where it runs parallel to or away from the plane, the
/// straight hit's distance is kept.
fn refracted_leg(s: Surface, point: DVec3, origin: DVec3, dir: DVec3) -> Surface {
    let facing = dir.dot(s.normal);
    let along = (point - origin).dot(s.normal);
    let t = if facing < -1e-6 { along / facing } else { f64::NAN };
    Surface { distance: if t.is_finite() && t >= 0.0 { t } else { s.distance }, ..s }
}

/// The pattern units a non-repetitive sensor has emitted since the episode start by the end of
/// the tick `tick` (1-based) stamped `t`: `t · rotation_hz · units`, at most one revolution per
/// tick, rounded to the nearest unit. The live sensor floors the same count accumulated tick by
/// tick; rounding instead absorbs the difference between that sum and the timestamp's, and
/// being up to half a unit high never changes which cycle a row of a tick that casts less than a
/// whole revolution belongs to ([`emission_unit`]).
pub(crate) fn emitted_units(t: f64, tick: u64, rotation_hz: f64, units: u64) -> u64 {
    let revolutions = t * rotation_hz;
    if revolutions >= tick as f64 {
        // Capped: exactly one revolution per tick.
        return tick * units;
    }
    (revolutions * units as f64 + 0.5).floor().max(0.0) as u64
}

/// The unit (since the episode start) of a non-repetitive row with emission index `e`, when
/// `emitted` units had been emitted by the end of its tick: the largest `u < emitted` with
/// `u % units == e` (`e` itself when there is none).
pub(crate) fn emission_unit(e: u64, emitted: u64, units: u64) -> u64 {
    if emitted == 0 || units == 0 {
        return e;
    }
    let last = emitted - 1;
    let back = (last % units + units - e % units) % units;
    last.checked_sub(back).unwrap_or(e)
}

/// Walks a pose table alongside the lidar rows: the pose and 1-based tick of a timestamp.
struct PoseCursor {
    path: PathBuf,
    reader: PoseReader,
    table: PoseTable,
    /// Row of `table` at the cursor.
    i: usize,
    /// The tick of that row, counted from 1 over the whole file.
    tick: u64,
    /// The rotation of that row, as a matrix.
    rot: DMat3,
}

impl PoseCursor {
    fn open(path: &Path) -> Result<PoseCursor, RecordError> {
        let reader = PoseReader::open(path)?;
        Ok(PoseCursor {
            path: path.to_path_buf(),
            reader,
            table: PoseTable::default(),
            i: 0,
            tick: 0,
            rot: DMat3::IDENTITY,
        })
    }

    /// Moves to the tick stamped `t` (never backwards); `(tick, origin, rotation)`.
    fn at(&mut self, t: f64) -> Result<(u64, DVec3, DMat3), RecordError> {
        loop {
            if self.tick > 0 && self.i < self.table.len() && self.table.timestamp[self.i] == t {
                return Ok((self.tick, self.table.position[self.i], self.rot));
            }
            if self.tick > 0 {
                self.i += 1;
            }
            while self.i >= self.table.len() {
                match self.reader.next() {
                    Some(part) => {
                        self.table = part?;
                        self.i = 0;
                    }
                    None => {
                        return Err(RecordError::Inconsistent {
                            path: self.path.clone(),
                            reason: format!(
                                "it has no pose for the tick at t = {t} s that the lidar file records (its ticks must follow the lidar file's, in order)"
                            ),
                        });
                    }
                }
            }
            self.tick += 1;
            self.rot = DMat3::from_quat(self.table.rotation[self.i]);
        }
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
        self.writer.write(&batch).map_err(|e| RecordError::parquet(&self.partial, e))?;
        self.writer.flush().map_err(|e| RecordError::parquet(&self.partial, e))
    }

    /// Finishes the file, renames it into place and returns its SHA-256.
    fn finish(mut self) -> Result<String, RecordError> {
        self.writer.finish().map_err(|e| RecordError::parquet(&self.partial, e))?;
        let sha256 = self.writer.inner_mut().finish(&self.partial)?;
        std::fs::rename(&self.partial, &self.path).map_err(|e| RecordError::io("rename", &self.partial, e))?;
        Ok(sha256)
    }
}

/// A secondary hit as a continuation leg: `offset` metres of the recorded range lie before the
/// leg's start.
fn leg(cols: Option<&SecondaryColumns>, r: usize, offset: f64, rot: &DMat3) -> Option<Surface> {
    let c = cols?;
    let (range, geom) = (c.range[r], c.geom_id[r]);
    if geom < 0 || range < 0.0 {
        return None;
    }
    let [x, y, z] = c.normal[r];
    Some(Surface { distance: (range as f64 - offset).max(0.0), geomid: geom, normal: world_normal(rot, [x, y, z]) })
}

fn world_normal(rot: &DMat3, n: [f32; 3]) -> DVec3 {
    let v = *rot * DVec3::new(n[0] as f64, n[1] as f64, n[2] as f64);
    v.try_normalize().unwrap_or(v)
}

/// One source file's rows through the model.
struct FileJob<'a> {
    source: &'a Path,
    config: ScanConfig,
    sensor: u64,
    world: u64,
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
}

impl FileJob<'_> {
    fn run(&self, reader: LidarReader, poses: &mut PoseCursor, out: &mut VariantWriter) -> Result<Counts, RecordError> {
        let c = &self.config;
        let model = ReturnModel::new(self.settings.params);
        let materials = self.settings.materials;
        let window = (c.min_range, c.max_range);
        let spinning = matches!(c.pattern, ScanPattern::Spinning);
        let beams = c.beam_count() as u64;
        let units = c.azimuth_bins as u64;
        // A spinning pattern's directions are fixed: computed once.
        let fixed: Vec<DVec3> =
            if spinning { (0..beams as usize).map(|k| beam_direction(c, 0, k)).collect() } else { Vec::new() };
        let mut counts = Counts::default();
        let mut key: Option<(u64, TickKey)> = None;
        for part in reader {
            let table = part?;
            let n = table.len();
            let mut rows = VariantRows::default();
            for r in 0..n {
                let t = table.timestamp[r];
                let (tick, origin, rot) = poses.at(t)?;
                let (bin, channel) = (table.bin[r] as u64, table.channel[r] as u64);
                let split = if spinning { c.channels as u64 } else { EMISSION_SPLIT as u64 };
                let k = bin * split + channel;
                if k >= beams || channel >= split {
                    return Err(RecordError::Inconsistent {
                        path: self.source.to_path_buf(),
                        reason: format!(
                            "row at t = {t} s has bin {bin} and channel {channel}, a beam the sensor does not have ({beams} beams)"
                        ),
                    });
                }
                let (range, geom) = (table.range[r], table.geom_id[r]);
                if geom < 0 || range < 0.0 {
                    rows.push(&BeamReturn::NONE);
                    continue;
                }
                counts.clean_hits += 1;
                let local = if spinning {
                    fixed[k as usize]
                } else {
                    let emitted = emitted_units(t, tick, c.rotation_hz, units);
                    let u = if c.rotation_hz > 0.0 { emission_unit(k, emitted, units) } else { k };
                    beam_direction(c, u / units, k as usize)
                };
                let dir = (rot * local).normalize();
                let range = range as f64;
                let first = Surface { distance: range, geomid: geom, normal: world_normal(&rot, table.normal[r]) };
                let material = materials.material_at(geom as usize, origin + dir * range);
                if material.is_none() {
                    counts.holes += 1;
                }
                let straight = leg(table.pass_through.as_ref(), r, range + NUDGE, &rot);
                let mut tracer = Recorded {
                    // The straight hit's world point: the recorded range runs from the sensor.
                    straight: straight.map(|s| (s, origin + dir * (s.distance + range + NUDGE))),
                    folded: leg(table.reflected.as_ref(), r, NUDGE, &rot),
                };
                // The live sensor's key: (seed, world, sensor, tick), then the beam.
                let tick_key = match key {
                    Some((at, cached)) if at == tick => cached,
                    _ => {
                        let fresh = BeamRng::tick_key(self.settings.seed, self.world, self.sensor, tick);
                        key = Some((tick, fresh));
                        fresh
                    }
                };
                let mut rng = tick_key.beam(k);
                let beam = Beam { origin, dir, window };
                let report = model.beam_return(&beam, material.map(|m| (first, m)), &mut tracer, materials, &mut rng);
                counts.echoes += (report.range >= 0.0) as u64;
                counts.second_echoes += (report.secondary_range >= 0.0) as u64;
                rows.push(&report);
            }
            counts.rows += n as u64;
            out.write(table, rows)?;
        }
        Ok(counts)
    }
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
            if !name.starts_with("lidar-") || name.contains(".poses.") {
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
    let meta = read_session_meta(session)?;
    let (files, partial) = session_files(session)?;
    if files.is_empty() {
        return Err(RecordError::NotASession {
            path: session.to_path_buf(),
            reason: "it has no finished lidar files (data/chunk-*/lidar-*.parquet) to export".into(),
        });
    }
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| RecordError::io("create", parent, e))?;
    }
    match std::fs::create_dir(out) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            return Err(RecordError::VariantExists { path: out.to_path_buf() });
        }
        Err(e) => return Err(RecordError::io("create", out, e)),
    }
    let result = export_into(session, out, settings, provenance, meta.worlds.max(1) as u64, &files, &partial);
    if result.is_err() {
        let _ = std::fs::remove_dir_all(out);
    }
    result
}

fn export_into(
    session: &Path,
    out: &Path,
    settings: &ExportSettings,
    provenance: Provenance,
    worlds: u64,
    files: &[PathBuf],
    partial: &[PathBuf],
) -> Result<Augmentation, RecordError> {
    let mut exported = Vec::with_capacity(files.len());
    for source in files {
        exported.push(export_file(session, source, out, settings, worlds)?);
    }
    let stale = provenance.bake.status.stale;
    let absolute = std::fs::canonicalize(session).unwrap_or_else(|_| session.to_path_buf());
    let augmentation = Augmentation {
        format_version: VARIANT_FORMAT_VERSION,
        glint_version: env!("CARGO_PKG_VERSION").into(),
        source_session: absolute.to_string_lossy().into_owned(),
        manifest: provenance.manifest,
        return_preset: provenance.return_preset,
        return_params: ParamsRecord(settings.params),
        seed: settings.seed,
        bake: provenance.bake,
        stale,
        continuations: CONTINUATIONS.into(),
        columns: variant_columns(),
        files: exported,
        skipped: partial.iter().map(|p| format!("{}: incomplete (the run was killed)", relative(p, session))).collect(),
    };
    write_json(&out.join(AUGMENTATION_FILE), &augmentation)?;
    Ok(augmentation)
}

fn export_file(
    session: &Path,
    source: &Path,
    out: &Path,
    settings: &ExportSettings,
    worlds: u64,
) -> Result<VariantFile, RecordError> {
    let sidecar = read_sidecar(&source.with_extension("json"))?;
    let config = sidecar.scan_config().map_err(|reason| RecordError::Json {
        path: source.with_extension("json"),
        what: "sidecar",
        reason,
    })?;
    let changed = |reason: String| RecordError::Changed { path: source.to_path_buf(), reason };
    let entry = sidecar.poses.as_ref().ok_or_else(|| RecordError::NoPoses { path: source.to_path_buf() })?;
    let source_sha256 = file_sha256(source)?;
    if source_sha256 != sidecar.sha256 {
        return Err(changed(format!(
            "its SHA-256 is {}…, and the sidecar's {}…",
            &source_sha256[..12],
            &sidecar.sha256[..sidecar.sha256.len().min(12)]
        )));
    }
    let poses = pose_path(source);
    let poses_sha256 = file_sha256(&poses)?;
    if poses_sha256 != entry.sha256 {
        return Err(RecordError::Changed {
            path: poses.clone(),
            reason: format!(
                "its SHA-256 is {}…, and the sidecar's entry {}…",
                &poses_sha256[..12],
                &entry.sha256[..entry.sha256.len().min(12)]
            ),
        });
    }
    let reader = LidarReader::open(source)?;
    let capture = sidecar.capture().map_err(&changed)?;
    if reader.capture() != capture || reader.rows() != sidecar.rows {
        return Err(changed(format!(
            "it has {} rows with {} columns, and the sidecar says {} rows recorded with secondary_capture '{}'",
            reader.rows(),
            crate::names::capture_name(reader.capture()),
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
        sensor: sidecar.sensor.index as u64,
        world: sidecar.episode as u64 % worlds,
        settings,
    };
    let counts = job.run(reader, &mut cursor, &mut writer)?;
    let variant_sha256 = writer.finish()?;
    Ok(VariantFile {
        episode: sidecar.episode,
        sensor: sidecar.sensor.index,
        sensor_name: sidecar.sensor.name.clone(),
        world: job.world,
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
    })
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

/// Reads a whole variant file (the columns [`variant_columns`] lists).
pub fn read_variant_file(path: &Path) -> Result<VariantTable, RecordError> {
    use arrow_array::types::{Float32Type, Float64Type, Int32Type, UInt16Type};
    use arrow_array::{Array, ArrowPrimitiveType, PrimitiveArray};
    fn values<T: ArrowPrimitiveType>(path: &Path, a: &dyn Array) -> Result<Vec<T::Native>, RecordError> {
        let p = a
            .as_any()
            .downcast_ref::<PrimitiveArray<T>>()
            .ok_or_else(|| RecordError::schema(path, format!("a column is {}, not {}", a.data_type(), T::DATA_TYPE)))?;
        Ok(p.values().to_vec())
    }
    let file = File::open(path).map_err(|e| RecordError::io("open", path, e))?;
    let builder = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| RecordError::parquet(path, e))?;
    let want = variant_schema();
    let same = builder.schema().fields().len() == want.fields().len()
        && builder
            .schema()
            .fields()
            .iter()
            .zip(want.fields())
            .all(|(a, b)| a.name() == b.name() && a.data_type() == b.data_type());
    if !same {
        let names: Vec<&str> = want.fields().iter().map(|f| f.name().as_str()).collect();
        return Err(RecordError::schema(path, format!("a variant file has the columns {}", names.join(", "))));
    }
    let mut t = VariantTable::default();
    for batch in builder.build().map_err(|e| RecordError::parquet(path, e))? {
        let b = batch.map_err(|e| RecordError::parquet(path, e))?;
        let c = |i: usize| b.column(i).as_ref();
        t.timestamp.extend(values::<Float64Type>(path, c(0))?);
        t.bin.extend(values::<UInt16Type>(path, c(1))?);
        t.channel.extend(values::<UInt16Type>(path, c(2))?);
        t.range.extend(values::<Float32Type>(path, c(3))?);
        t.intensity.extend(values::<Float32Type>(path, c(4))?);
        t.reflectivity_calibrated.extend(values::<Float32Type>(path, c(5))?);
        t.secondary_range.extend(values::<Float32Type>(path, c(6))?);
        t.geom_id.extend(values::<Int32Type>(path, c(7))?);
    }
    Ok(t)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The live sensor's clock (`Sensor::advance`): units `[from, to)` cast per tick.
    fn live_slices(hz: f64, dt: f64, units: u64, ticks: usize) -> Vec<(u64, u64)> {
        let (mut revolutions, mut emitted) = (0.0f64, 0u64);
        (0..ticks)
            .map(|_| {
                revolutions += (hz * dt).min(1.0);
                let target = ((revolutions * units as f64) + 1e-6).floor() as u64;
                let from = emitted.max(target.saturating_sub(units));
                emitted = target;
                (from, target)
            })
            .collect()
    }

    #[test]
    fn non_repetitive_rows_find_the_unit_the_live_sensor_cast() {
        // (rotation_hz, runner dt, points per cycle): the presets' rates on 50 and 30 Hz
        // runners, a cycle that does not divide into ticks, and one cast whole every tick.
        let cases = [
            (10.0, 0.02, 20_000u64),
            (10.0, 1.0 / 30.0, 20_000),
            (10.0, 0.02, 2_160),
            (7.3, 0.02, 997),
            (10.0, 0.013, 333),
            (10.0, 0.1, 500),
            (25.0, 0.1, 400),
        ];
        for (hz, dt, units) in cases {
            let mut t = 0.0;
            for (n, (from, to)) in live_slices(hz, dt, units, 400).into_iter().enumerate() {
                // The timestamp as a simulator sums it: physics steps of 2 ms.
                for _ in 0..((dt / 0.002).round() as usize).max(1) {
                    t += dt / ((dt / 0.002).round()).max(1.0);
                }
                let tick = n as u64 + 1;
                let emitted = emitted_units(t, tick, hz, units);
                for u in from..to {
                    let e = u % units;
                    assert_eq!(
                        emission_unit(e, emitted, units),
                        u,
                        "hz {hz}, dt {dt}, units {units}, tick {tick}, e {e}"
                    );
                }
            }
        }
    }

    #[test]
    fn emission_units_by_hand() {
        // 4000 units per tick of a 20 000-unit cycle: tick 5 ends the first cycle, tick 6
        // starts the second.
        assert_eq!(emitted_units(0.1, 5, 10.0, 20_000), 20_000);
        assert_eq!(emission_unit(19_999, 20_000, 20_000), 19_999);
        assert_eq!(emission_unit(16_000, 20_000, 20_000), 16_000);
        assert_eq!(emission_unit(0, 24_000, 20_000), 20_000);
        assert_eq!(emission_unit(3_999, 24_000, 20_000), 23_999);
        // A timestamp a hair short of the tick's end still finds the tick's units.
        let t = 0.12 - 1e-12;
        assert_eq!(emitted_units(t, 6, 10.0, 20_000), 24_000);
        // A tick that wraps: units 19 000..21 000 with 21 000 emitted.
        assert_eq!(emission_unit(19_500, 21_000, 20_000), 19_500);
        assert_eq!(emission_unit(500, 21_000, 20_000), 20_500);
        // More than a revolution per tick casts one whole cycle per tick.
        assert_eq!(emitted_units(0.2, 2, 25.0, 400), 800);
        assert_eq!(emission_unit(0, 800, 400), 400);
        // Nothing emitted: cycle 0.
        assert_eq!(emission_unit(7, 0, 400), 7);
    }

    #[test]
    fn params_round_trip_by_name() {
        let p = glint_lidar::ReturnPreset::OusterOs1.params();
        let text = serde_json::to_string(&ParamsRecord(p)).unwrap();
        assert!(text.starts_with("{\"maxRangeAtRef\":170.0,") && text.ends_with("\"maxReturns\":2}"), "{text}");
        let back: ParamsRecord = serde_json::from_str(&text).unwrap();
        assert_eq!(back.0, p);
        assert!(serde_json::from_str::<ParamsRecord>("{}").is_err());
    }
}
