//! Reach cannot silently regress: a fixed sample of the built-in host's faults, each found by
//! a short campaign that stops at its first finding (`ahpspec::fuzz::reach`, as the reach
//! benchmark runs every fault), blaming the fault's own rule, and the saved trace replays.
//! The sample leans on what issue 24 added (routines, working directories, odd ids, the
//! interleaved default campaign) and keeps one or two faults of each older area.

#[path = "common/allocator.rs"]
mod allocator;

use std::time::Duration;

use ahpspec::reach::{listed_faults, reach, ReachConfig, ReachMode};
use ahpspec::suite::Catalog;

/// Runs the campaign for `fault` (seed 1, 30 s to the first finding, 1 s waits) and checks
/// it found the fault's rule and that its trace replays.
async fn reaches(name: &str, mode: Option<ReachMode>) {
    let catalog = Catalog::embedded().expect("catalog");
    let (fault, area) = listed_faults(&catalog)
        .into_iter()
        .find(|(f, _)| f.name() == name)
        .unwrap_or_else(|| panic!("{name} is not a fault"));
    let mut cfg = ReachConfig::standard().expect("profile and schemas");
    cfg.budget = Duration::from_secs(30);
    cfg.shrink_time = Duration::from_secs(5);
    cfg.timeout = Duration::from_secs(1);
    cfg.mode = mode;
    // The generator's own reach: no catalog case runs as an operation.
    cfg.catalog = None;
    let reached = reach(fault, &area, &cfg).await;
    // The figures benches/README.md's reach section quotes (`--nocapture`).
    println!(
        "reach {name}: found {} in {:?} ms, replays {:?}, {} sequences",
        reached.found, reached.first_finding_ms, reached.replays, reached.sequences
    );
    assert!(
        reached.found && reached.replays == Some(true),
        "{name} ({}): {reached:?}",
        fault.rule()
    );
}

macro_rules! reach_sample {
    ($($test:ident => $fault:literal $(in $mode:ident)?,)*) => {
        $(
            #[tokio::test]
            async fn $test() {
                #[allow(unused_mut, unused_assignments)]
                let mut mode = None;
                $( mode = Some(ReachMode::$mode); )?
                reaches($fault, mode).await;
            }
        )*
    };
}

reach_sample! {
    // Issue 24's routines and operations.
    echo_order_swapped => "echo-order-swapped",
    disposed_still_listed => "disposed-still-listed",
    window_without_cursor => "window-without-cursor",
    turns_loaded_newest_first => "turns-loaded-newest-first",
    chat_added_after_response => "chat-added-after-response",
    summary_chats_partial => "summary-chats-partial",
    unsubscribed_dispatch_rejected => "unsubscribed-dispatch-rejected",
    outside_directory_accepted => "outside-directory-accepted",
    default_chat_unlisted => "default-chat-unlisted",
    negative_id_unanswered => "negative-id-unanswered" in Frames,
    // Issue 25's features, by the feature routines.
    list_file_ok => "list-file-ok",
    copy_overwrites_anyway => "copy-overwrites-anyway",
    append_truncates => "append-truncates",
    watch_uri_reused => "watch-uri-reused",
    watch_ignores_excludes => "watch-ignores-excludes",
    stale_if_match_writes => "stale-if-match-writes",
    delete_non_empty_ok => "delete-non-empty-ok",
    claim_from_anyone => "claim-from-anyone",
    wrong_token_accepted => "wrong-token-accepted",
    valid_token_refused => "valid-token-refused",
    root_snapshot_misnamed => "root-snapshot-misnamed",
    chat_outside_directory_accepted => "chat-outside-directory-accepted",
    selected_option_dropped => "selected-option-dropped",
    reconnect_keeps_active_client => "reconnect-keeps-active-client",
    // Issue 29's features and issue 24's remaining misses, by their routines.
    fork_copies_all_turns => "fork-copies-all-turns",
    move_answers_old_owner => "move-answers-old-owner",
    changeset_scope_ignored => "changeset-scope-ignored",
    annotation_emptied => "annotation-emptied",
    session_meta_merged => "session-meta-merged",
    known_minors_only => "known-minors-only",
    tool_delta_before_start => "tool-delta-before-start",
    // The interleaved default campaign finds model and frames faults alike.
    no_ping_in_mixed => "no-ping" in Mixed,
    cancel_idle_accepted_in_mixed => "cancel-idle-accepted" in Mixed,
    // Found before issue 24: one or two of each area.
    initialize_error => "initialize-error",
    dies_on_malformed => "dies-on-malformed",
    unknown_method_code => "wrong-method-not-found",
    confirm_not_pending => "confirm-not-pending",
    queue_lifo => "queue-lifo",
    replay_notifications => "replay-notifications",
    summary_drift => "summary-drift",
    subscribe_unknown_ok => "subscribe-unknown-ok",
    no_session_added => "no-session-added",
}

/// The same budget (sequences of one seed against the correct host) with the generator
/// weighed toward unseen state × operation pairs, and with base weights only: the bias
/// covers more pairs. Summed over six seeds, so one lucky draw decides nothing (with 16
/// routines, seeds 1–3 alone gave uniform 234 and biased 228 pairs, seeds 4–6 203 and 226).
#[tokio::test]
async fn the_bias_toward_unseen_pairs_covers_more_than_uniform_choice() {
    let cfg = ReachConfig::standard().expect("profile and schemas");
    let mut covered = [0usize; 2];
    for seed in 1..=6 {
        for (slot, uniform) in [(0, true), (1, false)] {
            let options = ahpspec::fuzz::FuzzOptions {
                target: ahpspec::target::Decided::Host(Default::default()).for_sequences(None),
                exec: ahpspec::fuzz::ExecConfig {
                    timeout: Duration::from_secs(2),
                    settle: Duration::from_millis(3),
                    clients: 2,
                    profile: cfg.profile.clone(),
                    schemas: cfg.schemas.clone(),
                    checkpoint_every: 10,
                    exclude: Default::default(),
                    known: Default::default(),
                    catalog: None,
                },
                seed,
                cases: Some(25),
                duration: Duration::from_secs(300),
                shrink_time: Duration::from_secs(5),
                max_len: 20,
                baseline: Default::default(),
                stop_after: None,
                progress: None,
                uniform,
            };
            let (_stop, interrupt) = tokio::sync::watch::channel(false);
            let outcome = ahpspec::fuzz::fuzz(&options, interrupt)
                .await
                .expect("the campaign runs");
            assert!(
                outcome.findings.found.is_empty(),
                "the correct host: {:?}",
                outcome.findings.found.first().map(|f| &f.failure)
            );
            assert_eq!(outcome.cases, 25);
            covered[slot] += outcome.coverage.covered();
        }
    }
    let [uniform, biased] = covered;
    assert!(
        biased > uniform,
        "biased {biased} pairs, uniform {uniform} over the same sequences"
    );
    println!("covered pairs over six seeds: uniform {uniform}, biased {biased}");
}
