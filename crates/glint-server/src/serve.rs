//! Starting and stopping the server: the loop, the services, reflection, TLS, the address.

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use glint_sim::RecordingSummary;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};

use crate::agent::Agents;
use crate::camera::Cameras;
use crate::engine::{Engine, EngineOptions, EngineThread};
use crate::extensions::GlintLidar;
use crate::lidar::Lidar;
use crate::proto::agent_service_server::AgentServiceServer;
use crate::proto::camera_service_server::CameraServiceServer;
use crate::proto::glint::glint_lidar_service_server::GlintLidarServiceServer;
use crate::proto::lidar_service_server::LidarServiceServer;
use crate::proto::mujoco_service_server::MujocoServiceServer;
use crate::size::Limit;
use crate::unserved::UnservedLayer;
use crate::{ServerError, proto};

/// How far the server's threads are lowered below the simulation loop (nice steps).
pub const SERVER_NICE: i32 = 10;

/// A runtime for the server whose threads yield to the simulation loop: a client polling
/// hard may wait for a core, the loop should not (see [`glint_sim::lower_thread_priority`]).
pub fn server_runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name("glint-grpc")
        .on_thread_start(|| {
            glint_sim::lower_thread_priority(SERVER_NICE);
        })
        .build()
}

/// The default address: loopback only.
pub const DEFAULT_ADDR: &str = "127.0.0.1:50051";

/// The default largest response, bytes: gRPC's default receive limit, which `luckyrobots`
/// keeps.
pub const DEFAULT_MAX_MESSAGE: usize = 4 * 1024 * 1024;

/// HTTP/2 flow-control window of a stream, bytes.
pub(crate) const WINDOW: u32 = 8 * 1024 * 1024;

/// Largest HTTP/2 frame either side accepts, bytes (HTTP/2's default is 16 KiB).
pub(crate) const FRAME: u32 = 1024 * 1024;

/// How `glint serve` runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The simulation loop.
    pub engine: EngineOptions,
    /// Where to listen (port 0: any free port).
    pub addr: SocketAddr,
    /// A PEM certificate and key for TLS; plain text without.
    pub tls: Option<(PathBuf, PathBuf)>,
    /// The largest response, bytes.
    pub max_message: usize,
}

/// What a server that stopped leaves: the recording it closed, if one was armed.
#[derive(Debug)]
pub struct ServeSummary {
    /// The recording's summary.
    pub recording: Option<RecordingSummary>,
}

/// Serves until `shutdown` completes, then stops the loop and closes an armed recording.
/// `on_listen` is told the address once the server listens (the port, when 0 was asked).
pub async fn serve(
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send,
    on_listen: impl FnOnce(SocketAddr),
) -> Result<ServeSummary, ServerError> {
    let (listener, builder) = listen(&options).await?;
    let started = Engine::start(options.engine.clone())?;
    run(listener, builder, started, options.max_message, shutdown, on_listen).await
}

/// [`serve`] over a loop already started (the benchmark starts it on its own thread, where
/// the server's lowered priority does not reach it, and keeps a handle on it).
pub(crate) async fn serve_engine(
    options: &ServeOptions,
    (engine, thread): (Engine, EngineThread),
    shutdown: impl Future<Output = ()> + Send,
    on_listen: impl FnOnce(SocketAddr),
) -> Result<ServeSummary, ServerError> {
    match listen(options).await {
        Ok((listener, builder)) => {
            run(listener, builder, (engine, thread), options.max_message, shutdown, on_listen).await
        }
        Err(e) => {
            engine.request_stop();
            drop(engine);
            tokio::task::spawn_blocking(move || thread.join()).await.ok();
            Err(e)
        }
    }
}

/// Binds the address and sets up HTTP/2 and TLS.
async fn listen(options: &ServeOptions) -> Result<(tokio::net::TcpListener, Server), ServerError> {
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| ServerError::Bind { addr: options.addr.to_string(), reason: e.to_string() })?;
    // A scan is up to a few MiB: HTTP/2's default 64 KiB windows would make each one wait for
    // dozens of window updates.
    let mut builder = Server::builder()
        .initial_stream_window_size(Some(WINDOW))
        .initial_connection_window_size(Some(2 * WINDOW))
        .max_frame_size(Some(FRAME));
    if let Some((cert, key)) = &options.tls {
        builder = with_tls(builder, cert, key)?;
    }
    Ok((listener, builder))
}

/// Serves the services over `engine` on `listener` until `shutdown`, then stops the loop.
async fn run(
    listener: tokio::net::TcpListener,
    builder: Server,
    (engine, thread): (Engine, EngineThread),
    max: usize,
    shutdown: impl Future<Output = ()> + Send,
    on_listen: impl FnOnce(SocketAddr),
) -> Result<ServeSummary, ServerError> {
    let stop = |engine: Engine, thread: EngineThread| async move {
        engine.request_stop();
        drop(engine);
        tokio::task::spawn_blocking(move || thread.join()).await.unwrap_or(None)
    };
    let local = match listener.local_addr() {
        Ok(local) => local,
        Err(e) => {
            let addr = format!("{listener:?}");
            stop(engine, thread).await;
            return Err(ServerError::Bind { addr, reason: e.to_string() });
        }
    };
    let reflection = || {
        let v1 = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
            .build_v1()
            .map_err(|e| ServerError::Start(format!("reflection: {e}")))?;
        let v1alpha = tonic_reflection::server::Builder::configure()
            .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
            .build_v1alpha()
            .map_err(|e| ServerError::Start(format!("reflection: {e}")))?;
        Ok::<_, ServerError>((v1, v1alpha))
    };
    let (reflection_v1, reflection_v1alpha) = match reflection() {
        Ok(r) => r,
        Err(e) => {
            stop(engine, thread).await;
            return Err(e);
        }
    };
    // Each service sizes its growing answers before building them (`size.rs`); tonic's own
    // limit is the backstop for an answer reckoned wrong.
    let limit = Limit::new(max);
    let agents = Agents::new(engine.clone(), limit);
    let router = builder
        .layer(UnservedLayer::new())
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(LidarServiceServer::new(Lidar::new(engine.clone(), limit)).max_encoding_message_size(max))
        .add_service(AgentServiceServer::new(agents.clone()).max_encoding_message_size(max))
        .add_service(MujocoServiceServer::new(agents).max_encoding_message_size(max))
        .add_service(CameraServiceServer::new(Cameras::new(engine.clone(), limit)).max_encoding_message_size(max))
        .add_service(GlintLidarServiceServer::new(GlintLidar::new(engine.clone())));
    on_listen(local);
    let served =
        router.serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), shutdown).await;
    let recording = stop(engine, thread).await;
    served.map_err(|e| ServerError::Transport(e.to_string()))?;
    Ok(ServeSummary { recording })
}

/// `builder` serving TLS with the PEM certificate chain at `cert` and the private key at
/// `key`. Each file is read and checked on its own first, so a problem names its file and
/// what is wrong with it; what rustls then finds (a damaged block, a key type it cannot use,
/// a key that is not the certificate's) is named against the file it concerns.
fn with_tls<L>(builder: Server<L>, cert: &Path, key: &Path) -> Result<Server<L>, ServerError> {
    let cert_pem = read_pem(cert, "certificate", "--tls-cert", certificate_problem)?;
    let key_pem = read_pem(key, "private key", "--tls-key", key_problem)?;
    builder
        .tls_config(ServerTlsConfig::new().identity(Identity::from_pem(cert_pem, key_pem)))
        .map_err(|e| ServerError::Tls(unusable(cert, key, &causes(&e))))
}

/// The bytes of the PEM file at `path` (the `what` given with `flag`), or an error naming it
/// and saying what `problem` finds wrong with its blocks.
fn read_pem(
    path: &Path,
    what: &str,
    flag: &str,
    problem: fn(&[String]) -> Option<String>,
) -> Result<Vec<u8>, ServerError> {
    let bytes = std::fs::read(path)
        .map_err(|e| ServerError::Tls(format!("cannot read the {what} '{}' ({flag}): {e}", path.display())))?;
    match problem(&pem_labels(&bytes)) {
        None => Ok(bytes),
        Some(why) => Err(ServerError::Tls(format!("the {what} '{}' ({flag}) {why}", path.display()))),
    }
}

/// The labels of the PEM blocks in `bytes`: "CERTIFICATE", "PRIVATE KEY", ...
fn pem_labels(bytes: &[u8]) -> Vec<String> {
    let text = String::from_utf8_lossy(bytes);
    let label = |line: &str| Some(line.trim().strip_prefix("-----BEGIN ")?.strip_suffix("-----")?.to_string());
    text.lines().filter_map(label).collect()
}

/// What is wrong with a certificate file holding these PEM blocks, if anything.
fn certificate_problem(labels: &[String]) -> Option<String> {
    if labels.iter().any(|l| l == "CERTIFICATE") {
        return None;
    }
    Some(if labels.iter().any(|l| l.ends_with("PRIVATE KEY")) {
        "holds a private key, not a certificate (are --tls-cert and --tls-key swapped?)".into()
    } else if labels.is_empty() {
        "holds no PEM certificate (a '-----BEGIN CERTIFICATE-----' block): give the server's certificate in PEM, \
         e.g. one made by openssl req -x509"
            .into()
    } else {
        format!("holds PEM blocks {labels:?} but no certificate (a '-----BEGIN CERTIFICATE-----' block)")
    })
}

/// What is wrong with a private key file holding these PEM blocks, if anything.
fn key_problem(labels: &[String]) -> Option<String> {
    match labels.iter().find(|l| l.ends_with("PRIVATE KEY")) {
        Some(l) if l == "ENCRYPTED PRIVATE KEY" => Some(
            "is encrypted with a passphrase: glint serve reads an unencrypted key (openssl pkey -in KEY -out PLAIN \
             writes one)"
                .into(),
        ),
        Some(_) => None,
        None if labels.iter().any(|l| l == "CERTIFICATE") => {
            Some("holds a certificate, not a private key (are --tls-cert and --tls-key swapped?)".into())
        }
        None => Some(
            "holds no PEM private key (a '-----BEGIN PRIVATE KEY-----' block, or an RSA or EC PRIVATE KEY one)".into(),
        ),
    }
}

/// Why a certificate and key whose PEM blocks are in place are still not usable, named
/// against the file concerned (`detail` is what tonic and rustls said).
fn unusable(cert: &Path, key: &Path, detail: &str) -> String {
    let (cert, key) = (cert.display(), key.display());
    let lower = detail.to_lowercase();
    if lower.contains("keys may not be consistent") {
        format!(
            "the private key '{key}' (--tls-key) is not the key of the certificate '{cert}' (--tls-cert): give the \
             key the certificate was made with ({detail})"
        )
    } else if lower.contains("private key") {
        format!(
            "the private key '{key}' (--tls-key) is not usable: it is damaged, or of a type glint serve cannot use \
             (it reads RSA, ECDSA P-256 and P-384, and Ed25519 keys) ({detail})"
        )
    } else if lower.contains("certificate") {
        format!(
            "the certificate '{cert}' (--tls-cert) is not usable: its PEM block is damaged or not an X.509 \
             certificate ({detail})"
        )
    } else {
        format!(
            "the certificate '{cert}' (--tls-cert) and the private key '{key}' (--tls-key) are not usable: {detail}"
        )
    }
}

/// An error's causes, outermost first ("transport error" alone says nothing).
fn causes(e: &dyn std::error::Error) -> String {
    let mut parts = Vec::new();
    let mut next = e.source();
    while let Some(cause) = next {
        parts.push(cause.to_string());
        next = cause.source();
    }
    if parts.is_empty() { e.to_string() } else { parts.join(": ") }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(text: &str) -> Vec<String> {
        pem_labels(text.as_bytes())
    }

    #[test]
    fn each_pem_file_is_checked_for_its_own_block() {
        let cert = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";
        let key = "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert_eq!(certificate_problem(&labels(cert)), None);
        assert_eq!(key_problem(&labels(key)), None);
        assert_eq!(key_problem(&labels(&key.replace("PRIVATE", "RSA PRIVATE"))), None);
        assert!(certificate_problem(&labels(key)).unwrap().contains("swapped"));
        assert!(key_problem(&labels(cert)).unwrap().contains("swapped"));
        assert!(certificate_problem(&labels("hello")).unwrap().contains("no PEM certificate"));
        assert!(key_problem(&labels("")).unwrap().contains("no PEM private key"));
        assert!(key_problem(&labels(&key.replace("PRIVATE", "ENCRYPTED PRIVATE"))).unwrap().contains("encrypted"));
    }
}
