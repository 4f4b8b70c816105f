//! Benchmark: do the built-in host's faults compose? Runs the catalog once per fault and
//! once per pair of faults (`--fault a,b`) and reports every pair under which a rule fails
//! or warns that neither fault breaks alone. `cargo bench --bench compose`; the
//! environment variables `AHPSPEC_COMPOSE_SCOPE` (`all` pairs, the default, or `area`: the
//! pairs of faults whose rules are of the same spec area, the ones that touch the same
//! cases), `AHPSPEC_COMPOSE_PAIRS` (how many pairs at most, taken in a fixed shuffled
//! order), `AHPSPEC_COMPOSE_PARALLEL` (catalog runs at once, default 2) and
//! `AHPSPEC_COMPOSE_TIMEOUT_MS` (each expectation's wait, default 2000) shape the run.
//! Figures: benches/README.md. A sample of pairs is a test (tests/compose.rs).

use std::collections::{BTreeMap, BTreeSet};
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

/// Runs the catalog for each item, at most `parallel` at once (each on a thread and runtime
/// of its own: a run's futures are not `Send`), in order of `items`.
fn in_parallel<T: Clone + Send + Sync>(
    items: Vec<T>,
    parallel: usize,
    timeout: Duration,
    key: fn(&T) -> String,
) -> Vec<(T, Result<BTreeSet<String>, String>)> {
    let mut results = Vec::new();
    for chunk in items.chunks(parallel.max(1)) {
        let chunk_results: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = chunk
                .iter()
                .map(|item| {
                    let faults = key(item);
                    scope.spawn(move || {
                        let runtime = tokio::runtime::Builder::new_current_thread()
                            .enable_all()
                            .build()
                            .map_err(|e| e.to_string())?;
                        runtime.block_on(broken(&faults, timeout))
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|handle| {
                    handle
                        .join()
                        .unwrap_or_else(|_| Err("the run panicked".to_owned()))
                })
                .collect()
        });
        results.extend(chunk.iter().cloned().zip(chunk_results));
    }
    results
}

fn main() {
    let parallel: usize = env("AHPSPEC_COMPOSE_PARALLEL").unwrap_or(2);
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
    let limit: usize = env("AHPSPEC_COMPOSE_PAIRS").unwrap_or(pairs.len());
    pairs.truncate(limit);
    let started = Instant::now();
    let singles = in_parallel(names.clone(), parallel, timeout, |n| n.to_string());
    let mut alone: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for (name, result) in singles {
        match result {
            Ok(rules) => {
                alone.insert(name, rules);
            }
            Err(error) => {
                eprintln!("{name}: harness error {error}");
                std::process::exit(2);
            }
        }
    }
    println!(
        "{} faults alone in {:.0} s",
        alone.len(),
        started.elapsed().as_secs_f64()
    );
    let mut composing = 0;
    let mut not_composing = Vec::new();
    let total = pairs.len();
    for (done, chunk) in pairs.chunks(200).enumerate() {
        let results = in_parallel(chunk.to_vec(), parallel, timeout, |p| {
            format!("{},{}", p.0, p.1)
        });
        for ((a, b), result) in results {
            let together = match result {
                Ok(rules) => rules,
                Err(error) => {
                    not_composing.push(format!("{a},{b}: harness error {error}"));
                    continue;
                }
            };
            let either: BTreeSet<String> = alone[a].union(&alone[b]).cloned().collect();
            let new: Vec<&String> = together.difference(&either).collect();
            if new.is_empty() {
                composing += 1;
            } else {
                let line = format!("{a},{b}: also {new:?}");
                println!("{line}");
                not_composing.push(line);
            }
        }
        println!(
            "{} of {total} pairs, {composing} compose, {} do not, {:.0} s",
            ((done + 1) * 200).min(total),
            not_composing.len(),
            started.elapsed().as_secs_f64()
        );
    }
    println!(
        "pairs: {total}; compose: {composing}; do not: {}; {:.0} s",
        not_composing.len(),
        started.elapsed().as_secs_f64()
    );
}
