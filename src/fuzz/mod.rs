//! The stateful fuzzer: seeded random operation sequences against a server (model-based:
//! valid for the observed state most of the time, plus stale and wrong-state operations
//! whose correct answer is a rejection), every check of the runner after every step,
//! shrinking of failing sequences, and replayable traces.

pub mod exec;
pub mod model;
pub mod ops;
pub mod trace;

use std::time::{Duration, Instant};

use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use tokio::sync::watch;

pub use exec::{execute, ExecConfig, ExecError, Execution, Failure, Target};
pub use ops::Op;

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
}

/// A failure, shrunk.
#[derive(Debug, Clone)]
pub struct Found {
    pub seed: u64,
    /// Which generated sequence failed (0-based).
    pub case: u64,
    pub original_len: usize,
    pub shrink_steps: usize,
    /// Whether shrinking ran out of time before it was done.
    pub shrink_capped: bool,
    pub ops: Vec<Op>,
    pub execution: Execution,
    pub failure: Failure,
}

/// What a fuzz run did.
#[derive(Debug, Clone)]
pub struct FuzzOutcome {
    pub cases: u64,
    pub dispatches: usize,
    pub elapsed: Duration,
    pub found: Option<Found>,
    pub interrupted: bool,
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

/// Runs sequences until the budget is spent or one fails; a failure is shrunk.
pub async fn fuzz(
    options: &FuzzOptions,
    interrupt: watch::Receiver<bool>,
) -> Result<FuzzOutcome, ExecError> {
    let started = Instant::now();
    let mut runner = TestRunner::new_with_rng(Config::default(), rng(options.seed));
    let strategy = ops::sequence(options.max_len);
    let mut outcome = FuzzOutcome {
        cases: 0,
        dispatches: 0,
        elapsed: Duration::ZERO,
        found: None,
        interrupted: false,
    };
    loop {
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
        let execution = execute(&ops, &options.target, &options.exec).await?;
        outcome.cases += 1;
        outcome.dispatches += execution.dispatches;
        if let Some(failure) = execution.failure.clone() {
            let found = shrink(
                options,
                &mut tree,
                ops,
                execution,
                failure,
                outcome.cases - 1,
                &interrupt,
            )
            .await?;
            outcome.found = Some(found);
            break;
        }
    }
    outcome.elapsed = started.elapsed();
    Ok(outcome)
}

async fn shrink(
    options: &FuzzOptions,
    tree: &mut impl ValueTree<Value = Vec<Op>>,
    ops: Vec<Op>,
    execution: Execution,
    failure: Failure,
    case: u64,
    interrupt: &watch::Receiver<bool>,
) -> Result<Found, ExecError> {
    let deadline = Instant::now() + options.shrink_time;
    let mut found = Found {
        seed: options.seed,
        case,
        original_len: ops.len(),
        shrink_steps: 0,
        shrink_capped: false,
        ops,
        execution,
        failure,
    };
    // proptest's shrinking walk: simplify while the failure persists, complicate when a
    // candidate passes, stop when neither moves.
    loop {
        if Instant::now() >= deadline || *interrupt.borrow() {
            found.shrink_capped = true;
            break;
        }
        if !tree.simplify() {
            break;
        }
        loop {
            let candidate = tree.current();
            let run = execute(&candidate, &options.target, &options.exec).await?;
            found.shrink_steps += 1;
            match &run.failure {
                Some(failure) if same(failure, &found.failure) => {
                    found.failure = failure.clone();
                    found.ops = candidate;
                    found.execution = run;
                    break;
                }
                _ => {
                    if Instant::now() >= deadline || !tree.complicate() {
                        return Ok(found);
                    }
                }
            }
        }
    }
    Ok(found)
}

/// Re-runs a sequence once; returns the failure when it is the same bug as `expected`.
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
