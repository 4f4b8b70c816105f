//! `ahpspec run`, `list` and `merge`: certify a server, list the catalog, merge shard
//! reports; the console while cases finish and the exit-code policy of a report.

use std::io::IsTerminal;
use std::process::ExitCode;

use ahpspec::catalog::{Catalog, Selection, SuiteFormat};
use ahpspec::certify::{self, Options};
use ahpspec::report;
use ahpspec::rows::{Event, EventSink};
use ahpspec::target::{protocol_of, Faults, Protocol};
use ahpspec::verdict::Verdict;

use crate::{usage_error, with_runtime, ListArgs, MergeArgs, RunArgs};

/// `ahpspec list`: the catalog of the protocol as its selection admits it.
pub fn list(args: &ListArgs) -> ExitCode {
    let selection = args.select.selection();
    let suites = args.select.suites.as_deref();
    let lines = match protocol_of(None, args.protocol.as_deref()) {
        Ok(Protocol::Ahp) => listing::<ahpspec::suite::Step>(suites, &selection),
        Ok(Protocol::Aap) => listing::<ahpspec::aap::suite::Step>(suites, &selection),
        Err(error) => Err(error),
    };
    match lines {
        Ok(lines) => {
            lines.iter().for_each(|line| println!("{line}"));
            ExitCode::SUCCESS
        }
        Err(error) => usage_error(&error),
    }
}

/// The lines `list` prints for a protocol's suites, or why there are none.
fn listing<S: SuiteFormat>(
    suites: Option<&std::path::Path>,
    selection: &Selection,
) -> Result<Vec<String>, String> {
    let catalog = Catalog::<S>::load(suites).map_err(|error| error.to_string())?;
    if !selection.matches_any(&catalog) {
        return Err(format!(
            "the selection {} matches no case",
            selection.describe()
        ));
    }
    Ok(catalog.listing(selection))
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
                eprintln!("ahpspec: {}", ahpspec::redact::text(text));
            }
            Event::RunFinished if self.progress => eprint!("\r\x1b[2K"),
            _ => {}
        }
    }
}

/// `ahpspec run`: certifies a server of either protocol (the library does the work) and
/// writes the reports.
pub fn run(args: RunArgs) -> ExitCode {
    let protocol = match protocol_of(args.url.as_deref(), args.protocol.as_deref()) {
        Ok(protocol) => protocol,
        Err(error) => return usage_error(&error),
    };
    if let Err(error) = args.connect.apply() {
        return usage_error(&error);
    }
    let token = match protocol {
        // AAP faults are the AAP server's own (`serve --protocol aap --fault list`).
        Protocol::Aap => match aap_key(args.token.clone()) {
            Ok(token) => token,
            Err(error) => return usage_error(&error),
        },
        Protocol::Ahp => args.token.clone(),
    };
    let options = Options {
        protocol,
        url: args.url.clone(),
        faults: Faults::named(args.fault.as_deref()),
        token,
        suites: args.select.suites.clone(),
        schemas: args.schemas.clone(),
        profile: args.target_profile.clone(),
        workspace: None,
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
    match outcome {
        Ok(Ok(report)) => finish(&report, &args.report_dir),
        Ok(Err(error)) => usage_error(&error.to_string()),
        Err(exit) => exit,
    }
}

/// The AAP key: `--token`, or the key of an `Authorization: Bearer KEY` `--header` (which
/// then stops being an extra header: the key is sent as `--token`'s is, and left out where
/// a case must go without it).
fn aap_key(token: Option<String>) -> Result<Option<String>, String> {
    use ahpspec::transport::headers;
    let (authorization, others): (Vec<_>, Vec<_>) = headers::extra()
        .into_iter()
        .partition(|(name, _)| name == "authorization");
    let bearer = authorization.iter().find_map(|(_, value)| {
        let (scheme, key) = value.split_once(' ')?;
        scheme
            .eq_ignore_ascii_case("bearer")
            .then(|| key.trim().to_owned())
    });
    match (token, bearer) {
        (Some(_), Some(_)) => {
            Err("--token and an Authorization: Bearer --header both give the key: give one".into())
        }
        (Some(token), None) => Ok(Some(token)),
        (None, Some(key)) => {
            headers::set(others);
            Ok(Some(key))
        }
        (None, None) => Ok(None),
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
        .map(ahpspec::rows::baseline::Baseline::load)
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
