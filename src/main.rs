//! The `ahpspec` command line: parses arguments and calls the library. Library errors are
//! `thiserror` types; only this edge uses `anyhow`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use ahpspec::host::{self, faults, Fault, HostConfig};
use clap::{Parser, Subcommand};

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

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    match cli.command {
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
