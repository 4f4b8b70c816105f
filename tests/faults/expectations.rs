//! What tests/faults.rs expects of each fault beyond the rules it breaks: the cases it blocks
//! through another rule, the cases it makes not applicable or not testable, the profile its
//! run needs.

use std::collections::BTreeSet;

use ahpspec::host::Fault;

use super::builtin;

/// Rules a fault is expected to break: its own and those it breaks by construction
/// (`Fault::also_breaks`, src/host/fault_rules.rs, with the reasons).
pub fn expected(fault: Fault) -> BTreeSet<String> {
    fault.breaks().map(str::to_owned).collect()
}

/// Which cases a fault blocks: those that rely on its rule before reaching their own.
pub enum Blocks {
    Nothing,
    /// The rule is a prerequisite of almost every case (initialize, a ready session).
    Most,
    /// These cases use a rule the fault breaks only on the way (e.g. truncation to end a
    /// turn): (case, the rule that blocks it).
    Cases(&'static [(&'static str, &'static str)]),
}

pub fn blocks(fault: Fault) -> Blocks {
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
            // Session 28.
            ("SESSION-013/default-asking", "INIT-003"),
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
        // SESSION-013/default-asking moves its chat ahead of the default one first.
        Fault::ReorderLeavesOneOut => {
            Blocks::Cases(&[("SESSION-013/default-asking", "SESSION-005")])
        }
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
        // TERM-002/joined types its printf once TERM-010's echo came back.
        Fault::TerminalOutputDropped => Blocks::Cases(&[("TERM-002/joined", "TERM-010")]),
        // LIFECYCLE-012's control: a never-existing annotations channel must be refused.
        Fault::SubscribeUnknownOk => Blocks::Cases(&[("LIFECYCLE-012", "SUB-011")]),
        _ => Blocks::Nothing,
    }
}

/// Rules a blocking fault breaks besides its own, each with its reason.
pub fn expected_with_blocking(fault: Fault) -> BTreeSet<String> {
    let mut rules = expected(fault);
    if fault == Fault::SessionsNeverReady {
        // ROOT-010's final root/progress frame announces the session's initialisation,
        // which never ends; the case records that at its MAY step.
        rules.insert("ROOT-010".to_owned());
    }
    rules
}

/// Cases a fault makes not applicable: it takes the other path of a MAY they need one of.
pub fn expected_not_applicable(fault: Fault) -> BTreeSet<String> {
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
pub fn expected_not_testable(fault: Fault) -> BTreeSet<String> {
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
pub fn profile_for(fault: Fault) -> Option<std::path::PathBuf> {
    matches!(
        fault,
        Fault::ScheduleNeverFires
            | Fault::RunCountKeptOnReEnable
            | Fault::RunAllowanceIgnored
            | Fault::DisabledScheduleFires
            | Fault::ScheduleStopsAfterRun
            | Fault::AllowanceEndsEarly
    )
    .then(builtin::scripted_profile_with_schedule_waits)
}
