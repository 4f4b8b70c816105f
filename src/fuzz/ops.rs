//! What a client may do next, as small data (so sequences shrink well); the strategy that
//! generates sequences of it is in `generate.rs`. Operations name their targets
//! indirectly ("the pending tool call", "queued message 2"); the executor resolves them
//! against the state the clients observed, so a shorter sequence stays meaningful while
//! shrinking.

use serde::{Deserialize, Serialize};

/// Agent behaviours the fuzzer starts turns with (target-profile keys).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Behaviour {
    Echo,
    Stream,
    Long,
    ToolAsk,
    ToolResultConfirm,
    ToolClient,
    Input,
    InputThenWait,
    Error,
    ErrorResumable,
    /// Issue 29's agent state: chat/activityChanged, chat/backgroundWorkSet and `Removed`,
    /// session/metaChanged (twice, other keys), root/agentsChanged.
    Activity,
    Background,
    BackgroundDone,
    Meta,
    MetaAgain,
    AgentDescription,
}

impl Behaviour {
    pub const ALL: [Behaviour; 16] = [
        Behaviour::Echo,
        Behaviour::Stream,
        Behaviour::Long,
        Behaviour::ToolAsk,
        Behaviour::ToolResultConfirm,
        Behaviour::ToolClient,
        Behaviour::Input,
        Behaviour::InputThenWait,
        Behaviour::Error,
        Behaviour::ErrorResumable,
        Behaviour::Activity,
        Behaviour::Background,
        Behaviour::BackgroundDone,
        Behaviour::Meta,
        Behaviour::MetaAgain,
        Behaviour::AgentDescription,
    ];

    /// The target-profile key.
    pub fn key(self) -> &'static str {
        match self {
            Behaviour::Echo => "echo",
            Behaviour::Stream => "stream",
            Behaviour::Long => "long",
            Behaviour::ToolAsk => "tool-ask",
            Behaviour::ToolResultConfirm => "tool-result-confirm",
            Behaviour::ToolClient => "tool-client",
            Behaviour::Input => "input",
            Behaviour::InputThenWait => "input-then-wait",
            Behaviour::Error => "error",
            Behaviour::ErrorResumable => "error-resumable",
            Behaviour::Activity => "activity",
            Behaviour::Background => "background",
            Behaviour::BackgroundDone => "background-done",
            Behaviour::Meta => "meta",
            Behaviour::MetaAgain => "meta-again",
            Behaviour::AgentDescription => "agent-description",
        }
    }
}

/// Which pending-message slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PendingKind {
    Steering,
    Queued,
}

/// A protocol-level probe (a request or connection, not a chat action) mixed into the
/// sequence, each with the rule it exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Probe {
    /// subscribe to a session that does not exist: an error (SUB-011).
    SubscribeUnknown,
    /// dispatchAction to a session that does not exist: no echo (DISPATCH-004).
    DispatchToMissing,
    /// create and dispose a second session: root/sessionAdded and root/sessionRemoved
    /// reach the root subscriber (ROOT-005, ROOT-006).
    SideSession,
    /// createSession on the URI in use: -32003 (LIFECYCLE-001).
    DuplicateSession,
    /// createSession with an unknown provider: -32002 or a failed session (LIFECYCLE-006).
    UnknownProvider,
    /// a new connection pings before initialize: answered (TRANSPORT-010).
    PingBeforeInitialize,
    /// a new connection offers 0.9.0 and 1.2.0: 1.2.0 is selected (VERSION-001, -002).
    MixedVersions,
    /// a new connection offers only 2.0.0: -32005 with supportedVersions, then the host
    /// closes (VERSION-005, VERSION-006).
    UnsupportedVersion,
    /// a client unsubscribes from the session, the session moves, the client hears nothing
    /// of it, then subscribes again (SUB-004).
    Unsubscribe,
    /// a new connection subscribes to the chat with a one-turn window and fetches the
    /// older turns: chat/turnsLoaded precedes the response; a bogus cursor gets -32602
    /// (TURN-010).
    FetchTurns,
    /// create a terminal, run `true` and `exit` in it (its end: TERM-006), dispose it: the
    /// root subscriber sees it listed, then dropped (TERM-001); not probed where the root
    /// lists no terminals.
    Terminal,
    /// resolve the session configuration twice (the second time with the values the first
    /// answered: CONFIG-001) and complete a text with a character outside the BMP
    /// (COMPLETIONS-001).
    SessionConfig,
    /// a new connection subscribes to the logs channel initialize advertises: no snapshot
    /// (SUB-006); nothing to probe where none is advertised.
    Telemetry,
}

impl Probe {
    /// Every probe, in declaration order.
    pub const ALL: [Probe; 13] = [
        Probe::SubscribeUnknown,
        Probe::DispatchToMissing,
        Probe::SideSession,
        Probe::DuplicateSession,
        Probe::UnknownProvider,
        Probe::PingBeforeInitialize,
        Probe::MixedVersions,
        Probe::UnsupportedVersion,
        Probe::Unsubscribe,
        Probe::FetchTurns,
        Probe::Terminal,
        Probe::SessionConfig,
        Probe::Telemetry,
    ];
}

/// A routine: a short run of requests and dispatches judged together, for states and
/// rules a single operation does not reach (see `exec/routines.rs`), each with the rule it
/// exercises.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "routine", rename_all = "camelCase")]
pub enum Routine {
    /// `n` title changes back to back on one client: echoed in dispatch order (DISPATCH-005).
    Burst { n: u8 },
    /// A side session (run a turn in it when `turn`), disposed by the client: its
    /// listSessions, followed page by page before and after, no longer lists it
    /// (LIFECYCLE-009); every page request is answered (TRANSPORT-003).
    DisposeThenList { turn: bool },
    /// Echo turns until the chat holds three, then a new connection subscribes with a
    /// one-turn window: a cursor when turns are left out (SUB-008), and the turns fetched
    /// with it oldest first, none twice (TURN-011).
    Window,
    /// createChat in the session: session/chatAdded before the response (CHAT-001), and
    /// the next root summary change listing chats lists them all (ROOT-008).
    CreateChat,
    /// An input request (an `input` turn started when the chat is idle) declined by a
    /// connection subscribed only to the session: taken, not rejected (SESSION-010).
    AnswerUnsubscribed,
    /// A new connection initializes asking for the root channel (`root`) or for nothing:
    /// exactly the snapshots asked for (INIT-002).
    Handshake { root: bool },
    /// `n` messages queued while a `long` turn runs (one is started when the chat is idle),
    /// the first set again (updated in place, listed once: INV-CHAT-5), then the turn is cancelled: the
    /// host takes the queue first in, first out (PENDING-003, judged always on as the host
    /// removes a queued message).
    Queue { n: u8 },
    /// Resource commands in a fresh directory of the workspace (the profile's, or the
    /// built-in host's own): resourceList of a file refused (RES-002), a write appended to
    /// and read back whole (RES-008), resourceCopy with failIfExists onto an existing file
    /// refused, the file unchanged (RES-009). Nothing without a workspace.
    Resources,
    /// Two resource watches of a fresh directory of the workspace get distinct channels
    /// (RES-007); the first, excluding `*.log` and subscribed by a new connection, reports a
    /// file written after an excluded one in batches never empty and never naming the
    /// excluded file (RES-007, RES-013). Nothing without a workspace.
    Watch,
    /// A directory tree in a fresh directory of the workspace: mkdir -p (RES-004), resolve of
    /// a file, a directory and a missing path (RES-010, RES-001), a write with a stale
    /// ifMatch refused (RES-003), a non-empty directory not deleted without recursive
    /// (RES-005). Nothing without a workspace.
    Tree,
    /// sessionConfigCompletions for the profile's dynamic property, its first value kept by
    /// resolveSessionConfig (CONFIG-003); a root/configChanged merge of the profile's root
    /// property changing that property only (ROOT-012), then set back. Each half only where
    /// the profile names its property.
    Config,
    /// A terminal created claimed by the client, then claimed by another connection: the
    /// claim is rejected (TERM-003). Nothing where the root lists no terminals.
    StealTerminal,
    /// authenticate for the profile's protected resource with a token it does not accept
    /// (refused: AUTH-001), then with the profile's token (accepted: AUTH-004). Nothing
    /// without the profile's `[auth]` or where no agent advertises its resource.
    Authenticate,
    /// A new connection subscribes to `ahp-root://` after initialize: a snapshot of that
    /// resource, with an integer fromSeq (SUB-001).
    SubscribeRoot,
    /// createChat in the session with a working directory outside its set: refused
    /// (CHAT-007). Only where an agent advertises multipleChats and
    /// multipleWorkingDirectories and the session was made in the profile's first directory.
    ChatOutside,
    /// A tool call waiting for confirmation (a `tool-ask` turn started when the chat is
    /// idle) approved by choosing its approving option by id: a new subscriber's snapshot
    /// holds that option as the call's selectedOption (TOOL-005). Only where the profile
    /// promises `tool-ask.options`.
    ChooseOption,
    /// A new connection active in the session reconnects listing the root channel only:
    /// the session's subscribers hear it removed from activeClients (RECONNECT-008).
    LeaveOnReconnect,
    /// Chats created from the chat's first ended turn (two ended at least): a source of an
    /// unknown kind refused (CHAT-FORK-001), a fork holding that turn only (CHAT-FORK-003),
    /// a side chat with none (CHAT-FORK-004), the fork's origin kept through a turn of its
    /// own (CHAT-FORK-005), a fork from another session's chat refused (CHAT-FORK-002). Only
    /// where the agent advertises multipleChats (and each kind where it advertises it).
    ChatSources,
    /// moveChat of the default chat when not movable, refused (CHAT-MOVE-001); of a created
    /// chat to the session's front, followed by a full session/chatsReordered (SESSION-005);
    /// of another to a new session, answered with it (CHAT-MOVE-002). Only with multipleChats.
    MoveChat,
    /// A session of the routine's own loses its default chat: a chat the host promotes to
    /// default is not movable (SESSION-004). Only with multipleChats.
    PromoteDefault,
    /// A session of the routine's own in the profile's two directories: a chat's
    /// chat/workingDirectoryRemoved leaves the session's set alone (CHAT-008); removing the
    /// replaceable primary is rejected (SESSION-012). Only with multipleWorkingDirectories.
    RemoveDirectory,
    /// The agent's `edit` turn in a session of the routine's own in a fresh directory of the
    /// workspace, then its changeset: ready and listing the files, the chat's too
    /// (CHANGESET-003), a client's fileRemoved not applied and review taken (CHANGESET-001),
    /// operations outside the list or scopes refused (CHANGESET-002), a revert reaching it
    /// (CHANGESET-004). Nothing without a workspace, `edit` or a changeset.
    Changeset,
    /// The session's annotations channel: an entry added (ANNOTATION-001), never left
    /// without entries (ANNOTATION-002). Nothing where the session advertises none.
    Annotations,
    /// Turns of the agent-state behaviours in the idle chat: activity announced (CHAT-004),
    /// background work kept past its turn (CHAT-009), _meta replaced whole (SESSION-016),
    /// agents changed announced (ROOT-013). Each only where the profile has its behaviour.
    AgentState,
    /// A connection offering only a later 1.x minor initialized (VERSION-003); a 0.9.x
    /// connection beside a `canvases` turn hears no newer action (VERSION-009).
    Versions,
    /// A session of the profile's failing provider: lifecycle `failed` (LIFECYCLE-004).
    FailedLifecycle,
    /// A malformed session/titleChanged on the live session leaves its title (DISPATCH-007).
    MalformedTitle,
    /// A message queued on the idle chat is taken at once (PENDING-004). Needs `long`.
    QueueOnIdle,
    /// A `tool-ask` turn when idle: no tool-call action before its toolCallStart (TOOL-002),
    /// the toolConfirmation entry naming the active turn (SESSION-008).
    ToolOrder,
}

impl Routine {
    /// One of each kind.
    pub const ALL: [Routine; 29] = [
        Routine::Burst { n: 3 },
        Routine::DisposeThenList { turn: true },
        Routine::Window,
        Routine::CreateChat,
        Routine::AnswerUnsubscribed,
        Routine::Handshake { root: true },
        Routine::Queue { n: 2 },
        Routine::Resources,
        Routine::Watch,
        Routine::Tree,
        Routine::Config,
        Routine::StealTerminal,
        Routine::Authenticate,
        Routine::SubscribeRoot,
        Routine::ChatOutside,
        Routine::ChooseOption,
        Routine::LeaveOnReconnect,
        Routine::ChatSources,
        Routine::MoveChat,
        Routine::PromoteDefault,
        Routine::RemoveDirectory,
        Routine::Changeset,
        Routine::Annotations,
        Routine::AgentState,
        Routine::Versions,
        Routine::FailedLifecycle,
        Routine::MalformedTitle,
        Routine::QueueOnIdle,
        Routine::ToolOrder,
    ];
}

/// One client operation. `client` picks one of the fuzzer's connections (modulo their
/// number); `stale` makes the operation name something that does not exist (its correct
/// answer is a rejection).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Op {
    StartTurn {
        client: u8,
        behaviour: Behaviour,
    },
    Cancel {
        client: u8,
        stale: bool,
    },
    Confirm {
        client: u8,
        approve: bool,
        stale: bool,
    },
    ConfirmResult {
        client: u8,
        approve: bool,
    },
    CompleteClientTool {
        client: u8,
    },
    Answer {
        client: u8,
        valid: bool,
    },
    CompleteInput {
        client: u8,
        accept: bool,
    },
    SetPending {
        client: u8,
        kind: PendingKind,
        id: u8,
    },
    RemovePending {
        client: u8,
        kind: PendingKind,
        id: u8,
    },
    Reorder {
        client: u8,
    },
    Draft {
        client: u8,
    },
    Rename {
        client: u8,
    },
    /// chat/workingDirectorySet: the session's directory (the profile's first) when
    /// `inside`, else one outside the session's set (the profile's second, or a made-up one).
    SetDirectory {
        client: u8,
        inside: bool,
    },
    Truncate {
        client: u8,
        keep_first: bool,
    },
    Resume {
        client: u8,
    },
    ServerOnly {
        client: u8,
    },
    Reconnect {
        client: u8,
    },
    Checkpoint,
    Probe {
        client: u8,
        probe: Probe,
    },
    Routine {
        client: u8,
        routine: Routine,
    },
    /// A case of the catalog (by ID), run on connections of its own while the sequence's
    /// clients, session and turns stand: the case's expectations judge the host amid that
    /// traffic, each failure the rule its step checks.
    Case {
        case: String,
    },
    /// Two operations planned on the same observed state and dispatched at once, each on
    /// its client, without waiting for the first's echo: the host picks the order.
    Together {
        first: Box<Op>,
        second: Box<Op>,
    },
}

impl Op {
    /// The client the operation runs on (modulo the number of clients).
    pub fn client(&self) -> usize {
        match self {
            Op::StartTurn { client, .. }
            | Op::Cancel { client, .. }
            | Op::Confirm { client, .. }
            | Op::ConfirmResult { client, .. }
            | Op::CompleteClientTool { client }
            | Op::Answer { client, .. }
            | Op::CompleteInput { client, .. }
            | Op::SetPending { client, .. }
            | Op::RemovePending { client, .. }
            | Op::Reorder { client }
            | Op::Draft { client }
            | Op::Rename { client }
            | Op::SetDirectory { client, .. }
            | Op::Truncate { client, .. }
            | Op::Resume { client }
            | Op::ServerOnly { client }
            | Op::Reconnect { client }
            | Op::Probe { client, .. }
            | Op::Routine { client, .. } => usize::from(*client),
            Op::Checkpoint | Op::Case { .. } => 0,
            Op::Together { first, .. } => first.client(),
        }
    }
}
