//! `glint serve`: the hazel.rpc gRPC server (LuckyEngine's API) over a manifest's scene, until
//! Ctrl-C (SIGINT), SIGTERM, SIGQUIT or SIGHUP, which stop it cleanly and close an armed recording.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use std::sync::Arc;

use glint_interop::LiveView;
use glint_server::{AddedOutput, EngineOptions, Pace, ServeOptions};
use glint_sim::{Output, Simulation};

const MIB: usize = 1024 * 1024;

/// Arguments of `glint serve`.
#[derive(Args)]
pub struct ServeArgs {
    /// Scene manifest (TOML): scene, lidars, `[[observation]]` for the agent step loop.
    manifest: PathBuf,
    /// Address to listen on; port 0 picks a free port (printed). Anything but loopback is
    /// reachable from other machines, and the server has no authentication.
    #[arg(long, default_value = glint_server::DEFAULT_ADDR, value_parser = parse_addr)]
    addr: SocketAddr,
    /// Worlds side by side; agent `agent_N` is world N, and LidarService reads world 0.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=4096))]
    worlds: u32,
    /// How the simulation advances: on the wall clock, as fast as it goes, or only on
    /// AgentService.Step.
    #[arg(long, value_enum, default_value_t = PaceArg::Realtime)]
    pace: PaceArg,
    /// Record every lidar of every world into a session under this folder, an episode per
    /// ResetAgent.
    #[arg(long)]
    record: Option<PathBuf>,
    /// Run seed (default: the manifest's `[return_model] seed`).
    #[arg(long, value_parser = crate::parse_seed)]
    seed: Option<u64>,
    /// PEM certificate for TLS (with --tls-key).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM private key for TLS (with --tls-cert).
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Largest response in MiB (default 4, the gRPC default a client accepts).
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u32).range(1..=1024))]
    max_message_mib: u32,
    /// Publish world 0's lidar clouds, frames and camera images over the Foxglove WebSocket
    /// protocol while it serves, on this port of --live-host (0: a free one; the address is
    /// printed). Every lidar casts on every tick while a live view is on.
    #[arg(long, value_name = "PORT", num_args = 0..=1, default_missing_value = "8765")]
    live: Option<u16>,
    /// The address the live view listens on (loopback unless told otherwise).
    #[arg(long, value_name = "HOST", default_value = "127.0.0.1", requires = "live")]
    live_host: String,
}

/// The form `--addr` takes, for its messages.
const ADDR_FORM: &str = "give HOST:PORT with an IP address and a port from 0 to 65535 (0 picks a free one), e.g. \
                         127.0.0.1:50051, 0.0.0.0:50051 or [::1]:50051";

/// `--addr`: an IP address and a port, or a message saying which part is wrong and the form
/// expected (std's own error is "invalid socket address syntax" for every mistake).
fn parse_addr(text: &str) -> Result<SocketAddr, String> {
    let Some((host, port)) = text.rsplit_once(':') else {
        return Err(format!("'{text}' has no port: {ADDR_FORM}"));
    };
    let port = match port.parse::<u64>() {
        Ok(p) => u16::try_from(p).map_err(|_| format!("port {p} is out of range: {ADDR_FORM}"))?,
        Err(_) if port.is_empty() => return Err(format!("'{text}' has no port after the ':': {ADDR_FORM}")),
        Err(_) => return Err(format!("port '{port}' is not a number: {ADDR_FORM}")),
    };
    let bracketed = host.strip_prefix('[').and_then(|h| h.strip_suffix(']'));
    let ip = match bracketed.unwrap_or(host).parse::<IpAddr>() {
        Ok(IpAddr::V6(_)) if bracketed.is_none() => {
            return Err(format!("the IPv6 address '{host}' needs brackets: [{host}]:{port}"));
        }
        Ok(ip) => ip,
        Err(_) if host.eq_ignore_ascii_case("localhost") => {
            return Err(format!("the host 'localhost' is a name, not an IP address: use 127.0.0.1:{port}"));
        }
        Err(_) => return Err(format!("the host '{host}' is not an IP address: {ADDR_FORM}")),
    };
    Ok(SocketAddr::new(ip, port))
}

/// `--pace`.
#[derive(Clone, Copy, ValueEnum)]
enum PaceArg {
    /// One tick per tick of simulated time, on the wall clock.
    Realtime,
    /// Ticks back to back.
    Free,
    /// Only AgentService.Step advances the simulation.
    Lockstep,
}

pub fn run(args: ServeArgs) -> Result<()> {
    let manifest = crate::manifest_with_lidars(&args.manifest)?;
    let pace = match args.pace {
        PaceArg::Realtime => Pace::Realtime,
        PaceArg::Free => Pace::Free,
        PaceArg::Lockstep => Pace::Lockstep,
    };
    if !args.addr.ip().is_loopback() {
        eprintln!(
            "warning: glint serve listens on {}, which other machines can reach, and it has no authentication: \
             anyone who can connect can drive the simulation and write bakes{}",
            args.addr,
            if args.tls_cert.is_some() { "" } else { "; add --tls-cert and --tls-key to encrypt the traffic" }
        );
    }
    let output = match args.live {
        Some(port) => {
            let view = Arc::new(LiveView::start(&args.live_host, port)?);
            println!("live view: ws://{}:{}", args.live_host, view.port());
            let make = move |sim: &Simulation| -> Result<Box<dyn Output>, String> {
                Ok(Box::new(view.output(sim).map_err(|e| e.to_string())?))
            };
            Some(AddedOutput(Arc::new(make)))
        }
        None => None,
    };
    let options = ServeOptions {
        engine: EngineOptions {
            manifest,
            nworld: args.worlds as usize,
            pace,
            record: args.record.clone(),
            seed: args.seed,
            output,
        },
        addr: args.addr,
        tls: args.tls_cert.zip(args.tls_key),
        max_message: args.max_message_mib as usize * MIB,
    };
    let runtime = glint_server::server_runtime().context("cannot start the server's runtime")?;
    // The handlers are registered before the server says it listens: a signal sent as soon as
    // the listening line appears must stop it cleanly, not kill it.
    let stop = runtime
        .block_on(async { StopSignals::register() })
        .context("cannot watch for SIGINT, SIGTERM, SIGQUIT and SIGHUP")?;
    let summary = runtime.block_on(async move {
        let shutdown = async move {
            let signal = stop.wait().await;
            eprintln!("glint serve: {signal}: stopping");
        };
        let listening = |addr: SocketAddr| {
            println!(
                "glint serve: listening on {addr} ({} pace, {} worlds): {}",
                pace.name(),
                args.worlds,
                glint_server::served_summary()
            );
        };
        glint_server::serve(options, shutdown, listening).await
    })?;
    if let Some(r) = summary.recording {
        println!("recorded {} episodes into {}", r.episodes, r.dir.display());
    }
    Ok(())
}

/// The signals that stop a long-running command ([`crate::signals::SIGNALS`]: SIGINT,
/// SIGTERM, SIGQUIT, SIGHUP), watched from the moment they are registered.
struct StopSignals {
    arrived: tokio::sync::mpsc::Receiver<i32>,
}

impl StopSignals {
    /// Registers the handlers (inside the runtime).
    fn register() -> std::io::Result<StopSignals> {
        let (tx, arrived) = tokio::sync::mpsc::channel(crate::signals::SIGNALS.len());
        for sig in crate::signals::SIGNALS {
            #[cfg(unix)]
            let mut stream = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::from_raw(sig))?;
            let tx = tx.clone();
            tokio::spawn(async move {
                #[cfg(unix)]
                let arrived = stream.recv().await.is_some();
                #[cfg(not(unix))]
                let arrived = sig == signal_hook::consts::SIGINT && tokio::signal::ctrl_c().await.is_ok();
                if arrived {
                    let _ = tx.send(sig).await;
                }
            });
        }
        Ok(StopSignals { arrived })
    }

    /// Waits for one of the signals and names it.
    async fn wait(mut self) -> &'static str {
        self.arrived.recv().await.map_or("a signal", crate::signals::signal_name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse_and_mistakes_are_named() {
        assert_eq!(parse_addr("127.0.0.1:0").unwrap().to_string(), "127.0.0.1:0");
        assert_eq!(parse_addr("[::1]:50051").unwrap().to_string(), "[::1]:50051");
        for (bad, said) in [
            ("127.0.0.1:99999", "port 99999 is out of range"),
            ("127.0.0.1:-1", "port '-1' is not a number"),
            ("127.0.0.1:", "no port after"),
            ("127.0.0.1", "has no port"),
            ("localhost:50051", "use 127.0.0.1:50051"),
            ("example.com:1", "the host 'example.com' is not an IP address"),
            ("::1:50051", "needs brackets"),
        ] {
            let e = parse_addr(bad).unwrap_err();
            assert!(e.contains(said), "{bad}: {e}");
        }
    }
}
