//! The reducer mirror of one connection: per subscribed channel, the snapshot it got plus
//! every accepted envelope folded through the official `ahp` reducers. Stream checks run
//! against the state *before* each action is applied.
//!
//! The rows judge what arrived wherever it arrived: TURN-005 needs no state and judges every
//! response part; chat actions on a channel without a chat snapshot (a chat never
//! subscribed to, or a channel of another kind: ENV-004's matter) are followed from a turn
//! start the connection saw, in a shadow chat state; what cannot be judged is counted as
//! skipped with its reason. A channel whose mirror cannot fold an action (it does not
//! decode) is unknown until its next snapshot: its actions are skipped, never judged against
//! a state that missed one.

use ahp::reducers::{
    apply_action_to_annotations, apply_action_to_automation, apply_action_to_automation_run,
    apply_action_to_canvas, apply_action_to_changeset, apply_action_to_chat, apply_action_to_root,
    apply_action_to_session,
};
use ahp_types::actions::StateAction;
use ahp_types::state::{
    AnnotationsState, AutomationRunState, AutomationState, CanvasState, ChangesetState, ChatState,
    ResponsePart, RootState, SessionState,
};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::Value;

use super::action_decode::decode_action;
use super::compare::Kind;
use super::{FastMap, Rule, Skips, Violation};
use crate::tape::Node;

/// Why a chat rule skipped an action: the channel's mirror had lost track of it.
pub const SKIP_LOST: &str =
    "the channel's mirror could not fold an earlier action (unknown until its next snapshot)";
/// Why a chat rule skipped an action on a channel that is no chat's.
pub const SKIP_NOT_A_CHAT: &str =
    "a chat action on a channel of another kind (ENV-004's matter), outside any turn seen starting there";
/// Why a chat rule skipped an action on a chat without a snapshot.
pub const SKIP_NO_STATE: &str =
    "a chat whose state the connection never got (no snapshot), outside any turn seen starting there";
/// Why a chat rule skipped an action followed in a shadow state.
pub const SKIP_OTHER_TURN: &str =
    "a turn other than the one seen starting on a channel without a chat snapshot";
/// Why PENDING-003 skipped a consumption followed in a shadow state.
pub const SKIP_NO_QUEUE: &str = "a queue the connection never saw (no chat snapshot)";

#[derive(Debug, Clone)]
enum State {
    Root(Box<RootState>),
    Session(Box<SessionState>),
    Chat(Box<ChatState>),
    Changeset(Box<ChangesetState>),
    Annotations(Box<AnnotationsState>),
    Canvas(Box<CanvasState>),
    Automations(Box<AutomationState>),
    AutomationRun(Box<AutomationRunState>),
}

/// A state decoded from the tape.
fn decode<T: DeserializeOwned>(state: Node<'_>) -> Option<Box<T>> {
    T::deserialize(state).ok().map(Box::new)
}

impl State {
    fn decode(kind: Kind, state: Node<'_>) -> Option<State> {
        Some(match kind {
            Kind::Root => State::Root(decode(state)?),
            Kind::Session => State::Session(decode(state)?),
            Kind::Chat => State::Chat(decode(state)?),
            Kind::Changeset => State::Changeset(decode(state)?),
            Kind::Annotations => State::Annotations(decode(state)?),
            Kind::Canvas => State::Canvas(decode(state)?),
            Kind::Automations => State::Automations(decode(state)?),
            Kind::AutomationRun => State::AutomationRun(decode(state)?),
        })
    }

    fn to_json(&self) -> Value {
        let encoded = match self {
            State::Root(s) => serde_json::to_value(s),
            State::Session(s) => serde_json::to_value(s),
            State::Chat(s) => serde_json::to_value(s),
            State::Changeset(s) => serde_json::to_value(s),
            State::Annotations(s) => serde_json::to_value(s),
            State::Canvas(s) => serde_json::to_value(s),
            State::Automations(s) => serde_json::to_value(s),
            State::AutomationRun(s) => serde_json::to_value(s),
        };
        encoded.unwrap_or(Value::Null)
    }

    fn apply(&mut self, action: &StateAction) {
        // The outcome (applied, no-op, out of scope) changes nothing the mirror keeps.
        let _ = match self {
            State::Root(s) => apply_action_to_root(s, action),
            State::Session(s) => apply_action_to_session(s, action),
            State::Chat(s) => apply_action_to_chat(s, action),
            State::Changeset(s) => apply_action_to_changeset(s, action),
            State::Annotations(s) => apply_action_to_annotations(s, action),
            State::Automations(s) => apply_action_to_automation(s, action),
            State::AutomationRun(s) => apply_action_to_automation_run(s, action),
            State::Canvas(s) => apply_action_to_canvas(s, action),
        };
    }
}

/// One connection's mirrors.
#[derive(Debug, Default, Clone)]
pub struct Mirror {
    channels: FastMap<String, State>,
    /// serverSeq of the snapshot or last envelope each mirror reflects.
    seqs: FastMap<String, u64>,
    /// Channels whose mirror could not follow (undecodable snapshot or action): not compared.
    lost: FastMap<String, String>,
    /// Text deltas checked (TURN-003) and response parts checked (TURN-005).
    pub deltas_checked: usize,
    pub parts_checked: usize,
    /// Host streaming actions whose turnId was checked (TURN-004).
    pub turn_ids_checked: usize,
    /// Queued messages the host consumed (PENDING-003).
    pub queue_consumptions: usize,
    /// Per chat, the `modifiedAt` the last turn start or end this mirror folded gave the
    /// chat (INV-CHAT-6: no other chat action changes it).
    turn_modified: FastMap<String, String>,
    /// Chat states started from a turn start seen on a channel without a chat snapshot.
    shadows: FastMap<String, Box<ChatState>>,
    /// What the chat rules could not judge, and why.
    pub skips: Skips,
}

impl Mirror {
    /// Whether `channel` is a chat: by its URI, or by the state this mirror holds (or
    /// follows) for it, when the host names it in a scheme of its own.
    pub fn is_chat(&self, channel: &str) -> bool {
        Kind::of(channel) == Some(Kind::Chat)
            || self.shadows.contains_key(channel)
            || matches!(self.channels.get(channel), Some(State::Chat(_)))
    }

    /// Starts (or restarts) the mirror of a channel from a snapshot.
    pub fn load_snapshot(&mut self, snapshot: Node<'_>) {
        let Some(resource) = snapshot.member("resource").as_str() else {
            return;
        };
        let state = snapshot.member("state");
        let kind = Kind::of(resource).or_else(|| Kind::of_shape(|m| state.member(m).exists()));
        let Some(kind) = kind else {
            return;
        };
        // The snapshot is the new baseline: no turn start or end folded since.
        self.turn_modified.remove(resource);
        self.shadows.remove(resource);
        match State::decode(kind, snapshot.member("state")) {
            Some(state) => {
                self.lost.remove(resource);
                self.channels.insert(resource.to_owned(), state);
                self.seqs.insert(
                    resource.to_owned(),
                    snapshot.member("fromSeq").as_u64().unwrap_or(0),
                );
            }
            None => {
                self.channels.remove(resource);
                self.lost
                    .insert(resource.to_owned(), "snapshot does not decode".into());
            }
        }
    }

    pub fn forget(&mut self, channel: &str) {
        self.turn_modified.remove(channel);
        self.channels.remove(channel);
        self.seqs.remove(channel);
        self.lost.remove(channel);
        self.shadows.remove(channel);
    }

    /// The channel's state can no longer be known from what was folded (`why`): it is
    /// unknown until its next snapshot. (A channel this mirror does not follow stays so.)
    pub fn unknown(&mut self, channel: &str, why: &str) {
        if !self.channels.contains_key(channel) && !self.shadows.contains_key(channel) {
            return;
        }
        self.channels.remove(channel);
        self.shadows.remove(channel);
        self.turn_modified.remove(channel);
        self.lost.insert(channel.to_owned(), why.to_owned());
    }

    /// Channels whose mirror stopped following.
    pub fn lost_channels(&self) -> impl Iterator<Item = &str> {
        self.lost.keys().map(String::as_str)
    }

    pub fn channels(&self) -> impl Iterator<Item = &str> {
        self.channels.keys().map(String::as_str)
    }

    /// The serverSeq the channel's mirror reflects.
    pub fn seq(&self, channel: &str) -> Option<u64> {
        self.seqs.get(channel).copied()
    }

    /// The `modifiedAt` the last turn start or end folded since the channel's snapshot
    /// gave the chat, if there was one.
    pub fn modified_after_turn(&self, channel: &str) -> Option<&str> {
        self.turn_modified.get(channel).map(String::as_str)
    }

    /// Why a channel's mirror stopped following, if it did.
    pub fn lost(&self, channel: &str) -> Option<&str> {
        self.lost.get(channel).map(String::as_str)
    }

    pub fn state(&self, channel: &str) -> Option<Value> {
        self.channels.get(channel).map(State::to_json)
    }

    /// Like [`Mirror::state`], with a chat's finished turns left out (`turns` is empty):
    /// for readers of the live part only (the active turn, the queue), which look after
    /// every step, when a chat's history would be most of the encoding.
    pub fn live_state(&mut self, channel: &str) -> Option<Value> {
        match self.channels.get_mut(channel)? {
            State::Chat(chat) => {
                let turns = std::mem::take(&mut chat.turns);
                let json = serde_json::to_value(&**chat).unwrap_or(Value::Null);
                chat.turns = turns;
                Some(json)
            }
            other => Some(other.to_json()),
        }
    }

    /// Applies one envelope (rejected ones change nothing) after the stream checks.
    pub fn apply(&mut self, envelope: Node<'_>) -> Vec<Violation> {
        let mut found = Vec::new();
        if !envelope.member("rejectionReason").is_null() {
            return found;
        }
        let Some(channel) = envelope.member("channel").as_str() else {
            return found;
        };
        let action = envelope.member("action");
        let kind = action.member("type").as_str().unwrap_or_default();
        let host = envelope.member("origin").is_null();
        error_part(kind, action, &mut found, &mut self.parts_checked);
        let chat_action = kind.starts_with("chat/");
        match self.channels.get(channel) {
            Some(State::Chat(_)) => self.fold(channel, envelope, kind, host, &mut found),
            Some(_) if !chat_action => self.fold(channel, envelope, kind, host, &mut found),
            _ if chat_action => self.shadow(channel, action, kind, host, &mut found),
            _ => {}
        }
        found
    }

    /// Folds one accepted envelope into the channel's mirror, after the chat rules judged it
    /// against the state before it.
    fn fold(
        &mut self,
        channel: &str,
        envelope: Node<'_>,
        kind: &str,
        host: bool,
        found: &mut Vec<Violation>,
    ) {
        let Some(state) = self.channels.get_mut(channel) else {
            return;
        };
        let action = envelope.member("action");
        if let State::Chat(chat) = state {
            stream_checks(chat, kind, action, found, &mut self.deltas_checked);
            if host {
                host_action_checks(
                    chat,
                    kind,
                    action,
                    found,
                    &mut self.queue_consumptions,
                    &mut self.turn_ids_checked,
                );
            }
        }
        if let Some(seq) = envelope.member("serverSeq").as_u64() {
            // Overwrite in place: the channel is almost always known, and a new key would
            // cost an allocation per envelope.
            match self.seqs.get_mut(channel) {
                Some(known) => *known = seq,
                None => {
                    self.seqs.insert(channel.to_owned(), seq);
                }
            }
        }
        match folds(action) {
            Ok(decoded) => {
                state.apply(&decoded);
                if let State::Chat(chat) = state {
                    if TURN_EVENTS.contains(&kind) {
                        self.turn_modified
                            .insert(channel.to_owned(), chat.modified_at.clone());
                    }
                }
            }
            Err(error) => self.unknown(channel, &format!("action does not decode: {error}")),
        }
    }

    /// A chat action on a channel without a chat mirror: judged against a shadow chat state
    /// started from a turn start seen on the channel, within that turn; skipped otherwise.
    fn shadow(
        &mut self,
        channel: &str,
        action: Node<'_>,
        kind: &str,
        host: bool,
        found: &mut Vec<Violation>,
    ) {
        let fed = rules_fed(kind, action, host);
        if self.lost.contains_key(channel) {
            skip(&mut self.skips, fed, SKIP_LOST);
            return;
        }
        if kind == "chat/turnStarted" {
            if let Some(state) = empty_chat(channel) {
                self.shadows.insert(channel.to_owned(), state);
            }
        }
        let Some(chat) = self.shadows.get_mut(channel) else {
            let why = match Kind::of(channel) {
                Some(Kind::Chat) => SKIP_NO_STATE,
                _ => SKIP_NOT_A_CHAT,
            };
            skip(&mut self.skips, fed, why);
            return;
        };
        let active = chat.active_turn.as_ref().map(|turn| turn.id.as_str());
        let in_turn = active.is_some() && action.member("turnId").as_str() == active;
        if in_turn {
            stream_checks(chat, kind, action, found, &mut self.deltas_checked);
            if host && STREAMING.contains(&kind) {
                // The action names the turn the shadow follows: its turnId is right.
                self.turn_ids_checked += 1;
            }
            if fed.contains(&Rule::Pending003) {
                self.skips.add(Rule::Pending003, SKIP_NO_QUEUE, 1);
            }
        } else if kind != "chat/turnStarted" {
            skip(&mut self.skips, fed, SKIP_OTHER_TURN);
        }
        match folds(action) {
            Ok(decoded) => {
                apply_action_to_chat(chat, &decoded);
            }
            Err(_) => {
                self.shadows.remove(channel);
            }
        }
    }
}

/// Counts one action of each of `rules` as skipped because of `why`.
fn skip(skips: &mut Skips, rules: Vec<Rule>, why: &'static str) {
    for rule in rules {
        skips.add(rule, why, 1);
    }
}

/// The action as the reducers fold it, or why it cannot be folded: an action of a known type
/// that does not decode is not folded as a no-op (the state would silently miss it).
fn folds(action: Node<'_>) -> Result<StateAction, String> {
    match decode_action(action) {
        Ok(StateAction::Unknown(_)) => {
            let kind = action.member("type").as_str().unwrap_or_default();
            if super::action_decode::is_known(kind) {
                Err(format!("a {kind} that does not decode"))
            } else {
                // A type this version does not know changes nothing (forward compatibility).
                Ok(StateAction::Unknown(serde_json::Value::Null))
            }
        }
        Ok(decoded) => Ok(decoded),
        Err(error) => Err(error.to_string()),
    }
}

/// An empty chat state for `channel`, for a shadow started from a turn start.
fn empty_chat(channel: &str) -> Option<Box<ChatState>> {
    let state = serde_json::json!({
        "resource": channel, "title": "", "status": 1,
        "modifiedAt": "1970-01-01T00:00:00Z", "turns": []
    });
    ChatState::deserialize(&state).ok().map(Box::new)
}

/// The chat rules (other than TURN-005, which needs no state) an action gives work to.
fn rules_fed(kind: &str, action: Node<'_>, host: bool) -> Vec<Rule> {
    let mut rules = Vec::new();
    if matches!(kind, "chat/delta" | "chat/reasoning") {
        rules.push(Rule::Turn003);
    }
    if host && STREAMING.contains(&kind) {
        rules.push(Rule::Turn004);
    }
    if host
        && kind == "chat/pendingMessageRemoved"
        && action.member("kind").as_str() == Some("queued")
    {
        rules.push(Rule::Pending003);
    }
    rules
}

/// TURN-005: an error part is never sent through `chat/responsePart` (no state needed).
fn error_part(kind: &str, action: Node<'_>, found: &mut Vec<Violation>, parts: &mut usize) {
    if kind != "chat/responsePart" {
        return;
    }
    *parts += 1;
    if action.member("part").member("kind").as_str() == Some("error") {
        found.push(Violation::new(
            Rule::Turn005,
            "errors only through chat/error",
            "chat/responsePart carrying an error part",
        ));
    }
}

/// PENDING-003 and TURN-004 on a host-originated chat action, before it is applied.
fn host_action_checks(
    chat: &ChatState,
    kind: &str,
    action: Node<'_>,
    found: &mut Vec<Violation>,
    queue_consumptions: &mut usize,
    turn_ids_checked: &mut usize,
) {
    if kind == "chat/pendingMessageRemoved" && action.member("kind").as_str() == Some("queued") {
        // The host consumes the queue first in, first out.
        *queue_consumptions += 1;
        let first = chat
            .queued_messages
            .as_ref()
            .and_then(|queue| queue.first())
            .map(|m| m.id.as_str());
        let removed = action.member("id");
        if let Some(first) = first.filter(|first| removed.as_str() != Some(first)) {
            found.push(Violation::new(
                Rule::Pending003,
                format!("the host consumes the first queued message ({first:?})"),
                format!("it removed {}", removed.to_value()),
            ));
        }
    }
    if STREAMING.contains(&kind) {
        *turn_ids_checked += 1;
        let active = chat.active_turn.as_ref().map(|turn| turn.id.as_str());
        let turn_id = action.member("turnId");
        if active != turn_id.as_str() {
            found.push(Violation::new(
                Rule::Turn004,
                format!(
                    "{} for the active turn {}",
                    action.member("type").to_value(),
                    active.map_or("(none)".into(), |id| format!("{id:?}"))
                ),
                format!("turnId {}", turn_id.to_value()),
            ));
        }
    }
}

/// The chat actions that set `modifiedAt`: a turn's start and its ends.
const TURN_EVENTS: &[&str] = &[
    "chat/turnStarted",
    "chat/turnComplete",
    "chat/turnCancelled",
    "chat/error",
];

/// Host streaming actions that must carry the active turn's id (TURN-004).
const STREAMING: &[&str] = &[
    "chat/delta",
    "chat/reasoning",
    "chat/responsePart",
    "chat/usage",
    "chat/toolCallStart",
    "chat/toolCallDelta",
    "chat/toolCallReady",
    "chat/toolCallComplete",
    "chat/toolCallContentChanged",
    "chat/toolCallAuthRequired",
    "chat/toolCallAuthResolved",
    "chat/toolCallConfirmed",
    "chat/toolCallResultConfirmed",
];

/// TURN-003, judged against the chat state before the action.
fn stream_checks(
    chat: &ChatState,
    kind: &str,
    action: Node<'_>,
    found: &mut Vec<Violation>,
    deltas: &mut usize,
) {
    if !matches!(kind, "chat/delta" | "chat/reasoning") {
        return;
    }
    *deltas += 1;
    let wanted = if kind == "chat/delta" {
        "markdown"
    } else {
        "reasoning"
    };
    let part_id = action.member("partId").as_str().unwrap_or_default();
    let turn_id = action.member("turnId");
    let active = chat
        .active_turn
        .as_ref()
        .filter(|turn| turn_id.as_str() == Some(turn.id.as_str()));
    let exists = active.is_some_and(|turn| {
        turn.response_parts.iter().any(|part| match part {
            ResponsePart::Markdown(m) => wanted == "markdown" && m.id == part_id,
            ResponsePart::Reasoning(r) => wanted == "reasoning" && r.id == part_id,
            _ => false,
        })
    });
    if !exists {
        found.push(Violation::new(
            Rule::Turn003,
            format!(
                "{kind} for a {wanted} part created earlier in active turn {}",
                turn_id.to_value()
            ),
            format!("partId {part_id:?}, which the turn does not have"),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::Tape;

    /// Loads `snapshot`, folds each of `envelopes`, and returns the channel's state.
    fn fold(channel: &str, snapshot: &str, envelopes: &[&str]) -> Option<Value> {
        let mut mirror = Mirror::default();
        let mut tape = Tape::default();
        mirror.load_snapshot(tape.parse(snapshot).ok()?);
        for envelope in envelopes {
            assert!(mirror.apply(tape.parse(envelope).ok()?).is_empty());
        }
        mirror.state(channel)
    }

    #[test]
    fn a_changeset_channel_is_folded_through_its_reducer() {
        let c = "ahp-changeset:/ahp-session/s";
        let snapshot = format!(
            r#"{{"resource":"{c}","fromSeq":1,"state":{{"status":"computing","files":[]}}}}"#
        );
        let file = r#"{"id":"file:///w/a","edit":{"after":{"uri":"file:///w/a","content":{"uri":"file:///w/a"}}}}"#;
        let envelopes = [
            format!(
                r#"{{"channel":"{c}","serverSeq":2,"action":{{"type":"changeset/fileSet","file":{file}}}}}"#
            ),
            format!(
                r#"{{"channel":"{c}","serverSeq":3,"action":{{"type":"changeset/filesReviewChanged","files":["file:///w/a"],"reviewed":true}}}}"#
            ),
            format!(
                r#"{{"channel":"{c}","serverSeq":4,"action":{{"type":"changeset/statusChanged","status":"ready"}}}}"#
            ),
        ];
        let envelopes: Vec<&str> = envelopes.iter().map(String::as_str).collect();
        let state = fold(c, &snapshot, &envelopes).expect("the changeset is mirrored");
        assert_eq!(state["status"], "ready");
        assert_eq!(state["files"][0]["reviewed"], true);
        let removed =
            format!(r#"{{"channel":"{c}","serverSeq":5,"action":{{"type":"changeset/cleared"}}}}"#);
        let state = fold(c, &snapshot, &[envelopes[0], &removed]).expect("mirrored");
        assert_eq!(state["files"], serde_json::json!([]));
    }

    #[test]
    fn a_sessions_annotations_channel_is_not_a_session() {
        let a = "ahp-session:/s/annotations";
        assert_eq!(Kind::of(a), Some(Kind::Annotations));
        assert_eq!(Kind::of("ahp-session:/s"), Some(Kind::Session));
        let snapshot = format!(r#"{{"resource":"{a}","fromSeq":1,"state":{{"annotations":[]}}}}"#);
        let set = format!(
            r#"{{"channel":"{a}","serverSeq":2,"action":{{"type":"annotations/set","annotation":{{"id":"a1","origin":{{"session":"ahp-session:/s"}},"resource":"file:///w/a","resolved":false,"entries":[{{"id":"e1","text":"t"}}]}}}}}}"#
        );
        let entry = format!(
            r#"{{"channel":"{a}","serverSeq":3,"action":{{"type":"annotations/entrySet","annotationId":"a1","entry":{{"id":"e2","text":"u"}}}}}}"#
        );
        let state = fold(a, &snapshot, &[&set, &entry]).expect("the annotations are mirrored");
        assert_eq!(state["annotations"][0]["entries"][1]["id"], "e2");
    }
}
