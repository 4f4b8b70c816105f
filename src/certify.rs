//! One call that certifies a server: loads suites, schemas and the target profile, starts
//! the built-in host when no URL is given, runs the catalog, and returns the report. The
//! CLI and the tests both use it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::checks::frame::{SchemaMap, Schemas};
use crate::engine::baseline::{Baseline, BaselineError};
use crate::engine::profile::{Profile, ProfileError};
use crate::engine::{run, EventSink, RunConfig, Selection};
use crate::host::{self, Fault, HostConfig};
use crate::schema::{SchemaError, SchemaSet};
use crate::suite::{Catalog, SuiteError};
use crate::verdict::RunReport;

/// What to certify and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// Server URL; `None` runs the built-in reference host in-process.
    pub url: Option<String>,
    /// Fault to inject into the built-in host.
    pub fault: Option<Fault>,
    pub suites: Option<PathBuf>,
    pub schemas: Option<PathBuf>,
    pub profile: Option<PathBuf>,
    pub baseline: Option<PathBuf>,
    pub selection: Selection,
    pub timeout: Duration,
    pub jobs: usize,
    pub strict: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            url: None,
            fault: None,
            suites: None,
            schemas: None,
            profile: None,
            baseline: None,
            selection: Selection::default(),
            timeout: Duration::from_secs(5),
            jobs: 8,
            strict: false,
        }
    }
}

/// No verdict is possible: the harness itself could not start.
#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(transparent)]
    Suite(#[from] SuiteError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error(transparent)]
    Profile(#[from] ProfileError),
    #[error(transparent)]
    Baseline(#[from] BaselineError),
    #[error("cannot start the built-in host: {0}")]
    Host(#[source] std::io::Error),
    #[error("a fault needs the built-in host (no URL)")]
    FaultNeedsBuiltin,
    #[error("{0}")]
    Unreachable(String),
    /// A selection that matches nothing would certify anything (a typo in a CI filter).
    #[error("the selection {0} matches no case (`ahpspec list` shows the catalog)")]
    EmptySelection(String),
}

/// Loads everything a run needs (before any connection is made).
pub fn prepare(options: &Options, url: String, label: String) -> Result<RunConfig, HarnessError> {
    let catalog = match &options.suites {
        Some(dir) => Catalog::from_dir(dir)?,
        None => Catalog::embedded()?,
    };
    if !options.selection.matches_any(&catalog) {
        return Err(HarnessError::EmptySelection(options.selection.describe()));
    }
    let set = match &options.schemas {
        Some(dir) => SchemaSet::from_dir(dir)?,
        None => SchemaSet::embedded()?,
    };
    let profile = match &options.profile {
        Some(path) => Profile::load(path)?,
        None => Profile::scripted()?,
    };
    let baseline = options
        .baseline
        .as_deref()
        .map(Baseline::load)
        .transpose()?;
    let mut rerun = String::from("ahpspec run");
    if options.url.is_some() {
        rerun.push(' ');
        rerun.push_str(&url);
    }
    if let Some(fault) = options.fault {
        rerun.push_str(&format!(" --fault {fault}"));
    }
    Ok(RunConfig {
        url,
        target_label: label,
        fault: options.fault.map(|f| f.name().to_owned()),
        catalog,
        selection: options.selection.clone(),
        schemas: Schemas {
            set: Arc::new(set),
            map: Arc::new(SchemaMap::embedded()),
        },
        profile,
        timeout: options.timeout,
        jobs: options.jobs,
        strict: options.strict,
        baseline,
        rerun_prefix: rerun,
    })
}

/// Certifies the target and returns the report (also when interrupted).
pub async fn certify(
    options: &Options,
    sink: &mut dyn EventSink,
    interrupt: watch::Receiver<bool>,
) -> Result<RunReport, HarnessError> {
    match &options.url {
        Some(url) => {
            if options.fault.is_some() {
                return Err(HarnessError::FaultNeedsBuiltin);
            }
            let config = prepare(options, url.clone(), url.clone())?;
            // A server nobody can reach yields no verdicts at all: say so instead of a report
            // full of harness errors.
            let mut probe = crate::transport::Connection::connect(url, options.timeout)
                .await
                .map_err(|e| HarnessError::Unreachable(e.to_string()))?;
            probe.close().await;
            Ok(run(&config, sink, interrupt).await)
        }
        None => {
            // A short grace period keeps RECONNECT-009 (removal after a disconnect) quick.
            let config = HostConfig {
                client_grace: Duration::from_millis(300),
                ..HostConfig::with_fault(options.fault)
            };
            let host = host::spawn(config).await.map_err(HarnessError::Host)?;
            let config = prepare(options, host.url().to_owned(), "builtin".to_owned());
            let report = match config {
                Ok(config) => Ok(run(&config, sink, interrupt).await),
                Err(error) => Err(error),
            };
            host.shutdown().await;
            report
        }
    }
}
