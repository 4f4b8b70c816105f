//! A run's rows, for either protocol and whatever made them (the AHP runner, the AAP
//! runner, the proxy, `check`, the fuzzers): each case's row told as it finishes
//! ([`Event`]), the always-on rows made at the end ([`AlwaysOnRows`]), the report that
//! holds them, and the baseline that decides which failures are expected ([`reconcile`]).

mod always_on;
pub mod baseline;

use std::collections::HashMap;
use std::time::{Duration, Instant};

pub use always_on::AlwaysOnRows;

use crate::catalog::Selection;
use crate::checks::AlwaysOnRule;
use crate::verdict::{CaseResult, RunReport, Tally, Verdict};
use baseline::Baseline;

/// What a runner reports while it works.
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

/// The rows of a run so far: finished case rows (each told to the sink as it comes), and
/// what the always-on checks found, whose rows are made at the end.
#[derive(Debug)]
pub struct Rows {
    results: Vec<CaseResult>,
    pub always_on: AlwaysOnRows,
    total: usize,
}

impl Rows {
    /// The rows of a run of `total` rows (cases and always-on rules).
    pub fn new(total: usize) -> Rows {
        Rows {
            results: Vec::new(),
            always_on: AlwaysOnRows::default(),
            total,
        }
    }

    /// Keeps the row of a case that finished (ran, or was stopped before it could) and
    /// tells the sink.
    pub fn case(&mut self, result: CaseResult, sink: &mut dyn EventSink) {
        self.always_on.case_finished(&result);
        self.finished(result, sink);
    }

    fn finished(&mut self, result: CaseResult, sink: &mut dyn EventSink) {
        sink.event(&Event::CaseFinished {
            result: Box::new(result.clone()),
            done: self.results.len() + 1,
            total: self.total,
        });
        self.results.push(result);
    }

    /// How many rows are kept so far.
    pub fn len(&self) -> usize {
        self.results.len()
    }

    pub fn is_empty(&self) -> bool {
        self.results.is_empty()
    }

    /// Puts the case rows in the order of `ids` (the selection's), not of completion.
    pub fn order_as<'a>(&mut self, ids: impl IntoIterator<Item = &'a str>) {
        let order: HashMap<&str, usize> =
            ids.into_iter().enumerate().map(|(i, id)| (id, i)).collect();
        self.results
            .sort_by_key(|r| order.get(r.info.id.as_str()).copied().unwrap_or(usize::MAX));
    }

    /// One row per always-on rule of `rules`, over everything the run took in, each told to
    /// the sink (`over`: see [`AlwaysOnRows::row`]).
    pub fn always_on_rows(
        &mut self,
        rules: &[&AlwaysOnRule],
        over: &str,
        plan: &RunPlan,
        sink: &mut dyn EventSink,
    ) {
        for rule in rules {
            let row = self.always_on.row(rule, over, plan.rerun(rule.id));
            self.finished(row, sink);
        }
    }

    pub fn into_results(self) -> Vec<CaseResult> {
        self.results
    }
}

/// When a run started: the wall clock for the report, the monotonic clock for its duration.
#[derive(Debug, Clone)]
pub struct Started {
    at: String,
    instant: Instant,
}

impl Started {
    pub fn now() -> Started {
        Started {
            at: format!("{:.0}", jiff::Timestamp::now()),
            instant: Instant::now(),
        }
    }
}

/// How a run goes, whatever its protocol: which cases, how many at a time, how long an
/// expectation waits, how a case is re-run, and what the report says of the target.
#[derive(Debug, Clone)]
pub struct RunPlan {
    pub selection: Selection,
    /// How long one expectation waits.
    pub timeout: Duration,
    /// Cases run at once (each on its own connections and sessions).
    pub jobs: usize,
    /// The command prefix that re-runs a case (`--filter ID` is appended).
    pub rerun_prefix: String,
    /// The target as reports name it (`builtin` for a built-in server).
    pub target_label: String,
    /// The faults of the built-in server, if any.
    pub fault: Option<String>,
    /// Whether warnings fail the run.
    pub strict: bool,
}

impl RunPlan {
    /// The command that re-runs the case (or always-on rule) `id`.
    pub fn rerun(&self, id: &str) -> String {
        format!("{} --filter {id}", self.rerun_prefix)
    }

    /// The report of `rows`, of a run at `protocol_version` that started at `started` (and
    /// was `interrupted` or not): the baseline is not applied yet ([`reconcile`] does,
    /// once the run is whole).
    pub fn report(
        &self,
        protocol_version: String,
        started: &Started,
        interrupted: bool,
        rows: Vec<CaseResult>,
    ) -> RunReport {
        RunReport {
            fault: self.fault.clone(),
            started_at: started.at.clone(),
            duration_ms: started.instant.elapsed().as_secs_f64() * 1000.0,
            interrupted,
            shard: self.selection.shard.map(|s| s.to_string()),
            selection: self.selection.choice(),
            strict: self.strict,
            ..RunReport::of(self.target_label.clone(), protocol_version, rows)
        }
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
