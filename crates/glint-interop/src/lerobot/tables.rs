//! The Parquet tables of a LeRobot dataset: an episode's rows (`data/…`), the episodes'
//! metadata with their statistics (`meta/episodes/…`) and the task (`meta/tasks.parquet`),
//! with the column types LeRobot 0.6 writes.

use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, Int64Builder, ListBuilder, StringBuilder};
use arrow_array::{ArrayRef, FixedSizeListArray, Float32Array, Float64Array, Int64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use serde_json::{Value, json};

use super::stats::Stats;
use super::{Layout, Rows, chunk_file};
use crate::InteropError;

/// LeRobot's own features of every row, with their types.
pub(crate) const INDEX_FEATURES: [(&str, &str); 5] = [
    ("timestamp", "float32"),
    ("frame_index", "int64"),
    ("episode_index", "int64"),
    ("index", "int64"),
    ("task_index", "int64"),
];

/// Where an episode's video of one feature lies, and its statistics.
pub(crate) struct VideoSpan {
    pub(crate) key: String,
    pub(crate) frames: usize,
    pub(crate) fps: u32,
    pub(crate) stats: Stats,
}

/// One row of `meta/episodes/…`.
pub(crate) struct EpisodeMeta {
    index: u32,
    length: u64,
    first: u64,
    task: String,
    pub(crate) videos: Vec<VideoSpan>,
    /// The statistics of the data file's features, by key.
    stats: Vec<(String, Stats)>,
}

impl EpisodeMeta {
    pub(crate) fn new(index: u32, length: u64, first: u64, task: &str) -> EpisodeMeta {
        EpisodeMeta { index, length, first, task: task.into(), videos: Vec::new(), stats: Vec::new() }
    }

    /// Every feature's statistics in `info.json`'s order: the data's vectors, the videos, then
    /// the index features.
    fn all_stats(&self) -> Vec<(&str, &Stats)> {
        let (vectors, index): (Vec<_>, Vec<_>) =
            self.stats.iter().partition(|(k, _)| !INDEX_FEATURES.iter().any(|(name, _)| name == k));
        vectors
            .into_iter()
            .map(|(k, s)| (k.as_str(), s))
            .chain(self.videos.iter().map(|v| (v.key.as_str(), &v.stats)))
            .chain(index.into_iter().map(|(k, s)| (k.as_str(), s)))
            .collect()
    }
}

fn parquet_error(path: &Path, e: impl std::fmt::Display) -> InteropError {
    InteropError::Setting(format!("cannot write the Parquet file '{}': {e}", path.display()))
}

/// Writes `columns` (name, array) as the Parquet file `path`, with the schema metadata `meta`.
fn write_table(
    path: &Path,
    columns: Vec<(String, ArrayRef)>,
    meta: Option<(&str, String)>,
) -> Result<(), InteropError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| InteropError::io("create", dir, e))?;
    }
    let fields: Vec<Field> =
        columns.iter().map(|(name, array)| Field::new(name, array.data_type().clone(), true)).collect();
    let mut schema = Schema::new(fields);
    if let Some((key, value)) = meta {
        schema = schema.with_metadata([(key.to_string(), value)].into());
    }
    let batch = RecordBatch::try_new(Arc::new(schema), columns.into_iter().map(|(_, a)| a).collect())
        .map_err(|e| parquet_error(path, e))?;
    let file = File::create_new(path).map_err(|e| InteropError::io("create", path, e))?;
    let props = WriterProperties::builder().set_compression(Compression::ZSTD(ZstdLevel::default())).build();
    let mut writer = ArrowWriter::try_new(file, batch.schema(), Some(props)).map_err(|e| parquet_error(path, e))?;
    writer.write(&batch).map_err(|e| parquet_error(path, e))?;
    writer.close().map_err(|e| parquet_error(path, e))?;
    Ok(())
}

/// `(rows, width)` float32 values as LeRobot's `fixed_size_list<float>[width]` column.
fn vectors(values: Vec<f32>, width: usize) -> ArrayRef {
    let item = Arc::new(Field::new("element", DataType::Float32, true));
    let values = Arc::new(Float32Array::from(values));
    Arc::new(FixedSizeListArray::new(item, width as i32, values, None))
}

/// The `datasets` library's description of the data file's columns (its `huggingface`
/// schema metadata).
fn huggingface_features(features: &serde_json::Map<String, Value>) -> String {
    let mut out = serde_json::Map::new();
    for (key, f) in features {
        let dtype = f["dtype"].as_str().unwrap_or("");
        if dtype == "video" {
            continue;
        }
        let value = json!({"dtype": dtype, "_type": "Value"});
        let described = match key.as_str() {
            k if INDEX_FEATURES.iter().any(|(name, _)| *name == k) => value,
            _ => json!({"feature": value, "length": f["shape"][0], "_type": "List"}),
        };
        out.insert(key.clone(), described);
    }
    json!({"info": {"features": out}}).to_string()
}

/// Writes episode `episode`'s data file; its features' statistics go to `meta`.
pub(crate) fn write_data(
    out: &Path,
    layout: &Layout,
    features: &serde_json::Map<String, Value>,
    (episode, first_index): (u32, u64),
    rows: Rows,
    meta: &mut EpisodeMeta,
) -> Result<(), InteropError> {
    let n = rows.times.len();
    let mut columns: Vec<(String, ArrayRef)> = Vec::new();
    let Rows { observation, action, lidars, .. } = rows;
    let mut add_vector = |key: &str, values: Vec<f32>, width: usize, columns: &mut Vec<(String, ArrayRef)>| {
        meta.stats.push((key.to_string(), Stats::of_rows(&values, width)));
        columns.push((key.to_string(), vectors(values, width)));
    };
    if let Some(state) = &layout.state {
        add_vector("observation.state", observation, state.observation.0.len(), &mut columns);
        add_vector("action", action, state.action.0.len(), &mut columns);
    }
    for ((key, _, beams), values) in layout.lidars.iter().zip(lidars) {
        add_vector(key, values, *beams, &mut columns);
    }
    let timestamp: Vec<f32> = (0..n).map(|k| k as f32 / layout.fps as f32).collect();
    let frame: Vec<i64> = (0..n as i64).collect();
    let index: Vec<i64> = frame.iter().map(|k| k + first_index as i64).collect();
    let constant = |v: i64| vec![v; n];
    let index_columns: [(&str, Vec<f64>, ArrayRef); 5] = [
        ("timestamp", timestamp.iter().map(|&t| t as f64).collect(), Arc::new(Float32Array::from(timestamp.clone()))),
        ("frame_index", to_f64(&frame), Arc::new(Int64Array::from(frame.clone()))),
        ("episode_index", to_f64(&constant(episode as i64)), Arc::new(Int64Array::from(constant(episode as i64)))),
        ("index", to_f64(&index), Arc::new(Int64Array::from(index.clone()))),
        ("task_index", to_f64(&constant(0)), Arc::new(Int64Array::from(constant(0)))),
    ];
    for (name, values, array) in index_columns {
        meta.stats.push((name.to_string(), Stats::of_rows(&values, 1)));
        columns.push((name.to_string(), array));
    }
    let path = out.join("data").join(chunk_file(episode, "parquet"));
    write_table(&path, columns, Some(("huggingface", huggingface_features(features))))
}

fn to_f64(values: &[i64]) -> Vec<f64> {
    values.iter().map(|&v| v as f64).collect()
}

fn int_column(values: impl Iterator<Item = i64>) -> ArrayRef {
    Arc::new(Int64Array::from_iter_values(values))
}

/// A list builder whose items are named `element`, as pyarrow names them in LeRobot's files.
fn list_of<T: arrow_array::builder::ArrayBuilder>(values: T, item: DataType) -> ListBuilder<T> {
    ListBuilder::new(values).with_field(Arc::new(Field::new("element", item, true)))
}

/// `list<element: …>` of `item`.
fn list_type(item: DataType) -> DataType {
    DataType::List(Arc::new(Field::new("element", item, true)))
}

/// A statistic of every episode as a column: `list<double>`, or for an image
/// `list<list<list<double>>>` (channel, 1, 1).
fn stat_column(values: &[&[f64]], image: bool) -> ArrayRef {
    if !image {
        let mut b = list_of(Float64Builder::new(), DataType::Float64);
        for v in values {
            b.values().append_slice(v);
            b.append(true);
        }
        return Arc::new(b.finish());
    }
    let inner = list_of(Float64Builder::new(), DataType::Float64);
    let middle = list_of(inner, list_type(DataType::Float64));
    let mut b = list_of(middle, list_type(list_type(DataType::Float64)));
    for v in values {
        for &x in v.iter() {
            let rows = b.values();
            rows.values().values().append_value(x);
            rows.values().append(true);
            rows.append(true);
        }
        b.append(true);
    }
    Arc::new(b.finish())
}

/// Writes `meta/episodes/chunk-000/file-000.parquet` and `meta/tasks.parquet`.
pub(crate) fn write_meta(out: &Path, episodes: &[EpisodeMeta], task: &str) -> Result<(), InteropError> {
    let mut columns: Vec<(String, ArrayRef)> = Vec::new();
    let ints = |f: &dyn Fn(&EpisodeMeta) -> i64| int_column(episodes.iter().map(f));
    columns.push(("episode_index".into(), ints(&|e| e.index as i64)));
    let mut tasks = list_of(StringBuilder::new(), DataType::Utf8);
    for e in episodes {
        tasks.values().append_value(&e.task);
        tasks.append(true);
    }
    columns.push(("tasks".into(), Arc::new(tasks.finish())));
    columns.push(("length".into(), ints(&|e| e.length as i64)));
    columns.push(("data/chunk_index".into(), ints(&|e| (e.index / super::CHUNK_SIZE) as i64)));
    columns.push(("data/file_index".into(), ints(&|e| (e.index % super::CHUNK_SIZE) as i64)));
    columns.push(("dataset_from_index".into(), ints(&|e| e.first as i64)));
    columns.push(("dataset_to_index".into(), ints(&|e| (e.first + e.length) as i64)));
    let video_keys: Vec<String> =
        episodes.first().map(|e| e.videos.iter().map(|v| v.key.clone()).collect()).unwrap_or_default();
    for (k, key) in video_keys.iter().enumerate() {
        let prefix = format!("videos/{key}");
        columns.push((format!("{prefix}/chunk_index"), ints(&|e| (e.index / super::CHUNK_SIZE) as i64)));
        columns.push((format!("{prefix}/file_index"), ints(&|e| (e.index % super::CHUNK_SIZE) as i64)));
        columns.push((format!("{prefix}/from_timestamp"), Arc::new(Float64Array::from(vec![0.0; episodes.len()]))));
        let to: Vec<f64> = episodes.iter().map(|e| e.videos[k].frames as f64 / e.videos[k].fps as f64).collect();
        columns.push((format!("{prefix}/to_timestamp"), Arc::new(Float64Array::from(to))));
    }
    let per_episode: Vec<Vec<(&str, &Stats)>> = episodes.iter().map(EpisodeMeta::all_stats).collect();
    for (f, (key, first)) in per_episode.first().cloned().unwrap_or_default().into_iter().enumerate() {
        let of_all: Vec<&Stats> = per_episode.iter().map(|s| s[f].1).collect();
        for (s, (name, _)) in first.entries().iter().enumerate() {
            let values: Vec<&[f64]> = of_all.iter().map(|st| st.entries()[s].1).collect();
            columns.push((format!("stats/{key}/{name}"), stat_column(&values, first.image)));
            if *name == "std" {
                let mut counts = list_of(Int64Builder::new(), DataType::Int64);
                for st in &of_all {
                    counts.values().append_value(st.count);
                    counts.append(true);
                }
                columns.push((format!("stats/{key}/count"), Arc::new(counts.finish())));
            }
        }
    }
    columns.push(("meta/episodes/chunk_index".into(), ints(&|_| 0)));
    columns.push(("meta/episodes/file_index".into(), ints(&|_| 0)));
    write_table(&out.join("meta").join("episodes").join(chunk_file(0, "parquet")), columns, None)?;

    // pandas reads the task as the table's index, as LeRobot writes it.
    let pandas = json!({
        "index_columns": ["task"],
        "column_indexes": [{"name": null, "field_name": null, "pandas_type": "unicode", "numpy_type": "object",
                            "metadata": {"encoding": "UTF-8"}}],
        "columns": [
            {"name": "task_index", "field_name": "task_index", "pandas_type": "int64", "numpy_type": "int64", "metadata": null},
            {"name": "task", "field_name": "task", "pandas_type": "unicode", "numpy_type": "object", "metadata": null}
        ],
        "attributes": {},
        "creator": {"library": "glint", "version": env!("CARGO_PKG_VERSION")},
        "pandas_version": "2.3.3"
    });
    let columns: Vec<(String, ArrayRef)> = vec![
        ("task_index".into(), int_column(std::iter::once(0))),
        ("task".into(), Arc::new(StringArray::from(vec![task.to_string()]))),
    ];
    write_table(&out.join("meta").join("tasks.parquet"), columns, Some(("pandas", pandas.to_string())))
}

/// `meta/stats.json`: every feature's statistics over the dataset.
pub(crate) fn dataset_stats(episodes: &[EpisodeMeta]) -> Value {
    let per_episode: Vec<Vec<(&str, &Stats)>> = episodes.iter().map(EpisodeMeta::all_stats).collect();
    let mut out = serde_json::Map::new();
    for (f, (key, _)) in per_episode.first().cloned().unwrap_or_default().into_iter().enumerate() {
        let of_all: Vec<&Stats> = per_episode.iter().map(|s| s[f].1).collect();
        out.insert(key.to_string(), Stats::aggregate(&of_all).to_json());
    }
    Value::Object(out)
}
