//! Checks: small functions over frames, history and state that say whether a rule held.
//! No I/O, no sleeping, no printing. Two tiers:
//! - always-on checks ([`frame`], [`mirror`], [`invariants`]) run on every frame of every
//!   connection; each is reported as one case row under its own rule ID, with the number of
//!   things it looked at;
//! - case expectations (in the engine) judge what a scenario asks for.

pub mod action_decode;
pub mod compare;
pub mod error_data;
pub mod frame;
pub mod invariants;
pub mod mirror;
pub mod rpc;
pub mod stream;
pub mod toolcalls;

pub use crate::fasthash::{FastHasher, FastMap, FastSet};
use crate::verdict::Level;

/// A rule broken by the server, found by an always-on check.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// RULES.md ID.
    pub rule: &'static str,
    pub expected: String,
    pub actual: String,
    /// The envelope origin involved, when the rule is about one (lets the runner tell a
    /// harness client's echo from a host-originated action).
    pub origin: Option<(String, i64)>,
}

impl Violation {
    pub fn new(rule: &'static str, expected: impl Into<String>, actual: impl Into<String>) -> Self {
        Violation {
            rule,
            expected: expected.into(),
            actual: actual.into(),
            origin: None,
        }
    }
}

/// What the report says about an always-on rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlwaysOnRule {
    pub id: &'static str,
    pub level: Level,
    pub area: &'static str,
    pub spec: &'static str,
    pub requirement: &'static str,
    /// What one unit of work is, for "looked at N …".
    pub unit: &'static str,
}

macro_rules! rules {
    ($( ($id:literal, $level:ident, $area:literal, $spec:literal, $unit:literal, $req:literal), )*) => {
        /// Every always-on rule, in report order.
        pub const ALWAYS_ON: &[AlwaysOnRule] = &[
            $( AlwaysOnRule { id: $id, level: Level::$level, area: $area, spec: $spec, unit: $unit, requirement: $req }, )*
        ];
    };
}

rules! {
    ("TRANSPORT-001", Must, "transport", "docs/specification/transport.md § Common Transports", "frames",
        "Every frame the host sends is a text frame holding exactly one JSON-RPC object."),
    ("TRANSPORT-002", Must, "transport", "docs/specification/overview.md § Base Protocol", "messages",
        "Every host message has \"jsonrpc\": \"2.0\"."),
    ("TRANSPORT-003", Must, "transport", "docs/specification/overview.md § Requests", "responses",
        "Each request receives exactly one response carrying the same id."),
    ("TRANSPORT-004", Must, "transport", "docs/specification/overview.md § Notifications", "responses",
        "Notifications never receive a response."),
    ("TRANSPORT-005", Must, "transport", "JSON-RPC 2.0 § Response object", "responses",
        "A response has either result or error, never both; error has an integer code and a string message."),
    ("TRANSPORT-011", Must, "transport", "docs/specification/subscriptions.md § Every message carries channel", "notifications",
        "Every host notification's params carries a top-level string channel."),
    ("ERR-002", Must, "errors", "docs/specification/authentication.md § AuthRequired Error Code", "-32007 errors",
        "-32007 errors carry data.resources: protected-resource metadata (snake_case keys, resource required)."),
    ("ERR-003", Must, "errors", "crate: ahp-types/src/errors.rs (PermissionDeniedErrorData)", "-32009 errors",
        "-32009 data, when present, is {request?: ResourceRequestParams} (derived, MUST*)."),
    ("INV-SCHEMA-1", Must, "schema", "RULES.md §17; schemas/ahp/<version>/", "messages",
        "Every result, snapshot, envelope and notification validates against the negotiated version's schema."),
    ("ENV-002", Must, "actions", "docs/guide/actions.md § Action Envelope; docs/specification/lifecycle.md § Reconnection (one lastSeenServerSeq per connection)", "envelopes of subscriptions that asked for maxLatencyMs 0",
        "Accepted envelopes on one connection arrive in strictly increasing serverSeq order across channels (derived, MUST*: checked over the subscriptions that asked for immediate delivery, since a coalesced one may lag)."),
    ("ENV-003", Must, "actions", "crate: ahp-types/src/state.rs (Snapshot)", "envelopes",
        "Per channel, serverSeq of accepted envelopes is strictly increasing."),
    ("SUB-002", Must, "subscriptions", "crate: ahp-types/src/state.rs (Snapshot.fromSeq)", "envelopes",
        "Every accepted action delivered after a subscribe has serverSeq greater than the snapshot's fromSeq."),
    ("ENV-004", Must, "actions", "docs/specification/subscriptions.md § Action Delivery", "envelopes",
        "An envelope's channel is the channel its action belongs to."),
    ("DISPATCH-001", Must, "actions", "docs/guide/reconciliation.md § Reconciliation Algorithm", "echoes",
        "An echo of a client dispatch carries origin.clientId and origin.clientSeq of that dispatch and the dispatched action."),
    ("ENV-005", Must, "actions", "docs/guide/actions.md § Action Envelope", "envelopes",
        "Host-originated actions carry no origin."),
    ("SUB-012", Must, "subscriptions", "docs/specification/subscriptions.md § URI Scheme", "messages",
        "Channel URIs the host returns use the 1.0.0 schemes; no agenthost: or copilot: URIs."),
    ("STATUS-001", Must, "status", "docs/guide/state-model.md § Session Status Bitset", "status values",
        "status & 31 is one of 1, 2, 8, 24 for every session, chat and summary status."),
    ("STATUS-003", Must, "status", "crate: ahp/src/reducers.rs (summary_status)", "chat states",
        "Chat activity matches content: active turn ⇒ 8 or 24, none ⇒ 1 or 2, 24 ⇔ a blocking part in the active turn."),
    ("TURN-003", Must, "chat-channel", "crate: ahp-types/src/actions.rs (ChatDeltaAction)", "text deltas",
        "chat/delta and chat/reasoning only target a part created earlier by chat/responsePart in the same active turn."),
    ("TURN-004", Must, "chat-channel", "crate: ahp/src/reducers.rs (turn-id checks)", "host streaming actions",
        "Host streaming actions (deltas, parts, usage, tool-call actions) carry the active turn's id."),
    ("TURN-005", Must, "chat-channel", "docs/specification/chat-channel.md § Error recovery", "response parts",
        "Error parts are never sent through chat/responsePart; errors end a turn through chat/error."),
    ("PENDING-003", Should, "pending-messages", "docs/specification/chat-channel.md § Queued Messages", "queued-message consumptions",
        "The host consumes queued messages first in, first out."),
    ("TOOL-007", Must, "tool-calls", "crate: ahp/src/reducers.rs (end_turn)", "tool calls a turn's end left open, seen in a later snapshot",
        "When a turn ends, every non-terminal tool call in it is cancelled with reason skipped."),
    ("INV-TOOL-1", Must, "tool-calls", "RULES.md §17 INV-TOOL-1; PROTOCOL.md §12.7", "tool-call status observations",
        "Per tool call, every status change a host action or a later snapshot shows is reachable in the lifecycle table, and nothing follows a terminal status."),
    ("INV-TOOL-2", Must, "tool-calls", "RULES.md §17 INV-TOOL-2; crate: ahp-types/src/state.rs (ToolCallConfirmationReason, ToolCallCancellationReason)", "tool calls and tool-call values",
        "running, pending-result-confirmation and completed calls carry confirmed in {not-needed, user-action, setting}, cancelled ones reason in {denied, skipped, result-denied} (closed sets, whatever the schema leaves open), and only MCP-contributed calls need authentication."),
    ("INV-CHAT-2", Must, "chat-channel", "RULES.md §17 INV-CHAT-2", "turns",
        "A turn's tool-call ids are unique, every tool call's status is one of the seven, and ended turns hold only completed or cancelled calls."),
    ("INV-CHAT-1", Must, "chat-channel", "RULES.md §17 INV-CHAT-1; crate: ahp/src/reducers.rs (end_turn)", "ended turns",
        "An ended turn's state is complete, cancelled or error, and its duration is not negative."),
    ("INV-CHAT-3", Must, "chat-channel", "RULES.md §17 INV-CHAT-3; crate: ahp/src/reducers.rs (chat/error)", "ended turns",
        "A turn that ended in error ends with the error part chat/error appended."),
    ("INV-CHAT-5", Must, "pending-messages", "RULES.md §17 INV-CHAT-5; crate: ahp/src/reducers.rs (chat/pendingMessageSet)", "chat states",
        "A chat's queuedMessages lists each id once (an empty list counts as absent)."),
    ("INV-SESSION-1", Must, "session-channel", "RULES.md §17 INV-SESSION-1; docs/specification/session-channel.md § Chat catalog", "session states",
        "A session lists each chat once, its default chat is not movable (and, at checkpoints, listed), and lifecycle is failed exactly when creationError is set."),
    ("INV-SESSION-2", Must, "session-channel", "RULES.md §17 INV-SESSION-2; crate: ahp/src/reducers.rs (session/activeClientSet, session/inputNeededSet)", "session states",
        "A session lists each active client (by clientId) and each input-needed entry (by id) once, and (at checkpoints) every input-needed entry's chat among its chats."),
    ("INV-SESSION-3", Must, "session-channel", "RULES.md §17 INV-SESSION-3; crate: ahp/src/reducers.rs (session/workingDirectorySet, …Replaced)", "session and chat states",
        "A session's and a chat's workingDirectories list each directory once, and (at checkpoints) a chat's are among its session's."),
    ("INV-FOLD-1", Must, "state", "RULES.md §17 INV-FOLD-1", "mirror comparisons",
        "Snapshot + accepted envelopes folded through the reference reducers equals a fresh snapshot."),
    ("INV-SUMMARY-2", Must, "root-channel", "RULES.md §17 INV-SUMMARY-2; crate: ahp-types/src/state.rs (SessionSummary.chats)", "listSessions entries with chats, at checkpoints",
        "A listSessions entry's chats list the session's chats in the same order, with the same title, origin and interactivity (status and changes where given)."),
    ("INV-SUMMARY-3", Must, "root-channel", "RULES.md §17 INV-SUMMARY-3; crate: ahp-types/src/state.rs (SessionSummary)", "listSessions entries, at checkpoints",
        "A listSessions entry carries its session's provider, title, status flags, project, workingDirectories, annotations and origin (at quiescence)."),
    ("INV-CHAT-6", Must, "chat-channel", "RULES.md §17 INV-CHAT-6; crate: ahp/src/reducers.rs (end_turn, chat/turnStarted)", "chats whose turn started or ended, at checkpoints",
        "After an observed turn start or end, a chat's modifiedAt is the ISO 8601 instant it set (startedAt, or startedAt + max(duration, 0))."),
    ("CHAT-003", Must, "chat-channel", "docs/specification/chat-channel.md § State", "chat catalog entries",
        "A chat's inlined summary fields equal its entry in the session's chat catalog (at quiescence)."),
    ("TRANSPORT-012", Must, "transport", "docs/specification/root-channel.md § Commands; crate: ahp/src/client.rs (handle_server_request)", "host requests",
        "Host-to-client requests are resource* or createResourceWatch on channel ahp-root://, and after the harness answers one with -32601 the host still answers later requests."),
}

/// Items an always-on rule could not judge, by rule and reason: they are reported as
/// skipped, never counted as checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skips(
    std::collections::BTreeMap<&'static str, std::collections::BTreeMap<&'static str, usize>>,
);

impl Skips {
    /// Records `n` items of `rule` skipped because of `why`.
    pub fn add(&mut self, rule: &'static str, why: &'static str, n: usize) {
        if n > 0 {
            *self.0.entry(rule).or_default().entry(why).or_insert(0) += n;
        }
    }

    /// Adds every skip of `other`.
    pub fn merge(&mut self, other: &Skips) {
        for (rule, reasons) in &other.0 {
            for (why, n) in reasons {
                self.add(rule, why, *n);
            }
        }
    }

    /// The skips of `rule`: (why, how many), by reason.
    pub fn of(&self, rule: &str) -> Vec<(&'static str, usize)> {
        self.0
            .get(rule)
            .map(|reasons| reasons.iter().map(|(why, n)| (*why, *n)).collect())
            .unwrap_or_default()
    }
}

/// How an always-on row ends: broken, not testable (it judged nothing), or passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOutcome {
    Broken,
    NotTestable,
    Passed,
}

/// The outcome and summary line of an always-on rule's row, from the number of violations,
/// the items checked, the items skipped (why, how many) and the first violation (expected,
/// actual). A row that checked nothing is not a pass, whatever it skipped.
pub fn row_summary(
    unit: &str,
    violations: usize,
    checked: usize,
    skipped: &[(&str, usize)],
    first: Option<(&str, &str)>,
) -> (RowOutcome, String) {
    let total: usize = skipped.iter().map(|(_, n)| n).sum();
    let skips = if total == 0 {
        String::new()
    } else {
        let reasons: Vec<String> = skipped
            .iter()
            .map(|(why, n)| format!("{why}: {n}"))
            .collect();
        format!(", skipped {total} ({})", reasons.join("; "))
    };
    match first {
        Some((expected, actual)) if violations > 0 => (
            RowOutcome::Broken,
            format!("{violations} violation(s) in {checked} {unit}{skips}; first: expected {expected}; got {actual}"),
        ),
        _ if checked == 0 && total == 0 => (
            RowOutcome::NotTestable,
            format!("Not testable: no {unit} were seen during the run"),
        ),
        _ if checked == 0 => (
            RowOutcome::NotTestable,
            format!("Not testable: checked no {unit}{skips}"),
        ),
        _ => (
            RowOutcome::Passed,
            format!("checked {checked} {unit}{skips}; no violation"),
        ),
    }
}

/// Looks an always-on rule up.
pub fn always_on(id: &str) -> Option<&'static AlwaysOnRule> {
    ALWAYS_ON.iter().find(|rule| rule.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_add_up_by_rule_and_reason() {
        let mut skips = Skips::default();
        skips.add("INV-FOLD-1", "no snapshot", 1);
        skips.add("INV-FOLD-1", "ahead", 0);
        let mut other = Skips::default();
        other.add("INV-FOLD-1", "no snapshot", 2);
        other.add("TRANSPORT-003", "closed", 1);
        skips.merge(&other);
        assert_eq!(skips.of("INV-FOLD-1"), vec![("no snapshot", 3)]);
        assert_eq!(skips.of("TRANSPORT-003"), vec![("closed", 1)]);
        assert!(skips.of("ENV-003").is_empty());
    }

    #[test]
    fn a_row_that_compared_nothing_is_not_a_pass() {
        let why = [("the observer got no snapshot", 2)];
        let (outcome, summary) = row_summary("mirror comparisons", 0, 0, &why, None);
        assert_eq!(outcome, RowOutcome::NotTestable);
        assert_eq!(
            summary,
            "Not testable: checked no mirror comparisons, skipped 2 (the observer got no snapshot: 2)"
        );
        let (outcome, _) = row_summary("responses", 0, 0, &[], None);
        assert_eq!(outcome, RowOutcome::NotTestable);
    }

    #[test]
    fn a_row_says_what_it_compared_and_what_it_skipped() {
        let why = [("ahead", 1), ("no snapshot", 2)];
        let (outcome, summary) = row_summary("mirror comparisons", 0, 5, &why, None);
        assert_eq!(outcome, RowOutcome::Passed);
        assert_eq!(
            summary,
            "checked 5 mirror comparisons, skipped 3 (ahead: 1; no snapshot: 2); no violation"
        );
        let (outcome, summary) = row_summary("responses", 0, 4, &[], None);
        assert_eq!(outcome, RowOutcome::Passed);
        assert_eq!(summary, "checked 4 responses; no violation");
        let (outcome, summary) = row_summary("responses", 1, 4, &[], Some(("a", "b")));
        assert_eq!(outcome, RowOutcome::Broken);
        assert_eq!(
            summary,
            "1 violation(s) in 4 responses; first: expected a; got b"
        );
    }
}
