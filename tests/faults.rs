//! Every faulty variant of the built-in host breaks exactly the rules it declares: the
//! cases for those rules fail and every other case still passes.

#[path = "common/allocator.rs"]
mod allocator;

use std::collections::BTreeSet;

#[path = "common/builtin.rs"]
mod builtin;

use ahpspec::host::Fault;

#[path = "faults/expectations.rs"]
mod expectations;
use expectations::{expected, profile_for};

#[path = "faults/check.rs"]
mod check;
use check::check;

/// How long after one another the faults that wait for schedules start: more than a catalog
/// run's busy part (2–3 s of CPU), far less than its wait for the next minute.
const STAGGER: std::time::Duration = std::time::Duration::from_secs(8);

macro_rules! fault_tests {
    (
        $($name:ident => $fault:ident,)*
        @side_by_side $group:ident { $($waiting:ident,)* }
    ) => {
        $(
            #[tokio::test]
            async fn $name() {
                check(Fault::$fault).await;
            }
        )*

        /// The faults whose cases wait for scheduled runs (up to two minutes each), run side
        /// by side in one test: one after another, their waits held CI's two test threads
        /// for some 13 minutes between them. Each starts [`STAGGER`] after the one before,
        /// so that only their waits overlap: six catalogs busy at once beside the other test
        /// thread's made the built-in host (a 300 ms grace period) too slow for
        /// RECONNECT-009/came-back's reconnect "at once". A failure names its fault.
        #[tokio::test]
        async fn $group() {
            let waiting = [$(Fault::$waiting,)*];
            futures_util::future::join_all(waiting.iter().enumerate().map(|(i, fault)| async move {
                tokio::time::sleep(STAGGER * i as u32).await;
                check(*fault).await;
            }))
            .await;
        }

        #[test]
        fn every_fault_has_a_test() {
            let tested = [$(Fault::$fault,)* $(Fault::$waiting,)*];
            for fault in Fault::ALL {
                assert!(tested.contains(fault), "fault {fault} has no test");
            }
        }

        #[test]
        fn the_faults_run_side_by_side_are_those_that_wait_for_schedules() {
            let waiting = [$(Fault::$waiting,)*];
            for fault in Fault::ALL {
                assert_eq!(
                    waiting.contains(fault),
                    profile_for(*fault).is_some(),
                    "fault {fault}"
                );
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
    disposed_annotations_kept => DisposedAnnotationsKept,
    disposed_canvases_kept => DisposedCanvasesKept,
    integration_remnant_left => IntegrationRemnantLeft,
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
    @side_by_side faults_that_wait_for_schedules {
        ScheduleNeverFires,
        RunAllowanceIgnored,
        AllowanceEndsEarly,
        DisabledScheduleFires,
        ScheduleStopsAfterRun,
        RunCountKeptOnReEnable,
    }
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
