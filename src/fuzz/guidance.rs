//! Protocol-state coverage and the generator's bias toward what it has not seen (issue 24,
//! after AFLNet's use of response codes as state feedback). Every operation that reaches
//! the host is recorded as a pair — the state it met (channel kind, and the chat's status as
//! the model tells states apart) and the operation — with the host's response (accepted,
//! rejected, ignored; a probe's or routine's outcome). The campaign keeps the map, reports
//! it ("covered N of M state × operation pairs", and as JSON), and generates each sequence
//! with its operation kinds weighted by how many states each has not met yet.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;
use serde_json::Value;

/// The chat's status as the model tells states apart.
pub const STATES: [&str; 8] = [
    "idle",
    "idle-queued",
    "idle-resumable",
    "turn-running",
    "turn-tool-confirmation",
    "turn-client-tool",
    "turn-input",
    "turn-steering",
];

/// The status of `chat` (a chat state), one of [`STATES`].
pub fn state_of(chat: &Value) -> &'static str {
    let Some(turn) = chat.get("activeTurn").filter(|t| !t.is_null()) else {
        let queued = chat["queuedMessages"]
            .as_array()
            .is_some_and(|q| !q.is_empty());
        let last = chat["turns"].as_array().and_then(|t| t.last());
        let resumable = last.is_some_and(|t| {
            t["state"] == "error"
                && t["responseParts"]
                    .as_array()
                    .and_then(|p| p.last())
                    .is_some_and(|p| p["resumable"] == true)
        });
        return match (queued, resumable) {
            (true, _) => "idle-queued",
            (false, true) => "idle-resumable",
            _ => "idle",
        };
    };
    if chat.get("steeringMessage").is_some_and(|m| !m.is_null()) {
        return "turn-steering";
    }
    let parts = turn["responseParts"].as_array().into_iter().flatten();
    let mut state = "turn-running";
    for part in parts {
        let call = &part["toolCall"];
        if part["kind"] == "inputRequest" && part.get("response").is_none_or(Value::is_null) {
            return "turn-input";
        }
        if matches!(
            call["status"].as_str(),
            Some("pending-confirmation" | "pending-result-confirmation")
        ) {
            state = "turn-tool-confirmation";
        } else if call["status"] == "running" && call["contributor"]["kind"] == "client" {
            state = "turn-client-tool";
        }
    }
    state
}

/// How many states operation kind `operation` can meet: every chat state for a dispatch,
/// one ("any") for a probe, a routine or a frame.
fn states_of(operation: &str) -> usize {
    if operation.contains('/') {
        1
    } else {
        STATES.len()
    }
}

/// The state probes, routines and frames are recorded in.
pub const ANY: &str = "any";

/// The generator's name of an operation or mutation (its serde tag `tag`), as traces
/// spell it.
pub fn kind_of(value: &impl Serialize, tag: &str) -> String {
    let value = serde_json::to_value(value).unwrap_or(Value::Null);
    match &value {
        Value::String(name) => name.clone(),
        _ => value[tag].as_str().unwrap_or("?").to_owned(),
    }
}

/// One observation: where, in which state, what, and how the host answered.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Seen {
    /// `chat`, `session`, or `connection` (probes, routines and frames).
    pub channel: &'static str,
    pub state: &'static str,
    /// The operation's kind: an action's generator name, `probe/…`, `routine/…`, `frames/…`.
    pub operation: String,
    /// `accepted`, `rejected`, `ignored`, or a probe's or routine's outcome (`ok`, the rule
    /// it found broken).
    pub response: String,
}

/// What a campaign has seen: each (channel, state, operation) pair with the responses.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct StateCoverage {
    /// The operation kinds the campaign can generate (the universe's operations).
    pub operations: BTreeSet<String>,
    /// Responses seen per pair `channel state operation`.
    pub pairs: BTreeMap<String, BTreeSet<String>>,
}

impl StateCoverage {
    /// An empty map over the operation kinds `operations` (each meets every state).
    pub fn over(operations: impl IntoIterator<Item = String>) -> StateCoverage {
        StateCoverage {
            operations: operations.into_iter().collect(),
            pairs: BTreeMap::new(),
        }
    }

    pub fn record(&mut self, seen: &[Seen]) {
        for s in seen {
            self.operations.insert(s.operation.clone());
            self.pairs
                .entry(format!("{} {} {}", s.channel, s.state, s.operation))
                .or_default()
                .insert(s.response.clone());
        }
    }

    /// Pairs seen.
    pub fn covered(&self) -> usize {
        self.pairs.len()
    }

    /// Pairs seen with each of their distinct responses.
    pub fn responses(&self) -> usize {
        self.pairs.values().map(BTreeSet::len).sum()
    }

    /// The universe: every dispatching operation kind in every state, and each probe and
    /// routine once (they run beside the chat, whatever its state).
    pub fn universe(&self) -> usize {
        self.operations.iter().map(|op| states_of(op)).sum()
    }

    /// How many states `operation` has not met yet.
    pub fn unseen_states(&self, operation: &str) -> usize {
        let met = self
            .pairs
            .keys()
            .filter(|key| key.rsplit(' ').next() == Some(operation))
            .count();
        states_of(operation).saturating_sub(met)
    }

    /// The summary line.
    pub fn summary(&self) -> String {
        format!(
            "covered {} of {} state × operation pairs ({} with their distinct responses)",
            self.covered(),
            self.universe(),
            self.responses()
        )
    }

    /// The map as JSON, for the campaign's reports.
    pub fn to_json(&self) -> Value {
        serde_json::json!({
            "summary": self.summary(),
            "covered": self.covered(),
            "universe": self.universe(),
            "states": STATES,
            "operations": self.operations,
            "pairs": self.pairs,
        })
    }
}

/// Operation kinds' weights: the base weight times one plus the states the kind has not met
/// (so an operation that has met every state keeps its base weight, and one that has met
/// none gets up to nine times it). `Uniform`: the base weights alone.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Bias {
    #[default]
    Uniform,
    Unseen(BTreeMap<String, u32>),
}

impl Bias {
    /// The bias a campaign with `coverage` so far gives operation `kind`.
    pub fn toward_unseen(coverage: &StateCoverage) -> Bias {
        Bias::Unseen(
            coverage
                .operations
                .iter()
                .map(|op| (op.clone(), 1 + coverage.unseen_states(op) as u32))
                .collect(),
        )
    }

    /// `base` scaled for `kind`.
    pub fn weight(&self, kind: &str, base: u32) -> u32 {
        match self {
            Bias::Uniform => base,
            // A kind the map does not know yet has met no state.
            Bias::Unseen(factors) => {
                base * factors
                    .get(kind)
                    .copied()
                    .unwrap_or(1 + STATES.len() as u32)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn states_follow_the_chat() {
        assert_eq!(state_of(&json!({ "turns": [] })), "idle");
        assert_eq!(
            state_of(&json!({ "queuedMessages": [{ "id": "q" }] })),
            "idle-queued"
        );
        let asking = json!({ "activeTurn": { "responseParts": [
            { "kind": "toolCall", "toolCall": { "status": "pending-confirmation" } } ] } });
        assert_eq!(state_of(&asking), "turn-tool-confirmation");
        let input = json!({ "activeTurn": { "responseParts": [{ "kind": "inputRequest", "request": {} }] } });
        assert_eq!(state_of(&input), "turn-input");
    }

    #[test]
    fn unseen_pairs_weigh_more_until_seen() {
        let mut map = StateCoverage::over(["cancel".to_owned(), "rename".to_owned()]);
        let seen = |state, operation: &str| Seen {
            channel: "chat",
            state,
            operation: operation.into(),
            response: "accepted".into(),
        };
        map.record(&STATES.map(|s| seen(s, "cancel")));
        map.record(&[seen("idle", "rename"), seen("idle", "rename")]);
        assert_eq!(map.covered(), STATES.len() + 1);
        assert_eq!(map.universe(), 2 * STATES.len());
        let bias = Bias::toward_unseen(&map);
        assert_eq!(bias.weight("cancel", 3), 3);
        assert_eq!(bias.weight("rename", 3), 3 * STATES.len() as u32);
        assert!(map.summary().starts_with("covered 9 of 16"));
        map.record(&[seen(ANY, "probe/terminal")]);
        assert_eq!(map.universe(), 2 * STATES.len() + 1);
        assert_eq!(Bias::toward_unseen(&map).weight("probe/terminal", 2), 2);
    }
}
