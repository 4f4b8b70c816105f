//! The stateful fuzzer: seeded random operation sequences against a server (model-based:
//! valid for the observed state most of the time, plus stale and wrong-state operations
//! whose correct answer is a rejection, and only what the target profile can drive), every
//! check of the runner after every step, campaigns that collect distinct findings by rule
//! ([`findings`]: each rule's first failing sequence shrunk once), and replayable traces.

mod campaign;
pub mod coverage;
pub mod exec;
pub mod findings;
pub mod frames;
pub mod generate;
pub mod guidance;
pub mod mixed;
pub mod model;
pub mod ops;
pub mod probes;
mod regression;
pub mod shaped;
pub mod trace;

use std::time::Duration;

use proptest::test_runner::{RngAlgorithm, TestRng};
use tokio::sync::watch;

pub use campaign::{search, Stopped};
pub use exec::{execute, execute_until, ExecConfig, ExecError, Execution, Failure, Target};
pub use findings::{report, Excluded, Findings, Known, ReportInput, Seen};
pub use generate::Repertoire;
pub use ops::Op;

use crate::rows::baseline::Baseline;

/// Budgets and knobs of a fuzz run.
#[derive(Debug, Clone)]
pub struct FuzzOptions {
    pub target: Target,
    pub exec: ExecConfig,
    pub seed: u64,
    /// Stop after this many sequences (`None`: only the duration limits).
    pub cases: Option<u64>,
    /// How long the whole campaign may take, shrinking included: a sequence still running
    /// at the end is cut off (and not counted), and shrinking stops there.
    pub duration: Duration,
    /// Cap on shrinking each rule's first failure (within the duration); the smallest
    /// failing sequence found by then is reported.
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
    /// Whether the generator weighs operation kinds by the states they have not met yet
    /// (the default) or keeps their base weights.
    pub uniform: bool,
}

impl FuzzOptions {
    /// The bias of the next sequence, given the coverage so far.
    pub fn bias(&self, coverage: &guidance::StateCoverage) -> guidance::Bias {
        if self.uniform {
            guidance::Bias::Uniform
        } else {
            guidance::Bias::toward_unseen(coverage)
        }
    }
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
    /// Why the sequence was not shrunk (further) when time was not the reason: found at
    /// set-up (no operation involved), or the target gone (nothing can be re-run).
    pub not_shrunk: Option<String>,
    /// How long shrinking took.
    pub shrink_elapsed: Duration,
    pub ops: Vec<T>,
    pub execution: Execution,
    pub failure: Failure,
}

impl<T> Found<T> {
    /// How the sequence came to its length: shrunk (in how many steps), or why not.
    pub fn shrinking(&self) -> String {
        match &self.not_shrunk {
            Some(why) => format!(
                "{} of {} operations ran; not shrunk: {why}",
                self.ops.len(),
                self.original_len
            ),
            None => format!(
                "shrunk from {} to {} operations in {} steps{}",
                self.original_len,
                self.ops.len(),
                self.shrink_steps,
                if self.shrink_capped {
                    ", shrinking capped"
                } else {
                    ""
                }
            ),
        }
    }
}

/// What a fuzz run did.
#[derive(Debug, Clone)]
pub struct FuzzOutcome<T> {
    pub seed: u64,
    /// Generated sequences run to their end (shrinking runs are not counted, nor a
    /// sequence cut off at the deadline).
    pub cases: u64,
    /// Client operations of those sequences that reached the server (dispatches, protocol
    /// probes, frames).
    pub operations: usize,
    /// The whole campaign, shrinking included.
    pub elapsed: Duration,
    /// The part of `elapsed` spent shrinking, the sequences it ran, and their operations.
    pub shrinking: Duration,
    pub shrink_runs: u64,
    pub shrink_operations: usize,
    /// Distinct failures by rule.
    pub findings: Findings<T>,
    /// Operation kinds never generated because the target profile lacks their behaviours.
    pub left_out: Vec<String>,
    /// Protocol-state coverage: the (state, operation) pairs the sequences met, with the
    /// host's responses ([`guidance`]).
    pub coverage: guidance::StateCoverage,
    pub interrupted: bool,
    /// Why the campaign ended before its budget was spent, when something other than an
    /// interrupt or `stop_after` ended it.
    pub stopped: Option<Stopped>,
    /// Whether a sequence was still running at the deadline (cut off, not counted).
    pub cut_off: bool,
}

impl<T> FuzzOutcome<T> {
    /// Operations per second over the sequences' own time (shrinking excluded).
    pub fn rate(&self) -> f64 {
        let running = self.elapsed.saturating_sub(self.shrinking);
        self.operations as f64 / running.as_secs_f64().max(1e-9)
    }
}

/// The campaign seed of shard `shard` of a campaign seeded `seed`: distinct per shard, and
/// the same for the same command line (splitmix64 of the seed and the shard index).
pub fn shard_seed(seed: u64, shard: crate::catalog::Shard) -> u64 {
    crate::catalog::derive_seed(seed, shard.index as u64)
}

/// Shard `shard`'s share of `total` sequences: the remainder goes to the first shards, so
/// the shares add up to `total`.
pub fn shard_cases(total: u64, shard: crate::catalog::Shard) -> u64 {
    shard.share(total)
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
    let run = async |ops: Vec<Op>, deadline| {
        execute_until(&ops, &options.target, &options.exec, Some(deadline)).await
    };
    let repertoire = Repertoire::of(&options.exec.profile)
        .with_cases(options.exec.case_ids(options.target.serves_workspaces()));
    let strategy = |coverage: &guidance::StateCoverage| {
        let biased = repertoire.biased(options.bias(coverage));
        generate::sequence(options.max_len, &biased)
    };
    let mut outcome = search(options, strategy, run, interrupt).await?;
    outcome.left_out = repertoire.left_out();
    outcome
        .coverage
        .operations
        .extend(generate::kinds(&repertoire));
    Ok(outcome)
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

/// What replaying a trace gave.
#[derive(Debug, Clone)]
pub struct Replayed {
    /// The failure, when the same bug showed again.
    pub failure: Option<Failure>,
    /// The failure of another rule the replay stopped at instead (the bug it found first
    /// now, or one that hides the trace's): the sequence did not run cleanly.
    pub instead: Option<Failure>,
    /// Case operations that ran nothing (the trace names a case this catalog lacks), with
    /// why: a replay that skipped some says nothing about whether the bug is gone.
    pub skipped_cases: Vec<String>,
}

/// Replays a saved trace (either mode).
pub async fn replay_trace(
    trace: &trace::Trace,
    target: &Target,
    exec: &ExecConfig,
) -> Result<Replayed, ExecError> {
    let run = if trace.mode == "frames" {
        let mutations: Vec<frames::Mutation> = serde_json::from_value(trace.ops.clone())
            .map_err(|e| ExecError::Setup(format!("trace mutations: {e}")))?;
        frames::execute_frames(&mutations, target, exec).await?
    } else {
        let ops: Vec<Op> = serde_json::from_value(trace.ops.clone())
            .map_err(|e| ExecError::Setup(format!("trace operations: {e}")))?;
        execute(&ops, target, exec).await?
    };
    let (failure, instead) = match run.failure {
        Some(f) if same(&f, &trace.failure) => (Some(f), None),
        other => (None, other),
    };
    Ok(Replayed {
        failure,
        instead,
        skipped_cases: run.skipped_cases,
    })
}

/// The failure as a person reads it: rule → expected → actual → shrunk sequence.
pub fn render_found<T: serde::Serialize>(found: &Found<T>) -> String {
    let at = match found.failure.op_index {
        Some(index) => format!("after operation {}", index + 1),
        None if found.execution.at_setup => "at set-up".into(),
        None => "at the end".into(),
    };
    let shrunk = found.shrinking();
    let mut out = format!(
        "FOUND {} {at} (seed {}, sequence {}; {shrunk})\n  Expected: {}\n    Actual: {}\n  Sequence:\n",
        found.failure.rule,
        found.seed,
        found.case,
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
    use crate::catalog::Shard;

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
