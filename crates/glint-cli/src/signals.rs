//! Stopping a long command by signal. SIGINT (Ctrl-C), SIGTERM, SIGQUIT and SIGHUP (a closed
//! terminal or SSH session) ask it to stop: the run closes the files of the episode in
//! progress, marks it interrupted, and the process exits 128 + the signal's number (130, 143,
//! 131, 129), as a shell reports a process the signal ended. A second signal ends the process
//! at once, leaving the episode in progress as `.partial` files for `glint recover`. Every
//! long-running command (`run`, `serve`) stops on the same [`SIGNALS`].

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use anyhow::{Context, Result};
use signal_hook::consts::{SIGINT, SIGTERM};

/// The signals that stop a long-running command, each closing what it records.
#[cfg(unix)]
pub const SIGNALS: [i32; 4] = [SIGINT, SIGTERM, signal_hook::consts::SIGQUIT, signal_hook::consts::SIGHUP];
#[cfg(not(unix))]
pub const SIGNALS: [i32; 2] = [SIGINT, SIGTERM];

/// Whether a stopping signal has arrived, and which.
#[derive(Clone)]
pub struct Stop {
    caught: Arc<AtomicBool>,
    signal: Arc<AtomicUsize>,
}

impl Stop {
    /// Installs the handlers.
    pub fn install() -> Result<Stop> {
        let stop = Stop { caught: Arc::new(AtomicBool::new(false)), signal: Arc::new(AtomicUsize::new(0)) };
        for sig in SIGNALS {
            let name = signal_name(sig);
            // Registered first, so it sees the flag as the previous signal left it.
            signal_hook::flag::register_conditional_shutdown(sig, 128 + sig, stop.caught.clone())
                .with_context(|| format!("cannot install the {name} handler"))?;
            signal_hook::flag::register_usize(sig, stop.signal.clone(), sig as usize)
                .with_context(|| format!("cannot install the {name} handler"))?;
            signal_hook::flag::register(sig, stop.caught.clone())
                .with_context(|| format!("cannot install the {name} handler"))?;
        }
        Ok(stop)
    }

    /// Whether a stopping signal has arrived.
    pub fn requested(&self) -> bool {
        self.caught.load(Ordering::SeqCst)
    }

    /// The signal that arrived, if one did.
    pub fn signal(&self) -> Option<i32> {
        match self.signal.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }

    /// Exits 128 + the signal's number if a signal arrived (after `message`, which is given
    /// the signal's name); returns otherwise.
    pub fn exit_if_signalled(&self, message: impl Fn(&str) -> String) {
        if let Some(sig) = self.signal() {
            eprintln!("{}", message(signal_name(sig)));
            std::process::exit(128 + sig);
        }
    }
}

/// The signal's usual name.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "SIGINT",
        SIGTERM => "SIGTERM",
        #[cfg(unix)]
        signal_hook::consts::SIGQUIT => "SIGQUIT",
        #[cfg(unix)]
        signal_hook::consts::SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}
