//! Benchmark of the fuzzer: end-to-end throughput (client operations per second with every
//! check on, against the built-in host), the offline check throughput (recorded envelopes
//! re-checked per second: frame checks + reducer mirror), and resident memory over the run.
//! `cargo bench --bench fuzz`; AHPSPEC_BENCH_SECS sets the fuzzing time (default 20; use 600
//! for the 10-minute memory check; 0 skips it), AHPSPEC_BENCH_OFFLINE_SECS the time of each
//! offline measurement (default 3; 0 skips them). Aims: >= 5,000 operations/s end to end, >= 1M
//! envelopes/s offline, memory flat.

use std::time::{Duration, Instant};

use ahpspec::checks::frame::Schemas;
use ahpspec::checks::stream::StreamChecks;
use ahpspec::client::Profile;
use ahpspec::fuzz::{execute, fuzz, ExecConfig, FuzzOptions, Op};
use ahpspec::target::Decided;

// The allocator the `ahpspec` binary uses (src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| {
            s.split_whitespace()
                .nth(1)
                .and_then(|p| p.parse::<u64>().ok())
        })
        .map_or(0, |pages| pages * 4)
}

fn main() {
    let secs: u64 = std::env::var("AHPSPEC_BENCH_SECS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20);
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("cannot start runtime: {error}");
            std::process::exit(2);
        }
    };
    let schemas = match Schemas::load(None) {
        Ok(schemas) => schemas,
        Err(error) => {
            eprintln!("schemas: {error}");
            std::process::exit(2);
        }
    };
    let profile = match Profile::scripted() {
        Ok(profile) => profile,
        Err(error) => {
            eprintln!("profile: {error}");
            std::process::exit(2);
        }
    };
    let exec = ExecConfig {
        timeout: Duration::from_secs(2),
        settle: Duration::from_millis(3),
        clients: 2,
        profile,
        schemas: schemas.clone(),
        checkpoint_every: 10,
        exclude: Default::default(),
        known: Default::default(),
        catalog: None,
    };
    let options = FuzzOptions {
        target: Decided::Host(Default::default()).for_sequences(None),
        exec: exec.clone(),
        seed: 42,
        cases: None,
        duration: Duration::from_secs(secs),
        shrink_time: Duration::from_secs(1),
        max_len: 30,
        baseline: Default::default(),
        stop_after: Some(1),
        progress: None,
        uniform: false,
    };
    // End to end, with the memory sampled once per slice.
    // AHPSPEC_BENCH_SECS=0 measures the offline re-check alone.
    let slices = if secs == 0 { 0 } else { secs.clamp(1, 10) };
    let mut total_ops = 0usize;
    let mut total_time = Duration::ZERO;
    let mut rss = vec![rss_kib()];
    for slice in 0..slices {
        let (_stop, interrupt) = tokio::sync::watch::channel(false);
        let slice_options = FuzzOptions {
            seed: 42 + slice,
            duration: Duration::from_secs(secs / slices),
            ..options.clone()
        };
        let outcome = match runtime.block_on(fuzz(&slice_options, interrupt)) {
            Ok(outcome) => outcome,
            Err(error) => {
                eprintln!("fuzz: {error}");
                std::process::exit(2);
            }
        };
        if let Some(found) = outcome.findings.found.first() {
            eprintln!(
                "unexpected failure on the correct host: {:?}",
                found.failure
            );
            std::process::exit(1);
        }
        total_ops += outcome.operations;
        total_time += outcome.elapsed;
        rss.push(rss_kib());
    }
    println!(
        "end to end: {total_ops} operations (dispatches and protocol probes) in {:.1} s = {:.0} operations/s (aim >= 5000)",
        total_time.as_secs_f64(),
        total_ops as f64 / total_time.as_secs_f64().max(1e-9)
    );
    println!("resident memory (KiB) per slice: {rss:?}");
    // Offline: record the frames of a long sequence, then re-check them repeatedly.
    let ops: Vec<Op> = (0..60)
        .map(|i| match i % 6 {
            0 => Op::StartTurn {
                client: 0,
                behaviour: ahpspec::fuzz::ops::Behaviour::Stream,
            },
            1 => Op::Rename { client: 1 },
            2 => Op::SetPending {
                client: 0,
                kind: ahpspec::fuzz::ops::PendingKind::Steering,
                id: 1,
            },
            3 => Op::StartTurn {
                client: 1,
                behaviour: ahpspec::fuzz::ops::Behaviour::Echo,
            },
            4 => Op::Draft { client: 0 },
            _ => Op::Checkpoint,
        })
        .collect();
    let recorded = match runtime.block_on(execute(&ops, &options.target, &exec)) {
        Ok(run) => run.frames,
        Err(error) => {
            eprintln!("recording: {error}");
            std::process::exit(2);
        }
    };
    // Each connection's frames in order, sent ones included (requests are what responses
    // are matched against), as the runner feeds its checks.
    let mut by_conn: Vec<(String, Vec<(bool, String)>)> = Vec::new();
    for frame in &recorded {
        let sent = frame.direction == "sent";
        match by_conn.iter_mut().find(|(name, _)| *name == frame.conn) {
            Some((_, frames)) => frames.push((sent, frame.text.clone())),
            None => by_conn.push((frame.conn.clone(), vec![(sent, frame.text.clone())])),
        }
    }
    // Keyed by the clientId each connection initialised with (echoes name it).
    let by_conn: Vec<(String, Vec<(bool, String)>)> = by_conn
        .into_iter()
        .map(|(name, frames)| {
            let client_id = frames
                .iter()
                .filter(|(sent, _)| *sent)
                .filter_map(|(_, text)| serde_json::from_str::<serde_json::Value>(text).ok())
                .find(|m| m["method"] == "initialize")
                .and_then(|m| m["params"]["clientId"].as_str().map(str::to_owned))
                .unwrap_or(name);
            (client_id, frames)
        })
        .collect();
    let dispatches: std::collections::HashMap<&str, Vec<Option<(i64, serde_json::Value)>>> =
        by_conn
            .iter()
            .map(|(client_id, frames)| {
                let found = frames
                    .iter()
                    .map(|(sent, text)| sent.then(|| dispatch_in(text)).flatten())
                    .collect();
                (client_id.as_str(), found)
            })
            .collect();
    let received = recorded
        .iter()
        .filter(|f| f.direction == "received")
        .count();
    let envelopes = recorded
        .iter()
        .filter(|f| f.direction == "received" && f.text.contains("\"method\":\"action\""))
        .count();
    // Each worker re-checks the whole recording, connection by connection, with the checks
    // the runner uses; workers run on their own threads (one per core).
    let recheck = |budget: Duration| -> (usize, usize) {
        let started = Instant::now();
        let (mut rounds, mut violations) = (0, 0);
        while started.elapsed() < budget {
            for (client_id, frames) in &by_conn {
                let mut checks = StreamChecks::new(client_id);
                for (index, ((sent, text), dispatch)) in frames
                    .iter()
                    .zip(&dispatches[client_id.as_str()])
                    .enumerate()
                {
                    if *sent {
                        // What `Conn::dispatch` records before sending.
                        if let Some((seq, action)) = dispatch {
                            checks.dispatched.insert(*seq, action.clone());
                        }
                        checks.sent(index, 0.0, text, &schemas);
                    } else {
                        violations += checks.received(text, &schemas).len();
                    }
                }
            }
            rounds += 1;
        }
        (rounds, violations)
    };
    // AHPSPEC_BENCH_OFFLINE_SECS=0 measures end to end alone.
    let budget = Duration::from_secs(
        std::env::var("AHPSPEC_BENCH_OFFLINE_SECS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(3),
    );
    if budget.is_zero() {
        return;
    }
    let mut violations = 0;
    for workers in [1, 2] {
        let started = Instant::now();
        let results: Vec<(usize, usize)> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..workers)
                .map(|_| scope.spawn(|| recheck(budget)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or((0, 1)))
                .collect()
        });
        let elapsed = started.elapsed().as_secs_f64();
        let rounds: usize = results.iter().map(|r| r.0).sum();
        violations += results.iter().map(|r| r.1).sum::<usize>();
        println!(
            "offline, {workers} worker(s): {received} frames received ({envelopes} envelopes) re-checked {rounds} times in {elapsed:.1} s = {:.0} envelopes/s, {:.0} frames/s (aim >= 1M envelopes/s)",
            (envelopes * rounds) as f64 / elapsed,
            (received * rounds) as f64 / elapsed
        );
    }
    if violations > 0 {
        eprintln!("the recording of the correct host re-checked with {violations} violations");
        std::process::exit(1);
    }
}

/// The clientSeq and action of a sent dispatchAction frame.
fn dispatch_in(text: &str) -> Option<(i64, serde_json::Value)> {
    let mut message: serde_json::Value = serde_json::from_str(text).ok()?;
    if message["method"] != "dispatchAction" {
        return None;
    }
    let seq = message["params"]["clientSeq"].as_i64()?;
    Some((seq, message["params"]["action"].take()))
}
