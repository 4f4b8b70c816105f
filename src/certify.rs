//! One call that certifies a server: loads suites, schemas and the target profile, starts
//! the built-in host when no URL is given, runs the catalog, and returns the report. The
//! CLI and the tests both use it.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;

use crate::capture::CaptureError;
use crate::checks::frame::Schemas;
use crate::engine::baseline::{Baseline, BaselineError};
use crate::engine::profile::{Profile, ProfileError};
use crate::engine::{run, EventSink, RunConfig, Selection};
use crate::host::FaultSet;
use crate::proxy::{Proxy, ProxyError};
use crate::schema::SchemaError;
use crate::suite::{Catalog, SuiteError};
use crate::target::{start_builtin, Purpose};
use crate::verdict::RunReport;

/// What to certify and how.
#[derive(Debug, Clone)]
pub struct Options {
    /// Server URL; `None` runs the built-in reference host in-process.
    pub url: Option<String>,
    /// Faults to inject into the built-in host (empty: none).
    pub faults: FaultSet,
    pub suites: Option<PathBuf>,
    pub schemas: Option<PathBuf>,
    pub profile: Option<PathBuf>,
    pub baseline: Option<PathBuf>,
    pub selection: Selection,
    pub timeout: Duration,
    pub jobs: usize,
    pub strict: bool,
    /// The protocol versions to certify, one whole run each (`--protocol-version`): every
    /// connection offers that version unless a step names its own.
    pub protocol_versions: Vec<String>,
    /// Record every frame of the run into this capture (`--record`): the run goes through
    /// an in-process recording proxy.
    pub record: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            url: None,
            faults: FaultSet::default(),
            suites: None,
            schemas: None,
            profile: None,
            baseline: None,
            selection: Selection::default(),
            timeout: Duration::from_secs(5),
            jobs: 8,
            strict: false,
            protocol_versions: vec![crate::client::checkpoint::DEFAULT_OFFER.to_owned()],
            record: None,
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
    /// Not a strict MAJOR.MINOR.PATCH version, or none at all.
    #[error("invalid protocol version {0:?} (expected MAJOR.MINOR.PATCH, e.g. 0.9.0)")]
    BadVersion(String),
    /// A selection that matches nothing would certify anything (a typo in a CI filter).
    #[error("the selection {0} matches no case (`ahpspec list` shows the catalog)")]
    EmptySelection(String),
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("cannot start the recording proxy: {0}")]
    Proxy(#[from] ProxyError),
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
    let schemas = Schemas::load(options.schemas.as_deref())?;
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
    if let Some(faults) = options.faults.label() {
        rerun.push_str(&format!(" --fault {faults}"));
    }
    Ok(RunConfig {
        url,
        target_label: label,
        fault: options.faults.label(),
        catalog,
        selection: options.selection.clone(),
        schemas,
        profile,
        timeout: options.timeout,
        jobs: options.jobs,
        strict: options.strict,
        baseline,
        rerun_prefix: rerun,
        protocol_version: crate::client::checkpoint::DEFAULT_OFFER.to_owned(),
    })
}

/// Runs the catalog once per protocol version in `options` and combines the runs: a single
/// version's report as it is; several versions' rows side by side, each tagged with its
/// version, with the baseline applied to the whole.
async fn run_versions(
    options: &Options,
    config: RunConfig,
    sink: &mut dyn EventSink,
    interrupt: watch::Receiver<bool>,
) -> Result<RunReport, HarnessError> {
    let several = options.protocol_versions.len() > 1;
    let mut reports: Vec<(String, RunReport)> = Vec::new();
    for version in &options.protocol_versions {
        let mut config = config.clone();
        config.protocol_version = version.clone();
        if several || version != crate::client::checkpoint::DEFAULT_OFFER {
            config
                .rerun_prefix
                .push_str(&format!(" --protocol-version {version}"));
        }
        let report = run(&config, sink, interrupt.clone()).await;
        let interrupted = report.interrupted;
        reports.push((version.clone(), report));
        if interrupted {
            break;
        }
    }
    let mut reports = reports.into_iter();
    let first = reports
        .next()
        .ok_or_else(|| HarnessError::BadVersion(String::new()))?;
    Ok(combine_versions(
        first,
        reports.collect(),
        config.baseline.as_ref(),
    ))
}

/// One report from the runs at several protocol versions (`first` and `rest`, in the order
/// asked): each row tagged with its version, the baseline applied to the whole.
fn combine_versions(
    first: (String, RunReport),
    rest: Vec<(String, RunReport)>,
    baseline: Option<&Baseline>,
) -> RunReport {
    let (first_version, mut combined) = first;
    if rest.is_empty() {
        return combined;
    }
    for row in &mut combined.cases {
        row.protocol_version = Some(first_version.clone());
    }
    let mut versions = vec![first_version];
    for (version, report) in rest {
        combined
            .cases
            .extend(report.cases.into_iter().map(|mut row| {
                row.protocol_version = Some(version.clone());
                row
            }));
        combined.duration_ms += report.duration_ms;
        combined.interrupted |= report.interrupted;
        versions.push(version);
    }
    combined.protocol_version = versions.join(",");
    crate::engine::reconcile(&mut combined, baseline);
    combined
}

/// Checks `--protocol-version` values: strict MAJOR.MINOR.PATCH, at least one.
fn check_versions(versions: &[String]) -> Result<(), HarnessError> {
    if versions.is_empty() {
        return Err(HarnessError::BadVersion(String::new()));
    }
    match versions
        .iter()
        .find(|v| crate::checks::frame::parse_version(v).is_none())
    {
        Some(bad) => Err(HarnessError::BadVersion(bad.clone())),
        None => Ok(()),
    }
}

/// Certifies the target and returns the report (also when interrupted).
pub async fn certify(
    options: &Options,
    sink: &mut dyn EventSink,
    interrupt: watch::Receiver<bool>,
) -> Result<RunReport, HarnessError> {
    check_versions(&options.protocol_versions)?;
    match &options.url {
        Some(url) => {
            if !options.faults.is_empty() {
                return Err(HarnessError::FaultNeedsBuiltin);
            }
            let mut config = prepare(options, url.clone(), url.clone())?;
            // A server nobody can reach yields no verdicts at all: say so instead of a report
            // full of harness errors.
            let mut probe = crate::transport::Connection::connect(url, options.timeout)
                .await
                .map_err(|e| HarnessError::Unreachable(e.to_string()))?;
            probe.close().await;
            let recording = record_through(options, &mut config).await?;
            let report = run_versions(options, config, sink, interrupt).await;
            end_recording(recording, report).await
        }
        None => {
            let host = start_builtin(options.faults.clone(), Purpose::Run)
                .await
                .map_err(HarnessError::Host)?;
            let config = prepare(options, host.url().to_owned(), "builtin".to_owned());
            let report = match config {
                Ok(mut config) => match record_through(options, &mut config).await {
                    Ok(recording) => {
                        let report = run_versions(options, config, sink, interrupt).await;
                        end_recording(recording, report).await
                    }
                    Err(error) => Err(error),
                },
                Err(error) => Err(error),
            };
            host.shutdown().await;
            report
        }
    }
}

/// With `--record`, a recording proxy in front of the run's target: the run's connections
/// go through it (the report still names the target).
async fn record_through(
    options: &Options,
    config: &mut RunConfig,
) -> Result<Option<Proxy>, HarnessError> {
    let Some(path) = &options.record else {
        return Ok(None);
    };
    let proxy =
        crate::proxy::recording(&config.url, path, config.schemas.clone(), options.timeout).await?;
    config.url = proxy.url();
    Ok(Some(proxy))
}

/// Stops the recording proxy, if there is one, and flushes its capture: a capture that
/// could not be written fails the run's command.
async fn end_recording(
    recording: Option<Proxy>,
    report: Result<RunReport, HarnessError>,
) -> Result<RunReport, HarnessError> {
    if let Some(proxy) = recording {
        let (_, recorded) = proxy.finish().await;
        recorded?;
    }
    report
}
