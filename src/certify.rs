//! One call that certifies a server of either protocol: decides the target (a URL, or the
//! built-in server of the protocol, started through [`crate::target`]), loads the suites,
//! schemas, target profile and baseline, runs the catalog, and applies the baseline once
//! to the whole report. The CLI, the embedding API and the tests all use it.

use std::path::PathBuf;
use std::time::Duration;

use tokio::sync::watch;

use crate::aap::runner::{AapRunConfig, AapRunError};
use crate::aap::AapVersion;
use crate::capture::CaptureError;
use crate::catalog::{Catalog, Selection, SuiteError, SuiteFormat};
use crate::checks::frame::Schemas;
use crate::client::profile::{Profile, ProfileError};
use crate::client::DEFAULT_OFFER;
use crate::engine::RunConfig;
use crate::proxy::{Proxy, ProxyError};
use crate::rows::baseline::{Baseline, BaselineError};
use crate::rows::{reconcile, EventSink, RunPlan};
use crate::schema::SchemaError;
use crate::suite::Step;
use crate::target::{Decided, Faults, Protocol, TargetError};
use crate::verdict::RunReport;

/// Cases run at once by default. Most of a case's time is spent waiting on the server (a
/// turn, a silence window, a token's expiry), not computing: on 2 cores the catalog against
/// the built-in host takes about 1.1 s at 16 and 1.4 s at 8 (benches/README.md, `catalog`).
pub const DEFAULT_JOBS: usize = 16;

/// What to certify and how: one type for both protocols, `protocol` the switch.
#[derive(Debug, Clone)]
pub struct Options {
    /// AHP (the default) or AAP.
    pub protocol: Protocol,
    /// Server URL; `None` runs the built-in server of `protocol` in-process.
    pub url: Option<String>,
    /// Faults to inject into the built-in server (empty: none; a URL takes none).
    pub faults: Faults,
    /// AAP: the API key sent as `Authorization: Bearer` (the built-in server's when absent).
    pub token: Option<String>,
    pub suites: Option<PathBuf>,
    /// AHP: the JSON Schemas frames are checked against instead of the built-in ones.
    pub schemas: Option<PathBuf>,
    /// AHP: the target profile (how to drive the server's agent).
    pub profile: Option<PathBuf>,
    /// AHP: the `file:` URI of a directory the server serves to `resource*` commands, in
    /// place of the profile's `workspace` (the built-in host's own when neither names one).
    pub workspace: Option<String>,
    pub baseline: Option<PathBuf>,
    pub selection: Selection,
    pub timeout: Duration,
    pub jobs: usize,
    pub strict: bool,
    /// AHP: the protocol versions to certify, one whole run each (`--protocol-version`):
    /// every connection offers that version unless a step names its own.
    pub protocol_versions: Vec<String>,
    /// AHP: record every frame of the run into this capture (`--record`): the run goes
    /// through an in-process recording proxy.
    pub record: Option<PathBuf>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            protocol: Protocol::Ahp,
            url: None,
            faults: Faults::default(),
            token: None,
            suites: None,
            schemas: None,
            profile: None,
            workspace: None,
            baseline: None,
            selection: Selection::default(),
            timeout: Duration::from_secs(5),
            jobs: DEFAULT_JOBS,
            strict: false,
            protocol_versions: vec![DEFAULT_OFFER.to_owned()],
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
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("{0}")]
    Unreachable(String),
    /// Not a strict MAJOR.MINOR.PATCH version, or none at all.
    #[error("invalid protocol version {0:?} (expected MAJOR.MINOR.PATCH, e.g. 0.9.0)")]
    BadVersion(String),
    /// An AAP version ahpspec does not know (asked for, or named by `GET /meta`).
    #[error("{0}")]
    AapVersion(String),
    /// A selection that matches nothing would certify anything (a typo in a CI filter).
    #[error("the selection {selection} matches no case (`{list}` shows the catalog)")]
    EmptySelection {
        selection: String,
        /// The command that lists the catalog.
        list: &'static str,
    },
    /// An option the protocol does not take.
    #[error("{0}")]
    Usage(&'static str),
    #[error(transparent)]
    Capture(#[from] CaptureError),
    #[error("cannot start the recording proxy: {0}")]
    Proxy(#[from] ProxyError),
}

/// Certifies the target and returns the report (also when interrupted), the baseline
/// applied.
pub async fn certify(
    options: &Options,
    sink: &mut dyn EventSink,
    interrupt: watch::Receiver<bool>,
) -> Result<RunReport, HarnessError> {
    let decided = crate::target::decide(options.protocol, options.url.as_deref(), &options.faults)?;
    let baseline = options
        .baseline
        .as_deref()
        .map(Baseline::load)
        .transpose()?;
    let mut report = match options.protocol {
        Protocol::Ahp => certify_ahp(options, &decided, sink, interrupt).await?,
        Protocol::Aap => certify_aap(options, &decided, sink, interrupt).await?,
    };
    reconcile(&mut report, baseline.as_ref());
    Ok(report)
}

/// The catalog of `options.suites` (or the built-in one), refused when the selection
/// matches nothing in it.
fn catalog<S: SuiteFormat>(
    options: &Options,
    list: &'static str,
) -> Result<Catalog<S>, HarnessError> {
    let catalog = Catalog::<S>::load(options.suites.as_deref())?;
    if !options.selection.matches_any(&catalog) {
        return Err(HarnessError::EmptySelection {
            selection: options.selection.describe(),
            list,
        });
    }
    Ok(catalog)
}

/// What every run of `options` against `decided` shares, whatever its protocol.
fn plan(options: &Options, decided: &Decided) -> RunPlan {
    RunPlan {
        selection: options.selection.clone(),
        timeout: options.timeout,
        jobs: options.jobs.max(1),
        rerun_prefix: rerun_prefix(options, decided),
        target_label: decided.label(),
        fault: decided.fault_label(),
        strict: options.strict,
    }
}

/// The command that re-runs a run of `options` (a case's `--filter ID` is appended), with
/// its target profile: without it a re-run finds the profile's cases not testable.
fn rerun_prefix(options: &Options, decided: &Decided) -> String {
    let mut prefix = run_command(options.protocol, decided, options.suites.as_deref());
    if let Some(profile) = &options.profile {
        prefix.push_str(&format!(" --target-profile {}", profile.display()));
    }
    prefix
}

/// The `ahpspec run` command against `decided` (with `--suites`, when given).
pub fn run_command(
    protocol: Protocol,
    decided: &Decided,
    suites: Option<&std::path::Path>,
) -> String {
    let mut prefix = match (protocol, decided.url()) {
        (_, Some(url)) => format!("ahpspec run {url}"),
        (Protocol::Ahp, None) => "ahpspec run".to_owned(),
        (Protocol::Aap, None) => "ahpspec run --protocol aap".to_owned(),
    };
    if let Some(faults) = decided.fault_label() {
        prefix.push_str(&format!(" --fault {faults}"));
    }
    if let Some(dir) = suites {
        prefix.push_str(&format!(" --suites {}", dir.display()));
    }
    prefix
}

/// An AHP run: once per protocol version in `options`, the runs combined.
async fn certify_ahp(
    options: &Options,
    decided: &Decided,
    sink: &mut dyn EventSink,
    interrupt: watch::Receiver<bool>,
) -> Result<RunReport, HarnessError> {
    check_versions(&options.protocol_versions)?;
    // Everything is loaded before any connection is made.
    let catalog = catalog::<Step>(options, "ahpspec list")?;
    let schemas = Schemas::load(options.schemas.as_deref())?;
    let profile = match &options.profile {
        Some(path) => Profile::load(path)?,
        None => Profile::scripted()?,
    };
    if let Some(url) = decided.url() {
        // A server nobody can reach yields no verdicts at all: say so instead of a report
        // full of harness errors.
        let mut probe = crate::transport::Connection::connect(url, options.timeout)
            .await
            .map_err(|e| HarnessError::Unreachable(e.to_string()))?;
        probe.close().await;
    }
    let server = decided.start_for_run(None).await?;
    // The built-in host serves a directory of its own: resource cases work in it.
    let mut profile = profile;
    if options.workspace.is_some() {
        profile.workspace = options.workspace.clone();
    } else if profile.workspace.is_none() {
        profile.workspace = server.workspace.clone();
    }
    let mut config = RunConfig {
        plan: plan(options, decided),
        url: server.url.clone(),
        catalog,
        schemas,
        profile,
        protocol_version: DEFAULT_OFFER.to_owned(),
        sweep: decided.url().is_some(),
    };
    let report = match record_through(options, &mut config).await {
        Ok(recording) => {
            let report = run_versions(options, config, sink, interrupt).await;
            end_recording(recording, report).await
        }
        Err(error) => Err(error),
    };
    server.stop().await;
    report
}

/// An AAP run, once per `--protocol-version` asked for (AHP's options are refused, never
/// ignored).
async fn certify_aap(
    options: &Options,
    decided: &Decided,
    sink: &mut dyn EventSink,
    interrupt: watch::Receiver<bool>,
) -> Result<RunReport, HarnessError> {
    if options.schemas.is_some() || options.profile.is_some() || options.record.is_some() {
        return Err(HarnessError::Usage(
            "--schemas, --target-profile and --record apply to AHP runs only",
        ));
    }
    let versions = aap_versions(&options.protocol_versions)?;
    let catalog = catalog::<crate::aap::suite::Step>(options, "ahpspec list --protocol aap")?;
    let token = decided.token(options.token.clone());
    let several = versions.len() > 1;
    let mut reports: Vec<(String, RunReport)> = Vec::new();
    for version in versions {
        // The built-in server speaks the version asked for (the newest when none was).
        let number = version.map_or(AapVersion::LATEST, |v| v).number();
        let server = decided.start_aap_for_run(token.clone(), number).await?;
        let mut plan = plan(options, decided);
        if let Some(version) = version {
            plan.rerun_prefix
                .push_str(&format!(" --protocol-version {version}"));
        }
        let config = AapRunConfig {
            plan,
            url: server.url.clone(),
            token: token.clone(),
            catalog: catalog.clone(),
            protocol_version: version,
        };
        let report = crate::aap::runner::run(&config, sink, interrupt.clone()).await;
        server.stop().await;
        let report = report.map_err(|error| match error {
            AapRunError::BadUrl(error) => HarnessError::Unreachable(error.to_string()),
            AapRunError::Unreachable(why) => HarnessError::Unreachable(why),
            AapRunError::UnknownVersion { .. } => HarnessError::AapVersion(error.to_string()),
            AapRunError::Schemas(error) => HarnessError::Schema(error),
        })?;
        let label = version.map_or_else(|| report_version(&report), |v| v.to_string());
        let interrupted = report.interrupted;
        reports.push((label, report));
        if interrupted || !several {
            break;
        }
    }
    let mut reports = reports.into_iter();
    let first = reports
        .next()
        .ok_or_else(|| HarnessError::AapVersion("no AAP version to run".into()))?;
    Ok(combine_versions(first, reports.collect()))
}

/// The version an AAP report certified (`AAP 2` → `2`).
fn report_version(report: &RunReport) -> String {
    report
        .protocol_version
        .trim_start_matches("AAP ")
        .to_owned()
}

/// `--protocol-version` for AAP: `None` (the default, the one `GET /meta` names) or each
/// version asked for, known ones only (1, 2, 3; several for the matrix).
fn aap_versions(asked: &[String]) -> Result<Vec<Option<AapVersion>>, HarnessError> {
    if asked == [DEFAULT_OFFER] {
        return Ok(vec![None]);
    }
    if asked.is_empty() {
        return Err(HarnessError::AapVersion(
            "--protocol-version names no AAP version (known: 1, 2, 3)".into(),
        ));
    }
    let mut versions = Vec::new();
    for text in asked {
        let version = text
            .parse::<AapVersion>()
            .map_err(|e| HarnessError::AapVersion(format!("--protocol-version: {e}")))?;
        if !versions.contains(&Some(version)) {
            versions.push(Some(version));
        }
    }
    Ok(versions)
}

/// Runs the catalog once per protocol version in `options` and combines the runs: a single
/// version's report as it is; several versions' rows side by side, each tagged with its
/// version.
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
        if several || version != DEFAULT_OFFER {
            config
                .plan
                .rerun_prefix
                .push_str(&format!(" --protocol-version {version}"));
        }
        let report = crate::engine::run(&config, sink, interrupt.clone()).await;
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
    Ok(combine_versions(first, reports.collect()))
}

/// One report from the runs at several protocol versions (`first` and `rest`, in the order
/// asked): each row tagged with its version.
fn combine_versions(first: (String, RunReport), rest: Vec<(String, RunReport)>) -> RunReport {
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
