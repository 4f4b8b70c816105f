//! `ahpspec proxy`: a WebSocket proxy between any AHP client and server that forwards
//! every frame both ways unchanged and checks each connection live with the runner's
//! always-on checks ([`crate::traffic`]); at the end the report has one row per rule.
//!
//! Each connection pair is one task forwarding both ways and one task checking: a frame is
//! queued for the checks before it is forwarded (so the checks see a request before the
//! response it causes), and the queue is bounded, so neither a slow peer nor slow checks
//! make the proxy buffer without bound — they slow the sender down instead.

pub mod aap;
mod handshake;
mod pair;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::capture::Recorder;
use crate::checks::frame::Schemas;
use crate::checks::words::{EarlierDispatches, InvalidDispatches};
use crate::traffic::Traffic;
use crate::verdict::RunReport;

pub use handshake::HandshakeError;

/// Where live findings go, one line each (violations as they happen, client problems,
/// connections that could not be proxied).
pub type Log = Arc<dyn Fn(&str) + Send + Sync>;

/// What the proxy needs.
#[derive(Clone)]
pub struct ProxyConfig {
    pub listen: SocketAddr,
    /// `ws://` or `wss://` URL of the server; with no path of its own, each client's path
    /// is used.
    pub upstream: String,
    pub schemas: Schemas,
    /// How long a request may go unanswered before the end of its connection judges it
    /// (TRANSPORT-003).
    pub timeout: Duration,
    /// Where every frame is recorded (`--record`).
    pub recorder: Option<Recorder>,
    pub log: Option<Log>,
}

impl std::fmt::Debug for ProxyConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProxyConfig")
            .field("listen", &self.listen)
            .field("upstream", &self.upstream)
            .field("timeout", &self.timeout)
            .finish()
    }
}

/// Proxy failures that stop it before any connection.
#[derive(Debug, thiserror::Error)]
pub enum ProxyError {
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("not a WebSocket URL: {0} (expected ws://… or wss://…)")]
    NotWebSocket(String),
    #[error("not an AAP base URL: {0} (expected http://… or https://…)")]
    NotHttp(String),
    #[error("the AAP schemas: {0}")]
    Schemas(String),
    #[error(transparent)]
    Handshake(#[from] HandshakeError),
    #[error(transparent)]
    Capture(#[from] crate::capture::CaptureError),
}

/// What every connection task shares.
struct Shared {
    config: ProxyConfig,
    traffic: Mutex<Traffic>,
    next_conn: AtomicUsize,
    /// The dispatches the proxied clients sent invalid: the copy of one's echo another
    /// client gets is the clients' words (their problem), as the sender's own echo is.
    invalid: InvalidDispatches,
    /// Every dispatch of each proxied client, on all its connections: a reconnected client
    /// gets the echo of one it sent before (DISPATCH-001 judges it against that).
    earlier: EarlierDispatches,
}

impl Shared {
    /// Logs one line, its secrets redacted.
    fn log(&self, line: &str) {
        if let Some(log) = &self.config.log {
            log(&crate::redact::text(line));
        }
    }

    /// Runs `f` on the gathered traffic (a poisoned lock is taken over: the traffic is
    /// plain data).
    fn traffic<T>(&self, f: impl FnOnce(&mut Traffic) -> T) -> T {
        let mut traffic = self.traffic.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut traffic)
    }
}

/// A running proxy.
pub struct Proxy {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    accepting: tokio::task::JoinHandle<()>,
    shared: Arc<Shared>,
    started: Instant,
    started_at: String,
}

impl Proxy {
    /// Binds `config.listen` and starts proxying on the current runtime.
    pub async fn start(config: ProxyConfig) -> Result<Proxy, ProxyError> {
        crate::redact::learn_url(&config.upstream);
        if !(config.upstream.starts_with("ws://") || config.upstream.starts_with("wss://")) {
            return Err(ProxyError::NotWebSocket(
                crate::redact::url(&config.upstream).into_owned(),
            ));
        }
        let (listener, addr) = bind(config.listen).await?;
        let shared = Arc::new(Shared {
            config,
            traffic: Mutex::new(Traffic::default()),
            next_conn: AtomicUsize::new(1),
            invalid: InvalidDispatches::default(),
            earlier: EarlierDispatches::default(),
        });
        let (stop, stopped) = watch::channel(false);
        let accepting = tokio::spawn(accept(listener, Arc::clone(&shared), stopped));
        Ok(Proxy {
            addr,
            stop,
            accepting,
            shared,
            started: Instant::now(),
            started_at: format!("{:.0}", jiff::Timestamp::now()),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL clients connect to.
    pub fn url(&self) -> String {
        format!("ws://{}", self.addr)
    }

    /// Stops accepting, ends every connection still open (its checks judge what they have;
    /// requests younger than the timeout are skipped), flushes the capture, and returns
    /// the report.
    pub async fn finish(self) -> (RunReport, Result<(), crate::capture::CaptureError>) {
        let _ = self.stop.send(true);
        let _ = self.accepting.await;
        let recorded = match &self.shared.config.recorder {
            Some(recorder) => recorder.finish(),
            None => Ok(()),
        };
        let traffic = self.shared.traffic(std::mem::take);
        let upstream = &self.shared.config.upstream;
        let report = traffic.report(
            &format!("proxy to {upstream}"),
            self.started_at,
            self.started.elapsed().as_secs_f64() * 1000.0,
            &format!("ahpspec proxy --upstream {upstream}"),
        );
        (report, recorded)
    }

    /// Client-side problems seen so far in closed connections (kept, in all).
    pub fn client_problems(&self) -> (Vec<String>, usize) {
        self.shared.traffic(|t| {
            let (kept, all) = t.client_problem_summary();
            (kept.to_vec(), all)
        })
    }
}

/// A recording proxy in front of `upstream` on a free loopback port, for `--record` of run
/// and fuzz: their connections go through it and every frame lands in `capture` (its own
/// checks are not reported: the command judges the traffic itself).
pub async fn recording(
    upstream: &str,
    capture: &std::path::Path,
    schemas: Schemas,
    timeout: Duration,
) -> Result<Proxy, ProxyError> {
    Proxy::start(ProxyConfig {
        listen: SocketAddr::from(([127, 0, 0, 1], 0)),
        upstream: upstream.to_owned(),
        schemas,
        timeout,
        recorder: Some(Recorder::create(capture)?),
        log: None,
    })
    .await
}

/// Binds `listen`: the listener and the address it got.
async fn bind(listen: SocketAddr) -> Result<(TcpListener, SocketAddr), ProxyError> {
    let listening = |source| ProxyError::Listen {
        addr: listen,
        source,
    };
    let listener = TcpListener::bind(listen).await.map_err(listening)?;
    let addr = listener.local_addr().map_err(listening)?;
    Ok((listener, addr))
}

/// Accepts connections until stopped, each served by a task `serve` makes; returns the
/// tasks still running (the listener is closed).
async fn accept_until_stopped<F>(
    listener: TcpListener,
    mut stopped: watch::Receiver<bool>,
    log: impl Fn(&str),
    mut serve: impl FnMut(tokio::net::TcpStream, watch::Receiver<bool>) -> F,
) -> JoinSet<()>
where
    F: std::future::Future<Output = ()> + Send + 'static,
{
    let mut connections = JoinSet::new();
    loop {
        while connections.try_join_next().is_some() {}
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((tcp, _)) => {
                    let _ = tcp.set_nodelay(true);
                    connections.spawn(serve(tcp, stopped.clone()));
                }
                // Out of file descriptors and the like: the next accept may work.
                Err(error) => {
                    log(&format!("accept failed: {error}"));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            },
            changed = stopped.changed() => {
                if changed.is_err() || *stopped.borrow() {
                    break;
                }
            }
        }
    }
    connections
}

/// Accepts connections until stopped, then waits for every pair to end.
async fn accept(listener: TcpListener, shared: Arc<Shared>, stopped: watch::Receiver<bool>) {
    let log = |line: &str| shared.log(line);
    let mut pairs = accept_until_stopped(listener, stopped, log, |tcp, stopped| {
        let name = shared.next_conn.fetch_add(1, Ordering::Relaxed).to_string();
        pair::serve(tcp, name, Arc::clone(&shared), stopped)
    })
    .await;
    while pairs.join_next().await.is_some() {}
}

/// `ahpspec proxy`: proxies until SIGINT, SIGTERM or the end of `duration`, calling
/// `ready` with the URL clients connect to once it listens; returns the report and how
/// the capture fared.
pub async fn serve(
    config: ProxyConfig,
    duration: Option<Duration>,
    ready: impl FnOnce(&str),
) -> Result<(RunReport, Result<(), crate::capture::CaptureError>), ProxyError> {
    let proxy = Proxy::start(config).await?;
    let stop = until_signal(duration);
    ready(&proxy.url());
    stop.await;
    Ok(proxy.finish().await)
}

/// Resolves on SIGINT or SIGTERM, or once `duration` (when given) has passed. The
/// handlers are installed at once, before the caller says it is ready (a signal right after
/// the URL is printed must write the report, not kill the process).
fn until_signal(duration: Option<Duration>) -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let (interrupt, terminate) = {
        use tokio::signal::unix::{signal, SignalKind};
        (
            signal(SignalKind::interrupt()).ok(),
            signal(SignalKind::terminate()).ok(),
        )
    };
    async move {
        let elapsed = async {
            match duration {
                Some(duration) => tokio::time::sleep(duration).await,
                None => std::future::pending().await,
            }
        };
        #[cfg(unix)]
        let (interrupted, terminated) = (
            async move {
                match interrupt {
                    Some(mut int) => {
                        int.recv().await;
                    }
                    None => std::future::pending().await,
                }
            },
            async move {
                match terminate {
                    Some(mut term) => {
                        term.recv().await;
                    }
                    None => std::future::pending().await,
                }
            },
        );
        #[cfg(not(unix))]
        let (interrupted, terminated) = (
            async {
                let _ = tokio::signal::ctrl_c().await;
            },
            std::future::pending::<()>(),
        );
        tokio::select! {
            _ = interrupted => {}
            _ = terminated => {}
            _ = elapsed => {}
        }
    }
}
