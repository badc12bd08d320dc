//! What the commands print, and what happens when nobody is reading. Rust ignores SIGPIPE,
//! so a closed pipe or a full disk behind standard output is a write error; `println!` would
//! panic on it. Here, a command that only reports (`replay`, `bake --status`, `bench`,
//! `points -`) ends quietly (exit 0, as ripgrep does) when its reader goes away, and a command
//! that produces data (`run`, `export`, `bake`, `scan`) keeps producing it, stops printing,
//! and says at exit, on standard error if that is still open, that its output was lost.
//!
//! `main.rs` shadows `println!` and `eprintln!` with [`say`] and [`warn`] for every module.

use std::fmt::Arguments;
use std::io::{ErrorKind, Write};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the running command only reports (and so may stop when its reader is gone).
static REPORTS_ONLY: AtomicBool = AtomicBool::new(false);
/// The first failed write to standard output, once one failed: what went wrong, and how
/// many lines were not printed since.
static STDOUT_LOST: Mutex<Option<(String, u64)>> = Mutex::new(None);

/// Declares the running command a report: a closed standard output ends it with exit 0.
pub fn reports_only() {
    REPORTS_ONLY.store(true, Ordering::Relaxed);
}

/// Prints one line to standard output (see the module's rules for when nobody reads it).
pub fn say(line: Arguments) {
    let mut lost = STDOUT_LOST.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, missed)) = lost.as_mut() {
        *missed += 1;
        return;
    }
    let mut out = std::io::stdout().lock();
    if let Err(e) = out.write_fmt(format_args!("{line}\n")).and_then(|_| out.flush()) {
        if REPORTS_ONLY.load(Ordering::Relaxed) {
            end_report(&e);
        }
        *lost = Some((describe(&e), 1));
    }
}

/// Prints one line to standard error; dropped if standard error cannot be written.
pub fn warn(line: Arguments) {
    let _ = std::io::stderr().lock().write_fmt(format_args!("{line}\n"));
}

/// A report whose standard output failed: a reader that went away ends it quietly, anything
/// else (a full disk) is an error.
fn end_report(e: &std::io::Error) -> ! {
    if e.kind() == ErrorKind::BrokenPipe {
        std::process::exit(0);
    }
    warn(format_args!("error: cannot write to standard output: {}", describe(e)));
    std::process::exit(1);
}

/// Passes a report's result through, ending the process quietly when its reader closed the
/// pipe (for commands that stream data to standard output themselves).
pub fn quiet_on_closed_pipe(result: std::io::Result<()>) -> anyhow::Result<()> {
    match result {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => std::process::exit(0),
        Err(e) => anyhow::bail!("cannot write to standard output: {}", describe(&e)),
        Ok(()) => Ok(()),
    }
}

/// The error of writing `path`, in words that name it and, for a full disk, say so.
pub fn write_error(path: &Path, e: std::io::Error) -> anyhow::Error {
    anyhow::anyhow!("cannot write '{}': {}", path.display(), describe(&e))
}

/// An I/O error in words; a full disk is "no space left on device" with what to do.
pub fn describe(e: &std::io::Error) -> String {
    match e.kind() {
        ErrorKind::StorageFull => "no space left on device (free some space or write elsewhere)".into(),
        ErrorKind::BrokenPipe => "its reader closed the pipe".into(),
        _ => e.to_string(),
    }
}

/// Says, at exit, that standard output was lost while the command went on producing its data.
pub fn report_lost_output() {
    let lost = STDOUT_LOST.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some((why, missed)) = lost {
        warn(format_args!(
            "warning: standard output could not be written ({why}); the command finished its work, and {missed} \
             line(s) of its report were not printed"
        ));
    }
}

/// Writes an 8-bit RGB image (rows top to bottom) as a PNG, as every output is written
/// ([`glint_record::OutputFile`]; the command checked the path first).
pub fn save_rgb(path: &Path, rgb: &[u8], width: usize, height: usize) -> anyhow::Result<()> {
    Ok(glint_record::write_rgb_png(path, rgb, width, height)?)
}

/// Writes `bytes` to `path` as every output is written ([`glint_record::OutputFile`]; the
/// command checked the path first).
pub fn write_output(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let mut file = glint_record::OutputFile::create(path, glint_record::Overwrite::Replace)?;
    file.write_all(bytes).map_err(|e| write_error(path, e))?;
    Ok(file.finish()?)
}
