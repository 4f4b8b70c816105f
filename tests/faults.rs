//! Every faulty variant of the built-in host breaks exactly the rules it declares: the
//! cases for those rules fail and every other case still passes.

use std::collections::BTreeSet;

use ahpspec::certify::{certify, Options};
use ahpspec::engine::Quiet;
use ahpspec::host::Fault;
use ahpspec::verdict::Verdict;

/// Rules a fault is expected to break. Faults that change host state behind the reducers'
/// back also make the fold differ from a fresh snapshot (INV-FOLD-1) by construction.
fn expected(fault: Fault) -> BTreeSet<String> {
    let mut rules = BTreeSet::from([fault.rule().to_owned()]);
    match fault {
        // The chat keeps a status its content contradicts, and the fold disagrees with it.
        Fault::InProgressStuck => rules.extend(["INV-FOLD-1".to_owned()]),
        // INPUT-002 is STATUS-003 for input requests: breaking it breaks both.
        Fault::InputStatusWrong => rules.extend(["STATUS-003".to_owned()]),
        // These snapshots differ from the state the actions build (a repeated entry the
        // reducers update once, a duration they never gave), so folds and fresh snapshots
        // disagree at checkpoints too.
        Fault::ClientListedTwice | Fault::NegativeDuration => {
            rules.extend(["INV-FOLD-1".to_owned()])
        }
        // ... and listSessions, built from the state, lists the chat once: the entry's
        // chats differ from the snapshot's at checkpoints.
        Fault::ChatListedTwice => {
            rules.extend(["INV-FOLD-1".to_owned(), "INV-SUMMARY-2".to_owned()])
        }
        // listSessions, built from the state, still lists the default chat.
        Fault::DefaultChatUnlisted => rules.extend(["INV-SUMMARY-2".to_owned()]),
        // chat/turnResume takes an errored turn's closing error part off again: resumed
        // from a snapshot without it, the mirror drops the part before, and the resumed
        // turn's streaming then targets a part (TURN-003) and turn (TURN-004) it lacks.
        Fault::ErrorPartDropped => rules.extend(["TURN-003".to_owned(), "TURN-004".to_owned()]),
        // SESSION-011 reads the directory list of the very snapshots this fault repeats.
        // listSessions, built from the state, lists the directory once.
        Fault::DirectoryListedTwice => {
            rules.extend(["SESSION-011".to_owned(), "INV-SUMMARY-3".to_owned()])
        }
        // A pending tool call in an ended turn is also an ended turn holding a
        // non-terminal call.
        Fault::NoSkipOnTurnEnd => rules.extend(["INV-CHAT-2".to_owned()]),
        // The mirrors hold the entry (or the directories) the actions gave, the fresh
        // snapshots the broken one: checkpoints see the fold differ too.
        Fault::InputNeededChatUnlisted | Fault::ChatDirectoryStray => {
            rules.extend(["INV-FOLD-1".to_owned()])
        }
        // The fold sets modifiedAt as the turn's end says; the shifted one differs from it.
        Fault::ModifiedAtLate => rules.extend(["INV-FOLD-1".to_owned()]),
        // A queue holding an id twice is also the wrong queue shape.
        Fault::QueuedUpdateAppends => rules.extend(["INV-CHAT-5".to_owned()]),
        // The summaries that carry the bad createdAt (listSessions, root/sessionAdded) are
        // schema-checked too, and createdAt is a date-time there.
        Fault::BadTimestamp => rules.extend(["INV-SCHEMA-1".to_owned()]),
        // ROOT-003 waits for the second page, which never comes.
        Fault::UnansweredRequest => rules.extend(["ROOT-003".to_owned()]),
        // ERR-001 provokes an unknown cursor too, and gets a page instead of -32602.
        Fault::UnknownCursorRestarts => rules.extend(["ERR-001".to_owned()]),
        // SUB-004's c2 unsubscribed from the session but is still on the root channel.
        Fault::SessionActionsToAll => rules.extend(["SUB-004".to_owned()]),
        // TURN-011 reads the cursor of the same one-turn window.
        Fault::WindowWithoutCursor => rules.extend(["TURN-011".to_owned()]),
        // The reconnect result is schema-checked too, and its type is replay or snapshot.
        Fault::EmptyReplayRenamed => rules.extend(["INV-SCHEMA-1".to_owned()]),
        // RECONNECT-005 replays from 0 a session whose one envelope (session/ready) c1 has
        // folded already: sent again after the response, it is behind c1's mirror.
        Fault::ReplayTailLater => rules.extend(["ENV-003".to_owned(), "SUB-002".to_owned()]),
        // Other connections that hold only the chat miss the agent's actions too: SUB-010's
        // c2 never sees the turn end, nor VERSION-009's old connection, and INPUT-003's c2
        // folds a turn without its input request (INV-FOLD-1 at the checkpoint).
        Fault::TurnStreamToStarterOnly => rules.extend([
            "SUB-010".to_owned(),
            "VERSION-009".to_owned(),
            "INV-FOLD-1".to_owned(),
        ]),
        _ => {}
    }
    rules
}

/// Which cases a fault blocks: those that rely on its rule before reaching their own.
enum Blocks {
    Nothing,
    /// The rule is a prerequisite of almost every case (initialize, a ready session).
    Most,
    /// These cases use the rule only on the way (e.g. truncation to end a turn).
    Cases(&'static [&'static str]),
}

fn blocks(fault: Fault) -> Blocks {
    match fault {
        Fault::SessionsNeverReady | Fault::InitializeError => Blocks::Most,
        Fault::RejectsTruncation => Blocks::Cases(&["PENDING-002", "PENDING-006", "TURN-013"]),
        _ => Blocks::Nothing,
    }
}

/// Rules a blocking fault breaks besides its own, each with its reason.
fn expected_with_blocking(fault: Fault) -> BTreeSet<String> {
    let mut rules = expected(fault);
    if fault == Fault::SessionsNeverReady {
        // ROOT-010's final root/progress frame announces the session's initialisation,
        // which never ends; the case records that at its MAY step.
        rules.insert("ROOT-010".to_owned());
    }
    if fault == Fault::InitializeError {
        // VERSION-001 offers exactly ["1.0.0"] on its second connection by its own choice:
        // the error is that case's own failure, not a prerequisite's.
        rules.insert("VERSION-001".to_owned());
    }
    rules
}

/// Always-on checks a fault leaves with nothing to look at.
fn expected_not_testable(fault: Fault) -> BTreeSet<String> {
    match fault {
        // Chat snapshots that do not decode leave the stream checks without a mirror.
        Fault::SnapshotMissingField => BTreeSet::from([
            "INV-CHAT-6".to_owned(),
            "PENDING-003".to_owned(),
            "TURN-003".to_owned(),
            "TURN-004".to_owned(),
            "TURN-005".to_owned(),
        ]),
        // ERR-001 stops at its unknown cursor, before the request whose -32009 ERR-003 reads.
        Fault::UnknownCursorRestarts => BTreeSet::from(["ERR-003".to_owned()]),
        _ => BTreeSet::new(),
    }
}

async fn check(fault: Fault) {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let blocking = match blocks(fault) {
        Blocks::Nothing => None,
        Blocks::Most | Blocks::Cases(_) => Some(fault.rule()),
    };
    let options = Options {
        faults: fault.into(),
        // Cases blocked by a session that never gets ready each wait one timeout.
        timeout: if matches!(blocks(fault), Blocks::Most) {
            std::time::Duration::from_secs(1)
        } else {
            Options::default().timeout
        },
        strict: true,
        ..Options::default()
    };
    let report = certify(&options, &mut Quiet, rx)
        .await
        .expect("harness starts");
    let mut failing = BTreeSet::new();
    let mut not_testable = BTreeSet::new();
    let mut blocked = BTreeSet::new();
    let mut details = Vec::new();
    for case in report.cases.iter().filter(|c| c.verdict != Verdict::Pass) {
        let rule = case
            .info
            .id
            .split('/')
            .next()
            .unwrap_or_default()
            .to_owned();
        details.push(format!(
            "  {} [{}] {}",
            case.info.id,
            case.verdict.as_str(),
            case.summary
        ));
        match case.verdict {
            Verdict::NotTestable
                if matches!(blocks(fault), Blocks::Most) && case.info.source == "builtin" =>
            {
                // An always-on check that saw nothing because the cases feeding it were
                // blocked: the blocked cases already fail the run.
            }
            Verdict::NotTestable => {
                not_testable.insert(rule);
            }
            Verdict::Blocked => {
                assert_eq!(
                    case.blocked_by.as_deref(),
                    blocking,
                    "fault {fault}: {} blocked by the wrong rule\n{}",
                    case.info.id,
                    case.summary
                );
                blocked.insert(case.info.id.clone());
            }
            _ => {
                failing.insert(rule);
            }
        }
    }
    let details = details.join("\n");
    assert_eq!(
        failing,
        expected_with_blocking(fault),
        "fault {fault} ({}):\n{details}",
        fault.description()
    );
    assert_eq!(
        not_testable,
        expected_not_testable(fault),
        "fault {fault}: not testable\n{details}"
    );
    match blocks(fault) {
        Blocks::Most => assert!(
            blocked.len() > 50,
            "fault {fault} blocks only {} cases:\n{details}",
            blocked.len()
        ),
        Blocks::Cases(ids) => assert_eq!(
            blocked,
            ids.iter().map(|id| id.to_string()).collect(),
            "fault {fault}: blocked\n{details}"
        ),
        Blocks::Nothing => assert!(blocked.is_empty(), "fault {fault}: blocked\n{details}"),
    }
    // Every fault makes a strict run fail (`ahpspec run --strict` exits 1): a failed MUST,
    // a broken SHOULD, a failed prerequisite or a blocked case is never conforming.
    assert!(
        !report.conforming(),
        "fault {fault}: the strict run conforms"
    );
}

macro_rules! fault_tests {
    ($($name:ident => $fault:ident,)*) => {
        $(
            #[tokio::test]
            async fn $name() {
                check(Fault::$fault).await;
            }
        )*

        #[test]
        fn every_fault_has_a_test() {
            let tested = [$(Fault::$fault,)*];
            for fault in Fault::ALL {
                assert!(tested.contains(fault), "fault {fault} has no test");
            }
        }
    };
}

fault_tests! {
    no_jsonrpc_member => NoJsonrpcMember,
    duplicate_response => DuplicateResponse,
    answers_notifications => AnswersNotifications,
    result_and_error => ResultAndError,
    dies_on_malformed => DiesOnMalformed,
    not_request_accepted => NotRequestAccepted,
    wrong_method_not_found => WrongMethodNotFound,
    ping_needs_init => PingNeedsInit,
    version_not_offered => VersionNotOffered,
    lowest_version => LowestVersion,
    no_supported_versions => NoSupportedVersions,
    no_close_after_version_error => NoCloseAfterVersionError,
    new_actions_to_old_client => NewActionsToOldClient,
    snapshot_missing_field => SnapshotMissingField,
    subscribe_unknown_ok => SubscribeUnknownOk,
    action_after_unsubscribe => ActionAfterUnsubscribe,
    no_broadcast => NoBroadcast,
    cross_channel_reorder => CrossChannelReorder,
    repeat_server_seq => RepeatServerSeq,
    host_action_origin => HostActionOrigin,
    wrong_client_seq => WrongClientSeq,
    echo_missing_channel => EchoMissingChannel,
    server_only_accepted => ServerOnlyAccepted,
    replay_wrong_range => ReplayWrongRange,
    replay_notifications => ReplayNotifications,
    no_session_added => NoSessionAdded,
    no_session_removed => NoSessionRemoved,
    duplicate_session_ok => DuplicateSessionOk,
    unknown_provider_ok => UnknownProviderOk,
    cancel_idle_accepted => CancelIdleAccepted,
    confirm_not_pending => ConfirmNotPending,
    remove_missing_pending => RemoveMissingPending,
    summary_drift => SummaryDrift,
    chat_listed_twice => ChatListedTwice,
    client_listed_twice => ClientListedTwice,
    directory_listed_twice => DirectoryListedTwice,
    negative_duration => NegativeDuration,
    error_part_dropped => ErrorPartDropped,
    in_progress_stuck => InProgressStuck,
    queued_update_appends => QueuedUpdateAppends,
    queue_lifo => QueueLifo,
    no_skip_on_turn_end => NoSkipOnTurnEnd,
    truncate_keeps_active => TruncateKeepsActive,
    turns_loaded_after_response => TurnsLoadedAfterResponse,
    delta_before_part => DeltaBeforePart,
    error_as_response_part => ErrorAsResponsePart,
    input_status_wrong => InputStatusWrong,
    legacy_uri => LegacyUri,
    usage_wrong_turn => UsageWrongTurn,
    binary_frame => BinaryFrame,
    notification_without_channel => NotificationWithoutChannel,
    action_on_wrong_channel => ActionOnWrongChannel,
    snapshot_seq_ahead => SnapshotSeqAhead,
    summary_status_bits => SummaryStatusBits,
    sessions_never_ready => SessionsNeverReady,
    initialize_error => InitializeError,
    rejects_truncation => RejectsTruncation,
    // Issue 11, scripted cases (h-suites).
    turn_completed_twice => TurnCompletedTwice,
    echo_order_swapped => EchoOrderSwapped,
    progress_never_final => ProgressNeverFinal,
    // Issue 11, transport slice: formats, unanswered requests, host-to-client requests.
    bad_timestamp => BadTimestamp,
    unanswered_request => UnansweredRequest,
    errors_on_notifications => ErrorsOnNotifications,
    accepts_missing_jsonrpc => AcceptsMissingJsonrpc,
    host_request_wrong_channel => HostRequestWrongChannel,
    // Tool-call lifecycle, INV-CHAT-2 and the session invariants at checkpoints (h-state).
    tool_ready_after_complete => ToolReadyAfterComplete,
    confirmed_maybe => ConfirmedMaybe,
    tool_call_listed_twice => ToolCallListedTwice,
    skip_as_denied => SkipAsDenied,
    default_chat_unlisted => DefaultChatUnlisted,
    input_needed_chat_unlisted => InputNeededChatUnlisted,
    chat_directory_stray => ChatDirectoryStray,
    move_non_movable_accepted => MoveNonMovableAccepted,
    auth_required_without_resources => AuthRequiredWithoutResources,
    permission_denied_bad_data => PermissionDeniedBadData,
    listed_title_stale => ListedTitleStale,
    listed_chat_title_stale => ListedChatTitleStale,
    modified_at_late => ModifiedAtLate,
    auth_resolved_wrong_turn => AuthResolvedWrongTurn,
    // Issue 12, tools, subscriptions, reconnect, root (faults-d).
    unsubscribe_keeps_active_client => UnsubscribeKeepsActiveClient,
    reconnect_keeps_active_client => ReconnectKeepsActiveClient,
    never_forgets_client => NeverForgetsClient,
    missing_not_listed => MissingNotListed,
    unknown_cursor_restarts => UnknownCursorRestarts,
    sessions_oldest_first => SessionsOldestFirst,
    no_active_sessions_changed => NoActiveSessionsChanged,
    archive_chat_rejected => ArchiveChatRejected,
    session_actions_to_all => SessionActionsToAll,
    root_snapshot_misnamed => RootSnapshotMisnamed,
    window_without_cursor => WindowWithoutCursor,
    foreign_client_completes => ForeignClientCompletes,
    tool_delta_before_start => ToolDeltaBeforeStart,
    auto_tool_never_completes => AutoToolNeverCompletes,
    summary_change_identity => SummaryChangeIdentity,
    summary_chats_partial => SummaryChatsPartial,
    tool_input_needed_kept => ToolInputNeededKept,
    client_tool_stalls => ClientToolStalls,
    reconfirm_changes_owner => ReconfirmChangesOwner,
    replay_tail_later => ReplayTailLater,
    empty_replay_renamed => EmptyReplayRenamed,
    rejected_still_applied => RejectedStillApplied,
    malformed_title_applied => MalformedTitleApplied,
    cursor_without_window => CursorWithoutWindow,
    root_lists_sessions => RootListsSessions,
    turn_stream_to_starter_only => TurnStreamToStarterOnly,
    edited_input_ignored => EditedInputIgnored,
    selected_option_dropped => SelectedOptionDropped,
    denial_as_skip => DenialAsSkip,
    result_denial_as_denial => ResultDenialAsDenial,
}

/// Every always-on check is proven by at least one fault that breaks it.
#[test]
fn every_always_on_check_has_a_fault() {
    for rule in ahpspec::checks::ALWAYS_ON {
        let proven = Fault::ALL
            .iter()
            .any(|fault| expected(*fault).contains(rule.id));
        assert!(
            proven,
            "always-on check {} has no faulty host variant",
            rule.id
        );
    }
}

/// Every case's rule has a broken twin: a fault under which that rule fails (the fault's
/// own rule, or a side effect `expected` names), unless coverage.toml lists it under
/// `[no_fault_yet]` — the ledger of cases only ever seen passing, which shrinks as faults
/// are written. A ledger entry whose rule has a fault is stale and fails this test too.
#[test]
fn every_case_has_a_fault() {
    let catalog = ahpspec::suite::Catalog::embedded().expect("suites parse");
    let rules: BTreeSet<String> = catalog
        .cases
        .iter()
        .map(|case| ahpspec::suite::rule_of(&case.info.id).to_owned())
        .collect();
    let broken: BTreeSet<String> = Fault::ALL.iter().flat_map(|f| expected(*f)).collect();
    let ledger: toml::Table =
        toml::from_str(include_str!("../coverage.toml")).expect("coverage.toml parses");
    let unproven: BTreeSet<String> = ledger
        .get("no_fault_yet")
        .and_then(|v| v.as_table())
        .map(|t| t.keys().cloned().collect())
        .unwrap_or_default();
    let missing: Vec<&String> = rules
        .iter()
        .filter(|r| !broken.contains(*r) && !unproven.contains(*r))
        .collect();
    assert!(
        missing.is_empty(),
        "cases with no fault that breaks them (write one, or list the rule in coverage.toml [no_fault_yet] with why): {missing:?}"
    );
    let stale: Vec<&String> = unproven.iter().filter(|r| broken.contains(*r)).collect();
    assert!(
        stale.is_empty(),
        "coverage.toml [no_fault_yet] lists rules a fault now breaks: remove {stale:?}"
    );
    let unknown: Vec<&String> = unproven.iter().filter(|r| !rules.contains(*r)).collect();
    assert!(
        unknown.is_empty(),
        "coverage.toml [no_fault_yet] lists rules no case proves: {unknown:?}"
    );
}
