//! The built-in reference AAP server (Agent Application Protocol, version 3, or 1 or 2 on
//! request): HTTP/1.1 +
//! JSON with Server-Sent Events, the endpoints of the spec's docs/endpoints.md, hosting one
//! deterministic scripted agent (aap/SCRIPTED-AGENT.md). Like the AHP host it is an
//! independent peer of the harness and imports none of it. `faults` ([`AapFault`]) each
//! break one rule of aap/RULES.md so the harness's AAP checks can be proven against them.
//! aap/API.md documents the entry points and the wire choices.

mod faults;
mod http;
mod messages;
mod meta;
mod routes;
mod script;
mod sessions;
mod settings;
mod turn;
mod versions;

use std::convert::Infallible;
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::task::{JoinHandle, JoinSet};

pub use faults::{fault_catalog_lines, AapFault, AapFaultSet, UnknownAapFault};
pub use meta::{AGENT_NAME, PROTOCOL_VERSION, VERSIONS};
pub use script::SCRIPT_PREFIX;

/// Which history kinds the agent declares in `capabilities.history` and serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryKinds {
    pub compacted: bool,
    pub full: bool,
}

impl Default for HistoryKinds {
    /// Full only, so a client can see both a declared kind served and an undeclared one
    /// answered 404.
    fn default() -> Self {
        HistoryKinds {
            compacted: false,
            full: true,
        }
    }
}

/// How to run a server.
#[derive(Debug, Clone)]
pub struct AapHostConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Prefix of every route (e.g. `/v1`); empty: the root.
    pub base_path: String,
    /// The faults to inject; empty: the correct server.
    pub faults: AapFaultSet,
    /// `Some`: every endpoint but `GET /meta` needs `Authorization: Bearer <token>`.
    pub token: Option<String>,
    pub history: HistoryKinds,
    /// Sessions per `GET /sessions` page (small, so pagination shows with few sessions).
    pub page_size: usize,
    /// Larger request bodies are answered 413.
    pub max_body_bytes: usize,
    /// The AAP version spoken (1, 2 or 3: [`VERSIONS`]); the endpoints of 1 and 2 are
    /// `PUT /session` and `/session/:id` (src/aaphost/versions.rs).
    pub version: u64,
}

impl Default for AapHostConfig {
    fn default() -> Self {
        AapHostConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            base_path: String::new(),
            faults: AapFaultSet::default(),
            token: None,
            history: HistoryKinds::default(),
            page_size: 2,
            max_body_bytes: 1024 * 1024,
            version: PROTOCOL_VERSION,
        }
    }
}

/// A running server; dropping it stops the server.
#[derive(Debug)]
pub struct AapHostHandle {
    addr: SocketAddr,
    base_path: String,
    accept: JoinHandle<()>,
}

impl AapHostHandle {
    /// `http://127.0.0.1:PORT` followed by the base path.
    pub fn base_url(&self) -> String {
        format!(
            "http://{}{}",
            self.addr,
            self.base_path.trim_end_matches('/')
        )
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Stops accepting and closes every connection.
    pub async fn shutdown(mut self) {
        self.accept.abort();
        let _ = (&mut self.accept).await;
    }
}

impl Drop for AapHostHandle {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

/// Binds `config.listen` and serves on the current tokio runtime until the handle is shut
/// down or dropped.
pub async fn spawn(config: AapHostConfig) -> io::Result<AapHostHandle> {
    let listener = TcpListener::bind(config.listen).await?;
    let addr = listener.local_addr()?;
    let base_path = config.base_path.clone();
    let server = Arc::new(routes::Server::new(config));
    let accept = tokio::spawn(async move {
        // Connections live in the accept task's set, so stopping it closes them too.
        let mut connections = JoinSet::new();
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    connections.spawn(serve_connection(Arc::clone(&server), stream));
                }
                Some(_) = connections.join_next(), if !connections.is_empty() => {}
            }
        }
    });
    Ok(AapHostHandle {
        addr,
        base_path,
        accept,
    })
}

async fn serve_connection(server: Arc<routes::Server>, stream: tokio::net::TcpStream) {
    let service = service_fn(move |request| {
        let server = Arc::clone(&server);
        async move { Ok::<_, Infallible>(server.handle(request).await) }
    });
    // A client that breaks the connection ends only its own connection.
    let _ = http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}
