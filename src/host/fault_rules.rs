//! The rules each fault of the built-in host breaks besides its own, by construction: a
//! state changed behind the reducers' back also makes the fold differ from a fresh snapshot
//! (INV-FOLD-1), a member a specific rule requires is also a schema member (INV-SCHEMA-1),
//! and so on, each with its reason. The fault tests hold the catalog to exactly these rules
//! and the reach benchmark counts a fuzz finding of one of them as the fault found (by
//! another of its rules: reported apart from its own). Data, not code: a fault's entry goes
//! when a check learns to blame the fault's own rule alone.

use super::Fault;

impl Fault {
    /// Rule IDs this fault breaks besides [`Fault::rule`].
    pub fn also_breaks(self) -> &'static [&'static str] {
        use Fault::*;
        match self {
            // The chat keeps a status its content contradicts, and the fold disagrees with it.
            InProgressStuck => &["INV-FOLD-1"],
            // TURN-014 requires the turn attaching an empty chat to be accepted, and every turn is
            // rejected; its own step, not a prerequisite.
            RejectsTurnStart => &["TURN-014"],
            // A turn end whose duration is no integer breaks its schema. It does not decode, so
            // the harness cannot fold it: its mirrors of the chat are unknown until the next
            // snapshot (their comparisons skipped, never failed).
            FractionalDuration => &["INV-SCHEMA-1"],
            // The snapshots show the completed call cancelled: the always-on tool-call tracking
            // sees the terminal status change too.
            CompletedToolSkipped => &["INV-TOOL-1"],
            // A chat whose only blocking part reads running is InputNeeded (24) for no reason a
            // snapshot shows.
            PendingShownRunning => &["STATUS-003"],
            // An origin whose clientSeq is a string breaks the envelope's schema, and it names
            // none of the client's dispatches (DISPATCH-001 checks every echo).
            ClientSeqAsString => &["INV-SCHEMA-1", "DISPATCH-001"],
            // SUB-001 subscribes to the root channel after an initialize without it, which the
            // fault refuses (SUB-009 does so too, first plainly: blocked by SUB-001).
            RootSubscribeRefused => &["SUB-001"],
            // INPUT-002 is STATUS-003 for input requests: breaking it breaks both.
            InputStatusWrong => &["STATUS-003"],
            // These snapshots differ from the state the actions build (a repeated entry the
            // reducers update once, a duration they never gave), so folds and fresh snapshots
            // disagree at checkpoints too.
            // The same holds for an open input request listed twice (INV-CHAT-4's fault).
            ClientListedTwice | NegativeDuration | InputRequestListedTwice => &["INV-FOLD-1"],
            // ... and listSessions, built from the state, lists the chat once: the entry's
            // chats differ from the snapshot's at checkpoints.
            ChatListedTwice => &["INV-FOLD-1", "INV-SUMMARY-2"],
            // listSessions, built from the state, still lists the default chat.
            DefaultChatUnlisted => &["INV-SUMMARY-2"],
            // SESSION-001 is part of INV-SESSION-1 (chats listed once); listSessions, built from
            // the state, lists the newest chat once, which CHAT-008's checkpoint (a session with
            // two chats) sees too.
            NewestChatListedTwice => &["INV-SESSION-1", "INV-SUMMARY-2"],
            // chat/turnResume takes an errored turn's closing error part off again: resumed
            // from a snapshot without it, the mirror drops the part before, and the resumed
            // turn's streaming then targets a part (TURN-003) and turn (TURN-004) it lacks.
            ErrorPartDropped => &["TURN-003", "TURN-004"],
            // SESSION-011 reads the directory list of the very snapshots this fault repeats.
            // listSessions, built from the state, lists the directory once.
            DirectoryListedTwice => &["SESSION-011", "INV-SUMMARY-3"],
            // A pending tool call in an ended turn is also an ended turn holding a
            // non-terminal call.
            NoSkipOnTurnEnd => &["INV-CHAT-2"],
            // The mirrors hold the entry the actions gave, the fresh snapshots the broken one:
            // checkpoints see the fold differ too. (A stray chat directory is in the chat's
            // first snapshot already: its folds agree with later snapshots.)
            InputNeededChatUnlisted => &["INV-FOLD-1"],
            // The fold sets modifiedAt as the turn's end says; the shifted one differs from it.
            ModifiedAtLate => &["INV-FOLD-1"],
            // A queue holding an id twice is also the wrong queue shape.
            QueuedUpdateAppends => &["INV-CHAT-5"],
            // The 0.9 connection's always-on schema check knows canvasesChanged is not in 0.9.
            NewActionsToOldClient => &["INV-SCHEMA-1"],
            // The summaries that carry the bad createdAt (listSessions, root/sessionAdded) are
            // schema-checked too, and createdAt is a date-time there.
            BadTimestamp => &["INV-SCHEMA-1"],
            // ROOT-003 waits for the second page, which never comes.
            UnansweredRequest => &["ROOT-003"],
            // Issue 12, session, status, pending and input (faults-c).
            // A snapshot whose only request reads resolved contradicts its InputNeeded status
            // (STATUS-003), and the fold, which keeps it open, differs at checkpoints.
            InputShownResolved => &["STATUS-003", "INV-FOLD-1"],
            // PENDING-003 and PENDING-004 also want the second step to name the message.
            QueuedTurnUnreferenced => &["PENDING-003", "PENDING-004"],
            // A defaultChat naming the disposed chat names a chat not in chats, which
            // SESSION-003's after-dispose case checks.
            DefaultChatRestored => &["SESSION-003"],
            // SESSION-001 and SESSION-004 are parts of INV-SESSION-1 seen by a case (chats
            // listed once, the default chat not movable): breaking one breaks both.
            DefaultChatMovable | PromotedDefaultMovable => &["INV-SESSION-1"],
            // Activity 16 is outside {1, 2, 8, 24} (STATUS-001) and contradicts the open
            // request (STATUS-003, INPUT-002's 24); the fold, and the catalog entry the actions
            // keep, still say 24 (INV-FOLD-1 at checkpoints, CHAT-003).
            InputNeededWithoutInProgress => &[
                "STATUS-001",
                "STATUS-003",
                "INPUT-002",
                "INV-FOLD-1",
                "CHAT-003",
            ],
            // DISPATCH-004's case dispatches to a missing chat too: the chat row is an
            // instance of its rule.
            EchoMissingChat => &["DISPATCH-004"],
            // The second ending is a second end of the turn (TURN-002), and the usage after the
            // cancellation belongs to no active turn (TURN-004).
            CancelEndsTwice => &["TURN-002", "TURN-004"],
            // The late delta belongs to no active turn: the stream checks see it too.
            CancelKeepsStreaming => &["TURN-003", "TURN-004"],
            // A checkpoint during a turn (PENDING-002's) finds the catalog idle and the chat
            // busy; listSessions, built from the chats, differs from the catalog too.
            BusyUnannounced => &["CHAT-003", "INV-SUMMARY-2"],
            // ROOT-008's case waits for the chats list of a summary change after createChat.
            RootChatsUnpublished => &["ROOT-008"],
            // CHAT-VALIDATE-006 is DISPATCH-007 for input answers: its answers without a value
            // do not decode, and the fault accepts them. (Their echoes are the cases' to judge:
            // INV-SCHEMA-1 does not see them again.)
            MalformedAccepted => &["CHAT-VALIDATE-006"],
            // The ping FUZZ-001 sends on a connection the fault left deaf is an unanswered
            // request. (The requests FUZZ-004 and TRANSPORT-006 send deliberately invalid are
            // theirs to see answered: NegativeIdUnanswered and DiesOnMalformed break their rule
            // alone.)
            BinaryWedgesPeers => &["TRANSPORT-003"],
            // serverInfo.name and the root state's agents are required members: the result
            // breaks its schema too.
            ServerInfoNameless | RootWithoutAgents => &["INV-SCHEMA-1"],
            // INV-SESSION-1 pairs lifecycle failed with creationError in every session state.
            FailedWithoutError => &["INV-SESSION-1"],
            // INV-SESSION-1 pairs "failed" with creationError and never sees "failed".
            // (LIFECYCLE-005 waits for the failure in either spelling: the wire value is
            // LIFECYCLE-004's matter.)
            FailedAsCreationFailed => &["INV-SESSION-1"],
            // SUB-004's c2 unsubscribed from the session but is still on the root channel.
            SessionActionsToAll => &["SUB-004"],
            // The reconnect result is schema-checked too, and its type is replay or snapshot.
            EmptyReplayRenamed => &["INV-SCHEMA-1"],
            // RECONNECT-003 alone: RECONNECT-005 now gets the snapshot form (lastSeenServerSeq 0),
            // so no case sees the late envelope behind its mirror.
            ReplayTailLater => &[],
            // CUSTOM-001's checkpoint, after four turns in one chat, takes a fresh snapshot the
            // cursor was added to: no action of the chat folds one in.
            CursorWithoutWindow => &["INV-FOLD-1"],
            // SESSION-015 (a MAY: info) waits for the same authoritative follow-up.
            McpStartUnconfirmed => &["SESSION-015"],
            // TURN-008 ("accepted only for the latest errored turn") resumes an older resumable
            // turn first, which this fault accepts.
            ResumeNotResumable => &["TURN-008"],
            // Other connections that hold only the chat miss the agent's actions too: INPUT-003's
            // c2 folds a turn without its input request (INV-FOLD-1 at the checkpoint). (SUB-010's
            // c2 and VERSION-009's old connection never see the turn end: SUB-003's matter,
            // which blocks them.)
            TurnStreamToStarterOnly => &["INV-FOLD-1"],
            _ => &[],
        }
    }

    /// Every rule this fault breaks: its own, then [`Fault::also_breaks`].
    pub fn breaks(self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.rule()).chain(self.also_breaks().iter().copied())
    }
}
