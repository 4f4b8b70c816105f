//! `ahpspec serve`: the built-in reference host as a server, and `serve --fault list`.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;

use ahpspec::aaphost;
use ahpspec::host::{faults, HostConfig};
use ahpspec::suite::Catalog;

use tokio::sync::watch;

use crate::{parse_faults, usage_error, with_runtime};

/// `ahpspec serve`: the built-in host on `listen` until SIGINT or SIGTERM.
pub fn serve_command(
    listen: SocketAddr,
    fault: Option<&str>,
    replay_buffer: usize,
    max_message_bytes: usize,
    workspace: Option<std::path::PathBuf>,
) -> ExitCode {
    if fault == Some("list") {
        return list_faults();
    }
    if let Some(dir) = &workspace {
        if !dir.is_dir() {
            return usage_error(&format!("--workspace {}: not a directory", dir.display()));
        }
    }
    let faults = match parse_faults(fault) {
        Ok(faults) => faults,
        Err(error) => return usage_error(&error),
    };
    let config = HostConfig {
        listen,
        faults,
        replay_capacity: replay_buffer.max(1),
        max_message_bytes,
        workspace,
        ..HostConfig::default()
    };
    match serve(config) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(error)) => {
            eprintln!("ahpspec: {error:#}");
            ExitCode::from(2)
        }
        Err(exit) => exit,
    }
}

/// `serve --protocol aap`: the built-in AAP server until SIGINT or SIGTERM; its base URL is
/// the first stdout line.
pub fn serve_aap(
    listen: SocketAddr,
    token: Option<String>,
    fault: Option<&str>,
    version: Option<String>,
) -> ExitCode {
    if fault == Some("list") {
        aaphost::fault_catalog_lines()
            .iter()
            .for_each(|line| println!("{line}"));
        return ExitCode::SUCCESS;
    }
    let faults = match fault.map(str::parse::<aaphost::AapFaultSet>).transpose() {
        Ok(faults) => faults.unwrap_or_default(),
        Err(error) => return usage_error(&error.to_string()),
    };
    let version = match version.as_deref().map(str::trim) {
        None => aaphost::PROTOCOL_VERSION,
        Some(text) => match text.parse::<u64>() {
            Ok(number) if aaphost::VERSIONS.contains(&number) => number,
            _ => {
                return usage_error(&format!(
                    "--protocol-version: unknown AAP protocol version {text:?} (the built-in server speaks 1, 2 and 3)"
                ))
            }
        },
    };
    let config = aaphost::AapHostConfig {
        listen,
        token,
        faults,
        version,
        ..aaphost::AapHostConfig::default()
    };
    let served = with_runtime(|mut interrupt| async move {
        let handle = ahpspec::target::start_aap_server(config.clone()).await?;
        println!("{}", handle.base_url());
        std::io::stdout().flush()?;
        announce_faults("AAP", &config.faults);
        wait_for_signal(&mut interrupt).await;
        handle.shutdown().await;
        Ok::<_, std::io::Error>(())
    });
    match served {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(error)) => usage_error(&format!("cannot serve AAP on {listen}: {error}")),
        Err(exit) => exit,
    }
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

/// The stderr line of a server started with faults: `serving AHP with fault a (breaks R), …`.
fn announce_faults<F: ahpspec::faultset::Fault>(
    protocol: &str,
    faults: &ahpspec::faultset::FaultSet<F>,
) {
    let faults: Vec<String> = faults
        .iter()
        .map(|f| format!("{} (breaks {})", f.name(), f.rule()))
        .collect();
    if !faults.is_empty() {
        eprintln!(
            "ahpspec: serving {protocol} with fault {}",
            faults.join(", ")
        );
    }
}

/// Serves until SIGINT or SIGTERM, on the runtime every command uses.
fn serve(config: HostConfig) -> Result<anyhow::Result<()>, ExitCode> {
    with_runtime(|mut interrupt| async move {
        let handle = ahpspec::target::start_host(config.clone())
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {}: {e}", config.listen))?;
        println!("{}", handle.url());
        std::io::stdout().flush()?;
        announce_faults("AHP", &config.faults);
        // A reader that took only the first lines may have closed the pipe: never fatal.
        let _ = writeln!(
            std::io::stderr(),
            "ahpspec: serving the workspace {} (a target profile's `workspace`)",
            handle.workspace_uri()
        );
        wait_for_signal(&mut interrupt).await;
        handle.shutdown().await;
        Ok(())
    })
}

/// Waits for Ctrl-C (the runtime's interrupt watch) or SIGTERM (how service managers stop
/// a server).
async fn wait_for_signal(interrupt: &mut watch::Receiver<bool>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = interrupt.wait_for(|stopped| *stopped) => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = interrupt.wait_for(|stopped| *stopped).await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.wait_for(|stopped| *stopped).await;
    }
}
