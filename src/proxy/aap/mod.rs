//! `ahpspec proxy --protocol aap`: an HTTP reverse proxy between any AAP client and server
//! that passes every request, response and SSE stream through unchanged, frame by frame
//! as it arrives ([`tee`]), and judges each finished exchange with the AAP runner's
//! always-on checks ([`crate::traffic::aap`]); at the end the report has one row per rule.
//!
//! One HTTP/1.1 connection to the upstream per request (as the harness's own client
//! makes them). Exchanges are judged, recorded and logged in the order they finish, by one
//! task, so `ahpspec check` of the capture judges them in the same order.

mod tee;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderMap, HeaderValue, CONTENT_TYPE, HOST};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio::sync::{mpsc, watch};

use super::{Log, ProxyError};
use crate::aap::http::exchange::Exchange;
use crate::aap::http::{connect, Target};
use crate::aap::AapVersion;
use crate::capture::Recorder;
use crate::traffic::aap::AapTraffic;
use crate::verdict::RunReport;
use tee::{lock, Pending, Side, Tee};

/// How much of each body the checks keep by default (a longer body is forwarded whole,
/// its checks skipped and counted).
pub const DEFAULT_MAX_BODY: usize = 16 * 1024 * 1024;
/// How long open connections get to finish once the proxy stops.
const STOP_GRACE: Duration = Duration::from_millis(500);
/// Headers of one hop only: never forwarded either way.
const HOP: &[&str] = &[
    "connection",
    "keep-alive",
    "proxy-connection",
    "transfer-encoding",
    "te",
    "trailer",
    "upgrade",
    "host",
];

/// What the AAP proxy needs.
#[derive(Clone)]
pub struct AapProxyConfig {
    pub listen: SocketAddr,
    /// `http://` or `https://` base URL of the server; each client path goes under it.
    pub upstream: String,
    /// Judge at this version whatever `GET /meta` says.
    pub protocol_version: Option<AapVersion>,
    /// How long the upstream may take to accept a connection.
    pub timeout: Duration,
    /// How much of each body the checks keep.
    pub max_body: usize,
    pub recorder: Option<Recorder>,
    pub log: Option<Log>,
}

type ProxyBody = BoxBody<Bytes, hyper::Error>;

/// What every connection shares.
struct Shared {
    config: AapProxyConfig,
    target: Target,
    judge: mpsc::UnboundedSender<(usize, Exchange)>,
    next: AtomicUsize,
    started: Instant,
}

impl Shared {
    fn log(&self, line: &str) {
        if let Some(log) = &self.config.log {
            log(&crate::redact::text(line));
        }
    }
}

/// A running AAP proxy.
pub struct AapProxy {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    accepting: tokio::task::JoinHandle<()>,
    judging: tokio::task::JoinHandle<AapTraffic>,
    /// Tells the judge no more exchanges will finish (some may never: their upstream
    /// connection still holds them).
    done: tokio::sync::oneshot::Sender<()>,
    shared: Arc<Shared>,
    started_at: String,
}

impl AapProxy {
    /// Binds `config.listen` and starts proxying on the current runtime.
    pub async fn start(config: AapProxyConfig) -> Result<AapProxy, ProxyError> {
        crate::redact::learn_url(&config.upstream);
        let target = Target::parse(&config.upstream)
            .map_err(|_| ProxyError::NotHttp(crate::redact::url(&config.upstream).into_owned()))?;
        let traffic = AapTraffic::new(config.protocol_version)
            .map_err(|e| ProxyError::Schemas(e.to_string()))?;
        let (listener, addr) = super::bind(config.listen).await?;
        let (judge, exchanges) = mpsc::unbounded_channel();
        let shared = Arc::new(Shared {
            config,
            target,
            judge,
            next: AtomicUsize::new(1),
            started: Instant::now(),
        });
        let (done, finished) = tokio::sync::oneshot::channel();
        let judging = tokio::spawn(judge_all(exchanges, finished, traffic, Arc::clone(&shared)));
        let (stop, stopped) = watch::channel(false);
        let accepting = tokio::spawn(accept(listener, Arc::clone(&shared), stopped));
        Ok(AapProxy {
            addr,
            stop,
            accepting,
            judging,
            done,
            shared,
            started_at: format!("{:.0}", jiff::Timestamp::now()),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL clients use.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Stops accepting, gives open exchanges a moment, judges what is left (a response
    /// still open is skipped, counted), flushes the capture, and returns the report.
    pub async fn finish(self) -> (RunReport, Result<(), crate::capture::CaptureError>) {
        let _ = self.stop.send(true);
        let _ = self.accepting.await;
        let upstream = self.shared.config.upstream.clone();
        let recorder = self.shared.config.recorder.clone();
        let elapsed = self.shared.started.elapsed();
        // The judge ends once every sender is gone: the connections' and this one.
        drop(self.shared);
        let _ = self.done.send(());
        let judged = self.judging.await;
        let recorded = recorder.as_ref().map_or(Ok(()), Recorder::finish);
        let target = format!("proxy to {upstream}");
        let report = match judged {
            Ok(traffic) => traffic.report(
                &target,
                self.started_at,
                elapsed.as_secs_f64() * 1000.0,
                &format!("ahpspec proxy --protocol aap --upstream {upstream}"),
            ),
            Err(error) => RunReport::of(
                format!("{target} (its checks failed: {error})"),
                "AAP".to_owned(),
                Vec::new(),
            ),
        };
        (report, recorded)
    }
}

/// Judges, records and logs every finished exchange, in the order they finish.
async fn judge_all(
    mut exchanges: mpsc::UnboundedReceiver<(usize, Exchange)>,
    mut finished: tokio::sync::oneshot::Receiver<()>,
    mut traffic: AapTraffic,
    shared: Arc<Shared>,
) -> AapTraffic {
    let (recorder, log) = (shared.config.recorder.clone(), shared.config.log.clone());
    let started = shared.started;
    // Only the connections' senders keep the channel open.
    drop(shared);
    let say = |line: &str| {
        if let Some(log) = &log {
            log(&crate::redact::text(line));
        }
    };
    let mut done = false;
    loop {
        let next = match done {
            true => exchanges.try_recv().ok(),
            false => tokio::select! {
                next = exchanges.recv() => next,
                _ = &mut finished => {
                    done = true;
                    exchanges.try_recv().ok()
                }
            },
        };
        let Some((number, exchange)) = next else {
            break;
        };
        let what = format!("exchange {number}: {} {}", exchange.method, exchange.path);
        if let Some(error) = &exchange.error {
            say(&format!("{what}: no response from the upstream: {error}"));
        }
        if exchange.cut() {
            say(&format!(
                "{what}: a body longer than the proxy keeps was forwarded whole; its checks were skipped"
            ));
        }
        if let Some(crate::aap::http::exchange::Ending::Broken(why)) = &exchange.ending {
            say(&format!(
                "{what}: the upstream broke off the response body: {why}"
            ));
        }
        let (found, notice) = traffic.exchange(&exchange);
        if let Some(notice) = notice {
            say(&notice);
        }
        for one in &found {
            say(&one.line());
        }
        if let Some(recorder) = &recorder {
            let at_ms = started.elapsed().as_secs_f64() * 1000.0;
            recorder.write(&crate::capture::aap::record(
                &number.to_string(),
                at_ms,
                exchange,
            ));
        }
    }
    traffic
}

/// Accepts connections until stopped, then ends them (after a grace period).
async fn accept(listener: TcpListener, shared: Arc<Shared>, stopped: watch::Receiver<bool>) {
    let log = |line: &str| shared.log(line);
    let mut connections = super::accept_until_stopped(listener, stopped, log, |tcp, stopped| {
        serve(tcp, Arc::clone(&shared), stopped)
    })
    .await;
    let _ = tokio::time::timeout(STOP_GRACE, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    // What is still open ends now: its bodies are dropped, their exchanges judged open.
    connections.shutdown().await;
}

/// Serves one client connection (keep-alive: any number of requests) until it ends or the
/// proxy stops.
async fn serve(
    tcp: tokio::net::TcpStream,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) {
    let service = hyper::service::service_fn(move |request| {
        let shared = Arc::clone(&shared);
        async move { Ok::<_, std::convert::Infallible>(forward(request, shared).await) }
    });
    let connection =
        hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(tcp), service);
    let mut connection = std::pin::pin!(connection);
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = stopped.wait_for(|stop| *stop) => connection.as_mut().graceful_shutdown(),
    }
    let _ = tokio::time::timeout(STOP_GRACE, connection).await;
}

/// Forwards one request and returns the upstream's response, its body passed through.
async fn forward(request: Request<Incoming>, shared: Arc<Shared>) -> Response<ProxyBody> {
    let number = shared.next.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = request.into_parts();
    // The client's credentials go on upstream; nothing the proxy writes shows them.
    for (name, value) in &parts.headers {
        if let Ok(value) = value.to_str() {
            crate::redact::learn_header(name.as_str(), value);
        }
    }
    let path = parts
        .uri
        .path_and_query()
        .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
    let pending = Arc::new(Mutex::new(Pending {
        exchange: Exchange {
            method: parts.method.to_string(),
            path: path.clone(),
            request_type: content_type(&parts.headers),
            request: None,
            status: None,
            content_type: None,
            response: None,
            ending: None,
            error: None,
        },
        request: Vec::new(),
        request_length: 0,
        response: Vec::new(),
        response_length: 0,
        max_body: shared.config.max_body,
        judge: Some(shared.judge.clone()),
        number,
    }));
    let upstream_request = {
        let mut builder = Request::builder()
            .method(parts.method.clone())
            .uri(format!("{}{path}", shared.target.base_path));
        if let Some(headers) = builder.headers_mut() {
            copy_headers(&parts.headers, headers);
            // The proxy's own `--header`s (a key the upstream wants and clients lack).
            crate::transport::headers::apply(headers);
            if let Ok(host) = HeaderValue::from_str(&shared.target.authority()) {
                headers.insert(HOST, host);
            }
        }
        builder.body(Tee::new(body, Side::Request, Arc::clone(&pending)))
    };
    let answered = match upstream_request {
        Ok(request) => send(&shared, request).await,
        Err(error) => Err(format!("cannot build the upstream request: {error}")),
    };
    match answered {
        Ok(response) => {
            let (parts, body) = response.into_parts();
            {
                let mut pending = lock(&pending);
                pending.exchange.status = Some(parts.status.as_u16());
                pending.exchange.content_type = content_type(&parts.headers);
            }
            let mut headers = HeaderMap::new();
            copy_headers(&parts.headers, &mut headers);
            let mut response = Response::new(Tee::new(body, Side::Response, pending).boxed());
            *response.status_mut() = parts.status;
            *response.headers_mut() = headers;
            response
        }
        Err(why) => {
            {
                let mut pending = lock(&pending);
                pending.exchange.error = Some(why.clone());
                pending.finish(None);
            }
            let body = Full::new(Bytes::from(format!("ahpspec proxy: {why}\n")))
                .map_err(|never| match never {})
                .boxed();
            let mut response = Response::new(body);
            *response.status_mut() = StatusCode::BAD_GATEWAY;
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static("text/plain; charset=utf-8"),
            );
            response
        }
    }
}

/// The request made upstream on a connection of its own (connected within the timeout).
/// The response head takes as long as the upstream takes — a none-mode turn answers only
/// once the turn is done — and the client decides how long to wait; a proxy that stops
/// first judges the exchange unanswered.
async fn send(shared: &Shared, request: Request<Tee>) -> Result<Response<Incoming>, String> {
    let timeout = shared.config.timeout;
    let io = connect(&shared.target, timeout)
        .await
        .map_err(|e| e.to_string())?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| format!("the upstream handshake failed: {e}"))?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    sender
        .send_request(request)
        .await
        .map_err(|error| format!("the upstream exchange failed: {error}"))
}

fn content_type(headers: &HeaderMap) -> Option<String> {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Copies every end-to-end header (each hop's own stay behind).
fn copy_headers(from: &HeaderMap, to: &mut HeaderMap) {
    for (name, value) in from {
        if !HOP.contains(&name.as_str()) {
            to.append(name.clone(), value.clone());
        }
    }
}

/// `ahpspec proxy --protocol aap`: proxies until SIGINT, SIGTERM or the end of
/// `duration`, calling `ready` with the URL clients use once it listens.
pub async fn serve_until_signal(
    config: AapProxyConfig,
    duration: Option<Duration>,
    ready: impl FnOnce(&str),
) -> Result<(RunReport, Result<(), crate::capture::CaptureError>), ProxyError> {
    let proxy = AapProxy::start(config).await?;
    let stop = super::until_signal(duration);
    ready(&proxy.url());
    stop.await;
    Ok(proxy.finish().await)
}
