//! Faults compose: with two faults injected at once, no rule fails or warns that neither
//! fault breaks alone. A fixed sample of pairs from different areas (every pair is measured
//! by `cargo bench --bench compose`, figures in benches/README.md).

#[path = "common/allocator.rs"]
mod allocator;

use std::collections::{BTreeMap, BTreeSet};

use ahpspec::certify::{certify, Options};
use ahpspec::host::{Fault, FaultSet};
use ahpspec::rows::Quiet;
use futures_util::stream::{self, StreamExt};

/// Pairs from different areas, and pairs of one area that touch the same cases.
const PAIRS: &[(&str, &str)] = &[
    ("queue-lifo", "cancel-idle-accepted"),
    ("no-ping", "binary-frame"),
    ("replay-wrong-range", "summary-drift"),
    ("dies-on-malformed", "duplicate-response"),
    ("wrong-client-seq", "no-broadcast"),
    ("rejects-truncation", "no-skip-on-turn-end"),
    ("in-progress-stuck", "negative-duration"),
    ("outside-directory-accepted", "rejected-still-applied"),
    ("cancel-ends-twice", "cancel-keeps-streaming"),
    // Issue 29, automations (i29c): the same run cases, and a silent catalogue with its order.
    (
        "automation-cancel-ignored",
        "automation-run-never-completes",
    ),
    (
        "automation-state-unannounced",
        "automation-runs-oldest-first",
    ),
];

async fn broken(faults: &[&str]) -> BTreeSet<String> {
    let set: FaultSet = faults.join(",").parse().expect("known faults");
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let options = Options {
        faults: set.into(),
        ..Options::default()
    };
    certify(&options, &mut Quiet, rx)
        .await
        .expect("harness starts")
        .broken_rules()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sampled_fault_pairs_break_nothing_new() {
    let singles: BTreeSet<&str> = PAIRS.iter().flat_map(|(a, b)| [*a, *b]).collect();
    for fault in &singles {
        assert!(
            Fault::ALL.iter().any(|f| f.name() == *fault),
            "{fault} is no fault"
        );
    }
    // Two runs at a time, as CI's two test threads run the fault tests: one catalog run
    // leaves a core idle in its waits.
    let alone: BTreeMap<&str, BTreeSet<String>> = stream::iter(singles)
        .map(|fault| async move { (fault, broken(&[fault]).await) })
        .buffer_unordered(2)
        .collect()
        .await;
    let together: Vec<(&str, &str, BTreeSet<String>)> = stream::iter(PAIRS)
        .map(|(a, b)| async move { (*a, *b, broken(&[a, b]).await) })
        .buffer_unordered(2)
        .collect()
        .await;
    let mut problems = Vec::new();
    for (a, b, together) in &together {
        let either: BTreeSet<String> = alone[a].union(&alone[b]).cloned().collect();
        let new: Vec<&String> = together.difference(&either).collect();
        if !new.is_empty() {
            problems.push(format!(
                "{a} + {b} break {new:?}, which neither breaks alone ({a}: {:?}; {b}: {:?})",
                alone[a], alone[b]
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
