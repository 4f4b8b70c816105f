//! The verdict vocabulary and the run's result model, shared by the runner (which fills
//! it) and the reporters (which render it). Severity derives from the rule's level: a
//! broken MUST is a `Fail`, a broken SHOULD a `Warn`, a deviation from a MAY is `Info`.

use serde::{Deserialize, Serialize};

/// Requirement level of a rule (RULES.md `Lvl`; `MUST*` counts as MUST, in suite files as
/// in RULES.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Level {
    #[serde(alias = "MUST*")]
    Must,
    Should,
    May,
}

impl Level {
    /// The verdict a broken requirement of this level gets.
    pub fn broken(self) -> Verdict {
        match self {
            Level::Must => Verdict::Fail,
            Level::Should => Verdict::Warn,
            Level::May => Verdict::Info,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Must => "MUST",
            Level::Should => "SHOULD",
            Level::May => "MAY",
        }
    }
}

/// Outcome of one case (or one check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    /// A MUST is broken.
    Fail,
    /// A SHOULD is broken.
    Warn,
    /// Recorded behaviour for a MAY or an unspecified point; never fails a run.
    Info,
    /// The server does not advertise the feature, or a different protocol version applies.
    NotApplicable,
    /// The case needs a behaviour the target cannot be driven into. Never a silent pass.
    NotTestable,
    /// The case could not run to its end because a rule it relies on failed (the case's
    /// `blockedBy`); that rule's failure is reported on the rule's own row. Fails the run:
    /// nothing about the case's own rule was shown.
    Blocked,
    /// No verdict was possible because of the harness (bad suite, refused connection…).
    /// Never counted as the server's fault.
    HarnessError,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Warn => "warn",
            Verdict::Info => "info",
            Verdict::NotApplicable => "not-applicable",
            Verdict::NotTestable => "not-testable",
            Verdict::Blocked => "blocked",
            Verdict::HarnessError => "harness-error",
        }
    }

    /// The more severe of two verdicts (used to fold check outcomes into a case verdict).
    pub fn worst(self, other: Verdict) -> Verdict {
        fn rank(v: Verdict) -> u8 {
            match v {
                Verdict::Pass => 0,
                Verdict::NotApplicable => 1,
                Verdict::Info => 2,
                Verdict::NotTestable => 3,
                Verdict::Warn => 4,
                Verdict::Blocked => 5,
                Verdict::Fail => 6,
                Verdict::HarnessError => 7,
            }
        }
        if rank(other) > rank(self) {
            other
        } else {
            self
        }
    }
}

/// The rule ID of a case ID (`TOOL-007/denied` → `TOOL-007`).
pub fn rule_of(case_id: &str) -> &str {
    case_id.split('/').next().unwrap_or(case_id)
}

/// Where a case comes from and what it proves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseInfo {
    /// The RULES.md rule ID (with an optional `/slug` when one rule has several cases).
    pub id: String,
    pub level: Level,
    /// Spec area (the suite file's name, e.g. `lifecycle`).
    pub area: String,
    /// Spec reference, e.g. `docs/specification/lifecycle.md § Initialize`.
    pub spec: String,
    /// The requirement in one sentence.
    pub requirement: String,
    /// What the case does, in one sentence.
    pub does: String,
    /// Suite file and line the case starts at (`builtin` for checks that run on every frame).
    pub source: String,
}

/// One frame of a transcript, as reported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportedFrame {
    /// Connection name within the case (`c1`, `c2`, …).
    pub conn: String,
    /// `sent` or `received`.
    pub direction: String,
    pub at_ms: f64,
    pub text: String,
}

/// Why a case did not pass: requirement → expected → actual → the frames around it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Finding {
    /// Rule the finding is about (the case's own ID, or an always-on check's).
    pub rule: String,
    pub verdict: Verdict,
    pub expected: String,
    pub actual: String,
    /// Suite step (file:line) the finding came from, when there is one.
    pub step: Option<String>,
    /// The last frames before the finding, on the connection(s) involved.
    pub context: Vec<ReportedFrame>,
}

/// The result of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaseResult {
    pub info: CaseInfo,
    pub verdict: Verdict,
    /// One line: what was found, or for a pass, what was looked at.
    pub summary: String,
    pub findings: Vec<Finding>,
    /// For a blocked case: the rule whose failure stopped it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blocked_by: Option<String>,
    /// The protocol version the case's connections offered, in a run of several versions
    /// (`--protocol-version 1.0.0,0.9.0`); absent in a run of one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol_version: Option<String>,
    /// Every frame of every connection of the case, in time order.
    pub transcript: Vec<ReportedFrame>,
    pub duration_ms: f64,
    /// The command that re-runs just this case.
    pub rerun: String,
}

impl CaseResult {
    /// The row's name in a report: the case ID, or `ID@version` in a run of several protocol
    /// versions, where each case has a row per version (the name failure lists, baselines,
    /// JUnit tests and HTML anchors use).
    pub fn key(&self) -> String {
        match &self.protocol_version {
            Some(version) => format!("{}@{version}", self.info.id),
            None => self.info.id.clone(),
        }
    }
}

/// Counts per verdict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tally {
    pub pass: usize,
    pub fail: usize,
    pub warn: usize,
    pub info: usize,
    pub not_applicable: usize,
    pub not_testable: usize,
    /// Cases stopped by the failure of a rule they rely on.
    #[serde(default)]
    pub blocked: usize,
    pub harness_error: usize,
    /// Failures and warnings accepted by the baseline file.
    pub baselined: usize,
}

impl Tally {
    pub fn add(&mut self, verdict: Verdict) {
        match verdict {
            Verdict::Pass => self.pass += 1,
            Verdict::Fail => self.fail += 1,
            Verdict::Warn => self.warn += 1,
            Verdict::Info => self.info += 1,
            Verdict::NotApplicable => self.not_applicable += 1,
            Verdict::NotTestable => self.not_testable += 1,
            Verdict::Blocked => self.blocked += 1,
            Verdict::HarnessError => self.harness_error += 1,
        }
    }

    pub fn total(&self) -> usize {
        self.pass
            + self.fail
            + self.warn
            + self.info
            + self.not_applicable
            + self.not_testable
            + self.blocked
            + self.harness_error
    }
}

/// A whole run, as written to `report.json` (schema: `schemas/report.schema.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunReport {
    /// Report format version.
    pub format: u32,
    pub tool: String,
    pub tool_version: String,
    /// Target URL, or `builtin` for the in-process reference host.
    pub target: String,
    /// Fault injected into the built-in host, if any.
    pub fault: Option<String>,
    /// The protocol version the run's connections offered (comma-separated when several).
    pub protocol_version: String,
    pub started_at: String,
    pub duration_ms: f64,
    /// Whether the run was cut short (Ctrl-C); the cases not run are absent.
    pub interrupted: bool,
    /// The slice of the catalog this run took (`2/4`), when sharded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<String>,
    /// The cases and rules the run selected, as options (`--filter TOOL-* --level MUST`),
    /// when not the whole catalog.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selection: Option<String>,
    /// Whether warnings fail the run (`--strict`).
    pub strict: bool,
    pub tally: Tally,
    pub cases: Vec<CaseResult>,
    /// Cases listed in the baseline that now pass (stale entries fail the run).
    pub stale_baseline: Vec<String>,
    /// Failures and blocked cases not listed in the baseline.
    pub unexpected_failures: Vec<String>,
}

impl RunReport {
    /// A report of `cases` by this tool against `target`, started now, neither interrupted,
    /// sharded nor strict, without a fault: callers set what differs. The tally and the
    /// baseline lists are `rows::reconcile`'s to fill.
    pub fn of(target: String, protocol_version: String, cases: Vec<CaseResult>) -> RunReport {
        RunReport {
            format: 1,
            tool: "ahpspec".into(),
            tool_version: env!("CARGO_PKG_VERSION").into(),
            target,
            fault: None,
            protocol_version,
            started_at: format!("{:.0}", jiff::Timestamp::now()),
            duration_ms: 0.0,
            interrupted: false,
            shard: None,
            selection: None,
            strict: false,
            tally: Tally::default(),
            cases,
            stale_baseline: Vec::new(),
            unexpected_failures: Vec::new(),
        }
    }

    /// Whether the run conforms: 0 = conforming, 1 = conformance failures.
    pub fn conforming(&self) -> bool {
        self.unexpected_failures.is_empty() && self.stale_baseline.is_empty()
    }

    /// The rules whose rows failed or warned (a case's rule without its `/slug`), with the
    /// protocol version in a run of several: what a fault breaks, for comparing runs.
    pub fn broken_rules(&self) -> std::collections::BTreeSet<String> {
        self.cases
            .iter()
            .filter(|row| matches!(row.verdict, Verdict::Fail | Verdict::Warn))
            .map(|row| {
                let rule = rule_of(&row.info.id);
                match &row.protocol_version {
                    Some(version) => format!("{rule}@{version}"),
                    None => rule.to_owned(),
                }
            })
            .collect()
    }
}
