//! `ahpspec run`, `list` and `merge`: certify a server, list the catalog, merge shard
//! reports; the console while cases finish and the exit-code policy of a report.

use std::io::IsTerminal;
use std::process::ExitCode;

use ahpspec::certify::{self, Options};
use ahpspec::engine::{Event, EventSink};
use ahpspec::report;
use ahpspec::suite::Catalog;
use ahpspec::verdict::Verdict;

use crate::{target_faults, usage_error, with_runtime, ListArgs, MergeArgs, RunArgs};

pub fn list(args: &ListArgs) -> ExitCode {
    match ahpspec::aap::protocol_of(None, args.protocol.as_deref()) {
        Ok(ahpspec::aap::Protocol::Aap) => {
            return match ahpspec::aap::runner::catalog_lines(&args.select.selection()) {
                Ok(lines) => {
                    lines.iter().for_each(|line| println!("{line}"));
                    ExitCode::SUCCESS
                }
                Err(error) => usage_error(&error.to_string()),
            }
        }
        Ok(ahpspec::aap::Protocol::Ahp) => {}
        Err(error) => return usage_error(&error),
    }
    let catalog = match &args.select.suites {
        Some(dir) => Catalog::from_dir(dir),
        None => Catalog::embedded(),
    };
    let catalog = match catalog {
        Ok(catalog) => catalog,
        Err(error) => return usage_error(&error.to_string()),
    };
    let selection = args.select.selection();
    if !selection.matches_any(&catalog) {
        return usage_error(&format!(
            "the selection {} matches no case",
            selection.describe()
        ));
    }
    for case in catalog
        .cases
        .iter()
        .filter(|c| selection.includes(&c.info.id, c.info.level))
    {
        println!(
            "{}\t{}\t{}\t{}",
            case.info.id,
            case.info.level.as_str(),
            case.info.area,
            case.info.does
        );
    }
    for rule in ahpspec::checks::ALWAYS_ON
        .iter()
        .filter(|r| selection.includes(r.id, r.level))
    {
        println!(
            "{}\t{}\t{}\tChecked on every frame of every case ({})",
            rule.id,
            rule.level.as_str(),
            rule.area,
            rule.unit
        );
    }
    ExitCode::SUCCESS
}

/// Terminal output while cases finish: failures in full; on a terminal, once the run has
/// taken a second, a progress line (cases done, failing so far, cases per second).
struct Console {
    progress: bool,
    started: std::time::Instant,
    failing: usize,
}

impl Console {
    fn new() -> Console {
        Console {
            progress: std::io::stderr().is_terminal(),
            started: std::time::Instant::now(),
            failing: 0,
        }
    }
}

impl EventSink for Console {
    fn event(&mut self, event: &Event) {
        match event {
            Event::CaseFinished {
                result,
                done,
                total,
            } => {
                let broken = matches!(
                    result.verdict,
                    Verdict::Fail | Verdict::Warn | Verdict::Blocked | Verdict::HarnessError
                );
                self.failing += usize::from(broken);
                let elapsed = self.started.elapsed().as_secs_f64();
                if self.progress && elapsed >= 1.0 {
                    eprint!(
                        "\r\x1b[2K[{done}/{total}] {} failing, {:.0} cases/s · {}",
                        self.failing,
                        *done as f64 / elapsed,
                        report::terminal_safe(&result.info.id)
                    );
                }
                if broken {
                    if self.progress {
                        eprint!("\r\x1b[2K");
                    }
                    println!("{}", report::render_failure(result));
                }
            }
            Event::Notice(text) => {
                if self.progress {
                    eprint!("\r\x1b[2K");
                }
                eprintln!("ahpspec: {text}");
            }
            Event::RunFinished if self.progress => eprint!("\r\x1b[2K"),
            _ => {}
        }
    }
}

pub fn run(args: RunArgs) -> ExitCode {
    match ahpspec::aap::protocol_of(args.url.as_deref(), args.protocol.as_deref()) {
        Ok(ahpspec::aap::Protocol::Aap) => return run_aap(args),
        Ok(ahpspec::aap::Protocol::Ahp) => {}
        Err(error) => return usage_error(&error),
    }
    let faults = match target_faults(&args.tls, args.fault.as_deref(), args.url.is_some()) {
        Ok(faults) => faults,
        Err(exit) => return exit,
    };
    let options = Options {
        url: args.url.clone(),
        faults,
        suites: args.select.suites.clone(),
        schemas: args.schemas.clone(),
        profile: args.target_profile.clone(),
        baseline: args.baseline.clone(),
        selection: args.select.selection(),
        timeout: args.timeout,
        jobs: args.jobs.max(1),
        strict: args.strict,
        protocol_versions: args.protocol_version.clone(),
        record: args.record.clone(),
    };
    let outcome = with_runtime(|interrupt| async move {
        let mut console = Console::new();
        certify::certify(&options, &mut console, interrupt).await
    });
    let report = match outcome {
        Ok(Ok(report)) => report,
        Ok(Err(error)) => return usage_error(&error.to_string()),
        Err(exit) => return exit,
    };
    finish(&report, &args.report_dir)
}

/// `run` against an AAP server (or the built-in one): the library does the work. AAP
/// faults are the AAP server's own (`serve --protocol aap --fault list`).
fn run_aap(args: RunArgs) -> ExitCode {
    if let Err(error) = args.tls.apply() {
        return usage_error(&error);
    }
    if args.schemas.is_some() || args.target_profile.is_some() || args.record.is_some() {
        return usage_error("--schemas, --target-profile and --record apply to AHP runs only");
    }
    if args.protocol_version != [ahpspec::client::checkpoint::DEFAULT_OFFER] {
        return usage_error(
            "--protocol-version applies to AHP runs only (AAP runs speak version 3)",
        );
    }
    let options = ahpspec::aap::AapOptions {
        url: args.url.clone(),
        target_label: args.url.clone().unwrap_or_else(|| "builtin".to_owned()),
        fault: args.fault.clone(),
        token: args.token.clone(),
        selection: args.select.selection(),
        timeout: args.timeout,
        jobs: args.jobs.max(1),
        strict: args.strict,
        suites: args.select.suites.clone(),
        baseline: args.baseline.clone(),
        rerun_prefix: ahpspec::aap::rerun_prefix(args.url.as_deref(), args.fault.as_deref())
            + &args
                .select
                .suites
                .as_ref()
                .map(|dir| format!(" --suites {}", dir.display()))
                .unwrap_or_default(),
    };
    let outcome = with_runtime(|interrupt| async move {
        let mut console = Console::new();
        ahpspec::aap::certify(&options, &mut console, interrupt).await
    });
    match outcome {
        Ok(Ok(report)) => finish(&report, &args.report_dir),
        Ok(Err(error)) => usage_error(&error.to_string()),
        Err(exit) => exit,
    }
}

/// Writes the four reports, prints the summary, and maps the verdicts to the exit code:
/// 1 for failures, blocked cases or an interrupted run, 2 when only harness errors stand
/// in the way of a verdict, 0 for a conforming run.
pub(crate) fn finish(
    report: &ahpspec::verdict::RunReport,
    report_dir: &std::path::Path,
) -> ExitCode {
    let written = report::write_all(report, report_dir);
    println!("{}", report::render_summary_line(report));
    println!("{}", report::render_scope(report));
    match written {
        Ok(files) => println!(
            "reports: {} (also {}, {}, {}, {})",
            files.html.display(),
            files.json.display(),
            files.junit.display(),
            files.markdown.display(),
            files.badge.display()
        ),
        Err(error) => {
            eprintln!("ahpspec: {error}");
            return ExitCode::from(2);
        }
    }
    for id in &report.stale_baseline {
        println!("stale baseline entry: {id} now passes (remove it from the baseline)");
    }
    if !report.conforming() || report.interrupted {
        ExitCode::from(1)
    } else if report.tally.harness_error > 0 {
        // No failures, but some cases could not be judged: not a conforming verdict.
        ExitCode::from(2)
    } else {
        ExitCode::SUCCESS
    }
}

pub fn merge(args: MergeArgs) -> ExitCode {
    let baseline = match args
        .baseline
        .as_deref()
        .map(ahpspec::engine::baseline::Baseline::load)
        .transpose()
    {
        Ok(baseline) => baseline,
        Err(error) => return usage_error(&error.to_string()),
    };
    let reports: Result<Vec<_>, _> = args
        .reports
        .iter()
        .map(|p| ahpspec::merge::load(p))
        .collect();
    let merged = reports.and_then(|mut reports| {
        if args.strict {
            for report in &mut reports {
                report.strict = true;
            }
        }
        ahpspec::merge::merge(reports, baseline.as_ref())
    });
    match merged {
        Ok(report) => finish(&report, &args.report_dir),
        Err(error) => usage_error(&error.to_string()),
    }
}
