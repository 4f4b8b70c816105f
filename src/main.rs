//! The `ahpspec` command line: parses arguments and calls the library. Library errors are
//! `thiserror` types; only this edge uses `anyhow`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use ahpspec::certify::{self, Options};
use ahpspec::engine::{Event, EventSink, Selection, Shard};
use ahpspec::host::{self, faults, FaultSet, HostConfig};
use ahpspec::report;
use ahpspec::suite::Catalog;
use ahpspec::verdict::{Level, Verdict};
use clap::{Args, Parser, Subcommand};

/// Subcommands with enough options to want a file of their own (src/cli/).
mod cli {
    pub mod fuzz;
    pub mod proxy;
}
use cli::fuzz::{fuzz_command, replay_command, FuzzArgs, ReplayArgs};
use cli::proxy::{check_command, proxy_command, CheckArgs, ProxyArgs};

// Checks and the built-in host allocate many short-lived JSON values; mimalloc makes the fuzzer
// about a fifth faster end to end than the system allocator (benches/README.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[derive(Debug, Parser)]
#[command(
    name = "ahpspec",
    version,
    about = "Conformance harness and fuzzer for the Agent Host Protocol"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Certify an AHP server (the built-in reference host when no URL is given).
    Run(RunArgs),
    /// Print the case catalog, one case per line: ID, level, area, description.
    List(ListArgs),
    /// Fuzz an AHP server with seeded random action sequences (the built-in host when no URL).
    Fuzz(FuzzArgs),
    /// Re-run a saved fuzz trace: exit 1 when the failure reproduces, 0 when it no longer does.
    Replay(ReplayArgs),
    /// Merge the reports of several runs (e.g. `run --shard I/N` on parallel CI jobs) into one.
    Merge(MergeArgs),
    /// Check real traffic: a WebSocket proxy between any AHP client and server that checks
    /// every connection live and writes the reports on Ctrl-C, SIGTERM or --duration.
    Proxy(ProxyArgs),
    /// Re-check captures (`--record` of proxy or run) offline and write the same reports.
    Check(CheckArgs),
    /// Run the built-in reference AHP host.
    Serve {
        /// Address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Break rules on purpose: one fault or several (`a,b`); `--fault list` prints the catalog.
        #[arg(long)]
        fault: Option<String>,
        /// Envelopes kept for reconnect replay.
        #[arg(long, default_value_t = host::DEFAULT_REPLAY_CAPACITY)]
        replay_buffer: usize,
        /// Largest accepted WebSocket message in bytes.
        #[arg(long, default_value_t = host::DEFAULT_MAX_MESSAGE_BYTES)]
        max_message_bytes: usize,
    },
}

/// Which cases, shared by `run` and `list`.
#[derive(Debug, Args)]
struct SelectArgs {
    /// Only cases whose ID matches one of these globs (comma-separated or repeated).
    #[arg(long, value_delimiter = ',')]
    filter: Vec<String>,
    /// Leave out cases whose ID matches one of these globs.
    #[arg(long, value_delimiter = ',')]
    exclude: Vec<String>,
    /// Only cases of these levels (MUST, SHOULD, MAY).
    #[arg(long, value_delimiter = ',', value_parser = parse_level)]
    level: Vec<Level>,
    /// Read suites from this directory instead of the built-in ones.
    #[arg(long)]
    suites: Option<PathBuf>,
    /// Only slice I of N of the selected cases (by case ID), e.g. 2/4, for parallel CI jobs;
    /// `ahpspec merge` combines the shards' reports.
    #[arg(long, value_parser = parse_shard)]
    shard: Option<Shard>,
}

#[derive(Debug, Args)]
struct MergeArgs {
    /// Report directories (or report.json files) of the runs to merge.
    #[arg(required = true)]
    reports: Vec<PathBuf>,
    /// Known failures, applied to the merged whole (stale entries are judged there too).
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Warnings (broken SHOULDs) fail the merged run too.
    #[arg(long)]
    strict: bool,
    /// Where the merged reports go.
    #[arg(long, default_value = "reports")]
    report_dir: PathBuf,
}

#[derive(Debug, Args)]
struct ListArgs {
    #[command(flatten)]
    select: SelectArgs,
}

#[derive(Debug, Args)]
struct TlsArgs {
    /// Trust the certificates in this PEM file for wss:// besides the system's roots (a
    /// self-signed server or a private CA); may be repeated.
    #[arg(long = "ca-cert", value_name = "PEM")]
    ca_cert: Vec<PathBuf>,
}

impl TlsArgs {
    /// Adds the `--ca-cert` files to the process's trust; a one-line error for the first
    /// unusable one.
    fn apply(&self) -> Result<(), String> {
        for path in &self.ca_cert {
            ahpspec::transport::tls::trust_ca_file(path).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Server to certify (ws:// or wss:// URL); omitted: the built-in reference host.
    url: Option<String>,
    #[command(flatten)]
    tls: TlsArgs,
    #[command(flatten)]
    select: SelectArgs,
    /// Break rules in the built-in host: one fault or several (`a,b`; see `ahpspec serve --fault list`).
    #[arg(long)]
    fault: Option<String>,
    /// JSON Schema directory to validate against instead of the built-in 1.0.0 schemas.
    #[arg(long)]
    schemas: Option<PathBuf>,
    /// Target profile: how to trigger agent behaviours on this server.
    #[arg(long)]
    target_profile: Option<PathBuf>,
    /// Known failures (one case ID per line); unlisted failures and stale entries fail the run.
    #[arg(long)]
    baseline: Option<PathBuf>,
    /// Warnings (broken SHOULDs) fail the run too.
    #[arg(long)]
    strict: bool,
    /// The protocol version(s) the harness's connections offer, one whole run each
    /// (e.g. 0.9.0, or 1.0.0,0.9.0 for both side by side).
    #[arg(long, value_delimiter = ',', default_value = "1.0.0")]
    protocol_version: Vec<String>,
    /// Per-expectation timeout, e.g. 5s or 500ms.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    timeout: Duration,
    /// Cases run in parallel (each on its own connections and session).
    #[arg(long, default_value_t = 8)]
    jobs: usize,
    /// Record every frame of the run into this capture (JSON Lines; `ahpspec check` re-checks it).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Where the reports go.
    #[arg(long, default_value = "reports")]
    report_dir: PathBuf,
}

fn parse_level(text: &str) -> Result<Level, String> {
    match text.to_ascii_uppercase().as_str() {
        "MUST" => Ok(Level::Must),
        "SHOULD" => Ok(Level::Should),
        "MAY" => Ok(Level::May),
        other => Err(format!("unknown level {other:?} (MUST, SHOULD or MAY)")),
    }
}

pub(crate) fn parse_shard(text: &str) -> Result<Shard, String> {
    text.parse()
        .map_err(|e: ahpspec::engine::ShardError| e.to_string())
}

fn parse_duration(text: &str) -> Result<Duration, String> {
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let value: u64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?} (e.g. 5s, 500ms)"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(value)),
        "s" => Ok(Duration::from_secs(value)),
        "m" => Ok(Duration::from_secs(value * 60)),
        _ => Err(format!("invalid duration {text:?} (e.g. 5s, 500ms)")),
    }
}

impl SelectArgs {
    fn selection(&self) -> Selection {
        Selection {
            filter: self.filter.clone(),
            exclude: self.exclude.clone(),
            levels: self.level.clone(),
            shard: self.shard,
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) if !error.use_stderr() => {
            // --help and --version.
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
        Err(error) => {
            let text = error.to_string();
            let first = text.lines().next().unwrap_or("invalid arguments");
            let first = first.strip_prefix("error: ").unwrap_or(first);
            return usage_error(&format!("{first} (see --help)"));
        }
    };
    match cli.command {
        Command::List(args) => list(&args),
        Command::Fuzz(args) => fuzz_command(args),
        Command::Replay(args) => replay_command(args),
        Command::Run(args) => run(args),
        Command::Merge(args) => merge(args),
        Command::Proxy(args) => proxy_command(args),
        Command::Check(args) => check_command(args),
        Command::Serve {
            listen,
            fault,
            replay_buffer,
            max_message_bytes,
        } => {
            if fault.as_deref() == Some("list") {
                return list_faults();
            }
            let faults = match parse_faults(fault.as_deref()) {
                Ok(faults) => faults,
                Err(error) => return usage_error(&error),
            };
            let config = HostConfig {
                listen,
                faults,
                replay_capacity: replay_buffer.max(1),
                max_message_bytes,
                ..HostConfig::default()
            };
            match serve(config) {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("ahpspec: {error:#}");
                    ExitCode::from(2)
                }
            }
        }
    }
}

/// `--fault a,b`; absent: none.
fn parse_faults(names: Option<&str>) -> Result<FaultSet, String> {
    names.map_or(Ok(FaultSet::default()), |names| {
        names.parse::<FaultSet>().map_err(|e| e.to_string())
    })
}

/// `serve --fault list`: one line per fault (name, rule, what it breaks), grouped under a
/// `# area` line by the spec area of the rule it breaks (the catalog's), so the list stays
/// readable as it grows.
fn list_faults() -> ExitCode {
    let catalog = Catalog::embedded().unwrap_or_default();
    let mut areas: Vec<(String, Vec<String>)> = Vec::new();
    for (fault, line) in ahpspec::host::Fault::ALL
        .iter()
        .zip(faults::catalog_lines())
    {
        let area = catalog
            .rule(fault.rule())
            .map_or_else(|| "other".to_owned(), |info| info.area);
        match areas.iter_mut().find(|(name, _)| *name == area) {
            Some((_, lines)) => lines.push(line),
            None => areas.push((area, vec![line])),
        }
    }
    for (area, lines) in areas {
        println!("# {area} ({})", lines.len());
        for line in lines {
            println!("{line}");
        }
    }
    ExitCode::SUCCESS
}

fn usage_error(message: &str) -> ExitCode {
    eprintln!("ahpspec: {message}");
    ExitCode::from(2)
}

/// Runs `work` to completion on a current-thread runtime (loopback round trips are several
/// times faster than on the multi-thread one), giving it a watch that turns true on Ctrl-C.
/// A runtime that cannot start is a one-line error, exit 2.
fn with_runtime<F, T>(
    work: impl FnOnce(tokio::sync::watch::Receiver<bool>) -> F,
) -> Result<T, ExitCode>
where
    F: std::future::Future<Output = T>,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| usage_error(&format!("cannot start the runtime: {error}")))?;
    Ok(runtime.block_on(async {
        let (stop, interrupt) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = stop.send(true);
            }
        });
        work(interrupt).await
    }))
}

/// Serves until SIGINT or SIGTERM. A current-thread runtime: loopback round trips are
/// several times faster than on the multi-thread one.
fn serve(config: HostConfig) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let handle = host::spawn(config.clone())
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
        println!("{}", handle.url());
        std::io::stdout().flush()?;
        if !config.faults.is_empty() {
            let faults: Vec<String> = config
                .faults
                .iter()
                .map(|fault| format!("{fault} (breaks {})", fault.rule()))
                .collect();
            eprintln!("ahpspec: serving with fault {}", faults.join(", "));
        }
        wait_for_signal().await;
        handle.shutdown().await;
        Ok(())
    })
}

async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

fn list(args: &ListArgs) -> ExitCode {
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

fn run(args: RunArgs) -> ExitCode {
    if let Err(error) = args.tls.apply() {
        return usage_error(&error);
    }
    let faults = match parse_faults(args.fault.as_deref()) {
        Ok(faults) => faults,
        Err(error) => return usage_error(&error),
    };
    if !faults.is_empty() && args.url.is_some() {
        return usage_error("--fault applies to the built-in host only (omit the URL)");
    }
    if let Some(url) = &args.url {
        if !(url.starts_with("ws://") || url.starts_with("wss://")) {
            return usage_error(&format!(
                "not a WebSocket URL: {url} (expected ws://… or wss://…)"
            ));
        }
    }
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

/// Writes the four reports, prints the summary, and maps the verdicts to the exit code:
/// 1 for failures, blocked cases or an interrupted run, 2 when only harness errors stand
/// in the way of a verdict, 0 for a conforming run.
pub(crate) fn finish(
    report: &ahpspec::verdict::RunReport,
    report_dir: &std::path::Path,
) -> ExitCode {
    let written = report::write_all(report, report_dir);
    println!("{}", report::render_summary_line(report));
    match written {
        Ok(files) => println!(
            "reports: {} (also {}, {}, {})",
            files.html.display(),
            files.json.display(),
            files.junit.display(),
            files.markdown.display()
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

fn merge(args: MergeArgs) -> ExitCode {
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
