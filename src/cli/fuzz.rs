//! `ahpspec fuzz` and `ahpspec replay`: the replay's arguments, the campaign's console output, its reports
//! and traces (one trace per rule found).

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use ahpspec::fuzz::{self, trace::Trace, Excluded, ExecConfig, FuzzOptions, FuzzOutcome};
use ahpspec::proxy;
use ahpspec::report;
use ahpspec::rows::baseline::Baseline;
use ahpspec::server::Target;
use ahpspec::target::{decide, protocol_of, Decided, Faults, Protocol};
use clap::Args;

use super::fuzz_args::FuzzArgs;
use crate::{parse_duration, usage_error, with_runtime, ConnectArgs};

#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// A trace written by `ahpspec fuzz` (reports/fuzz/<seed>-<rule>.json).
    file: PathBuf,
    /// Server to replay against; omitted: the trace's own target (the built-in host, with its fault).
    url: Option<String>,
    #[command(flatten)]
    connect: ConnectArgs,
    /// Print the trace as a suite case (TOML) instead of replaying it.
    #[arg(long)]
    to_case: bool,
    /// Target profile the campaign ran with (its turns start with the same behaviours).
    #[arg(long)]
    target_profile: Option<PathBuf>,
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    timeout: Duration,
}

fn exec_config(
    profile: Option<&PathBuf>,
    timeout: Duration,
    clients: usize,
) -> anyhow::Result<ExecConfig> {
    use std::sync::Arc;
    let profile = match profile {
        Some(path) => ahpspec::client::profile::Profile::load(path)?,
        None => ahpspec::client::profile::Profile::scripted()?,
    };
    Ok(ExecConfig {
        timeout,
        settle: Duration::from_millis(3),
        clients: clients.clamp(1, 8),
        profile,
        schemas: ahpspec::checks::frame::Schemas {
            set: Arc::new(ahpspec::schema::SchemaSet::embedded()?),
            map: Arc::new(ahpspec::checks::frame::SchemaMap::embedded()),
        },
        checkpoint_every: 10,
        exclude: Excluded::default(),
        known: Default::default(),
        // Loaded always: a replay runs the case operations its trace names.
        catalog: Some(Arc::new(ahpspec::suite::Catalog::embedded()?)),
    })
}

/// The campaign's options from the arguments: baseline, execution settings, seed and
/// number of sequences (a shard's share of them, from its own seed); a usage error's exit
/// code otherwise.
fn campaign_options(args: &FuzzArgs, decided: &Decided) -> Result<FuzzOptions, ExitCode> {
    let baseline = match args.baseline.as_deref().map(Baseline::load).transpose() {
        Ok(baseline) => baseline.unwrap_or_default(),
        Err(error) => return Err(usage_error(&error.to_string())),
    };
    let mut exec = match exec_config(args.target_profile.as_ref(), args.timeout, args.clients) {
        Ok(exec) => exec,
        Err(error) => return Err(usage_error(&format!("{error:#}"))),
    };
    exec.exclude = Excluded::new(args.exclude.clone());
    if args.no_cases {
        exec.catalog = None;
    }
    let seed = args
        .seed
        .unwrap_or_else(|| jiff::Timestamp::now().as_nanosecond() as u64);
    let (seed, cases) = match args.shard {
        Some(shard) if args.cases.is_some_and(|total| total < shard.count as u64) => {
            return Err(usage_error(&format!(
                "--cases {} gives shard {shard} no sequence (at least one per shard)",
                args.cases.unwrap_or_default()
            )));
        }
        Some(shard) => {
            let derived = fuzz::shard_seed(seed, shard);
            println!("ahpspec fuzz: shard {shard} of seed {seed}: campaign seed {derived}");
            (
                derived,
                args.cases.map(|total| fuzz::shard_cases(total, shard)),
            )
        }
        None => (seed, args.cases),
    };
    Ok(FuzzOptions {
        target: decided.for_sequences(None),
        exec,
        seed,
        cases,
        duration: args.duration,
        shrink_time: args.shrink_time,
        max_len: args.max_len.max(1),
        baseline,
        stop_after: None,
        progress: None,
        uniform: false,
    })
}

/// With --record, a recording proxy in front of the target and the campaign's options
/// pointed at it; without it, nothing.
async fn record_through(
    args: &FuzzArgs,
    options: &FuzzOptions,
) -> Result<(Option<proxy::Proxy>, Option<FuzzOptions>), ExitCode> {
    let (Some(path), Some(url)) = (&args.record, options.target.url()) else {
        return Ok((None, None));
    };
    let schemas = options.exec.schemas.clone();
    match proxy::recording(url, path, schemas, args.timeout).await {
        Ok(proxy) => {
            let mut recorded = options.clone();
            recorded.target = Target::Url(proxy.url());
            Ok((Some(proxy), Some(recorded)))
        }
        Err(error) => Err(usage_error(&error.to_string())),
    }
}

pub fn fuzz_command(args: FuzzArgs) -> ExitCode {
    let protocol = match protocol_of(args.url.as_deref(), args.protocol.as_deref()) {
        Ok(protocol) => protocol,
        Err(error) => return usage_error(&error),
    };
    if let Err(error) = args.connect.apply() {
        return usage_error(&error);
    }
    let faults = Faults::named(args.fault.as_deref());
    let decided = match decide(protocol, args.url.as_deref(), &faults) {
        Ok(decided) => decided,
        Err(error) => return usage_error(&error.to_string()),
    };
    if protocol == Protocol::Aap {
        return super::aap_fuzz::aap_fuzz(args, &decided);
    }
    if args.mode == "malformed" {
        return usage_error(
            "--mode malformed applies to AAP fuzzing only (AHP's malformed input is --mode frames)",
        );
    }
    if args.record.is_some() && args.url.is_none() {
        return usage_error(
            "--record on fuzz needs a URL (the built-in target is a fresh host per sequence: run `ahpspec serve` and fuzz its URL)",
        );
    }
    let options = match campaign_options(&args, &decided) {
        Ok(options) => options,
        Err(exit) => return exit,
    };
    let target_label = decided.label();
    let fault_name = decided.fault_label();
    println!(
        "ahpspec fuzz: seed {}, mode {}, target {}{}",
        options.seed,
        args.mode,
        ahpspec::redact::url(&target_label),
        fault_name
            .as_ref()
            .map(|f| format!(" (fault {f})"))
            .unwrap_or_default()
    );
    if !args.exclude.is_empty() {
        println!("not judged (--exclude): {}", args.exclude.join(", "));
    }
    let (progress, progress_line) = progress_line();
    let options = FuzzOptions {
        progress,
        ..options
    };
    let campaign = Campaign {
        args: &args,
        target: &target_label,
        fault: fault_name,
        baseline: &options.baseline,
    };
    with_runtime(|interrupt| async {
        let (recording, through) = match record_through(&args, &options).await {
            Ok(recording) => recording,
            Err(exit) => return exit,
        };
        let options = through.as_ref().unwrap_or(&options);
        let line = progress_line.map(tokio::spawn);
        let stop_line = || {
            if let Some(line) = &line {
                line.abort();
                eprint!("\r\x1b[2K");
            }
        };
        let exit = match args.mode.as_str() {
            "frames" => {
                let outcome = fuzz::frames::fuzz_frames(options, interrupt).await;
                stop_line();
                campaign.finish(outcome)
            }
            "model" => {
                let outcome = fuzz::fuzz(options, interrupt).await;
                stop_line();
                campaign.finish(outcome)
            }
            _ => {
                let outcome = fuzz::mixed::fuzz_mixed(options, interrupt).await;
                stop_line();
                campaign.finish(outcome)
            }
        };
        match recording {
            Some(proxy) => match proxy.finish().await {
                (_, Ok(())) => exit,
                (_, Err(error)) => usage_error(&error.to_string()),
            },
            None => exit,
        }
    })
    .unwrap_or_else(|exit| exit)
}

/// On a terminal: where the campaign reports its progress, and the task that shows it as
/// one line (sequences, operations/s, rules failing) once the campaign has run a second.
/// Elsewhere: nothing.
fn progress_line() -> (
    Option<tokio::sync::watch::Sender<fuzz::FuzzProgress>>,
    Option<impl std::future::Future<Output = ()>>,
) {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return (None, None);
    }
    let (sender, receiver) = tokio::sync::watch::channel(fuzz::FuzzProgress::default());
    let show = async move {
        let started = std::time::Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let elapsed = started.elapsed().as_secs_f64();
            if elapsed < 1.0 {
                continue;
            }
            let now = *receiver.borrow();
            eprint!(
                "\r\x1b[2K[{elapsed:.0} s] {} sequences, {} operations/s, {} rule(s) failing",
                now.sequences,
                fuzz::findings::per_second(now.operations as f64 / elapsed),
                now.rules
            );
        }
    };
    (Some(sender), Some(show))
}

/// What the campaign's output needs besides its outcome.
struct Campaign<'a> {
    args: &'a FuzzArgs,
    target: &'a str,
    /// The combined fault name, if any.
    fault: Option<String>,
    baseline: &'a Baseline,
}

impl Campaign<'_> {
    /// Writes the reports and one trace per rule found, prints each finding and the
    /// summary; the exit code (1 when a rule the baseline does not list failed).
    fn finish<T: serde::Serialize + fuzz::mixed::ModeOf>(
        &self,
        outcome: Result<FuzzOutcome<T>, fuzz::ExecError>,
    ) -> ExitCode {
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(error) => return usage_error(&error.to_string()),
        };
        let mode = self.args.mode.as_str();
        let dir = self.args.report_dir.join("fuzz");
        let input = fuzz::ReportInput {
            target: self.target,
            fault: self.fault.clone(),
            mode,
            baseline: self.baseline,
            traces: &dir,
            shard: self.args.shard.map(|s| s.to_string()),
            duration: self.args.duration,
        };
        if let Err(error) = report::write_all(&fuzz::report(&outcome, &input), &dir) {
            eprintln!("ahpspec: {error}");
            return ExitCode::from(2);
        }
        println!(
            "{}",
            fuzz::findings::render_figures(&outcome, self.args.duration)
        );
        if outcome.coverage.covered() > 0 {
            println!("protocol state: {}", outcome.coverage.summary());
            let map = serde_json::to_string_pretty(&outcome.coverage.to_json()).unwrap_or_default();
            if let Err(error) = std::fs::write(dir.join("state-coverage.json"), map + "\n") {
                eprintln!(
                    "ahpspec: {}: {error}",
                    dir.join("state-coverage.json").display()
                );
                return ExitCode::from(2);
            }
        }
        for found in &outcome.findings.found {
            let trace = Trace::new(
                found,
                T::mode_of(&found.ops),
                self.target,
                self.fault.clone(),
            );
            let path = match trace.save(&dir) {
                Ok(path) => path,
                Err(error) => {
                    eprintln!("ahpspec: {error}");
                    return ExitCode::from(2);
                }
            };
            println!("{}", ahpspec::redact::text(&fuzz::render_found(found)));
            println!("  Trace: {}", path.display());
            println!("  Reproduce with: ahpspec replay {}\n", path.display());
        }
        print!("{}", fuzz::findings::render_summary(&outcome));
        if let Some(stopped) = &outcome.stopped {
            println!("campaign stopped: {stopped}");
        }
        let failed = outcome.findings.any_unbaselined();
        if !failed {
            let besides = if outcome.findings.baselined.is_empty() {
                ""
            } else {
                " besides baselined rules"
            };
            println!("no failure found{besides} (seed {})", outcome.seed);
        }
        println!("reports: {}", dir.display());
        let harness_stopped = outcome
            .stopped
            .as_ref()
            .is_some_and(|s| s.is_harness_error());
        if failed || outcome.interrupted {
            ExitCode::from(1)
        } else if harness_stopped {
            ExitCode::from(2)
        } else {
            ExitCode::SUCCESS
        }
    }
}

pub fn replay_command(args: ReplayArgs) -> ExitCode {
    if let Err(error) = args.connect.apply() {
        return usage_error(&error);
    }
    let trace = match Trace::load(&args.file) {
        Ok(trace) => trace,
        Err(error) => return usage_error(&error.to_string()),
    };
    if args.to_case {
        print!("{}", trace.to_case());
        return ExitCode::SUCCESS;
    }
    let url = args
        .url
        .clone()
        .or_else(|| (trace.target != "builtin").then(|| trace.target.clone()));
    // The trace's own faults (one name in traces of older versions, `a,b` now), for the
    // built-in host it ran against.
    let faults = match url {
        None => Faults::named(trace.fault.as_deref()),
        Some(_) => Faults::default(),
    };
    let decided = match decide(Protocol::Ahp, url.as_deref(), &faults) {
        Ok(decided) => decided,
        Err(error) => return usage_error(&error.to_string()),
    };
    let exec = match exec_config(args.target_profile.as_ref(), args.timeout, 2) {
        Ok(exec) => exec,
        Err(error) => return usage_error(&format!("{error:#}")),
    };
    let target = decided.for_sequences(None);
    let (trace_ref, target_ref, exec_ref) = (&trace, &target, &exec);
    let replayed = with_runtime(|mut interrupt| async move {
        tokio::select! {
            replayed = fuzz::replay_trace(trace_ref, target_ref, exec_ref) => Some(replayed),
            _ = interrupt.wait_for(|stop| *stop) => None,
        }
    });
    let replayed = match replayed {
        Ok(Some(replayed)) => replayed,
        Ok(None) => return usage_error("interrupted: the replay gives no verdict"),
        Err(exit) => return exit,
    };
    let replayed = replayed.map(|replayed| {
        for skipped in &replayed.skipped_cases {
            eprintln!("left out: case {skipped}");
        }
        (
            replayed.failure,
            replayed.instead,
            replayed.skipped_cases.len(),
        )
    });
    match replayed {
        Ok((Some(failure), _, _)) => {
            println!(
                "reproduced: {} — expected {}; got {}",
                failure.rule, failure.expected, failure.actual
            );
            ExitCode::from(1)
        }
        Ok((None, Some(other), _)) => {
            println!(
                "no longer reproduces: {}; the sequence fails on {} instead — expected {}; got {}",
                trace.failure.rule, other.rule, other.expected, other.actual
            );
            ExitCode::from(1)
        }
        Ok((None, None, skipped @ 1..)) => usage_error(&format!(
            "not reproduced, but {skipped} case operations ran nothing (listed above): no verdict"
        )),
        Ok((None, None, _)) => {
            let count = trace.ops.as_array().map_or(0, Vec::len);
            println!(
                "no longer reproduces: {} ({count} operations ran cleanly)",
                trace.failure.rule
            );
            ExitCode::SUCCESS
        }
        Err(error) => usage_error(&error.to_string()),
    }
}
