//! The rows of the always-on rules: what their checks found, looked at and skipped, across
//! every case of a run (or every connection the proxy and `check` saw), made into one row
//! per rule at the end. The one way violations become findings, for every runner.

use std::collections::{BTreeMap, HashMap};

use crate::catalog::always_on_info;
use crate::checks::frame::Counts;
use crate::checks::{row_summary, AlwaysOnRule, RowOutcome, Rule, Skips, Violation};
use crate::verdict::{CaseResult, Finding, ReportedFrame, Verdict};

/// Findings a row keeps per rule (the row counts every violation).
const FINDINGS_KEPT: usize = 20;

/// What the always-on checks found (the first violations of each rule), looked at and
/// skipped, by rule, until each rule's row is made.
#[derive(Debug, Default)]
pub struct AlwaysOnRows {
    findings: HashMap<Rule, Vec<Finding>>,
    /// Every violation, also those whose details were not kept.
    violations: HashMap<Rule, usize>,
    counts: Counts,
    skipped: Skips,
    /// Cases that finished (ran or were blocked), and the blocked ones by the rule that
    /// blocked them: a row that saw nothing says when that is because cases were blocked.
    cases: usize,
    blocked: BTreeMap<String, usize>,
}

impl AlwaysOnRows {
    /// Takes in one violation, found `at` (`on c1 in case TOOL-007`), with the frames
    /// before it.
    pub fn found(&mut self, violation: Violation, at: &str, context: Vec<ReportedFrame>) {
        let rule = violation.rule;
        *self.violations.entry(rule).or_insert(0) += 1;
        let kept = self.findings.entry(rule).or_default();
        if kept.len() < FINDINGS_KEPT {
            kept.push(Finding {
                rule: rule.id().to_owned(),
                verdict: Verdict::Fail,
                expected: violation.expected,
                actual: format!("{} ({at})", violation.actual),
                step: None,
                context,
            });
        }
    }

    /// Adds what the checks looked at, by rule, and what they skipped.
    pub fn looked_at<'a>(
        &mut self,
        counts: impl IntoIterator<Item = (&'a Rule, &'a usize)>,
        skipped: &Skips,
    ) {
        for (rule, n) in counts {
            *self.counts.entry(*rule).or_insert(0) += n;
        }
        self.skipped.merge(skipped);
    }

    /// Takes note of a finished case row (blocked or not).
    pub fn case_finished(&mut self, result: &CaseResult) {
        self.cases += 1;
        if let (Verdict::Blocked, Some(rule)) = (result.verdict, &result.blocked_by) {
            *self.blocked.entry(rule.clone()).or_insert(0) += 1;
        }
    }

    /// The row of `rule`: what it looked at and every violation found (the first ones in
    /// full). `over` says what the checks ran over, after "Checked on every" ("frame of
    /// every case", "frame of every connection", "response of every case"); `rerun` is the
    /// row's re-run command. A row that judged nothing while cases were blocked says how
    /// many, and by what.
    pub fn row(&mut self, rule: &AlwaysOnRule, over: &str, rerun: String) -> CaseResult {
        let looked_at = self.counts.get(&rule.rule).copied().unwrap_or(0);
        let violations = self.violations.get(&rule.rule).copied().unwrap_or(0);
        let skipped = self.skipped.of(rule.rule);
        let mut findings = self.findings.remove(&rule.rule).unwrap_or_default();
        let first = findings
            .first()
            .map(|f| (f.expected.as_str(), f.actual.as_str()));
        let (outcome, summary) = row_summary(rule.unit, violations, looked_at, &skipped, first);
        let verdict = match outcome {
            RowOutcome::Broken => rule.level.broken(),
            RowOutcome::NotTestable => Verdict::NotTestable,
            RowOutcome::Passed => Verdict::Pass,
        };
        for finding in &mut findings {
            finding.verdict = rule.level.broken();
        }
        let mut row = CaseResult {
            info: always_on_info(rule, over),
            verdict,
            summary,
            findings,
            blocked_by: None,
            protocol_version: None,
            transcript: Vec::new(),
            duration_ms: 0.0,
            rerun,
        };
        let blocked: usize = self.blocked.values().sum();
        if row.verdict == Verdict::NotTestable && blocked > 0 {
            row.summary = self.blocked_summary(rule, &row.summary, skipped.is_empty());
        }
        row
    }

    /// The summary of a row that judged nothing while `blocked` cases were blocked.
    fn blocked_summary(&self, rule: &AlwaysOnRule, summary: &str, nothing_skipped: bool) -> String {
        let blocked: usize = self.blocked.values().sum();
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
        if blocked == self.cases {
            format!("Not testable: {blocked} cases blocked {by}, so no {unit} were seen")
        } else if nothing_skipped {
            format!(
                "Not testable: no {unit} were seen in the {} cases that ran; {blocked} cases blocked {by}",
                self.cases - blocked
            )
        } else {
            format!("{summary}; {blocked} cases blocked {by}")
        }
    }
}
