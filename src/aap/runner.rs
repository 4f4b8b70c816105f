//! The AAP runner: reads `GET /meta`, runs the selected cases against the URL it is given
//! (in parallel up to `jobs`, each on its own client and sessions), turns the always-on
//! findings into one row per rule, compares the same scripted turn across stream modes, and
//! emits the same events as the AHP runner. It never starts a server; the baseline is
//! composition's to apply.

use std::collections::HashMap;
use std::sync::Arc;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::watch;

use super::agent::{read_meta_version, Agent};
use super::case::{last_frames, run_case, CaseContext, CaseOutcome, TurnRecord};
use super::checks::{Observer, SECRET_PREFIX};
use super::http::{Client, HttpError, Target};
use super::suite::{AapCase, AapCatalog, Step};
use super::version::AapVersion;
use crate::catalog::{CaseQueue, SuiteFormat};
use crate::checks::{AlwaysOnRule, Rule, Violation};
use crate::rows::{Event, EventSink, Rows, RunPlan, Started};
use crate::schema::SchemaSet;
use crate::verdict::{CaseResult, RunReport, Verdict};

/// What the AAP runner needs besides the plan every run has: the server and its key, the
/// cases, and the schemas responses are checked against.
#[derive(Debug, Clone)]
pub struct AapRunConfig {
    pub plan: RunPlan,
    /// The server's base URL (`http://host:port/base`).
    pub url: String,
    /// API key sent as `Authorization: Bearer`.
    pub token: Option<String>,
    pub catalog: AapCatalog,
    /// `--protocol-version`: the catalog to run whatever `GET /meta` says; `None`: the
    /// version `GET /meta` names picks it.
    pub protocol_version: Option<AapVersion>,
}

/// No verdict is possible: the URL is no AAP base URL, or the server gave no answer to
/// `GET /meta`.
#[derive(Debug, thiserror::Error)]
pub enum AapRunError {
    #[error(transparent)]
    BadUrl(HttpError),
    #[error("{0}")]
    Unreachable(String),
    /// `GET /meta` names a version ahpspec has no catalog for (and none was given).
    #[error("{url}: GET /meta says AAP version {said}, which ahpspec does not know (it knows 1, 2 and 3; --protocol-version picks one)")]
    UnknownVersion { url: String, said: String },
    #[error(transparent)]
    Schemas(#[from] crate::schema::SchemaError),
}

/// Runs the selected AAP cases. Stops early (keeping what it has) when `interrupt` turns
/// true. The report is the run's alone: the baseline is not applied.
pub async fn run(
    config: &AapRunConfig,
    sink: &mut dyn EventSink,
    mut interrupt: watch::Receiver<bool>,
) -> Result<RunReport, AapRunError> {
    let started = Started::now();
    let plan = &config.plan;
    let selected: Vec<&AapCase> = plan.selection.cases(&config.catalog);
    let always_on: Vec<&AlwaysOnRule> = Step::ALWAYS_ON
        .iter()
        .filter(|r| plan.selection.includes(r.id, r.level))
        .collect();
    let target = Target::parse(&config.url).map_err(AapRunError::BadUrl)?;
    let mut client = Client::new(target.clone(), config.token.clone(), plan.timeout);
    let (agent, said) = read_meta_version(&mut client)
        .await
        .map_err(|why| AapRunError::Unreachable(format!("{}: {why}", config.url)))?;
    let version = AapVersion::choose(config.protocol_version, said.as_ref()).map_err(|said| {
        AapRunError::UnknownVersion {
            url: crate::redact::url(&config.url).into_owned(),
            said,
        }
    })?;
    let schemas = Arc::new(super::checks::schemas_for(version)?);
    let total = selected.len() + always_on.len();
    sink.event(&Event::RunStarted { cases: total });
    let shared = Shared {
        config,
        target,
        version,
        schemas,
        agent: &agent,
        token: crate::client::unique_token(""),
    };
    let mut gathered = Gathered {
        rows: Rows::new(total),
        turns: Vec::new(),
    };
    let interrupted = run_cases(&shared, &selected, &mut gathered, sink, &mut interrupt).await;
    gathered
        .rows
        .order_as(selected.iter().map(|c| c.info.id.as_str()));
    if !interrupted {
        gathered.cross_mode();
        let over = Step::ALWAYS_ON_OVER;
        let (held, elsewhere): (Vec<&AlwaysOnRule>, Vec<&AlwaysOnRule>) = always_on
            .iter()
            .partition(|r| super::checks::always_on_holds_at(r.rule, version));
        gathered.rows.always_on_rows(&held, over, plan, sink);
        for rule in elsewhere {
            // A rule of other versions looks at nothing here: not applicable, said so.
            let mut row = gathered.rows.always_on.row(rule, over, plan.rerun(rule.id));
            row.verdict = Verdict::NotApplicable;
            row.summary = format!("not applicable: no {} at AAP version {version}", rule.unit);
            row.findings.clear();
            gathered.rows.case(row, sink);
        }
    }
    let version = format!("AAP {version}");
    let report = plan.report(version, &started, interrupted, gathered.rows.into_results());
    sink.event(&Event::RunFinished);
    Ok(report)
}

/// What every case of a run shares.
struct Shared<'a> {
    config: &'a AapRunConfig,
    target: Target,
    /// The version the run certifies, and its schemas.
    version: AapVersion,
    schemas: Arc<SchemaSet>,
    agent: &'a Result<Agent, String>,
    /// Makes the run's names (`${run}`, secrets) unique.
    token: String,
}

/// Runs the selected cases, up to `jobs` at a time, into `gathered`; whether the run was
/// interrupted.
async fn run_cases(
    shared: &Shared<'_>,
    selected: &[&AapCase],
    gathered: &mut Gathered,
    sink: &mut dyn EventSink,
    interrupt: &mut watch::Receiver<bool>,
) -> bool {
    let mut pending = FuturesUnordered::new();
    let mut interrupted = *interrupt.borrow();
    let mut queue = CaseQueue::new(selected, (0..selected.len()).collect());
    loop {
        while !interrupted && pending.len() < shared.config.plan.jobs.max(1) {
            let Some(index) = queue.start() else {
                break;
            };
            let case = selected[index];
            match prepare(case, shared, index) {
                Ok(ctx) => pending.push(async move { (index, run_case(case, ctx).await) }),
                Err(result) => {
                    queue.finished(index);
                    gathered.rows.case(*result, sink);
                }
            }
        }
        if pending.is_empty() {
            break;
        }
        tokio::select! {
            Some((index, outcome)) = pending.next() => {
                queue.finished(index);
                gathered.absorb(outcome, sink);
            }
            changed = interrupt.changed() => {
                if changed.is_err() || *interrupt.borrow() {
                    interrupted = true;
                    break;
                }
            }
        }
    }
    interrupted
}

/// A ready case context, or the result of a case that cannot run here.
fn prepare(
    case: &AapCase,
    shared: &Shared<'_>,
    index: usize,
) -> Result<CaseContext, Box<CaseResult>> {
    let config = shared.config;
    let token = format!("{}-{index}", shared.token);
    let rerun = config.plan.rerun(&case.info.id);
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
    let number = shared.version.number();
    if !case.versions.is_empty() && !case.versions.contains(&number) {
        let listed: Vec<String> = case.versions.iter().map(u64::to_string).collect();
        let versions = match listed.as_slice() {
            [one] => format!("version {one}"),
            [first @ .., last] => format!("versions {} and {last}", first.join(", ")),
            [] => String::new(),
        };
        return Err(without(
            Verdict::NotApplicable,
            format!(
                "not applicable: a rule of AAP {versions} only; the run is at version {number}"
            ),
            None,
        ));
    }
    let agent = match shared.agent {
        Ok(agent) => agent,
        // Meta cases judge the meta response themselves; give them a placeholder agent.
        Err(_) if case.info.id.starts_with("AAP-META-") => &Agent {
            name: String::new(),
            info: serde_json::Value::Null,
        },
        Err(why) => {
            return Err(without(
                Verdict::Blocked,
                format!("blocked: {why}"),
                Some(Rule::AapMeta001.to_string()),
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
        if !agent.offers(need, &vars, config.token.is_some()) {
            return Err(without(
                Verdict::NotTestable,
                format!("not testable: the target does not offer `{need}`"),
                None,
            ));
        }
    }
    // `${openedN}`: where the N-th history message after a session's opening stands (at
    // versions 1 and 2 the opening turn's user message and reply come first).
    let opening = if shared.version.creation_runs_turn() {
        2
    } else {
        0
    };
    for n in 0..3 {
        vars.push((format!("opened{n}"), (opening + n).to_string()));
    }
    vars.push(("run".into(), token.clone()));
    vars.push(("secret".into(), format!("{SECRET_PREFIX}{token}")));
    Ok(CaseContext {
        client: Client::new(
            shared.target.clone(),
            config.token.clone(),
            config.plan.timeout,
        ),
        agent: Arc::new(agent.clone()),
        vars: vars.into_iter().collect(),
        observer: Observer::at(Arc::clone(&shared.schemas), shared.version),
        rerun,
    })
}

/// What the run has gathered: its rows, and every scripted turn for the cross-mode check.
struct Gathered {
    rows: Rows,
    turns: Vec<TurnRecord>,
}

impl Gathered {
    /// Takes in a case that ran: its row, what its always-on checks found and counted (each
    /// violation shown with the case's last frames), its turns.
    fn absorb(&mut self, outcome: CaseOutcome, sink: &mut dyn EventSink) {
        let always_on = &mut self.rows.always_on;
        always_on.looked_at(&outcome.observer.counts, &outcome.observer.skips);
        let context = last_frames(&outcome.result.transcript);
        let at = format!("in case {}", outcome.result.info.id);
        for violation in outcome.observer.violations {
            always_on.found(violation, &at, context.clone());
        }
        self.turns.extend(outcome.turns);
        self.rows.case(outcome.result, sink);
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
        let always_on = &mut self.rows.always_on;
        always_on.looked_at([(&Rule::AapSse007, &compared)], &Default::default());
        for (violation, case) in found {
            always_on.found(violation, &format!("in case {case}"), Vec::new());
        }
    }
}
