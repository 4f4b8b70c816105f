//! Malformed-input mode: mutations of valid frames (broken JSON, wrong types, huge values,
//! deep nesting, unknown methods, invalid params, odd ids, binary frames) sent on one
//! connection. After each, that connection must still answer (or have closed cleanly),
//! another connection must still be served, and its state must stay intact.

use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::sync::watch;

use super::exec::ExecError;
use super::{search, FuzzOptions, FuzzOutcome};
use crate::checks::Rule;
use crate::client::{ping_request, ROOT};

mod run;
pub use run::{execute_frames, execute_frames_until};

/// One malformed frame, described by what was done to which valid frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "mutation", rename_all = "camelCase")]
pub enum Mutation {
    /// The first `at` bytes of a valid request.
    Truncated { base: u8, at: u16 },
    /// A valid request whose params member has the wrong JSON type.
    ParamsNotObject { base: u8 },
    /// listSessions with `limit` of the wrong type.
    WrongMemberType,
    /// A valid request with a string member of `kib` KiB.
    HugeString { kib: u16 },
    /// Arrays nested `depth` deep as params.
    Deep { depth: u16 },
    /// A request for a method that does not exist.
    UnknownMethod { n: u8 },
    /// ping with an odd id: string, negative, fraction.
    OddId { kind: u8 },
    /// A request without "jsonrpc".
    NoJsonrpc,
    /// A JSON array (batch), not an object.
    Batch,
    /// A binary frame.
    Binary { len: u8 },
    /// dispatchAction whose action is garbage.
    GarbageAction { kind: u8 },
    /// An object with an id but no method.
    NoMethod,
    /// An unsubscribe notification for a channel never subscribed.
    StrayUnsubscribe,
    /// A well-formed message for one of the protocol's methods whose params members hold
    /// wrong-typed values, boundary numbers, odd Unicode or oversized strings, built with
    /// `arbitrary` from these bytes ([`super::shaped::shaped_message`]).
    Shaped { entropy: Vec<u8> },
}

impl Mutation {
    /// The rule a host breaks that stops answering on the connection after this frame (no
    /// answer to the ping that follows it, no close): what the frame is decides which.
    pub(crate) fn answering_rule(&self) -> Rule {
        match self {
            // Not JSON at all.
            Mutation::Truncated { .. } | Mutation::Binary { .. } => Rule::Transport006,
            // Oversized strings, deep nesting, hostile member values.
            Mutation::HugeString { .. } | Mutation::Deep { .. } | Mutation::Shaped { .. } => {
                Rule::Fuzz003
            }
            Mutation::ParamsNotObject { .. } | Mutation::WrongMemberType => Rule::Transport009,
            Mutation::UnknownMethod { .. } => Rule::Transport008,
            Mutation::NoJsonrpc | Mutation::Batch | Mutation::NoMethod => Rule::Transport007,
            Mutation::GarbageAction { .. } => Rule::Dispatch007,
            // Odd ids, a notification about nothing.
            Mutation::OddId { .. } | Mutation::StrayUnsubscribe => Rule::Fuzz004,
        }
    }
}

fn base_request(base: u8, id: u64) -> Value {
    match base % 3 {
        0 => ping_request(id),
        1 => {
            json!({ "jsonrpc": "2.0", "id": id, "method": "listSessions", "params": { "channel": ROOT, "limit": 5 } })
        }
        _ => {
            json!({ "jsonrpc": "2.0", "id": id, "method": "subscribe", "params": { "channel": ROOT } })
        }
    }
}

/// What the frame is and which answer a correct host gives.
enum Answer {
    /// A response with this id carrying one of these error codes (any error when empty),
    /// or a close of the connection (`close_ok`); the rule that says so.
    Error {
        id: Value,
        codes: &'static [i64],
        close_ok: bool,
        rule: Rule,
    },
    /// A response with this id, a result or an error (or a close of the connection): a
    /// request a host may find odd but must not leave unanswered; the rule that says so.
    Answered { id: Value, rule: Rule },
    /// Anything (or nothing) but the connection keeps serving.
    Survive,
}

impl Answer {
    /// Whether `message` is the answer awaited: a response with the frame's id, or an error
    /// with `id: null` where JSON-RPC allows one (the frame's id could not be detected: a
    /// parse error or an invalid request).
    fn is_answer(&self, message: &Value) -> bool {
        let (id, null_ok) = match self {
            Answer::Error { id, codes, .. } => (
                id,
                id.is_null() || codes.iter().any(|c| [-32700, -32600].contains(c)),
            ),
            // An odd id may be refused as an invalid request, which JSON-RPC answers with
            // `id: null` when it cannot read the id.
            Answer::Answered { id, .. } => (id, true),
            Answer::Survive => return false,
        };
        let response = message.get("method").is_none()
            && (message.get("result").is_some() || message.get("error").is_some());
        response
            && match message.get("id") {
                Some(Value::Null) => null_ok && message.get("error").is_some(),
                Some(got) => got == id,
                None => false,
            }
    }

    /// Whether `response` is an error with one of the codes a correct host gives.
    fn accepts(&self, response: &Value) -> bool {
        let Answer::Error { codes, .. } = self else {
            return true;
        };
        let code = response["error"]["code"].as_i64();
        code.is_some_and(|c| codes.is_empty() || codes.contains(&c))
    }
}

// Kept whole (over the ~80-line aim): one match arm per mutation kind, each with the answer a correct host gives.
/// The frame of `mutation` with request id `id` (a batch's dispatch names the witness's
/// `session`), and the answer a correct host gives.
fn render(mutation: &Mutation, id: u64, session: &str) -> (Result<String, Vec<u8>>, Answer) {
    match mutation {
        Mutation::Truncated { base, at } => {
            let text = base_request(*base, id).to_string();
            let cut = usize::from(*at) % text.len().max(1);
            let cut = (0..=cut)
                .rev()
                .find(|i| text.is_char_boundary(*i))
                .unwrap_or(0);
            (
                Ok(text[..cut].to_owned()),
                Answer::Error {
                    id: Value::Null,
                    codes: &[-32700],
                    close_ok: true,
                    rule: Rule::Transport006,
                },
            )
        }
        Mutation::ParamsNotObject { base } => {
            let mut request = base_request(*base, id);
            request["params"] = json!([1, 2, 3]);
            let rule = if base % 3 == 0 {
                Rule::Transport010
            } else {
                Rule::Transport009
            };
            // ping must be answered whatever its params; the others must fail with -32602.
            let answer = if base % 3 == 0 {
                Answer::Survive
            } else {
                Answer::Error {
                    id: json!(id),
                    codes: &[-32602],
                    close_ok: false,
                    rule,
                }
            };
            (Ok(request.to_string()), answer)
        }
        Mutation::WrongMemberType => {
            let request = json!({ "jsonrpc": "2.0", "id": id, "method": "listSessions", "params": { "channel": ROOT, "limit": "many" } });
            (
                Ok(request.to_string()),
                Answer::Error {
                    id: json!(id),
                    codes: &[-32602],
                    close_ok: false,
                    rule: Rule::Transport009,
                },
            )
        }
        Mutation::HugeString { kib } => {
            let pad = "x".repeat(usize::from(*kib % 2048) * 1024);
            let request = json!({ "jsonrpc": "2.0", "id": id, "method": "ping", "params": { "channel": ROOT, "pad": pad } });
            (Ok(request.to_string()), Answer::Survive)
        }
        Mutation::Deep { depth } => {
            let depth = usize::from(*depth % 4000) + 1;
            let text = format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":\"listSessions\",\"params\":{}{}}}",
                "[".repeat(depth),
                "]".repeat(depth)
            );
            (Ok(text), Answer::Survive)
        }
        Mutation::UnknownMethod { n } => {
            let request = json!({ "jsonrpc": "2.0", "id": id, "method": format!("fuzz/unknown{n}"), "params": { "channel": ROOT } });
            (
                Ok(request.to_string()),
                Answer::Error {
                    id: json!(id),
                    codes: &[-32601],
                    close_ok: false,
                    rule: Rule::Transport008,
                },
            )
        }
        Mutation::OddId { kind } => {
            let odd = match kind % 3 {
                0 => json!(format!("s-{id}")),
                1 => json!(-(id as i64)),
                _ => json!(id as f64 + 0.5),
            };
            let request = ping_request(odd.clone());
            (
                Ok(request.to_string()),
                Answer::Answered {
                    id: odd,
                    rule: Rule::Fuzz004,
                },
            )
        }
        Mutation::NoJsonrpc => {
            let request = json!({ "id": id, "method": "ping", "params": { "channel": ROOT } });
            (
                Ok(request.to_string()),
                Answer::Error {
                    id: json!(id),
                    codes: &[-32600],
                    close_ok: true,
                    rule: Rule::Transport007,
                },
            )
        }
        Mutation::Batch => {
            // A rename of the witness's session rides in the batch: a host that refuses the
            // batch yet applies what is in it changes state another client sees (FUZZ-002:
            // [`applied_from_batch`]).
            let rename = json!({ "jsonrpc": "2.0", "method": "dispatchAction", "params": {
                "channel": session, "clientSeq": id,
                "action": { "type": "session/titleChanged", "title": format!("batch-{id}") } } });
            let text = json!([rename, base_request(0, id)]).to_string();
            (
                Ok(text),
                Answer::Error {
                    id: Value::Null,
                    codes: &[-32600],
                    close_ok: true,
                    rule: Rule::Transport007,
                },
            )
        }
        Mutation::Binary { len } => (Err(vec![0xAB; usize::from(*len)]), Answer::Survive),
        Mutation::NoMethod => {
            let request = json!({ "jsonrpc": "2.0", "id": id });
            (
                Ok(request.to_string()),
                Answer::Error {
                    id: json!(id),
                    codes: &[-32600],
                    close_ok: true,
                    rule: Rule::Transport007,
                },
            )
        }
        Mutation::StrayUnsubscribe => {
            let note = json!({ "jsonrpc": "2.0", "method": "unsubscribe", "params": { "channel": "ahp-session:/fuzz-nowhere" } });
            (Ok(note.to_string()), Answer::Survive)
        }
        Mutation::Shaped { entropy } => {
            let mut u = arbitrary::Unstructured::new(entropy);
            // Running out of entropy is no error: `arbitrary` then picks the smallest choices.
            let message = super::shaped::shaped_message(&mut u, id, super::shaped::Limits::FRAMES)
                .unwrap_or_else(|_| base_request(0, id));
            (Ok(message.to_string()), Answer::Survive)
        }
        Mutation::GarbageAction { kind } => {
            let action = match kind % 3 {
                0 => json!("not an object"),
                1 => json!({ "type": 42 }),
                _ => json!({ "type": "chat/turnStarted" }),
            };
            let note = json!({ "jsonrpc": "2.0", "method": "dispatchAction", "params": { "channel": "ahp-chat:/fuzz-nowhere", "clientSeq": 1, "action": action } });
            (Ok(note.to_string()), Answer::Survive)
        }
    }
}

/// FUZZ-002's judge: an action on the witness's `session` that a victim connection
/// (clientId starting with `victim`) originated, as its clientSeq and envelope. A victim
/// names that session only inside a batch, which a correct host refuses whole, so the
/// clientSeq is the batch frame's id.
pub(crate) fn applied_from_batch(
    mut received: impl Iterator<Item = Value>,
    session: &str,
    victim: &str,
) -> Option<(u64, Value)> {
    received.find_map(|message| {
        let params = message.get("params")?;
        let from_victim = params["origin"]["clientId"]
            .as_str()
            .is_some_and(|id| id.starts_with(victim));
        let applied = message["method"] == "action" && params["channel"] == session;
        let seq = params["origin"]["clientSeq"].as_u64()?;
        (applied && from_victim).then(|| (seq, message.clone()))
    })
}

pub(crate) fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        3 => (0u8..3, any::<u16>()).prop_map(|(base, at)| Mutation::Truncated { base, at }),
        2 => (0u8..3).prop_map(|base| Mutation::ParamsNotObject { base }),
        1 => Just(Mutation::WrongMemberType),
        1 => (0u16..1024).prop_map(|kib| Mutation::HugeString { kib }),
        1 => (0u16..4000).prop_map(|depth| Mutation::Deep { depth }),
        2 => any::<u8>().prop_map(|n| Mutation::UnknownMethod { n }),
        2 => (0u8..3).prop_map(|kind| Mutation::OddId { kind }),
        1 => Just(Mutation::NoJsonrpc),
        1 => Just(Mutation::Batch),
        1 => any::<u8>().prop_map(|len| Mutation::Binary { len }),
        2 => (0u8..3).prop_map(|kind| Mutation::GarbageAction { kind }),
        1 => Just(Mutation::NoMethod),
        1 => Just(Mutation::StrayUnsubscribe),
        6 => prop::collection::vec(any::<u8>(), 0..512).prop_map(|entropy| Mutation::Shaped { entropy }),
    ]
}

/// The coverage map's name of each kind of mutation (`frames/<mutation>`), one per kind.
pub fn kinds() -> Vec<String> {
    Mutation::one_of_each().iter().map(Mutation::kind).collect()
}

impl Mutation {
    /// One mutation of each kind (their fields matter to no kind's name or rule).
    pub fn one_of_each() -> [Mutation; 14] {
        [
            Mutation::Truncated { base: 0, at: 3 },
            Mutation::ParamsNotObject { base: 1 },
            Mutation::WrongMemberType,
            Mutation::HugeString { kib: 1 },
            Mutation::Deep { depth: 3 },
            Mutation::UnknownMethod { n: 1 },
            Mutation::OddId { kind: 0 },
            Mutation::NoJsonrpc,
            Mutation::Batch,
            Mutation::Binary { len: 1 },
            Mutation::GarbageAction { kind: 0 },
            Mutation::NoMethod,
            Mutation::StrayUnsubscribe,
            Mutation::Shaped { entropy: vec![] },
        ]
    }

    /// Its name in the coverage map: `frames/<mutation>`.
    pub fn kind(&self) -> String {
        format!("frames/{}", super::guidance::kind_of(self, "mutation"))
    }
}

/// Frames mode: sequences of mutations, shrunk like model sequences.
pub async fn fuzz_frames(
    options: &FuzzOptions,
    interrupt: watch::Receiver<bool>,
) -> Result<FuzzOutcome<Mutation>, ExecError> {
    let run = async |mutations: Vec<Mutation>, deadline| {
        execute_frames_until(&mutations, &options.target, &options.exec, Some(deadline)).await
    };
    let mut outcome = search(
        options,
        |_: &super::guidance::StateCoverage| {
            prop::collection::vec(mutation(), 1..=options.max_len.max(1))
        },
        run,
        interrupt,
    )
    .await?;
    outcome.coverage.operations.extend(kinds());
    Ok(outcome)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn envelope(channel: &str, client_id: &str, seq: u64) -> Value {
        json!({ "jsonrpc": "2.0", "method": "action", "params": {
            "channel": channel, "serverSeq": 9,
            "action": { "type": "session/titleChanged", "title": "batch" },
            "origin": { "clientId": client_id, "clientSeq": seq } } })
    }

    #[test]
    fn a_victims_action_on_the_witness_session_is_a_batch_applied() {
        let session = "ahp-session:/t";
        let received = [
            json!({ "jsonrpc": "2.0", "id": 1, "result": null }),
            envelope(session, "ahpspec-t-witness", 3),
            envelope(session, "ahpspec-t-victim2", 7_000_004),
        ];
        let found = applied_from_batch(received.into_iter(), session, "ahpspec-t-victim");
        assert_eq!(found.map(|(seq, _)| seq), Some(7_000_004));
        // Twins: the witness's own action, and a victim's action on another channel.
        let own = [envelope(session, "ahpspec-t-witness", 3)];
        assert!(applied_from_batch(own.into_iter(), session, "ahpspec-t-victim").is_none());
        let elsewhere = [envelope("ahp-root://", "ahpspec-t-victim", 7_000_001)];
        assert!(applied_from_batch(elsewhere.into_iter(), session, "ahpspec-t-victim").is_none());
    }

    #[test]
    fn a_batch_carries_a_rename_of_the_witness_session_and_is_refused_whole() {
        let (frame, answer) = render(&Mutation::Batch, 7_000_002, "ahp-session:/t");
        let text = frame.expect("a text frame");
        let batch: Value = serde_json::from_str(&text).expect("JSON");
        assert_eq!(batch[0]["params"]["channel"], "ahp-session:/t");
        assert_eq!(batch[0]["params"]["clientSeq"], 7_000_002);
        assert!(matches!(
            answer,
            Answer::Error {
                codes: &[-32600],
                ..
            }
        ));
    }
}
