//! The scope of a run, which every report puts at its head: how many rules of each level it
//! checked and how many of those passed, and which rules it could not check — not
//! applicable (with the capability the server does not advertise), not testable (with the
//! profile behaviour or promise that would make them testable) and blocked (with the rule
//! whose failure blocked them). "Conforming" then never hides a narrow run.
//!
//! The unit is the rule, not the case: a rule's rows (its cases, `/slug` variants, its
//! always-on row) fold into one status, the least favourable the rows support. A rule with
//! one passing case and one blocked case is blocked: what was not checked is never counted
//! as passed. In a run of several protocol versions each rule counts once per version.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::verdict::{CaseResult, Level, RunReport, Verdict};

/// What one rule came to in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RuleStatus {
    /// A row failed (MUST) or warned (SHOULD): checked, not passed.
    Failed,
    /// A row could not be judged because of the harness.
    HarnessError,
    /// A row was stopped by the failure of a rule it relies on.
    Blocked,
    /// Every row judged passed (or recorded, for a MAY); some rows may be out of scope.
    Passed,
    /// No row judged anything because the target profile cannot trigger what it needs.
    NotTestable,
    /// No row applies: the server does not advertise the feature, or the version differs.
    NotApplicable,
}

/// Counts of rules of one level.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LevelScope {
    pub level: &'static str,
    /// Rules of this level with a row in the report.
    pub rules: usize,
    /// Rules judged: passed + failed.
    pub checked: usize,
    pub passed: usize,
    /// Passed, but some of their rows were not applicable or not testable.
    pub passed_in_part: usize,
    /// Broken: a MUST failed, a SHOULD warned.
    pub failed: usize,
    pub not_applicable: usize,
    pub not_testable: usize,
    pub blocked: usize,
    pub harness_error: usize,
}

impl LevelScope {
    /// The counts as the reports' tables show them, after the level and its total.
    pub fn columns(&self) -> [(&'static str, usize); 7] {
        [
            ("checked", self.checked),
            ("passed", self.passed),
            ("failed", self.failed),
            ("not applicable", self.not_applicable),
            ("not testable", self.not_testable),
            ("blocked", self.blocked),
            ("harness error", self.harness_error),
        ]
    }
}

/// Rules left unchecked for one reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reason {
    /// The capability, profile behaviour or promise, or blocking rule.
    pub because: String,
    pub rules: Vec<String>,
}

/// The scope of a run (`report.json`'s `scope`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Scope {
    /// One line, as the terminal and the reports' heads print it.
    pub headline: String,
    /// Whether rules count once per protocol version (a run of several).
    pub per_version: bool,
    /// MUST, SHOULD, MAY (levels without rules are left out).
    pub levels: Vec<LevelScope>,
    /// Not applicable rules by the capability (or version) that made them so.
    pub not_applicable: Vec<Reason>,
    /// Not testable rules by the profile behaviour or promise that would make them testable.
    pub not_testable: Vec<Reason>,
    /// Blocked rules by the rule whose failure blocked them.
    pub blocked: Vec<Reason>,
}

impl Scope {
    /// The scope of `report`'s rows.
    pub fn of(report: &RunReport) -> Scope {
        let mut rules: BTreeMap<String, Vec<&CaseResult>> = BTreeMap::new();
        let mut order: Vec<String> = Vec::new();
        for row in &report.cases {
            let key = rule_key(row);
            if !rules.contains_key(&key) {
                order.push(key.clone());
            }
            rules.entry(key).or_default().push(row);
        }
        let per_version = report.cases.iter().any(|r| r.protocol_version.is_some());
        let mut levels: BTreeMap<Level, LevelScope> = BTreeMap::new();
        let mut not_applicable = Groups::default();
        let mut not_testable = Groups::default();
        let mut blocked = Groups::default();
        for key in &order {
            let rows = &rules[key];
            let level = rows
                .iter()
                .map(|r| r.info.level)
                .min()
                .unwrap_or(Level::Must);
            let counts = levels.entry(level).or_insert_with(|| LevelScope {
                level: level.as_str(),
                ..LevelScope::default()
            });
            counts.rules += 1;
            let status = status(rows);
            match status {
                RuleStatus::Failed => counts.failed += 1,
                RuleStatus::HarnessError => counts.harness_error += 1,
                RuleStatus::Blocked => counts.blocked += 1,
                RuleStatus::Passed => {
                    counts.passed += 1;
                    if rows.iter().any(|r| out_of_scope(r.verdict)) {
                        counts.passed_in_part += 1;
                    }
                }
                RuleStatus::NotTestable => counts.not_testable += 1,
                RuleStatus::NotApplicable => counts.not_applicable += 1,
            }
            counts.checked = counts.passed + counts.failed;
            // Each unchecked rule under every reason its rows give.
            for row in rows {
                match (status, row.verdict) {
                    (RuleStatus::NotApplicable, Verdict::NotApplicable) => {
                        not_applicable.add(not_applicable_because(row), key)
                    }
                    (RuleStatus::NotTestable, Verdict::NotTestable) => {
                        not_testable.add(not_testable_because(row), key)
                    }
                    (RuleStatus::Blocked, Verdict::Blocked) => blocked.add(
                        row.blocked_by.clone().unwrap_or_else(|| "(unnamed)".into()),
                        key,
                    ),
                    _ => {}
                }
            }
        }
        let levels: Vec<LevelScope> = levels.into_values().collect();
        let mut scope = Scope {
            headline: String::new(),
            per_version,
            levels,
            not_applicable: not_applicable.into_reasons(),
            not_testable: not_testable.into_reasons(),
            blocked: blocked.into_reasons(),
        };
        scope.headline = scope.line();
        scope
    }

    /// The counts of `level`, zero when the run had no rule of it.
    pub fn level(&self, level: Level) -> LevelScope {
        self.levels
            .iter()
            .find(|l| l.level == level.as_str())
            .cloned()
            .unwrap_or(LevelScope {
                level: level.as_str(),
                ..LevelScope::default()
            })
    }

    /// `MUST: 183 of 199 rules passed (190 checked, 7 failed; 5 not applicable, 3 not
    /// testable, 1 blocked) · SHOULD: …`; the MAY level only when it is all the run had.
    fn line(&self) -> String {
        let shown: Vec<&LevelScope> = self
            .levels
            .iter()
            .filter(|l| l.level != "MAY" || self.levels.len() == 1)
            .collect();
        if shown.is_empty() {
            return "no rule was run".to_owned();
        }
        let parts: Vec<String> = shown.iter().map(|l| level_phrase(l)).collect();
        let mut line = parts.join(" · ");
        if self.per_version {
            line.push_str(" (each rule counted once per protocol version)");
        }
        line
    }

    /// The reasons as `label: because (n), …` lines, for the terminal.
    pub fn reason_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        for (label, reasons) in self.reason_groups() {
            if reasons.is_empty() {
                continue;
            }
            let each: Vec<String> = reasons
                .iter()
                .map(|r| format!("{} ({})", r.because, r.rules.len()))
                .collect();
            lines.push(format!("{label}: {}", each.join(", ")));
        }
        lines
    }

    /// A reason as the reports title it: `not testable (behaviour "input")`, `blocked by
    /// INIT-001`.
    pub fn title(label: &str, because: &str) -> String {
        match label {
            "blocked by" => format!("blocked by {because}"),
            _ => format!("{label} ({because})"),
        }
    }

    /// The three reason lists with their labels, in report order.
    pub fn reason_groups(&self) -> [(&'static str, &[Reason]); 3] {
        [
            ("not applicable", &self.not_applicable),
            ("not testable", &self.not_testable),
            ("blocked by", &self.blocked),
        ]
    }
}

/// One level's part of the headline.
fn level_phrase(l: &LevelScope) -> String {
    let broken = if l.level == "MUST" {
        "failed"
    } else {
        "warned"
    };
    let mut inner = vec![format!("{} checked", l.checked)];
    if l.failed > 0 {
        inner.push(format!("{} {broken}", l.failed));
    }
    if l.passed_in_part > 0 {
        inner.push(format!("{} passed only in part", l.passed_in_part));
    }
    let mut unchecked = Vec::new();
    for (n, what) in [
        (l.not_applicable, "not applicable"),
        (l.not_testable, "not testable"),
        (l.blocked, "blocked"),
        (l.harness_error, "harness error"),
    ] {
        if n > 0 {
            unchecked.push(format!("{n} {what}"));
        }
    }
    let mut text = format!(
        "{}: {} of {} {} passed",
        l.level,
        l.passed,
        l.rules,
        if l.rules == 1 { "rule" } else { "rules" }
    );
    text.push_str(&format!(" ({}", inner.join(", ")));
    if !unchecked.is_empty() {
        text.push_str("; ");
        text.push_str(&unchecked.join(", "));
    }
    text.push(')');
    text
}

/// The rule a row is about (its ID without `/slug`), with `@version` in a run of several.
fn rule_key(row: &CaseResult) -> String {
    let rule = row.info.id.split('/').next().unwrap_or_default();
    match &row.protocol_version {
        Some(version) => format!("{rule}@{version}"),
        None => rule.to_owned(),
    }
}

fn out_of_scope(verdict: Verdict) -> bool {
    matches!(verdict, Verdict::NotApplicable | Verdict::NotTestable)
}

/// The least favourable status a rule's rows support (see [`RuleStatus`]).
pub fn status(rows: &[&CaseResult]) -> RuleStatus {
    let any = |v: &[Verdict]| rows.iter().any(|r| v.contains(&r.verdict));
    if any(&[Verdict::Fail, Verdict::Warn]) {
        RuleStatus::Failed
    } else if any(&[Verdict::HarnessError]) {
        RuleStatus::HarnessError
    } else if any(&[Verdict::Blocked]) {
        RuleStatus::Blocked
    } else if any(&[Verdict::Pass, Verdict::Info]) {
        RuleStatus::Passed
    } else if any(&[Verdict::NotTestable]) {
        RuleStatus::NotTestable
    } else {
        RuleStatus::NotApplicable
    }
}

/// Rules by reason, reasons in order of first appearance, each rule once per reason.
#[derive(Default)]
struct Groups(Vec<Reason>);

impl Groups {
    fn add(&mut self, because: String, rule: &str) {
        let at = match self.0.iter().position(|r| r.because == because) {
            Some(at) => at,
            None => {
                self.0.push(Reason {
                    because,
                    rules: Vec::new(),
                });
                self.0.len() - 1
            }
        };
        if !self.0[at].rules.iter().any(|r| r == rule) {
            self.0[at].rules.push(rule.to_owned());
        }
    }

    /// The reasons, most rules first (ties in order of appearance).
    fn into_reasons(mut self) -> Vec<Reason> {
        self.0.sort_by_key(|r| std::cmp::Reverse(r.rules.len()));
        self.0
    }
}

/// The capability (or version) a not-applicable row names, from the words the AHP and AAP
/// runners use for it; any other reason is given as the row says it.
pub fn not_applicable_because(row: &CaseResult) -> String {
    let why = row.summary.as_str();
    if let Some(at) = why.find("capabilities.") {
        return word_at(&why[at..]);
    }
    if let Some(rest) = why.split(" does not declare ").nth(1) {
        return word_at(rest);
    }
    if let Some(rest) = why.split(" declares ").nth(1) {
        return format!("{} declared", word_at(rest));
    }
    if let Some(rest) = why.split("exists since protocol ").nth(1) {
        return format!("protocol version (rule since {})", word_at(rest));
    }
    if why.contains("does not accept [") {
        return "protocol version (offer refused by the server)".to_owned();
    }
    if let Some(rest) = why.split("a rule of AAP ").nth(1) {
        return format!("rule of AAP {}", rest.split(" only").next().unwrap_or(rest));
    }
    if let Some(rest) = why.split(" at AAP version ").nth(1) {
        return format!("AAP version {} (a rule of other versions)", word_at(rest));
    }
    short(why)
}

/// The profile behaviour or promise a not-testable row needs, from the words the runners
/// use for it; any other reason is given as the row says it.
pub fn not_testable_because(row: &CaseResult) -> String {
    let why = row.summary.trim_start_matches("Not testable: ");
    let why = why.trim_start_matches("not testable: ");
    if let Some(rest) = why.split("no trigger for behaviour ").nth(1) {
        return format!("behaviour {}", quoted(rest));
    }
    if let Some(rest) = why.split("does not promise ").nth(1) {
        return format!("promise {}", quoted(rest));
    }
    if why.contains("(working_directories)") {
        return "working_directories (two the server accepts)".to_owned();
    }
    if let Some(rest) = why.split("the target does not offer `").nth(1) {
        return format!("`{}`", rest.split('`').next().unwrap_or_default());
    }
    if why.contains("did not do what the target profile promises") {
        return "a profile promise the server did not keep".to_owned();
    }
    // An always-on row that saw nothing to judge.
    if why.contains("were seen") || why.starts_with("checked no ") {
        return match why.split(" cases blocked by ").nth(1) {
            Some(rule) => format!("nothing to check: cases blocked by {}", word_at(rule)),
            None if why.contains(" cases blocked (") => {
                "nothing to check: cases blocked".to_owned()
            }
            None => "nothing of its kind was seen".to_owned(),
        };
    }
    short(why)
}

/// The first word of `text` (a capability path or version), without closing punctuation.
fn word_at(text: &str) -> String {
    text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ')' | ':'))
        .next()
        .unwrap_or_default()
        .trim_end_matches('.')
        .to_owned()
}

/// A `"quoted"` name at the start of `text`, quotes kept.
fn quoted(text: &str) -> String {
    match text.strip_prefix('"').and_then(|rest| rest.split_once('"')) {
        Some((name, _)) => format!("\"{name}\""),
        None => word_at(text),
    }
}

/// A free-text reason, cut to keep the groups readable.
fn short(why: &str) -> String {
    super::truncate_chars(why.trim(), 90)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::sample_report;

    fn row(id: &str, level: Level, verdict: Verdict, summary: &str) -> CaseResult {
        let mut row = sample_report().cases[0].clone();
        row.info.id = id.to_owned();
        row.info.level = level;
        row.verdict = verdict;
        row.summary = summary.to_owned();
        row
    }

    fn report(rows: Vec<CaseResult>) -> RunReport {
        let mut report = sample_report();
        report.cases = rows;
        report
    }

    #[test]
    fn the_sample_run_counts_rules_by_level() {
        let scope = Scope::of(&sample_report());
        let must = scope.level(Level::Must);
        // LIFE-001 pass, SUB-004 fail, SUB-012 n/a, LIFE-010 n/t, PENDING-002 blocked,
        // SUB-020 harness error.
        assert_eq!(
            (must.rules, must.checked, must.passed, must.failed),
            (6, 2, 1, 1)
        );
        assert_eq!(
            (
                must.not_applicable,
                must.not_testable,
                must.blocked,
                must.harness_error
            ),
            (1, 1, 1, 1)
        );
        let should = scope.level(Level::Should);
        assert_eq!((should.rules, should.failed, should.passed), (1, 1, 0));
        assert_eq!(
            scope.headline,
            "MUST: 1 of 6 rules passed (2 checked, 1 failed; 1 not applicable, 1 not testable, \
             1 blocked, 1 harness error) · SHOULD: 0 of 1 rule passed (1 checked, 1 warned)"
        );
        assert_eq!(scope.blocked[0].because, "LIFECYCLE-003");
        assert_eq!(scope.blocked[0].rules, ["PENDING-002"]);
    }

    #[test]
    fn a_rule_is_as_good_as_its_least_checked_row() {
        let pass = row("TOOL-001/a", Level::Must, Verdict::Pass, "ok");
        let mut blocked = row("TOOL-001/b", Level::Must, Verdict::Blocked, "blocked");
        blocked.blocked_by = Some("TURN-001".into());
        let untestable = row(
            "TOOL-002",
            Level::Must,
            Verdict::NotTestable,
            "Not testable: the target profile has no trigger for behaviour \"tool-ask\"",
        );
        let partly = row("TOOL-003/x", Level::Must, Verdict::Pass, "ok");
        let partly_nt = row(
            "TOOL-003/y",
            Level::Must,
            Verdict::NotTestable,
            "Not testable: the target profile does not promise \"tool-ask.editable\"",
        );
        let scope = Scope::of(&report(vec![pass, blocked, untestable, partly, partly_nt]));
        let must = scope.level(Level::Must);
        assert_eq!(must.rules, 3);
        assert_eq!((must.passed, must.passed_in_part, must.blocked), (1, 1, 1));
        assert_eq!(must.not_testable, 1);
        assert_eq!(scope.blocked[0].because, "TURN-001");
        assert_eq!(scope.blocked[0].rules, ["TOOL-001"]);
        // Only rules left unchecked are listed under a reason: TOOL-003 passed in part.
        assert_eq!(scope.not_testable.len(), 1);
        assert_eq!(scope.not_testable[0].because, "behaviour \"tool-ask\"");
        assert!(scope
            .headline
            .starts_with("MUST: 1 of 3 rules passed (1 checked, 1 passed only in part; 1 not testable, 1 blocked)"));
    }

    #[test]
    fn reasons_name_the_capability_behaviour_or_promise() {
        let na =
            |s: &str| not_applicable_because(&row("X-1", Level::Must, Verdict::NotApplicable, s));
        let nt = |s: &str| not_testable_because(&row("X-1", Level::Must, Verdict::NotTestable, s));
        assert_eq!(
            na("the agent does not advertise capabilities.multipleChats"),
            "capabilities.multipleChats"
        );
        assert_eq!(
            na("not applicable: agent echo does not declare capabilities.history.full"),
            "capabilities.history.full"
        );
        assert_eq!(
            na("the rule exists since protocol 0.10.0; this run offers 0.9.0"),
            "protocol version (rule since 0.10.0)"
        );
        assert_eq!(
            na("not applicable: a rule of AAP versions 1 and 2 only; the run is at version 3"),
            "rule of AAP versions 1 and 2"
        );
        assert_eq!(
            na("not applicable: no creation streams at AAP version 3"),
            "AAP version 3 (a rule of other versions)"
        );
        assert_eq!(
            nt("Not testable: the target profile has no trigger for behaviour \"input\""),
            "behaviour \"input\""
        );
        assert_eq!(
            nt("Not testable: the target profile does not promise \"long.part-first\""),
            "promise \"long.part-first\""
        );
        assert_eq!(
            nt("Not testable: the target profile names no two working directories the server accepts (working_directories)"),
            "working_directories (two the server accepts)"
        );
        assert_eq!(
            nt("not testable: the target does not offer `tool`"),
            "`tool`"
        );
        assert_eq!(
            nt("Not testable: no responses were seen during the run"),
            "nothing of its kind was seen"
        );
        assert_eq!(
            nt("Not testable: 12 cases blocked by INIT-001, so no responses were seen"),
            "nothing to check: cases blocked by INIT-001"
        );
        assert_eq!(nt("Not testable: something else"), "something else");
    }

    #[test]
    fn several_versions_count_each_rule_per_version() {
        let mut a = row("INIT-001", Level::Must, Verdict::Pass, "ok");
        a.protocol_version = Some("1.0.0".into());
        let mut b = a.clone();
        b.protocol_version = Some("0.9.0".into());
        b.verdict = Verdict::Fail;
        let scope = Scope::of(&report(vec![a, b]));
        let must = scope.level(Level::Must);
        assert_eq!((must.rules, must.passed, must.failed), (2, 1, 1));
        assert!(scope
            .headline
            .ends_with("(each rule counted once per protocol version)"));
    }

    #[test]
    fn an_empty_run_says_so() {
        assert_eq!(Scope::of(&report(vec![])).headline, "no rule was run");
    }
}
