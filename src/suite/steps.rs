//! The typed steps a case is made of. Strings may hold `${name}` references (see the
//! engine's variable rules); JSON values are written as TOML tables and arrays.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub use super::assertions::{Asserting, Assertions, JsonType, Matches, Schedule};
use crate::verdict::Level;

/// One directive of a case.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// Open a connection without initialising it.
    Connect(Connect),
    /// Open (if needed) and initialise a connection.
    Initialize(Initialize),
    /// Resume a connection with `reconnect` on a new socket.
    Reconnect(Reconnect),
    /// Send a JSON-RPC request.
    Request(Request),
    /// Send a JSON-RPC notification.
    Notify(Notify),
    /// Send a text frame verbatim (deliberately invalid input).
    Raw(Raw),
    /// Send a binary frame of `bytes` bytes.
    Binary(Binary),
    /// Dispatch an action (`dispatchAction`).
    Dispatch(Dispatch),
    /// Expect the response to a named request.
    Response(Asserting<ExpectResponse>),
    /// Expect the echo of a named dispatch.
    Echo(ExpectEcho),
    /// Expect an action envelope.
    Action(ExpectAction),
    /// Expect a protocol notification.
    Notification(ExpectNotification),
    /// Expect that nothing matching arrives for a while.
    Silence(ExpectSilence),
    /// Expect the server to close the connection.
    Closed(ExpectClosed),
    /// Assert on a channel's current state (fresh subscription).
    State(Asserting<ExpectState>),
    /// Create a session, subscribe to it and its default chat, wait until ready.
    Session(MakeSession),
    /// Start a turn whose agent behaviour comes from the target profile.
    Turn(StartTurn),
    /// Drop the connection (no close handshake).
    Disconnect(OnConn),
    /// Wait a fixed time.
    Sleep(Sleep),
    /// Compare every mirror of the case with fresh snapshots (fold == snapshot) and run
    /// the catalog-consistency checks.
    Checkpoint(Checkpoint),
    /// Assert on a value stored by an earlier step (a response, a captured action, a state).
    Check(Asserting<ExpectCheck>),
    /// Alternatives, each a list of steps: the first whose steps all pass wins; the step
    /// fails only when every alternative fails. Alternatives should only check (`check`,
    /// `state`, …): what a failed alternative consumed or sent is not undone.
    AnyOf(AnyOf),
    /// Follow the `root/progress` frames of one progress token to their final frame.
    Progress(ExpectProgress),
    /// End the case as not applicable: as the first alternative of an `any_of`, after checks
    /// that show the server took an allowed path on which the requirement does not arise.
    NotApplicable(NotApplicable),
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OnConn {
    /// Connection name (default `c1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Connect {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Initialize {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    /// Offered versions (default `["1.0.0"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub versions: Option<Vec<String>>,
    /// Client id (default: a fresh one per connection).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// Initial subscriptions (default `["ahp-root://"]`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subscriptions: Option<Vec<String>>,
    /// Client capabilities to declare (default: none, the member left out).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capabilities: Option<Value>,
    /// Name under which the response is stored (default `<conn>.init`).
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// When true, only send: the response is checked by a later `response` step.
    #[serde(default, skip_serializing_if = "is_false")]
    pub send_only: bool,
    /// When the server refuses the offered versions, the case is not applicable (for
    /// cases about optional version support) instead of not testable.
    #[serde(default, skip_serializing_if = "is_false")]
    pub refused_means_not_applicable: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Reconnect {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// `lastSeenServerSeq` (default: the highest accepted `serverSeq` the connection saw).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Value>,
    pub subscriptions: Vec<String>,
    #[serde(rename = "as")]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Request {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Why the frame is deliberately not schema-valid (skips the outbound schema check).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Notify {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    pub method: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub params: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Raw {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    pub text: String,
    /// Always required: says why the frame is invalid.
    pub intent: String,
    /// Replacements that make the frame big (hostile sizes a suite file cannot spell out):
    /// each marker in `text` becomes its unit repeated.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grow: Vec<Grow>,
}

/// One replacement of [`Raw::grow`]: `marker` becomes `unit` repeated `times` times.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Grow {
    pub marker: String,
    pub unit: String,
    pub times: usize,
}

/// The most a grown frame may come to: beyond any host's frame limit worth testing, and
/// still far from what would strain the harness.
pub const GROWN_FRAME_LIMIT: usize = 64 * 1024 * 1024;

impl Raw {
    /// The frame's text after `text` had its `${…}` substituted: each marker of
    /// [`Raw::grow`] replaced by its repeated unit. A frame that would exceed
    /// [`GROWN_FRAME_LIMIT`] is an error.
    pub fn grown(&self, text: String) -> Result<String, String> {
        let mut text = text;
        for grow in &self.grow {
            if grow.marker.is_empty() || !text.contains(&grow.marker) {
                return Err(format!(
                    "raw frame: marker {:?} is not in the text",
                    grow.marker
                ));
            }
            let size = grow.unit.len().saturating_mul(grow.times);
            if size.saturating_add(text.len()) > GROWN_FRAME_LIMIT {
                return Err(format!(
                    "raw frame: {} × {:?} would exceed {GROWN_FRAME_LIMIT} bytes",
                    grow.times, grow.unit
                ));
            }
            text = text.replacen(&grow.marker, &grow.unit.repeat(grow.times), 1);
        }
        Ok(text)
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Binary {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    pub bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Dispatch {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    pub channel: String,
    pub action: Value,
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub intent: Option<String>,
}

/// What a response must be (its document assertions beside it: [`Asserting`]).
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectResponse {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    /// Name of the request (or `initialize` / reconnect `as` name). Absent (and no `id`):
    /// the next response with `id: null` (answers to unparseable input).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Wait for the response with this literal id (for requests sent with `raw`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<Value>,
    /// `true`: must succeed; `false`: must be an error.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// Acceptable error codes (any error when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub codes: Option<Vec<i64>>,
    /// A close of the connection is acceptable instead of the response.
    #[serde(default, skip_serializing_if = "is_false")]
    pub or_close: bool,
    /// The command's success is what the case proves: a miss is the case's own failure,
    /// not the command rule's (see `suite::charge`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub claim: bool,
    /// Level of this expectation when lower than the case's (e.g. the SHOULD part of a
    /// MUST case): a miss is reported at this level and the case continues.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectEcho {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    /// Name of the dispatch.
    pub of: String,
    /// `true`: accepted (no `rejectionReason`); `false`: rejected.
    pub accepted: bool,
    /// A missing echo is also acceptable for a rejection (host ignores instead).
    #[serde(default, skip_serializing_if = "is_false")]
    pub or_ignored: bool,
    /// The acceptance is what the case proves: a rejection is the case's own failure, not
    /// the acceptance rule's (see `suite::charge`).
    #[serde(default, skip_serializing_if = "is_false")]
    pub claim: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectAction {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    pub channel: String,
    #[serde(rename = "type")]
    pub action_type: String,
    /// Pointer (into the envelope) → value.
    #[serde(default, rename = "where", skip_serializing_if = "BTreeMap::is_empty")]
    pub matching: Matches,
    /// Pointer to an array (into the envelope) → an element it must contain (partial
    /// object match), as a filter like `where`: for lists other cases' work also fills.
    #[serde(default)]
    pub where_contains: Matches,
    /// Pointer to an array (into the envelope) → an element it must not contain.
    #[serde(default)]
    pub where_excludes: Matches,
    /// The next action of this type on the channel must match `where` (instead of waiting
    /// for any matching one): for order requirements.
    #[serde(default, skip_serializing_if = "is_false")]
    pub next: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectNotification {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    pub method: String,
    /// Expect a host-to-client request of this method (a message with an id) instead of a
    /// notification; the harness has answered it with -32601.
    #[serde(default, skip_serializing_if = "is_false")]
    pub request: bool,
    /// Pointer (into params) → value.
    #[serde(default, rename = "where", skip_serializing_if = "BTreeMap::is_empty")]
    pub matching: Matches,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectSilence {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    pub for_ms: u64,
    /// Only messages with this method count (any when absent).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Only responses (messages without a method) count.
    #[serde(default, skip_serializing_if = "is_false")]
    pub responses: bool,
    /// Only frames that arrive from now on count (not what earlier steps already read).
    #[serde(default, skip_serializing_if = "is_false")]
    pub fresh: bool,
    /// Only messages on this channel count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
    /// Only actions of this type count.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub action_type: Option<String>,
    /// Pointer → value filters.
    #[serde(default, rename = "where", skip_serializing_if = "BTreeMap::is_empty")]
    pub matching: Matches,
    /// Pointer to an array → an element it contains (partial object match): a filter like
    /// `where`, for a change that may come anywhere in a batch.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub where_contains: Matches,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectClosed {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectState {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    pub channel: String,
    /// Re-check until the expectations hold or this many ms pass (eventual consistency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub within_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct MakeSession {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    /// Variable name: `${S}` is the session URI, `${S.chat}` its default chat.
    #[serde(rename = "as")]
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub working_directories: Option<Vec<String>>,
    /// Wait for `ready` (default true).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wait_ready: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct StartTurn {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    pub chat: String,
    /// Turn id (default `t1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Target-profile behaviour that drives the agent (default `echo`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub behaviour: Option<String>,
    /// Name of the dispatch, for `echo` steps.
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Queue it (`chat/pendingMessageSet` kind) instead of starting it: `queued` / `steering`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<String>,
    /// Message id when `pending` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    /// Wait for the turn's end (`turnComplete`/`turnCancelled`/`error`) before going on.
    #[serde(default, skip_serializing_if = "is_false")]
    pub wait_end: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Sleep {
    pub ms: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Channels to compare (default: every channel any connection of the case mirrors).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channels: Option<Vec<String>>,
    /// The comparison is the case's own rule (e.g. a fold after a replay): the mirror of
    /// connection `on` that differs from its fresh snapshot fails the case (instead of
    /// INV-FOLD-1), unless another connection's fold of that channel differs too (then the
    /// host's snapshot is at fault: INV-FOLD-1).
    #[serde(default, skip_serializing_if = "is_false")]
    pub own: bool,
    /// The connection whose fold an `own` comparison is about (default `c1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
}

impl Step {
    /// The rule a step relies on (`relies_on`), when it names one.
    pub fn relies_on(&self) -> Option<&str> {
        let rule = match self {
            Step::Initialize(s) => &s.relies_on,
            Step::Response(s) => &s.relies_on,
            Step::Echo(s) => &s.relies_on,
            Step::Action(s) => &s.relies_on,
            Step::Notification(s) => &s.relies_on,
            Step::Silence(s) => &s.relies_on,
            Step::Closed(s) => &s.relies_on,
            Step::State(s) => &s.relies_on,
            Step::Session(s) => &s.relies_on,
            Step::Turn(s) => &s.relies_on,
            Step::Check(s) => &s.relies_on,
            Step::Progress(s) => &s.relies_on,
            Step::Connect(_)
            | Step::Reconnect(_)
            | Step::Request(_)
            | Step::Notify(_)
            | Step::Raw(_)
            | Step::Binary(_)
            | Step::Dispatch(_)
            | Step::Disconnect(_)
            | Step::Sleep(_)
            | Step::Checkpoint(_)
            | Step::AnyOf(_)
            | Step::NotApplicable(_) => return None,
        };
        rule.as_deref()
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectCheck {
    /// Connection whose recent frames are reported with a failure (default `c1`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// A whole-string `${…}` reference to the stored value, e.g. `${back/result}`.
    pub value: String,
    /// Pointer to an array of the value → a partial match: the check looks at the first
    /// element that matches (an entry of a snapshot's list found by its resource, say), and a
    /// value without one breaks it.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub select: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    /// The rule this check exercises when it is not the case's own (see `relies_on`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
    /// Stores what the check looked at (the selected element, or the value) under this name.
    #[serde(rename = "as", skip_serializing_if = "Option::is_none")]
    pub store_as: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct AnyOf {
    /// Each alternative is the list of steps it takes, tried in order.
    pub alternatives: Vec<Vec<Step>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct NotApplicable {
    /// Why, as the report shows it.
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Serialize, Default)]
#[serde(deny_unknown_fields)]
pub struct ExpectProgress {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub on: Option<String>,
    /// The `progressToken` the watched request carried.
    pub token: String,
    /// How long nothing more may arrive for the token after its final frame (default 100).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after_ms: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub level: Option<Level>,
    /// The rule this step exercises when it is not the case's own (see `relies_on`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub relies_on: Option<String>,
}

/// Whether a flag is unset (left out when a step is written: its default).
fn is_false(flag: &bool) -> bool {
    !flag
}
