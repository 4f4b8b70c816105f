//! Benchmark of `ahpspec proxy` (checks on), as separate processes on loopback: the built-in
//! host (`ahpspec serve`), the proxy in front of it, and this process as the client.
//! - added latency per forwarded frame: `ping` round trips straight to the host and through
//!   the proxy, one at a time; half the difference of the percentiles (a round trip is two
//!   forwarded frames). Aim: p50 added <= 100 µs.
//! - frames/s through the proxy: pings pipelined 64 deep on one connection, requests and
//!   responses counted. Aim: >= 50k frames/s.
//! - memory: the proxy's resident set with 200 connections each pipelining pings, and with
//!   200 clients that send without reading (backpressure: the proxy must not buffer).
//!
//! `cargo bench --bench proxy`; AHPSPEC_BENCH_SECS sets each throughput/memory phase
//! (default 5).

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A child process printing its URL on the first stdout line.
struct Served {
    child: Child,
    url: String,
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Served {
    fn start(args: &[&str]) -> Served {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ahpspec"))
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| fail(&format!("cannot start ahpspec: {e}")));
        let mut stdout =
            std::io::BufReader::new(child.stdout.take().unwrap_or_else(|| fail("no stdout")));
        let mut url = String::new();
        if stdout.read_line(&mut url).is_err() || url.trim().is_empty() {
            fail("no URL printed");
        }
        Served {
            child,
            url: url.trim().to_owned(),
            _stdout: stdout,
        }
    }

    fn rss_kib(&self) -> u64 {
        std::fs::read_to_string(format!("/proc/{}/statm", self.child.id()))
            .ok()
            .and_then(|s| {
                s.split_whitespace()
                    .nth(1)
                    .and_then(|p| p.parse::<u64>().ok())
            })
            .map_or(0, |pages| pages * 4)
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn fail(why: &str) -> ! {
    eprintln!("proxy bench: {why}");
    std::process::exit(2);
}

fn ping(id: u64) -> Message {
    Message::text(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"ping","params":{{"channel":"ahp-root://"}}}}"#
    ))
}

async fn connect(url: &str) -> Socket {
    match tokio_tungstenite::connect_async(url).await {
        Ok((socket, _)) => socket,
        Err(error) => fail(&format!("cannot connect to {url}: {error}")),
    }
}

/// The next text frame (control frames skipped).
async fn next_text(socket: &mut Socket) {
    loop {
        match socket.next().await {
            Some(Ok(Message::Text(_))) => return,
            Some(Ok(_)) => {}
            _ => fail("the connection ended"),
        }
    }
}

/// Round-trip times in µs of `n` pings one at a time, sorted.
async fn round_trips(url: &str, n: u64) -> Vec<f64> {
    let mut socket = connect(url).await;
    let mut times = Vec::with_capacity(n as usize);
    for id in 0..n {
        let started = Instant::now();
        if socket.send(ping(id)).await.is_err() {
            fail("send failed");
        }
        next_text(&mut socket).await;
        times.push(started.elapsed().as_secs_f64() * 1e6);
    }
    times.sort_by(f64::total_cmp);
    times
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

/// Pings pipelined `depth` deep for `secs`: frames (requests + responses) per second.
async fn pipelined(url: &str, depth: u64, secs: Duration) -> f64 {
    let socket = connect(url).await;
    let (mut sink, mut source) = socket.split();
    let started = Instant::now();
    let mut sent = 0u64;
    let mut received = 0u64;
    for _ in 0..depth {
        sent += 1;
        let _ = sink.feed(ping(sent)).await;
    }
    let _ = sink.flush().await;
    while started.elapsed() < secs {
        match source.next().await {
            Some(Ok(Message::Text(_))) => {
                received += 1;
                sent += 1;
                if sink.send(ping(sent)).await.is_err() {
                    break;
                }
            }
            Some(Ok(_)) => {}
            _ => break,
        }
    }
    (sent + received) as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let secs = Duration::from_secs(
        std::env::var("AHPSPEC_BENCH_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(5),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap_or_else(|e| fail(&format!("runtime: {e}")));
    let host = Served::start(&["serve"]);
    let reports = std::env::temp_dir().join(format!("ahpspec-proxy-bench-{}", std::process::id()));
    let reports = reports.to_string_lossy().into_owned();
    let proxy = Served::start(&["proxy", "--upstream", &host.url, "--report-dir", &reports]);
    runtime.block_on(async {
        // Warm-up, then the latency of each path.
        round_trips(&host.url, 2_000).await;
        round_trips(&proxy.url, 2_000).await;
        let direct = round_trips(&host.url, 20_000).await;
        let through = round_trips(&proxy.url, 20_000).await;
        for (name, p) in [("p50", 0.5), ("p99", 0.99)] {
            let (d, t) = (percentile(&direct, p), percentile(&through, p));
            println!(
                "round trip {name}: direct {d:.0} µs, through the proxy {t:.0} µs: added per forwarded frame ≈ {:.0} µs (aim p50 <= 100)",
                (t - d) / 2.0
            );
        }
        let rate = pipelined(&proxy.url, 64, secs).await;
        println!("through the proxy, one connection, 64 pings in flight: {rate:.0} frames/s (aim >= 50k)");
        let direct_rate = pipelined(&host.url, 64, secs).await;
        println!("straight to the host, same load: {direct_rate:.0} frames/s");
        println!("proxy resident memory, idle: {} KiB", proxy.rss_kib());
        busy_connections(&proxy, secs).await;
        never_reading(&proxy, secs).await;
    });
    let _ = std::fs::remove_dir_all(&reports);
}

/// 200 connections at once, each pipelining: frames/s in all, and the proxy's peak memory.
async fn busy_connections(proxy: &Served, secs: Duration) {
    let busy: Vec<_> = (0..200).map(|_| pipelined(&proxy.url, 8, secs)).collect();
    let all = futures_util::future::join_all(busy);
    tokio::pin!(all);
    let mut peak = 0;
    let rates = loop {
        tokio::select! {
            rates = &mut all => break rates,
            _ = tokio::time::sleep(Duration::from_millis(250)) => peak = peak.max(proxy.rss_kib()),
        }
    };
    println!(
        "200 connections, 8 pings in flight each: {:.0} frames/s in all; proxy resident memory peak {peak} KiB",
        rates.iter().sum::<f64>()
    );
}

/// 200 clients that send and never read: the proxy must stop reading them rather than
/// buffer (backpressure), so its memory stays flat however long they push.
async fn never_reading(proxy: &Served, secs: Duration) {
    let mut writers = Vec::new();
    for _ in 0..200 {
        writers.push(connect(&proxy.url).await);
    }
    let started = Instant::now();
    let mut samples = Vec::new();
    let mut id = 0u64;
    let mut pushing = true;
    while started.elapsed() < secs {
        if pushing {
            let sends = writers.iter_mut().map(|socket| {
                id += 1000;
                let first = id;
                async move {
                    for n in 0..200 {
                        // A send that cannot complete is backpressure at work.
                        let send = socket.send(ping(first + n));
                        if tokio::time::timeout(Duration::from_millis(50), send)
                            .await
                            .is_err()
                        {
                            return false;
                        }
                    }
                    true
                }
            });
            let progressed = futures_util::future::join_all(sends).await;
            pushing = progressed.iter().any(|p| *p);
        } else {
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        samples.push(proxy.rss_kib());
    }
    println!(
        "200 clients sending without reading for {secs:?}: proxy resident memory {} → {} KiB (max {}); senders {}",
        samples.first().copied().unwrap_or(0),
        samples.last().copied().unwrap_or(0),
        samples.iter().max().copied().unwrap_or(0),
        if pushing { "never blocked" } else { "all blocked (backpressure)" }
    );
}
