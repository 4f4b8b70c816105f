//! The `ahpspec` command line: parses arguments and calls the library. Library errors are
//! `thiserror` types; only this edge uses `anyhow`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use ahpspec::certify::{self, Options};
use ahpspec::engine::{Event, EventSink, Selection};
use ahpspec::host::{self, faults, Fault, HostConfig};
use ahpspec::report;
use ahpspec::suite::Catalog;
use ahpspec::verdict::{Level, Verdict};
use clap::{Args, Parser, Subcommand};

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
    /// Run the built-in reference AHP host.
    Serve {
        /// Address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Break one rule on purpose (`--fault list` prints the catalog).
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
    /// Break one rule in the built-in host (see `ahpspec serve --fault list`).
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
    /// Per-expectation timeout, e.g. 5s or 500ms.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    timeout: Duration,
    /// Cases run in parallel (each on its own connections and session).
    #[arg(long, default_value_t = 8)]
    jobs: usize,
    /// Where the reports go.
    #[arg(long, default_value = "reports")]
    report_dir: PathBuf,
}

#[derive(Debug, Args)]
struct FuzzArgs {
    /// Server to fuzz (ws:// or wss:// URL); omitted: a fresh built-in host per sequence.
    url: Option<String>,
    #[command(flatten)]
    tls: TlsArgs,
    /// Seed (printed at start; the same seed reproduces the run against a deterministic server).
    #[arg(long)]
    seed: Option<u64>,
    /// Stop after this many sequences.
    #[arg(long)]
    cases: Option<u64>,
    /// Stop after this long (e.g. 60s, 10m).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    duration: Duration,
    /// Cap on shrinking a failure (the smallest sequence found by then is reported).
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    shrink_time: Duration,
    /// Longest generated sequence.
    #[arg(long, default_value_t = 30)]
    max_len: usize,
    /// Clients acting on the same session.
    #[arg(long, default_value_t = 2)]
    clients: usize,
    /// model: random action sequences; frames: malformed and mutated frames.
    #[arg(long, default_value = "model", value_parser = ["model", "frames"])]
    mode: String,
    /// Break one rule in the built-in host.
    #[arg(long)]
    fault: Option<String>,
    /// Target profile (the fuzzer needs the scripted-agent behaviours).
    #[arg(long)]
    target_profile: Option<PathBuf>,
    /// Per-expectation timeout.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    timeout: Duration,
    /// Reports and traces go to <DIR>/fuzz/.
    #[arg(long, default_value = "reports")]
    report_dir: PathBuf,
}

#[derive(Debug, Args)]
struct ReplayArgs {
    /// A trace written by `ahpspec fuzz` (reports/fuzz/<seed>-<rule>.json).
    file: PathBuf,
    /// Server to replay against; omitted: the trace's own target (the built-in host, with its fault).
    url: Option<String>,
    #[command(flatten)]
    tls: TlsArgs,
    /// Print the trace as a suite case (TOML) instead of replaying it.
    #[arg(long)]
    to_case: bool,
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    timeout: Duration,
}

fn parse_level(text: &str) -> Result<Level, String> {
    match text.to_ascii_uppercase().as_str() {
        "MUST" => Ok(Level::Must),
        "SHOULD" => Ok(Level::Should),
        "MAY" => Ok(Level::May),
        other => Err(format!("unknown level {other:?} (MUST, SHOULD or MAY)")),
    }
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
        Command::Serve {
            listen,
            fault,
            replay_buffer,
            max_message_bytes,
        } => {
            let fault = match fault.as_deref() {
                Some("list") => {
                    for line in faults::catalog_lines() {
                        println!("{line}");
                    }
                    return ExitCode::SUCCESS;
                }
                Some(name) => match name.parse::<Fault>() {
                    Ok(fault) => Some(fault),
                    Err(error) => return usage_error(&error.to_string()),
                },
                None => None,
            };
            let config = HostConfig {
                listen,
                fault,
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

fn usage_error(message: &str) -> ExitCode {
    eprintln!("ahpspec: {message}");
    ExitCode::from(2)
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
        if let Some(fault) = config.fault {
            eprintln!(
                "ahpspec: serving with fault {fault} (breaks {})",
                fault.rule()
            );
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

/// Terminal output while cases finish: failures in full, a progress line on a terminal.
struct Console {
    progress: bool,
}

impl EventSink for Console {
    fn event(&mut self, event: &Event) {
        match event {
            Event::CaseFinished {
                result,
                done,
                total,
            } => {
                if self.progress {
                    eprint!("\r\x1b[2K[{done}/{total}] {}", result.info.id);
                }
                if matches!(
                    result.verdict,
                    Verdict::Fail | Verdict::Warn | Verdict::Blocked | Verdict::HarnessError
                ) {
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
    let fault = match args.fault.as_deref().map(str::parse::<Fault>).transpose() {
        Ok(fault) => fault,
        Err(error) => return usage_error(&error.to_string()),
    };
    if fault.is_some() && args.url.is_some() {
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
        fault,
        suites: args.select.suites.clone(),
        schemas: args.schemas.clone(),
        profile: args.target_profile.clone(),
        baseline: args.baseline.clone(),
        selection: args.select.selection(),
        timeout: args.timeout,
        jobs: args.jobs.max(1),
        strict: args.strict,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return usage_error(&format!("cannot start the runtime: {error}")),
    };
    let outcome = runtime.block_on(async {
        let (stop, interrupt) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = stop.send(true);
            }
        });
        let mut console = Console {
            progress: std::io::stderr().is_terminal(),
        };
        certify::certify(&options, &mut console, interrupt).await
    });
    let report = match outcome {
        Ok(report) => report,
        Err(error) => return usage_error(&error.to_string()),
    };
    let written = report::write_all(&report, &args.report_dir);
    println!("{}", report::render_summary_line(&report));
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

fn exec_config(
    profile: Option<&PathBuf>,
    timeout: Duration,
    clients: usize,
) -> anyhow::Result<ahpspec::fuzz::ExecConfig> {
    use std::sync::Arc;
    let profile = match profile {
        Some(path) => ahpspec::engine::profile::Profile::load(path)?,
        None => ahpspec::engine::profile::Profile::scripted()?,
    };
    Ok(ahpspec::fuzz::ExecConfig {
        timeout,
        settle: Duration::from_millis(3),
        clients: clients.clamp(1, 8),
        profile,
        schemas: ahpspec::checks::frame::Schemas {
            set: Arc::new(ahpspec::schema::SchemaSet::embedded()?),
            map: Arc::new(ahpspec::checks::frame::SchemaMap::embedded()),
        },
        checkpoint_every: 10,
    })
}

fn fuzz_command(args: FuzzArgs) -> ExitCode {
    use ahpspec::fuzz::{self, FuzzOptions, Target};
    if let Err(error) = args.tls.apply() {
        return usage_error(&error);
    }
    let fault = match args.fault.as_deref().map(str::parse::<Fault>).transpose() {
        Ok(fault) => fault,
        Err(error) => return usage_error(&error.to_string()),
    };
    if fault.is_some() && args.url.is_some() {
        return usage_error("--fault applies to the built-in host only (omit the URL)");
    }
    let exec = match exec_config(args.target_profile.as_ref(), args.timeout, args.clients) {
        Ok(exec) => exec,
        Err(error) => return usage_error(&format!("{error:#}")),
    };
    let seed = args
        .seed
        .unwrap_or_else(|| jiff::Timestamp::now().as_nanosecond() as u64);
    let target_label = args.url.clone().unwrap_or_else(|| "builtin".into());
    println!(
        "ahpspec fuzz: seed {seed}, mode {}, target {target_label}{}",
        args.mode,
        fault.map(|f| format!(" (fault {f})")).unwrap_or_default()
    );
    let options = FuzzOptions {
        target: Target {
            url: args.url.clone(),
            fault,
        },
        exec,
        seed,
        cases: args.cases,
        duration: args.duration,
        shrink_time: args.shrink_time,
        max_len: args.max_len.max(1),
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return usage_error(&format!("cannot start the runtime: {error}")),
    };
    let frames_mode = args.mode == "frames";
    let fault_name = fault.map(|f| f.name().to_owned());
    runtime.block_on(async {
        let (stop, interrupt) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            if tokio::signal::ctrl_c().await.is_ok() {
                let _ = stop.send(true);
            }
        });
        if frames_mode {
            let outcome = fuzz::frames::fuzz_frames(&options, interrupt).await;
            finish_fuzz(outcome, &args, &target_label, fault_name, seed)
        } else {
            let outcome = fuzz::fuzz(&options, interrupt).await;
            finish_fuzz(outcome, &args, &target_label, fault_name, seed)
        }
    })
}

/// Writes the fuzz report and trace and prints the outcome; the exit code.
fn finish_fuzz<T: serde::Serialize>(
    outcome: Result<ahpspec::fuzz::FuzzOutcome<T>, ahpspec::fuzz::ExecError>,
    args: &FuzzArgs,
    target_label: &str,
    fault: Option<String>,
    seed: u64,
) -> ExitCode {
    use ahpspec::fuzz::{self, trace::Trace};
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => return usage_error(&error.to_string()),
    };
    let dir = args.report_dir.join("fuzz");
    let report = fuzz::report(&outcome, target_label, fault.clone(), &args.mode);
    if let Err(error) = report::write_all(&report, &dir) {
        eprintln!("ahpspec: {error}");
        return ExitCode::from(2);
    }
    let rate = outcome.operations as f64 / outcome.elapsed.as_secs_f64().max(1e-9);
    println!(
        "{} sequences, {} operations in {:.1} s ({rate:.0} operations/s){}",
        outcome.cases,
        outcome.operations,
        outcome.elapsed.as_secs_f64(),
        if outcome.interrupted {
            ", interrupted"
        } else {
            ""
        }
    );
    let Some(found) = &outcome.found else {
        println!("no failure found (seed {seed}); reports: {}", dir.display());
        return if outcome.interrupted {
            ExitCode::from(1)
        } else {
            ExitCode::SUCCESS
        };
    };
    let trace = Trace::new(found, &args.mode, target_label, fault);
    let path = match trace.save(&dir) {
        Ok(path) => path,
        Err(error) => {
            eprintln!("ahpspec: {error}");
            return ExitCode::from(2);
        }
    };
    println!("{}", fuzz::render_found(found));
    println!("  Trace: {}", path.display());
    println!("  Reproduce with: ahpspec replay {}", path.display());
    ExitCode::from(1)
}

fn replay_command(args: ReplayArgs) -> ExitCode {
    use ahpspec::fuzz::{self, trace::Trace, Target};
    if let Err(error) = args.tls.apply() {
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
    let fault = match (&args.url, trace.fault.as_deref()) {
        (None, Some(name)) => match name.parse::<Fault>() {
            Ok(fault) => Some(fault),
            Err(error) => return usage_error(&error.to_string()),
        },
        _ => None,
    };
    let url = args
        .url
        .clone()
        .or_else(|| (trace.target != "builtin").then(|| trace.target.clone()));
    let exec = match exec_config(None, args.timeout, 2) {
        Ok(exec) => exec,
        Err(error) => return usage_error(&format!("{error:#}")),
    };
    let target = Target { url, fault };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return usage_error(&format!("cannot start the runtime: {error}")),
    };
    let replayed = runtime.block_on(fuzz::replay_trace(&trace, &target, &exec));
    match replayed {
        Ok(Some(failure)) => {
            println!(
                "reproduced: {} — expected {}; got {}",
                failure.rule, failure.expected, failure.actual
            );
            ExitCode::from(1)
        }
        Ok(None) => {
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
