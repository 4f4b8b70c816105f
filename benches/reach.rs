//! Benchmark: which of the built-in host's faults the fuzzer finds. One campaign per fault of
//! `serve --fault list` (a fixed seed, stopping at the first finding), recording per fault
//! whether its own rule was found, which rule was, the time to the first finding and whether
//! the saved trace replays (`ahpspec::fuzz::reach`). `cargo bench --bench reach`, shaped by
//! these environment variables:
//!
//! - `AHPSPEC_REACH_SECS`: time to the first finding (default 60);
//! - `AHPSPEC_REACH_SEED`: the campaigns' seed (default 1);
//! - `AHPSPEC_REACH_MODE`: `model`, `frames` or `mixed` (unset: frames for the transport
//!   faults, model sequences for the rest);
//! - `AHPSPEC_REACH_EVERY` and `AHPSPEC_REACH_FIRST`: every Nth fault of the list (default
//!   every one) from the Nth (default 0); `AHPSPEC_REACH_FAULTS`: names, comma-separated,
//!   instead;
//! - `AHPSPEC_REACH_PARALLEL`: campaigns at once (default 1);
//! - `AHPSPEC_REACH_OUT`: a JSON Lines file, one line per fault (default
//!   `target/reach.jsonl`); faults it already holds are skipped, so a run cut short
//!   resumes where it stopped.
//!
//! Figures: benches/README.md.

use std::collections::BTreeSet;
use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use ahpspec::host::Fault;
use ahpspec::reach::{listed_faults, reach, ReachConfig, ReachMode, Reached};
use ahpspec::suite::Catalog;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env<T: std::str::FromStr>(name: &str) -> Option<T> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The faults to run: the named ones, or every Nth of the list from the first.
fn chosen(catalog: &Catalog) -> Vec<(Fault, String)> {
    let listed = listed_faults(catalog);
    if let Ok(names) = std::env::var("AHPSPEC_REACH_FAULTS") {
        let names: BTreeSet<&str> = names.split(',').map(str::trim).collect();
        return listed
            .into_iter()
            .filter(|(f, _)| names.contains(f.name()))
            .collect();
    }
    let every = env::<usize>("AHPSPEC_REACH_EVERY").unwrap_or(1).max(1);
    let first = env::<usize>("AHPSPEC_REACH_FIRST").unwrap_or(0);
    listed.into_iter().skip(first).step_by(every).collect()
}

/// Faults an earlier run already wrote to `out`.
fn done(out: &str) -> Vec<Reached> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return;
    }
    let catalog = Catalog::embedded().expect("the embedded catalog loads");
    let mut cfg = ReachConfig::standard().expect("profile and schemas");
    cfg.budget = Duration::from_secs(env("AHPSPEC_REACH_SECS").unwrap_or(60));
    cfg.seed = env("AHPSPEC_REACH_SEED").unwrap_or(1);
    cfg.mode = match std::env::var("AHPSPEC_REACH_MODE").as_deref() {
        Ok("model") => Some(ReachMode::Model),
        Ok("frames") => Some(ReachMode::Frames),
        Ok("mixed") => Some(ReachMode::Mixed),
        _ => None,
    };
    // AHPSPEC_REACH_CASES=0: the generator's own operations only, no catalog case among them.
    if std::env::var("AHPSPEC_REACH_CASES").as_deref() == Ok("0") {
        cfg.catalog = None;
    }
    let out = std::env::var("AHPSPEC_REACH_OUT").unwrap_or_else(|_| "target/reach.jsonl".into());
    let earlier = done(&out);
    let skip: BTreeSet<String> = earlier.iter().map(|r| r.fault.clone()).collect();
    let todo: Vec<(Fault, String)> = chosen(&catalog)
        .into_iter()
        .filter(|(f, _)| !skip.contains(f.name()))
        .collect();
    let parallel = env::<usize>("AHPSPEC_REACH_PARALLEL").unwrap_or(1).max(1);
    println!(
        "reach: {} faults to run ({} done before in {out}), seed {}, {} s each, {parallel} at once",
        todo.len(),
        earlier.len(),
        cfg.seed,
        cfg.budget.as_secs()
    );
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&out)
        .expect("the output file opens");
    let file = Mutex::new(file);
    let results = Mutex::new(earlier);
    let next = AtomicUsize::new(0);
    let started = Instant::now();
    std::thread::scope(|scope| {
        for _ in 0..parallel {
            scope.spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                loop {
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some((fault, area)) = todo.get(index) else {
                        break;
                    };
                    let reached = runtime.block_on(reach(*fault, area, &cfg));
                    println!("{}", line(&reached));
                    let json = serde_json::to_string(&reached).expect("serialises");
                    if let Ok(mut file) = file.lock() {
                        let _ = writeln!(file, "{json}");
                    }
                    if let Ok(mut results) = results.lock() {
                        results.push(reached);
                    }
                }
            });
        }
    });
    let results = results.into_inner().unwrap_or_default();
    summary(&results, started.elapsed());
}

fn line(r: &Reached) -> String {
    let what = match (&r.found_rule, r.found, r.found_by_another) {
        (Some(rule), true, _) => format!("found {rule}"),
        (Some(rule), false, true) => format!("found by {rule}, which it also breaks"),
        (Some(rule), false, false) => format!("NOT FOUND (found {rule} instead)"),
        (None, _, _) => "NOT FOUND".to_owned(),
    };
    let at = r
        .first_finding_ms
        .map(|ms| format!(" in {:.1} s", ms as f64 / 1000.0))
        .unwrap_or_default();
    let replays = match r.replays {
        Some(true) => ", replays",
        Some(false) => ", DOES NOT REPLAY",
        None => "",
    };
    let by = if r.cases.is_empty() {
        String::new()
    } else {
        format!(" [by case {}]", r.cases.join(", "))
    };
    let note = r
        .note
        .as_ref()
        .map(|n| format!(" [{n}]"))
        .unwrap_or_default();
    format!(
        "{:<34} {:<18} {:<6} {what}{at}{replays}{by} ({} sequences, {} operations){note}",
        r.fault,
        r.rule,
        r.mode.name(),
        r.sequences,
        r.operations
    )
}

fn summary(results: &[Reached], elapsed: Duration) {
    let total = results.len();
    let own = results.iter().filter(|r| r.found).count();
    let caught = results.iter().filter(|r| r.caught()).count();
    let replayed = results
        .iter()
        .filter(|r| r.caught() && r.replays == Some(true))
        .count();
    let pct = |n: usize| 100.0 * n as f64 / total.max(1) as f64;
    println!(
        "\nreach: {caught} of {total} faults found ({:.0}%: {own} by their own rule, {} by another rule they break), {replayed} found and replayed ({:.0}%); this run {:.0} s",
        pct(caught),
        caught - own,
        pct(replayed),
        elapsed.as_secs_f64()
    );
    let by_cases = results
        .iter()
        .filter(|r| r.caught() && !r.cases.is_empty())
        .count();
    println!(
        "found with a catalog case among the shrunk finding's operations: {by_cases}; by the generator's own operations alone: {}",
        caught - by_cases
    );
    let mut times: Vec<u64> = results
        .iter()
        .filter(|r| r.caught())
        .filter_map(|r| r.first_finding_ms)
        .collect();
    times.sort_unstable();
    if let (Some(median), Some(max)) = (times.get(times.len() / 2), times.last()) {
        println!(
            "time to the first finding: median {:.1} s, longest {:.1} s",
            *median as f64 / 1000.0,
            *max as f64 / 1000.0
        );
    }
    for r in results.iter().filter(|r| !r.caught()) {
        println!("not found: {}", line(r));
    }
}
