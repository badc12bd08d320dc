//! The lidar Parquet schema (the seed's "Recorded output" columns, and the five extra columns
//! per captured secondary ray) and the words the sidecar uses for each column.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};
use glint_lidar::{SecondaryCapture, Spelled};

/// Rows per Parquet row group. A writer holds at most this many rows per sensor, encoded and
/// compressed (about 3 bytes a row), before they go into the file, so memory stays flat
/// however long an episode runs. Groups this large keep the footer's metadata, which the
/// writer holds until the file closes, small for hour-long episodes (a group a second and a
/// half for an OS1-64 at 10 Hz).
pub const ROW_GROUP_ROWS: usize = 1_048_576;

/// Rows per batch when a lidar file or pose table is read back in a stream: a quarter of a
/// row group, so replay and export hold a few tens of MB at a time.
pub(crate) const READ_BATCH_ROWS: usize = 262_144;

/// One column of the schema.
#[derive(Clone, Debug)]
pub(crate) struct ColumnSpec {
    pub name: &'static str,
    pub data_type: DataType,
    pub unit: &'static str,
    pub meaning: &'static str,
}

const fn col(name: &'static str, data_type: DataType, unit: &'static str, meaning: &'static str) -> ColumnSpec {
    ColumnSpec { name, data_type, unit, meaning }
}

/// Whether a capture mode records the pass-through and the reflected ray.
pub(crate) fn captures(capture: SecondaryCapture) -> (bool, bool) {
    match capture {
        SecondaryCapture::PassThrough => (true, false),
        SecondaryCapture::Reflected => (false, true),
        SecondaryCapture::Both => (true, true),
        _ => (false, false),
    }
}

/// The columns of a file recorded with `capture`, in order; `non_repetitive` picks the
/// meaning of `bin` and `channel`.
pub(crate) fn columns(capture: SecondaryCapture, non_repetitive: bool) -> Vec<ColumnSpec> {
    use DataType::{Float32, Float64, Int32, UInt8, UInt16};
    let (bin, channel) = if non_repetitive {
        (
            "High part of the beam's emission index within the pattern cycle: e / channels, where e = bin * channels + channel (not an angle; channels is in the sidecar)",
            "Low part of the beam's emission index within the pattern cycle: e % channels (not a laser channel)",
        )
    } else {
        (
            "Azimuth bin (0 at +X, counter-clockwise about +Z); beam index = bin * channels + channel",
            "Vertical channel (0 = lowest elevation)",
        )
    };
    let mut cols = vec![
        col("timestamp", Float64, "s", "Seconds since the start of the episode; every ray cast in one tick shares it"),
        col("bin", UInt16, "", bin),
        col("channel", UInt16, "", channel),
        col("range", Float32, "m", "Metres along the beam from the sensor origin; -1.0 on a miss"),
        col("geom_id", Int32, "", "MuJoCo geom hit (ngeom + k: skin k, seen by a lidar with see_skins); -1 on a miss"),
        col("hit", UInt8, "", "1 when geom_id >= 0 and range lies in [min_range, max_range), else 0"),
        col("normal_x", Float32, "", "Surface normal at the hit, sensor frame, x; 0 on a miss"),
        col("normal_y", Float32, "", "Surface normal at the hit, sensor frame, y; 0 on a miss"),
        col("normal_z", Float32, "", "Surface normal at the hit, sensor frame, z; 0 on a miss"),
    ];
    let (pass, reflected) = captures(capture);
    if pass {
        cols.extend([
            col(
                "sec_range",
                Float32,
                "m",
                "Pass-through: metres from the sensor to the next surface straight on past the first hit; -1 = none",
            ),
            col("sec_geom_id", Int32, "", "Pass-through: MuJoCo geom of that surface; -1 = none"),
            col("sec_normal_x", Float32, "", "Pass-through: that surface's normal, sensor frame, x; 0 = none"),
            col("sec_normal_y", Float32, "", "Pass-through: that surface's normal, sensor frame, y; 0 = none"),
            col("sec_normal_z", Float32, "", "Pass-through: that surface's normal, sensor frame, z; 0 = none"),
        ]);
    }
    if reflected {
        cols.extend([
            col(
                "refl_range",
                Float32,
                "m",
                "Reflected: metres from the first hit, along the beam folded about its normal, to the surface it meets; -1 = none (a phantom is booked at range + refl_range)",
            ),
            col("refl_geom_id", Int32, "", "Reflected: MuJoCo geom of that surface; -1 = none"),
            col("refl_normal_x", Float32, "", "Reflected: that surface's normal, sensor frame, x; 0 = none"),
            col("refl_normal_y", Float32, "", "Reflected: that surface's normal, sensor frame, y; 0 = none"),
            col("refl_normal_z", Float32, "", "Reflected: that surface's normal, sensor frame, z; 0 = none"),
        ]);
    }
    cols
}

/// The Arrow schema of a file recorded with `capture` (every column non-nullable).
pub(crate) fn arrow_schema(capture: SecondaryCapture) -> SchemaRef {
    let fields: Vec<Field> =
        columns(capture, false).into_iter().map(|c| Field::new(c.name, c.data_type, false)).collect();
    Arc::new(Schema::new(fields))
}

/// The type name the sidecar and the checks use (Parquet's and Arrow's lower-case names).
pub(crate) fn type_name(t: &DataType) -> String {
    match t {
        DataType::Float64 => "float64".into(),
        DataType::Float32 => "float32".into(),
        DataType::UInt16 => "uint16".into(),
        DataType::UInt8 => "uint8".into(),
        DataType::Int32 => "int32".into(),
        other => other.to_string().to_lowercase(),
    }
}

/// Compares a file's columns (name and type, in order) with those expected for `capture`;
/// `None` when they match, else what differs, in words.
pub(crate) fn mismatch(schema: &Schema, capture: SecondaryCapture) -> Option<String> {
    let want = columns(capture, false);
    let got = schema.fields();
    let mode = capture.name();
    for (i, c) in want.iter().enumerate() {
        let Some(f) = got.get(i) else {
            return Some(format!(
                "it has {} columns, and secondary capture '{mode}' needs {} (column '{}' is missing)",
                got.len(),
                want.len(),
                c.name
            ));
        };
        if f.name() != c.name {
            return Some(format!(
                "column {i} is '{}', where glint's schema (secondary capture '{mode}') has '{}'",
                f.name(),
                c.name
            ));
        }
        if f.data_type() != &c.data_type {
            return Some(format!(
                "column '{}' is {}, and should be {}",
                c.name,
                type_name(f.data_type()),
                type_name(&c.data_type)
            ));
        }
    }
    if got.len() > want.len() {
        return Some(format!(
            "it has {} columns, and secondary capture '{mode}' has {} (column '{}' is extra)",
            got.len(),
            want.len(),
            got[want.len()].name()
        ));
    }
    None
}

/// A side file's columns, each `(name, type, unit, meaning)`, all non-null.
pub(crate) type ColumnTable = [(&'static str, DataType, &'static str, &'static str)];

/// The descriptions of `table`'s columns, as sidecars and `augmentation.json` list them.
pub(crate) fn describe(table: &ColumnTable) -> Vec<crate::sidecar::ColumnDescription> {
    table
        .iter()
        .map(|(name, t, unit, meaning)| crate::sidecar::ColumnDescription {
            name: (*name).into(),
            data_type: type_name(t),
            unit: (*unit).into(),
            meaning: (*meaning).into(),
        })
        .collect()
}

/// The Arrow schema of `table`.
pub(crate) fn schema_of(table: &ColumnTable) -> arrow_schema::SchemaRef {
    std::sync::Arc::new(arrow_schema::Schema::new(
        table.iter().map(|(name, t, _, _)| arrow_schema::Field::new(*name, t.clone(), false)).collect::<Vec<_>>(),
    ))
}
