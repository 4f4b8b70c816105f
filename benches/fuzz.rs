//! Benchmark of the fuzzer: end-to-end throughput (client operations per second with every
//! check on, against the built-in host), the offline check throughput (recorded envelopes
//! re-checked per second: frame checks + reducer mirror), and resident memory over the run.
//! `cargo bench --bench fuzz`; AHPSPEC_BENCH_SECS sets the fuzzing time (default 20; use 600
//! for the 10-minute memory check). Aims: >= 5,000 operations/s end to end, >= 1M
//! envelopes/s offline, memory flat.

use std::sync::Arc;
use std::time::{Duration, Instant};

use ahpspec::checks::frame::{FrameChecker, SchemaMap, Schemas};
use ahpspec::checks::mirror::Mirror;
use ahpspec::engine::profile::Profile;
use ahpspec::fuzz::{execute, fuzz, ExecConfig, FuzzOptions, Op, Target};
use ahpspec::schema::SchemaSet;
use ahpspec::tape::Tape;

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
    let schemas = match SchemaSet::embedded() {
        Ok(set) => Schemas {
            set: Arc::new(set),
            map: Arc::new(SchemaMap::embedded()),
        },
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
    };
    let options = FuzzOptions {
        target: Target {
            url: None,
            fault: None,
        },
        exec: exec.clone(),
        seed: 42,
        cases: None,
        duration: Duration::from_secs(secs),
        shrink_time: Duration::from_secs(1),
        max_len: 30,
    };
    // End to end, with the memory sampled once per slice.
    let slices = secs.clamp(1, 10);
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
        if let Some(found) = outcome.found {
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
    let received = recorded
        .iter()
        .filter(|f| f.direction == "received")
        .count();
    let envelopes = recorded
        .iter()
        .filter(|f| f.direction == "received" && f.text.contains("\"method\":\"action\""))
        .count();
    let started = Instant::now();
    let mut rounds = 0usize;
    let mut violations = 0usize;
    let mut tape = Tape::default();
    while started.elapsed() < Duration::from_secs(3) {
        for (_, frames) in &by_conn {
            let mut checker = FrameChecker::default();
            let mut mirror = Mirror::default();
            for (sent, text) in frames {
                if *sent {
                    if let Ok(message) = tape.parse(text) {
                        checker.on_sent(message);
                    }
                    continue;
                }
                let (message, _, found) = checker.on_text(&mut tape, text, &schemas);
                violations += found.len();
                if let Some(message) = message {
                    if message.member("method").as_str() == Some("action") {
                        violations += mirror.apply(message.member("params")).len();
                    } else {
                        let snapshot = message.member("result").member("snapshot");
                        if snapshot.is_object() {
                            mirror.load_snapshot(snapshot);
                        }
                    }
                }
            }
        }
        rounds += 1;
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "offline: {received} frames received ({envelopes} envelopes) re-checked {rounds} times in {elapsed:.1} s = {:.0} envelopes/s, {:.0} frames/s (aim >= 1M envelopes/s)",
        (envelopes * rounds) as f64 / elapsed,
        (received * rounds) as f64 / elapsed
    );
    if violations > 0 {
        eprintln!("the recording of the correct host re-checked with {violations} violations");
        std::process::exit(1);
    }
}
