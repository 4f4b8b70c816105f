//! Faulty variants of the reference host. Each one breaks exactly one rule of
//! `docs/ahp/RULES.md` (named by its stable ID) and nothing else, so that every check of
//! the harness can be shown to fail against the one bug it exists for.

use crate::faultset::fault_catalog;
pub use crate::faultset::UnknownFault;

fault_catalog! {
    /// A deliberate single violation injected at a named seam of the host.
    Fault, kind = "fault", list = "ahpspec serve --fault list",
    NoJsonrpcMember => ("no-jsonrpc-member", "TRANSPORT-002", "Omits the \"jsonrpc\":\"2.0\" member from responses to ping."),
    DuplicateResponse => ("duplicate-response", "TRANSPORT-003", "Answers every ping twice."),
    AnswersNotifications => ("answers-notifications", "TRANSPORT-004", "Answers an unsubscribe notification with a response."),
    ResultAndError => ("result-and-error", "TRANSPORT-005", "Puts both result and error in the response to an unknown method."),
    DiesOnMalformed => ("dies-on-malformed", "TRANSPORT-006", "Stops answering on a connection after a frame that is not valid JSON."),
    NotRequestAccepted => ("not-request-accepted", "TRANSPORT-007", "Answers an object without a method with a success instead of -32600."),
    WrongMethodNotFound => ("wrong-method-not-found", "TRANSPORT-008", "Answers unknown methods with -32603 instead of -32601."),
    PingNeedsInit => ("ping-needs-init", "TRANSPORT-010", "Refuses ping before initialize."),
    ArrayUnanswered => ("array-unanswered", "TRANSPORT-007", "Ignores a frame holding a JSON array (a batch): no -32600, no answer at all."),
    RootSnapshotUnasked => ("root-snapshot-unasked", "INIT-002", "Answers an initialize that asks for no initial subscriptions with the root snapshot anyway."),
    BusyDisposedListed => ("busy-disposed-listed", "LIFECYCLE-009", "Keeps listing a disposed session that had run a turn in listSessions answers to the connection that disposed it."),
    CancelEndsTwice => ("cancel-ends-twice", "TURN-007", "After accepting a client's chat/turnCancelled, sends chat/usage and a second chat/turnCancelled for the same turn."),
    CoalescedDropsDeltas => ("coalesced-drops-deltas", "SUB-010", "Drops the chat/delta envelopes of chats a connection subscribed with a latency budget (delivery.maxLatencyMs > 0), as a coalescing that loses text."),
    NoPing => ("no-ping", "TRANSPORT-010", "Does not implement ping: answers it with -32601 (method not found), before and after initialize."),
    VersionNotOffered => ("version-not-offered", "VERSION-001", "Answers initialize with its own version string, not the one the client offered."),
    LowestVersion => ("lowest-version", "VERSION-002", "Selects the lowest compatible offered version instead of the highest."),
    NoSupportedVersions => ("no-supported-versions", "VERSION-005", "Omits data.supportedVersions from the -32005 error."),
    NoCloseAfterVersionError => ("no-close-after-version-error", "VERSION-006", "Keeps the connection open after the -32005 error."),
    NewActionsToOldClient => ("new-actions-to-old-client", "VERSION-009", "Sends chat/canvasesChanged (introduced in 0.10.0) to 0.9.x connections."),
    SnapshotMissingField => ("snapshot-missing-field", "INV-SCHEMA-1", "Omits the required modifiedAt member from chat snapshots."),
    SubscribeUnknownOk => ("subscribe-unknown-ok", "SUB-011", "Answers subscribe to a nonexistent session with a made-up snapshot."),
    ActionAfterUnsubscribe => ("action-after-unsubscribe", "SUB-004", "Keeps sending a session's actions to a connection that unsubscribed from it."),
    NoBroadcast => ("no-broadcast", "DISPATCH-002", "Echoes accepted client session actions only to their sender, not to other subscribers."),
    CrossChannelReorder => ("cross-channel-reorder", "ENV-002", "Delivers chat/turnComplete after the session/chatUpdated it causes: each channel stays in order, the connection's serverSeq order does not."),
    RepeatServerSeq => ("repeat-server-seq", "ENV-003", "Gives a title change the same serverSeq as the title change of the same session just before it (once)."),
    HostActionOrigin => ("host-action-origin", "ENV-005", "Puts an origin on host-originated session/ready actions."),
    WrongClientSeq => ("wrong-client-seq", "DISPATCH-001", "Echoes accepted client actions with clientSeq + 1."),
    EchoMissingChannel => ("echo-missing-channel", "DISPATCH-004", "Answers a dispatch to a nonexistent session with a rejection echo instead of ignoring it."),
    ServerOnlyAccepted => ("server-only-accepted", "DISPATCH-006", "Accepts and applies server-only actions such as session/activityChanged from clients."),
    ReplayWrongRange => ("replay-wrong-range", "RECONNECT-002", "Replays on reconnect starting one envelope too early (includes lastSeenServerSeq)."),
    ReplayNotifications => ("replay-notifications", "RECONNECT-006", "Re-sends root/sessionAdded for sessions created while the client was away after a reconnect."),
    NoSessionAdded => ("no-session-added", "ROOT-005", "Never sends root/sessionAdded."),
    NoSessionRemoved => ("no-session-removed", "ROOT-006", "Never sends root/sessionRemoved."),
    DuplicateSessionOk => ("duplicate-session-ok", "LIFECYCLE-001", "Accepts createSession for a URI that is already in use."),
    UnknownProviderOk => ("unknown-provider-ok", "LIFECYCLE-006", "Creates a ready session for an unknown provider."),
    CancelIdleAccepted => ("cancel-idle-accepted", "CHAT-VALIDATE-003", "Accepts chat/turnCancelled when no turn is active."),
    ConfirmNotPending => ("confirm-not-pending", "CHAT-VALIDATE-002", "Accepts chat/toolCallConfirmed for a tool call that is not pending confirmation."),
    RemoveMissingPending => ("remove-missing-pending", "CHAT-VALIDATE-009", "Accepts chat/pendingMessageRemoved for a message that does not exist."),
    SummaryDrift => ("summary-drift", "CHAT-003", "Stops announcing modifiedAt changes with session/chatUpdated, so the session catalog drifts."),
    ChatListedTwice => ("chat-listed-twice", "INV-SESSION-1", "Lists the chat of a one-chat session twice in session snapshots (its state and the actions are right)."),
    ClientListedTwice => ("client-listed-twice", "INV-SESSION-2", "Lists the only active client, and the only input-needed entry, twice in session snapshots (its state and the actions are right)."),
    DirectoryListedTwice => ("directory-listed-twice", "INV-SESSION-3", "Lists the only working directory of a session twice in session snapshots (its state and the actions are right)."),
    NegativeDuration => ("negative-duration", "INV-CHAT-1", "Reports the newest ended turn's duration as -1 in chat snapshots."),
    ErrorPartDropped => ("error-part-dropped", "INV-CHAT-3", "Leaves the closing error part out of errored turns in chat snapshots."),
    InProgressStuck => ("in-progress-stuck", "STATUS-003", "Leaves the InProgress bit set on the chat after a turn completes."),
    QueuedUpdateAppends => ("queued-update-appends", "PENDING-002", "Appends a queued message set with an existing id as a second entry instead of updating it in place."),
    QueueLifo => ("queue-lifo", "PENDING-003", "Consumes queued messages newest first."),
    NoSkipOnTurnEnd => ("no-skip-on-turn-end", "TOOL-007", "Leaves tool calls pending after their turn is cancelled."),
    TruncateKeepsActive => ("truncate-keeps-active", "TURN-012", "Keeps the active turn (and its agent) alive after chat/truncated."),
    TurnsLoadedAfterResponse => ("turns-loaded-after-response", "TURN-010", "Answers fetchTurns before dispatching chat/turnsLoaded."),
    DeltaBeforePart => ("delta-before-part", "TURN-003", "Streams markdown deltas for a part it never created with chat/responsePart."),
    ErrorAsResponsePart => ("error-as-response-part", "TURN-005", "Sends the scripted error as a chat/responsePart before ending the turn with chat/error."),
    InputStatusWrong => ("input-status-wrong", "INPUT-002", "Leaves the chat InputNeeded after the last input request is completed."),
    BinaryFrame => ("binary-frame", "TRANSPORT-001", "Sends a binary frame after answering initialize."),
    NotificationWithoutChannel => ("notification-without-channel", "TRANSPORT-011", "Sends an extension notification whose params carry no channel after answering initialize."),
    ActionOnWrongChannel => ("action-on-wrong-channel", "ENV-004", "Sends a chat/activityChanged action on the session channel when a session becomes ready."),
    SnapshotSeqAhead => ("snapshot-seq-ahead", "SUB-002", "Reports session snapshots with a fromSeq 1,000 past the serverSeq they reflect."),
    SummaryStatusBits => ("summary-status-bits", "STATUS-001", "Sets both the Idle and InProgress bits in root/sessionSummaryChanged while a turn runs."),
    UsageWrongTurn => ("usage-wrong-turn", "TURN-004", "Reports scripted usage with a stale turnId."),
    LegacyUri => ("legacy-uri", "SUB-012", "Answers initialize with a legacy agenthost: URI as defaultDirectory."),
    // Prerequisites: faults that stop most cases before their own rule (they are blocked by it).
    SessionsNeverReady => ("sessions-never-ready", "LIFECYCLE-003", "Leaves every session of the scripted agent creating: neither session/ready nor session/creationFailed ever comes."),
    RejectsTruncation => ("rejects-truncation", "TURN-012", "Rejects every chat/truncated, as a host without truncation would; cases that only use it to end a turn are blocked by TURN-012."),
    RejectsTurnStart => ("rejects-turn-start", "TURN-001", "Rejects every chat/turnStarted from a client; the cases that run a turn on the way to their rule are blocked by TURN-001."),
    InitializeError => ("initialize-error", "INIT-001", "Answers initialize offering exactly [\"1.0.0\"], a version it supports, with an internal error."),
    // Issue 11, scripted cases (h-suites).
    TurnCompletedTwice => ("turn-completed-twice", "TURN-002", "Ends every completed turn with a second chat/turnComplete."),
    EchoOrderSwapped => ("echo-order-swapped", "DISPATCH-005", "Applies (and echoes) a client's session title changes that arrive back to back in swapped pairs, the second before the first."),
    ProgressNeverFinal => ("progress-never-final", "ROOT-010", "Reports session creation progress as 0 of 1 and never sends the final frame with progress == total."),
    // Issue 11, transport slice: formats, unanswered requests, host-to-client requests.
    BadTimestamp => ("bad-timestamp", "ROOT-009", "Gives session summaries createdAt \"sometime last week\"."),
    UnansweredRequest => ("unanswered-request", "TRANSPORT-003", "Never answers listSessions for a page after the first (a cursor it issued itself)."),
    ErrorsOnNotifications => ("errors-on-notifications", "TRANSPORT-004", "Answers an unsubscribe notification with an error response."),
    AcceptsMissingJsonrpc => ("accepts-missing-jsonrpc", "TRANSPORT-007", "Serves a request without \"jsonrpc\":\"2.0\" as a valid one instead of answering -32600."),
    HostRequestWrongChannel => ("host-request-wrong-channel", "TRANSPORT-012", "Sends its host-to-client resourceRead of a message's resource attachment on the session's channel instead of ahp-root://."),
    // Tool-call lifecycle, INV-CHAT-2 and the session invariants at checkpoints (h-state).
    ToolReadyAfterComplete => ("tool-ready-after-complete", "INV-TOOL-1", "Sends chat/toolCallReady again for a host tool call it has just completed."),
    ConfirmedMaybe => ("confirmed-maybe", "INV-TOOL-2", "Marks auto-approved tool calls that ask for result confirmation confirmed \"maybe\"."),
    ToolCallListedTwice => ("tool-call-listed-twice", "INV-CHAT-2", "Lists the first tool call of every ended turn twice in chat snapshots (its state and the actions are right)."),
    SkipAsDenied => ("skip-as-denied", "TOOL-007", "Cancels the tool calls a cancelled turn leaves open with reason denied instead of skipped."),
    DefaultChatUnlisted => ("default-chat-unlisted", "INV-SESSION-1", "Leaves the default chat out of the chats of snapshots of sessions with working directories (its state and the actions are right)."),
    InputNeededChatUnlisted => ("input-needed-chat-unlisted", "INV-SESSION-2", "Names a chat that does not exist in the inputNeeded entries of session snapshots."),
    ChatDirectoryStray => ("chat-directory-stray", "INV-SESSION-3", "Lists a working directory its session lacks in chat snapshots (and their catalog entries) of sessions with working directories."),
    MoveNonMovableAccepted => ("move-non-movable-accepted", "CHAT-MOVE-001", "Answers moveChat on a chat that is not movable with success (and moves nothing)."),
    AuthRequiredWithoutResources => ("auth-required-without-resources", "ERR-002", "Answers authenticate with -32007 but no data.resources."),
    PermissionDeniedBadData => ("permission-denied-bad-data", "ERR-003", "Answers resourceRequest with -32009 whose data.request is the bare URI instead of the request params."),
    ListedTitleStale => ("listed-title-stale", "INV-SUMMARY-3", "Gives every listSessions entry a title its session does not have."),
    ListedChatTitleStale => ("listed-chat-title-stale", "INV-SUMMARY-2", "Gives the chats of every listSessions entry a title they do not have."),
    ModifiedAtLate => ("modified-at-late", "INV-CHAT-6", "Moves a chat's modifiedAt one second past its completed turn's end, without an action."),
    AuthResolvedWrongTurn => ("auth-resolved-wrong-turn", "TURN-004", "Sends chat/toolCallAuthResolved with a stale turnId after completing a host tool call."),
    // Issue 12, session, status, pending and input (faults-c).
    AnswerWithoutValue => ("answer-without-value", "CHAT-VALIDATE-006", "Accepts chat/inputAnswerChanged whose submitted or draft answer has no value, or a value without its payload."),
    AcceptUnanswered => ("accept-unanswered", "CHAT-VALIDATE-008", "Accepts chat/inputCompleted with accept while a required question has no submitted answer."),
    ConfigChangeAccepted => ("config-change-accepted", "SESSION-014", "Accepts session/configChanged of a property the session does not declare session-mutable."),
    OneActiveClient => ("one-active-client", "SESSION-006", "Rejects session/activeClientSet from a client while another client is active."),
    UnsubscribedDispatchRejected => ("unsubscribed-dispatch-rejected", "SESSION-010", "Rejects chat actions from connections not subscribed to the chat."),
    SteeringSlotKept => ("steering-slot-kept", "PENDING-001", "Rejects a steering chat/pendingMessageSet while another steering message is set, instead of replacing it."),
    InputCancelledWithTurn => ("input-cancelled-with-turn", "INPUT-005", "Resolves open input requests with response cancel when their turn is cancelled, so the ended turn holds no unanswered request."),
    DraftsOverwritten => ("drafts-overwritten", "INPUT-003", "Clears the answers other clients drafted (host chat/inputAnswerChanged without answer) when a client drafts one."),
    EndsTurnAfterAccept => ("ends-turn-after-accept", "INPUT-006", "Completes the turn as soon as an input request is accepted, without the work the request blocked."),
    ErrorStatusCleared => ("error-status-cleared", "STATUS-004", "Puts a chat back to Idle (1) right after chat/error, behind the reducers' back."),
    TurnKeepsRead => ("turn-keeps-read", "STATUS-005", "Keeps the IsRead bit of a read chat when a client starts a turn on it, behind the reducers' back."),
    ArchiveMarksRead => ("archive-marks-read", "STATUS-006", "Marks a session read (a host session/isReadChanged) whenever a client archives it."),
    ReadNotProjected => ("read-not-projected", "STATUS-007", "Leaves the session's chat catalog status unchanged when only a chat's IsRead bit changes."),
    QueuedIdleNotRemoved => ("queued-idle-not-removed", "PENDING-004", "Starts the turn for a message queued on an idle chat without first removing it with chat/pendingMessageRemoved."),
    ListedIdleWhileBusy => ("listed-idle-while-busy", "SESSION-013", "Reports the activity of every listSessions entry as Idle, whatever its chats do."),
    SessionNotInputNeeded => ("session-not-input-needed", "SESSION-007", "Keeps a session's activity InProgress (8) while its inputNeeded holds a chat input request, behind the reducers' back."),
    InputEntryStaleTurn => ("input-entry-stale-turn", "SESSION-008", "Names a turn that is not the chat's active turn in toolConfirmation inputNeeded entries."),
    DefaultChatRestored => ("default-chat-restored", "SESSION-002", "Points defaultChat back at the default chat (session/defaultChatChanged) right after disposing it."),
    InputAnswersDropped => ("input-answers-dropped", "INPUT-004", "Drops the final answers of an accepted chat/inputCompleted from the resolved part, behind the reducers' back."),
    InputEntryKeptUntilTurnEnd => ("input-entry-kept-until-turn-end", "SESSION-009", "Removes a chat input request's inputNeeded entry only when its turn ends, not when the request resolves."),
    ReorderDrops => ("reorder-drops", "PENDING-006", "Drops the queued messages a chat/queuedMessagesReordered does not name, behind the reducers' back."),
    SteeringConsumedIdle => ("steering-consumed-idle", "PENDING-005", "Consumes a steering message set on an idle chat at once (chat/pendingMessageRemoved), instead of keeping it for the next turn."),
    DefaultChatMovable => ("default-chat-movable", "SESSION-004", "Creates every session's default chat movable (its state and catalog entry say movable: true)."),
    InputNeededWithoutInProgress => ("input-needed-without-in-progress", "STATUS-002", "Reports InputNeeded chats as 16 (bit 4 without bit 3) in chat snapshots (its state and the actions are right)."),
    InputShownResolved => ("input-shown-resolved", "INPUT-001", "Shows the open input requests of the active turn as declined in chat snapshots (its state and the actions are right)."),
    InputRequestListedTwice => ("input-request-listed-twice", "INV-CHAT-4", "Lists each open input request of the active turn twice in chat snapshots, as a host appending a re-announced request would (its state and the actions are right)."),
    QueuedTurnUnreferenced => ("queued-turn-unreferenced", "PENDING-007", "Starts the turns of queued messages without queuedMessageId."),
    NewestChatListedTwice => ("newest-chat-listed-twice", "SESSION-001", "Lists the newest chat of a session with several chats twice in session snapshots (its state and the actions are right)."),
    // Issue 12, chat-channel (faults-a).
    EchoMissingChat => ("echo-missing-chat", "CHAT-VALIDATE-001", "Answers a dispatch to a nonexistent chat with a rejection echo instead of ignoring it."),
    ResumeNotResumable => ("resume-not-resumable", "CHAT-VALIDATE-004", "Accepts chat/turnResume of any turn while no turn is active, even a completed one."),
    AnswerUnknownRequest => ("answer-unknown-request", "CHAT-VALIDATE-005", "Accepts chat/inputAnswerChanged for a requestId no open input request has."),
    CompleteUnknownRequest => ("complete-unknown-request", "CHAT-VALIDATE-007", "Accepts chat/inputCompleted for a requestId no open input request has."),
    OutsideDirectoryAccepted => ("outside-directory-accepted", "CHAT-VALIDATE-011", "Accepts chat/workingDirectorySet with a directory outside the session's working directories."),
    TurnBeforeReady => ("turn-before-ready", "TURN-009", "Accepts chat/turnStarted in a chat whose session is not ready (creating or failed)."),
    UnknownChatAttached => ("unknown-chat-attached", "TURN-014", "Accepts chat/turnStarted whose message attaches an unknown chat or an unknown endTurn."),
    UnsupportedSourceAccepted => ("unsupported-source-accepted", "CHAT-FORK-001", "Answers createChat with a fork or side-chat source it does not support by creating a plain chat."),
    ChatOutsideDirectoryAccepted => ("chat-outside-directory-accepted", "CHAT-007", "Creates chats with working directories outside the session's set."),
    NoChatRemoved => ("no-chat-removed", "CHAT-006", "Disposes chats other than the session's default chat without publishing session/chatRemoved."),
    TurnsLoadedNewestFirst => ("turns-loaded-newest-first", "TURN-011", "Answers fetchTurns with a chat/turnsLoaded whose turns are newest first."),
    ResumeRejected => ("resume-rejected", "TURN-008", "Rejects chat/turnResume even of the latest turn ending in a resumable error."),
    TruncateUnloaded => ("truncate-unloaded", "TURN-013", "Applies chat/truncated at a turn outside a subscriber's loaded window without loading the older turns first."),
    CancelKeepsStreaming => ("cancel-keeps-streaming", "TURN-007", "Streams one more chat/delta for a cancelled turn's last markdown part after accepting the cancellation."),
    BusyUnannounced => ("busy-unannounced", "CHAT-004", "Never announces a chat's in-progress status with session/chatUpdated (the session catalog shows it idle through the turn)."),
    RootChatsUnpublished => ("root-chats-unpublished", "CHAT-005", "Leaves the chats member out of root/sessionSummaryChanged, so chat status changes never reach root subscribers."),
    ChatAddedAfterResponse => ("chat-added-after-response", "CHAT-001", "Answers createChat before sending the session/chatAdded that creates the chat."),
    ChatSnapshotElsewhere => ("chat-snapshot-elsewhere", "CHAT-002", "Names another URI as the resource of chat snapshots."),
    // Issue 12, lifecycle and transport (faults-b).
    SubscribeParamsInternalError => ("subscribe-params-internal-error", "TRANSPORT-009", "Answers subscribe without a channel with -32603 instead of -32602."),
    RejectsUnknownKeys => ("rejects-unknown-keys", "TRANSPORT-013", "Refuses listSessions whose params carry a key it does not know with -32602."),
    RootSnapshotTwice => ("root-snapshot-twice", "INIT-002", "Answers initialize with the root snapshot twice."),
    RootFromSeqAhead => ("root-from-seq-ahead", "INIT-004", "Gives the root snapshot of initialize a fromSeq one past the result's serverSeq."),
    McpAppUnasked => ("mcp-app-unasked", "INIT-006", "Advertises an MCP server customization with an mcpApp on the scripted agent to every client, including those that did not declare mcpApps."),
    ServerInfoNameless => ("server-info-nameless", "INIT-007", "Answers initialize with a serverInfo that has a version but no name."),
    ForeignActiveClientOk => ("foreign-active-client-ok", "LIFECYCLE-008", "Accepts createSession whose activeClient names another client's clientId."),
    DisposedStillListed => ("disposed-still-listed", "LIFECYCLE-009", "Keeps listing a disposed session in listSessions answers to the connection that disposed it."),
    ChatInMissingSessionOk => ("chat-in-missing-session-ok", "LIFECYCLE-010", "Answers createChat on a nonexistent session with success (and creates nothing)."),
    KnownMinorsOnly => ("known-minors-only", "VERSION-003", "Accepts 1.x versions only up to 1.2.x, refusing later minors with -32005."),
    OldOffersInvalidRequest => ("old-offers-invalid-request", "VERSION-004", "Answers an offer of only unsupported 0.x versions with -32600 instead of -32005."),
    TwoPartVersionSelected => ("two-part-version-selected", "VERSION-007", "Reads a malformed two-part version such as \"1.0\" as 1.0.0 and selects it."),
    EmptyOfferInvalidParams => ("empty-offer-invalid-params", "VERSION-008", "Answers an empty protocolVersions list with -32602 instead of -32005."),
    AuthenticateAnything => ("authenticate-anything", "AUTH-001", "Answers authenticate with success for any resource and token."),
    ReservedErrorCode => ("reserved-error-code", "ERR-001", "Answers createSession on a URI that is not a session URI with the reserved code -32006."),
    ResolveMissingWrongCode => ("resolve-missing-wrong-code", "RES-001", "Answers resourceResolve on a missing URI with -32602 instead of -32008."),
    NegativeIdUnanswered => ("negative-id-unanswered", "FUZZ-004", "Never answers a request whose id is a negative number."),
    AnonymousDispatchApplied => ("anonymous-dispatch-applied", "FUZZ-005", "Applies dispatchAction from a connection that never initialized."),
    RootWithoutAgents => ("root-without-agents", "INIT-003", "Leaves the agents array out of the root snapshot of initialize."),
    CreatingLifecycleUnknown => ("creating-lifecycle-unknown", "LIFECYCLE-002", "Reports the lifecycle of a session still creating as \"pending\" in snapshots."),
    FailedAsCreationFailed => ("failed-as-creation-failed", "LIFECYCLE-004", "Reports the lifecycle of a failed session as \"creationFailed\" in snapshots."),
    FailedWithoutError => ("failed-without-error", "LIFECYCLE-005", "Leaves creationError out of snapshots of failed sessions."),
    BinaryWedgesPeers => ("binary-wedges-peers", "FUZZ-001", "After a binary frame, stops answering requests on the sender's sibling connections (clientIds equal up to the last '-')."),
    BatchDispatchApplied => ("batch-dispatch-applied", "FUZZ-002", "Answers a JSON-RPC batch (an array) as an invalid request, yet applies the dispatchAction notifications inside it."),
    DeepNestingWedges => ("deep-nesting-wedges", "FUZZ-003", "After a frame nested more than 1,000 levels deep, answers no request of the sender's client application (every connection whose clientId is equal up to the last '-'), as a host whose per-client worker died of a recursive parser's stack overflow."),
    // Issue 12, tools, subscriptions, reconnect, root (faults-d).
    UnsubscribeKeepsActiveClient => ("unsubscribe-keeps-active-client", "SUB-014", "Leaves a client in a session's activeClients after it unsubscribes from the session."),
    ReconnectKeepsActiveClient => ("reconnect-keeps-active-client", "RECONNECT-008", "Leaves a reconnecting client in the activeClients of sessions its reconnect no longer lists."),
    NeverForgetsClient => ("never-forgets-client", "RECONNECT-009", "Keeps a client that disconnected and never came back in activeClients forever."),
    MissingNotListed => ("missing-not-listed", "RECONNECT-004", "Leaves subscriptions it cannot resume (disposed sessions) out of a replay's missing list."),
    UnknownCursorRestarts => ("unknown-cursor-restarts", "ROOT-004", "Answers listSessions with an unknown cursor with the first page instead of -32602."),
    SessionsOldestFirst => ("sessions-oldest-first", "ROOT-002", "Orders listSessions items least recently modified first."),
    NoActiveSessionsChanged => ("no-active-sessions-changed", "ROOT-011", "Never sends root/activeSessionsChanged (its root state keeps the count it started with)."),
    ArchiveChatRejected => ("archive-chat-rejected", "DISPATCH-008", "Rejects chat/isArchivedChanged, a client-dispatchable action whose preconditions hold."),
    SessionActionsToAll => ("session-actions-to-all", "SUB-005", "Sends the actions clients dispatch on a session to all connections subscribed to the root channel, subscribed to the session or not."),
    RootSnapshotMisnamed => ("root-snapshot-misnamed", "SUB-001", "Answers subscribe to ahp-root:// with a snapshot whose resource is ahp-root:/."),
    WindowWithoutCursor => ("window-without-cursor", "SUB-008", "Leaves turnsNextCursor out of chat snapshots whose view.turns window omits older turns."),
    ForeignClientCompletes => ("foreign-client-completes", "CHAT-VALIDATE-010", "Accepts chat/toolCallComplete for a client tool from a client that does not own it."),
    ToolDeltaBeforeStart => ("tool-delta-before-start", "TOOL-002", "Sends an empty chat/toolCallDelta for each host tool call before its chat/toolCallStart."),
    CompletedToolSkipped => ("completed-tool-skipped", "TOOL-001", "Turns a completed host tool call with input that is its turn's only response part into cancelled (reason skipped) once the turn has ended, behind the reducers' back: a terminal status changes."),
    SummaryChangeIdentity => ("summary-change-identity", "ROOT-007", "Repeats the session's resource, provider and createdAt in every root/sessionSummaryChanged."),
    SummaryChatsPartial => ("summary-chats-partial", "ROOT-008", "Lists only the newest chat in changes.chats of root/sessionSummaryChanged for sessions with several chats."),
    ToolInputNeededKept => ("tool-input-needed-kept", "TOOL-011", "Never removes a toolConfirmation entry from the session's inputNeeded once its confirmation is resolved."),
    ClientToolStalls => ("client-tool-stalls", "TOOL-008", "Stops the turn's agent once the owning client completes its client tool: the turn never goes on."),
    ReconfirmChangesOwner => ("reconfirm-changes-owner", "TOOL-009", "Gives a host tool call an MCP contributor with its mid-execution re-confirmation chat/toolCallReady."),
    ReplayTailLater => ("replay-tail-later", "RECONNECT-003", "Answers a reconnect with exactly one envelope to replay with an empty replay, and sends the envelope as a notification after the response."),
    EmptyReplayRenamed => ("empty-replay-renamed", "RECONNECT-001", "Answers a reconnect with nothing to replay and nothing missing with {type: \"current\"}."),
    RejectedStillApplied => ("rejected-still-applied", "DISPATCH-003", "Sets the chat's working directory from a chat/workingDirectorySet it rejects."),
    EditedInputIgnored => ("edited-input-ignored", "TOOL-004", "Puts the original toolInput back on a tool call approved with editedToolInput, so it runs with the unedited input."),
    SelectedOptionDropped => ("selected-option-dropped", "TOOL-005", "Drops the selectedOption a chat/toolCallConfirmed with selectedOptionId stored on the tool call."),
    DenialAsSkip => ("denial-as-skip", "TOOL-003", "Records tool calls whose confirmation is denied as cancelled with reason skipped instead of denied."),
    ResultDenialAsDenial => ("result-denial-as-denial", "TOOL-006", "Records tool calls whose result is denied as cancelled with reason denied instead of result-denied."),
    RootListsSessions => ("root-lists-sessions", "ROOT-001", "Puts the list of session URIs into the root state of root snapshots."),
    TurnStreamToStarterOnly => ("turn-stream-to-starter-only", "SUB-003", "Sends the agent's actions of a client's turn only to that client and the session's subscribers, not to the chat's other subscribers."),
    CursorWithoutWindow => ("cursor-without-window", "SUB-007", "Adds a turnsNextCursor to the snapshot of chats with three or more turns subscribed without a view, as if older turns were left out."),
    MalformedTitleApplied => ("malformed-title-applied", "DISPATCH-007", "Sets the session's title to the JSON text of the title member of a session/titleChanged it rejects as malformed."),
    // Issue 22, class 5: verdicts on frames that repeat what the client said.
    TurnEndElsewhere => ("turn-end-elsewhere", "SUB-003", "Sends the agent's ending of a client's turn (chat/turnComplete, chat/turnCancelled, chat/error) only to the chat's subscribers on other clients, when it has any, not to the client that started the turn."),
    MalformedAccepted => ("malformed-accepted", "DISPATCH-007", "Accepts a client action of a known type that does not decode, echoing it as sent: it changes nothing, except a chat/turnStarted whose startedAt is missing or no string, which starts now and runs."),
    // Issue 12, session 6: the last case rules without a fault (TURN-006, ENV-001, RECONNECT-005/007, SUB-013).
    NegativeTurnDuration => ("negative-turn-duration", "TURN-006", "Ends every turn with chat/turnComplete whose duration is -1 ms (the reducers clamp it to 0: a warning, not a violation)."),
    FractionalDuration => ("fractional-duration", "TURN-006", "Sends every chat/turnComplete with a duration of n + 0.5 ms, a number that is not an integer."),
    ReplayDropsDeltas => ("replay-drops-deltas", "RECONNECT-007", "Leaves the chat/delta envelopes out of every reconnect replay, so a client's fold misses the streamed text."),
    ClientSeqAsString => ("client-seq-as-string", "ENV-001", "Writes the origin clientSeq of session/titleChanged envelopes as a string (\"3\")."),
    ReconnectSnapshotShort => ("reconnect-snapshot-short", "RECONNECT-005", "Answers a reconnect in the snapshot form without the snapshot of the last subscription it resumes."),
    RootSubscribeRefused => ("root-subscribe-refused", "SUB-013", "Refuses a subscribe to ahp-root:// from a connection that did not subscribe to it at initialize."),
    // Issue 22, chat, tool, input, pending and status cases (i22-agent): set-up steps that
    // exercise another rule are blocked by it.
    QueuedIdleKept => ("queued-idle-kept", "PENDING-004", "Keeps a message queued on an idle chat in the queue: no turn starts for it until another turn ends."),
    PendingShownRunning => ("pending-shown-running", "INV-FOLD-1", "Shows tool calls waiting for confirmation as already running (confirmed not-needed) in chat snapshots (its actions are right)."),
    ReadUnapplied => ("read-unapplied", "DISPATCH-008", "Accepts chat/isReadChanged (an echo without rejectionReason) but leaves the chat's IsRead bit as it was, behind the reducers' back."),
    // Issue 25, terminals (i25b).
    TerminalsChangedOnlyNew => ("terminals-changed-only-new", "TERM-001", "Lists only the new terminal in the root/terminalsChanged of a createTerminal, not the full list."),
    LeaksShellIntegration => ("leaks-shell-integration", "TERM-002", "Passes the shell's OSC 633 integration sequences through in terminal/data."),
    ClaimFromAnyone => ("claim-from-anyone", "TERM-003", "Accepts terminal/claimed from a client that does not hold the terminal's claim."),
    InputShownAsOutput => ("input-shown-as-output", "TERM-004", "Adds the data of every accepted terminal/input to the terminal's content as an unclassified part, behind the reducers' back."),
    ExitedShownRunning => ("exited-shown-running", "INV-TERM-1", "Shows an exited terminal as running again in terminal snapshots."),
    CommandFinishedWrongId => ("command-finished-wrong-id", "TERM-005", "Ends each detected command with a terminal/commandFinished whose commandId is not the one its terminal/commandExecuted gave."),
    ExitUnlisted => ("exit-unlisted", "TERM-006", "Sends terminal/exited when a terminal's shell ends but no root/terminalsChanged, and lists every terminal running in the root list."),
    CwdUnreported => ("cwd-unreported", "TERM-007", "Never sends terminal/cwdChanged when the shell changes directory."),
    // Issue 25, session configuration and completions (i25b).
    ResolveNotSettled => ("resolve-not-settled", "CONFIG-001", "Reads the sandbox value a client gives resolveSessionConfig inverted, so the values it answers do not resolve to themselves."),
    SessionConfigIgnored => ("session-config-ignored", "CONFIG-002", "Creates every session with the default configuration, whatever createSession.config says."),
    CompletionValuesUnaccepted => ("completion-values-unaccepted", "CONFIG-003", "Answers sessionConfigCompletions with values in upper case, which the property does not allow."),
    CompletionRangesInBytes => ("completion-ranges-in-bytes", "COMPLETIONS-001", "Gives completion items' rangeStart and rangeEnd in UTF-8 bytes instead of UTF-16 code units."),
    // Issue 25, root configuration (i25b).
    ConfigMergeReplaces => ("config-merge-replaces", "ROOT-012", "Follows each root/configChanged merge a client dispatches with its own root/configChanged replacing the values by the ones the client set."),
    // Issue 25, the stateless telemetry channel (i25b).
    StatelessSnapshot => ("stateless-snapshot", "SUB-006", "Answers subscribe to its telemetry (ahp-otlp:) channel with a snapshot (of the root state)."),
    LogsToEveryone => ("logs-to-everyone", "OTLP-001", "Sends its otlp/exportLogs notifications to every initialized connection, subscribed to the logs channel or not."),
    // Issue 25, resources on a real directory (h25a).
    ListFileOk => ("list-file-ok", "RES-002", "Answers resourceList of a file with an empty listing, as if it were a directory."),
    StaleIfMatchWrites => ("stale-if-match-writes", "RES-003", "Writes a file even when the ifMatch of resourceWrite is not its current etag."),
    MkdirNoParents => ("mkdir-no-parents", "RES-004", "Creates only the last directory of resourceMkdir: a missing parent gives -32008."),
    DeleteNonEmptyOk => ("delete-non-empty-ok", "RES-005", "Deletes a non-empty directory without recursive: true, contents and all."),
    BinaryAsUtf8 => ("binary-as-utf8", "RES-006", "Reads a file that is not UTF-8 as lossy utf-8 text instead of base64."),
    AppendTruncates => ("append-truncates", "RES-008", "Writes resourceWrite with mode append as a truncating write."),
    CopyOverwritesAnyway => ("copy-overwrites-anyway", "RES-009", "Overwrites an existing destination of resourceCopy and resourceMove even with failIfExists."),
    ResolveDirAsFile => ("resolve-dir-as-file", "RES-010", "Reports directories as type file in resourceResolve answers."),
    RequestDeniedInternal => ("request-denied-internal", "RES-011", "Denies a resourceRequest outside its workspace with -32603 instead of -32009."),
    EscapedUriRefused => ("escaped-uri-refused", "RES-011", "Refuses a resourceRequest whose uri holds a percent escape as invalid params (-32602), though the URI is well-formed."),
    NonUriRequestDecided => ("non-uri-request-decided", "TRANSPORT-009", "Takes a resourceRequest whose uri is not a URI as an access question (a grant or -32009), not as params of the wrong shape."),
    DeniedWithoutRequest => ("denied-without-request", "RES-012", "Refuses resource commands outside its workspace with -32009 but no data.request."),
    // Issue 25, resource watches (h25a).
    WatchUriReused => ("watch-uri-reused", "RES-007", "Answers every createResourceWatch of the same URI with the same channel."),
    WatchIgnoresExcludes => ("watch-ignores-excludes", "RES-013", "Reports changes to paths a resource watch excludes."),
    // Issue 25, authentication (i25c).
    ValidTokenRefused => ("valid-token-refused", "AUTH-004", "Refuses authenticate with -32007 even for an advertised resource and the token it accepts."),
    WrongTokenAccepted => ("wrong-token-accepted", "AUTH-001", "Answers authenticate for an advertised resource with success whatever the token (an unknown resource is still refused)."),
    ProtectedAgentOpen => ("protected-agent-open", "AUTH-003", "Creates sessions of the agent that advertises a required protected resource without any token."),
    AuthRefusedInvalidParams => ("auth-refused-invalid-params", "LIFECYCLE-007", "Refuses createSession for the agent that needs a token with -32602 instead of -32007 with data.resources."),
    // Issue 25, ROOT-012's replace form (i25c).
    ConfigReplaceMerges => ("config-replace-merges", "ROOT-012", "Follows each root/configChanged replacement a client dispatches with its own merge of the values the replacement dropped, so replace: true acts as a merge."),
    ToolAuthUnresolved => ("tool-auth-unresolved", "TOOL-010", "Accepts the token for the MCP tools' resource but never resumes the tool calls waiting for it (no chat/toolCallAuthResolved)."),
    ToolAuthByAnyResource => ("tool-auth-by-any-resource", "TOOL-010", "Resumes the tool calls waiting for the MCP tools' resource when a token for any resource is pushed, the agent's own included."),
    MalformedAuthenticateAccepted => ("malformed-authenticate-accepted", "AUTH-001", "Answers {} to authenticate params that do not decode (no token), as if a token had been pushed."),
    ZeroExpiryAccepted => ("zero-expiry-accepted", "TRANSPORT-009", "Accepts authenticate with expiresIn 0 (below the schema's minimum of 1) instead of -32602, ignoring the lifetime."),
    // Issue 29, forked and side chats (i29).
    ForkForeignSourceAccepted => ("fork-foreign-source-accepted", "CHAT-FORK-002", "Accepts a forked or side chat whose source chat belongs to another session."),
    ForkCopiesAllTurns => ("fork-copies-all-turns", "CHAT-FORK-003", "Copies every turn of the source chat into a fork, also those after the turn it was forked from."),
    SideChatCopiesHistory => ("side-chat-copies-history", "CHAT-FORK-004", "Copies the source chat's turns into a new side chat's visible history."),
    ForkOriginForgotten => ("fork-origin-forgotten", "CHAT-FORK-005", "Rewrites the origin of a forked or side chat to a user-created one when a turn of it completes (the session catalog follows)."),
    // Issue 29, movable chats (i29).
    MoveAnswersOldOwner => ("move-answers-old-owner", "CHAT-MOVE-002", "Moves a chat to another or a new session but answers moveChat with the session it left."),
    ReorderLeavesOneOut => ("reorder-leaves-one-out", "SESSION-005", "Publishes session/chatsReordered without the chat a move repositions (an incomplete order, which the reducers ignore)."),
    // Issue 29, working directories (i29).
    PrimaryRemovalAccepted => ("primary-removal-accepted", "SESSION-012", "Accepts session/workingDirectoryRemoved of the first working directory, which its agent advertises as a replaceable primary (primaryReplacement)."),
    ChatDirectoryRemovalCascades => ("chat-directory-removal-cascades", "CHAT-008", "Follows a client's chat/workingDirectoryRemoved with session/workingDirectoryRemoved of the same directory, taking it from the whole session."),
    // Issue 29, chat activity (i29).
    ActivityUnannounced => ("activity-unannounced", "CHAT-004", "Never announces a chat's activity (chat/activityChanged) with session/chatUpdated, so the session catalog never shows it."),
    // Issue 29, default chat changes (i29).
    PromotedDefaultMovable => ("promoted-default-movable", "SESSION-004", "Makes the next chat the session's default when the default chat is disposed (session/defaultChatChanged) but leaves it movable."),
    // Issue 29, changesets (i29b).
    ChangesetServerActionAccepted => ("changeset-server-action-accepted", "CHANGESET-001", "Accepts and applies a client's changeset/fileRemoved (only changeset/filesReviewChanged is a client's to dispatch)."),
    ChangesetReviewRefused => ("changeset-review-refused", "CHANGESET-001", "Refuses a client's changeset/filesReviewChanged on a changeset that advertises review."),
    ChangesetUnknownOperationAccepted => ("changeset-unknown-operation-accepted", "CHANGESET-002", "Answers invokeChangesetOperation for an operation the changeset does not list with an empty success instead of -32602."),
    ChangesetScopeIgnored => ("changeset-scope-ignored", "CHANGESET-002", "Runs a changeset operation on a target of any kind, also one its scopes leave out (a range for revert), instead of answering -32602."),
    RevertUnannounced => ("revert-unannounced", "INV-FOLD-1", "Drops reverted files from its changesets without changeset/fileRemoved or changeset/cleared: a subscriber's fold of the changeset channel keeps them."),
    AnnotationEntryRefused => ("annotation-entry-refused", "ANNOTATION-001", "Refuses a client's annotations/entrySet on an annotation of the session's annotations channel."),
    AnnotationEmptied => ("annotation-emptied", "ANNOTATION-002", "Accepts the removal of an annotation's last entry (annotations/entryRemoved), leaving an annotation without entries."),
    BackgroundWorkEndsWithTurn => ("background-work-ends-with-turn", "CHAT-009", "Removes the chat's background work (chat/backgroundWorkRemoved) when the turn that started it ends, instead of tracking it until the work is done."),
    SessionMetaMerged => ("session-meta-merged", "SESSION-016", "Sends session/metaChanged with the new _meta but keeps the old keys in the session's state (a merge, where the action replaces)."),
    AgentsChangedUnannounced => ("agents-changed-unannounced", "ROOT-013", "Changes an agent's description in the root state without root/agentsChanged."),
    ChangesetChatUnreported => ("changeset-chat-unreported", "CHANGESET-003", "Reports the agent's file changes in the session's changeset only: the chat never advertises one (no chat/changesetsChanged)."),
    ChangesetNeverReady => ("changeset-never-ready", "CHANGESET-003", "Never sets a changeset's status to ready after the agent's change: it stays computing (or recomputing)."),
    RevertLeavesFile => ("revert-leaves-file", "CHANGESET-004", "Restores a reverted file on disk and reports the revert, but keeps listing the file in the changesets (no changeset/fileRemoved or cleared)."),
    // Issue 29, customizations and MCP servers (i29d).
    CustomizationRemovedKept => ("customization-removed-kept", "CUSTOM-001", "Sends session/customizationRemoved for a customization the agent drops but keeps it in the session's state."),
    CustomizationToggleRefused => ("customization-toggle-refused", "CUSTOM-002", "Refuses a client's session/customizationToggled even for a customization the session lists."),
    MutableConfigRefused => ("mutable-config-refused", "SESSION-017", "Refuses every session/configChanged, also of a property the session's schema marks sessionMutable."),
    SessionActivityStuck => ("session-activity-stuck", "SESSION-018", "Sends session/activityChanged clearing the session's activity but keeps the old activity in the session's state."),
    CanvasStateMerged => ("canvas-state-merged", "CANVAS-001", "Sends canvas/stateChanged with the canvas's new state but keeps its old title when the new state has none (a merge, where the action replaces)."),
    WorkerOriginUser => ("worker-origin-user", "TOOL-013", "Spawns a sub-agent's worker chat with origin {kind: user} instead of naming the spawning tool call."),
    SubagentResultUnnamed => ("subagent-result-unnamed", "TOOL-013", "Completes a sub-agent tool call with a text content only: its result never names the worker chat (no subagent content)."),
    McpStartUnconfirmed => ("mcp-start-unconfirmed", "MCP-002", "Accepts session/mcpServerStartRequested but never reports the server's outcome (no session/mcpServerStateChanged): it stays starting."),
    // Issue 29, automations (i29c).
    AutomationMetaDropped => ("automation-meta-dropped", "AUTOMATION-002", "Publishes an accepted automation/createRequested with automation/set, but without the definition's _meta."),
    AutomationDuplicateConditionsAccepted => ("automation-duplicate-conditions-accepted", "AUTOMATION-003", "Accepts an automation/createRequested whose disableConditions repeat a kind (two afterRuns)."),
    AutomationCronNamesRefused => ("automation-cron-names-refused", "AUTOMATION-004", "Refuses schedule expressions that name months or weekdays (JAN, MON-FRI), which the AHP cron grammar allows."),
    AutomationPatchDisables => ("automation-patch-disables", "AUTOMATION-005", "Applies an automation/updateRequested that omits enabled as if it set enabled to false."),
    AutomationEventLabelsKept => ("automation-event-labels-kept", "AUTOMATION-006", "Saves an event trigger with the client's titles instead of normalizing them to the listed trigger definition's."),
    AutomationRunNotIdempotent => ("automation-run-not-idempotent", "AUTOMATION-001", "Starts a new run for every runAutomation, also one repeating an earlier requestId."),
    AutomationRunNeverCompletes => ("automation-run-never-completes", "AUTOMATION-007", "Leaves a run running after its session's turn completed (no automationRun/lifecycleChanged to completed)."),
    AutomationCancelIgnored => ("automation-cancel-ignored", "AUTOMATION-008", "Accepts automationRun/cancelRequested on a running run and does nothing: the run and its session's turn go on."),
    AutomationSessionLinkKept => ("automation-session-link-kept", "AUTOMATION-009", "Keeps a disposed session linked to its run (no automationRun/sessionRemoved)."),
    AutomationStateUnannounced => ("automation-state-unannounced", "INV-FOLD-1", "Ends automation runs and republishes catalogue entries by changing its state without automationRun/lifecycleChanged or automation/set: subscribers' folds of both channels fall behind."),
    SessionMcpAppsToAll => ("session-mcp-apps-to-all", "INIT-006", "Shows sessions' MCP Apps and their mcp:// channels to every client, including those that did not declare mcpApps (the root snapshot stays clean)."),
    McpUnadvertisedServed => ("mcp-unadvertised-served", "MCP-001", "Answers resources/list on an MCP App's mcp:// channel, whose capabilities are serverTools only, with a result instead of -32601."),
    McpToolsUnserved => ("mcp-tools-unserved", "MCP-003", "Advertises an MCP App with serverTools, yet answers tools/list on its mcp:// channel with -32601."),
    AutomationRunsOldestFirst => ("automation-runs-oldest-first", "AUTOMATION-010", "Lists an automation's run summaries oldest first (AutomationEntry.runs is newest first)."),
    ScheduleNextRunUnset => ("schedule-next-run-unset", "AUTOMATION-011", "Never publishes nextRunAt for an enabled automation with a schedule trigger (nor arms the occurrence it would show)."),
    ScheduleNeverFires => ("schedule-never-fires", "AUTOMATION-012", "Publishes the next occurrence of a schedule trigger as nextRunAt but starts no run when it arrives."),
    RunCountKeptOnReEnable => ("run-count-kept-on-re-enable", "AUTOMATION-013", "Keeps an automation's runCount when it is disabled and enabled again, instead of starting a fresh afterRuns allowance at 0."),
    // Session 17: the automation gaps the mutation run found.
    AddedAllowanceUncounted => ("added-allowance-uncounted", "AUTOMATION-014", "Shows no runCount after an update adds an afterRuns condition to an automation that had none (its allowance starts at 0)."),
    PatchedTriggerLabelsKept => ("patched-trigger-labels-kept", "AUTOMATION-006", "Normalizes event trigger labels on create only: an update that replaces the triggers is saved with the client's titles."),
    RunsCursorNeverEnds => ("runs-cursor-never-ends", "AUTOMATION-010", "Shows runsNextCursor on an automation whose every run is already listed (a cursor to an older page that does not exist)."),
    EventTriggerNeverFires => ("event-trigger-never-fires", "AUTOMATION-016", "Accepts event triggers but starts no run when their event occurs (a file written in the workspace)."),
    DisabledTriggerFires => ("disabled-trigger-fires", "AUTOMATION-016", "Starts runs from the event triggers of an automation whose enabled is false."),
    UnknownTimeZoneAccepted => ("unknown-time-zone-accepted", "AUTOMATION-015", "Accepts a schedule trigger whose timeZone is no IANA time zone identifier (and never schedules it)."),
    // Session 20: the broken twin of TRANSPORT-009 behind the proxy.
    ListLimitUnchecked => ("list-limit-unchecked", "TRANSPORT-009", "Answers listSessions whose limit is no integer with the whole listing, as if it had no limit, instead of -32602."),
    // Session 21: the gap the mutation run found in release_watches.
    WatchNeverReleased => ("watch-never-released", "RES-007", "Keeps every resource watch when its last subscriber unsubscribes: its channel can still be subscribed to."),
    // Session 21: the gap the mutation run found in forget_client_later.
    ReturnedClientForgotten => ("returned-client-forgotten", "RECONNECT-009", "Removes a client from activeClients once the grace period after its disconnect is over, even when it reconnected in time."),
    // Session 21: the gap the mutation run found in handle_text's id check.
    ObjectIdAnswered => ("object-id-answered", "TRANSPORT-007", "Takes a message whose id is an object or an array as a request, answering it under that id, instead of -32600."),
    // Session 22: the gaps the mutation run found in pending_message_removed.
    PendingRemovalRefused => ("pending-removal-refused", "DISPATCH-008", "Rejects a client's chat/pendingMessageRemoved even when the queued or steering message it names exists."),
    RemovesAnyPending => ("removes-any-pending", "CHAT-VALIDATE-009", "Accepts chat/pendingMessageRemoved whenever a pending message of its kind exists, whatever id it names (and removes nothing)."),
    // Session 23: the gaps the mutation run found in question, option, side-chat, toggle and
    // chat-URI checks.
    OnlyQuestionUnknown => ("only-question-unknown", "INPUT-003", "Matches a draft answer's questionId with the comparison inverted (any question of another id will do): the only question of a one-question request is unknown and its drafts are refused."),
    OnlyOptionUnknown => ("only-option-unknown", "TOOL-005", "Matches a confirmation's selectedOptionId with the comparison inverted (any option of another id will do): choosing the only option of a one-option call is refused."),
    SideChatAnyTurn => ("side-chat-any-turn", "CHAT-FORK-002", "Accepts a side chat whose source turn the source chat lacks."),
    OnlyServersToggle => ("only-servers-toggle", "CUSTOM-002", "Refuses session/customizationToggled for a listed customization that is not an MCP server."),
    ForeignChatUriAccepted => ("foreign-chat-uri-accepted", "CHAT-010", "Accepts createChat for a chat URI of any scheme and lists that chat in the session's catalog."),
    TerminalRecreated => ("terminal-recreated", "TERM-008", "Answers createTerminal for a terminal URI that exists by replacing that terminal with a new one."),
    TerminalCwdIgnored => ("terminal-cwd-ignored", "TERM-009", "Starts every terminal in the host's temporary directory, whatever cwd createTerminal names."),
    InputEntryDroppedEarly => ("input-entry-dropped-early", "SESSION-009", "Removes a chat's inputNeeded entries from the session at the chat's next change while their requests are still open (and sets the still-open ones again)."),
    SummaryFromLatestChat => ("summary-from-latest-chat", "SESSION-013", "Takes a session summary's activity from its most recently modified chat, even when the session has a default chat."),
    ClientToolUnmirrored => ("client-tool-unmirrored", "TOOL-011", "Leaves running client tools out of the session's inputNeeded (no toolClientExecution entry)."),
    AuthWaitUnmirrored => ("auth-wait-unmirrored", "TOOL-011", "Leaves tool calls waiting for a token out of the session's inputNeeded (no toolAuthentication entry)."),
    SummaryActivityDropped => ("summary-activity-dropped", "SESSION-013", "Leaves the activity of the chat that gives a session its status out of the session's root summary."),
    PromotedActivityIgnored => ("promoted-activity-ignored", "SESSION-013", "Takes a session summary's activity text from its default chat even when another chat won the InputNeeded or Error promotion."),
    PromotingChatActivity => ("promoting-chat-activity", "SESSION-013", "Takes a session summary's activity text from the first chat that needs input (or errored) even when the default chat, which supplies the activity bits, needs input itself."),
    CronStepsLoose => ("cron-steps-loose", "AUTOMATION-004", "Accepts schedule expressions with a step the AHP cron grammar forbids: a step of 0 (taken as 1) and a step on a single value (ignored)."),
    RevocationIgnored => ("revocation-ignored", "AUTH-005", "Answers authenticate with an empty token with success but keeps the connection's earlier token: what it unlocked stays unlocked."),
    StaleExpiryApplied => ("stale-expiry-applied", "AUTH-006", "Expires a connection's token when the lifetime of an earlier push of it ends, even though the token was pushed again since (and tells the client with auth/required)."),
    StateChannelUnstripped => ("state-channel-unstripped", "INIT-006", "Strips MCP Apps and mcp:// channels from what clients without mcpApps are shown, but leaves the channel in session/mcpServerStateChanged."),
    TerminalOutputDropped => ("terminal-output-dropped", "TERM-010", "Forwards terminal input to the shell but never sends what the shell writes: no terminal/data, so the terminal's content stays empty."),
    WrongAgentDescribed => ("wrong-agent-described", "ROOT-013", "When an agent describes itself anew, gives that description to every other agent in root/agentsChanged instead of to it."),
    McpUnknownToolUnserved => ("mcp-unknown-tool-unserved", "MCP-003", "Answers tools/call of a tool the MCP server does not have with -32601 (method not found), as if tools/call were not served, instead of an invalid-params error."),
    DisableConditionsUnchecked => ("disable-conditions-unchecked", "AUTOMATION-003", "Accepts disable conditions the types rule out in an automation/createRequested: an afterRuns cap that is no positive integer, an afterDate that is no timestamp."),
    AfterDateRefused => ("after-date-refused", "AUTOMATION-002", "Refuses every automation whose disable conditions hold an afterDate, valid ones too."),
    LimitIgnored => ("limit-ignored", "ROOT-003", "Answers listSessions with every session whatever its limit, and no nextCursor."),
    LimitOverCapRefused => ("limit-over-cap-refused", "ROOT-003", "Refuses listSessions with a limit above its own page size of 1 (-32602) instead of answering fewer entries."),
    DayFieldsBothRequired => ("day-fields-both-required", "AUTOMATION-011", "Computes nextRunAt with a day matching both day fields when both are restricted ('0 12 13 * FRI': only a Friday the 13th), where the grammar takes either."),
    AnswerKindsNarrow => ("answer-kinds-narrow", "INPUT-003", "Refuses input answers of kind number or selected-many, and skipped answers: only text, boolean and selected ones are taken."),
    EndTurnAttachmentRefused => ("end-turn-attachment-refused", "TURN-014", "Refuses a chat attachment whose endTurn names a completed turn the chat retains, as if it were unknown."),
    ResolvedRequestCompletable => ("resolved-request-completable", "CHAT-VALIDATE-007", "Accepts chat/inputCompleted for a request of the active turn that is already resolved (its part has a response)."),
    MoveAnchorUnchecked => ("move-anchor-unchecked", "CHAT-MOVE-001", "Accepts moveChat after an anchor that is not a chat of the destination session (the chat lands first)."),
    MoveWithDirectoriesRefused => ("move-with-directories-refused", "CHAT-MOVE-002", "Refuses moveChat of a chat with working directories into a session that has them, as if they were outside it."),
    DirectoryNotOverwritten => ("directory-not-overwritten", "RES-009", "Refuses resourceCopy and resourceMove onto an existing directory without failIfExists (-32010), as if failIfExists were set."),
    RunCapOfOneRefused => ("run-cap-of-one-refused", "AUTOMATION-002", "Refuses an afterRuns disable condition whose cap is 1, as if the cap had to be above 1."),
    UpdateUnvalidated => ("update-unvalidated", "AUTOMATION-017", "Accepts any automation/updateRequested of an automation that permits update, without validating the patched definition."),
    RenameTargetDeleted => ("rename-target-deleted", "RES-014", "Reports both URIs of a rename within a watched directory as deleted (the new one too) in resourceWatch/changed."),
    AfterDateIgnored => ("after-date-ignored", "AUTOMATION-018", "Keeps scheduling an automation whose afterDate disable condition has passed (its entry shows a nextRunAt)."),
    RunActionsAccepted => ("run-actions-accepted", "AUTOMATION-019", "Accepts and applies a client's automationRun actions other than cancelRequested (a primary session, a lifecycle) on a run channel."),
    EmptyAnnotationAccepted => ("empty-annotation-accepted", "ANNOTATION-002", "Accepts an annotations/set whose annotation has no entries, and holds it."),
    McpToolCallUnserved => ("mcp-tool-call-unserved", "MCP-003", "Answers tools/call of the MCP channel's own echo tool with an error, as if the server had no such tool."),
    ActiveTurnSideChatRefused => ("active-turn-side-chat-refused", "CHAT-FORK-006", "Refuses a side chat whose source turn is the source chat's active turn, as if only completed turns were known."),
    EndedRunFailedOnDispose => ("ended-run-failed-on-dispose", "AUTOMATION-020", "Fails a run that had already completed when its session is disposed, as if it had lost the session while running."),
    AutomationCommandsAnyChannel => ("automation-commands-any-channel", "TRANSPORT-009", "Serves runAutomation and fetchAutomationRuns on any channel, not only on ahp-automations:// (the one value their channel may take)."),
    TokenIgnoresSessionFollowers => ("token-ignores-session-followers", "TOOL-010", "Resumes a tool call waiting for a token only when the client pushing the token follows the call's chat: one that follows only its session resolves nothing."),
    TokenIgnoresChatFollowers => ("token-ignores-chat-followers", "TOOL-010", "Resumes a tool call waiting for a token only when the client pushing the token follows the call's session: one that follows only its chat resolves nothing."),
    RunAllowanceIgnored => ("run-allowance-ignored", "AUTOMATION-021", "Keeps scheduling an automation whose afterRuns allowance a scheduled run used up (runCount reached max: its entry still shows a nextRunAt)."),
    AllowanceEndsEarly => ("allowance-ends-early", "AUTOMATION-021", "Stops scheduling an automation with an afterRuns condition after its first scheduled run, whatever runs its allowance has left (no nextRunAt)."),
    DisabledScheduleFires => ("disabled-schedule-fires", "AUTOMATION-022", "Starts the run of an occurrence it had armed before the automation was disabled (the timer does not look whether the automation is still enabled)."),
    ScheduleStopsAfterRun => ("schedule-stops-after-run", "AUTOMATION-012", "Disables an automation with no disable condition after each scheduled run, as if an afterRuns allowance of 1 were used up: nextRunAt does not move on."),
    DisposedChangesetsKept => ("disposed-changesets-kept", "CHANGESET-005", "Keeps a disposed session's changesets subscribable (and their subscribers subscribed)."),
    ChangesetsDroppedSilently => ("changesets-dropped-silently", "CHANGESET-006", "Unsubscribes a disposed session's changeset subscribers without sending changeset/cleared first."),
    DisposedSubscriptionsKept => ("disposed-subscriptions-kept", "LIFECYCLE-011", "Keeps a disposed session's subscribers subscribed to its URI: a session created again there sends them its actions unasked."),
    SundayListedTwiceLost => ("sunday-listed-twice-lost", "AUTOMATION-011", "Computes nextRunAt as if a weekday field listing Sunday as both 0 and 7 listed no Sunday (the two cancel out)."),
    DisposedAnnotationsKept => ("disposed-annotations-kept", "LIFECYCLE-012", "Keeps a disposed session's annotations channel subscribable (and its subscribers subscribed)."),
    DisposedCanvasesKept => ("disposed-canvases-kept", "LIFECYCLE-012", "Keeps the canvases of a disposed session's (or chat's) chats subscribable (and their subscribers subscribed)."),
    IntegrationRemnantLeft => ("integration-remnant-left", "TERM-002", "Strips a shell-integration sequence from terminal/data all but its last character and terminator: `ESC ]633;A BEL` leaves `A BEL` in the data."),
}

/// The faults a server breaks at once (`--fault a,b`); empty: the correct server.
pub type FaultSet = crate::faultset::FaultSet<Fault>;

/// The catalog as printed by `ahpspec serve --fault list`: name, rule, what it breaks.
pub fn catalog_lines() -> Vec<String> {
    crate::faultset::catalog_lines::<Fault>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for fault in Fault::ALL {
            assert!(
                seen.insert(fault.name()),
                "duplicate fault name {}",
                fault.name()
            );
            assert_eq!(fault.name().parse::<Fault>(), Ok(*fault));
        }
        assert!(Fault::ALL.len() >= 20);
        assert!("no-such-fault".parse::<Fault>().is_err());
    }

    #[test]
    fn fault_sets_parse_combined_names_and_print_them_back() {
        let set: FaultSet = "queue-lifo, cancel-idle-accepted,queue-lifo"
            .parse()
            .expect("two known faults");
        assert!(set.contains(Fault::QueueLifo) && set.contains(Fault::CancelIdleAccepted));
        assert!(!set.contains(Fault::NoBroadcast));
        assert_eq!(set.to_string(), "queue-lifo,cancel-idle-accepted");
        assert_eq!(
            set.label().as_deref(),
            Some("queue-lifo,cancel-idle-accepted")
        );
        assert_eq!(FaultSet::default().label(), None);
        assert_eq!(
            "queue-lifo,nope"
                .parse::<FaultSet>()
                .map_err(|e| e.to_string()),
            Err("unknown fault \"nope\" (`ahpspec serve --fault list` lists them)".to_owned())
        );
        assert!(
            "queue-lifo,".parse::<FaultSet>().is_err(),
            "an empty name is an error"
        );
        assert_eq!(
            FaultSet::from(Some(Fault::QueueLifo)),
            FaultSet::from(Fault::QueueLifo)
        );
    }
}
