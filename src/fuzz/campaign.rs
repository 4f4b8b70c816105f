//! The campaign loop both modes share: generated sequences until the budget is spent, each
//! rule's first failure shrunk, and the campaign's end when nothing more can be learnt (the
//! target gone, every sequence failing at set-up, the harness unable to go on) — with what
//! was found kept, so its report is still written.

use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, TestRunner};
use tokio::sync::watch;

use super::exec::{ExecError, Execution, Failure};
use super::findings::Findings;
use super::guidance::StateCoverage;
use super::{rng, same, Found, FuzzOptions, FuzzOutcome, FuzzProgress, Seen};
use crate::checks::Rule;

/// Consecutive sequences failing at set-up after which the campaign stops: nothing past
/// the set-up can be tested.
const SETUP_FAILURES_TO_STOP: u32 = 3;

/// Why a campaign ended before its budget was spent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stopped {
    /// The target no longer accepts connections (the server died): the error.
    TargetGone(String),
    /// Every sequence fails at set-up on this rule (a refused `initialize`).
    SetupFails(String),
    /// The harness could not go on: the error.
    Harness(String),
}

impl std::fmt::Display for Stopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Stopped::TargetGone(error) => {
                write!(f, "the target no longer accepts connections ({error})")
            }
            Stopped::SetupFails(rule) => write!(
                f,
                "every sequence fails at set-up on {rule}: nothing past it can be tested"
            ),
            Stopped::Harness(error) => write!(f, "the harness could not go on: {error}"),
        }
    }
}

impl Stopped {
    /// Whether the harness, not the server, ended the campaign.
    pub fn is_harness_error(&self) -> bool {
        matches!(self, Stopped::Harness(_))
    }

    fn of(error: ExecError) -> Stopped {
        match error {
            ExecError::Unreachable(error) => Stopped::TargetGone(error),
            other => Stopped::Harness(other.to_string()),
        }
    }
}

/// The part of `ops` that ran: everything up to the operation the failure was found at
/// (the later ones never reached the server), nothing for a set-up failure.
fn ran<T: Clone>(ops: &[T], execution: &Execution) -> Vec<T> {
    let Some(failure) = &execution.failure else {
        return ops.to_vec();
    };
    if execution.at_setup {
        return Vec::new();
    }
    match failure.op_index {
        Some(index) if index < ops.len() => ops[..=index].to_vec(),
        _ => ops.to_vec(),
    }
}

/// A sequence that ran to its end.
struct Ran<T> {
    ops: Vec<T>,
    execution: Execution,
}

/// Runs generated sequences until the budget is spent (or `stop_after` distinct rules are
/// found, or nothing more can be learnt). The first failure of each rule is shrunk
/// (proptest's walk: simplify while the failure persists, complicate when a candidate
/// passes, stop when neither moves or the shrink cap or the campaign's deadline is
/// reached); later failures of a found rule, and failures of baselined rules, are only
/// counted. Every rule seen failing is made known to the executions
/// ([`super::ExecConfig::known`]). The error only when not one sequence could run.
pub async fn search<T: Clone + std::fmt::Debug, S: Strategy<Value = Vec<T>>>(
    options: &FuzzOptions,
    strategy: impl Fn(&StateCoverage) -> S,
    run: impl AsyncFn(Vec<T>, Instant) -> Result<Execution, ExecError>,
    interrupt: watch::Receiver<bool>,
) -> Result<FuzzOutcome<T>, ExecError> {
    let started = Instant::now();
    let deadline = started + options.duration;
    let mut runner = TestRunner::new_with_rng(Config::default(), rng(options.seed));
    let mut outcome = FuzzOutcome {
        seed: options.seed,
        cases: 0,
        operations: 0,
        elapsed: Duration::ZERO,
        shrinking: Duration::ZERO,
        shrink_runs: 0,
        shrink_operations: 0,
        findings: Findings::default(),
        left_out: Vec::new(),
        coverage: StateCoverage::default(),
        interrupted: false,
        stopped: None,
        cut_off: false,
    };
    let mut setup_failures = 0;
    let mut last: Option<Ran<T>> = None;
    loop {
        if let Some(progress) = &options.progress {
            progress.send_replace(FuzzProgress {
                sequences: outcome.cases,
                operations: outcome.operations,
                rules: outcome.findings.failing.len(),
            });
        }
        if *interrupt.borrow() {
            outcome.interrupted = true;
            break;
        }
        if options.cases.is_some_and(|n| outcome.cases >= n) || Instant::now() >= deadline {
            break;
        }
        // The generator is weighed anew for every sequence by what the campaign has seen.
        let Ok(mut tree) = strategy(&outcome.coverage).new_tree(&mut runner) else {
            break;
        };
        let ops = tree.current();
        let execution = match run(ops.clone(), deadline).await {
            Ok(execution) => execution,
            Err(error) if outcome.cases == 0 && outcome.findings.failing.is_empty() => {
                return Err(error)
            }
            Err(error) => {
                let stopped = Stopped::of(error);
                if let (Stopped::TargetGone(why), Some(last)) = (&stopped, last.take()) {
                    let died = died_after(options, &mut outcome, last, why);
                    outcome.findings.found.extend(died);
                }
                outcome.stopped = Some(stopped);
                break;
            }
        };
        outcome.operations += execution.operations;
        outcome.coverage.record(&execution.seen);
        if execution.cut_off {
            outcome.cut_off = true;
            break;
        }
        outcome.cases += 1;
        setup_failures = if execution.at_setup {
            setup_failures + 1
        } else {
            0
        };
        if setup_failures >= SETUP_FAILURES_TO_STOP {
            let rule = execution
                .failure
                .as_ref()
                .map_or("(excluded)", |f| f.rule.id());
            outcome.stopped = Some(Stopped::SetupFails(rule.to_owned()));
        }
        let Some(failure) = execution.failure.clone() else {
            last = Some(Ran { ops, execution });
            if outcome.stopped.is_some() {
                break;
            }
            continue;
        };
        let seen = outcome.findings.see(&failure, &options.baseline);
        options.exec.known.insert(failure.rule);
        if seen == Seen::First {
            let found = Found {
                seed: options.seed,
                case: outcome.cases - 1,
                original_len: ops.len(),
                shrink_steps: 0,
                shrink_capped: false,
                not_shrunk: execution
                    .at_setup
                    .then(|| "found at set-up, before any operation".to_owned()),
                shrink_elapsed: Duration::ZERO,
                ops: ran(&ops, &execution),
                execution: execution.clone(),
                failure,
            };
            let (found, died) = if execution.at_setup {
                (found, None)
            } else {
                let walk = Walk {
                    tree: &mut tree,
                    run: &run,
                    interrupt: &interrupt,
                    campaign_deadline: deadline,
                };
                shrink(options, walk, found, &mut outcome).await
            };
            outcome.findings.found.push(found);
            outcome.findings.found.extend(died);
        }
        last = Some(Ran { ops, execution });
        let enough = options
            .stop_after
            .is_some_and(|n| outcome.findings.found.len() >= n);
        if enough || outcome.stopped.is_some() {
            break;
        }
    }
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}

/// The target stopped accepting connections between sequences: the last sequence that ran
/// is the one that killed it (FUZZ-001), unless that is known already. Nothing can be
/// re-run to shrink it.
fn died_after<T: Clone>(
    options: &FuzzOptions,
    outcome: &mut FuzzOutcome<T>,
    last: Ran<T>,
    why: &str,
) -> Option<Found<T>> {
    let failure = Failure {
        rule: Rule::Fuzz001,
        expected: "the server still accepts connections after the sequence".into(),
        actual: format!("a new connection for the next sequence: {why}"),
        op_index: None,
    };
    // Already found (the sequence saw the server die): nothing new to count.
    if outcome.findings.failing(failure.rule) > 0
        || outcome.findings.see(&failure, &options.baseline) != Seen::First
    {
        return None;
    }
    Some(Found {
        seed: options.seed,
        case: outcome.cases - 1,
        original_len: last.ops.len(),
        shrink_steps: 0,
        shrink_capped: false,
        not_shrunk: Some("the target no longer accepts connections".into()),
        shrink_elapsed: Duration::ZERO,
        ops: last.ops,
        execution: Execution {
            failure: Some(failure.clone()),
            ..last.execution
        },
        failure,
    })
}

/// What shrinking walks: the generated value's tree, how a candidate runs, the interrupt,
/// and the campaign's deadline.
struct Walk<'a, V, R> {
    tree: &'a mut V,
    run: &'a R,
    interrupt: &'a watch::Receiver<bool>,
    campaign_deadline: Instant,
}

/// Shrinks `found` (the current value of the walk's tree) while the same rule keeps failing, for at
/// most the shrink cap and never past the campaign's deadline. A candidate that cannot run
/// (the target gone) ends shrinking and the campaign: the sequence run before it killed the
/// target (the second finding, FUZZ-001, unless known already).
async fn shrink<T: Clone, V: ValueTree<Value = Vec<T>>, R>(
    options: &FuzzOptions,
    walk: Walk<'_, V, R>,
    mut found: Found<T>,
    outcome: &mut FuzzOutcome<T>,
) -> (Found<T>, Option<Found<T>>)
where
    R: AsyncFn(Vec<T>, Instant) -> Result<Execution, ExecError>,
{
    let Walk {
        tree,
        run,
        interrupt,
        campaign_deadline,
    } = walk;
    let started = Instant::now();
    let deadline = (started + options.shrink_time).min(campaign_deadline);
    // The sequence that ran last: the one that killed the target, if it dies.
    let mut last = Ran {
        ops: found.ops.clone(),
        execution: found.execution.clone(),
    };
    let mut died = None;
    'shrinking: while tree.simplify() {
        loop {
            if Instant::now() >= deadline || *interrupt.borrow() {
                found.shrink_capped = true;
                break 'shrinking;
            }
            let candidate = tree.current();
            let attempt = match run(candidate.clone(), deadline).await {
                Ok(attempt) => attempt,
                Err(error) => {
                    let stopped = Stopped::of(error);
                    found.not_shrunk = Some(stopped.to_string());
                    if let Stopped::TargetGone(why) = &stopped {
                        died = died_after(options, outcome, last, why);
                    }
                    outcome.stopped = Some(stopped);
                    break 'shrinking;
                }
            };
            last = Ran {
                ops: candidate.clone(),
                execution: attempt.clone(),
            };
            outcome.shrink_runs += 1;
            outcome.shrink_operations += attempt.operations;
            if attempt.cut_off {
                found.shrink_capped = true;
                break 'shrinking;
            }
            found.shrink_steps += 1;
            match &attempt.failure {
                Some(failure) if same(failure, &found.failure) => {
                    found.failure = failure.clone();
                    found.ops = ran(&candidate, &attempt);
                    found.execution = attempt;
                    break;
                }
                _ if !tree.complicate() => break 'shrinking,
                _ => {}
            }
        }
    }
    found.shrink_elapsed = started.elapsed();
    outcome.shrinking += found.shrink_elapsed;
    (found, died)
}
