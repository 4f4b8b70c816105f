//! What a fuzz campaign found: distinct failures by rule (the first failing sequence of each
//! rule shrunk once, later ones only counted), the rules a baseline accepts, and the rules
//! `--exclude` takes out of judging. The campaign goes on after a finding until its budget is
//! spent, so one deviation of a server does not hide the others.

use std::collections::BTreeMap;
use std::path::Path;

use super::exec::Failure;
use super::{Found, FuzzOutcome};
use crate::catalog::glob;
use crate::checks::{Rule, Violation};
use crate::rows::baseline::Baseline;
use crate::verdict::{CaseInfo, CaseResult, Finding, Level, RunReport, Verdict};

/// Rules the fuzzer does not judge (`--exclude`, globs as in `run --exclude`). A violation
/// of one is dropped where it is found and the sequence goes on; where it cannot go on (a
/// probe or reconnect that failed half-way, a dead connection) it ends without a verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Excluded {
    patterns: Vec<String>,
}

impl Excluded {
    pub fn new(patterns: Vec<String>) -> Excluded {
        Excluded { patterns }
    }

    /// Whether a violation of `rule` counts (a `Rule`, or a rule a suite step names).
    pub fn judges(&self, rule: impl AsRef<str>) -> bool {
        let rule = rule.as_ref();
        !self.patterns.iter().any(|pattern| glob(pattern, rule))
    }

    /// `failure` unless its rule is excluded.
    pub fn judged(&self, failure: Option<Failure>) -> Option<Failure> {
        failure.filter(|f| self.judges(f.rule))
    }

    /// The first of `found` (where it was found, violation) whose rule is judged, as a
    /// failure at `op_index` ("actual (on where)").
    pub fn first_failure(
        &self,
        found: impl IntoIterator<Item = (String, Violation)>,
        op_index: Option<usize>,
    ) -> Option<Failure> {
        found
            .into_iter()
            .find(|(_, violation)| self.judges(violation.rule))
            .map(|(on, violation)| Failure {
                rule: violation.rule,
                expected: violation.expected,
                actual: format!("{} (on {on})", violation.actual),
                op_index,
            })
    }
}

/// The rules a campaign has seen failing (found or baselined), shared with its executions:
/// a wait whose only possible outcome is a failure of one of these (or of an excluded rule)
/// ends at the host's next answer instead of the timeout — the fuzzer does not wait again
/// for what it knows will not come. Empty outside a campaign (a replay waits in full).
#[derive(Debug, Clone, Default)]
pub struct Known(std::sync::Arc<std::sync::Mutex<std::collections::BTreeSet<Rule>>>);

impl Known {
    fn rules(&self) -> std::sync::MutexGuard<'_, std::collections::BTreeSet<Rule>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn insert(&self, rule: Rule) {
        self.rules().insert(rule);
    }

    pub fn contains(&self, rule: Rule) -> bool {
        self.rules().contains(&rule)
    }
}

/// What one failing generated sequence is to the campaign.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// The first failure of a rule: shrink it and save its trace.
    First,
    /// A rule already found: counted only.
    Again,
    /// A rule the baseline lists: counted, never shrunk, not a failure of the run.
    Baselined,
}

/// The distinct findings of a campaign, by rule.
#[derive(Debug, Clone)]
pub struct Findings<T> {
    /// The first failure of each rule the baseline does not list, shrunk, in the order found.
    pub found: Vec<Found<T>>,
    /// The first failure of each rule the baseline lists, unshrunk, in the order seen.
    pub baselined: Vec<Failure>,
    /// Failing generated sequences per rule (shrinking runs are not counted).
    pub failing: BTreeMap<Rule, u64>,
}

impl<T> Default for Findings<T> {
    fn default() -> Self {
        Findings {
            found: Vec::new(),
            baselined: Vec::new(),
            failing: BTreeMap::new(),
        }
    }
}

impl<T> Findings<T> {
    /// Counts `failure` and says what to do with it.
    pub fn see(&mut self, failure: &Failure, baseline: &Baseline) -> Seen {
        let count = self.failing.entry(failure.rule).or_default();
        *count += 1;
        let first = *count == 1;
        if baseline.lists(failure.rule.id()) {
            if first {
                self.baselined.push(failure.clone());
            }
            Seen::Baselined
        } else if first {
            Seen::First
        } else {
            Seen::Again
        }
    }

    /// How many generated sequences failed `rule`.
    pub fn failing(&self, rule: Rule) -> u64 {
        self.failing.get(&rule).copied().unwrap_or(0)
    }

    /// Whether the campaign found a failure the baseline does not accept.
    pub fn any_unbaselined(&self) -> bool {
        !self.found.is_empty()
    }
}

/// The campaign in a few lines for the console: what was left out, every rule found, and
/// every baselined rule seen (the shrunk sequences are rendered by [`super::render_found`]).
pub fn render_summary<T>(outcome: &FuzzOutcome<T>) -> String {
    let mut out = String::new();
    if !outcome.left_out.is_empty() {
        out.push_str(&format!(
            "left out (the target profile maps no behaviour for them): {}\n",
            outcome.left_out.join(", ")
        ));
    }
    let findings = &outcome.findings;
    if !findings.found.is_empty() {
        let rules: Vec<String> = findings
            .found
            .iter()
            .map(|f| {
                let n = findings.failing(f.failure.rule);
                format!("{} ({n} failing sequence{})", f.failure.rule, plural(n))
            })
            .collect();
        out.push_str(&format!(
            "found {} rule{}: {}\n",
            rules.len(),
            plural(rules.len() as u64),
            rules.join(", ")
        ));
    }
    for failure in &findings.baselined {
        let n = findings.failing(failure.rule);
        out.push_str(&format!(
            "seen and baselined: {} ({n} failing sequence{}; listed in the baseline, not shrunk)\n",
            failure.rule,
            plural(n)
        ));
    }
    out
}

/// What the campaign did, in figures: the sequences and their rate, shrinking, and the
/// whole against the duration that bounds it.
pub fn render_figures<T>(outcome: &FuzzOutcome<T>, duration: std::time::Duration) -> String {
    let running = outcome.elapsed.saturating_sub(outcome.shrinking);
    let mut out = format!(
        "{} sequence{}, {} operations in {:.1} s ({} operations/s)",
        outcome.cases,
        plural(outcome.cases),
        outcome.operations,
        running.as_secs_f64(),
        per_second(outcome.rate()),
    );
    if outcome.shrink_runs > 0 {
        out.push_str(&format!(
            "; shrinking: {} sequence{}, {} operations in {:.1} s",
            outcome.shrink_runs,
            plural(outcome.shrink_runs),
            outcome.shrink_operations,
            outcome.shrinking.as_secs_f64()
        ));
    }
    out.push_str(&format!(
        "; {:.1} s in all (duration {:.0} s)",
        outcome.elapsed.as_secs_f64(),
        duration.as_secs_f64()
    ));
    if outcome.cut_off {
        out.push_str("; the sequence running at the end of the duration was cut off (not counted)");
    }
    if outcome.interrupted {
        out.push_str(", interrupted");
    }
    out
}

/// A rate for people: three significant figures (412, 5.25, 0.0913), never a 0 that is not.
pub fn per_second(rate: f64) -> String {
    if !rate.is_finite() || rate <= 0.0 {
        return "0".into();
    }
    let decimals = (2.0 - rate.log10().floor()).clamp(0.0, 9.0) as usize;
    format!("{rate:.decimals$}")
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The last frames of an execution, as a finding's context.
fn context(execution: &super::Execution) -> Vec<crate::verdict::ReportedFrame> {
    let skip = execution.frames.len().saturating_sub(8);
    execution.frames[skip..].to_vec()
}

/// What a row says about `failure` (the one `Finding` of a fuzz row).
fn finding(failure: &Failure, context: Vec<crate::verdict::ReportedFrame>) -> Finding {
    Finding {
        rule: failure.rule.to_string(),
        verdict: Verdict::Fail,
        expected: failure.expected.clone(),
        actual: failure.actual.clone(),
        step: failure.op_index.map(|i| format!("operation {}", i + 1)),
        context,
    }
}

/// Where the campaign came from and what `report` rows share.
pub struct ReportInput<'a> {
    /// `builtin` or the server URL.
    pub target: &'a str,
    /// The combined fault name of the built-in host, if any.
    pub fault: Option<String>,
    /// `model` or `frames`.
    pub mode: &'a str,
    pub baseline: &'a Baseline,
    /// The directory the traces are saved in (`<seed>-<rule>.json`).
    pub traces: &'a Path,
    /// The campaign's shard (`2/4`), when sharded.
    pub shard: Option<String>,
    /// The duration that bounded the campaign.
    pub duration: std::time::Duration,
}

/// The campaign as a report (JSON, JUnit, HTML, Markdown like `run`): one row per rule
/// found (failing, or baselined: the baseline accepts it as in `run`), or a single passing
/// row for the campaign when no sequence failed.
pub fn report<T>(outcome: &FuzzOutcome<T>, input: &ReportInput<'_>) -> RunReport {
    let mode = input.mode;
    let does = does_line(outcome, mode, input.duration);
    let row = |id: &str, requirement: String| CaseInfo {
        id: id.to_owned(),
        level: Level::Must,
        area: "fuzz".into(),
        spec: "RULES.md (every rule the runner checks)".into(),
        requirement,
        does: does.clone(),
        source: "fuzzer".into(),
    };
    let findings = &outcome.findings;
    let mut cases = Vec::new();
    for found in &findings.found {
        let rule = found.failure.rule;
        let info = row(rule.id(), format!("No generated sequence breaks {rule}."));
        cases.push(found_row(found, findings.failing(rule), input, info));
    }
    let mut rerun = format!("ahpspec fuzz --seed {} --mode {mode}", outcome.seed);
    if let Some(fault) = &input.fault {
        rerun.push_str(&format!(" --fault {fault}"));
    }
    for failure in &findings.baselined {
        let rule = failure.rule;
        let n = findings.failing(rule);
        cases.push(CaseResult {
            info: row(rule.id(), format!("No generated sequence breaks {rule}.")),
            verdict: Verdict::Fail,
            summary: format!(
                "{rule}: seen in {n} failing sequence{}, listed in the baseline (not shrunk): expected {}; got {}",
                plural(n),
                failure.expected,
                failure.actual
            ),
            findings: vec![finding(failure, Vec::new())],
            blocked_by: None,
            protocol_version: None,

            transcript: Vec::new(),
            duration_ms: 0.0,
            rerun: rerun.clone(),
        });
    }
    if cases.is_empty() {
        let (verdict, summary) = match &outcome.stopped {
            Some(stopped) if stopped.is_harness_error() => {
                (Verdict::HarnessError, format!("no failure, but {stopped}"))
            }
            Some(stopped) => (Verdict::NotTestable, stopped.to_string()),
            None => (
                Verdict::Pass,
                format!(
                    "{} sequences, {} operations, no failure",
                    outcome.cases, outcome.operations
                ),
            ),
        };
        cases.push(CaseResult {
            info: row(
                &format!("FUZZ/{mode}"),
                "No generated sequence breaks a rule the runner checks.".into(),
            ),
            verdict,
            summary,
            findings: Vec::new(),
            blocked_by: None,
            protocol_version: None,

            transcript: Vec::new(),
            duration_ms: outcome.elapsed.as_secs_f64() * 1000.0,
            rerun: String::new(),
        });
    }
    campaign_report(outcome, input, cases)
}

/// What every row of a campaign says the fuzzer did.
fn does_line<T>(outcome: &FuzzOutcome<T>, mode: &str, duration: std::time::Duration) -> String {
    let mut does = format!(
        "Seeded random {mode} sequences with every check after every step: {}",
        render_figures(outcome, duration)
    );
    if !outcome.left_out.is_empty() {
        does.push_str(&format!(
            "; left out for lack of a profile behaviour: {}",
            outcome.left_out.join(", ")
        ));
    }
    if outcome.coverage.covered() > 0 {
        does.push_str(&format!(
            "; protocol state: {} (the map: state-coverage.json)",
            outcome.coverage.summary()
        ));
    }
    does.push('.');
    if !outcome.findings.failing.is_empty() {
        does.push_str(
            " Once a rule was seen failing, a wait that could only show it failing again ended at the host's answer to a ping sent after it.",
        );
    }
    if let Some(stopped) = &outcome.stopped {
        does.push_str(&format!(" The campaign stopped early: {stopped}."));
    }
    does
}

/// The row of a rule a shrunk sequence broke (`n` failing sequences in all).
fn found_row<T>(found: &Found<T>, n: u64, input: &ReportInput<'_>, info: CaseInfo) -> CaseResult {
    let rule = found.failure.rule;
    let trace = super::trace::trace_path(input.traces, found.seed, rule);
    CaseResult {
        info,
        verdict: Verdict::Fail,
        summary: format!(
            "{rule}: expected {}; got {} ({n} failing sequence{}; the first {})",
            found.failure.expected,
            found.failure.actual,
            plural(n),
            found.shrinking()
        ),
        findings: vec![finding(&found.failure, context(&found.execution))],
        blocked_by: None,
        protocol_version: None,

        transcript: found.execution.frames.clone(),
        duration_ms: found.shrink_elapsed.as_secs_f64() * 1000.0,
        rerun: format!("ahpspec replay {}", trace.display()),
    }
}

/// The campaign's report around its rows, the baseline applied.
fn campaign_report<T>(
    outcome: &FuzzOutcome<T>,
    input: &ReportInput<'_>,
    cases: Vec<CaseResult>,
) -> RunReport {
    let mut report = RunReport {
        fault: input.fault.clone(),
        duration_ms: outcome.elapsed.as_secs_f64() * 1000.0,
        interrupted: outcome.interrupted,
        shard: input.shard.clone(),
        ..RunReport::of(input.target.to_owned(), "1.0.0".into(), cases)
    };
    // A baselined rule that did not fail this time is not stale: random sequences prove
    // nothing by missing it.
    crate::rows::reconcile(&mut report, Some(input.baseline));
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn failure(rule: Rule) -> Failure {
        Failure {
            rule,
            expected: "e".into(),
            actual: "a".into(),
            op_index: Some(0),
        }
    }

    #[test]
    fn each_rule_is_shrunk_once_and_baselined_rules_never() {
        let baseline = Baseline::parse("PENDING-003\n");
        let mut findings = Findings::<()>::default();
        assert_eq!(
            findings.see(&failure(Rule::ChatValidate003), &baseline),
            Seen::First
        );
        assert_eq!(
            findings.see(&failure(Rule::ChatValidate003), &baseline),
            Seen::Again
        );
        assert_eq!(
            findings.see(&failure(Rule::Pending003), &baseline),
            Seen::Baselined
        );
        assert_eq!(
            findings.see(&failure(Rule::Pending003), &baseline),
            Seen::Baselined
        );
        assert_eq!(findings.failing(Rule::ChatValidate003), 2);
        assert_eq!(findings.failing(Rule::Pending003), 2);
        assert_eq!(findings.baselined, vec![failure(Rule::Pending003)]);
        assert!(
            !findings.any_unbaselined(),
            "nothing is found until it is shrunk"
        );
    }

    #[test]
    fn rates_keep_three_significant_figures_and_never_round_to_zero() {
        assert_eq!(per_second(412.3), "412");
        assert_eq!(per_second(5.254), "5.25");
        assert_eq!(per_second(7.0 / 77.0), "0.0909");
        assert_eq!(per_second(0.0), "0");
    }

    #[test]
    fn excluded_rules_are_not_judged() {
        let excluded = Excluded::new(vec!["INV-*".into(), Rule::Pending003.to_string()]);
        assert!(!excluded.judges(Rule::InvFold1));
        assert!(!excluded.judges(Rule::Pending003));
        assert!(excluded.judges("PENDING-002"));
        assert_eq!(excluded.judged(Some(failure(Rule::InvChat1))), None);
        assert!(excluded.judged(Some(failure(Rule::Turn001))).is_some());
        assert!(Excluded::default().judges(Rule::InvFold1));
    }
}
