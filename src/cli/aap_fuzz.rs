//! `ahpspec fuzz --protocol aap`: the options the AAP campaign takes (`--baseline`,
//! `--exclude`, `--shard`, `--record`, `--mode malformed`), its console output, traces and
//! reports; the campaign itself is the library's (`ahpspec::aap::fuzz`).

use std::process::ExitCode;

use ahpspec::report;
use ahpspec::rows::baseline::Baseline;
use ahpspec::target::{Decided, Protocol};

use super::fuzz_args::FuzzArgs;
use crate::{usage_error, with_runtime};

/// `fuzz --protocol aap`: the campaign is the library's; this prints, writes and exits.
pub fn aap_fuzz(args: FuzzArgs, decided: &Decided) -> ExitCode {
    use ahpspec::aap::fuzz;
    // Options the AAP campaign does not implement are refused, never silently ignored.
    let unsupported = [
        ("--target-profile", args.target_profile.is_some()),
        (
            "--mode frames (AAP's is --mode malformed)",
            args.mode == "frames",
        ),
    ];
    if let Some((option, _)) = unsupported.iter().find(|(_, given)| *given) {
        return usage_error(&format!("{option} applies to AHP fuzzing only"));
    }
    let baseline = match args.baseline.as_deref().map(Baseline::load).transpose() {
        Ok(baseline) => baseline.unwrap_or_default(),
        Err(error) => return usage_error(&error.to_string()),
    };
    let seed = args
        .seed
        .unwrap_or_else(|| jiff::Timestamp::now().as_nanosecond() as u64);
    // The AAP client records its own exchanges: no proxy, so the built-in target (a fresh
    // server per sequence) records as well as a URL.
    // Each exchange is an `http` record, the AAP proxy's capture format.
    let recorder = match args
        .record
        .as_deref()
        .map(ahpspec::capture::Recorder::create)
        .transpose()
    {
        Ok(recorder) => recorder,
        Err(error) => return usage_error(&error.to_string()),
    };
    let options = fuzz::AapFuzzOptions {
        baseline,
        target: decided.for_sequences(args.token.clone()),
        token: decided.token(args.token.clone()),
        seed,
        cases: args.cases,
        duration: args.duration,
        shrink_time: args.shrink_time,
        max_len: args.max_len,
        timeout: args.timeout,
        exclude: args.exclude.clone(),
        shard: args.shard,
        record: recorder.clone().map(ahpspec::capture::aap::sink),
        malformed: args.mode == "malformed",
    };
    println!(
        "ahpspec fuzz: protocol aap, mode {}, seed {seed}{}, target {}{}",
        if args.mode == "malformed" {
            "malformed"
        } else {
            "model"
        },
        args.shard
            .map(|s| format!(", shard {s} (sequences {}, {}, …)", s.nth(0), s.nth(1)))
            .unwrap_or_default(),
        decided.label(),
        decided
            .fault_label()
            .map(|f| format!(" (fault {f})"))
            .unwrap_or_default()
    );
    let started = ahpspec::rows::Started::now();
    let outcome = match with_runtime(|_| async { fuzz::campaign(&options).await }) {
        Ok(Ok(outcome)) => outcome,
        Ok(Err(error)) => return usage_error(&error.to_string()),
        Err(exit) => return exit,
    };
    if let Some(recorder) = &recorder {
        if let Err(error) = recorder.finish() {
            return usage_error(&error.to_string());
        }
    }
    let dir = args.report_dir.join("fuzz");
    let traces = match fuzz::write_traces(&outcome, &dir) {
        Ok(traces) => traces,
        Err(error) => return usage_error(&format!("cannot write traces: {error}")),
    };
    let plan = ahpspec::rows::RunPlan {
        selection: ahpspec::catalog::Selection {
            shard: args.shard,
            ..Default::default()
        },
        timeout: args.timeout,
        jobs: 1,
        rerun_prefix: ahpspec::certify::run_command(Protocol::Aap, decided, None),
        target_label: decided.label(),
        fault: decided.fault_label(),
        strict: false,
    };
    let report = fuzz::report(&outcome, &plan, &started, &traces);
    for row in &report.cases {
        println!(
            "{} {}: {}\n  replay: {}",
            row.info.id,
            row.verdict.as_str(),
            row.summary,
            row.rerun
        );
    }
    for (rule, sequence) in &outcome.baselined {
        println!(
            "seen and baselined: {rule} (first in sequence {sequence}; listed in the baseline, not shrunk)"
        );
    }
    let besides = if outcome.baselined.is_empty() {
        ""
    } else {
        " besides baselined rules"
    };
    println!(
        "{} sequences, {} operations, {} rule(s) failing{besides}",
        outcome.sequences,
        outcome.operations,
        outcome.found.len()
    );
    if let Err(error) = report::write_all(&report, &dir) {
        return usage_error(&error.to_string());
    }
    if outcome.found.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}
