//! `ahpspec proxy` and `ahpspec check`: arguments and the one call each makes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use ahpspec::capture::Recorder;
use ahpspec::checks::frame::Schemas;
use ahpspec::proxy::{self, ProxyConfig};
use clap::Args;

use crate::cli::run::finish;
use crate::{parse_duration, usage_error, ConnectArgs};

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Address clients connect to (port 0 picks a free port; the URL is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The AHP server (ws:// or wss:// URL); without a path of its own, each client's path
    /// is forwarded.
    #[arg(long)]
    upstream: String,
    #[command(flatten)]
    connect: ConnectArgs,
    /// Record every frame into this capture (JSON Lines; `ahpspec check` re-checks it).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Stop after this long (e.g. 30s, 10m) and write the reports; otherwise on Ctrl-C or SIGTERM.
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// A request unanswered this long when its connection ends breaks TRANSPORT-003.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    timeout: Duration,
    /// JSON Schema directory to validate against instead of the built-in 1.0.0 schemas.
    #[arg(long)]
    schemas: Option<PathBuf>,
    /// Where the reports go.
    #[arg(long, default_value = "reports")]
    report_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Captures to re-check (written by --record of proxy or run).
    #[arg(required = true)]
    files: Vec<PathBuf>,
    /// A request unanswered this long when its connection ends breaks TRANSPORT-003.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    timeout: Duration,
    /// JSON Schema directory to validate against instead of the built-in 1.0.0 schemas.
    #[arg(long)]
    schemas: Option<PathBuf>,
    /// Where the reports go.
    #[arg(long, default_value = "reports")]
    report_dir: PathBuf,
}

pub fn proxy_command(args: ProxyArgs) -> ExitCode {
    if let Err(error) = args.connect.apply() {
        return usage_error(&error);
    }
    let schemas = match Schemas::load(args.schemas.as_deref()) {
        Ok(schemas) => schemas,
        Err(error) => return usage_error(&error.to_string()),
    };
    let recorder = match args.record.as_deref().map(Recorder::create).transpose() {
        Ok(recorder) => recorder,
        Err(error) => return usage_error(&error.to_string()),
    };
    let config = ProxyConfig {
        listen: args.listen,
        upstream: args.upstream,
        schemas,
        timeout: args.timeout,
        recorder,
        log: Some(Arc::new(|line: &str| eprintln!("ahpspec: {line}"))),
    };
    // The multi-thread runtime: forwarding and checking run on both cores.
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return usage_error(&format!("cannot start the runtime: {error}")),
    };
    let served = runtime.block_on(proxy::serve(config, args.duration, |url| {
        println!("{url}");
    }));
    match served {
        Ok((report, Ok(()))) => finish(&report, &args.report_dir),
        Ok((report, Err(error))) => {
            eprintln!("ahpspec: {error}");
            let _ = finish(&report, &args.report_dir);
            ExitCode::from(2)
        }
        Err(error) => usage_error(&error.to_string()),
    }
}

pub fn check_command(args: CheckArgs) -> ExitCode {
    if let Some(exit) = super::check_aap::check_aap_captures(&args.files, &args.report_dir) {
        return exit;
    }
    let schemas = match Schemas::load(args.schemas.as_deref()) {
        Ok(schemas) => schemas,
        Err(error) => return usage_error(&error.to_string()),
    };
    let timeout_ms = args.timeout.as_secs_f64() * 1000.0;
    match ahpspec::capture::check(&args.files, &schemas, timeout_ms) {
        Ok(checked) => {
            for problem in &checked.client_problems {
                eprintln!("ahpspec: {problem}");
            }
            if checked.client_problem_count > checked.client_problems.len() {
                eprintln!(
                    "ahpspec: … {} client problems in all",
                    checked.client_problem_count
                );
            }
            for case in checked
                .report
                .cases
                .iter()
                .filter(|c| !c.findings.is_empty())
            {
                println!("{}", ahpspec::report::render_failure(case));
            }
            finish(&checked.report, &args.report_dir)
        }
        Err(error) => usage_error(&error.to_string()),
    }
}
