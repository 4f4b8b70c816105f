//! The typed steps a case is made of. Strings may hold `${name}` references (see the
//! engine's variable rules); JSON values are written as TOML tables and arrays.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

use crate::verdict::Level;

/// JSON pointer → expected value.
pub type Matches = BTreeMap<String, Value>;

/// One directive of a case.
#[derive(Debug, Clone, PartialEq, Deserialize)]
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
    Response(ExpectResponse),
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
    State(ExpectState),
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
    Check(ExpectCheck),
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

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct OnConn {
    /// Connection name (default `c1`).
    pub on: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Connect {
    pub on: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Initialize {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    /// Offered versions (default `["1.0.0"]`).
    pub versions: Option<Vec<String>>,
    /// Client id (default: a fresh one per connection).
    pub client_id: Option<String>,
    /// Initial subscriptions (default `["ahp-root://"]`).
    pub subscriptions: Option<Vec<String>>,
    /// Name under which the response is stored (default `<conn>.init`).
    #[serde(rename = "as")]
    pub name: Option<String>,
    /// When true, only send: the response is checked by a later `response` step.
    #[serde(default)]
    pub send_only: bool,
    /// When the server refuses the offered versions, the case is not applicable (for
    /// cases about optional version support) instead of not testable.
    #[serde(default)]
    pub refused_means_not_applicable: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reconnect {
    pub on: Option<String>,
    /// `lastSeenServerSeq` (default: the highest accepted `serverSeq` the connection saw).
    pub last_seen: Option<Value>,
    pub subscriptions: Vec<String>,
    #[serde(rename = "as")]
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    pub on: Option<String>,
    pub method: String,
    #[serde(default)]
    pub params: Option<Value>,
    #[serde(rename = "as")]
    pub name: Option<String>,
    /// Why the frame is deliberately not schema-valid (skips the outbound schema check).
    pub intent: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Notify {
    pub on: Option<String>,
    pub method: String,
    #[serde(default)]
    pub params: Option<Value>,
    pub intent: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Raw {
    pub on: Option<String>,
    pub text: String,
    /// Always required: says why the frame is invalid.
    pub intent: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Binary {
    pub on: Option<String>,
    pub bytes: usize,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dispatch {
    pub on: Option<String>,
    pub channel: String,
    pub action: Value,
    #[serde(rename = "as")]
    pub name: Option<String>,
    pub intent: Option<String>,
}

/// What a response may be; the first alternative that matches wins.
// The document checks (has, lacks, equals, one_of, contains, excludes, …) are written out here,
// in ExpectState and in ExpectCheck rather than shared through `#[serde(flatten)]`: serde
// cannot combine flatten with `deny_unknown_fields`, and a misspelt check must stay a load error
// naming the fields (tests/formats.rs).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectResponse {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    /// Name of the request (or `initialize` / reconnect `as` name). Absent (and no `id`):
    /// the next response with `id: null` (answers to unparseable input).
    pub to: Option<String>,
    /// Wait for the response with this literal id (for requests sent with `raw`).
    pub id: Option<Value>,
    /// `true`: must succeed; `false`: must be an error.
    pub ok: Option<bool>,
    /// Acceptable error codes (any error when absent).
    pub codes: Option<Vec<i64>>,
    /// Members that must be present (JSON pointers into the response).
    #[serde(default)]
    pub has: Vec<String>,
    /// Members that must be absent.
    #[serde(default)]
    pub lacks: Vec<String>,
    /// Pointer → value equalities.
    #[serde(default)]
    pub equals: Matches,
    /// Pointer → allowed values.
    #[serde(default)]
    pub one_of: BTreeMap<String, Vec<Value>>,
    /// Pointer → upper bound (numbers).
    #[serde(default)]
    pub at_most: Matches,
    /// Pointer to an array → member (a JSON pointer into each element) by which the array
    /// must be sorted in descending order; timestamps compare as instants.
    #[serde(default)]
    pub sorted_desc: BTreeMap<String, String>,
    /// Pointer to an array → members (pointers into each element) that must be ISO 8601
    /// timestamps with a UTC offset (`schema::is_timestamp`).
    #[serde(default)]
    pub timestamps: BTreeMap<String, Vec<String>>,
    /// Pointer to an array → an element it must contain (partial object match).
    #[serde(default)]
    pub contains: Matches,
    /// Pointer to an array → an element it must not contain (partial object match).
    #[serde(default)]
    pub excludes: Matches,
    /// A close of the connection is acceptable instead of the response.
    #[serde(default)]
    pub or_close: bool,
    /// The command's success is what the case proves: a miss is the case's own failure,
    /// not the command rule's (see `suite::charge`).
    #[serde(default)]
    pub claim: bool,
    /// Level of this expectation when lower than the case's (e.g. the SHOULD part of a
    /// MUST case): a miss is reported at this level and the case continues.
    pub level: Option<Level>,
    #[serde(rename = "as")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectEcho {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    /// Name of the dispatch.
    pub of: String,
    /// `true`: accepted (no `rejectionReason`); `false`: rejected.
    pub accepted: bool,
    /// A missing echo is also acceptable for a rejection (host ignores instead).
    #[serde(default)]
    pub or_ignored: bool,
    /// The acceptance is what the case proves: a rejection is the case's own failure, not
    /// the acceptance rule's (see `suite::charge`).
    #[serde(default)]
    pub claim: bool,
    pub level: Option<Level>,
    #[serde(rename = "as")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectAction {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    pub channel: String,
    #[serde(rename = "type")]
    pub action_type: String,
    /// Pointer (into the envelope) → value.
    #[serde(default, rename = "where")]
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
    #[serde(default)]
    pub next: bool,
    pub within_ms: Option<u64>,
    pub level: Option<Level>,
    #[serde(rename = "as")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectNotification {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    pub method: String,
    /// Expect a host-to-client request of this method (a message with an id) instead of a
    /// notification; the harness has answered it with -32601.
    #[serde(default)]
    pub request: bool,
    /// Pointer (into params) → value.
    #[serde(default, rename = "where")]
    pub matching: Matches,
    pub within_ms: Option<u64>,
    pub level: Option<Level>,
    #[serde(rename = "as")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectSilence {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    pub for_ms: u64,
    /// Only messages with this method count (any when absent).
    pub method: Option<String>,
    /// Only responses (messages without a method) count.
    #[serde(default)]
    pub responses: bool,
    /// Only frames that arrive from now on count (not what earlier steps already read).
    #[serde(default)]
    pub fresh: bool,
    /// Only messages on this channel count.
    pub channel: Option<String>,
    /// Only actions of this type count.
    #[serde(rename = "type")]
    pub action_type: Option<String>,
    /// Pointer → value filters.
    #[serde(default, rename = "where")]
    pub matching: Matches,
    pub level: Option<Level>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectClosed {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    pub within_ms: Option<u64>,
    pub level: Option<Level>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectState {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    pub channel: String,
    /// Re-check until the expectations hold or this many ms pass (eventual consistency).
    pub within_ms: Option<u64>,
    #[serde(default)]
    pub equals: Matches,
    #[serde(default)]
    pub has: Vec<String>,
    #[serde(default)]
    pub lacks: Vec<String>,
    /// Pointer → expected array length.
    #[serde(default)]
    pub len: BTreeMap<String, usize>,
    /// Pointer → bits that must all be set (integers, e.g. status flags).
    #[serde(default)]
    pub bits_set: BTreeMap<String, u64>,
    /// Pointer → bits that must all be clear.
    #[serde(default)]
    pub bits_clear: BTreeMap<String, u64>,
    /// Pointer → allowed values.
    #[serde(default)]
    pub one_of: BTreeMap<String, Vec<Value>>,
    /// Pointer to an array → an element it must contain (partial object match).
    #[serde(default)]
    pub contains: Matches,
    /// Pointer to an array → an element it must not contain (partial object match).
    #[serde(default)]
    pub excludes: Matches,
    pub level: Option<Level>,
    #[serde(rename = "as")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MakeSession {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    /// Variable name: `${S}` is the session URI, `${S.chat}` its default chat.
    #[serde(rename = "as")]
    pub name: String,
    pub provider: Option<String>,
    pub working_directories: Option<Vec<String>>,
    /// Wait for `ready` (default true).
    pub wait_ready: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartTurn {
    pub on: Option<String>,
    /// The rule this step relies on when it exercises another rule than the case's (e.g. a
    /// truncation used only to end a turn): a miss is that rule's failure, and the case is
    /// blocked by it instead of failing.
    pub relies_on: Option<String>,
    pub chat: String,
    /// Turn id (default `t1`).
    pub id: Option<String>,
    /// Target-profile behaviour that drives the agent (default `echo`).
    pub behaviour: Option<String>,
    /// Name of the dispatch, for `echo` steps.
    #[serde(rename = "as")]
    pub name: Option<String>,
    /// Queue it (`chat/pendingMessageSet` kind) instead of starting it: `queued` / `steering`.
    pub pending: Option<String>,
    /// Message id when `pending` is set.
    pub message_id: Option<String>,
    /// Wait for the turn's end (`turnComplete`/`turnCancelled`/`error`) before going on.
    #[serde(default)]
    pub wait_end: bool,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sleep {
    pub ms: u64,
}

#[derive(Debug, Clone, PartialEq, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct Checkpoint {
    /// Channels to compare (default: every channel any connection of the case mirrors).
    pub channels: Option<Vec<String>>,
    /// The comparison is the case's own rule (e.g. a fold after a replay): the mirror of
    /// connection `on` that differs from its fresh snapshot fails the case (instead of
    /// INV-FOLD-1), unless another connection's fold of that channel differs too (then the
    /// host's snapshot is at fault: INV-FOLD-1).
    #[serde(default)]
    pub own: bool,
    /// The connection whose fold an `own` comparison is about (default `c1`).
    pub on: Option<String>,
}

impl ExpectResponse {
    /// Whether the step asserts anything of the response's content (beyond success).
    pub fn checks_content(&self) -> bool {
        !(self.has.is_empty()
            && self.lacks.is_empty()
            && self.equals.is_empty()
            && self.one_of.is_empty()
            && self.at_most.is_empty()
            && self.sorted_desc.is_empty()
            && self.timestamps.is_empty()
            && self.contains.is_empty()
            && self.excludes.is_empty())
    }
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

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectCheck {
    /// Connection whose recent frames are reported with a failure (default `c1`).
    pub on: Option<String>,
    /// A whole-string `${…}` reference to the stored value, e.g. `${back/result}`.
    pub value: String,
    #[serde(default)]
    pub equals: Matches,
    #[serde(default)]
    pub has: Vec<String>,
    #[serde(default)]
    pub lacks: Vec<String>,
    /// Pointer → expected array length.
    #[serde(default)]
    pub len: BTreeMap<String, usize>,
    /// Pointer → allowed values.
    #[serde(default)]
    pub one_of: BTreeMap<String, Vec<Value>>,
    /// Pointer to an array → an element it must contain (partial object match).
    #[serde(default)]
    pub contains: Matches,
    /// Pointer to an array → an element it must not contain (partial object match).
    #[serde(default)]
    pub excludes: Matches,
    /// Pointer → JSON type of the member there (`integer`, `number`, `string`, `boolean`,
    /// `array`, `object`, `null`), for members whose type the rule is about.
    #[serde(default)]
    pub types: BTreeMap<String, JsonType>,
    /// Pointer → a number the member there must exceed (e.g. a later `serverSeq`).
    #[serde(default)]
    pub above: Matches,
    /// Pointer → a value the member there must differ from (e.g. an empty string).
    #[serde(default)]
    pub differs: Matches,
    /// Pointer to an array → elements (partial object matches) it must hold in this order;
    /// other elements may stand between them.
    #[serde(default)]
    pub in_order: BTreeMap<String, Vec<Value>>,
    pub level: Option<Level>,
    /// The rule this check exercises when it is not the case's own (see `relies_on`).
    pub relies_on: Option<String>,
}

/// A JSON type, as JSON Schema names them (`integer` is a number without a fraction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JsonType {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

impl JsonType {
    /// Whether `value` is of this type.
    pub fn holds(self, value: &Value) -> bool {
        match self {
            JsonType::Null => value.is_null(),
            JsonType::Boolean => value.is_boolean(),
            JsonType::Integer => value.is_i64() || value.is_u64(),
            JsonType::Number => value.is_number(),
            JsonType::String => value.is_string(),
            JsonType::Array => value.is_array(),
            JsonType::Object => value.is_object(),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JsonType::Null => "null",
            JsonType::Boolean => "boolean",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::String => "string",
            JsonType::Array => "array",
            JsonType::Object => "object",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AnyOf {
    /// Each alternative is the list of steps it takes, tried in order.
    pub alternatives: Vec<Vec<Step>>,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotApplicable {
    /// Why, as the report shows it.
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectProgress {
    pub on: Option<String>,
    /// The `progressToken` the watched request carried.
    pub token: String,
    /// How long nothing more may arrive for the token after its final frame (default 100).
    pub after_ms: Option<u64>,
    pub level: Option<Level>,
    /// The rule this step exercises when it is not the case's own (see `relies_on`).
    pub relies_on: Option<String>,
}
