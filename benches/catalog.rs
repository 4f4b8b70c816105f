//! Benchmark: wall time of the full catalog against the built-in host, and cases per
//! second. Run with `cargo bench --bench catalog` (release build). Prints one line per run
//! and a summary; the aim is the whole catalog in about a second on 2 cores (no less is
//! possible: AUTH-002 waits out a token that lives 1 s, the schema's shortest).

use std::time::Instant;

use ahpspec::certify::{certify, Options};
use ahpspec::rows::Quiet;
use ahpspec::verdict::Verdict;

// The allocator the `ahpspec` binary uses (src/main.rs).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let runs: usize = std::env::var("AHPSPEC_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    let jobs: usize = std::env::var("AHPSPEC_BENCH_JOBS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(ahpspec::certify::DEFAULT_JOBS);
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
    let mut times = Vec::new();
    for run in 1..=runs {
        let (_stop, interrupt) = tokio::sync::watch::channel(false);
        let options = Options {
            jobs,
            ..Options::default()
        };
        let started = Instant::now();
        let report = runtime.block_on(certify(&options, &mut Quiet, interrupt));
        let elapsed = started.elapsed().as_secs_f64();
        let report = match report {
            Ok(report) => report,
            Err(error) => {
                eprintln!("harness error: {error}");
                std::process::exit(2);
            }
        };
        let passed = report
            .cases
            .iter()
            .filter(|c| c.verdict == Verdict::Pass)
            .count();
        println!(
            "run {run}: {} cases ({passed} pass) in {elapsed:.3} s = {:.0} cases/s (jobs {jobs})",
            report.cases.len(),
            report.cases.len() as f64 / elapsed
        );
        times.push((elapsed, report.cases.len()));
    }
    times.sort_by(|a, b| a.0.total_cmp(&b.0));
    if let Some((median, cases)) = times.get(times.len() / 2) {
        println!(
            "catalog wall time: median {median:.3} s over {runs} runs, {:.0} cases/s (aim: about 1 s)",
            *cases as f64 / median
        );
    }
}
