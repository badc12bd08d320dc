//! How every file is written: a session's through a writer that hashes what it writes, with
//! one zstd level and one set of Parquet properties; the user's outputs (point clouds,
//! images, bakes) through [`OutputFile`], which never replaces what is not a regular file and
//! never overwrites unless told to.

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch};
use arrow_schema::SchemaRef;
use parquet::arrow::ArrowWriter;

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

/// A Parquet file of float64 columns written a row group at a time and hashed as written:
/// what a pose table and a tick table (state, rangefinders) are underneath.
pub(crate) struct Float64Table {
    /// The file while written (`….partial`, or a recovery's temporary name).
    pub(crate) partial: PathBuf,
    writer: ArrowWriter<HashWriter>,
    schema: SchemaRef,
    /// Column-major rows not yet in a row group.
    cols: Vec<Vec<f64>>,
    rows: u64,
}

impl Float64Table {
    /// Creates `partial` (which must not exist) for the columns of `schema`, all float64.
    pub(crate) fn create(partial: PathBuf, schema: SchemaRef) -> Result<Float64Table, RecordError> {
        let file = File::create_new(&partial).map_err(|e| RecordError::io("create", &partial, e))?;
        let writer = ArrowWriter::try_new(HashWriter::new(file), schema.clone(), Some(zstd_properties().build()))
            .map_err(|e| RecordError::write(&partial, e))?;
        let cols = vec![Vec::new(); schema.fields().len()];
        Ok(Float64Table { partial, writer, schema, cols, rows: 0 })
    }

    /// Appends one row, a value per column in the schema's order.
    pub(crate) fn push(&mut self, row: impl IntoIterator<Item = f64>) -> Result<(), RecordError> {
        for (col, v) in self.cols.iter_mut().zip(row) {
            col.push(v);
        }
        self.rows += 1;
        if self.cols[0].len() >= ROW_GROUP_ROWS { self.write_group() } else { Ok(()) }
    }

    /// The rows appended so far.
    pub(crate) fn rows(&self) -> u64 {
        self.rows
    }

    fn write_group(&mut self) -> Result<(), RecordError> {
        if self.cols[0].is_empty() {
            return Ok(());
        }
        let arrays: Vec<ArrayRef> =
            self.cols.iter_mut().map(|c| Arc::new(Float64Array::from(std::mem::take(c))) as ArrayRef).collect();
        let batch =
            RecordBatch::try_new(self.schema.clone(), arrays).map_err(|e| RecordError::write(&self.partial, e))?;
        self.writer.write(&batch).map_err(|e| self.writer.inner().error(&self.partial, e))?;
        self.writer.flush().map_err(|e| self.writer.inner().error(&self.partial, e))
    }

    /// Writes the last rows and the footer, syncs the file (still under its partial name) and
    /// returns its SHA-256.
    pub(crate) fn finish(mut self) -> Result<String, RecordError> {
        self.write_group()?;
        self.writer.finish().map_err(|e| self.writer.inner().error(&self.partial, e))?;
        self.writer.inner_mut().finish(&self.partial)
    }
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

/// Whether a file written for the user may replace one already at its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overwrite {
    /// An existing file is an error naming it and `--force` (what every command does unless
    /// told otherwise).
    Refuse,
    /// An existing regular file is replaced once the new one is whole (`--force`).
    Replace,
}

/// A file written for the user: its bytes go to `<path>.partial`, renamed over `<path>` by
/// [`OutputFile::finish`], so a reader never sees half a file and a failed write leaves what
/// was there. Only regular files are ever replaced: a path naming a character device or a
/// pipe (`/dev/null`, a named pipe, a shell's `>(…)`) is written in place, and a folder,
/// a block device or a socket is refused, so no command can turn `/dev/null` into a file.
/// A `.partial` another process is writing is never touched (it is locked while written).
#[derive(Debug)]
pub struct OutputFile {
    path: PathBuf,
    /// `Some` while writing beside `path` (the `.partial` and its lock), `None` in place.
    partial: Option<PathBuf>,
    writer: BufWriter<File>,
    finished: bool,
}

impl OutputFile {
    /// Opens `path` for writing as [`OutputFile`] describes, creating its folder.
    pub fn create(path: &Path, overwrite: Overwrite) -> Result<OutputFile, RecordError> {
        match output_target(path, overwrite)? {
            Target::InPlace => {
                let file = OpenOptions::new().write(true).open(path).map_err(|e| output_error(path, e))?;
                Ok(OutputFile { path: path.into(), partial: None, writer: BufWriter::new(file), finished: false })
            }
            Target::Beside(path) => Self::beside(&path),
        }
    }

    /// Opens `<path>.partial` for writing, locked, creating `path`'s folder.
    fn beside(path: &Path) -> Result<OutputFile, RecordError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| RecordError::Output {
                path: path.into(),
                reason: format!("cannot create its folder '{}': {e}", dir.display()),
            })?;
        }
        let partial = crate::session::with_suffix(path, ".partial");
        if let Ok(meta) = std::fs::symlink_metadata(&partial)
            && !meta.file_type().is_file()
        {
            return Err(RecordError::Output {
                path: path.into(),
                reason: format!("'{}' is in the way and is not a file: remove it", partial.display()),
            });
        }
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&partial)
            .map_err(|e| output_error(&partial, e))?;
        match file.try_lock() {
            Ok(()) => {}
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(RecordError::Output {
                    path: path.into(),
                    reason: "another process is writing it right now".into(),
                });
            }
            Err(std::fs::TryLockError::Error(e)) => return Err(output_error(&partial, e)),
        }
        // What a killed writer left goes.
        file.set_len(0).map_err(|e| output_error(&partial, e))?;
        Ok(OutputFile { path: path.into(), partial: Some(partial), writer: BufWriter::new(file), finished: false })
    }

    /// Where the bytes end up.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Flushes the file, syncs it and renames it into place; the error names the file (a full
    /// disk as such).
    pub fn finish(mut self) -> Result<(), RecordError> {
        self.finished = true;
        let target = self.partial.clone().unwrap_or_else(|| self.path.clone());
        self.writer.flush().map_err(|e| output_error(&self.path, e))?;
        let Some(partial) = &self.partial else { return Ok(()) };
        self.writer.get_ref().sync_all().map_err(|e| output_error(&target, e))?;
        std::fs::rename(partial, &self.path).map_err(|e| output_error(partial, e))
    }
}

impl Write for OutputFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

impl Drop for OutputFile {
    /// An output dropped before [`OutputFile::finish`] (an error on the way) leaves nothing.
    fn drop(&mut self) {
        if let (false, Some(partial)) = (self.finished, &self.partial) {
            let _ = std::fs::remove_file(partial);
        }
    }
}

/// The I/O error `e` on the output `path`, in words; a full disk says so, with what to do.
fn output_error(path: &Path, e: std::io::Error) -> RecordError {
    let reason = match e.kind() {
        std::io::ErrorKind::StorageFull => "no space left on device (free some space, or write elsewhere)".into(),
        _ => e.to_string(),
    };
    RecordError::Output { path: path.into(), reason }
}

/// Writes `img` as a PNG at `path` through [`OutputFile`], replacing a file there (a command
/// checks its outputs with [`check_output`] before it starts); errors name the path.
pub(crate) fn save_png<P>(img: &image::ImageBuffer<P, Vec<P::Subpixel>>, path: &Path) -> Result<(), RecordError>
where
    P: image::PixelWithColorType,
    [P::Subpixel]: image::EncodableLayout,
{
    let mut file = OutputFile::create(path, Overwrite::Replace)?;
    img.write_with_encoder(image::codecs::png::PngEncoder::new(&mut file))
        .map_err(|e| RecordError::Image { path: path.to_path_buf(), reason: e.to_string() })?;
    file.finish()
}

/// Writes an 8-bit RGB image (`width` × `height`, rows top to bottom) as a PNG at `path`, as
/// every image glint draws is written (see [`OutputFile`]).
pub fn write_rgb_png(path: &Path, rgb: &[u8], width: usize, height: usize) -> Result<(), RecordError> {
    let img =
        image::RgbImage::from_raw(width as u32, height as u32, rgb.to_vec()).ok_or_else(|| RecordError::Image {
            path: path.to_path_buf(),
            reason: format!("{} bytes are not a {width} × {height} RGB image", rgb.len()),
        })?;
    save_png(&img, path)
}

/// Where an output's bytes go.
enum Target {
    /// Into the device or pipe the path names.
    InPlace,
    /// Into a `.partial` beside this file (the path, or the file a link names), renamed over it.
    Beside(PathBuf),
}

/// Whether an output can be written at `path` under `overwrite`, as [`OutputFile::create`]
/// would write it: what a command asks of each of its outputs before it starts its work, so
/// that a refusal comes before minutes of computing.
pub fn check_output(path: &Path, overwrite: Overwrite) -> Result<(), RecordError> {
    output_target(path, overwrite).map(drop)
}

/// The one decision of where an output at `path` goes, or why it cannot be written.
fn output_target(path: &Path, overwrite: Overwrite) -> Result<Target, RecordError> {
    let found = match std::fs::metadata(path) {
        Ok(meta) => meta.file_type(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Target::Beside(path.into())),
        Err(e) => return Err(output_error(path, e)),
    };
    let refuse = |reason: String| Err(RecordError::Output { path: path.into(), reason });
    if writes_in_place(found) {
        return Ok(Target::InPlace);
    }
    if !found.is_file() {
        return refuse(format!("it is {}, and glint writes only files (or into a device or a pipe)", kind_name(found)));
    }
    if overwrite == Overwrite::Refuse {
        return refuse(
            "it exists, and glint never overwrites an output unless told to: pass --force to replace it, or choose \
             another path"
                .into(),
        );
    }
    // A link to a file: the file it names is replaced, the link kept.
    Ok(Target::Beside(std::fs::canonicalize(path).map_err(|e| output_error(path, e))?))
}

/// Whether glint writes into a path of this kind where it is, rather than beside it.
fn writes_in_place(kind: std::fs::FileType) -> bool {
    use std::os::unix::fs::FileTypeExt;
    kind.is_char_device() || kind.is_fifo()
}

/// A file type in words.
fn kind_name(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    match kind {
        k if k.is_dir() => "a folder",
        k if k.is_block_device() => "a block device",
        k if k.is_socket() => "a socket",
        _ => "not a regular file",
    }
}
