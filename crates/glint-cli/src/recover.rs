//! `glint recover`: salvages the episodes a run did not finish (killed, a full disk, a
//! crash) up to their last complete row group, and says per file what was salvaged and what
//! was lost (`glint_record::recover_session` does the work).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use glint_record::{SalvageOutcome, recover_session};

/// Arguments of `glint recover`.
#[derive(Args)]
pub struct RecoverArgs {
    /// Session folder (`<output_dir>/session_<YYYYMMDD>_<HHMMSS>/`).
    session: PathBuf,
}

/// Bytes in words.
fn size(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 20 => format!("{:.1} MB", b as f64 / 1e6),
        b if b >= 1 << 10 => format!("{:.1} kB", b as f64 / 1e3),
        b => format!("{b} bytes"),
    }
}

pub fn run(args: RecoverArgs) -> Result<()> {
    let dir = &args.session;
    let report = recover_session(dir)?;
    if report.files.is_empty() {
        println!("{}: nothing to recover (no .partial lidar files)", dir.display());
    }
    let (mut nothing, mut failed) = (0, Vec::new());
    for f in &report.files {
        println!("{}:", f.partial.display());
        match &f.outcome {
            SalvageOutcome::Recovered {
                path,
                whole,
                row_groups,
                rows,
                last_timestamp,
                lost_bytes,
                pose_rows,
                lost_ticks,
                pose_problem,
                ..
            } => {
                println!(
                    "  recovered as {}: {row_groups} row group(s), {rows} rows, up to t = {last_timestamp:.3} s",
                    path.display()
                );
                if *whole {
                    println!("  lost: nothing (the file was finished, only not renamed)");
                } else {
                    println!(
                        "  lost: the rows after the last complete row group ({lost_ticks} tick(s)); {} cut off the file",
                        size(*lost_bytes)
                    );
                }
                match (pose_rows, pose_problem) {
                    (Some(n), _) => println!("  pose table: {n} tick(s)"),
                    (None, Some(why)) => println!("  pose table: none ({why}); the rows cannot be placed in the world"),
                    (None, None) => {
                        println!("  pose table: none (the episode left neither a pose table nor a pose log)")
                    }
                }
            }
            SalvageOutcome::TableRecovered { table, path, rows } => {
                println!("  recovered as {}: {rows} tick(s) of {} values from its log", path.display(), table.what());
            }
            SalvageOutcome::Nothing { reason } => {
                nothing += 1;
                println!("  nothing salvaged: {reason}; the file is left as it is (delete it if you do not need it)");
            }
            SalvageOutcome::Failed { reason } => {
                failed.push(f.partial.display().to_string());
                println!(
                    "  not salvaged: {reason}; the file is left as it is (run `glint recover` again once that is fixed)"
                );
            }
            _ => println!("  {:?}", f.outcome),
        }
    }
    for index in &report.logged {
        println!("episode {index}: logged as recovered in meta/episodes.jsonl");
    }
    for p in &report.removed {
        println!("removed {} (its file was already finished)", p.display());
    }
    let salvaged = report.files.len() - nothing - failed.len();
    if !report.files.is_empty() {
        println!("{salvaged} file(s) recovered, {nothing} with nothing to salvage, {} failed", failed.len());
        println!("check the session with: glint replay {}", dir.display());
    }
    recover_mcap_files(dir, &mut failed);
    if !failed.is_empty() {
        anyhow::bail!("{} file(s) could not be salvaged: {}", failed.len(), failed.join(", "));
    }
    Ok(())
}

/// Closes the MCAP files a killed `glint run --mcap` left `.partial` in `SESSION/mcap/`
/// (`glint_interop::recover_session_mcap`), and says what became of each.
fn recover_mcap_files(session: &std::path::Path, failed: &mut Vec<String>) {
    for salvage in glint_interop::recover_session_mcap(session) {
        match salvage.outcome {
            Ok((done, messages)) => println!(
                "{}:\n  closed as {}: {messages} message(s) of its whole chunks",
                salvage.partial.display(),
                done.display()
            ),
            Err(e) => {
                println!("{}:\n  not closed: {e}", salvage.partial.display());
                failed.push(salvage.partial.display().to_string());
            }
        }
    }
}
