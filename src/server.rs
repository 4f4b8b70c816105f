//! The server a fuzz campaign works against, as composition hands it over: a URL, or
//! built-in servers that composition starts fresh for each sequence (so every sequence
//! starts clean). Runners never start a server themselves: [`crate::target`] decides what
//! the target is and starts what it has to.

use std::fmt;
use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;

/// A future a server handle gives, boxed so that either protocol's server fits.
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Starts a fresh built-in server each time it is asked (composition's; see
/// [`crate::target`]).
pub trait FreshServers: Send + Sync + fmt::Debug {
    /// Starts one server.
    fn start(&self) -> BoxFuture<'_, io::Result<Running>>;

    /// Whether every server started serves a workspace of its own ([`Running::workspace`]),
    /// so that cases needing one can run against it without the profile naming one.
    fn serve_workspaces(&self) -> bool;
}

/// Where sequences run.
#[derive(Debug, Clone)]
pub enum Target {
    /// A server somebody else runs, at this URL.
    Url(String),
    /// A fresh built-in server per sequence.
    Fresh(Arc<dyn FreshServers>),
}

impl Target {
    /// The server one sequence runs against: the URL's, or a fresh built-in one (stop it
    /// with [`Running::stop`] once the sequence is over).
    pub async fn for_sequence(&self) -> io::Result<Running> {
        match self {
            Target::Url(url) => Ok(Running::at(url.clone())),
            Target::Fresh(servers) => servers.start().await,
        }
    }

    /// Whether each sequence's server brings a workspace of its own (a built-in AHP host's).
    pub fn serves_workspaces(&self) -> bool {
        match self {
            Target::Url(_) => false,
            Target::Fresh(servers) => servers.serve_workspaces(),
        }
    }

    /// The URL, when the target is a server somebody else runs.
    pub fn url(&self) -> Option<&str> {
        match self {
            Target::Url(url) => Some(url),
            Target::Fresh(_) => None,
        }
    }
}

/// A server for one sequence: its URL, and what stops it when it is a built-in one.
pub struct Running {
    pub url: String,
    /// The `file:` URI of the directory a built-in AHP host serves to `resource*`
    /// commands (a target profile without a workspace of its own gets it).
    pub workspace: Option<String>,
    stop: Option<BoxFuture<'static, ()>>,
}

impl Running {
    /// A server somebody else runs, at `url` (nothing to stop).
    pub fn at(url: String) -> Running {
        Running {
            url,
            workspace: None,
            stop: None,
        }
    }

    /// A started server at `url` that `stop` shuts down.
    pub fn started(url: String, stop: BoxFuture<'static, ()>) -> Running {
        Running {
            url,
            workspace: None,
            stop: Some(stop),
        }
    }

    /// Stops the server, when it is a built-in one.
    pub async fn stop(self) {
        if let Some(stop) = self.stop {
            stop.await;
        }
    }
}
