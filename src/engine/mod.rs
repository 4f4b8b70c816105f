//! The runner: selects cases, runs them (in parallel up to `jobs`, each on its own
//! connections and session), turns always-on check findings into one row per rule,
//! reconciles with the baseline, and emits events. It never prints, writes files or exits.

pub mod baseline;
mod case;
mod prerequisite;
pub mod profile;
mod selection;
// compat: `pub` only for the old path engine::vars::unique_token, private after the
// parallel branches merge
pub mod vars;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::watch;

pub use case::{run_case, CaseContext, CaseOutcome};
// compat: old path, removed after the parallel branches merge
pub use crate::client::checkpoint;
// compat: old path, removed after the parallel branches merge
pub use crate::client as conn;
pub use prerequisite::AgentsUnread;
pub use profile::Profile;
pub use selection::{glob, Selection, Shard, ShardError};

use crate::checks::frame::{Counts, Schemas};
use crate::checks::{AlwaysOnRule, Rule, ALWAYS_ON};
use crate::suite::{Case, Catalog};
use crate::verdict::{CaseInfo, CaseResult, Finding, ReportedFrame, RunReport, Tally, Verdict};
use baseline::Baseline;

/// Everything a run needs.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub url: String,
    /// Shown in reports (`builtin` for the in-process host).
    pub target_label: String,
    pub fault: Option<String>,
    pub catalog: Catalog,
    pub selection: Selection,
    pub schemas: Schemas,
    pub profile: Profile,
    pub timeout: Duration,
    pub jobs: usize,
    pub strict: bool,
    pub baseline: Option<Baseline>,
    /// The command prefix that re-runs a case (`--filter ID` is appended).
    pub rerun_prefix: String,
    /// The protocol version connections offer (a step may name its own).
    pub protocol_version: String,
}

/// What the runner reports while it works.
#[derive(Debug, Clone)]
pub enum Event {
    RunStarted {
        cases: usize,
    },
    CaseFinished {
        result: Box<CaseResult>,
        done: usize,
        total: usize,
    },
    /// Something the person running it should know at once, in one line.
    Notice(String),
    RunFinished,
}

/// Receives every event (progress bars, live output).
pub trait EventSink {
    fn event(&mut self, event: &Event);
}

/// An event sink that ignores everything.
pub struct Quiet;

impl EventSink for Quiet {
    fn event(&mut self, _: &Event) {}
}

/// What a run has gathered so far: finished case rows, and what the always-on checks found
/// and looked at across cases (their rows are made at the end).
struct Gathered {
    results: Vec<CaseResult>,
    always_on: AlwaysOnFound,
    /// Rules broken as the prerequisite of a case, with the cases they blocked.
    prerequisites: prerequisite::Prerequisites,
    total: usize,
}

/// What the always-on checks found (the first violations), looked at and skipped across
/// cases, by rule, until each rule's row is made. AHP's runner and AAP's keep one each.
#[derive(Debug, Default)]
pub struct AlwaysOnFound {
    pub findings: HashMap<Rule, Vec<Finding>>,
    pub counts: Counts,
    pub skipped: crate::checks::Skips,
    /// Cases that finished (ran or were blocked), and the blocked ones by the rule that
    /// blocked them: a row that saw nothing says when that is because cases were blocked.
    cases: usize,
    blocked: std::collections::BTreeMap<String, usize>,
}

impl AlwaysOnFound {
    /// Takes note of a finished case row (blocked or not).
    pub fn case_finished(&mut self, result: &CaseResult) {
        self.cases += 1;
        if let (Verdict::Blocked, Some(rule)) = (result.verdict, &result.blocked_by) {
            *self.blocked.entry(rule.clone()).or_insert(0) += 1;
        }
    }

    /// The row of `rule` (see [`always_on_result`]), with the findings it takes. A row that
    /// judged nothing while cases were blocked says how many, and by what.
    pub fn row(&mut self, rule: &AlwaysOnRule, over: &str, rerun: String) -> CaseResult {
        let looked_at = self.counts.get(&rule.rule).copied().unwrap_or(0);
        let skipped = self.skipped.of(rule.rule);
        let mut row = always_on_result(
            rule,
            self.findings.remove(&rule.rule).unwrap_or_default(),
            looked_at,
            &skipped,
            over,
            rerun,
        );
        let blocked: usize = self.blocked.values().sum();
        if row.verdict == Verdict::NotTestable && blocked > 0 {
            let by = match self.blocked.iter().collect::<Vec<_>>().as_slice() {
                [(rule, _)] => format!("by {rule}"),
                several => {
                    let each: Vec<String> = several
                        .iter()
                        .map(|(rule, n)| format!("{n} by {rule}"))
                        .collect();
                    format!("({})", each.join(", "))
                }
            };
            let unit = rule.unit;
            row.summary = if blocked == self.cases {
                format!("Not testable: {blocked} cases blocked {by}, so no {unit} were seen")
            } else if skipped.is_empty() {
                format!(
                    "Not testable: no {unit} were seen in the {} cases that ran; {blocked} cases blocked {by}",
                    self.cases - blocked
                )
            } else {
                format!("{}; {blocked} cases blocked {by}", row.summary)
            };
        }
        row
    }
}

impl Gathered {
    fn new(total: usize) -> Gathered {
        Gathered {
            results: Vec::new(),
            always_on: AlwaysOnFound::default(),
            prerequisites: prerequisite::Prerequisites::new(),
            total,
        }
    }

    /// Keeps a finished row and tells the sink.
    fn finished(&mut self, result: CaseResult, sink: &mut dyn EventSink) {
        sink.event(&Event::CaseFinished {
            result: Box::new(result.clone()),
            done: self.results.len() + 1,
            total: self.total,
        });
        self.results.push(result);
    }

    /// Keeps the row of a case blocked by `finding`'s rule.
    fn blocked(&mut self, result: CaseResult, finding: Finding, sink: &mut dyn EventSink) {
        self.always_on.case_finished(&result);
        self.prerequisites
            .entry(finding.rule.clone())
            .or_default()
            .push((result.info.id.clone(), finding));
        self.finished(result, sink);
    }

    /// Takes in a case that ran: its row, what its always-on checks found and counted.
    fn absorb(&mut self, outcome: CaseOutcome, sink: &mut dyn EventSink) {
        for (rule, n) in outcome.counts {
            *self.always_on.counts.entry(rule).or_insert(0) += n;
        }
        self.always_on.skipped.merge(&outcome.skipped);
        for (located, context) in outcome.always_on {
            let rule = located.violation.rule;
            self.always_on
                .findings
                .entry(rule)
                .or_default()
                .push(Finding {
                    rule: rule.id().to_owned(),
                    verdict: Verdict::Fail,
                    expected: located.violation.expected,
                    actual: format!(
                        "{} (on {} in case {})",
                        located.violation.actual, located.conn, outcome.result.info.id
                    ),
                    step: None,
                    context,
                });
        }
        match outcome.prerequisite {
            Some(finding) => self.blocked(outcome.result, finding, sink),
            None => {
                self.always_on.case_finished(&outcome.result);
                self.finished(outcome.result, sink)
            }
        }
    }

    /// One row per selected always-on rule, over every case that ran.
    fn always_on_rows(
        &mut self,
        rules: &[&AlwaysOnRule],
        rerun_prefix: &str,
        sink: &mut dyn EventSink,
    ) {
        for rule in rules {
            let rerun = format!("{rerun_prefix} --filter {}", rule.id);
            let result = self.always_on.row(rule, "frame of every case", rerun);
            self.finished(result, sink);
        }
    }
}

/// Every case's context: the run's settings plus its own token and re-run command.
fn case_contexts(
    config: &RunConfig,
    cases: &[&Case],
    agent_capabilities: &Result<serde_json::Value, AgentsUnread>,
) -> Vec<CaseContext> {
    let nonce = crate::client::unique_token("");
    let rule_levels = Arc::new(prerequisite::rule_levels(&config.catalog));
    cases
        .iter()
        .enumerate()
        .map(|(index, case)| CaseContext {
            url: config.url.clone(),
            schemas: config.schemas.clone(),
            profile: config.profile.clone(),
            timeout: config.timeout,
            token: format!("{nonce}-{index}"),
            rerun: format!("{} --filter {}", config.rerun_prefix, case.info.id),
            agent_capabilities: agent_capabilities.clone(),
            rule_levels: Arc::clone(&rule_levels),
            offer: config.protocol_version.clone(),
        })
        .collect()
}

/// A server whose initialize failed for the run blocks, at once, every case that would only
/// fail the same initialize again after its own timeout. Returns the indexes left to run.
fn block_unstartable(
    config: &RunConfig,
    cases: &[&Case],
    contexts: &[CaseContext],
    agent_capabilities: &Result<serde_json::Value, AgentsUnread>,
    gathered: &mut Gathered,
    sink: &mut dyn EventSink,
) -> Vec<usize> {
    let mut to_run: Vec<usize> = Vec::with_capacity(cases.len());
    for (index, case) in cases.iter().enumerate() {
        let (why, unanswered) = match agent_capabilities {
            Err(AgentsUnread::Server(why)) => (why, false),
            Err(AgentsUnread::Unanswered(why)) => (why, true),
            _ => {
                to_run.push(index);
                continue;
            }
        };
        let rerun = contexts[index].rerun.clone();
        let offer = &config.protocol_version;
        match prerequisite::blocked_before_running(case, why, offer, rerun, unanswered) {
            Some((result, finding)) => gathered.blocked(result, finding, sink),
            None => to_run.push(index),
        }
    }
    if let (Err(AgentsUnread::Server(why) | AgentsUnread::Unanswered(why)), false) =
        (agent_capabilities, gathered.results.is_empty())
    {
        sink.event(&Event::Notice(format!(
            "the server answered no initialize ({why}): INIT-001 fails and the {} cases that start with one are blocked without running",
            gathered.results.len()
        )));
    }
    to_run
}

/// Runs the selected cases. Stops early (keeping what it has) when `interrupt` turns true.
pub async fn run(
    config: &RunConfig,
    sink: &mut dyn EventSink,
    mut interrupt: watch::Receiver<bool>,
) -> RunReport {
    let started = Instant::now();
    let started_at = format!("{:.0}", jiff::Timestamp::now());
    let cases: Vec<&Case> = config.selection.cases(&config.catalog);
    let always_on: Vec<&AlwaysOnRule> = ALWAYS_ON
        .iter()
        .filter(|rule| config.selection.includes(rule.id, rule.level))
        .collect();
    let total = cases.len() + always_on.len();
    sink.event(&Event::RunStarted { cases: total });
    let mut gathered = Gathered::new(total);
    let mut interrupted = *interrupt.borrow();
    // Reading the capabilities waits on the server: let Ctrl-C cut it short too.
    let agent_capabilities = tokio::select! {
        capabilities = prerequisite::agent_capabilities(config) => capabilities,
        _ = wait_for_interrupt(&mut interrupt) => {
            interrupted = true;
            Err(AgentsUnread::Harness("the run was interrupted".to_owned()))
        }
    };
    let contexts = Arc::new(case_contexts(config, &cases, &agent_capabilities));
    let to_run = if interrupted {
        (0..cases.len()).collect()
    } else {
        block_unstartable(
            config,
            &cases,
            &contexts,
            &agent_capabilities,
            &mut gathered,
            sink,
        )
    };
    let mut pending = FuturesUnordered::new();
    let mut next = 0;
    let jobs = config.jobs.max(1);
    while !interrupted && (next < to_run.len() || !pending.is_empty()) {
        while next < to_run.len() && pending.len() < jobs {
            let case = cases[to_run[next]];
            let contexts = Arc::clone(&contexts);
            let index = to_run[next];
            pending.push(async move { run_case(case, &contexts[index]).await });
            next += 1;
        }
        tokio::select! {
            Some(outcome) = pending.next() => gathered.absorb(outcome, sink),
            changed = interrupt.changed() => {
                if changed.is_err() || *interrupt.borrow() {
                    interrupted = true;
                }
            }
        }
    }
    // Order results as in the catalog, not by completion.
    let order: HashMap<&str, usize> = cases
        .iter()
        .enumerate()
        .map(|(i, c)| (c.info.id.as_str(), i))
        .collect();
    gathered
        .results
        .sort_by_key(|r| order.get(r.info.id.as_str()).copied().unwrap_or(usize::MAX));
    if !interrupted {
        gathered.always_on_rows(&always_on, &config.rerun_prefix, sink);
    }
    let Gathered {
        mut results,
        prerequisites,
        ..
    } = gathered;
    for result in prerequisite::charge_prerequisites(&mut results, prerequisites, config) {
        sink.event(&Event::CaseFinished {
            result: Box::new(result),
            done: total,
            total,
        });
    }
    let report = run_report(config, started_at, started, interrupted, results);
    sink.event(&Event::RunFinished);
    report
}

/// The report of a run, the baseline applied.
fn run_report(
    config: &RunConfig,
    started_at: String,
    started: Instant,
    interrupted: bool,
    cases: Vec<CaseResult>,
) -> RunReport {
    let mut report = RunReport {
        fault: config.fault.clone(),
        started_at,
        duration_ms: started.elapsed().as_secs_f64() * 1000.0,
        interrupted,
        shard: config.selection.shard.map(|s| s.to_string()),
        selection: config.selection.choice(),
        strict: config.strict,
        ..RunReport::of(
            config.target_label.clone(),
            config.protocol_version.clone(),
            cases,
        )
    };
    reconcile(&mut report, config.baseline.as_ref());
    report
}

/// Resolves once `interrupt` turns true (never, when its sender is gone without doing so).
async fn wait_for_interrupt(interrupt: &mut watch::Receiver<bool>) {
    loop {
        if *interrupt.borrow() {
            return;
        }
        if interrupt.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

/// The row of an always-on rule: what it looked at and every violation found (the first
/// 20 kept). `over` says what the checks ran over, after "Checked on every" ("frame of
/// every case"; "frame of every connection" for observed traffic; "response of every case"
/// for AAP); `rerun` is the row's re-run command.
pub fn always_on_result(
    rule: &AlwaysOnRule,
    findings: Vec<Finding>,
    looked_at: usize,
    skipped: &[(&str, usize)],
    over: &str,
    rerun: String,
) -> CaseResult {
    let first = findings
        .first()
        .map(|f| (f.expected.as_str(), f.actual.as_str()));
    let (outcome, summary) =
        crate::checks::row_summary(rule.unit, findings.len(), looked_at, skipped, first);
    let verdict = match outcome {
        crate::checks::RowOutcome::Broken => rule.level.broken(),
        crate::checks::RowOutcome::NotTestable => Verdict::NotTestable,
        crate::checks::RowOutcome::Passed => Verdict::Pass,
    };
    let mut findings = findings;
    for finding in &mut findings {
        finding.verdict = rule.level.broken();
    }
    findings.truncate(20);
    CaseResult {
        info: CaseInfo {
            id: rule.id.to_owned(),
            level: rule.level,
            area: rule.area.to_owned(),
            spec: rule.spec.to_owned(),
            requirement: rule.requirement.to_owned(),
            does: format!("Checked on every {over} ({})", rule.unit),
            source: "builtin".to_owned(),
        },
        verdict,
        summary,
        findings,
        blocked_by: None,
        protocol_version: None,
        transcript: Vec::<ReportedFrame>::new(),
        duration_ms: 0.0,
        rerun,
    }
}

/// Applies the baseline: failures it lists are accepted; listed cases that now pass are
/// stale. Fills the tally and the two lists that decide the exit code.
pub fn reconcile(report: &mut RunReport, baseline: Option<&Baseline>) {
    let mut tally = Tally::default();
    let mut unexpected = Vec::new();
    let mut stale = Vec::new();
    for case in &report.cases {
        tally.add(case.verdict);
        // A blocked case proved nothing about its rule: it fails the run like a failure.
        let failing = matches!(case.verdict, Verdict::Fail | Verdict::Blocked)
            || (report.strict && case.verdict == Verdict::Warn);
        // In a run of several protocol versions a row is `ID@version`; the baseline may
        // name the case (every version) or one version of it.
        let key = case.key();
        let listed = baseline.is_some_and(|b| b.lists(&case.info.id) || b.lists(&key));
        if failing && listed {
            tally.baselined += 1;
        } else if failing {
            unexpected.push(key);
        } else if listed && case.verdict == Verdict::Pass && !stale.contains(&key) {
            stale.push(key);
        }
    }
    report.tally = tally;
    report.unexpected_failures = unexpected;
    report.stale_baseline = stale;
}
