//! How every file of a session is written: through a writer that hashes what it writes, with
//! one zstd level and one set of Parquet properties.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesBuilder};
use sha2::{Digest, Sha256};

use crate::RecordError;
use crate::schema::ROW_GROUP_ROWS;

/// A file writer that hashes every byte it passes on, so the file's SHA-256 is known when it
/// closes without reading it back.
pub(crate) struct HashWriter {
    inner: BufWriter<File>,
    hasher: Sha256,
    pub(crate) bytes: u64,
    /// The first error the file gave, kept so that a Parquet error wrapping it can be told
    /// for what it is (a full disk above all).
    pub(crate) failed: Option<std::io::ErrorKind>,
}

impl HashWriter {
    /// Hashes what goes to `file`, through a 1 MiB buffer.
    pub(crate) fn new(file: File) -> HashWriter {
        HashWriter { inner: BufWriter::with_capacity(1 << 20, file), hasher: Sha256::new(), bytes: 0, failed: None }
    }

    /// Flushes and syncs the file, and returns the SHA-256 (hex) of everything written.
    pub(crate) fn finish(&mut self, path: &Path) -> Result<String, RecordError> {
        self.flush().map_err(|e| RecordError::io("write", path, e))?;
        self.inner.get_ref().sync_all().map_err(|e| RecordError::io("sync", path, e))?;
        Ok(hex(&std::mem::take(&mut self.hasher).finalize()))
    }

    /// `e`, an error of the Parquet writer on this file (`path`), as the user should read it:
    /// a full disk or another failed write when the file gave one, else what Parquet said.
    pub(crate) fn error(&self, path: &Path, e: impl std::fmt::Display) -> RecordError {
        match self.failed {
            Some(kind) => RecordError::io("write", path, std::io::Error::new(kind, e.to_string())),
            None => RecordError::write(path, e),
        }
    }

    fn note<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(e) = &result {
            self.failed.get_or_insert(e.kind());
        }
        result
    }
}

impl Write for HashWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf);
        let n = self.note(n)?;
        self.hasher.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let r = self.inner.flush();
        self.note(r)
    }
}

/// zstd's level for every file glint writes, the pose tables through Arrow and the lidar
/// files' pages through [`crate::pages`]: its fastest regular level, Parquet's default.
pub(crate) fn zstd_level() -> ZstdLevel {
    ZstdLevel::default()
}

/// The properties every Parquet file of a session shares: zstd, chunk statistics, bounded row
/// groups. Nothing in them depends on when or where a file is written.
pub(crate) fn zstd_properties() -> WriterPropertiesBuilder {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(zstd_level()))
        .set_statistics_enabled(EnabledStatistics::Chunk)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
}

/// Lower-case hex of `bytes`.
pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 (lower-case hex) of the file at `path`, read in blocks.
pub fn file_sha256(path: &Path) -> Result<String, RecordError> {
    let mut file = File::open(path).map_err(|e| RecordError::io("open", path, e))?;
    let mut hasher = Sha256::new();
    let mut block = vec![0u8; 1 << 16];
    loop {
        let n = std::io::Read::read(&mut file, &mut block).map_err(|e| RecordError::io("read", path, e))?;
        if n == 0 {
            break;
        }
        hasher.update(&block[..n]);
    }
    Ok(hex(&hasher.finalize()))
}
