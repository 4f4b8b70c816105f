//! The built-in reference AHP 1.0.0 host.
//!
//! It is the default target of `ahpspec run`, the bed of every self-test, and a mock host
//! for people writing AHP clients. It folds every action through the official `ahp`
//! reducers and is deliberately independent of the harness: nothing here imports the
//! checks, the runner or the reports. `--fault NAME` variants ([`Fault`]) each break one
//! rule so the harness's checks can be proven against them; `--fault a,b` ([`FaultSet`])
//! breaks several at once.

mod agent;
pub mod agents;
// Issue 25, authentication (i25c).
pub mod auth;
// Issue 29, automations (i29c).
mod automations;
mod broken;
mod broken_lifecycle;
mod broken_routes;
mod broken_session;
pub mod catalog;
mod commands;
mod conn;
// Issue 29, customizations and MCP servers (i29d).
mod customizations;
mod dispatch;
mod fault_rules;
pub mod faults;
mod grants;
mod mcp_apps;
mod mcp_relay;
mod projection;
pub mod script;
// Issue 29, script steps beside the chat (i29d).
pub mod script_state;
// Issue 25, terminals (i25b).
mod terminals;
// Issue 25, session configuration (i25b).
mod session_config;
// Issue 25, the stateless telemetry channel (i25b).
mod telemetry;
mod watches;
mod workspace;
mod world;

pub use world::variants;

use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use faults::{Fault, FaultSet};
use world::{World, WorldConfig};

/// Largest WebSocket message the host accepts (and the largest frame); bigger ones close
/// the connection with code 1009.
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 16 * 1024 * 1024;
/// Envelopes kept for `reconnect` replay; older gaps are answered with snapshots.
pub const DEFAULT_REPLAY_CAPACITY: usize = 4096;
/// How long a disconnected client stays in `activeClients` waiting for a reconnect.
pub const DEFAULT_CLIENT_GRACE: Duration = Duration::from_secs(2);
/// How long a new session stays `creating` by default: long enough that a client which
/// subscribes right after the createSession response sees it, then `session/ready`.
pub const DEFAULT_SESSION_INIT: Duration = Duration::from_millis(5);

/// How to run a host.
#[derive(Debug, Clone)]
pub struct HostConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// The faults to inject (each breaks its one rule); empty: the correct host.
    pub faults: FaultSet,
    pub replay_capacity: usize,
    pub max_message_bytes: usize,
    pub client_grace: Duration,
    /// How long a new session stays `creating` (zero: only until the host's next turn on
    /// the runtime, for the fuzzer, which creates a session per sequence and would
    /// otherwise spend most of its time waiting on millisecond timer ticks). The agent
    /// that never starts gives up after this, but at least 250 ms unless it is zero.
    pub session_init: Duration,
    /// Whether `subscribe` honours `view.turns` with a window of turns and a
    /// `turnsNextCursor` (the view is advisory: false gives every snapshot all its turns,
    /// as a conforming host that ignores views does).
    pub turn_windows: bool,
    /// Conforming choices the protocol leaves to a host ([`variants::Variants`]): the
    /// catalog passes with every one of them.
    pub variants: variants::Variants,
    /// The directory the `resource*` commands serve (`serve --workspace DIR`); absent: a
    /// fresh temporary directory the host creates and removes when it goes away.
    pub workspace: Option<std::path::PathBuf>,
}

impl Default for HostConfig {
    fn default() -> Self {
        HostConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            faults: FaultSet::default(),
            replay_capacity: DEFAULT_REPLAY_CAPACITY,
            max_message_bytes: DEFAULT_MAX_MESSAGE_BYTES,
            client_grace: DEFAULT_CLIENT_GRACE,
            session_init: DEFAULT_SESSION_INIT,
            turn_windows: true,
            variants: variants::Variants::default(),
            workspace: None,
        }
    }
}

impl HostConfig {
    /// The default configuration with `faults` injected (one [`Fault`], an `Option` of
    /// one, or a [`FaultSet`]).
    pub fn with_fault(faults: impl Into<FaultSet>) -> Self {
        HostConfig {
            faults: faults.into(),
            ..HostConfig::default()
        }
    }
}

/// State shared by the accept loop, connections and agent tasks.
#[derive(Debug)]
pub struct Shared {
    world: Mutex<World>,
    config: HostConfig,
}

impl Shared {
    /// The world, under its lock. A panic while it was held does not make the host
    /// unusable: the state is still consistent between actions.
    fn lock(&self) -> std::sync::MutexGuard<'_, World> {
        self.world
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A running host.
#[derive(Debug)]
pub struct HostHandle {
    url: String,
    addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    accept: JoinHandle<()>,
    shared: Arc<Shared>,
}

impl HostHandle {
    /// The `ws://` URL clients connect to.
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The `file:` URI of the directory the host serves to `resource*` commands.
    pub fn workspace_uri(&self) -> String {
        self.shared.lock().workspace.uri()
    }

    /// Actions the host produced that failed to decode or apply — always a host bug.
    pub fn internal_errors(&self) -> Vec<String> {
        self.shared.lock().internal_errors.clone()
    }

    /// Whether the host watches its workspace for automations' event triggers (only while
    /// an automation whose triggers are live has one).
    pub fn watches_for_events(&self) -> bool {
        self.shared.lock().automations.event_watcher.is_some()
    }

    /// Number of open connections.
    pub fn connection_count(&self) -> usize {
        self.shared.lock().conns.len()
    }

    /// Stops accepting, closes every connection with 1001 and waits briefly for them.
    pub async fn shutdown(self) {
        let _ = self.shutdown.send(true);
        let HostHandle { accept, shared, .. } = self;
        let _ = accept.await;
        // Agent turns may be waiting (for a cancel, a confirmation): end them, so nothing of
        // this host outlives it.
        for chat in shared.lock().chats.values_mut() {
            if let Some(runner) = chat.runner.take() {
                runner.abort.abort();
            }
        }
        for _ in 0..100 {
            let open = shared.lock().conns.len();
            if open == 0 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
}

/// Binds the listener and starts serving on the current tokio runtime.
pub async fn spawn(config: HostConfig) -> io::Result<HostHandle> {
    let listener = TcpListener::bind(config.listen).await?;
    let addr = listener.local_addr()?;
    let workspace = Arc::new(match &config.workspace {
        Some(dir) => workspace::Workspace::at(dir)?,
        None => workspace::Workspace::create()?,
    });
    let shared = Arc::new_cyclic(|weak| {
        let mut world = World::new(
            WorldConfig {
                faults: config.faults.clone(),
                replay_capacity: config.replay_capacity,
                session_init: config.session_init,
                turn_windows: config.turn_windows,
                variants: config.variants.clone(),
                terminals: config.listen.ip().is_loopback(),
            },
            workspace,
        );
        world.shared = weak.clone();
        Shared {
            world: Mutex::new(world),
            config: config.clone(),
        }
    });
    let (shutdown, mut stop) = watch::channel(false);
    let accept_shared = Arc::clone(&shared);
    let accept = tokio::spawn(async move {
        let mut next_conn = 0u64;
        loop {
            tokio::select! {
                accepted = listener.accept() => {
                    let Ok((stream, _)) = accepted else { continue };
                    let _ = stream.set_nodelay(true);
                    next_conn += 1;
                    tokio::spawn(conn::serve(
                        Arc::clone(&accept_shared), stream, next_conn, stop.clone(),
                    ));
                }
                _ = stop.changed() => break,
            }
        }
    });
    Ok(HostHandle {
        url: format!("ws://{addr}"),
        addr,
        shutdown,
        accept,
        shared,
    })
}
