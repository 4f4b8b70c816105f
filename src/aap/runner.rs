//! The AAP run: reads `GET /meta`, selects and runs the cases (in parallel up to `jobs`,
//! each on its own client and sessions), turns the always-on findings into one row per
//! rule, compares the same scripted turn across stream modes, reconciles with the
//! baseline, and emits the same events as the AHP runner.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::watch;

use super::case::{run_case, CaseContext, CaseOutcome, TurnRecord};
use super::checks::{AAP_ALWAYS_ON, SECRET_PREFIX};
use super::http::{Client, Request, Target};
use super::suite::{self, AapCase};
use super::Agent;
use crate::checks::{AlwaysOnRule, Rule, Violation};
use crate::engine::baseline::Baseline;
use crate::engine::{reconcile, AlwaysOnFound, Event, EventSink, Selection};
use crate::schema::{SchemaError, SchemaSet};
use crate::suite::{Case, Catalog, SuiteError};
use crate::verdict::{CaseResult, Finding, RunReport, Verdict};

/// The AAP schemas, compiled into the binary.
pub const SCHEMA: &str = include_str!("../../schemas/aap/aap.schema.json");

/// What to certify and how.
#[derive(Debug, Clone)]
pub struct AapOptions {
    /// Base URL (`http://host:port/base`); `None`: the built-in AAP server.
    pub url: Option<String>,
    /// Shown in reports (`builtin` for the in-process server).
    pub target_label: String,
    /// Faults to inject into the built-in server (`a,b`).
    pub fault: Option<String>,
    /// API key sent as `Authorization: Bearer`.
    pub token: Option<String>,
    pub selection: Selection,
    pub timeout: Duration,
    pub jobs: usize,
    pub strict: bool,
    /// Suite files to run instead of the built-in ones (e.g. a fuzz trace).
    pub suites: Option<std::path::PathBuf>,
    /// Known failures file (one case ID per line).
    pub baseline: Option<std::path::PathBuf>,
    /// The command prefix that re-runs a case (`--filter ID` is appended).
    pub rerun_prefix: String,
}

/// No verdict is possible: the harness could not start.
#[derive(Debug, thiserror::Error)]
pub enum AapError {
    #[error(transparent)]
    Suite(#[from] SuiteError),
    #[error(transparent)]
    Schema(#[from] SchemaError),
    #[error("{0}")]
    Unreachable(String),
    #[error(
        "the selection {0} matches no AAP case (`ahpspec list --protocol aap` shows the catalog)"
    )]
    EmptySelection(String),
    #[error("cannot start the built-in AAP server: {0}")]
    Host(#[source] std::io::Error),
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Baseline(#[from] crate::engine::baseline::BaselineError),
}

/// The embedded AAP schema set.
pub fn schemas() -> Result<SchemaSet, SchemaError> {
    let value = serde_json::from_str(SCHEMA).map_err(|source| SchemaError::Parse {
        name: "aap.schema.json".into(),
        source,
    })?;
    SchemaSet::from_documents([("aap.schema.json".to_owned(), value)])
}

/// The AAP catalog as plain cases, so the AHP selection (filters, levels, shards) applies.
pub fn catalog(cases: &[AapCase]) -> Catalog {
    Catalog {
        cases: cases
            .iter()
            .map(|c| Case {
                info: c.info.clone(),
                needs: c.needs.clone(),
                capabilities: c.capabilities.clone(),
                probe: None,
                since: None,
                steps: Vec::new(),
            })
            .collect(),
    }
}

/// The AAP catalog as `ahpspec list` prints it: ID, level, area, what it does (tab-separated),
/// cases then always-on rules, as selected.
pub fn catalog_lines(selection: &Selection) -> Result<Vec<String>, AapError> {
    let all = suite::embedded()?;
    let mut lines: Vec<String> = all
        .iter()
        .filter(|c| selection.includes(&c.info.id, c.info.level))
        .map(|c| {
            format!(
                "{}\t{}\t{}\t{}",
                c.info.id,
                c.info.level.as_str(),
                c.info.area,
                c.info.does
            )
        })
        .collect();
    lines.extend(
        AAP_ALWAYS_ON
            .iter()
            .filter(|r| selection.includes(r.id, r.level))
            .map(|r| {
                format!(
                    "{}\t{}\t{}\tChecked on every response of every case ({})",
                    r.id,
                    r.level.as_str(),
                    r.area,
                    r.unit
                )
            }),
    );
    if lines.is_empty() {
        return Err(AapError::EmptySelection(selection.describe()));
    }
    Ok(lines)
}

/// Reads `GET /meta`: the chosen agent, or why none could be.
async fn read_meta(
    target: &Target,
    options: &AapOptions,
) -> Result<Result<Agent, String>, AapError> {
    let mut client = Client::new(target.clone(), options.token.clone(), options.timeout);
    let request = Request {
        method: "GET".into(),
        path: "/meta".into(),
        ..Request::default()
    };
    let response = client
        .send(&request)
        .await
        .map_err(|e| AapError::Unreachable(e.to_string()))?;
    Ok(match response.json() {
        Some(meta) if response.status == 200 => {
            Agent::choose(meta).ok_or_else(|| "GET /meta lists no agent".to_owned())
        }
        _ => Err(format!("GET /meta answered {}", response.status)),
    })
}

/// Runs the AAP catalog against `options.url`.
pub async fn run(
    options: &AapOptions,
    sink: &mut dyn EventSink,
    mut interrupt: watch::Receiver<bool>,
) -> Result<RunReport, AapError> {
    let started = Instant::now();
    let started_at = format!("{:.0}", jiff::Timestamp::now());
    let url = options
        .url
        .as_deref()
        .ok_or_else(|| AapError::Usage("no server URL".into()))?;
    let target = Target::parse(url).map_err(|e| AapError::Usage(e.to_string()))?;
    let all = match &options.suites {
        Some(dir) => suite::from_dir(dir)?,
        None => suite::embedded()?,
    };
    let catalog = catalog(&all);
    let selected: Vec<&Case> = options.selection.cases(&catalog);
    let always_on: Vec<&AlwaysOnRule> = AAP_ALWAYS_ON
        .iter()
        .filter(|r| options.selection.includes(r.id, r.level))
        .collect();
    if selected.is_empty() && always_on.is_empty() {
        return Err(AapError::EmptySelection(options.selection.describe()));
    }
    let baseline = options
        .baseline
        .as_deref()
        .map(Baseline::load)
        .transpose()?;
    let schemas = Arc::new(schemas()?);
    let agent = read_meta(&target, options)
        .await
        .map_err(|error| match error {
            AapError::Unreachable(why) => AapError::Unreachable(format!("{url}: {why}")),
            other => other,
        })?;
    let total = selected.len() + always_on.len();
    sink.event(&Event::RunStarted { cases: total });
    let plan = Plan {
        options,
        target: &target,
        agent: &agent,
        schemas: &schemas,
        cases: all.iter().map(|c| (c.info.id.as_str(), c)).collect(),
        token: crate::engine::vars::unique_token(""),
    };
    let (mut results, mut rows, interrupted) =
        run_cases(&plan, &selected, total, sink, &mut interrupt).await;
    let order: HashMap<&str, usize> = selected
        .iter()
        .enumerate()
        .map(|(i, c)| (c.info.id.as_str(), i))
        .collect();
    results.sort_by_key(|r| order.get(r.info.id.as_str()).copied().unwrap_or(usize::MAX));
    if !interrupted {
        rows.cross_mode();
        for rule in always_on {
            let result = rows.row(rule, &options.rerun_prefix);
            results.push(result.clone());
            sink.event(&Event::CaseFinished {
                result: Box::new(result),
                done: results.len(),
                total,
            });
        }
    }
    let mut report = new_report(
        options.target_label.clone(),
        options.fault.clone(),
        started.elapsed(),
        results,
    );
    report.started_at = started_at;
    report.interrupted = interrupted;
    report.shard = options.selection.shard.map(|s| s.to_string());
    report.selection = options.selection.choice();
    report.strict = options.strict;
    reconcile(&mut report, baseline.as_ref());
    sink.event(&Event::RunFinished);
    Ok(report)
}

/// What every case of a run shares.
struct Plan<'a> {
    options: &'a AapOptions,
    target: &'a Target,
    agent: &'a Result<Agent, String>,
    schemas: &'a Arc<SchemaSet>,
    cases: HashMap<&'a str, &'a AapCase>,
    /// Makes the run's names (`${run}`, secrets) unique.
    token: String,
}

/// Runs the selected cases, up to `jobs` at a time; their results (in completion order),
/// what the always-on rows gathered, and whether the run was interrupted.
async fn run_cases(
    plan: &Plan<'_>,
    selected: &[&Case],
    total: usize,
    sink: &mut dyn EventSink,
    interrupt: &mut watch::Receiver<bool>,
) -> (Vec<CaseResult>, Rows, bool) {
    let mut results: Vec<CaseResult> = Vec::new();
    let mut pending = FuturesUnordered::new();
    let mut rows = Rows::default();
    let mut interrupted = *interrupt.borrow();
    let mut queue = selected.iter().enumerate();
    let mut finished = |result: CaseResult, results: &mut Vec<CaseResult>| {
        sink.event(&Event::CaseFinished {
            result: Box::new(result.clone()),
            done: results.len() + 1,
            total,
        });
        results.push(result);
    };
    loop {
        while !interrupted && pending.len() < plan.options.jobs.max(1) {
            let Some((index, case)) = queue.next() else {
                break;
            };
            let Some(aap_case) = plan.cases.get(case.info.id.as_str()).copied() else {
                continue;
            };
            match prepare(aap_case, plan, index) {
                Ok(ctx) => pending.push(run_case(aap_case, ctx)),
                Err(result) => finished(*result, &mut results),
            }
        }
        if pending.is_empty() {
            break;
        }
        tokio::select! {
            Some(outcome) = pending.next() => {
                let outcome: CaseOutcome = outcome;
                rows.absorb(&outcome);
                finished(outcome.result, &mut results);
            }
            changed = interrupt.changed() => {
                if changed.is_err() || *interrupt.borrow() {
                    interrupted = true;
                    break;
                }
            }
        }
    }
    (results, rows, interrupted)
}

/// An AAP run report with the given rows (baseline not applied yet).
pub(super) fn new_report(
    target: String,
    fault: Option<String>,
    took: Duration,
    cases: Vec<CaseResult>,
) -> RunReport {
    RunReport {
        fault,
        duration_ms: took.as_secs_f64() * 1000.0,
        ..RunReport::of(target, format!("AAP {}", super::AAP_VERSION), cases)
    }
}

/// A ready case context, or the result of a case that cannot run here.
fn prepare(case: &AapCase, plan: &Plan<'_>, index: usize) -> Result<CaseContext, Box<CaseResult>> {
    let (options, target, schemas) = (plan.options, plan.target, plan.schemas);
    let token = format!("{}-{index}", plan.token);
    let rerun = format!("{} --filter {}", options.rerun_prefix, case.info.id);
    let without = |verdict: Verdict, summary: String, blocked_by: Option<String>| {
        Box::new(CaseResult {
            info: case.info.clone(),
            verdict,
            summary,
            findings: Vec::new(),
            blocked_by,
            protocol_version: None,
            transcript: Vec::new(),
            duration_ms: 0.0,
            rerun: rerun.clone(),
        })
    };
    let agent = match plan.agent {
        Ok(agent) => agent,
        Err(why) if case.info.id.starts_with("AAP-META-") => {
            // Meta cases judge the meta response themselves; give them a placeholder agent.
            let _ = why;
            &Agent {
                name: String::new(),
                info: serde_json::Value::Null,
            }
        }
        Err(why) => {
            return Err(without(
                Verdict::Blocked,
                format!("blocked: {why}"),
                Some("AAP-META-001".into()),
            ))
        }
    };
    for capability in &case.capabilities {
        let (negated, path) = match capability.strip_prefix('!') {
            Some(path) => (true, path),
            None => (false, capability.as_str()),
        };
        if agent.declares(path) == negated {
            let how = if negated {
                "declares"
            } else {
                "does not declare"
            };
            return Err(without(
                Verdict::NotApplicable,
                format!("not applicable: agent {} {how} {path}", agent.name),
                None,
            ));
        }
    }
    let mut vars = agent.vars();
    for need in &case.needs {
        if !agent.offers(need, &vars, options.token.is_some()) {
            return Err(without(
                Verdict::NotTestable,
                format!("not testable: the target does not offer `{need}`"),
                None,
            ));
        }
    }
    vars.push(("run".into(), token.clone()));
    vars.push(("secret".into(), format!("{SECRET_PREFIX}{token}")));
    Ok(CaseContext {
        client: Client::new(target.clone(), options.token.clone(), options.timeout),
        agent: Arc::new(agent.clone()),
        vars: vars.into_iter().collect(),
        observer: super::checks::Observer::new(Arc::clone(schemas)),
        rerun,
    })
}

/// What the always-on rows have gathered over the run.
#[derive(Default)]
struct Rows {
    found: AlwaysOnFound,
    turns: Vec<TurnRecord>,
}

impl Rows {
    fn absorb(&mut self, outcome: &CaseOutcome) {
        self.found.case_finished(&outcome.result);
        for (rule, n) in &outcome.observer.counts {
            *self.found.counts.entry(*rule).or_insert(0) += n;
        }
        self.found.skipped.merge(&outcome.observer.skips);
        let context: Vec<_> = outcome
            .result
            .transcript
            .iter()
            .rev()
            .take(6)
            .rev()
            .cloned()
            .collect();
        for violation in &outcome.observer.violations {
            self.add(violation, &outcome.result.info.id, context.clone());
        }
        self.turns.extend(outcome.turns.iter().cloned());
    }

    fn add(
        &mut self,
        violation: &Violation,
        case: &str,
        context: Vec<crate::verdict::ReportedFrame>,
    ) {
        self.found
            .findings
            .entry(violation.rule)
            .or_default()
            .push(Finding {
                rule: violation.rule.id().to_owned(),
                verdict: Verdict::Fail,
                expected: violation.expected.clone(),
                actual: format!("{} (in case {case})", violation.actual),
                step: None,
                context,
            });
    }

    /// AAP-SSE-007: turns with the same session set-up and requests, run in different
    /// modes, must carry the same content and stop reason.
    fn cross_mode(&mut self) {
        let mut groups: HashMap<&str, Vec<&TurnRecord>> = HashMap::new();
        for turn in &self.turns {
            groups.entry(turn.key.as_str()).or_default().push(turn);
        }
        let mut found = Vec::new();
        let mut compared = 0;
        for group in groups.values() {
            let first = group[0];
            if group.iter().all(|t| t.mode == first.mode) {
                continue;
            }
            compared += 1;
            for other in group.iter().skip(1).filter(|t| t.mode != first.mode) {
                let difference = super::model::first_difference(&first.items, &other.items)
                    .or_else(|| {
                        (first.stop != other.stop).then(|| {
                            (
                                format!("stop {:?}", first.stop),
                                format!("stop {:?}", other.stop),
                            )
                        })
                    });
                if let Some((want, got)) = difference {
                    let violation = Violation::new(
                        Rule::AapSse007,
                        format!("{} mode like {} mode: {want}", other.mode, first.mode),
                        got,
                    );
                    found.push((violation, other.case.clone()));
                }
            }
        }
        *self.found.counts.entry(Rule::AapSse007).or_insert(0) += compared;
        for (violation, case) in found {
            self.add(&violation, &case, Vec::new());
        }
    }

    fn row(&mut self, rule: &AlwaysOnRule, rerun_prefix: &str) -> CaseResult {
        let rerun = format!("{rerun_prefix} --filter {}", rule.id);
        self.found.row(rule, "response of every case", rerun)
    }
}

/// The API key the built-in server is started with, so the authentication cases run.
pub const BUILTIN_TOKEN: &str = "ahpspec-builtin-key";

/// Certifies `options.url`, or (without one) the built-in AAP server with `options.fault`
/// injected (started with an API key, so the authentication cases run too).
pub async fn certify(
    options: &AapOptions,
    sink: &mut dyn EventSink,
    interrupt: watch::Receiver<bool>,
) -> Result<RunReport, AapError> {
    if options.url.is_some() {
        if options.fault.is_some() {
            return Err(AapError::Usage(
                "--fault applies to the built-in server only (omit the URL)".into(),
            ));
        }
        return run(options, sink, interrupt).await;
    }
    let faults = match options.fault.as_deref() {
        Some(names) => names
            .parse::<crate::aaphost::AapFaultSet>()
            .map_err(|e| AapError::Usage(e.to_string()))?,
        None => crate::aaphost::AapFaultSet::default(),
    };
    let token = options
        .token
        .clone()
        .unwrap_or_else(|| BUILTIN_TOKEN.to_owned());
    let server = crate::aaphost::spawn(crate::aaphost::AapHostConfig {
        faults,
        token: Some(token.clone()),
        ..crate::aaphost::AapHostConfig::default()
    })
    .await
    .map_err(AapError::Host)?;
    let builtin = AapOptions {
        url: Some(server.base_url()),
        target_label: "builtin".to_owned(),
        token: Some(token),
        ..options.clone()
    };
    let report = run(&builtin, sink, interrupt).await;
    server.shutdown().await;
    report
}
