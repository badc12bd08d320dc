//! Answers every RPC glint does not serve with `UNIMPLEMENTED` naming it. tonic's own answer
//! to an unknown method carries no message; a user porting a LuckyEngine client should read
//! which call glint lacks. The RPCs served are those of glint's `.proto` files.

use std::collections::HashSet;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use prost::Message;
use tonic::Status;
use tower_layer::Layer;
use tower_service::Service;

/// Every `/package.Service/Method` path of glint's `.proto` files.
pub fn served_paths() -> Vec<String> {
    let Ok(set) = prost_types::FileDescriptorSet::decode(crate::proto::FILE_DESCRIPTOR_SET) else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    for file in &set.file {
        for service in &file.service {
            for method in &service.method {
                paths.push(format!("/{}.{}/{}", file.package(), service.name(), method.name()));
            }
        }
    }
    paths
}

/// The services and their RPCs in words: "LidarService (14 RPCs), AgentService
/// (GetAgentSchema, ResetAgent, Step), ...".
pub fn served_summary() -> String {
    let mut services: Vec<(String, Vec<String>)> = Vec::new();
    for path in served_paths() {
        let (service, method) = path.trim_start_matches('/').rsplit_once('/').unwrap_or(("", ""));
        let service = service.rsplit('.').next().unwrap_or(service).to_string();
        match services.iter_mut().find(|(s, _)| *s == service) {
            Some((_, methods)) => methods.push(method.to_string()),
            None => services.push((service, vec![method.to_string()])),
        }
    }
    let each = services.iter().map(|(service, methods)| {
        if methods.len() > 5 {
            format!("{service} (all {} RPCs)", methods.len())
        } else {
            format!("{service} ({})", methods.join(", "))
        }
    });
    each.collect::<Vec<_>>().join(", ")
}

/// The layer that puts [`Unserved`] in front of the services.
#[derive(Clone)]
pub struct UnservedLayer {
    served: Arc<HashSet<String>>,
    summary: Arc<str>,
}

impl UnservedLayer {
    /// Lets through glint's RPCs and server reflection.
    pub fn new() -> UnservedLayer {
        UnservedLayer { served: Arc::new(served_paths().into_iter().collect()), summary: served_summary().into() }
    }
}

impl Default for UnservedLayer {
    fn default() -> Self {
        UnservedLayer::new()
    }
}

impl<S> Layer<S> for UnservedLayer {
    type Service = Unserved<S>;

    fn layer(&self, inner: S) -> Unserved<S> {
        Unserved { inner, served: self.served.clone(), summary: self.summary.clone() }
    }
}

/// Passes glint's RPCs on and answers the rest.
#[derive(Clone)]
pub struct Unserved<S> {
    inner: S,
    served: Arc<HashSet<String>>,
    summary: Arc<str>,
}

type BoxFuture<T, E> = Pin<Box<dyn Future<Output = Result<T, E>> + Send>>;

impl<S, B> Service<http::Request<B>> for Unserved<S>
where
    S: Service<http::Request<B>, Response = http::Response<tonic::body::Body>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<tonic::body::Body>;
    type Error = S::Error;
    type Future = BoxFuture<Self::Response, Self::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let path = request.uri().path();
        if self.served.contains(path) || path.starts_with("/grpc.reflection.") {
            return Box::pin(self.inner.call(request));
        }
        let rpc = path.trim_start_matches('/').to_string();
        let status = Status::unimplemented(format!(
            "{rpc} is not served by glint serve; it serves {} (see docs/grpc.md)",
            self.summary
        ));
        Box::pin(async move { Ok(status.into_http()) })
    }
}
