//! The default campaign: model sequences and frame-mutation sequences interleaved, so one CI
//! job covers both. Each generated case is one or the other whole (a model sequence needs
//! its session set up, a frames sequence its own connection); shrinking keeps it so, and its
//! trace is an ordinary model or frames trace (`ahpspec replay` needs nothing new).

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;

use super::exec::ExecError;
use super::frames::{execute_frames_until, Mutation};
use super::generate::{self, Repertoire};
use super::ops::Op;
use super::{execute_until, search, FuzzOptions, FuzzOutcome};

/// One step of an interleaved campaign's case: a model operation or a mutated frame.
/// Untagged: a case serialises exactly as the model or frames sequence it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Step {
    Op(Op),
    Frame(Mutation),
}

/// The mode a found sequence's trace is saved under (what `ahpspec replay` runs it as).
pub trait ModeOf: Sized {
    fn mode_of(steps: &[Self]) -> &'static str;
}

impl ModeOf for Op {
    fn mode_of(_: &[Op]) -> &'static str {
        "model"
    }
}

impl ModeOf for Mutation {
    fn mode_of(_: &[Mutation]) -> &'static str {
        "frames"
    }
}

impl ModeOf for Step {
    fn mode_of(steps: &[Step]) -> &'static str {
        match steps.first() {
            Some(Step::Frame(_)) => "frames",
            _ => "model",
        }
    }
}

/// Model sequences three times in four, frame sequences the fourth: a model sequence sets
/// up a session and several clients, a frames sequence only a connection, so this gives
/// both about the same share of the campaign's time against the built-in host.
pub fn cases(max: usize, repertoire: &Repertoire) -> impl Strategy<Value = Vec<Step>> {
    let model = generate::sequence(max, repertoire)
        .prop_map(|ops| ops.into_iter().map(Step::Op).collect::<Vec<_>>());
    let frames = prop::collection::vec(super::frames::mutation(), 1..=max.max(1))
        .prop_map(|frames| frames.into_iter().map(Step::Frame).collect::<Vec<_>>());
    prop_oneof![3 => model, 1 => frames]
}

/// Model and frames sequences interleaved (see the module's comment).
pub async fn fuzz_mixed(
    options: &FuzzOptions,
    interrupt: watch::Receiver<bool>,
) -> Result<FuzzOutcome<Step>, ExecError> {
    let run = async |steps: Vec<Step>, deadline| {
        let (ops, frames) = split(&steps);
        if frames.is_empty() {
            execute_until(&ops, &options.target, &options.exec, Some(deadline)).await
        } else {
            execute_frames_until(&frames, &options.target, &options.exec, Some(deadline)).await
        }
    };
    let repertoire = Repertoire::of(&options.exec.profile)
        .with_cases(options.exec.case_ids(options.target.serves_workspaces()));
    let strategy = |coverage: &super::guidance::StateCoverage| {
        cases(options.max_len, &repertoire.biased(options.bias(coverage)))
    };
    let mut outcome = search(options, strategy, run, interrupt).await?;
    outcome.left_out = repertoire.left_out();
    outcome.coverage.operations.extend(
        generate::kinds(&repertoire)
            .into_iter()
            .chain(super::frames::kinds()),
    );
    Ok(outcome)
}

/// A case's operations and frames (a generated case holds only one kind).
fn split(steps: &[Step]) -> (Vec<Op>, Vec<Mutation>) {
    let mut ops = Vec::new();
    let mut frames = Vec::new();
    for step in steps {
        match step {
            Step::Op(op) => ops.push(op.clone()),
            Step::Frame(frame) => frames.push(frame.clone()),
        }
    }
    (ops, frames)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::profile::Profile;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn cases_are_whole_model_or_frames_sequences_and_serialise_as_such() {
        let repertoire = Repertoire::of(&Profile::scripted().expect("profile"));
        let strategy = cases(10, &repertoire);
        let mut runner = TestRunner::deterministic();
        let (mut model, mut frames) = (0, 0);
        for _ in 0..200 {
            let mut tree = strategy.new_tree(&mut runner).expect("a case");
            // Generated (shrinking moves toward the first alternative, model sequences).
            match Step::mode_of(&tree.current()) {
                "frames" => frames += 1,
                _ => model += 1,
            }
            loop {
                let case = tree.current();
                let (ops, muts) = split(&case);
                assert!(
                    ops.is_empty() != muts.is_empty(),
                    "one kind per case: {case:?}"
                );
                let text = serde_json::to_value(&case).expect("serialises");
                if muts.is_empty() {
                    let back: Vec<Op> = serde_json::from_value(text).expect("a model trace");
                    assert_eq!(back, ops);
                } else {
                    let back: Vec<Mutation> = serde_json::from_value(text).expect("a frames trace");
                    assert_eq!(back, muts);
                }
                if !tree.simplify() {
                    break;
                }
            }
        }
        assert!(
            model > 100 && frames > 20,
            "both kinds: {model} model, {frames} frames"
        );
    }
}
