//! Benchmark: verdicts do not depend on load. Keeps every core busy with other processes
//! (one `sh` busy loop per core, `AHPSPEC_STABILITY_HOGS` to change), then runs the whole
//! catalog `AHPSPEC_STABILITY_RUNS` times (default 20) against the clean host and each
//! fault of a sample, and reports every case whose verdict differs from that target's first
//! run. `cargo bench --bench stability`; figures in benches/README.md.

use std::collections::BTreeMap;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use ahpspec::certify::{certify, Options};
use ahpspec::host::FaultSet;
use ahpspec::rows::Quiet;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A sample across areas: state faults, stream faults, ordering, reconnect, blocking.
const SAMPLE: &[&str] = &[
    "",
    "queue-lifo",
    "cancel-keeps-streaming",
    "cross-channel-reorder",
    "replay-drops-deltas",
    "in-progress-stuck",
    "no-broadcast",
    "rejects-truncation",
    "summary-drift",
    "echo-order-swapped",
];

/// Kills the busy loops when the benchmark ends, however it ends.
struct Hogs(Vec<Child>);

impl Drop for Hogs {
    fn drop(&mut self) {
        for child in &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn main() {
    // The busy loops are killed when `Hogs` drops: every error path returns from `run`
    // (std::process::exit would skip the drop and leave them running).
    if let Err(error) = run() {
        eprintln!("{error}");
        std::process::exit(2);
    }
}

fn run() -> Result<(), String> {
    let env = |name: &str| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse::<usize>().ok())
    };
    let runs = env("AHPSPEC_STABILITY_RUNS").unwrap_or(20);
    let cores = std::thread::available_parallelism().map_or(2, usize::from);
    let hogs = env("AHPSPEC_STABILITY_HOGS").unwrap_or(cores);
    let _hogs = Hogs(
        (0..hogs)
            .filter_map(|_| {
                Command::new("sh")
                    .args(["-c", "while :; do :; done"])
                    .stdout(Stdio::null())
                    .spawn()
                    .ok()
            })
            .collect(),
    );
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start runtime: {error}"))?;
    println!("{hogs} busy processes on {cores} cores; {runs} runs per target");
    let started = Instant::now();
    let mut unstable = 0;
    for fault in SAMPLE {
        let faults: FaultSet = if fault.is_empty() {
            FaultSet::default()
        } else {
            fault.parse().map_err(|error| format!("{fault}: {error}"))?
        };
        let mut first: Option<BTreeMap<String, &'static str>> = None;
        let mut differing = 0;
        for run in 1..=runs {
            let (_tx, rx) = tokio::sync::watch::channel(false);
            let options = Options {
                faults: faults.clone().into(),
                ..Options::default()
            };
            let report = runtime
                .block_on(certify(&options, &mut Quiet, rx))
                .map_err(|error| format!("harness error: {error}"))?;
            let verdicts: BTreeMap<String, &'static str> = report
                .cases
                .iter()
                .map(|row| (row.info.id.clone(), row.verdict.as_str()))
                .collect();
            match &first {
                None => first = Some(verdicts),
                Some(expected) => {
                    for (id, verdict) in &verdicts {
                        if expected.get(id) != Some(verdict) {
                            differing += 1;
                            println!(
                                "{}: run {run}: {id} {verdict}, first run {}",
                                if fault.is_empty() { "clean" } else { fault },
                                expected.get(id).copied().unwrap_or("absent")
                            );
                        }
                    }
                }
            }
        }
        unstable += differing;
        println!(
            "{}: {runs} runs, {differing} verdicts differ from the first run",
            if fault.is_empty() { "clean" } else { fault }
        );
    }
    println!(
        "{} targets × {runs} runs under load: {unstable} differing verdicts in {:.0} s",
        SAMPLE.len(),
        started.elapsed().as_secs_f64()
    );
    Ok(())
}
