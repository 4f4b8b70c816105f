//! `ahpspec proxy` and `ahpspec check`: arguments and the one call each makes.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use ahpspec::aap::AapVersion;
use ahpspec::capture::{self, Recorder};
use ahpspec::checks::frame::Schemas;
use ahpspec::proxy::aap::{serve_until_signal, AapProxyConfig, DEFAULT_MAX_BODY};
use ahpspec::proxy::{self, ProxyConfig, ProxyError};
use ahpspec::target::{protocol_of, Protocol};
use clap::Args;

use crate::cli::run::finish;
use crate::{parse_duration, usage_error, ConnectArgs};

#[derive(Debug, Args)]
pub struct ProxyArgs {
    /// Address clients connect to (port 0 picks a free port; the URL is printed).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// The server: an AHP ws:// or wss:// URL (without a path of its own, each client's
    /// path is forwarded), or an AAP http:// or https:// base URL (each client's path goes
    /// under it).
    #[arg(long)]
    upstream: String,
    /// ahp or aap; default: from the upstream URL's scheme.
    #[arg(long)]
    protocol: Option<String>,
    /// AAP only: judge at this version (1, 2 or 3) whatever GET /meta says; default: the
    /// version of the last GET /meta the proxy saw.
    #[arg(long)]
    protocol_version: Option<String>,
    /// AAP only: how much of each body the checks keep (e.g. 65536, 64K, 16M); a longer
    /// body is forwarded whole and its checks are skipped.
    #[arg(long, value_parser = parse_bytes)]
    max_body: Option<usize>,
    #[command(flatten)]
    connect: ConnectArgs,
    /// Record every frame into this capture (JSON Lines; `ahpspec check` re-checks it).
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Stop after this long (e.g. 30s, 10m) and write the reports; otherwise on Ctrl-C or SIGTERM.
    #[arg(long, value_parser = parse_duration)]
    duration: Option<Duration>,
    /// AHP: a request unanswered this long when its connection ends breaks TRANSPORT-003
    /// (set it below the client's own wait: a client that closes as it gives up may reach
    /// the proxy just short of it, and the request is then skipped, not judged).
    /// AAP: how long the upstream may take to accept a connection.
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
    /// AAP captures only: judge at this version (1, 2 or 3) whatever the recorded GET
    /// /meta says.
    #[arg(long)]
    protocol_version: Option<String>,
    /// Where the reports go.
    #[arg(long, default_value = "reports")]
    report_dir: PathBuf,
}

/// `65536`, `64K`, `16M`: a size in bytes.
fn parse_bytes(text: &str) -> Result<usize, String> {
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, ""),
    };
    let scale = match unit {
        "" => 1,
        "K" | "k" => 1024,
        "M" | "m" => 1024 * 1024,
        _ => return Err(format!("invalid size {text:?} (e.g. 65536, 64K, 16M)")),
    };
    number
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("invalid size {text:?} (e.g. 65536, 64K, 16M)"))
}

/// `--protocol-version` of AAP: a known version, or a one-line error.
fn aap_version(text: Option<&str>) -> Result<Option<AapVersion>, String> {
    text.map(|t| t.parse::<AapVersion>().map_err(|e| e.to_string()))
        .transpose()
}

pub fn proxy_command(args: ProxyArgs) -> ExitCode {
    if let Err(error) = args.connect.apply() {
        return usage_error(&error);
    }
    let protocol = match protocol_of(Some(&args.upstream), args.protocol.as_deref()) {
        Ok(protocol) => protocol,
        Err(error) => return usage_error(&error),
    };
    if protocol == Protocol::Aap {
        return aap_proxy_command(args);
    }
    if args.protocol_version.is_some() || args.max_body.is_some() {
        return usage_error("--protocol-version and --max-body of proxy apply to AAP upstreams");
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
    served_report(served, &args.report_dir)
}

/// The reports of a proxy that ran (exit 2 when its capture could not be written), or its
/// one-line error.
fn served_report(served: Result<Served, ProxyError>, report_dir: &std::path::Path) -> ExitCode {
    match served {
        Ok((report, Ok(()))) => finish(&report, report_dir),
        Ok((report, Err(error))) => {
            eprintln!("ahpspec: {error}");
            let _ = finish(&report, report_dir);
            ExitCode::from(2)
        }
        Err(error) => usage_error(&error.to_string()),
    }
}

type Served = (
    ahpspec::verdict::RunReport,
    Result<(), ahpspec::capture::CaptureError>,
);

/// `ahpspec proxy --protocol aap`.
fn aap_proxy_command(args: ProxyArgs) -> ExitCode {
    if args.schemas.is_some() {
        return usage_error("--schemas of proxy applies to AHP upstreams");
    }
    let protocol_version = match aap_version(args.protocol_version.as_deref()) {
        Ok(version) => version,
        Err(error) => return usage_error(&error),
    };
    let recorder = match args.record.as_deref().map(Recorder::create).transpose() {
        Ok(recorder) => recorder,
        Err(error) => return usage_error(&error.to_string()),
    };
    let config = AapProxyConfig {
        listen: args.listen,
        upstream: args.upstream,
        protocol_version,
        timeout: args.timeout,
        max_body: args.max_body.unwrap_or(DEFAULT_MAX_BODY),
        recorder,
        log: Some(Arc::new(|line: &str| eprintln!("ahpspec: {line}"))),
    };
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return usage_error(&format!("cannot start the runtime: {error}")),
    };
    let served = runtime.block_on(serve_until_signal(config, args.duration, |url| {
        println!("{url}");
    }));
    // Upstream connections still open (a stream the upstream never ends) are not waited for.
    runtime.shutdown_background();
    served_report(served, &args.report_dir)
}

pub fn check_command(args: CheckArgs) -> ExitCode {
    let holds_exchanges = match args.files.first().map(|f| capture::aap::holds_exchanges(f)) {
        Some(Ok(holds)) => holds,
        Some(Err(error)) => return usage_error(&error.to_string()),
        None => false,
    };
    if holds_exchanges {
        if args.schemas.is_some() {
            return usage_error("--schemas of check applies to AHP captures");
        }
        let version = match aap_version(args.protocol_version.as_deref()) {
            Ok(version) => version,
            Err(error) => return usage_error(&error),
        };
        return match capture::aap::check(&args.files, version) {
            Ok(checked) => checked_report(&checked, &args.report_dir),
            Err(error) => usage_error(&error.to_string()),
        };
    }
    if args.protocol_version.is_some() {
        return usage_error("--protocol-version of check applies to AAP captures");
    }
    let schemas = match Schemas::load(args.schemas.as_deref()) {
        Ok(schemas) => schemas,
        Err(error) => return usage_error(&error.to_string()),
    };
    let timeout_ms = args.timeout.as_secs_f64() * 1000.0;
    match capture::check(&args.files, &schemas, timeout_ms) {
        Ok(checked) => checked_report(&checked, &args.report_dir),
        Err(error) => usage_error(&error.to_string()),
    }
}

/// Prints what a re-check found and writes its reports.
fn checked_report(checked: &capture::Checked, report_dir: &std::path::Path) -> ExitCode {
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
    finish(&checked.report, report_dir)
}
