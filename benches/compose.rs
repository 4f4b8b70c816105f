//! Benchmark: do the built-in host's faults compose? Runs the catalog once per fault and
//! once per pair of faults (`--fault a,b`) and reports every pair under which a rule fails
//! or warns that neither fault breaks alone. `cargo bench --bench compose`; the
//! environment variables `AHPSPEC_COMPOSE_SCOPE` (`all` pairs, the default, or `area`: the
//! pairs of faults whose rules are of the same spec area, the ones that touch the same
//! cases), `AHPSPEC_COMPOSE_PAIRS` (how many pairs at most, taken in a fixed shuffled
//! order), `AHPSPEC_COMPOSE_PARALLEL` (catalog runs at once, default 2) and
//! `AHPSPEC_COMPOSE_TIMEOUT_MS` (each expectation's wait while screening, default 2000),
//! `AHPSPEC_COMPOSE_CONFIRM_MS` (the wait when a suspect pair is run again, default 2000)
//! and `AHPSPEC_COMPOSE_SKIP` (pairs of the shuffled order an earlier run covered) shape it.
//! Each suspect prints as `suspect a,b: …` when screened; `AHPSPEC_COMPOSE_CONFIRM_ONLY=LOG`
//! confirms the suspects an earlier run's output `LOG` lists and has not confirmed yet, and
//! screens nothing. Figures: benches/README.md. A sample of pairs is a test
//! (tests/compose.rs).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use ahpspec::certify::{certify, Options};
use ahpspec::host::{Fault, FaultSet};
use ahpspec::rows::Quiet;
use ahpspec::suite::Catalog;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

async fn broken(faults: &str, timeout: Duration) -> Result<BTreeSet<String>, String> {
    let set: FaultSet = faults.parse().map_err(|e| format!("{e}"))?;
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let options = Options {
        faults: set.into(),
        timeout,
        jobs: 16,
        ..Options::default()
    };
    certify(&options, &mut Quiet, rx)
        .await
        .map(|report| report.broken_rules())
        .map_err(|e| e.to_string())
}

/// Runs the catalog for each item on `parallel` worker threads (each with a runtime of its
/// own: a run's futures are not `Send`), taking items from a shared queue so that one slow
/// run holds up no other; calls `done` with each result as it arrives.
fn in_parallel<T: Clone + Send + Sync>(
    items: &[T],
    parallel: usize,
    timeout: Duration,
    key: fn(&T) -> String,
    mut done: impl FnMut(&T, Result<BTreeSet<String>, String>),
) {
    let next = AtomicUsize::new(0);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..parallel.max(1) {
            let tx = tx.clone();
            let next = &next;
            scope.spawn(move || {
                let runtime = match tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                {
                    Ok(runtime) => runtime,
                    Err(error) => {
                        let _ = tx.send((usize::MAX, Err(error.to_string())));
                        return;
                    }
                };
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else { break };
                    let faults = key(item);
                    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        runtime.block_on(broken(&faults, timeout))
                    }))
                    .unwrap_or_else(|_| Err("the run panicked".to_owned()));
                    if tx.send((index, result)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for (index, result) in rx {
            match items.get(index) {
                Some(item) => done(item, result),
                None => {
                    eprintln!("a worker could not start: {result:?}");
                    std::process::exit(2);
                }
            }
        }
    });
}

/// The rules a pair breaks that neither fault breaks alone.
fn extra(together: &BTreeSet<String>, a: &BTreeSet<String>, b: &BTreeSet<String>) -> Vec<String> {
    together
        .iter()
        .filter(|rule| !a.contains(*rule) && !b.contains(*rule))
        .cloned()
        .collect()
}

/// The faults alone at `timeout`, or exit 2 on a harness error.
fn singles(
    names: &[&'static str],
    parallel: usize,
    timeout: Duration,
) -> BTreeMap<&'static str, BTreeSet<String>> {
    let mut alone = BTreeMap::new();
    in_parallel(
        names,
        parallel,
        timeout,
        |n| n.to_string(),
        |name, result| match result {
            Ok(rules) => {
                alone.insert(*name, rules);
            }
            Err(error) => {
                eprintln!("{name}: harness error {error}");
                std::process::exit(2);
            }
        },
    );
    alone
}

/// The suspects an earlier run's output lists (`suspect a,b: …`) and has not confirmed yet
/// (no `a,b: screened …` or `a,b: also …` line after), with what the screening saw.
fn unconfirmed(log: &str) -> Vec<((&'static str, &'static str), String)> {
    let fault = |name: &str| Fault::ALL.iter().map(|f| f.name()).find(|n| *n == name);
    let pair = |text: &str| {
        let (a, b) = text.split_once(',')?;
        Some((fault(a)?, fault(b)?))
    };
    let mut suspects = Vec::new();
    let mut confirmed = BTreeSet::new();
    for line in log.lines() {
        if let Some(rest) = line.strip_prefix("suspect ") {
            if let Some((names, first)) = rest.split_once(": ") {
                if let Some(p) = pair(names) {
                    suspects.push((p, first.to_owned()));
                }
            }
        } else if let Some((names, _)) = line.split_once(": ") {
            if let Some(p) = pair(names) {
                confirmed.insert(p);
            }
        }
    }
    suspects.retain(|(p, _)| !confirmed.contains(p));
    suspects
}

fn main() {
    let parallel: usize = env("AHPSPEC_COMPOSE_PARALLEL").unwrap_or(2);
    let confirm = Duration::from_millis(env("AHPSPEC_COMPOSE_CONFIRM_MS").unwrap_or(2000));
    if let Ok(path) = std::env::var("AHPSPEC_COMPOSE_CONFIRM_ONLY") {
        let log = match std::fs::read_to_string(&path) {
            Ok(log) => log,
            Err(error) => {
                eprintln!("{path}: {error}");
                std::process::exit(2);
            }
        };
        let suspects = unconfirmed(&log);
        println!("{} suspects of {path} to confirm", suspects.len());
        let started = Instant::now();
        confirm_suspects(&suspects, confirm, suspects.len(), 0, started);
        return;
    }
    let timeout = Duration::from_millis(env("AHPSPEC_COMPOSE_TIMEOUT_MS").unwrap_or(2000));
    let names: Vec<&'static str> = Fault::ALL.iter().map(|f| f.name()).collect();
    let catalog = Catalog::embedded().unwrap_or_default();
    let area = |fault: &Fault| catalog.rule(fault.rule()).map(|info| info.area);
    let same_area_only = std::env::var("AHPSPEC_COMPOSE_SCOPE").is_ok_and(|s| s == "area");
    let mut pairs: Vec<(&'static str, &'static str)> = Vec::new();
    for (i, a) in Fault::ALL.iter().enumerate() {
        for b in &Fault::ALL[i + 1..] {
            if !same_area_only || area(a) == area(b) {
                pairs.push((a.name(), b.name()));
            }
        }
    }
    // A fixed shuffle (a linear congruential walk), so that a partial run samples every area.
    let mut state: u64 = 0x5eed;
    for i in (1..pairs.len()).rev() {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        pairs.swap(i, (state >> 33) as usize % (i + 1));
    }
    // A resumed run skips the pairs an earlier run already reported (same shuffled order).
    let skip: usize = env("AHPSPEC_COMPOSE_SKIP").unwrap_or(0).min(pairs.len());
    pairs.drain(..skip);
    let limit: usize = env("AHPSPEC_COMPOSE_PAIRS").unwrap_or(pairs.len());
    pairs.truncate(limit);
    let started = Instant::now();
    let alone = singles(&names, parallel, timeout);
    println!(
        "{} faults alone in {:.0} s",
        alone.len(),
        started.elapsed().as_secs_f64()
    );
    let total = pairs.len();
    let mut seen = 0;
    let mut suspects: Vec<((&str, &str), String)> = Vec::new();
    in_parallel(
        &pairs,
        parallel,
        timeout,
        |p| format!("{},{}", p.0, p.1),
        |&(a, b), result| {
            seen += 1;
            match result {
                Ok(together) => {
                    let new = extra(&together, &alone[a], &alone[b]);
                    if !new.is_empty() {
                        println!("suspect {a},{b}: also {new:?}");
                        suspects.push(((a, b), format!("also {new:?}")));
                    }
                }
                Err(error) => {
                    println!("suspect {a},{b}: harness error {error}");
                    suspects.push(((a, b), format!("harness error {error}")));
                }
            }
            if seen % 500 == 0 || seen == total {
                println!(
                    "{} of {total} pairs (from {skip}), {} suspect, {:.0} s",
                    seen,
                    suspects.len(),
                    started.elapsed().as_secs_f64()
                );
            }
        },
    );
    confirm_suspects(&suspects, confirm, total, skip, started);
}

/// A short screening timeout can miss a message under load: every suspect pair is run
/// again, with both its faults alone, at the `confirm` timeout, and only what holds then is
/// reported. `total` pairs were screened (from `skip`).
fn confirm_suspects(
    suspects: &[((&'static str, &'static str), String)],
    confirm: Duration,
    total: usize,
    skip: usize,
    started: Instant,
) {
    let mut not_composing = Vec::new();
    for ((a, b), first) in suspects {
        let again = singles(&[a, b], 2, confirm);
        let mut pair = None;
        in_parallel(
            &[(*a, *b)],
            1,
            confirm,
            |p| format!("{},{}", p.0, p.1),
            |_, r| pair = Some(r),
        );
        let line = match pair {
            Some(Ok(together)) => {
                let new = extra(&together, &again[a], &again[b]);
                if new.is_empty() {
                    println!("{a},{b}: screened {first}; composes at {confirm:?}");
                    continue;
                }
                format!("{a},{b}: also {new:?}")
            }
            Some(Err(error)) => format!("{a},{b}: harness error {error}"),
            None => format!("{a},{b}: no result"),
        };
        println!("{line}");
        not_composing.push(line);
    }
    println!(
        "pairs: {total} (from {skip}); compose: {}; do not: {}; {:.0} s",
        total - not_composing.len(),
        not_composing.len(),
        started.elapsed().as_secs_f64()
    );
}
