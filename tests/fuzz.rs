//! The fuzzer: the correct host survives a long run; each reachable fault is found within a
//! stated budget, shrunk, and its saved trace replays to the same failure.

use std::sync::Arc;
use std::time::Duration;

use ahpspec::checks::frame::{SchemaMap, Schemas};
use ahpspec::engine::profile::Profile;
use ahpspec::fuzz::trace::Trace;
use ahpspec::fuzz::{fuzz, reproduce, ExecConfig, FuzzOptions, Target};
use ahpspec::host::Fault;
use ahpspec::schema::SchemaSet;

fn options(fault: Option<Fault>, seed: u64, duration: Duration) -> FuzzOptions {
    FuzzOptions {
        target: Target { url: None, fault },
        exec: ExecConfig {
            timeout: Duration::from_secs(2),
            settle: Duration::from_millis(3),
            clients: 2,
            profile: Profile::scripted().expect("built-in profile"),
            schemas: Schemas {
                set: Arc::new(SchemaSet::embedded().expect("schemas compile")),
                map: Arc::new(SchemaMap::embedded()),
            },
            checkpoint_every: 10,
        },
        seed,
        cases: None,
        duration,
        shrink_time: Duration::from_secs(20),
        max_len: 30,
    }
}

#[tokio::test]
async fn the_correct_host_survives_a_long_run() {
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let outcome = fuzz(&options(None, 7, Duration::from_secs(8)), interrupt).await.expect("fuzzer runs");
    if let Some(found) = &outcome.found {
        panic!(
            "false positive: {:?}\nops: {:?}\nframes:\n{}",
            found.failure,
            found.ops,
            found.execution.frames.iter().rev().take(12).rev().map(|f| format!("  {} {} {}", f.conn, f.direction, f.text)).collect::<Vec<_>>().join("\n")
        );
    }
    assert!(outcome.cases > 5 && outcome.dispatches > 50, "too little fuzzing: {outcome:?}");
    println!("{} sequences, {} dispatches in {:?}", outcome.cases, outcome.dispatches, outcome.elapsed);
}
