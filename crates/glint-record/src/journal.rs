//! The two side files that keep an episode in progress salvageable (`glint recover`), and
//! their readers. Both are appended to, never rewritten, and removed when the episode
//! finishes.
//!
//! - `lidar-<Name>-NNN.parquet.partial.groups`, the row-group journal: after each row group of
//!   the lidar file has been handed to the operating system, one record with the file's length
//!   at that point and the Parquet footer of a file holding that row group alone. The footer of
//!   the file so far is the records' row groups under the first record's schema and key-value
//!   metadata, so a `.partial` is salvaged by truncating it to the last record's length and
//!   appending that footer. A record is `u32` payload length, `u32` CRC-32 of the payload,
//!   then the payload (`u64` file length, footer bytes), all little-endian: a record torn by a
//!   kill or a full disk fails its length or CRC and ends the journal there. Appending one
//!   record per row group costs the same however long the episode runs (rewriting the whole
//!   footer after each row group would write a footer that grows with every one).
//! - `lidar-<Name>-NNN.poses.parquet.partial.ticks`, the pose log: one record of eight
//!   float64 (the pose table's row) per tick, written before the tick's lidar rows, since a
//!   pose table's row groups hold [`crate::ROW_GROUP_ROWS`] ticks and so almost never complete
//!   before the episode ends. A torn last record is dropped.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::file::metadata::{
    FileMetaData, ParquetMetaData, ParquetMetaDataBuilder, ParquetMetaDataReader, ParquetMetaDataWriter,
    RowGroupMetaData,
};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::{SchemaDescPtr, SchemaDescriptor};

use crate::RecordError;
use crate::files::HashWriter;

/// Appended to a lidar `.partial`'s name: its row-group journal.
pub(crate) const GROUPS_SUFFIX: &str = ".groups";
/// Appended to a pose table's `.partial` name: its pose log.
pub(crate) const TICKS_SUFFIX: &str = ".ticks";

const GROUPS_MAGIC: &[u8; 8] = b"GLINTRG1";
const TICKS_MAGIC: &[u8; 8] = b"GLINTPT1";

/// `partial` with `suffix` appended to its file name.
pub(crate) fn side_path(partial: &Path, suffix: &str) -> PathBuf {
    let mut s = partial.as_os_str().to_owned();
    s.push(suffix);
    PathBuf::from(s)
}

/// Creates `path` (which must not exist) and writes `magic` into it.
fn create(path: &Path, magic: &[u8; 8]) -> Result<File, RecordError> {
    let mut file = File::create_new(path).map_err(|e| RecordError::io("create", path, e))?;
    file.write_all(magic).map_err(|e| RecordError::io("write", path, e))?;
    Ok(file)
}

/// The row-group journal of one lidar file being written.
pub(crate) struct GroupJournal {
    pub(crate) path: PathBuf,
    file: File,
    schema: SchemaDescPtr,
    /// Reused for each record.
    record: Vec<u8>,
}

impl GroupJournal {
    /// Creates the journal of the lidar file `partial` (whose writer is `file`).
    pub(crate) fn create(partial: &Path, file: &SerializedFileWriter<HashWriter>) -> Result<GroupJournal, RecordError> {
        let path = side_path(partial, GROUPS_SUFFIX);
        let journal = create(&path, GROUPS_MAGIC)?;
        let schema = Arc::new(SchemaDescriptor::new(file.schema_descr().root_schema_ptr()));
        Ok(GroupJournal { path, file: journal, schema, record: Vec::new() })
    }

    /// Records the row group `file` laid last, once the file's bytes are flushed to the
    /// operating system (the caller flushes).
    pub(crate) fn append(&mut self, file: &SerializedFileWriter<HashWriter>) -> Result<(), RecordError> {
        let Some(group) = file.flushed_row_groups().last() else { return Ok(()) };
        let props = file.properties();
        let meta = FileMetaData::new(
            props.writer_version().as_num(),
            group.num_rows(),
            Some(props.created_by().to_string()),
            props.key_value_metadata().cloned(),
            self.schema.clone(),
            None,
        );
        let meta = ParquetMetaDataBuilder::new(meta).set_row_groups(vec![group.clone()]).build();
        let record = &mut self.record;
        record.clear();
        record.extend_from_slice(&[0; 8]);
        record.extend_from_slice(&(file.bytes_written() as u64).to_le_bytes());
        ParquetMetaDataWriter::new(&mut *record, &meta)
            .with_write_path_in_schema(props.write_path_in_schema())
            .finish()
            .map_err(|e| RecordError::write(&self.path, e))?;
        let payload = &record[8..];
        let len = u32::try_from(payload.len()).map_err(|_| RecordError::write(&self.path, "a footer over 4 GiB"))?;
        let crc = crc32fast::hash(payload);
        record[..4].copy_from_slice(&len.to_le_bytes());
        record[4..8].copy_from_slice(&crc.to_le_bytes());
        // One write per record: a kill leaves it whole or torn at the end, never interleaved.
        self.file.write_all(record).map_err(|e| RecordError::io("write", &self.path, e))
    }
}

/// The pose log of one pose table being written.
pub(crate) struct TickLog {
    pub(crate) path: PathBuf,
    file: File,
}

impl TickLog {
    /// Creates the pose log of the pose table `partial`.
    pub(crate) fn create(partial: &Path) -> Result<TickLog, RecordError> {
        let path = side_path(partial, TICKS_SUFFIX);
        let file = create(&path, TICKS_MAGIC)?;
        Ok(TickLog { path, file })
    }

    /// Appends one tick's pose row (one write, unbuffered: it is on its way to the disk before
    /// the tick's lidar rows are).
    pub(crate) fn push(&mut self, row: &[f64; 8]) -> Result<(), RecordError> {
        let bytes: &[u8] = bytemuck::cast_slice(row);
        self.file.write_all(bytes).map_err(|e| RecordError::io("write", &self.path, e))
    }
}

/// One record of a row-group journal: the lidar file's length once the row group was laid,
/// and the footer of a file holding that row group alone.
pub(crate) struct JournaledGroup {
    pub(crate) end: u64,
    pub(crate) footer: ParquetMetaData,
}

/// Reads the whole records of the row-group journal at `path`, in order; from the first
/// record that is not whole (torn by the end of the run) on, nothing. An error when it cannot
/// be read or is not a journal.
pub(crate) fn read_journal(path: &Path) -> Result<Vec<JournaledGroup>, RecordError> {
    let bytes = std::fs::read(path).map_err(|e| RecordError::io("read", path, e))?;
    let mut rest = strip_magic(path, &bytes, GROUPS_MAGIC, "row-group journal")?;
    let mut groups = Vec::new();
    while rest.len() >= 8 {
        let len = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes")) as usize;
        let crc = u32::from_le_bytes(rest[4..8].try_into().expect("4 bytes"));
        let Some(payload) = rest.get(8..8 + len) else { break };
        if len < 16 || crc32fast::hash(payload) != crc {
            break;
        }
        let end = u64::from_le_bytes(payload[..8].try_into().expect("8 bytes"));
        // The footer's metadata, without its length and magic.
        let Ok(footer) = ParquetMetaDataReader::decode_metadata(&payload[8..len - 8]) else { break };
        if footer.num_row_groups() != 1 {
            break;
        }
        groups.push(JournaledGroup { end, footer });
        rest = &rest[8 + len..];
    }
    Ok(groups)
}

/// The footer (metadata, length, magic) of a file holding `groups`' row groups in order,
/// under the first group's schema and key-value metadata.
pub(crate) fn footer_of(groups: &[JournaledGroup]) -> parquet::errors::Result<Vec<u8>> {
    let first = groups
        .first()
        .ok_or_else(|| parquet::errors::ParquetError::General("no row group to describe".into()))?
        .footer
        .file_metadata();
    let row_groups: Vec<RowGroupMetaData> = groups.iter().map(|g| g.footer.row_group(0).clone()).collect();
    let meta = FileMetaData::new(
        first.version(),
        row_groups.iter().map(RowGroupMetaData::num_rows).sum(),
        first.created_by().map(str::to_string),
        first.key_value_metadata().cloned(),
        first.schema_descr_ptr(),
        None,
    );
    let meta = ParquetMetaDataBuilder::new(meta).set_row_groups(row_groups).build();
    let mut out = Vec::new();
    ParquetMetaDataWriter::new(&mut out, &meta).finish()?;
    Ok(out)
}

/// The records of the log `bytes` (read from `path`), after its magic; an error saying whether
/// the log is empty, cut inside its magic, or not a glint log at all.
fn strip_magic<'a>(path: &Path, bytes: &'a [u8], magic: &[u8; 8], what: &'static str) -> Result<&'a [u8], RecordError> {
    let reason = match bytes.strip_prefix(magic) {
        Some(rest) => return Ok(rest),
        None if bytes.is_empty() => "it is empty (the disk filled, or the run was killed, as it was created)",
        None if magic.starts_with(bytes) => "it was cut off inside its header (the disk filled as it was created)",
        None => "it does not start with a glint log header: it is another file, or damaged",
    };
    Err(RecordError::Log { path: path.to_path_buf(), what, reason: reason.into() })
}

/// The pose rows of the pose log at `path` (a torn last row left out).
pub(crate) fn read_ticks(path: &Path) -> Result<Vec<[f64; 8]>, RecordError> {
    let bytes = std::fs::read(path).map_err(|e| RecordError::io("read", path, e))?;
    let rest = strip_magic(path, &bytes, TICKS_MAGIC, "pose log")?;
    Ok(rest
        .chunks_exact(64)
        .map(|c| std::array::from_fn(|i| f64::from_le_bytes(c[8 * i..8 * i + 8].try_into().expect("8 bytes"))))
        .collect())
}
