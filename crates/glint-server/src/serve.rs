//! Starting and stopping the server: the loop, the services, reflection, TLS, the address.

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;

use glint_sim::RecordingSummary;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Identity, Server, ServerTlsConfig};

use crate::agent::Agents;
use crate::camera::Cameras;
use crate::engine::{Engine, EngineOptions};
use crate::lidar::Lidar;
use crate::proto::agent_service_server::AgentServiceServer;
use crate::proto::camera_service_server::CameraServiceServer;
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
    let listener = tokio::net::TcpListener::bind(options.addr)
        .await
        .map_err(|e| ServerError::Bind { addr: options.addr.to_string(), reason: e.to_string() })?;
    let local = listener
        .local_addr()
        .map_err(|e| ServerError::Bind { addr: options.addr.to_string(), reason: e.to_string() })?;
    // A scan is up to a few MiB: HTTP/2's default 64 KiB windows would make each one wait for
    // dozens of window updates.
    let mut builder = Server::builder()
        .initial_stream_window_size(Some(WINDOW))
        .initial_connection_window_size(Some(2 * WINDOW))
        .max_frame_size(Some(FRAME));
    if let Some((cert, key)) = &options.tls {
        let read =
            |p: &PathBuf| std::fs::read(p).map_err(|e| ServerError::Tls(format!("cannot read '{}': {e}", p.display())));
        let identity = Identity::from_pem(read(cert)?, read(key)?);
        builder = builder
            .tls_config(ServerTlsConfig::new().identity(identity))
            .map_err(|e| ServerError::Tls(format!("the certificate or key is not usable: {e}")))?;
    }
    let (engine, thread) = Engine::start(options.engine.clone())?;
    let reflection_v1 = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| ServerError::Start(format!("reflection: {e}")))?;
    let reflection_v1alpha = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(proto::FILE_DESCRIPTOR_SET)
        .build_v1alpha()
        .map_err(|e| ServerError::Start(format!("reflection: {e}")))?;
    // Each service sizes its growing answers before building them (`size.rs`); tonic's own
    // limit is the backstop for an answer reckoned wrong.
    let (limit, max) = (Limit::new(options.max_message), options.max_message);
    let agents = Agents::new(engine.clone(), limit);
    let router = builder
        .layer(UnservedLayer::new())
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(LidarServiceServer::new(Lidar::new(engine.clone(), limit)).max_encoding_message_size(max))
        .add_service(AgentServiceServer::new(agents.clone()).max_encoding_message_size(max))
        .add_service(MujocoServiceServer::new(agents).max_encoding_message_size(max))
        .add_service(CameraServiceServer::new(Cameras::new(engine.clone(), limit)).max_encoding_message_size(max));
    on_listen(local);
    let served =
        router.serve_with_incoming_shutdown(TcpIncoming::from(listener).with_nodelay(Some(true)), shutdown).await;
    engine.request_stop();
    drop(engine);
    let recording = tokio::task::spawn_blocking(move || thread.join()).await.unwrap_or(None);
    served.map_err(|e| ServerError::Transport(e.to_string()))?;
    Ok(ServeSummary { recording })
}
