//! Every faulty variant of the built-in host breaks exactly the rules it declares: the
//! cases for those rules fail and every other case still passes.

use std::collections::BTreeSet;

#[path = "common/builtin.rs"]
mod builtin;

use ahpspec::certify::{certify, Options};
use ahpspec::host::Fault;
use ahpspec::rows::Quiet;
use ahpspec::verdict::{Level, Verdict};

/// Rules a fault is expected to break: its own and those it breaks by construction
/// (`Fault::also_breaks`, src/host/fault_rules.rs, with the reasons).
fn expected(fault: Fault) -> BTreeSet<String> {
    fault.breaks().map(str::to_owned).collect()
}

/// Which cases a fault blocks: those that rely on its rule before reaching their own.
enum Blocks {
    Nothing,
    /// The rule is a prerequisite of almost every case (initialize, a ready session).
    Most,
    /// These cases use a rule the fault breaks only on the way (e.g. truncation to end a
    /// turn): (case, the rule that blocks it).
    Cases(&'static [(&'static str, &'static str)]),
}

fn blocks(fault: Fault) -> Blocks {
    match fault {
        Fault::SessionsNeverReady | Fault::InitializeError | Fault::RejectsTurnStart => {
            Blocks::Most
        }
        // PENDING-002 and PENDING-006 truncate only to end their turn, after their claims
        // (their verdicts stand; TURN-012's row carries the failure).
        Fault::RejectsTruncation => Blocks::Cases(&[("TURN-013", "TURN-012")]),
        // The MCP channel cases need the server ready (its channel comes with the state).
        Fault::McpStartUnconfirmed => Blocks::Cases(&[
            ("MCP-001", "MCP-002"),
            ("MCP-003", "MCP-002"),
            ("MCP-003/call", "MCP-002"),
            ("INIT-006/mcp-server", "MCP-002"),
        ]),
        // Without the agents array the capabilities that gate these cases are unknown.
        Fault::RootWithoutAgents => Blocks::Cases(&[
            ("CHAT-001", "INIT-003"),
            ("DISPATCH-003", "INIT-003"),
            ("CHAT-006", "INIT-003"),
            ("CHAT-007", "INIT-003"),
            ("CHAT-FORK-001", "INIT-003"),
            ("CHAT-VALIDATE-011", "INIT-003"),
            ("LIFECYCLE-010/create-chat", "INIT-003"),
            ("ROOT-008", "INIT-003"),
            ("SESSION-001", "INIT-003"),
            ("SESSION-002", "INIT-003"),
            ("SESSION-003/after-dispose", "INIT-003"),
            ("SESSION-011", "INIT-003"),
            ("TURN-014", "INIT-003"),
            ("TURN-014/end-turn", "INIT-003"),
            // Issue 29 (i29): the cases gated on what the agent advertises.
            ("CHAT-FORK-001/unknown-kind", "INIT-003"),
            ("CHAT-FORK-002", "INIT-003"),
            ("CHAT-FORK-003", "INIT-003"),
            ("CHAT-FORK-004", "INIT-003"),
            ("CHAT-FORK-005", "INIT-003"),
            ("CHAT-FORK-006", "INIT-003"),
            ("CHAT-MOVE-002", "INIT-003"),
            ("CHAT-MOVE-002/new-session", "INIT-003"),
            // Session 26's gaps closed.
            ("CHAT-MOVE-001/destination", "INIT-003"),
            ("CHAT-MOVE-002/directories", "INIT-003"),
            ("SESSION-005", "INIT-003"),
            ("SESSION-012", "INIT-003"),
            ("CHAT-008", "INIT-003"),
            ("SESSION-004/promoted", "INIT-003"),
            // Session 23's gaps closed.
            ("CHAT-FORK-002/side-chat", "INIT-003"),
            ("CHAT-010", "INIT-003"),
            ("SESSION-013/two-chats", "INIT-003"),
            ("SESSION-013/promoted", "INIT-003"),
        ]),
        // SESSION-009 reads the session's InputNeeded status (SESSION-007's) while its entry
        // is open.
        Fault::SessionNotInputNeeded => Blocks::Cases(&[("SESSION-009", "SESSION-007")]),
        // TURN-011 fetches with the cursor of the same one-turn window (SUB-008's).
        Fault::WindowWithoutCursor => Blocks::Cases(&[("TURN-011", "SUB-008")]),
        // RECONNECT-009/came-back needs two clients active in one session (SESSION-006's).
        Fault::OneActiveClient => Blocks::Cases(&[("RECONNECT-009/came-back", "SESSION-006")]),
        // PENDING-007 inspects the turn of a message queued on an idle chat.
        Fault::QueuedIdleKept => Blocks::Cases(&[("PENDING-007", "PENDING-004")]),
        // TOOL-003 and TOOL-009 read the pending call from the host's snapshot before they
        // confirm it.
        Fault::PendingShownRunning => {
            Blocks::Cases(&[("TOOL-003", "INV-FOLD-1"), ("TOOL-009", "INV-FOLD-1")])
        }
        // The status cases mark a chat read on the way to their rule.
        Fault::ReadUnapplied => Blocks::Cases(&[
            ("STATUS-005", "DISPATCH-008"),
            ("STATUS-006", "DISPATCH-008"),
            ("STATUS-007", "DISPATCH-008"),
        ]),
        // FUZZ-001 knows the host read its hostile frames only when that connection still
        // answers (or closes); FUZZ-002 and FUZZ-003 see an unparseable frame answered first.
        Fault::DiesOnMalformed => Blocks::Cases(&[
            ("FUZZ-001", "TRANSPORT-006"),
            ("FUZZ-002", "TRANSPORT-006"),
            ("FUZZ-003", "TRANSPORT-006"),
        ]),
        // DISPATCH-003 needs the outside directory rejected to look at a rejection at all.
        Fault::OutsideDirectoryAccepted => Blocks::Cases(&[("DISPATCH-003", "CHAT-VALIDATE-011")]),
        // SUB-009 subscribes plainly first: a refusal of that is SUB-001's matter.
        Fault::RootSubscribeRefused => Blocks::Cases(&[("SUB-009", "SUB-001")]),
        // VERSION-009's old connection gets the turn's end only if the host streams a chat's
        // actions to every subscriber.
        Fault::TurnStreamToStarterOnly => {
            Blocks::Cases(&[("SUB-010", "SUB-003"), ("VERSION-009", "SUB-003")])
        }
        // ERR-001 provokes an unknown-cursor error only to look at its code.
        Fault::UnknownCursorRestarts => Blocks::Cases(&[("ERR-001", "ROOT-004")]),
        // TRANSPORT-013 sends a plain ping before the one with unknown keys.
        Fault::NoPing => Blocks::Cases(&[("TRANSPORT-013", "TRANSPORT-010")]),
        // Cases whose second client subscribes to the chat before the first one's turn ends:
        // the first client waits for an end that went to the other (SUB-003).
        Fault::TurnEndElsewhere => {
            Blocks::Cases(&[("SUB-010", "SUB-003"), ("VERSION-009", "SUB-003")])
        }
        // Issue 25, resources (h25a): RES-005 and RES-013 make their scratch directories
        // two levels down.
        Fault::MkdirNoParents => Blocks::Cases(&[("RES-005", "RES-004"), ("RES-013", "RES-004")]),
        // Issue 25, authentication (i25c): the cases that push the profile's token on the way
        // to their rule, and the one that reads the code of the gate's refusal.
        Fault::ValidTokenRefused => Blocks::Cases(&[
            ("AUTH-002", "AUTH-004"),
            ("AUTH-003", "AUTH-004"),
            ("AUTH-005", "AUTH-004"),
            ("AUTH-006", "AUTH-004"),
            ("TOOL-010", "AUTH-004"),
            ("TOOL-010/other-resource", "AUTH-004"),
            ("TOOL-010/session-follower", "AUTH-004"),
            ("TOOL-010/chat-follower", "AUTH-004"),
            ("TOOL-011/auth", "AUTH-004"),
        ]),
        // Session 23: TOOL-011/auth waits for the call's resolution (TOOL-010's) before it
        // looks for the entry's removal; SESSION-009 drafts an answer (INPUT-003's) while
        // the request is open.
        Fault::ToolAuthUnresolved => Blocks::Cases(&[("TOOL-011/auth", "TOOL-010")]),
        Fault::OnlyQuestionUnknown => Blocks::Cases(&[("SESSION-009", "INPUT-003")]),
        // AUTOMATION-011/fields names its months by name (AUTOMATION-004's grammar).
        Fault::AutomationCronNamesRefused => {
            Blocks::Cases(&[("AUTOMATION-011/fields", "AUTOMATION-004")])
        }
        Fault::ProtectedAgentOpen => {
            Blocks::Cases(&[("LIFECYCLE-007", "AUTH-003"), ("AUTH-005", "AUTH-003")])
        }
        // Issue 29 (i29): a movable default chat is SESSION-004's to blame, not the move's;
        // a new session nobody announced is ROOT-005's; a client's reorder accepted is the
        // server-only rule's (DISPATCH-006).
        Fault::DefaultChatMovable => Blocks::Cases(&[("CHAT-MOVE-001", "SESSION-004")]),
        // The default chat the host names after the disposal is the disposed one.
        Fault::DefaultChatRestored => Blocks::Cases(&[("SESSION-004/promoted", "SESSION-003")]),
        Fault::NoSessionAdded => Blocks::Cases(&[("CHAT-MOVE-002/new-session", "ROOT-005")]),
        Fault::ServerOnlyAccepted => Blocks::Cases(&[("SESSION-005", "DISPATCH-006")]),
        // AUTOMATION-013 counts the runs AUTOMATION-012 sees start; AUTOMATION-021 waits for
        // the run that uses up its allowance.
        Fault::ScheduleNeverFires => Blocks::Cases(&[
            ("AUTOMATION-013", "AUTOMATION-012"),
            ("AUTOMATION-021", "AUTOMATION-012"),
        ]),
        // LIFECYCLE-011's control client, which never followed the session, gets its actions.
        Fault::SessionActionsToAll => Blocks::Cases(&[("LIFECYCLE-011", "SUB-005")]),
        // AUTOMATION-020 disposes its run's session: the unlinking is AUTOMATION-009's.
        Fault::AutomationSessionLinkKept => Blocks::Cases(&[("AUTOMATION-020", "AUTOMATION-009")]),
        // CHANGESET-005 and -006 dispose a session once its changeset is ready (CHANGESET-003's).
        Fault::ChangesetNeverReady => Blocks::Cases(&[
            ("CHANGESET-005", "CHANGESET-003"),
            ("CHANGESET-006", "CHANGESET-003"),
        ]),
        // AUTOMATION-019 and -020 act on a run once it has completed (AUTOMATION-007's).
        Fault::AutomationRunNeverCompletes => Blocks::Cases(&[
            ("AUTOMATION-019", "AUTOMATION-007"),
            ("AUTOMATION-020", "AUTOMATION-007"),
        ]),
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
    rules
}

/// Cases a fault makes not applicable: it takes the other path of a MAY they need one of.
fn expected_not_applicable(fault: Fault) -> BTreeSet<String> {
    match fault {
        // PENDING-001 and the steering removals read the steering slot back, which a host
        // may empty on an idle chat (PENDING-005, a MAY).
        Fault::SteeringConsumedIdle => [
            "PENDING-001",
            "DISPATCH-008/steering-removed",
            "CHAT-VALIDATE-009/other-steering",
        ]
        .into_iter()
        .map(str::to_owned)
        .collect(),
        // A host may refuse an afterDate that has passed (AUTOMATION-018's other path); this
        // one refuses every afterDate.
        Fault::AfterDateRefused => BTreeSet::from(["AUTOMATION-018".to_owned()]),
        _ => BTreeSet::new(),
    }
}

/// Always-on checks a fault leaves with nothing to look at.
fn expected_not_testable(fault: Fault) -> BTreeSet<String> {
    match fault {
        // Chat snapshots that do not decode leave the stream checks without a mirror
        // (TURN-005 needs none), and the cases whose claim is a fold of the chat
        // (RECONNECT-005, RECONNECT-007) without the comparison they make.
        Fault::SnapshotMissingField => BTreeSet::from([
            "INV-CHAT-6".to_owned(),
            "PENDING-003".to_owned(),
            "RECONNECT-005".to_owned(),
            "RECONNECT-007".to_owned(),
            "SUB-010".to_owned(),
            "TURN-003".to_owned(),
            "TURN-004".to_owned(),
        ]),
        // RECONNECT-007's fold of the replay, and SUB-010's coalesced fold, cannot fold the
        // fractional turn end: the comparison each proves is not made.
        Fault::FractionalDuration => {
            BTreeSet::from(["RECONNECT-007".to_owned(), "SUB-010".to_owned()])
        }
        // Every open input request shows resolved in snapshots: INV-CHAT-4 sees none open.
        Fault::InputShownResolved => BTreeSet::from(["INV-CHAT-4".to_owned()]),
        // No terminal/data at all: TERM-002's scan of it looks at nothing.
        Fault::TerminalOutputDropped => BTreeSet::from(["TERM-002".to_owned()]),
        _ => BTreeSet::new(),
    }
}

/// The target profile a fault's run needs beyond the scripted one: the firing of a schedule
/// is testable only with a profile that allows its wait (up to a minute).
fn profile_for(fault: Fault) -> Option<std::path::PathBuf> {
    matches!(
        fault,
        Fault::ScheduleNeverFires | Fault::RunCountKeptOnReEnable | Fault::RunAllowanceIgnored
    )
    .then(builtin::scripted_profile_with_schedule_waits)
}

async fn check(fault: Fault) {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let blocking = |case: &str| match blocks(fault) {
        Blocks::Nothing => None,
        Blocks::Most => Some(fault.rule()),
        Blocks::Cases(pairs) => pairs
            .iter()
            .find(|(id, _)| *id == case)
            .map(|(_, rule)| *rule),
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
        profile: profile_for(fault),
        ..Options::default()
    };
    let report = certify(&options, &mut Quiet, rx)
        .await
        .expect("harness starts");
    let mut failing = BTreeSet::new();
    let mut not_testable = BTreeSet::new();
    let mut not_applicable = BTreeSet::new();
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
            Verdict::NotTestable if builtin::not_testable_with_scripted_profile(&case.info.id) => {}
            Verdict::NotTestable
                if matches!(blocks(fault), Blocks::Most) && case.info.source == "builtin" =>
            {
                // An always-on check that saw nothing because the cases feeding it were
                // blocked: the blocked cases already fail the run.
            }
            Verdict::NotTestable => {
                not_testable.insert(rule);
            }
            // Not applicable to the built-in host with or without the fault.
            Verdict::NotApplicable if builtin::not_applicable_to_builtin(&case.info.id) => {}
            Verdict::NotApplicable => {
                not_applicable.insert(case.info.id.clone());
            }
            Verdict::Blocked => {
                assert_eq!(
                    case.blocked_by.as_deref(),
                    blocking(&case.info.id),
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
    assert_eq!(
        not_applicable,
        expected_not_applicable(fault),
        "fault {fault}: not applicable\n{details}"
    );
    match blocks(fault) {
        Blocks::Most => assert!(
            blocked.len() > 50,
            "fault {fault} blocks only {} cases:\n{details}",
            blocked.len()
        ),
        Blocks::Cases(pairs) => assert_eq!(
            blocked,
            pairs.iter().map(|(id, _)| id.to_string()).collect(),
            "fault {fault}: blocked\n{details}"
        ),
        Blocks::Nothing => assert!(blocked.is_empty(), "fault {fault}: blocked\n{details}"),
    }
    // Every fault makes a strict run fail (`ahpspec run --strict` exits 1): a failed MUST,
    // a broken SHOULD, a failed prerequisite or a blocked case is never conforming. A fault
    // that takes the other path of a MAY (steering-consumed-idle) is recorded as info only,
    // and the cases that needed the first path are not applicable: a strict run conforms.
    let may = report
        .cases
        .iter()
        .any(|case| case.info.id == fault.rule() && case.info.level == Level::May);
    assert_eq!(
        report.conforming(),
        may,
        "fault {fault}: the strict run conforms: {}",
        report.conforming()
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
    batch_dispatch_applied => BatchDispatchApplied,
    mcp_unadvertised_served => McpUnadvertisedServed,
    negative_turn_duration => NegativeTurnDuration,
    session_mcp_apps_to_all => SessionMcpAppsToAll,
    mcp_tools_unserved => McpToolsUnserved,
    deep_nesting_wedges => DeepNestingWedges,
    not_request_accepted => NotRequestAccepted,
    wrong_method_not_found => WrongMethodNotFound,
    ping_needs_init => PingNeedsInit,
    no_ping => NoPing,
    coalesced_drops_deltas => CoalescedDropsDeltas,
    array_unanswered => ArrayUnanswered,
    root_snapshot_unasked => RootSnapshotUnasked,
    busy_disposed_listed => BusyDisposedListed,
    cancel_ends_twice => CancelEndsTwice,
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
    rejects_turn_start => RejectsTurnStart,
    fractional_duration => FractionalDuration,
    replay_drops_deltas => ReplayDropsDeltas,
    client_seq_as_string => ClientSeqAsString,
    reconnect_snapshot_short => ReconnectSnapshotShort,
    root_subscribe_refused => RootSubscribeRefused,
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
    // Issue 12, session, status, pending and input (faults-c).
    answer_without_value => AnswerWithoutValue,
    accept_unanswered => AcceptUnanswered,
    config_change_accepted => ConfigChangeAccepted,
    one_active_client => OneActiveClient,
    unsubscribed_dispatch_rejected => UnsubscribedDispatchRejected,
    steering_slot_kept => SteeringSlotKept,
    input_cancelled_with_turn => InputCancelledWithTurn,
    drafts_overwritten => DraftsOverwritten,
    ends_turn_after_accept => EndsTurnAfterAccept,
    error_status_cleared => ErrorStatusCleared,
    turn_keeps_read => TurnKeepsRead,
    archive_marks_read => ArchiveMarksRead,
    read_not_projected => ReadNotProjected,
    queued_idle_not_removed => QueuedIdleNotRemoved,
    listed_idle_while_busy => ListedIdleWhileBusy,
    session_not_input_needed => SessionNotInputNeeded,
    input_entry_stale_turn => InputEntryStaleTurn,
    default_chat_restored => DefaultChatRestored,
    input_answers_dropped => InputAnswersDropped,
    input_entry_kept_until_turn_end => InputEntryKeptUntilTurnEnd,
    reorder_drops => ReorderDrops,
    steering_consumed_idle => SteeringConsumedIdle,
    default_chat_movable => DefaultChatMovable,
    newest_chat_listed_twice => NewestChatListedTwice,
    input_needed_without_in_progress => InputNeededWithoutInProgress,
    input_shown_resolved => InputShownResolved,
    queued_turn_unreferenced => QueuedTurnUnreferenced,
    // Issue 12, chat-channel (faults-a).
    echo_missing_chat => EchoMissingChat,
    resume_not_resumable => ResumeNotResumable,
    answer_unknown_request => AnswerUnknownRequest,
    complete_unknown_request => CompleteUnknownRequest,
    outside_directory_accepted => OutsideDirectoryAccepted,
    turn_before_ready => TurnBeforeReady,
    unknown_chat_attached => UnknownChatAttached,
    unsupported_source_accepted => UnsupportedSourceAccepted,
    chat_outside_directory_accepted => ChatOutsideDirectoryAccepted,
    no_chat_removed => NoChatRemoved,
    turns_loaded_newest_first => TurnsLoadedNewestFirst,
    resume_rejected => ResumeRejected,
    truncate_unloaded => TruncateUnloaded,
    cancel_keeps_streaming => CancelKeepsStreaming,
    busy_unannounced => BusyUnannounced,
    root_chats_unpublished => RootChatsUnpublished,
    chat_added_after_response => ChatAddedAfterResponse,
    chat_snapshot_elsewhere => ChatSnapshotElsewhere,
    // Issue 12, lifecycle and transport (faults-b).
    subscribe_params_internal_error => SubscribeParamsInternalError,
    rejects_unknown_keys => RejectsUnknownKeys,
    root_snapshot_twice => RootSnapshotTwice,
    root_from_seq_ahead => RootFromSeqAhead,
    mcp_app_unasked => McpAppUnasked,
    server_info_nameless => ServerInfoNameless,
    foreign_active_client_ok => ForeignActiveClientOk,
    disposed_still_listed => DisposedStillListed,
    chat_in_missing_session_ok => ChatInMissingSessionOk,
    known_minors_only => KnownMinorsOnly,
    old_offers_invalid_request => OldOffersInvalidRequest,
    two_part_version_selected => TwoPartVersionSelected,
    empty_offer_invalid_params => EmptyOfferInvalidParams,
    authenticate_anything => AuthenticateAnything,
    reserved_error_code => ReservedErrorCode,
    resolve_missing_wrong_code => ResolveMissingWrongCode,
    negative_id_unanswered => NegativeIdUnanswered,
    anonymous_dispatch_applied => AnonymousDispatchApplied,
    root_without_agents => RootWithoutAgents,
    creating_lifecycle_unknown => CreatingLifecycleUnknown,
    failed_as_creation_failed => FailedAsCreationFailed,
    failed_without_error => FailedWithoutError,
    binary_wedges_peers => BinaryWedgesPeers,
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
    completed_tool_skipped => CompletedToolSkipped,
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
    // Issue 22, class 5: verdicts on frames that repeat what the client said.
    malformed_accepted => MalformedAccepted,
    turn_end_elsewhere => TurnEndElsewhere,
    // Issue 22: chat, tool, input, pending and status cases.
    queued_idle_kept => QueuedIdleKept,
    pending_shown_running => PendingShownRunning,
    read_unapplied => ReadUnapplied,
    input_request_listed_twice => InputRequestListedTwice,
    // Issue 25, terminals (i25b).
    terminals_changed_only_new => TerminalsChangedOnlyNew,
    leaks_shell_integration => LeaksShellIntegration,
    claim_from_anyone => ClaimFromAnyone,
    input_shown_as_output => InputShownAsOutput,
    exited_shown_running => ExitedShownRunning,
    command_finished_wrong_id => CommandFinishedWrongId,
    exit_unlisted => ExitUnlisted,
    cwd_unreported => CwdUnreported,
    // Issue 25, session configuration and completions (i25b).
    resolve_not_settled => ResolveNotSettled,
    session_config_ignored => SessionConfigIgnored,
    completion_values_unaccepted => CompletionValuesUnaccepted,
    completion_ranges_in_bytes => CompletionRangesInBytes,
    // Issue 25, root configuration (i25b).
    config_merge_replaces => ConfigMergeReplaces,
    // Issue 25, the stateless telemetry channel (i25b).
    stateless_snapshot => StatelessSnapshot,
    logs_to_everyone => LogsToEveryone,
    // Issue 25, resources (h25a).
    list_file_ok => ListFileOk,
    stale_if_match_writes => StaleIfMatchWrites,
    mkdir_no_parents => MkdirNoParents,
    delete_non_empty_ok => DeleteNonEmptyOk,
    binary_as_utf8 => BinaryAsUtf8,
    append_truncates => AppendTruncates,
    copy_overwrites_anyway => CopyOverwritesAnyway,
    resolve_dir_as_file => ResolveDirAsFile,
    request_denied_internal => RequestDeniedInternal,
    non_uri_request_decided => NonUriRequestDecided,
    escaped_uri_refused => EscapedUriRefused,
    denied_without_request => DeniedWithoutRequest,
    // Issue 25, resource watches (h25a).
    watch_uri_reused => WatchUriReused,
    watch_ignores_excludes => WatchIgnoresExcludes,
    // Issue 25, authentication (i25c).
    valid_token_refused => ValidTokenRefused,
    wrong_token_accepted => WrongTokenAccepted,
    protected_agent_open => ProtectedAgentOpen,
    auth_refused_invalid_params => AuthRefusedInvalidParams,
    tool_auth_unresolved => ToolAuthUnresolved,
    // Session 16: the authenticate gaps the mutation run found.
    tool_auth_by_any_resource => ToolAuthByAnyResource,
    malformed_authenticate_accepted => MalformedAuthenticateAccepted,
    zero_expiry_accepted => ZeroExpiryAccepted,
    // Session 16: schedule triggers fire.
    schedule_next_run_unset => ScheduleNextRunUnset,
    schedule_never_fires => ScheduleNeverFires,
    run_allowance_ignored => RunAllowanceIgnored,
    run_count_kept_on_re_enable => RunCountKeptOnReEnable,
    // Session 17: the automation gaps the mutation run found.
    added_allowance_uncounted => AddedAllowanceUncounted,
    patched_trigger_labels_kept => PatchedTriggerLabelsKept,
    unknown_time_zone_accepted => UnknownTimeZoneAccepted,
    list_limit_unchecked => ListLimitUnchecked,
    watch_never_released => WatchNeverReleased,
    returned_client_forgotten => ReturnedClientForgotten,
    object_id_answered => ObjectIdAnswered,
    pending_removal_refused => PendingRemovalRefused,
    removes_any_pending => RemovesAnyPending,
    only_question_unknown => OnlyQuestionUnknown,
    only_option_unknown => OnlyOptionUnknown,
    side_chat_any_turn => SideChatAnyTurn,
    only_servers_toggle => OnlyServersToggle,
    foreign_chat_uri_accepted => ForeignChatUriAccepted,
    terminal_recreated => TerminalRecreated,
    terminal_cwd_ignored => TerminalCwdIgnored,
    input_entry_dropped_early => InputEntryDroppedEarly,
    summary_from_latest_chat => SummaryFromLatestChat,
    client_tool_unmirrored => ClientToolUnmirrored,
    auth_wait_unmirrored => AuthWaitUnmirrored,
    summary_activity_dropped => SummaryActivityDropped,
    promoted_activity_ignored => PromotedActivityIgnored,
    promoting_chat_activity => PromotingChatActivity,
    cron_steps_loose => CronStepsLoose,
    day_fields_both_required => DayFieldsBothRequired,
    limit_ignored => LimitIgnored,
    after_date_refused => AfterDateRefused,
    disable_conditions_unchecked => DisableConditionsUnchecked,
    mcp_unknown_tool_unserved => McpUnknownToolUnserved,
    wrong_agent_described => WrongAgentDescribed,
    terminal_output_dropped => TerminalOutputDropped,
    state_channel_unstripped => StateChannelUnstripped,
    revocation_ignored => RevocationIgnored,
    stale_expiry_applied => StaleExpiryApplied,
    answer_kinds_narrow => AnswerKindsNarrow,
    resolved_request_completable => ResolvedRequestCompletable,
    end_turn_attachment_refused => EndTurnAttachmentRefused,
    move_anchor_unchecked => MoveAnchorUnchecked,
    move_with_directories_refused => MoveWithDirectoriesRefused,
    directory_not_overwritten => DirectoryNotOverwritten,
    sunday_listed_twice_lost => SundayListedTwiceLost,
    run_cap_of_one_refused => RunCapOfOneRefused,
    update_unvalidated => UpdateUnvalidated,
    rename_target_deleted => RenameTargetDeleted,
    after_date_ignored => AfterDateIgnored,
    run_actions_accepted => RunActionsAccepted,
    empty_annotation_accepted => EmptyAnnotationAccepted,
    mcp_tool_call_unserved => McpToolCallUnserved,
    active_turn_side_chat_refused => ActiveTurnSideChatRefused,
    ended_run_failed_on_dispose => EndedRunFailedOnDispose,
    automation_commands_any_channel => AutomationCommandsAnyChannel,
    token_ignores_session_followers => TokenIgnoresSessionFollowers,
    token_ignores_chat_followers => TokenIgnoresChatFollowers,
    disposed_changesets_kept => DisposedChangesetsKept,
    changesets_dropped_silently => ChangesetsDroppedSilently,
    disposed_subscriptions_kept => DisposedSubscriptionsKept,
    limit_over_cap_refused => LimitOverCapRefused,
    event_trigger_never_fires => EventTriggerNeverFires,
    runs_cursor_never_ends => RunsCursorNeverEnds,
    disabled_trigger_fires => DisabledTriggerFires,
    // Issue 25, ROOT-012's replace form (i25c).
    config_replace_merges => ConfigReplaceMerges,
    // Issue 29, forked and side chats (i29).
    fork_foreign_source_accepted => ForkForeignSourceAccepted,
    fork_copies_all_turns => ForkCopiesAllTurns,
    side_chat_copies_history => SideChatCopiesHistory,
    fork_origin_forgotten => ForkOriginForgotten,
    // Issue 29, movable chats (i29).
    move_answers_old_owner => MoveAnswersOldOwner,
    reorder_leaves_one_out => ReorderLeavesOneOut,
    // Issue 29, working directories (i29).
    primary_removal_accepted => PrimaryRemovalAccepted,
    chat_directory_removal_cascades => ChatDirectoryRemovalCascades,
    // Issue 29, chat activity (i29).
    activity_unannounced => ActivityUnannounced,
    // Issue 29, default chat changes (i29).
    promoted_default_movable => PromotedDefaultMovable,
    // Issue 29, changesets (i29b).
    changeset_server_action_accepted => ChangesetServerActionAccepted,
    changeset_review_refused => ChangesetReviewRefused,
    changeset_unknown_operation_accepted => ChangesetUnknownOperationAccepted,
    changeset_scope_ignored => ChangesetScopeIgnored,
    changeset_chat_unreported => ChangesetChatUnreported,
    changeset_never_ready => ChangesetNeverReady,
    revert_leaves_file => RevertLeavesFile,
    revert_unannounced => RevertUnannounced,
    // Issue 29, automations (i29c).
    automation_meta_dropped => AutomationMetaDropped,
    automation_duplicate_conditions_accepted => AutomationDuplicateConditionsAccepted,
    automation_cron_names_refused => AutomationCronNamesRefused,
    automation_patch_disables => AutomationPatchDisables,
    automation_event_labels_kept => AutomationEventLabelsKept,
    automation_run_not_idempotent => AutomationRunNotIdempotent,
    automation_run_never_completes => AutomationRunNeverCompletes,
    automation_cancel_ignored => AutomationCancelIgnored,
    automation_session_link_kept => AutomationSessionLinkKept,
    automation_runs_oldest_first => AutomationRunsOldestFirst,
    automation_state_unannounced => AutomationStateUnannounced,
    // Issue 29, annotations (i29b).
    annotation_entry_refused => AnnotationEntryRefused,
    annotation_emptied => AnnotationEmptied,
    // Issue 29, background work, session metadata, agent changes (i29b).
    background_work_ends_with_turn => BackgroundWorkEndsWithTurn,
    session_meta_merged => SessionMetaMerged,
    agents_changed_unannounced => AgentsChangedUnannounced,
    // Issue 29, customizations and MCP servers (i29d).
    customization_removed_kept => CustomizationRemovedKept,
    customization_toggle_refused => CustomizationToggleRefused,
    mcp_start_unconfirmed => McpStartUnconfirmed,
    // Issue 29, configuration changes and session activity (i29d).
    mutable_config_refused => MutableConfigRefused,
    session_activity_stuck => SessionActivityStuck,
    canvas_state_merged => CanvasStateMerged,
    // Issue 29, sub-agents (i29d).
    worker_origin_user => WorkerOriginUser,
    subagent_result_unnamed => SubagentResultUnnamed,
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
        .map(|case| ahpspec::verdict::rule_of(&case.info.id).to_owned())
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
