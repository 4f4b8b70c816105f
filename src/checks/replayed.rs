//! The range of a `reconnect` replay (RECONNECT-002): a pure judgement over the result and
//! the `lastSeenServerSeq` the client asked it to start after. The replay holds nothing at
//! or below that point, in ascending order. Whether it holds everything after it is for the
//! fold of the replay against a fresh snapshot (INV-FOLD-1) and the delivery checks.

use serde_json::Value;

use super::{Rule, Violation};

/// The RECONNECT-002 violation when a `{type: "replay"}` result holds an envelope whose
/// `serverSeq` is not above `last_seen`, or not above the one before it. A snapshot result
/// or a replay without `serverSeq`s (the schema's matter) claims nothing.
pub fn out_of_range(result: &Value, last_seen: u64) -> Option<Violation> {
    if result["type"] != "replay" {
        return None;
    }
    let mut previous = last_seen;
    for (index, envelope) in result["actions"].as_array()?.iter().enumerate() {
        let seq = envelope["serverSeq"].as_u64()?;
        if seq <= previous {
            let expected = if index == 0 {
                format!("a replay of the envelopes after lastSeenServerSeq {last_seen}, ascending")
            } else {
                format!(
                    "a replay in ascending serverSeq order (actions/{} has {previous})",
                    index - 1
                )
            };
            return Some(Violation::new(
                Rule::Reconnect002,
                expected,
                format!("actions/{index} has serverSeq {seq}"),
            ));
        }
        previous = seq;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn replay(seqs: &[u64]) -> Value {
        let actions: Vec<Value> = seqs
            .iter()
            .map(|seq| json!({ "channel": "ahp-root://", "serverSeq": seq, "action": {} }))
            .collect();
        json!({ "type": "replay", "actions": actions, "missing": [] })
    }

    #[test]
    fn a_replay_starts_after_the_last_seen_envelope_and_ascends() {
        assert!(out_of_range(&replay(&[6, 7, 9]), 5).is_none());
        assert!(out_of_range(&replay(&[]), 5).is_none());
        let at = out_of_range(&replay(&[5, 6]), 5).expect("the last seen one replayed");
        assert_eq!(at.rule, Rule::Reconnect002);
        assert_eq!(at.actual, "actions/0 has serverSeq 5");
        let back = out_of_range(&replay(&[6, 8, 7]), 5).expect("out of order");
        assert_eq!(back.actual, "actions/2 has serverSeq 7");
        assert!(out_of_range(&replay(&[6, 6]), 5).is_some());
        let snapshot = json!({ "type": "snapshot", "snapshots": [] });
        assert!(out_of_range(&snapshot, 5).is_none());
    }
}
