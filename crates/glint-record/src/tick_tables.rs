//! The per-episode tables of float64 values, one row per tick, with a sidecar each
//! (`<name>-NNN.json`) ([`TickTable`]):
//!
//! - `data/chunk-NNN/rangefinders-NNN.parquet`: the model's MJCF `<rangefinder>` values, one
//!   column per value (the sensor's name, or `<sensor>/<field>`);
//! - `data/chunk-NNN/state-NNN.parquet`: the robot's state, MuJoCo's `qpos`, `qvel` and `ctrl`
//!   and every body's pose in the world (`qpos/<joint>`, `qvel/<joint>`, `ctrl/<actuator>`,
//!   `body/<body>/x|y|z|qw|qx|qy|qz`; a free or ball joint's entries end in their component).
//!
//! Kept salvageable as the pose tables are: every row also goes to a log
//! (`<table>.parquet.partial.ticks`, an eight-byte magic, then the column names as a
//! length-prefixed JSON array, then rows of float64) until the table is finished, and
//! `glint recover` rebuilds the table from that log.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::Float64Type;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use serde::{Deserialize, Serialize};

use crate::RecordError;
use crate::files::{Float64Table, file_sha256};
use crate::journal::{TICKS_SUFFIX, side_path};
use crate::reader::footer;
use crate::schema::READ_BATCH_ROWS;
use crate::session::{with_suffix, write_json};
use crate::sidecar::{ColumnDescription, FORMAT_VERSION};

/// A kind of per-episode table of values per tick (see the module's docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TickTable {
    /// The model's MJCF `<rangefinder>` values.
    Rangefinders,
    /// The robot's state: `qpos`, `qvel`, `ctrl` and every body's pose.
    State,
}

impl TickTable {
    /// Every kind.
    pub const ALL: [TickTable; 2] = [TickTable::Rangefinders, TickTable::State];

    /// Its file name's prefix.
    fn prefix(self) -> &'static str {
        match self {
            TickTable::Rangefinders => "rangefinders-",
            TickTable::State => "state-",
        }
    }

    /// Its salvage log's magic.
    fn magic(self) -> &'static [u8; 8] {
        match self {
            TickTable::Rangefinders => b"GLINTRF1",
            TickTable::State => b"GLINTST1",
        }
    }

    /// What it holds, in words.
    pub fn what(self) -> &'static str {
        match self {
            TickTable::Rangefinders => "rangefinder",
            TickTable::State => "robot state",
        }
    }

    /// Its salvage log and its sidecar, in words (for errors).
    fn log_and_sidecar(self) -> (&'static str, &'static str) {
        match self {
            TickTable::Rangefinders => ("rangefinder log", "rangefinder sidecar"),
            TickTable::State => ("robot state log", "robot state sidecar"),
        }
    }

    /// Its table of episode `index`, relative to the session folder
    /// (`data/chunk-NNN/<prefix>NNN.parquet`).
    pub fn file(self, index: u32) -> PathBuf {
        Path::new("data")
            .join(format!("chunk-{:03}", index / 1000))
            .join(format!("{}{index:03}.parquet", self.prefix()))
    }

    /// The kind and episode of a table's file name (`<prefix>NNN.parquet`, or with `suffix`
    /// after `.parquet`), if it is one.
    pub(crate) fn of_file(name: &str, suffix: &str) -> Option<(TickTable, u32)> {
        TickTable::ALL.into_iter().find_map(|kind| {
            let index =
                name.strip_prefix(kind.prefix())?.strip_suffix(suffix)?.strip_suffix(".parquet")?.parse().ok()?;
            Some((kind, index))
        })
    }

    /// Whether `name` is the sidecar of one of its tables.
    pub(crate) fn is_sidecar(name: &str) -> bool {
        TickTable::ALL.into_iter().any(|kind| name.starts_with(kind.prefix()) && name.ends_with(".json"))
    }

    /// The description of value column `name`.
    fn describe(self, name: &str) -> ColumnDescription {
        let (unit, meaning) = match self {
            TickTable::Rangefinders => rangefinder_meaning(name),
            TickTable::State => state_meaning(name),
        };
        ColumnDescription { name: name.into(), data_type: "float64".into(), unit: unit.into(), meaning }
    }
}

fn rangefinder_meaning(name: &str) -> (&'static str, String) {
    let (sensor, field) = name.split_once('/').unwrap_or((name, "dist"));
    let field_name = field.split('_').next().unwrap_or(field);
    let unit = if matches!(field_name, "dir" | "normal") { "" } else { "m" };
    let meaning = match field_name {
        "dist" => format!("Rangefinder '{sensor}': distance along the site's z axis to the first surface, -1 for none"),
        "depth" => format!("Rangefinder '{sensor}': depth of the hit along the site's z axis, -1 for none"),
        _ => format!("Rangefinder '{sensor}': {field} as MuJoCo's sensordata holds it"),
    };
    (unit, meaning)
}

fn state_meaning(name: &str) -> (&'static str, String) {
    let mut parts = name.splitn(2, '/');
    let (group, rest) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (owner, component) = rest.rsplit_once('/').unwrap_or((rest, ""));
    let unit = match (group, component) {
        (_, "x" | "y" | "z") => "m",
        (_, "qw" | "qx" | "qy" | "qz") => "",
        (_, "vx" | "vy" | "vz") => "m/s",
        (_, "wx" | "wy" | "wz") => "rad/s",
        ("qpos", _) => "m or rad",
        ("qvel", _) => "m/s or rad/s",
        _ => "",
    };
    let meaning = match group {
        "qpos" => format!("MuJoCo's qpos of joint '{owner}' {component}: metres for a slide, radians for a hinge"),
        "qvel" => format!("MuJoCo's qvel of joint '{owner}' {component}"),
        "ctrl" => format!("MuJoCo's ctrl of actuator '{rest}' in the tick's physics, in the actuator's units"),
        "body" => format!("Body '{owner}' in the world: {component} of its frame (MuJoCo's xpos, xquat)"),
        _ => format!("'{name}' as MuJoCo's state holds it"),
    };
    (unit, meaning.replace("  ", " ").replace(" :", ":"))
}

/// The sidecar of a tick table (`<prefix>NNN.json`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TickTableSidecar {
    /// Version of the session layout.
    pub format_version: u32,
    /// The table's file name.
    pub file: String,
    /// Episode index.
    pub episode: u32,
    /// How the episode ended ([`crate::EpisodeStatus::name`]).
    pub status: String,
    /// Rows: one per tick.
    pub rows: u64,
    /// SHA-256 of the file, hex.
    pub sha256: String,
    /// `timestamp`, then one column per value.
    pub columns: Vec<ColumnDescription>,
}

/// A tick table read back.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TickValues {
    /// One name per value column.
    pub names: Vec<String>,
    /// Seconds since the episode start, one per tick.
    pub timestamp: Vec<f64>,
    /// `(ticks, names.len())`, row-major (for rangefinders, MuJoCo's `sensordata`, `-1` for
    /// the distance of a ray that hits nothing).
    pub values: Vec<f64>,
}

impl TickValues {
    /// Tick `tick`'s values.
    pub fn row(&self, tick: usize) -> &[f64] {
        let width = self.names.len();
        &self.values[tick * width..(tick + 1) * width]
    }

    /// The column of `name`, if the table has it.
    pub fn column(&self, name: &str) -> Option<usize> {
        self.names.iter().position(|n| n == name)
    }
}

/// The column descriptions of a `kind` table whose value columns are `names`.
fn columns(kind: TickTable, names: &[String]) -> Vec<ColumnDescription> {
    let time = ColumnDescription {
        name: "timestamp".into(),
        data_type: "float64".into(),
        unit: "s".into(),
        meaning: "Seconds since the start of the episode: the tick's, equal to its lidar rows' timestamp".into(),
    };
    let values = names.iter().map(|name| kind.describe(name));
    std::iter::once(time).chain(values).collect()
}

fn schema(names: &[String]) -> SchemaRef {
    let fields: Vec<Field> = std::iter::once("timestamp")
        .chain(names.iter().map(String::as_str))
        .map(|n| Field::new(n, DataType::Float64, false))
        .collect();
    Arc::new(Schema::new(fields))
}

/// An episode's tick table, being written.
pub(crate) struct TickTableWriter {
    kind: TickTable,
    path: PathBuf,
    names: Vec<String>,
    /// The table, `.partial` while writing: timestamp, then a column per name.
    table: Float64Table,
    /// The log that keeps the rows salvageable; none for a table rebuilt by `glint recover`.
    log: Option<(PathBuf, File)>,
}

impl TickTableWriter {
    /// Creates the table of episode `index` in the session folder `dir` as `.partial`, with
    /// its log.
    pub(crate) fn create(
        kind: TickTable,
        dir: &Path,
        index: u32,
        names: &[String],
    ) -> Result<TickTableWriter, RecordError> {
        let path = dir.join(kind.file(index));
        let mut writer = TickTableWriter::without_log(kind, with_suffix(&path, ".partial"), path, names)?;
        let log_path = side_path(&writer.table.partial, TICKS_SUFFIX);
        let mut file = File::create_new(&log_path).map_err(|e| RecordError::io("create", &log_path, e))?;
        let header = serde_json::to_vec(names).expect("strings encode as JSON");
        let mut bytes = kind.magic().to_vec();
        bytes.extend_from_slice(&(header.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&header);
        file.write_all(&bytes).map_err(|e| RecordError::io("write", &log_path, e))?;
        writer.log = Some((log_path, file));
        Ok(writer)
    }

    /// Creates `partial` (which must not exist), to become `path`, with no log.
    fn without_log(
        kind: TickTable,
        partial: PathBuf,
        path: PathBuf,
        names: &[String],
    ) -> Result<TickTableWriter, RecordError> {
        if let Some(parent) = partial.parent() {
            std::fs::create_dir_all(parent).map_err(|e| RecordError::io("create", parent, e))?;
        }
        let table = Float64Table::create(partial, schema(names))?;
        Ok(TickTableWriter { kind, path, names: names.to_vec(), table, log: None })
    }

    /// The value columns' names.
    pub(crate) fn names(&self) -> &[String] {
        &self.names
    }

    /// Appends one tick's values (one per name).
    pub(crate) fn push(&mut self, timestamp: f64, values: &[f64]) -> Result<(), RecordError> {
        if values.len() != self.names.len() {
            return Err(RecordError::Setting(format!(
                "a tick brought {} {} values, and the episode's table has {} columns",
                values.len(),
                self.kind.what(),
                self.names.len()
            )));
        }
        if let Some((path, file)) = &mut self.log {
            let row: Vec<f64> = std::iter::once(timestamp).chain(values.iter().copied()).collect();
            file.write_all(bytemuck::cast_slice(&row)).map_err(|e| RecordError::io("write", &*path, e))?;
        }
        self.push_row(timestamp, values)
    }

    fn push_row(&mut self, timestamp: f64, values: &[f64]) -> Result<(), RecordError> {
        self.table.push(std::iter::once(timestamp).chain(values.iter().copied()))
    }

    /// Finishes the table: its last rows and footer, its sidecar (with `status`), the rename
    /// from `.partial`, and its log removed. Returns the sidecar.
    pub(crate) fn finish(self, episode: u32, status: &str) -> Result<TickTableSidecar, RecordError> {
        let (partial, rows) = (self.table.partial.clone(), self.table.rows());
        let sha256 = self.table.finish()?;
        let sidecar = TickTableSidecar {
            format_version: FORMAT_VERSION,
            file: self.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            episode,
            status: status.into(),
            rows,
            sha256,
            columns: columns(self.kind, &self.names),
        };
        write_json(&self.path.with_extension("json"), &sidecar)?;
        std::fs::rename(&partial, &self.path).map_err(|e| RecordError::io("rename", &partial, e))?;
        if let Some((log, _)) = &self.log {
            std::fs::remove_file(log).map_err(|e| RecordError::io("remove", log, e))?;
        }
        Ok(sidecar)
    }
}

/// The column names and rows (timestamp first) of the `kind` log at `path`; a torn last row
/// is left out.
fn read_log(kind: TickTable, path: &Path) -> Result<(Vec<String>, Vec<Vec<f64>>), RecordError> {
    let what = kind.log_and_sidecar().0;
    let bad = |reason: &str| RecordError::Log { path: path.to_path_buf(), what, reason: reason.into() };
    let bytes = std::fs::read(path).map_err(|e| RecordError::io("read", path, e))?;
    let rest = bytes
        .strip_prefix(kind.magic())
        .ok_or_else(|| bad(&format!("it does not start with a glint {what} header")))?;
    let len = rest.get(..4).map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as usize);
    let header = len.and_then(|len| rest.get(4..4 + len)).ok_or_else(|| bad("it was cut off inside its header"))?;
    let names: Vec<String> =
        serde_json::from_slice(header).map_err(|e| bad(&format!("its column names cannot be read: {e}")))?;
    let width = 8 * (names.len() + 1);
    let rows = rest[4 + header.len()..]
        .chunks_exact(width)
        .map(|c| c.chunks_exact(8).map(|v| f64::from_le_bytes(v.try_into().expect("8 bytes"))).collect())
        .collect();
    Ok((names, rows))
}

/// What `glint recover` did with an episode's unfinished tick table.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum TableSalvage {
    /// Rebuilt from its log (or found whole): this many rows.
    Recovered(u64),
    /// Left as it is, for this reason.
    Nothing(String),
}

/// Salvages the unfinished `kind` table `partial` (`….parquet.partial`) of episode `index`:
/// renamed if whole, else rebuilt from its log; its sidecar written as `recovered`.
pub(crate) fn salvage_table(kind: TickTable, partial: &Path, index: u32) -> Result<TableSalvage, RecordError> {
    let path = partial.with_extension("");
    let log = side_path(partial, TICKS_SUFFIX);
    if let Ok(table) = read_tick_table(partial) {
        let (names, ticks) = (table.names.clone(), table.timestamp.len());
        std::fs::rename(partial, &path).map_err(|e| RecordError::io("rename", partial, e))?;
        write_sidecar_of(kind, &path, index, &names, ticks as u64)?;
        remove_if_present(&log)?;
        return Ok(TableSalvage::Recovered(ticks as u64));
    }
    if !log.exists() {
        let what = kind.log_and_sidecar().0;
        return Ok(TableSalvage::Nothing(format!("it is not whole and has no {what} to rebuild it from")));
    }
    let (names, rows) = match read_log(kind, &log) {
        Ok(read) => read,
        Err(e) => return Ok(TableSalvage::Nothing(e.to_string())),
    };
    let temp = with_suffix(&path, ".recovering");
    remove_if_present(&temp)?;
    let mut writer = TickTableWriter::without_log(kind, temp.clone(), path.clone(), &names)?;
    for row in &rows {
        writer.push_row(row[0], &row[1..])?;
    }
    writer.table.finish()?;
    std::fs::rename(&temp, &path).map_err(|e| RecordError::io("rename", &temp, e))?;
    write_sidecar_of(kind, &path, index, &names, rows.len() as u64)?;
    remove_if_present(partial)?;
    remove_if_present(&log)?;
    Ok(TableSalvage::Recovered(rows.len() as u64))
}

fn remove_if_present(path: &Path) -> Result<(), RecordError> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(RecordError::io("remove", path, e)),
        _ => Ok(()),
    }
}

/// Writes the `recovered` sidecar of the finished table at `path`.
fn write_sidecar_of(
    kind: TickTable,
    path: &Path,
    episode: u32,
    names: &[String],
    rows: u64,
) -> Result<(), RecordError> {
    let sidecar = TickTableSidecar {
        format_version: FORMAT_VERSION,
        file: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        episode,
        status: crate::EpisodeStatus::Recovered.name().into(),
        rows,
        sha256: file_sha256(path)?,
        columns: columns(kind, names),
    };
    write_json(&path.with_extension("json"), &sidecar)
}

/// Reads the sidecar of the `kind` table at `table`.
pub fn read_tick_table_sidecar(kind: TickTable, table: &Path) -> Result<TickTableSidecar, RecordError> {
    let path = table.with_extension("json");
    let what = kind.log_and_sidecar().1;
    let bad = |reason: String| RecordError::Json { path: path.clone(), what, reason };
    let text = std::fs::read_to_string(&path).map_err(|e| RecordError::io("read", &path, e))?;
    serde_json::from_str(&text).map_err(|e| bad(e.to_string()))
}

/// Checks the finished `kind` table at `path` against its sidecar (rows, columns, SHA-256);
/// every problem found, empty when it passes.
pub(crate) fn check_tick_table(kind: TickTable, path: &Path) -> Vec<String> {
    let sidecar = match read_tick_table_sidecar(kind, path) {
        Ok(s) => s,
        Err(e) => return vec![e.to_string()],
    };
    let mut problems = Vec::new();
    match footer(path) {
        Ok((schema, rows)) => {
            let got: Vec<&str> = schema.fields().iter().map(|f| f.name().as_str()).collect();
            let want: Vec<&str> = sidecar.columns.iter().map(|c| c.name.as_str()).collect();
            if got != want || schema.fields().iter().any(|f| f.data_type() != &DataType::Float64) {
                problems.push(format!("its columns are {got:?}, and its sidecar lists {want:?}, all float64"));
            }
            if rows != sidecar.rows {
                problems.push(format!("it has {rows} rows, and its sidecar says {}", sidecar.rows));
            }
        }
        Err(e) => problems.push(e.to_string()),
    }
    match file_sha256(path) {
        Ok(hash) if hash != sidecar.sha256 => problems.push(format!(
            "its SHA-256 is {}…, and its sidecar says {}… (it changed after it was written)",
            &hash[..12],
            &sidecar.sha256[..sidecar.sha256.len().min(12)]
        )),
        Ok(_) => {}
        Err(e) => problems.push(e.to_string()),
    }
    problems
}

/// Reads a whole tick table (of either kind).
pub fn read_tick_table(path: &Path) -> Result<TickValues, RecordError> {
    let file = File::open(path).map_err(|e| RecordError::io("open", path, e))?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(file)
        .map_err(|e| RecordError::parquet(path, e))?
        .with_batch_size(READ_BATCH_ROWS);
    let fields = builder.schema().fields().clone();
    if fields.first().is_none_or(|f| f.name() != "timestamp")
        || fields.iter().any(|f| f.data_type() != &DataType::Float64)
    {
        return Err(RecordError::schema(
            path,
            "not a glint tick table (rangefinders, robot state): it needs a float64 timestamp column first, then float64 values",
        ));
    }
    let names: Vec<String> = fields.iter().skip(1).map(|f| f.name().clone()).collect();
    let mut table = TickValues { names, ..Default::default() };
    for batch in builder.build().map_err(|e| RecordError::parquet(path, e))? {
        let batch = batch.map_err(|e| RecordError::parquet(path, e))?;
        let cols: Vec<&[f64]> =
            batch.columns().iter().map(|c| c.as_primitive::<Float64Type>().values().as_ref()).collect();
        for r in 0..batch.num_rows() {
            table.timestamp.push(cols[0][r]);
            table.values.extend(cols[1..].iter().map(|c| c[r]));
        }
    }
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fresh folder under the system's temporary one, removed when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(tag: &str) -> Scratch {
            let dir = std::env::temp_dir().join(format!("glint-rangefinders-{tag}-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn names() -> Vec<String> {
        vec!["front".into(), "side/dist".into(), "side/normal_z".into()]
    }

    #[test]
    fn a_table_round_trips_and_checks() {
        let dir = Scratch::new("round-trip");
        let mut w = TickTableWriter::create(TickTable::Rangefinders, dir.path(), 4, &names()).unwrap();
        w.push(0.02, &[1.5, -1.0, 0.0]).unwrap();
        w.push(0.04, &[1.25, 3.0, 1.0]).unwrap();
        assert!(w.push(0.06, &[1.0]).unwrap_err().to_string().contains("3 columns"));
        let sidecar = w.finish(4, "complete").unwrap();
        assert_eq!((sidecar.rows, sidecar.columns.len()), (2, 4));
        assert_eq!(sidecar.columns[3].unit, "");
        let path = dir.path().join(TickTable::Rangefinders.file(4));
        assert_eq!(path.file_name().unwrap(), "rangefinders-004.parquet");
        let t = read_tick_table(&path).unwrap();
        assert_eq!((t.names, t.timestamp, t.values), (names(), vec![0.02, 0.04], vec![1.5, -1.0, 0.0, 1.25, 3.0, 1.0]));
        assert!(check_tick_table(TickTable::Rangefinders, &path).is_empty());
        assert!(!side_path(&with_suffix(&path, ".partial"), TICKS_SUFFIX).exists(), "the log goes");
        std::fs::write(&path, b"changed").unwrap();
        assert!(!check_tick_table(TickTable::Rangefinders, &path).is_empty());
    }

    #[test]
    fn state_columns_are_described_with_their_units() {
        let d = |name: &str| TickTable::State.describe(name);
        assert_eq!(d("qpos/root/x").unit, "m");
        assert_eq!(d("qpos/root/qw").unit, "");
        assert_eq!(d("qvel/root/wz").unit, "rad/s");
        assert_eq!(d("qpos/elbow").unit, "m or rad");
        assert!(d("ctrl/vx").meaning.contains("actuator 'vx'"));
        assert!(d("body/arm/qx").meaning.contains("Body 'arm'"));
        assert_eq!(TickTable::of_file("state-012.parquet", ""), Some((TickTable::State, 12)));
        assert!(TickTable::is_sidecar("state-012.json") && !TickTable::is_sidecar("lidar-x-012.json"));
    }

    #[test]
    fn an_unfinished_table_is_rebuilt_from_its_log() {
        let dir = Scratch::new("salvage");
        let mut w = TickTableWriter::create(TickTable::Rangefinders, dir.path(), 7, &names()).unwrap();
        for k in 0..5 {
            w.push(0.1 * k as f64, &[k as f64, -1.0, 0.5]).unwrap();
        }
        let partial = w.table.partial.clone();
        std::mem::forget(w); // killed: no footer, no rename
        let log = side_path(&partial, TICKS_SUFFIX);
        // A torn last row is dropped.
        std::fs::OpenOptions::new().append(true).open(&log).unwrap().write_all(&[1, 2, 3]).unwrap();
        let found = TickTable::of_file("rangefinders-007.parquet.partial", ".partial");
        assert_eq!(found, Some((TickTable::Rangefinders, 7)));
        assert_eq!(salvage_table(TickTable::Rangefinders, &partial, 7).unwrap(), TableSalvage::Recovered(5));
        let path = dir.path().join(TickTable::Rangefinders.file(7));
        let t = read_tick_table(&path).unwrap();
        assert_eq!(t.timestamp.len(), 5);
        assert_eq!(t.values[3 * 4], 4.0);
        assert!(check_tick_table(TickTable::Rangefinders, &path).is_empty());
        assert_eq!(read_tick_table_sidecar(TickTable::Rangefinders, &path).unwrap().status, "recovered");
        assert!(!partial.exists() && !log.exists());
    }
}
