//! What a client may do next, as small data (so sequences shrink well), and the strategy
//! that generates sequences of it. Operations name their targets indirectly ("the pending
//! tool call", "queued message 2"); the executor resolves them against the state the clients
//! observed, so a shorter sequence stays meaningful while shrinking.

use proptest::prelude::*;
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
}

impl Behaviour {
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
            | Op::Truncate { client, .. }
            | Op::Resume { client }
            | Op::ServerOnly { client }
            | Op::Reconnect { client }
            | Op::Probe { client, .. } => usize::from(*client),
            Op::Checkpoint => 0,
            Op::Together { first, .. } => first.client(),
        }
    }
}

fn behaviour() -> impl Strategy<Value = Behaviour> {
    prop_oneof![
        3 => Just(Behaviour::Long),
        2 => Just(Behaviour::ToolAsk),
        2 => Just(Behaviour::Input),
        1 => Just(Behaviour::InputThenWait),
        1 => Just(Behaviour::Echo),
        1 => Just(Behaviour::Stream),
        1 => Just(Behaviour::ToolResultConfirm),
        1 => Just(Behaviour::ToolClient),
        1 => Just(Behaviour::Error),
        1 => Just(Behaviour::ErrorResumable),
    ]
}

fn probe() -> impl Strategy<Value = Probe> {
    prop_oneof![
        Just(Probe::SubscribeUnknown),
        Just(Probe::DispatchToMissing),
        Just(Probe::SideSession),
        Just(Probe::DuplicateSession),
        Just(Probe::UnknownProvider),
        Just(Probe::PingBeforeInitialize),
        Just(Probe::MixedVersions),
        Just(Probe::UnsupportedVersion),
        Just(Probe::Unsubscribe),
        Just(Probe::FetchTurns),
    ]
}

fn kind() -> impl Strategy<Value = PendingKind> {
    prop_oneof![Just(PendingKind::Queued), Just(PendingKind::Steering)]
}

/// One dispatching operation, weighted towards the ones that move state.
fn single() -> impl Strategy<Value = Op> {
    let client = 0u8..3;
    prop_oneof![
        6 => (client.clone(), behaviour()).prop_map(|(client, behaviour)| Op::StartTurn { client, behaviour }),
        3 => (client.clone(), any::<bool>()).prop_map(|(client, stale)| Op::Cancel { client, stale }),
        3 => (client.clone(), any::<bool>(), prop::bool::weighted(0.2)).prop_map(|(client, approve, stale)| Op::Confirm { client, approve, stale }),
        2 => (client.clone(), any::<bool>()).prop_map(|(client, approve)| Op::ConfirmResult { client, approve }),
        2 => client.clone().prop_map(|client| Op::CompleteClientTool { client }),
        2 => (client.clone(), prop::bool::weighted(0.8)).prop_map(|(client, valid)| Op::Answer { client, valid }),
        2 => (client.clone(), any::<bool>()).prop_map(|(client, accept)| Op::CompleteInput { client, accept }),
        4 => (client.clone(), kind(), 0u8..4).prop_map(|(client, kind, id)| Op::SetPending { client, kind, id }),
        2 => (client.clone(), kind(), 0u8..4).prop_map(|(client, kind, id)| Op::RemovePending { client, kind, id }),
        1 => client.clone().prop_map(|client| Op::Reorder { client }),
        1 => client.clone().prop_map(|client| Op::Draft { client }),
        2 => client.clone().prop_map(|client| Op::Rename { client }),
        1 => (client.clone(), any::<bool>()).prop_map(|(client, keep_first)| Op::Truncate { client, keep_first }),
        1 => client.clone().prop_map(|client| Op::Resume { client }),
        1 => client.clone().prop_map(|client| Op::ServerOnly { client }),
    ]
}

/// One operation: a dispatching one, two at once, a reconnect or a checkpoint.
pub fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        36 => single(),
        4 => (single(), single()).prop_map(|(first, second)| Op::Together {
            first: Box::new(first),
            second: Box::new(second),
        }),
        1 => (0u8..3).prop_map(|client| Op::Reconnect { client }),
        3 => (0u8..3, probe()).prop_map(|(client, probe)| Op::Probe { client, probe }),
        1 => Just(Op::Checkpoint),
    ]
}

/// A sequence of 1..=`max` operations.
pub fn sequence(max: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op(), 1..=max.max(1))
}
