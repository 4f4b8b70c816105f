//! Decoding of a `StateAction` from a parsed action without serde's buffering.
//!
//! `StateAction` is internally tagged (`type`) with an untagged `Unknown(Value)` catch-all,
//! so its derived `Deserialize` first copies the whole action into serde's `Content`, then
//! copies it again to split off the tag, and only then decodes the variant. On the offline
//! re-check that was most of the cost of [`crate::checks::mirror::Mirror::apply`]. Here the
//! tag picks the variant's payload type, which is decoded straight from the tape; every
//! case this fast path does not settle (not an object, unknown tag, a payload
//! that does not decode) goes through `StateAction::deserialize` on the action's `Value`, so
//! the result is the derived one.

use ahp_types::actions::*;
use serde::Deserialize;

use crate::tape::Node;

/// The `StateAction` that `StateAction::deserialize` gives for the action, computed faster.
pub fn decode_action(action: Node<'_>) -> Result<StateAction, serde_json::Error> {
    let fast = action
        .member("type")
        .as_str()
        .and_then(|kind| by_type(kind, action));
    match fast {
        Some(decoded) => Ok(decoded),
        None => StateAction::deserialize(&action.to_value()),
    }
}

/// Expands to [`by_type`], a `match` from the wire tag to the variant decoding its payload
/// type from the tape, and [`is_known`], from one table.
macro_rules! state_actions {
    ({ $($tag:literal => $variant:ident($payload:ty),)* }) => {
        /// The variant for a known tag whose payload decodes; `None` otherwise. The payload
        /// structs ignore unknown members (none of them is `deny_unknown_fields` or has a
        /// `flatten`ed or `type` member), so the tag left in the object changes nothing. The
        /// list is the variant list of `ahp-types` 1.0.0's `StateAction`;
        /// `tests/action_decode.rs` checks it against the derived decoder on every upstream
        /// reducer vector.
        fn by_type(kind: &str, action: Node<'_>) -> Option<StateAction> {
            match kind {
                $($tag => <$payload>::deserialize(action).ok().map(StateAction::$variant),)*
                _ => None,
            }
        }

        /// Whether `kind` is an action type of the 1.0.0 crate (one that decodes as
        /// `Unknown` only when it is malformed).
        pub fn is_known(kind: &str) -> bool {
            matches!(kind, $($tag)|*)
        }
    };
}

// Kept whole (over the ~80-line aim): a table: one line per `StateAction` variant.
state_actions!({
        "root/agentsChanged" => RootAgentsChanged(RootAgentsChangedAction),
        "root/activeSessionsChanged" => RootActiveSessionsChanged(RootActiveSessionsChangedAction),
        "root/configChanged" => RootConfigChanged(RootConfigChangedAction),
        "session/ready" => SessionReady(SessionReadyAction),
        "session/creationFailed" => SessionCreationFailed(SessionCreationFailedAction),
        "session/chatAdded" => SessionChatAdded(SessionChatAddedAction),
        "session/chatRemoved" => SessionChatRemoved(SessionChatRemovedAction),
        "session/chatUpdated" => SessionChatUpdated(SessionChatUpdatedAction),
        "session/chatsReordered" => SessionChatsReordered(SessionChatsReorderedAction),
        "session/defaultChatChanged" => SessionDefaultChatChanged(SessionDefaultChatChangedAction),
        "chat/turnStarted" => ChatTurnStarted(ChatTurnStartedAction),
        "chat/delta" => ChatDelta(ChatDeltaAction),
        "chat/responsePart" => ChatResponsePart(ChatResponsePartAction),
        "chat/toolCallStart" => ChatToolCallStart(ChatToolCallStartAction),
        "chat/toolCallDelta" => ChatToolCallDelta(ChatToolCallDeltaAction),
        "chat/toolCallReady" => ChatToolCallReady(ChatToolCallReadyAction),
        "chat/toolCallConfirmed" => ChatToolCallConfirmed(ChatToolCallConfirmedAction),
        "chat/toolCallComplete" => ChatToolCallComplete(ChatToolCallCompleteAction),
        "chat/toolCallResultConfirmed" => ChatToolCallResultConfirmed(ChatToolCallResultConfirmedAction),
        "chat/toolCallContentChanged" => ChatToolCallContentChanged(ChatToolCallContentChangedAction),
        "chat/toolCallAuthRequired" => ChatToolCallAuthRequired(ChatToolCallAuthRequiredAction),
        "chat/toolCallAuthResolved" => ChatToolCallAuthResolved(ChatToolCallAuthResolvedAction),
        "chat/turnComplete" => ChatTurnComplete(ChatTurnCompleteAction),
        "chat/turnCancelled" => ChatTurnCancelled(ChatTurnCancelledAction),
        "chat/error" => ChatError(ChatErrorAction),
        "chat/turnResume" => ChatTurnResume(ChatTurnResumeAction),
        "chat/activityChanged" => ChatActivityChanged(ChatActivityChangedAction),
        "chat/backgroundWorkSet" => ChatBackgroundWorkSet(ChatBackgroundWorkSetAction),
        "chat/backgroundWorkRemoved" => ChatBackgroundWorkRemoved(ChatBackgroundWorkRemovedAction),
        "chat/movableChanged" => ChatMovableChanged(ChatMovableChangedAction),
        "chat/changesetsChanged" => ChatChangesetsChanged(ChatChangesetsChangedAction),
        "chat/canvasesChanged" => ChatCanvasesChanged(ChatCanvasesChangedAction),
        "canvas/stateChanged" => CanvasStateChanged(CanvasStateChangedAction),
        "session/titleChanged" => SessionTitleChanged(SessionTitleChangedAction),
        "chat/usage" => ChatUsage(ChatUsageAction),
        "chat/reasoning" => ChatReasoning(ChatReasoningAction),
        "session/isReadChanged" => SessionIsReadChanged(SessionIsReadChangedAction),
        "session/isArchivedChanged" => SessionIsArchivedChanged(SessionIsArchivedChangedAction),
        "session/activityChanged" => SessionActivityChanged(SessionActivityChangedAction),
        "session/changesetsChanged" => SessionChangesetsChanged(SessionChangesetsChangedAction),
        "session/serverToolsChanged" => SessionServerToolsChanged(SessionServerToolsChangedAction),
        "session/activeClientSet" => SessionActiveClientSet(SessionActiveClientSetAction),
        "session/activeClientRemoved" => SessionActiveClientRemoved(SessionActiveClientRemovedAction),
        "session/workingDirectorySet" => SessionWorkingDirectorySet(SessionWorkingDirectorySetAction),
        "session/workingDirectoryRemoved" => SessionWorkingDirectoryRemoved(SessionWorkingDirectoryRemovedAction),
        "session/workingDirectoryReplaced" => SessionWorkingDirectoryReplaced(SessionWorkingDirectoryReplacedAction),
        "chat/workingDirectorySet" => ChatWorkingDirectorySet(ChatWorkingDirectorySetAction),
        "chat/workingDirectoryRemoved" => ChatWorkingDirectoryRemoved(ChatWorkingDirectoryRemovedAction),
        "session/inputNeededSet" => SessionInputNeededSet(Box<SessionInputNeededSetAction>),
        "session/inputNeededRemoved" => SessionInputNeededRemoved(SessionInputNeededRemovedAction),
        "chat/pendingMessageSet" => ChatPendingMessageSet(ChatPendingMessageSetAction),
        "chat/pendingMessageRemoved" => ChatPendingMessageRemoved(ChatPendingMessageRemovedAction),
        "chat/queuedMessagesReordered" => ChatQueuedMessagesReordered(ChatQueuedMessagesReorderedAction),
        "chat/draftChanged" => ChatDraftChanged(ChatDraftChangedAction),
        "chat/isReadChanged" => ChatIsReadChanged(ChatIsReadChangedAction),
        "chat/isArchivedChanged" => ChatIsArchivedChanged(ChatIsArchivedChangedAction),
        "chat/inputRequested" => ChatInputRequested(ChatInputRequestedAction),
        "chat/inputAnswerChanged" => ChatInputAnswerChanged(ChatInputAnswerChangedAction),
        "chat/inputCompleted" => ChatInputCompleted(ChatInputCompletedAction),
        "session/customizationsChanged" => SessionCustomizationsChanged(SessionCustomizationsChangedAction),
        "session/customizationToggled" => SessionCustomizationToggled(SessionCustomizationToggledAction),
        "session/customizationUpdated" => SessionCustomizationUpdated(Box<SessionCustomizationUpdatedAction>),
        "session/customizationRemoved" => SessionCustomizationRemoved(SessionCustomizationRemovedAction),
        "session/mcpServerStateChanged" => SessionMcpServerStateChanged(Box<SessionMcpServerStateChangedAction>),
        "session/mcpServerStartRequested" => SessionMcpServerStartRequested(SessionMcpServerStartRequestedAction),
        "session/mcpServerStopRequested" => SessionMcpServerStopRequested(SessionMcpServerStopRequestedAction),
        "session/mcpServerBackgroundRequested" => SessionMcpServerBackgroundRequested(SessionMcpServerBackgroundRequestedAction),
        "chat/truncated" => ChatTruncated(ChatTruncatedAction),
        "chat/turnsLoaded" => ChatTurnsLoaded(ChatTurnsLoadedAction),
        "session/configChanged" => SessionConfigChanged(SessionConfigChangedAction),
        "session/metaChanged" => SessionMetaChanged(SessionMetaChangedAction),
        "changeset/statusChanged" => ChangesetStatusChanged(ChangesetStatusChangedAction),
        "changeset/fileSet" => ChangesetFileSet(ChangesetFileSetAction),
        "changeset/fileRemoved" => ChangesetFileRemoved(ChangesetFileRemovedAction),
        "changeset/filesReviewChanged" => ChangesetFilesReviewChanged(ChangesetFilesReviewChangedAction),
        "changeset/contentChanged" => ChangesetContentChanged(Box<ChangesetContentChangedAction>),
        "changeset/operationsChanged" => ChangesetOperationsChanged(ChangesetOperationsChangedAction),
        "changeset/operationStatusChanged" => ChangesetOperationStatusChanged(ChangesetOperationStatusChangedAction),
        "changeset/cleared" => ChangesetCleared(ChangesetClearedAction),
        "annotations/set" => AnnotationsSet(AnnotationsSetAction),
        "annotations/updated" => AnnotationsUpdated(AnnotationsUpdatedAction),
        "annotations/removed" => AnnotationsRemoved(AnnotationsRemovedAction),
        "annotations/entrySet" => AnnotationsEntrySet(AnnotationsEntrySetAction),
        "annotations/entryRemoved" => AnnotationsEntryRemoved(AnnotationsEntryRemovedAction),
        "root/terminalsChanged" => RootTerminalsChanged(RootTerminalsChangedAction),
        "terminal/data" => TerminalData(TerminalDataAction),
        "terminal/input" => TerminalInput(TerminalInputAction),
        "terminal/resized" => TerminalResized(TerminalResizedAction),
        "terminal/claimed" => TerminalClaimed(TerminalClaimedAction),
        "terminal/titleChanged" => TerminalTitleChanged(TerminalTitleChangedAction),
        "terminal/cwdChanged" => TerminalCwdChanged(TerminalCwdChangedAction),
        "terminal/exited" => TerminalExited(TerminalExitedAction),
        "terminal/cleared" => TerminalCleared(TerminalClearedAction),
        "terminal/commandDetectionAvailable" => TerminalCommandDetectionAvailable(TerminalCommandDetectionAvailableAction),
        "terminal/commandExecuted" => TerminalCommandExecuted(TerminalCommandExecutedAction),
        "terminal/commandFinished" => TerminalCommandFinished(TerminalCommandFinishedAction),
        "resourceWatch/changed" => ResourceWatchChanged(ResourceWatchChangedAction),
        "automation/createRequested" => AutomationCreateRequested(Box<AutomationCreateRequestedAction>),
        "automation/updateRequested" => AutomationUpdateRequested(Box<AutomationUpdateRequestedAction>),
        "automation/set" => AutomationSet(Box<AutomationSetAction>),
        "automation/removed" => AutomationRemoved(AutomationRemovedAction),
        "automationRun/lifecycleChanged" => AutomationRunLifecycleChanged(Box<AutomationRunLifecycleChangedAction>),
        "automationRun/sessionSet" => AutomationRunSessionSet(AutomationRunSessionSetAction),
        "automationRun/sessionRemoved" => AutomationRunSessionRemoved(AutomationRunSessionRemovedAction),
        "automationRun/primarySessionChanged" => AutomationRunPrimarySessionChanged(AutomationRunPrimarySessionChangedAction),
        "automationRun/cancelRequested" => AutomationRunCancelRequested(AutomationRunCancelRequestedAction),
});
