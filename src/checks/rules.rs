//! Every rule the code names, in one table: the [`Rule`] enum that violations, counts, skips,
//! charges and fuzz findings carry. The always-on rules of both protocols come with their
//! report rows ([`ALWAYS_ON`] for AHP, [`AAP_ALWAYS_ON`]); the case rules the code names (a
//! prerequisite a step rests on, a rule the fuzzer judges) come with their ID only, since
//! their level, spec and requirement are their cases' (suites/). Variants are the IDs in
//! CamelCase (`TOOL-007` is `Rule::Tool007`, `AAP-SSE-003` is `Rule::AapSse003`): "where is
//! TOOL-007 checked" is one grep for `Rule::Tool007`. Rule IDs are strings only at the edges
//! (suite files, traces, reports). This file is a data table; its length is the catalogue's.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::AlwaysOnRule;
use crate::verdict::Level;

/// One invocation makes the enum and both row lists, so a rule's variant, ID and report text
/// cannot drift apart. Always-on rows come first, AHP's then AAP's: such a variant's
/// discriminant is its row's index in `ALWAYS_ON`, then in `AAP_ALWAYS_ON`.
macro_rules! rules {
    (
        ahp { $( ($variant:ident, $id:literal, $level:ident, $area:literal, $spec:literal, $unit:literal, $req:literal), )* }
        aap { $( ($aap_variant:ident, $aap_id:literal, $aap_level:ident, $aap_area:literal, $aap_spec:literal, $aap_unit:literal, $aap_req:literal), )* }
        cases { $( ($case_variant:ident, $case_id:literal), )* }
    ) => {
        /// A rule of either protocol's catalog that the code names.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Rule {
            $( #[doc = $req] $variant, )*
            $( #[doc = $aap_req] $aap_variant, )*
            $( #[doc = $case_id] $case_variant, )*
        }

        impl Rule {
            /// Every always-on rule of both protocols, AHP's first, each in report order.
            pub const ALWAYS_ON: &'static [Rule] = &[$( Rule::$variant, )* $( Rule::$aap_variant, )*];

            /// The rule's ID (docs/ahp/RULES.md, or aap/RULES.md for AAP's).
            pub const fn id(self) -> &'static str {
                match self {
                    $( Rule::$variant => $id, )*
                    $( Rule::$aap_variant => $aap_id, )*
                    $( Rule::$case_variant => $case_id, )*
                }
            }

            /// The rule with this ID, when the code names it.
            pub fn from_id(id: &str) -> Option<Rule> {
                Some(match id {
                    $( $id => Rule::$variant, )*
                    $( $aap_id => Rule::$aap_variant, )*
                    $( $case_id => Rule::$case_variant, )*
                    _ => return None,
                })
            }

            /// Every rule the code names.
            #[cfg(test)]
            const NAMED: &'static [Rule] = &[
                $( Rule::$variant, )* $( Rule::$aap_variant, )* $( Rule::$case_variant, )*
            ];
        }

        /// Every always-on AHP rule, in report order.
        pub const ALWAYS_ON: &[AlwaysOnRule] = &[
            $( AlwaysOnRule { rule: Rule::$variant, id: $id, level: Level::$level, area: $area, spec: $spec, unit: $unit, requirement: $req }, )*
        ];

        /// Every always-on AAP rule, in report order.
        pub const AAP_ALWAYS_ON: &[AlwaysOnRule] = &[
            $( AlwaysOnRule { rule: Rule::$aap_variant, id: $aap_id, level: Level::$aap_level, area: $aap_area, spec: $aap_spec, unit: $aap_unit, requirement: $aap_req }, )*
        ];
    };
}

impl Rule {
    /// The report row of an always-on rule (`None` for a case rule: its row is its case's).
    pub fn always_on(self) -> Option<&'static AlwaysOnRule> {
        let index = self as usize;
        ALWAYS_ON
            .get(index)
            .or_else(|| AAP_ALWAYS_ON.get(index.checked_sub(ALWAYS_ON.len())?))
    }
}

impl AsRef<str> for Rule {
    fn as_ref(&self) -> &str {
        self.id()
    }
}

impl PartialEq<str> for Rule {
    fn eq(&self, id: &str) -> bool {
        self.id() == id
    }
}

impl PartialEq<&str> for Rule {
    fn eq(&self, id: &&str) -> bool {
        self.id() == *id
    }
}

impl PartialEq<Rule> for str {
    fn eq(&self, rule: &Rule) -> bool {
        self == rule.id()
    }
}

impl PartialEq<Rule> for &str {
    fn eq(&self, rule: &Rule) -> bool {
        *self == rule.id()
    }
}

/// A rule is its ID in traces and reports.
impl Serialize for Rule {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.id())
    }
}

impl<'de> Deserialize<'de> for Rule {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let id = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        Rule::from_id(&id).ok_or_else(|| {
            serde::de::Error::custom(format!("{id} is not a rule this version of ahpspec names"))
        })
    }
}

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.id())
    }
}

/// Rules sort by ID, as the strings they replaced did (skips and counts print in that order).
impl Ord for Rule {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.id().cmp(other.id())
    }
}

impl PartialOrd for Rule {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

rules! {
    ahp {
        (Transport001, "TRANSPORT-001", Must, "transport", "docs/specification/transport.md § Common Transports", "frames",
            "Every frame the host sends is a text frame holding exactly one JSON-RPC object."),
        (Transport002, "TRANSPORT-002", Must, "transport", "docs/specification/overview.md § Base Protocol", "messages",
            "Every host message has \"jsonrpc\": \"2.0\"."),
        (Transport003, "TRANSPORT-003", Must, "transport", "docs/specification/overview.md § Requests", "responses",
            "Each request receives exactly one response carrying the same id."),
        (Transport004, "TRANSPORT-004", Must, "transport", "docs/specification/overview.md § Notifications", "responses",
            "Notifications never receive a response."),
        (Transport005, "TRANSPORT-005", Must, "transport", "JSON-RPC 2.0 § Response object", "responses",
            "A response has either result or error, never both; error has an integer code and a string message."),
        (Transport011, "TRANSPORT-011", Must, "transport", "docs/specification/subscriptions.md § Every message carries channel", "notifications",
            "Every host notification's params carries a top-level string channel."),
        (Err002, "ERR-002", Must, "errors", "docs/specification/authentication.md § AuthRequired Error Code", "-32007 errors",
            "-32007 errors carry data.resources: protected-resource metadata (snake_case keys, resource required)."),
        (Err003, "ERR-003", Must, "errors", "crate: ahp-types/src/errors.rs (PermissionDeniedErrorData)", "-32009 errors",
            "-32009 data, when present, is {request?: ResourceRequestParams} (derived, MUST*)."),
        (InvSchema1, "INV-SCHEMA-1", Must, "schema", "RULES.md §17; schemas/ahp/<version>/", "messages",
            "Every result, snapshot, envelope and notification validates against the negotiated version's schema."),
        (Env002, "ENV-002", Must, "actions", "docs/guide/actions.md § Action Envelope; docs/specification/lifecycle.md § Reconnection (one lastSeenServerSeq per connection); RULES.md §17 INV-SEQ-1", "envelopes of subscriptions that asked for maxLatencyMs 0",
            "Accepted envelopes on one connection arrive in strictly increasing serverSeq order across channels (derived, MUST*: checked over the subscriptions that asked for immediate delivery, since a coalesced one may lag)."),
        (Env003, "ENV-003", Must, "actions", "crate: ahp-types/src/state.rs (Snapshot); RULES.md §17 INV-SEQ-1", "envelopes",
            "Per channel, serverSeq of accepted envelopes is strictly increasing."),
        (Sub002, "SUB-002", Must, "subscriptions", "crate: ahp-types/src/state.rs (Snapshot.fromSeq); RULES.md §17 INV-SEQ-1, INV-SEQ-2", "envelopes",
            "Every accepted action delivered after a subscribe has serverSeq greater than the snapshot's fromSeq."),
        (Env004, "ENV-004", Must, "actions", "docs/specification/subscriptions.md § Action Delivery", "envelopes",
            "An envelope's channel is the channel its action belongs to."),
        (Dispatch001, "DISPATCH-001", Must, "actions", "docs/guide/reconciliation.md § Reconciliation Algorithm", "echoes",
            "An echo of a client dispatch carries origin.clientId and origin.clientSeq of that dispatch and the dispatched action."),
        (Env005, "ENV-005", Must, "actions", "docs/guide/actions.md § Action Envelope", "envelopes",
            "Host-originated actions carry no origin."),
        (Sub012, "SUB-012", Must, "subscriptions", "docs/specification/subscriptions.md § URI Scheme", "messages",
            "Channel URIs the host returns use the 1.0.0 schemes; no agenthost: or copilot: URIs."),
        (Status001, "STATUS-001", Must, "status", "docs/guide/state-model.md § Session Status Bitset; RULES.md §17 INV-STATUS-1", "status values",
            "status & 31 is one of 1, 2, 8, 24 for every session, chat and summary status."),
        (Status003, "STATUS-003", Must, "status", "crate: ahp/src/reducers.rs (summary_status); RULES.md §17 INV-STATUS-2", "chat states",
            "Chat activity matches content: active turn ⇒ 8 or 24, none ⇒ 1 or 2, 24 ⇔ a blocking part in the active turn."),
        (Turn003, "TURN-003", Must, "chat-channel", "crate: ahp-types/src/actions.rs (ChatDeltaAction)", "text deltas",
            "chat/delta and chat/reasoning only target a part created earlier by chat/responsePart in the same active turn."),
        (Turn004, "TURN-004", Must, "chat-channel", "crate: ahp/src/reducers.rs (turn-id checks)", "host streaming actions",
            "Host streaming actions (deltas, parts, usage, tool-call actions) carry the active turn's id."),
        (Turn005, "TURN-005", Must, "chat-channel", "docs/specification/chat-channel.md § Error recovery", "response parts",
            "Error parts are never sent through chat/responsePart; errors end a turn through chat/error."),
        (Pending003, "PENDING-003", Should, "pending-messages", "docs/specification/chat-channel.md § Queued Messages", "queued-message consumptions",
            "The host consumes queued messages first in, first out."),
        (Tool007, "TOOL-007", Must, "tool-calls", "crate: ahp/src/reducers.rs (end_turn)", "tool calls a turn's end left open, seen in a later snapshot",
            "When a turn ends, every non-terminal tool call in it is cancelled with reason skipped."),
        (InvTool1, "INV-TOOL-1", Must, "tool-calls", "RULES.md §17 INV-TOOL-1; PROTOCOL.md §12.7", "tool-call status observations",
            "Per tool call, every status change a host action or a later snapshot shows is reachable in the lifecycle table, and nothing follows a terminal status."),
        (InvTool2, "INV-TOOL-2", Must, "tool-calls", "RULES.md §17 INV-TOOL-2; crate: ahp-types/src/state.rs (ToolCallConfirmationReason, ToolCallCancellationReason)", "tool calls and tool-call values",
            "running, pending-result-confirmation and completed calls carry confirmed in {not-needed, user-action, setting}, cancelled ones reason in {denied, skipped, result-denied} (closed sets, whatever the schema leaves open), and only MCP-contributed calls need authentication."),
        (InvChat2, "INV-CHAT-2", Must, "chat-channel", "RULES.md §17 INV-CHAT-2", "turns",
            "A turn's tool-call ids are unique, every tool call's status is one of the seven, and ended turns hold only completed or cancelled calls."),
        (InvChat1, "INV-CHAT-1", Must, "chat-channel", "RULES.md §17 INV-CHAT-1; crate: ahp/src/reducers.rs (end_turn)", "ended turns",
            "An ended turn's state is complete, cancelled or error, and its duration is not negative."),
        (InvChat3, "INV-CHAT-3", Must, "chat-channel", "RULES.md §17 INV-CHAT-3; crate: ahp/src/reducers.rs (chat/error)", "ended turns",
            "A turn that ended in error ends with the error part chat/error appended."),
        (InvChat4, "INV-CHAT-4", Must, "chat-channel", "RULES.md §17 INV-CHAT-4; crate: ahp/src/reducers.rs (upsert_input_request)", "active turns with open input requests",
            "Within the active turn, the unresolved inputRequest parts carry distinct request ids (chat/inputRequested replaces the open part with the same id). Its first half, that an ended turn keeps an unanswered part, is INPUT-005's case."),
        (InvChat5, "INV-CHAT-5", Must, "pending-messages", "RULES.md §17 INV-CHAT-5; crate: ahp/src/reducers.rs (chat/pendingMessageSet)", "chat states",
            "A chat's queuedMessages lists each id once (an empty list counts as absent)."),
        (InvSession1, "INV-SESSION-1", Must, "session-channel", "RULES.md §17 INV-SESSION-1; docs/specification/session-channel.md § Chat catalog", "session states",
            "A session lists each chat once, its default chat is not movable (and, at checkpoints, listed), and lifecycle is failed exactly when creationError is set."),
        (InvSession2, "INV-SESSION-2", Must, "session-channel", "RULES.md §17 INV-SESSION-2; crate: ahp/src/reducers.rs (session/activeClientSet, session/inputNeededSet)", "session states",
            "A session lists each active client (by clientId) and each input-needed entry (by id) once, and (at checkpoints) every input-needed entry's chat among its chats."),
        (InvSession3, "INV-SESSION-3", Must, "session-channel", "RULES.md §17 INV-SESSION-3; crate: ahp/src/reducers.rs (session/workingDirectorySet, …Replaced)", "session and chat states",
            "A session's and a chat's workingDirectories list each directory once, and (at checkpoints) a chat's are among its session's."),
        (InvFold1, "INV-FOLD-1", Must, "state", "RULES.md §17 INV-FOLD-1 (its fold comparison also checks INV-FOLD-2 and INV-STATUS-3)", "mirror comparisons",
            "Snapshot + accepted envelopes folded through the reference reducers equals a fresh snapshot."),
        (InvSummary2, "INV-SUMMARY-2", Must, "root-channel", "RULES.md §17 INV-SUMMARY-2; crate: ahp-types/src/state.rs (SessionSummary.chats)", "listSessions entries with chats, at checkpoints",
            "A listSessions entry's chats list the session's chats in the same order, with the same title, origin and interactivity (status and changes where given)."),
        (InvSummary3, "INV-SUMMARY-3", Must, "root-channel", "RULES.md §17 INV-SUMMARY-3; crate: ahp-types/src/state.rs (SessionSummary)", "listSessions entries, at checkpoints",
            "A listSessions entry carries its session's provider, title, status flags, project, workingDirectories, annotations and origin (at quiescence)."),
        (InvChat6, "INV-CHAT-6", Must, "chat-channel", "RULES.md §17 INV-CHAT-6; crate: ahp/src/reducers.rs (end_turn, chat/turnStarted)", "chats whose turn started or ended, at checkpoints",
            "After an observed turn start or end, a chat's modifiedAt is the ISO 8601 instant it set (startedAt, or startedAt + max(duration, 0))."),
        (Chat003, "CHAT-003", Must, "chat-channel", "docs/specification/chat-channel.md § State; RULES.md §17 INV-SUMMARY-1", "chat catalog entries",
            "A chat's inlined summary fields equal its entry in the session's chat catalog (at quiescence)."),
        (Transport012, "TRANSPORT-012", Must, "transport", "docs/specification/root-channel.md § Commands; crate: ahp/src/client.rs (handle_server_request)", "host requests",
            "Host-to-client requests are resource* or createResourceWatch on channel ahp-root://, and after the harness answers one with -32601 the host still answers later requests."),
        // Issue 25, terminals (i25b).
        (Term002, "TERM-002", Must, "terminals", "docs/specification/terminal-channel.md § Content parts; crate: ahp-types/src/state.rs (TerminalCommandPart.output)", "terminal/data actions",
            "terminal/data never contains shell-integration escape sequences (OSC 633 or OSC 133)."),
        (InvTerm1, "INV-TERM-1", Must, "terminals", "RULES.md §17 INV-TERM-1; crate: ahp/src/reducers.rs (apply_action_to_terminal)", "terminal states and actions",
            "A terminal's lifecycle.status is running or exited; once exited it stays exited; a command part once complete never reopens."),
    }
    aap {
        (AapHttp001, "AAP-HTTP-001", Must, "aap/http", "docs/schema.md; aap/RULES.md AAP-META-002, AAP-META-006", "JSON bodies",
            "Every JSON success body matches the schema of its endpoint."),
        (AapHttp002, "AAP-HTTP-002", Must, "aap/http", "docs/response.md § stream: \"none\"", "JSON bodies",
            "A JSON body is sent as application/json."),
        (AapHttp007, "AAP-HTTP-007", Must, "aap/http", "HTTP semantics (derived, MUST*)", "responses",
            "No request of the harness makes the server answer 5xx."),
        (AapMeta003, "AAP-META-003", Must, "aap/meta", "docs/endpoints.md § GET /meta (Agent fields: name)", "meta responses",
            "Agent names are unique on the server."),
        (AapMeta004, "AAP-META-004", Must, "aap/meta", "docs/endpoints.md § GET /meta (Agent fields: version)", "agents",
            "An agent's version is a semantic version."),
        (AapMeta005, "AAP-META-005", Must, "aap/meta", "docs/endpoints.md § GET /meta (Option fields) (derived, MUST*)", "agents",
            "Option names are unique within an agent; a select option's default is one of its options."),
        (AapOption003, "AAP-OPTION-003", Must, "aap/options", "docs/endpoints.md § GET /sessions/:id", "response bodies",
            "A secret option's value is never returned in plaintext."),
        (AapSse001, "AAP-SSE-001", Must, "aap/sse", "docs/response.md § SSE Events; docs/schema.md § SSEEvent", "events",
            "Every SSE event names a known type and carries a JSON object with that type's fields."),
        (AapSse002, "AAP-SSE-002", Must, "aap/sse", "docs/response.md § turn_start", "streams",
            "turn_start is the first event of every turn stream, once."),
        (AapSse003, "AAP-SSE-003", Must, "aap/sse", "docs/response.md § turn_stop", "streams",
            "turn_stop is the final event of every stream: present, once, nothing after it, and the response ends."),
        (AapSse004, "AAP-SSE-004", Must, "aap/sse", "docs/response.md § text_delta, thinking_delta", "delta streams",
            "Delta mode sends text and thinking only as deltas."),
        (AapSse005, "AAP-SSE-005", Must, "aap/sse", "docs/response.md § text, thinking", "message streams",
            "Message mode sends text and thinking only as whole text/thinking events."),
        (AapSse006, "AAP-SSE-006", Must, "aap/sse", "docs/schema.md § SSEEvent (derived, MUST*)", "streams",
            "session_start never appears in a turn stream."),
        (AapSse007, "AAP-SSE-007", Must, "aap/sse", "docs/response.md § Response Modes", "turns run in several modes",
            "The same scripted turn carries the same content in delta, message and none mode."),
        (AapSse009, "AAP-SSE-009", Must, "aap/sse", "docs/response.md § session_start (tags v1, v2)", "creation streams (versions 1 and 2)",
            "A version 1 or 2 creation stream opens with one session_start carrying a non-empty sessionId, before turn_start."),
        (AapTool008, "AAP-TOOL-008", Must, "aap/tool-calls", "docs/tool-call.md § Tool call resolving (derived, MUST*)", "streams with tool events",
            "toolCallIds are unique within a turn; each tool_result answers a server tool call of this turn or a permission granted in this request."),
        (AapHistory004, "AAP-HISTORY-004", Must, "aap/history", "docs/history.md § Server History", "full histories",
            "Full history is exactly the seed, the submitted messages and what each turn produced."),
        (AapHistory005, "AAP-HISTORY-005", Must, "aap/history", "docs/response.md § Tool permission message", "histories",
            "tool_permission messages are never stored in history."),
    }
    cases {
        (Chat001, "CHAT-001"),
        (Completions001, "COMPLETIONS-001"),
        (Config001, "CONFIG-001"),
        (Config003, "CONFIG-003"),
        (Chat006, "CHAT-006"),
        (ChatMove002, "CHAT-MOVE-002"),
        (ChatValidate002, "CHAT-VALIDATE-002"),
        (ChatValidate003, "CHAT-VALIDATE-003"),
        (ChatValidate004, "CHAT-VALIDATE-004"),
        (ChatValidate005, "CHAT-VALIDATE-005"),
        (ChatValidate006, "CHAT-VALIDATE-006"),
        (ChatValidate007, "CHAT-VALIDATE-007"),
        (ChatValidate009, "CHAT-VALIDATE-009"),
        (ChatValidate010, "CHAT-VALIDATE-010"),
        (ChatValidate013, "CHAT-VALIDATE-013"),
        (ChatValidate014, "CHAT-VALIDATE-014"),
        (Dispatch002, "DISPATCH-002"),
        (Dispatch003, "DISPATCH-003"),
        (Dispatch004, "DISPATCH-004"),
        (Dispatch006, "DISPATCH-006"),
        (Dispatch007, "DISPATCH-007"),
        (Dispatch008, "DISPATCH-008"),
        (Fuzz001, "FUZZ-001"),
        (Fuzz002, "FUZZ-002"),
        (Fuzz003, "FUZZ-003"),
        (Fuzz004, "FUZZ-004"),
        (Init001, "INIT-001"),
        (Init003, "INIT-003"),
        (Init004, "INIT-004"),
        (Input003, "INPUT-003"),
        (Input004, "INPUT-004"),
        (Lifecycle001, "LIFECYCLE-001"),
        (Lifecycle002, "LIFECYCLE-002"),
        (Lifecycle003, "LIFECYCLE-003"),
        (Lifecycle006, "LIFECYCLE-006"),
        (Lifecycle009, "LIFECYCLE-009"),
        (Pending006, "PENDING-006"),
        (Reconnect001, "RECONNECT-001"),
        (Reconnect006, "RECONNECT-006"),
        (Res001, "RES-001"),
        (Res002, "RES-002"),
        (Res003, "RES-003"),
        (Res004, "RES-004"),
        (Res005, "RES-005"),
        (Res006, "RES-006"),
        (Res007, "RES-007"),
        (Res008, "RES-008"),
        (Res009, "RES-009"),
        (Res010, "RES-010"),
        (Res013, "RES-013"),
        (Res014, "RES-014"),
        (Root001, "ROOT-001"),
        (Root005, "ROOT-005"),
        (Root006, "ROOT-006"),
        (Root012, "ROOT-012"),
        (Sub001, "SUB-001"),
        (Sub003, "SUB-003"),
        (Sub004, "SUB-004"),
        (Sub006, "SUB-006"),
        (Sub011, "SUB-011"),
        (Term001, "TERM-001"),
        (Term006, "TERM-006"),
        (Tool003, "TOOL-003"),
        (Tool006, "TOOL-006"),
        (Tool008, "TOOL-008"),
        (Transport006, "TRANSPORT-006"),
        (Transport007, "TRANSPORT-007"),
        (Transport008, "TRANSPORT-008"),
        (Transport009, "TRANSPORT-009"),
        (Transport010, "TRANSPORT-010"),
        (Turn001, "TURN-001"),
        (Turn002, "TURN-002"),
        (Turn007, "TURN-007"),
        (Turn008, "TURN-008"),
        (Turn010, "TURN-010"),
        (Turn012, "TURN-012"),
        (Version001, "VERSION-001"),
        (Version002, "VERSION-002"),
        (Version005, "VERSION-005"),
        (Version006, "VERSION-006"),
        // Issue 25, authentication (i25c).
        (Auth004, "AUTH-004"),
        (AapAuth001, "AAP-AUTH-001"),
        (AapHistory001, "AAP-HISTORY-001"),
        (AapHistory002, "AAP-HISTORY-002"),
        (AapHttp003, "AAP-HTTP-003"),
        (AapHttp004, "AAP-HTTP-004"),
        (AapHttp005, "AAP-HTTP-005"),
        // Issue 27: judged by the AAP fuzzer's malformed-request mode.
        (AapHttp008, "AAP-HTTP-008"),
        (AapHttp009, "AAP-HTTP-009"),
        (AapMeta001, "AAP-META-001"),
        (AapSession001, "AAP-SESSION-001"),
        (AapSession003, "AAP-SESSION-003"),
        (AapSession005, "AAP-SESSION-005"),
        (AapSession006, "AAP-SESSION-006"),
        (AapSession007, "AAP-SESSION-007"),
        (AapSession010, "AAP-SESSION-010"),
        (AapTool001, "AAP-TOOL-001"),
        (AapTool002, "AAP-TOOL-002"),
        (AapTool004, "AAP-TOOL-004"),
        (AapTool007, "AAP-TOOL-007"),
        (AapTurn001, "AAP-TURN-001"),
        (AapTurn002, "AAP-TURN-002"),
        (AapTurn003, "AAP-TURN-003"),
        (AapTurn004, "AAP-TURN-004"),
        (AapTurn005, "AAP-TURN-005"),
        (AapTurn006, "AAP-TURN-006"),
        // Issue 24: judged by the fuzzer's routines and its working-directory operation.
        (ChatValidate011, "CHAT-VALIDATE-011"),
        (Init002, "INIT-002"),
        (Dispatch005, "DISPATCH-005"),
        (Root008, "ROOT-008"),
        (Session010, "SESSION-010"),
        (Sub008, "SUB-008"),
        (Turn011, "TURN-011"),
        // Issue 25: judged by the fuzzer's feature routines (exec/routines/features.rs).
        (Auth001, "AUTH-001"),
        (Chat007, "CHAT-007"),
        (Term003, "TERM-003"),
        // Issue 24's reach misses: judged by the fuzzer's client routines (routines/clients.rs).
        (Tool005, "TOOL-005"),
        (Reconnect008, "RECONNECT-008"),
        // Every other case rule of the catalog: a catalog case run as a fuzz operation names
        // the rule its broken step checks (tests: every case rule is named).
        (Automation001, "AUTOMATION-001"),
        (Automation002, "AUTOMATION-002"),
        (Automation003, "AUTOMATION-003"),
        (Automation004, "AUTOMATION-004"),
        (Automation005, "AUTOMATION-005"),
        (Automation006, "AUTOMATION-006"),
        (Automation007, "AUTOMATION-007"),
        (Automation008, "AUTOMATION-008"),
        (Automation009, "AUTOMATION-009"),
        (Automation010, "AUTOMATION-010"),
        (Automation011, "AUTOMATION-011"),
        (Automation012, "AUTOMATION-012"),
        (Automation013, "AUTOMATION-013"),
        (Automation014, "AUTOMATION-014"),
        (Automation015, "AUTOMATION-015"),
        (Automation016, "AUTOMATION-016"),
        (Automation017, "AUTOMATION-017"),
        (Automation018, "AUTOMATION-018"),
        (Automation019, "AUTOMATION-019"),
        (Automation020, "AUTOMATION-020"),
        (Automation021, "AUTOMATION-021"),
        (Automation022, "AUTOMATION-022"),
        (Canvas001, "CANVAS-001"),
        (Custom001, "CUSTOM-001"),
        (Custom002, "CUSTOM-002"),
        (Mcp001, "MCP-001"),
        (Mcp002, "MCP-002"),
        (Mcp003, "MCP-003"),
        (Session015, "SESSION-015"),
        (Session017, "SESSION-017"),
        (Session018, "SESSION-018"),
        (Tool013, "TOOL-013"),
        (Annotation001, "ANNOTATION-001"),
        (Annotation002, "ANNOTATION-002"),
        (Auth002, "AUTH-002"),
        (Auth003, "AUTH-003"),
        (Auth005, "AUTH-005"),
        (Auth006, "AUTH-006"),
        (Changeset001, "CHANGESET-001"),
        (Changeset002, "CHANGESET-002"),
        (Changeset003, "CHANGESET-003"),
        (Changeset004, "CHANGESET-004"),
        (Changeset005, "CHANGESET-005"),
        (Changeset006, "CHANGESET-006"),
        (Chat002, "CHAT-002"),
        (Chat004, "CHAT-004"),
        (Chat005, "CHAT-005"),
        (Chat008, "CHAT-008"),
        (Chat009, "CHAT-009"),
        (Chat010, "CHAT-010"),
        (ChatFork001, "CHAT-FORK-001"),
        (ChatFork002, "CHAT-FORK-002"),
        (ChatFork003, "CHAT-FORK-003"),
        (ChatFork004, "CHAT-FORK-004"),
        (ChatFork005, "CHAT-FORK-005"),
        (ChatFork006, "CHAT-FORK-006"),
        (ChatMove001, "CHAT-MOVE-001"),
        (ChatValidate001, "CHAT-VALIDATE-001"),
        (ChatValidate008, "CHAT-VALIDATE-008"),
        (ChatValidate012, "CHAT-VALIDATE-012"),
        (Config002, "CONFIG-002"),
        (Env001, "ENV-001"),
        (Err001, "ERR-001"),
        (Fuzz005, "FUZZ-005"),
        (Init006, "INIT-006"),
        (Init007, "INIT-007"),
        (Init008, "INIT-008"),
        (Input001, "INPUT-001"),
        (Input002, "INPUT-002"),
        (Input005, "INPUT-005"),
        (Input006, "INPUT-006"),
        (Lifecycle004, "LIFECYCLE-004"),
        (Lifecycle005, "LIFECYCLE-005"),
        (Lifecycle007, "LIFECYCLE-007"),
        (Lifecycle008, "LIFECYCLE-008"),
        (Lifecycle010, "LIFECYCLE-010"),
        (Lifecycle011, "LIFECYCLE-011"),
        (Lifecycle012, "LIFECYCLE-012"),
        (Otlp001, "OTLP-001"),
        (Pending001, "PENDING-001"),
        (Pending002, "PENDING-002"),
        (Pending004, "PENDING-004"),
        (Pending005, "PENDING-005"),
        (Pending007, "PENDING-007"),
        (Reconnect002, "RECONNECT-002"),
        (Reconnect003, "RECONNECT-003"),
        (Reconnect004, "RECONNECT-004"),
        (Reconnect005, "RECONNECT-005"),
        (Reconnect007, "RECONNECT-007"),
        (Reconnect009, "RECONNECT-009"),
        (Reconnect010, "RECONNECT-010"),
        (Res011, "RES-011"),
        (Res012, "RES-012"),
        (Root002, "ROOT-002"),
        (Root003, "ROOT-003"),
        (Root004, "ROOT-004"),
        (Root007, "ROOT-007"),
        (Root009, "ROOT-009"),
        (Root010, "ROOT-010"),
        (Root011, "ROOT-011"),
        (Root013, "ROOT-013"),
        (Session001, "SESSION-001"),
        (Session002, "SESSION-002"),
        (Session003, "SESSION-003"),
        (Session004, "SESSION-004"),
        (Session005, "SESSION-005"),
        (Session006, "SESSION-006"),
        (Session007, "SESSION-007"),
        (Session008, "SESSION-008"),
        (Session009, "SESSION-009"),
        (Session011, "SESSION-011"),
        (Session012, "SESSION-012"),
        (Session013, "SESSION-013"),
        (Session014, "SESSION-014"),
        (Session016, "SESSION-016"),
        (Status002, "STATUS-002"),
        (Status004, "STATUS-004"),
        (Status005, "STATUS-005"),
        (Status006, "STATUS-006"),
        (Status007, "STATUS-007"),
        (Sub005, "SUB-005"),
        (Sub007, "SUB-007"),
        (Sub009, "SUB-009"),
        (Sub010, "SUB-010"),
        (Sub013, "SUB-013"),
        (Sub014, "SUB-014"),
        (Term004, "TERM-004"),
        (Term005, "TERM-005"),
        (Term007, "TERM-007"),
        (Term008, "TERM-008"),
        (Term009, "TERM-009"),
        (Term010, "TERM-010"),
        (Tool001, "TOOL-001"),
        (Tool002, "TOOL-002"),
        (Tool004, "TOOL-004"),
        (Tool009, "TOOL-009"),
        (Tool010, "TOOL-010"),
        (Tool011, "TOOL-011"),
        (Transport013, "TRANSPORT-013"),
        (Transport014, "TRANSPORT-014"),
        (Turn006, "TURN-006"),
        (Turn009, "TURN-009"),
        (Turn013, "TURN-013"),
        (Turn014, "TURN-014"),
        (Version003, "VERSION-003"),
        (Version004, "VERSION-004"),
        (Version007, "VERSION-007"),
        (Version008, "VERSION-008"),
        (Version009, "VERSION-009"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_rule_is_its_own_row() {
        for rule in Rule::ALWAYS_ON {
            let row = rule.always_on().expect("an always-on rule has a row");
            assert_eq!(row.rule, *rule);
            assert_eq!(row.id, rule.id());
        }
        assert_eq!(Rule::ALWAYS_ON.len(), ALWAYS_ON.len() + AAP_ALWAYS_ON.len());
        let ids: std::collections::HashSet<&str> = Rule::NAMED.iter().map(|r| r.id()).collect();
        assert_eq!(
            ids.len(),
            Rule::NAMED.len(),
            "every rule has an ID of its own"
        );
    }

    #[test]
    fn a_rule_is_its_id_and_case_rules_have_no_row() {
        for rule in Rule::NAMED {
            assert_eq!(Rule::from_id(rule.id()), Some(*rule));
            let json = serde_json::to_value(rule).expect("serialises");
            assert_eq!(json, rule.id());
            let back: Rule = serde_json::from_value(json).expect("deserialises");
            assert_eq!(back, *rule);
        }
        assert!(Rule::Init001.always_on().is_none());
        assert_eq!(Rule::from_id("NOPE-001"), None);
        assert!(serde_json::from_value::<Rule>(serde_json::json!("NOPE-001")).is_err());
    }

    /// Every rule of the embedded catalogs' cases is named: a case run as a fuzz operation
    /// reports the rule its broken step checks.
    #[test]
    fn every_case_rule_of_the_catalog_is_named() {
        let catalog = crate::suite::Catalog::embedded().expect("the embedded catalog loads");
        for case in &catalog.cases {
            let rule = crate::verdict::rule_of(&case.info.id);
            assert!(
                Rule::from_id(rule).is_some(),
                "{rule} (case {})",
                case.info.id
            );
        }
    }

    /// Every case rule the enum names is in a catalog (a typo would name no rule).
    #[test]
    fn every_case_rule_is_in_a_catalog() {
        let catalogs = [
            include_str!("../../docs/ahp/RULES.md"),
            include_str!("../../aap/RULES.md"),
        ];
        for rule in Rule::NAMED.iter().filter(|r| r.always_on().is_none()) {
            let cell = format!("| {} |", rule.id());
            assert!(
                catalogs.iter().any(|text| text.contains(&cell)),
                "{rule} is in no rule catalog"
            );
        }
    }
}
