//! Faulty variants of the built-in AAP server. Each one breaks exactly one rule of
//! `aap/RULES.md` (named by its stable ID), injected at a seam of the server, so every AAP
//! check of the harness can be shown to fail against the one bug it exists for.

use crate::faultset::fault_catalog;
pub use crate::faultset::UnknownFault as UnknownAapFault;

fault_catalog! {
    /// A deliberate single violation of one AAP rule.
    AapFault, kind = "AAP fault", list = "ahpspec serve --protocol aap --fault list",
    // HTTP, bodies and errors.
    ToolSpecNoDescription => ("tool-spec-no-description", "AAP-HTTP-001", "Leaves the required description out of the server tools in GET /meta (a schema break)."),
    ListTextPlain => ("list-text-plain", "AAP-HTTP-002", "Sends the GET /sessions body as text/plain."),
    MalformedJsonCreates => ("malformed-json-creates", "AAP-HTTP-003", "Answers a POST /sessions body that is not JSON by creating a default session (201)."),
    UnknownStreamAsNone => ("unknown-stream-as-none", "AAP-HTTP-004", "Answers a turn with an unknown stream value as if it were none instead of 400."),
    UnknownStreamAsDelta => ("unknown-stream-as-delta", "AAP-HTTP-004", "Answers a turn with an unknown stream value with a delta SSE stream instead of 400."),
    TextPlainOk200 => ("text-plain-200", "AAP-HTTP-005", "Creates a session from a text/plain body but answers 200 instead of 201 or a 4xx."),
    UnknownPath400 => ("unknown-path-400", "AAP-HTTP-006", "Answers a path that is no endpoint with 400 instead of 404."),
    Redelete500 => ("redelete-500", "AAP-HTTP-007", "Answers DELETE of a session that no longer exists with 500 instead of 404."),
    AbandonedStreamWedges => ("abandoned-stream-wedges", "AAP-HTTP-008", "Paces turn streams and, when a client disconnects before a stream ended, leaves the session busy: its later turns are refused with 409."),
    UnknownFieldRefused => ("unknown-field-refused", "AAP-HTTP-009", "Refuses a turn whose body has a top-level field the schema does not name, with 400."),
    // Authentication (with a token configured).
    ListRefusesBearer => ("list-refuses-bearer", "AAP-AUTH-001", "Answers GET /sessions 401 even with the right Authorization: Bearer key."),
    ListWithoutKey => ("list-without-key", "AAP-AUTH-002", "Serves GET /sessions without a key or with a wrong one."),
    // GET /meta.
    MetaVersion2 => ("meta-version-2", "AAP-META-001", "Says version 2 in GET /meta (version 1 when it speaks version 2)."),
    DuplicateAgent => ("duplicate-agent", "AAP-META-003", "Lists the agent twice in GET /meta."),
    VersionNotSemver => ("version-not-semver", "AAP-META-004", "Gives the agent version \"1.0\" (not MAJOR.MINOR.PATCH)."),
    SelectDefaultNotOption => ("select-default-not-option", "AAP-META-005", "Declares a select option whose default is not one of its options."),
    // Sessions.
    CreateAnswers200 => ("create-200", "AAP-SESSION-001", "Answers POST /sessions with 200 instead of 201."),
    CreateRunsAgent => ("create-runs-agent", "AAP-SESSION-002", "Runs the agent on session creation: history gets an echo of the last seed user message."),
    GetDropsClientTools => ("get-drops-client-tools", "AAP-SESSION-003", "Leaves the client tools out of GET /sessions/:id."),
    UnknownSessionMadeUp => ("unknown-session-made-up", "AAP-SESSION-004", "Answers GET /sessions/:id for an id it never created with a made-up session (200)."),
    DeleteKeepsSession => ("delete-keeps-session", "AAP-SESSION-005", "Answers DELETE with 204 but keeps the session."),
    ListSkipsTurnless => ("list-skips-turnless", "AAP-SESSION-006", "Leaves sessions that never ran a turn out of GET /sessions."),
    PagesOverlap => ("pages-overlap", "AAP-SESSION-007", "Gives a next cursor that repeats the last session of a page on the next page."),
    UnknownAgentAccepted => ("unknown-agent-accepted", "AAP-SESSION-008", "Creates a session for an agent name GET /meta does not list."),
    TrustDropped => ("trust-dropped", "AAP-SESSION-009", "Returns agent.tools without their trust flags."),
    // Options and overrides.
    CreateOptionsDropped => ("create-options-dropped", "AAP-OPTION-001", "Forgets the text options given at session creation (select and secret ones are kept)."),
    OptionsReplaced => ("options-replaced", "AAP-OPTION-002", "Replaces the session's options with a turn's agent.options instead of merging by key."),
    SecretPlaintext => ("secret-plaintext", "AAP-OPTION-003", "Returns secret option values in plaintext."),
    SecretDropped => ("secret-dropped", "AAP-OPTION-004", "Leaves set secret options out of agent.options instead of a placeholder."),
    SecretBlanked => ("secret-blanked", "AAP-OPTION-004", "Keeps set secret options in agent.options with an empty value instead of a placeholder."),
    TurnAgentToolsIgnored => ("turn-agent-tools-ignored", "AAP-OPTION-005", "Ignores a turn's agent.tools."),
    TurnToolsIgnored => ("turn-tools-ignored", "AAP-OPTION-006", "Ignores a turn's tools (client tools)."),
    AgentRenamed => ("agent-renamed", "AAP-OPTION-007", "Accepts a turn's agent.name and renames the session's agent."),
    // Turns.
    NoneAnswers202 => ("none-answers-202", "AAP-TURN-001", "Answers an explicit stream none turn of a plain (unscripted) user message with 202 instead of 200."),
    DefaultStreamDelta => ("default-stream-delta", "AAP-TURN-002", "Streams delta SSE for a turn without stream (the default is none)."),
    DeltaWrongContentType => ("delta-wrong-content-type", "AAP-TURN-003", "Sends the delta stream of a plain (unscripted) user message as text/plain."),
    MessageWrongContentType => ("message-wrong-content-type", "AAP-TURN-004", "Sends the message stream of a plain (unscripted) user message as text/plain."),
    TurnUnknownSession400 => ("turn-unknown-session-400", "AAP-TURN-005", "Answers a turn on a session id it never created with 400 instead of 404."),
    RefusalAsEndTurn => ("refusal-as-end-turn", "AAP-TURN-006", "Reports a scripted refusal as end_turn."),
    NoneEchoesRequest => ("none-echoes-request", "AAP-TURN-007", "Puts the submitted user message first in a none response's messages."),
    // Server-Sent Events.
    SseEventNameMismatch => ("sse-event-name-mismatch", "AAP-SSE-001", "Puts \"event\":\"text\" in the data of text_delta events."),
    TurnStartLate => ("turn-start-late", "AAP-SSE-002", "Sends turn_start after the first content event in streams answering a plain (unscripted) user message."),
    DeltaDropsTurnStop => ("delta-drops-turn-stop", "AAP-SSE-003", "Ends a delta-mode stream without its final turn_stop event."),
    MessageDropsAfterTurnStart => ("message-drops-after-turn-start", "AAP-SSE-003", "Ends a message-mode stream right after turn_start: no content, no turn_stop."),
    DeltaSendsText => ("delta-sends-text", "AAP-SSE-004", "Sends the text of a plain (unscripted) user message's turn as a whole text event in delta mode."),
    MessageSendsDeltas => ("message-sends-deltas", "AAP-SSE-005", "Sends the text of a plain (unscripted) user message's turn as text_delta events in message mode."),
    SessionStartInTurn => ("session-start-in-turn", "AAP-SSE-006", "Sends session_start right after turn_start in streams answering a plain (unscripted) user message."),
    DeltaDropsLastPiece => ("delta-drops-last-piece", "AAP-SSE-007", "Loses the last delta of a turn's last text of two or more pieces in delta mode (stream and history agree)."),
    MessageJoinsTexts => ("message-joins-texts", "AAP-SSE-008", "Joins a turn's consecutive texts into one text event in message mode."),
    // Tool calls.
    ClientCallEndsTurn => ("client-call-ends-turn", "AAP-TOOL-001", "Stops with end_turn, not tool_use, when a client tool call waits."),
    ToolResultRefused => ("tool-result-refused", "AAP-TOOL-002", "Refuses a turn answering a client tool call with 400."),
    TrustedResultMissing => ("trusted-result-missing", "AAP-TOOL-003", "Runs trusted server tools without reporting their result (no tool_result, no tool message)."),
    UntrustedRunsInline => ("untrusted-runs-inline", "AAP-TOOL-004", "Runs untrusted server tools inline without asking permission."),
    GrantNotRun => ("grant-not-run", "AAP-TOOL-005", "Treats a granted tool_permission as a denial: the tool never runs."),
    DenialRunsTool => ("denial-runs-tool", "AAP-TOOL-006", "Runs the tool of a denied tool_permission."),
    TrustedStopsToolUse => ("trusted-stops-tool-use", "AAP-TOOL-007", "Stops with tool_use after trusted server tools ran inline and nothing waits."),
    ClientResultEchoed => ("client-result-echoed", "AAP-TOOL-008", "Echoes a client's tool result back as a tool_result event in the next stream."),
    // History.
    HistoryWrongKind => ("history-wrong-kind", "AAP-HISTORY-001", "Returns full history under history.compacted."),
    UndeclaredHistoryServed => ("undeclared-history-served", "AAP-HISTORY-002", "Serves compacted history although capabilities.history does not declare it."),
    HistoryUnknownSession200 => ("history-unknown-session-200", "AAP-HISTORY-003", "Answers history of a session id it never created with an empty 200."),
    HistoryDropsLast => ("history-drops-last", "AAP-HISTORY-004", "Leaves the newest message out of GET /sessions/:id/history."),
    HistoryKeepsPermission => ("history-keeps-permission", "AAP-HISTORY-005", "Stores tool_permission messages in history."),
    HistoryDefaultFull => ("history-default-full", "AAP-HISTORY-006", "Answers a history request without a valid type with full history (200)."),
    // Versions 1 and 2 only (docs/aap-versions.md); each acts at its versions alone.
    CreateNoSessionId => ("create-no-session-id", "AAP-SESSION-010", "Versions 1 and 2: answers a none-mode PUT /session without its sessionId."),
    CreateNoSessionStart => ("create-no-session-start", "AAP-SSE-009", "Versions 1 and 2: opens a PUT /session stream with turn_start, no session_start."),
    ListObjects => ("list-objects", "AAP-HTTP-001", "Version 1: lists session objects in GET /sessions where version 1 lists ids."),
    ListIds => ("list-ids", "AAP-HTTP-001", "Version 2: lists session ids in GET /sessions where version 2 lists session objects."),
    UndeclaredHistoryInline => ("undeclared-history-inline", "AAP-HISTORY-007", "Versions 1 and 2: serves compacted history although capabilities.history does not declare it (inline in GET /session/:id?history=compacted at 1, from GET /session/:id/history at 2)."),
    HistoryInlineOnly => ("history-inline-only", "AAP-HISTORY-001", "Version 2: answers GET /session/:id/history 404, serving history only as version 1 did."),
}

impl AapFault {
    /// The protocol versions (1, 2, 3) the fault acts at: a fault of a rule that holds in
    /// some versions only is a no-op elsewhere.
    pub fn versions(self) -> &'static [u64] {
        match self {
            AapFault::CreateNoSessionId
            | AapFault::CreateNoSessionStart
            | AapFault::UndeclaredHistoryInline => &[1, 2],
            AapFault::ListObjects => &[1],
            AapFault::ListIds | AapFault::HistoryInlineOnly => &[2],
            // Rules of version 3 alone (aap/RULES.md `versions`).
            AapFault::CreateAnswers200
            | AapFault::CreateRunsAgent
            | AapFault::UndeclaredHistoryServed => &[3],
            AapFault::HistoryDefaultFull => &[2, 3],
            _ => &[1, 2, 3],
        }
    }

    /// Whether the fault acts at `version`.
    pub fn acts_at(self, version: u64) -> bool {
        self.versions().contains(&version)
    }
}

/// The faults a server breaks at once (`--fault a,b`); empty: the correct server.
pub type AapFaultSet = crate::faultset::FaultSet<AapFault>;

/// The catalog as printed by `ahpspec serve --protocol aap --fault list`: name, rule, what it breaks.
pub fn fault_catalog_lines() -> Vec<String> {
    crate::faultset::catalog_lines::<AapFault>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_round_trip_and_sets_parse() {
        let mut seen = std::collections::HashSet::new();
        for fault in AapFault::ALL {
            assert!(seen.insert(fault.name()), "duplicate {}", fault.name());
            assert_eq!(fault.name().parse::<AapFault>(), Ok(*fault));
            assert!(
                fault.rule().starts_with("AAP-"),
                "{} names no AAP rule",
                fault
            );
        }
        let set: AapFaultSet = "delta-drops-turn-stop, delta-drops-turn-stop"
            .parse()
            .expect("a known fault");
        assert_eq!(set.to_string(), "delta-drops-turn-stop");
        assert!("delta-drops-turn-stop,".parse::<AapFaultSet>().is_err());
        assert!("nope".parse::<AapFaultSet>().is_err());
    }
}
