//! The stateful fuzzer: seeded random operation sequences against a server (model-based:
//! valid for the observed state most of the time, plus stale and wrong-state operations
//! whose correct answer is a rejection, and only what the target profile can drive), every
//! check of the runner after every step, campaigns that collect distinct findings by rule
//! ([`findings`]: each rule's first failing sequence shrunk once), and replayable traces.

pub mod exec;
pub mod findings;
pub mod frames;
pub mod model;
pub mod ops;
pub mod shaped;
pub mod trace;

use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use tokio::sync::watch;

pub use exec::{execute, ExecConfig, ExecError, Execution, Failure, Target};
pub use findings::{report, Excluded, Findings, ReportInput, Seen};
pub use ops::{Op, Repertoire};

use crate::engine::baseline::Baseline;

/// Budgets and knobs of a fuzz run.
#[derive(Debug, Clone)]
pub struct FuzzOptions {
    pub target: Target,
    pub exec: ExecConfig,
    pub seed: u64,
    /// Stop after this many sequences (`None`: only the duration limits).
    pub cases: Option<u64>,
    pub duration: Duration,
    /// Cap on shrinking; the smallest failing sequence found by then is reported.
    pub shrink_time: Duration,
    /// Longest generated sequence.
    pub max_len: usize,
    /// Rules whose failures are accepted: counted, never shrunk, not failures of the run.
    pub baseline: Baseline,
    /// Stop once this many distinct rules the baseline does not list are found (`None`:
    /// only the budget stops the campaign).
    pub stop_after: Option<usize>,
    /// Where the campaign reports how far it is after each sequence (a progress line reads
    /// it); `None`: nobody listens.
    pub progress: Option<watch::Sender<FuzzProgress>>,
}

/// How far a campaign is.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FuzzProgress {
    pub sequences: u64,
    pub operations: usize,
    /// Distinct rules found failing so far (baselined ones included).
    pub rules: usize,
}

/// A failure, shrunk.
#[derive(Debug, Clone)]
pub struct Found<T> {
    pub seed: u64,
    /// Which generated sequence failed (0-based).
    pub case: u64,
    pub original_len: usize,
    pub shrink_steps: usize,
    /// Whether shrinking ran out of time before it was done.
    pub shrink_capped: bool,
    /// How long shrinking took.
    pub shrink_elapsed: Duration,
    pub ops: Vec<T>,
    pub execution: Execution,
    pub failure: Failure,
}

/// What a fuzz run did.
#[derive(Debug, Clone)]
pub struct FuzzOutcome<T> {
    pub seed: u64,
    /// Generated sequences run (shrinking runs are not counted).
    pub cases: u64,
    /// Client operations that reached the server (dispatches and protocol probes).
    pub operations: usize,
    pub elapsed: Duration,
    /// Distinct failures by rule.
    pub findings: Findings<T>,
    /// Operation kinds never generated because the target profile lacks their behaviours.
    pub left_out: Vec<String>,
    pub interrupted: bool,
}

/// The campaign seed of shard `shard` of a campaign seeded `seed`: distinct per shard, and
/// the same for the same command line (splitmix64 of the seed and the shard index).
pub fn shard_seed(seed: u64, shard: crate::engine::Shard) -> u64 {
    let mut z = seed.wrapping_add((shard.index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Shard `shard`'s share of `total` sequences: the remainder goes to the first shards, so
/// the shares add up to `total`.
pub fn shard_cases(total: u64, shard: crate::engine::Shard) -> u64 {
    let count = shard.count as u64;
    let index = shard.index as u64 - 1;
    total / count + u64::from(index < total % count)
}

fn rng(seed: u64) -> TestRng {
    let mut bytes = [0u8; 32];
    bytes[..8].copy_from_slice(&seed.to_le_bytes());
    bytes[8..16].copy_from_slice(&(!seed).to_le_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &bytes)
}

/// Whether two failures are the same bug (same rule).
fn same(a: &Failure, b: &Failure) -> bool {
    a.rule == b.rule
}

/// Model mode: random operation sequences (see [`ops`]).
pub async fn fuzz(
    options: &FuzzOptions,
    interrupt: watch::Receiver<bool>,
) -> Result<FuzzOutcome<Op>, ExecError> {
    let run = async |ops: Vec<Op>| execute(&ops, &options.target, &options.exec).await;
    let repertoire = Repertoire::of(&options.exec.profile);
    let strategy = ops::sequence(options.max_len, &repertoire);
    let mut outcome = search(options, strategy, run, interrupt).await?;
    outcome.left_out = repertoire.left_out();
    Ok(outcome)
}

/// Runs generated sequences until the budget is spent (or `stop_after` distinct rules are
/// found). The first failure of each rule is shrunk (proptest's walk: simplify while the
/// failure persists, complicate when a candidate passes, stop when neither moves or the
/// shrink cap is reached); later failures of a found rule, and failures of baselined rules,
/// are only counted.
pub async fn search<T: Clone + std::fmt::Debug>(
    options: &FuzzOptions,
    strategy: impl Strategy<Value = Vec<T>>,
    run: impl AsyncFn(Vec<T>) -> Result<Execution, ExecError>,
    interrupt: watch::Receiver<bool>,
) -> Result<FuzzOutcome<T>, ExecError> {
    let started = Instant::now();
    let mut runner = TestRunner::new_with_rng(Config::default(), rng(options.seed));
    let mut outcome = FuzzOutcome {
        seed: options.seed,
        cases: 0,
        operations: 0,
        elapsed: Duration::ZERO,
        findings: Findings::default(),
        left_out: Vec::new(),
        interrupted: false,
    };
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
        if options.cases.is_some_and(|n| outcome.cases >= n)
            || started.elapsed() >= options.duration
        {
            break;
        }
        let Ok(mut tree) = strategy.new_tree(&mut runner) else {
            break;
        };
        let ops = tree.current();
        let execution = run(ops.clone()).await?;
        outcome.cases += 1;
        outcome.operations += execution.operations;
        let Some(failure) = execution.failure.clone() else {
            continue;
        };
        if outcome.findings.see(&failure, &options.baseline) != Seen::First {
            continue;
        }
        let found = Found {
            seed: options.seed,
            case: outcome.cases - 1,
            original_len: ops.len(),
            shrink_steps: 0,
            shrink_capped: false,
            shrink_elapsed: Duration::ZERO,
            ops,
            execution,
            failure,
        };
        let found = shrink(options, &mut tree, found, &run, &interrupt).await?;
        outcome.findings.found.push(found);
        if options
            .stop_after
            .is_some_and(|n| outcome.findings.found.len() >= n)
        {
            break;
        }
    }
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}

/// Shrinks `found` (the current value of `tree`) while the same rule keeps failing, for at
/// most the shrink cap.
async fn shrink<T: Clone, V: ValueTree<Value = Vec<T>>>(
    options: &FuzzOptions,
    tree: &mut V,
    mut found: Found<T>,
    run: &impl AsyncFn(Vec<T>) -> Result<Execution, ExecError>,
    interrupt: &watch::Receiver<bool>,
) -> Result<Found<T>, ExecError> {
    let started = Instant::now();
    let deadline = started + options.shrink_time;
    'shrinking: while tree.simplify() {
        loop {
            if Instant::now() >= deadline || *interrupt.borrow() {
                found.shrink_capped = true;
                break 'shrinking;
            }
            let candidate = tree.current();
            let attempt = run(candidate.clone()).await?;
            found.shrink_steps += 1;
            match &attempt.failure {
                Some(failure) if same(failure, &found.failure) => {
                    found.failure = failure.clone();
                    found.ops = candidate;
                    found.execution = attempt;
                    break;
                }
                _ if !tree.complicate() => break 'shrinking,
                _ => {}
            }
        }
    }
    found.shrink_elapsed = started.elapsed();
    Ok(found)
}

/// Re-runs a model-mode sequence once; returns the failure when it is the same bug.
pub async fn reproduce(
    ops: &[Op],
    expected: &Failure,
    target: &Target,
    exec: &ExecConfig,
) -> Result<(Option<Failure>, Execution), ExecError> {
    let run = execute(ops, target, exec).await?;
    let again = run.failure.clone().filter(|f| same(f, expected));
    Ok((again, run))
}

/// Replays a saved trace (either mode); the failure when the same bug shows again.
pub async fn replay_trace(
    trace: &trace::Trace,
    target: &Target,
    exec: &ExecConfig,
) -> Result<Option<Failure>, ExecError> {
    let run = if trace.mode == "frames" {
        let mutations: Vec<frames::Mutation> = serde_json::from_value(trace.ops.clone())
            .map_err(|e| ExecError::Setup(format!("trace mutations: {e}")))?;
        frames::execute_frames(&mutations, target, exec).await?
    } else {
        let ops: Vec<Op> = serde_json::from_value(trace.ops.clone())
            .map_err(|e| ExecError::Setup(format!("trace operations: {e}")))?;
        execute(&ops, target, exec).await?
    };
    Ok(run.failure.filter(|f| same(f, &trace.failure)))
}

/// The failure as a person reads it: rule → expected → actual → shrunk sequence.
pub fn render_found<T: serde::Serialize>(found: &Found<T>) -> String {
    let mut out = format!(
        "FOUND {} after operation {} (seed {}, sequence {}; shrunk from {} to {} operations in {} steps{})\n  Expected: {}\n    Actual: {}\n  Sequence:\n",
        found.failure.rule,
        found.failure.op_index.map_or("-".into(), |i| (i + 1).to_string()),
        found.seed,
        found.case,
        found.original_len,
        found.ops.len(),
        found.shrink_steps,
        if found.shrink_capped { ", shrinking capped" } else { "" },
        found.failure.expected,
        found.failure.actual,
    );
    for (index, op) in found.ops.iter().enumerate() {
        out.push_str(&format!(
            "    {:>3}. {}\n",
            index + 1,
            serde_json::to_string(op).unwrap_or_default()
        ));
    }
    out
}

#[cfg(test)]
mod shard_tests {
    use super::{shard_cases, shard_seed};
    use crate::engine::Shard;

    #[test]
    fn shards_get_distinct_seeds_and_split_the_cases() {
        let shards: Vec<Shard> = (1..=4).map(|index| Shard { index, count: 4 }).collect();
        let seeds: std::collections::BTreeSet<u64> =
            shards.iter().map(|s| shard_seed(42, *s)).collect();
        assert_eq!(seeds.len(), 4);
        assert_eq!(shard_seed(42, shards[1]), shard_seed(42, shards[1]));
        assert_ne!(shard_seed(42, shards[1]), shard_seed(43, shards[1]));
        let split: Vec<u64> = shards.iter().map(|s| shard_cases(10, *s)).collect();
        assert_eq!(split, [3, 3, 2, 2]);
        assert_eq!(shards.iter().map(|s| shard_cases(3, *s)).sum::<u64>(), 3);
    }
}
