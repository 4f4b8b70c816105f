//! The reducer mirror of one connection: per subscribed channel, the snapshot it got plus
//! every accepted envelope folded through the official `ahp` reducers. Stream checks run
//! against the state *before* each action is applied.

use ahp::reducers::{apply_action_to_chat, apply_action_to_root, apply_action_to_session};
use ahp_types::actions::StateAction;
use ahp_types::state::{ChatState, ResponsePart, RootState, SessionState};
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::action_decode::decode_action;
use super::compare::Kind;
use super::{FastMap, Rule, Violation};
use crate::tape::Node;

#[derive(Debug, Clone)]
enum State {
    Root(Box<RootState>),
    Session(Box<SessionState>),
    Chat(Box<ChatState>),
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
        })
    }

    fn to_json(&self) -> Value {
        let encoded = match self {
            State::Root(s) => serde_json::to_value(s),
            State::Session(s) => serde_json::to_value(s),
            State::Chat(s) => serde_json::to_value(s),
        };
        encoded.unwrap_or(Value::Null)
    }

    fn apply(&mut self, action: &StateAction) {
        match self {
            State::Root(s) => {
                apply_action_to_root(s, action);
            }
            State::Session(s) => {
                apply_action_to_session(s, action);
            }
            State::Chat(s) => {
                apply_action_to_chat(s, action);
            }
        }
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
}

impl Mirror {
    /// Starts (or restarts) the mirror of a channel from a snapshot.
    pub fn load_snapshot(&mut self, snapshot: Node<'_>) {
        let Some(resource) = snapshot.member("resource").as_str() else {
            return;
        };
        let Some(kind) = Kind::of(resource) else {
            return;
        };
        // The snapshot is the new baseline: no turn start or end folded since.
        self.turn_modified.remove(resource);
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
        let Some(state) = self.channels.get_mut(channel) else {
            return found;
        };
        let action = envelope.member("action");
        if let State::Chat(chat) = state {
            let kind = action.member("type").as_str().unwrap_or_default();
            stream_checks(
                chat,
                kind,
                action,
                &mut found,
                &mut self.deltas_checked,
                &mut self.parts_checked,
            );
            if envelope.member("origin").is_null() {
                host_action_checks(
                    chat,
                    kind,
                    action,
                    &mut found,
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
        match decode_action(action) {
            Ok(decoded) => {
                state.apply(&decoded);
                if let State::Chat(chat) = state {
                    let kind = action.member("type").as_str().unwrap_or_default();
                    if TURN_EVENTS.contains(&kind) {
                        self.turn_modified
                            .insert(channel.to_owned(), chat.modified_at.clone());
                    }
                }
            }
            Err(error) => {
                self.lost.insert(
                    channel.to_owned(),
                    format!("action does not decode: {error}"),
                );
                self.channels.remove(channel);
            }
        }
        found
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

/// TURN-003 and TURN-005, judged against the chat state before the action.
fn stream_checks(
    chat: &ChatState,
    kind: &str,
    action: Node<'_>,
    found: &mut Vec<Violation>,
    deltas: &mut usize,
    parts: &mut usize,
) {
    match kind {
        "chat/delta" | "chat/reasoning" => {
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
        "chat/responsePart" => {
            *parts += 1;
            if action.member("part").member("kind").as_str() == Some("error") {
                found.push(Violation::new(
                    Rule::Turn005,
                    "errors only through chat/error",
                    "chat/responsePart carrying an error part",
                ));
            }
        }
        _ => {}
    }
}
