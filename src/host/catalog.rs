//! What the host knows about each action type of protocol 1.0.0: whether a client may
//! dispatch it and the protocol version that introduced it. Derived from the 1.0.0 type
//! inventory (`upstream/ahp/1.0.0/derived/types-1.0.0.json`); a unit test keeps the
//! two in step.

/// One action type's facts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionInfo {
    /// Wire value of the action's `type`.
    pub kind: &'static str,
    /// Whether a client may dispatch it (`IS_CLIENT_DISPATCHABLE` upstream).
    pub client_dispatchable: bool,
    /// Protocol version that introduced it, as (major, minor, patch).
    pub introduced_in: (u64, u64, u64),
}

/// Every action type of protocol 1.0.0, sorted by `kind`.
pub const ACTIONS: &[ActionInfo] = &[
    ActionInfo {
        kind: "annotations/entryRemoved",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "annotations/entrySet",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "annotations/removed",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "annotations/set",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "annotations/updated",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "automation/createRequested",
        client_dispatchable: true,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "automation/removed",
        client_dispatchable: true,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "automation/set",
        client_dispatchable: false,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "automation/updateRequested",
        client_dispatchable: true,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "automationRun/cancelRequested",
        client_dispatchable: true,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "automationRun/lifecycleChanged",
        client_dispatchable: false,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "automationRun/primarySessionChanged",
        client_dispatchable: false,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "automationRun/sessionRemoved",
        client_dispatchable: false,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "automationRun/sessionSet",
        client_dispatchable: false,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "canvas/stateChanged",
        client_dispatchable: false,
        introduced_in: (0, 10, 0),
    },
    ActionInfo {
        kind: "changeset/cleared",
        client_dispatchable: false,
        introduced_in: (0, 2, 0),
    },
    ActionInfo {
        kind: "changeset/contentChanged",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "changeset/fileRemoved",
        client_dispatchable: false,
        introduced_in: (0, 2, 0),
    },
    ActionInfo {
        kind: "changeset/fileSet",
        client_dispatchable: false,
        introduced_in: (0, 2, 0),
    },
    ActionInfo {
        kind: "changeset/filesReviewChanged",
        client_dispatchable: true,
        introduced_in: (0, 6, 0),
    },
    ActionInfo {
        kind: "changeset/operationStatusChanged",
        client_dispatchable: false,
        introduced_in: (0, 3, 0),
    },
    ActionInfo {
        kind: "changeset/operationsChanged",
        client_dispatchable: false,
        introduced_in: (0, 2, 0),
    },
    ActionInfo {
        kind: "changeset/statusChanged",
        client_dispatchable: false,
        introduced_in: (0, 2, 0),
    },
    ActionInfo {
        kind: "chat/activityChanged",
        client_dispatchable: false,
        introduced_in: (0, 5, 0),
    },
    ActionInfo {
        kind: "chat/backgroundWorkRemoved",
        client_dispatchable: false,
        introduced_in: (0, 9, 0),
    },
    ActionInfo {
        kind: "chat/backgroundWorkSet",
        client_dispatchable: false,
        introduced_in: (0, 9, 0),
    },
    ActionInfo {
        kind: "chat/canvasesChanged",
        client_dispatchable: false,
        introduced_in: (0, 10, 0),
    },
    ActionInfo {
        kind: "chat/changesetsChanged",
        client_dispatchable: false,
        introduced_in: (0, 9, 0),
    },
    ActionInfo {
        kind: "chat/delta",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/draftChanged",
        client_dispatchable: true,
        introduced_in: (0, 5, 0),
    },
    ActionInfo {
        kind: "chat/error",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/inputAnswerChanged",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/inputCompleted",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/inputRequested",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/isArchivedChanged",
        client_dispatchable: true,
        introduced_in: (0, 9, 0),
    },
    ActionInfo {
        kind: "chat/isReadChanged",
        client_dispatchable: true,
        introduced_in: (0, 9, 0),
    },
    ActionInfo {
        kind: "chat/movableChanged",
        client_dispatchable: false,
        introduced_in: (0, 9, 0),
    },
    ActionInfo {
        kind: "chat/pendingMessageRemoved",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/pendingMessageSet",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/queuedMessagesReordered",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/reasoning",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/responsePart",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/toolCallAuthRequired",
        client_dispatchable: false,
        introduced_in: (0, 6, 0),
    },
    ActionInfo {
        kind: "chat/toolCallAuthResolved",
        client_dispatchable: false,
        introduced_in: (0, 6, 0),
    },
    ActionInfo {
        kind: "chat/toolCallComplete",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/toolCallConfirmed",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/toolCallContentChanged",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/toolCallDelta",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/toolCallReady",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/toolCallResultConfirmed",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/toolCallStart",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/truncated",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/turnCancelled",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/turnComplete",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/turnResume",
        client_dispatchable: true,
        introduced_in: (0, 9, 0),
    },
    ActionInfo {
        kind: "chat/turnStarted",
        client_dispatchable: true,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/turnsLoaded",
        client_dispatchable: false,
        introduced_in: (0, 5, 1),
    },
    ActionInfo {
        kind: "chat/usage",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "chat/workingDirectoryRemoved",
        client_dispatchable: true,
        introduced_in: (0, 7, 0),
    },
    ActionInfo {
        kind: "chat/workingDirectorySet",
        client_dispatchable: true,
        introduced_in: (0, 7, 0),
    },
    ActionInfo {
        kind: "resourceWatch/changed",
        client_dispatchable: false,
        introduced_in: (0, 2, 0),
    },
    ActionInfo {
        kind: "root/activeSessionsChanged",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "root/agentsChanged",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "root/configChanged",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "root/terminalsChanged",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/activeClientRemoved",
        client_dispatchable: true,
        introduced_in: (0, 5, 0),
    },
    ActionInfo {
        kind: "session/activeClientSet",
        client_dispatchable: true,
        introduced_in: (0, 5, 0),
    },
    ActionInfo {
        kind: "session/activityChanged",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/changesetsChanged",
        client_dispatchable: false,
        introduced_in: (0, 2, 0),
    },
    ActionInfo {
        kind: "session/chatAdded",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "session/chatRemoved",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "session/chatUpdated",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "session/chatsReordered",
        client_dispatchable: false,
        introduced_in: (0, 9, 0),
    },
    ActionInfo {
        kind: "session/configChanged",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/creationFailed",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/customizationRemoved",
        client_dispatchable: false,
        introduced_in: (0, 2, 0),
    },
    ActionInfo {
        kind: "session/customizationToggled",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/customizationUpdated",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/customizationsChanged",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/defaultChatChanged",
        client_dispatchable: false,
        introduced_in: (0, 4, 0),
    },
    ActionInfo {
        kind: "session/inputNeededRemoved",
        client_dispatchable: false,
        introduced_in: (0, 5, 1),
    },
    ActionInfo {
        kind: "session/inputNeededSet",
        client_dispatchable: false,
        introduced_in: (0, 5, 1),
    },
    ActionInfo {
        kind: "session/isArchivedChanged",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/isReadChanged",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/mcpServerBackgroundRequested",
        client_dispatchable: true,
        introduced_in: (0, 9, 0),
    },
    ActionInfo {
        kind: "session/mcpServerStartRequested",
        client_dispatchable: true,
        introduced_in: (0, 5, 2),
    },
    ActionInfo {
        kind: "session/mcpServerStateChanged",
        client_dispatchable: false,
        introduced_in: (0, 3, 0),
    },
    ActionInfo {
        kind: "session/mcpServerStopRequested",
        client_dispatchable: true,
        introduced_in: (0, 5, 2),
    },
    ActionInfo {
        kind: "session/metaChanged",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/ready",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/serverToolsChanged",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/titleChanged",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "session/workingDirectoryRemoved",
        client_dispatchable: true,
        introduced_in: (0, 7, 0),
    },
    ActionInfo {
        kind: "session/workingDirectoryReplaced",
        client_dispatchable: true,
        introduced_in: (0, 8, 0),
    },
    ActionInfo {
        kind: "session/workingDirectorySet",
        client_dispatchable: true,
        introduced_in: (0, 7, 0),
    },
    ActionInfo {
        kind: "terminal/claimed",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/cleared",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/commandDetectionAvailable",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/commandExecuted",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/commandFinished",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/cwdChanged",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/data",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/exited",
        client_dispatchable: false,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/input",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/resized",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
    ActionInfo {
        kind: "terminal/titleChanged",
        client_dispatchable: true,
        introduced_in: (0, 1, 0),
    },
];

/// Looks an action type up by its wire value.
pub fn action_info(kind: &str) -> Option<&'static ActionInfo> {
    ACTIONS
        .binary_search_by(|info| info.kind.cmp(kind))
        .ok()
        .map(|index| &ACTIONS[index])
}
