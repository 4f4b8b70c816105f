//! The `ahpspec` command line: parses arguments and calls the library. Library errors are
//! `thiserror` types; only this edge uses `anyhow`.

use std::net::SocketAddr;
use std::process::ExitCode;

use std::path::PathBuf;
use std::time::Duration;

use ahpspec::catalog::{Selection, Shard};
use ahpspec::host::{self, FaultSet};
use ahpspec::verdict::Level;
use clap::{Args, Parser, Subcommand};

/// Subcommands with enough options to want a file of their own (src/cli/).
mod cli {
    pub mod aap_fuzz;
    pub mod coverage;
    pub mod fuzz;
    pub mod fuzz_args;
    pub mod proxy;
    pub mod run;
    pub mod serve;
}
use cli::coverage::coverage_command;
use cli::fuzz::{fuzz_command, replay_command, ReplayArgs};
use cli::fuzz_args::FuzzArgs;
use cli::proxy::{check_command, proxy_command, CheckArgs, ProxyArgs};
use cli::run::{list, merge, run};
use cli::serve::{serve_aap, serve_command};

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
    /// For every rule of the rule catalog: its cases, always-on check, faults and fuzzer
    /// operations (or why it has none).
    Coverage(CoverageArgs),
    /// Fuzz an AHP server with seeded random action sequences (the built-in host when no URL).
    Fuzz(FuzzArgs),
    /// Re-run a saved fuzz trace: exit 1 when the failure reproduces, 0 when it no longer does.
    Replay(ReplayArgs),
    /// Merge the reports of several runs (e.g. `run --shard I/N` on parallel CI jobs) into one.
    Merge(MergeArgs),
    /// Check real traffic: a proxy between any AHP client and server (WebSocket) or AAP
    /// client and server (HTTP + SSE) that checks every connection or exchange live and
    /// writes the reports on Ctrl-C, SIGTERM or --duration.
    Proxy(ProxyArgs),
    /// Re-check captures (`--record` of proxy or run) offline and write the same reports.
    Check(CheckArgs),
    /// Run the built-in reference AHP host (or, with `--protocol aap`, the AAP server).
    Serve {
        /// ahp (default: WebSocket) or aap (HTTP + SSE).
        #[arg(long)]
        protocol: Option<String>,
        /// Address to listen on (port 0 picks a free port).
        #[arg(long, default_value = "127.0.0.1:0")]
        listen: SocketAddr,
        /// Port to listen on at the `--listen` address (0 picks a free one).
        #[arg(long)]
        port: Option<u16>,
        /// AAP only: require `Authorization: Bearer TOKEN` on every endpoint but GET /meta.
        #[arg(long)]
        token: Option<String>,
        /// Break rules on purpose: one fault or several (`a,b`); `--fault list` prints the catalog.
        #[arg(long)]
        fault: Option<String>,
        /// Envelopes kept for reconnect replay.
        #[arg(long, default_value_t = host::DEFAULT_REPLAY_CAPACITY)]
        replay_buffer: usize,
        /// Largest accepted WebSocket message in bytes.
        #[arg(long, default_value_t = host::DEFAULT_MAX_MESSAGE_BYTES)]
        max_message_bytes: usize,
        /// The directory the resource commands serve (default: a fresh temporary one).
        #[arg(long)]
        workspace: Option<PathBuf>,
        /// AAP only: the protocol version the server speaks (1, 2 or 3; default 3).
        #[arg(long)]
        protocol_version: Option<String>,
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
    /// The catalog of this protocol: ahp (default) or aap.
    #[arg(long)]
    protocol: Option<String>,
}

/// How the harness connects to a server, shared by `run`, `fuzz`, `replay` and `proxy`.
#[derive(Debug, Args)]
struct CoverageArgs {
    /// The catalog of this protocol: ahp (default) or aap.
    #[arg(long)]
    protocol: Option<String>,
    /// One JSON document instead of one line per rule.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct ConnectArgs {
    /// Trust the certificates in this PEM file for wss:// besides the system's roots (a
    /// self-signed server or a private CA); may be repeated.
    #[arg(long = "ca-cert", value_name = "PEM")]
    ca_cert: Vec<PathBuf>,
    /// Send this header on every connection: AHP's WebSocket upgrade requests (the proxy's
    /// upstream ones too) and AAP's HTTP requests, e.g. 'Authorization: Bearer KEY'; may be
    /// repeated. A credential header's value is redacted from reports, captures and logs.
    #[arg(long, value_name = "NAME: VALUE")]
    header: Vec<String>,
    /// Also treat query parameters and headers of this name as secrets (besides token,
    /// access_token, key, secret, password, auth…); may be repeated.
    #[arg(long, value_name = "NAME")]
    redact: Vec<String>,
}

impl ConnectArgs {
    /// Adds the `--ca-cert` files to the process's trust, the `--redact` names to the
    /// secrets, and sets the `--header`s; a one-line error for the first unusable one.
    fn apply(&self) -> Result<(), String> {
        for name in &self.redact {
            ahpspec::redact::learn_name(name);
        }
        for path in &self.ca_cert {
            ahpspec::transport::tls::trust_ca_file(path).map_err(|e| e.to_string())?;
        }
        let headers = self
            .header
            .iter()
            .map(|h| ahpspec::transport::headers::parse(h))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        ahpspec::transport::headers::set(headers);
        Ok(())
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    /// Server to certify: ws:// or wss:// (AHP), http:// or https:// base URL (AAP);
    /// omitted: the built-in reference server of `--protocol`.
    url: Option<String>,
    /// ahp or aap; default: from the URL's scheme, else ahp.
    #[arg(long)]
    protocol: Option<String>,
    /// AAP API key, sent as `Authorization: Bearer KEY`.
    #[arg(long)]
    token: Option<String>,
    #[command(flatten)]
    connect: ConnectArgs,
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
    #[arg(long, default_value_t = ahpspec::certify::DEFAULT_JOBS)]
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
        .map_err(|e: ahpspec::catalog::ShardError| e.to_string())
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
        Command::Coverage(args) => coverage_command(&args),
        Command::Fuzz(args) => fuzz_command(args),
        Command::Replay(args) => replay_command(args),
        Command::Run(args) => run(args),
        Command::Merge(args) => merge(args),
        Command::Proxy(args) => proxy_command(args),
        Command::Check(args) => check_command(args),
        Command::Serve {
            protocol,
            mut listen,
            port,
            token,
            fault,
            replay_buffer,
            max_message_bytes,
            workspace,
            protocol_version,
        } => {
            if let Some(port) = port {
                listen.set_port(port);
            }
            match protocol.as_deref() {
                None | Some("ahp") if protocol_version.is_some() => {
                    usage_error("--protocol-version of serve applies to --protocol aap")
                }
                None | Some("ahp") if token.is_none() => serve_command(
                    listen,
                    fault.as_deref(),
                    replay_buffer,
                    max_message_bytes,
                    workspace,
                ),
                None | Some("ahp") => usage_error("--token applies to --protocol aap"),
                Some("aap") if workspace.is_some() => {
                    usage_error("--workspace applies to --protocol ahp")
                }
                Some("aap") => serve_aap(listen, token, fault.as_deref(), protocol_version),
                Some(other) => usage_error(&format!("unknown protocol {other:?} (ahp or aap)")),
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

/// A one-line error (its secrets redacted), exit code 2.
fn usage_error(message: &str) -> ExitCode {
    eprintln!("ahpspec: {}", ahpspec::redact::text(message));
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
