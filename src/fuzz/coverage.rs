//! Which rules each fuzzer operation is judged by, for `ahpspec coverage`: the model mode's
//! operations (by their trace name: what [`super::model::judge`] and the executor decide
//! for them), its protocol probes, and the frames mode's mutations. Every frame of every
//! operation also goes through the always-on checks, which the coverage map lists apart.
//! The tests below hold the model table to what `plan` actually judges.

use crate::checks::Rule;

/// `(operation, rules)`: `model/<op>` for a model operation, `probe/<probe>` for a probe,
/// `frames/<mutation>` for a malformed frame.
pub const OPERATIONS: &[(&str, &[Rule])] = &[
    // Model operations: the rule `judge` names for the dispatch, and the echo rules every
    // dispatch answers to (DISPATCH-001 accepted, DISPATCH-003 rejected).
    (
        "model/startTurn",
        &[Rule::Turn001, Rule::ChatValidate013, Rule::Dispatch001],
    ),
    (
        "model/cancel",
        &[
            Rule::Turn007,
            Rule::ChatValidate003,
            Rule::Dispatch001,
            Rule::Dispatch003,
        ],
    ),
    (
        "model/confirm",
        &[
            Rule::Tool003,
            Rule::ChatValidate002,
            Rule::Dispatch001,
            Rule::Dispatch003,
        ],
    ),
    (
        "model/confirmResult",
        &[
            Rule::Tool006,
            Rule::ChatValidate014,
            Rule::Dispatch001,
            Rule::Dispatch003,
        ],
    ),
    (
        "model/completeClientTool",
        &[
            Rule::Tool008,
            Rule::ChatValidate010,
            Rule::Dispatch001,
            Rule::Dispatch003,
        ],
    ),
    (
        "model/answer",
        &[
            Rule::Input003,
            Rule::ChatValidate005,
            Rule::ChatValidate006,
            Rule::Dispatch001,
            Rule::Dispatch003,
        ],
    ),
    (
        "model/completeInput",
        &[
            Rule::Input004,
            Rule::ChatValidate007,
            Rule::Dispatch001,
            Rule::Dispatch003,
        ],
    ),
    ("model/setPending", &[Rule::Dispatch008, Rule::Dispatch001]),
    (
        "model/removePending",
        &[
            Rule::Dispatch008,
            Rule::ChatValidate009,
            Rule::Dispatch001,
            Rule::Dispatch003,
        ],
    ),
    ("model/reorder", &[Rule::Pending006, Rule::Dispatch001]),
    ("model/draft", &[Rule::Dispatch008, Rule::Dispatch001]),
    ("model/rename", &[Rule::Dispatch008, Rule::Dispatch001]),
    (
        "model/setDirectory",
        &[
            Rule::Dispatch008,
            Rule::ChatValidate011,
            Rule::Dispatch001,
            Rule::Dispatch003,
        ],
    ),
    (
        "model/truncate",
        &[Rule::Turn012, Rule::Dispatch001, Rule::Dispatch003],
    ),
    (
        "model/resume",
        &[
            Rule::Turn008,
            Rule::ChatValidate004,
            Rule::Dispatch001,
            Rule::Dispatch003,
        ],
    ),
    ("model/serverOnly", &[Rule::Dispatch006, Rule::Dispatch003]),
    ("model/reconnect", &[Rule::Reconnect001, Rule::Reconnect006]),
    (
        "model/checkpoint",
        &[
            Rule::Sub003,
            Rule::Dispatch002,
            Rule::InvFold1,
            Rule::Chat003,
            Rule::Status003,
            Rule::InvChat1,
            Rule::InvChat2,
            Rule::InvChat3,
            Rule::InvChat5,
            Rule::InvChat6,
            Rule::InvTool2,
            Rule::InvSession1,
            Rule::InvSession2,
            Rule::InvSession3,
            Rule::InvSummary2,
            Rule::InvSummary3,
        ],
    ),
    // A server that stops answering, or dies, during any operation.
    ("model/any", &[Rule::Fuzz001]),
    // Every sequence's clients initialize: a result (INIT-001) whose snapshots start at or
    // before its serverSeq (INIT-004).
    ("model/setup", &[Rule::Init001, Rule::Init004]),
    // Probes (exec/probes.rs).
    ("probe/subscribe-unknown", &[Rule::Sub011]),
    ("probe/dispatch-to-missing", &[Rule::Dispatch004]),
    (
        "probe/side-session",
        &[Rule::Root005, Rule::Root006, Rule::Lifecycle009],
    ),
    ("probe/duplicate-session", &[Rule::Lifecycle001]),
    ("probe/unknown-provider", &[Rule::Lifecycle006]),
    ("probe/ping-before-initialize", &[Rule::Transport010]),
    (
        "probe/mixed-versions",
        &[Rule::Version001, Rule::Version002],
    ),
    (
        "probe/unsupported-version",
        &[Rule::Version005, Rule::Version006],
    ),
    (
        "probe/unsubscribe",
        &[Rule::Sub004, Rule::Sub001, Rule::Dispatch001],
    ),
    ("probe/fetch-turns", &[Rule::Init001, Rule::Turn010]),
    // Issue 25, terminals (i25b).
    (
        "probe/terminal",
        &[Rule::Term001, Rule::Term006, Rule::Dispatch001],
    ),
    (
        "probe/session-config",
        &[Rule::Config001, Rule::Completions001],
    ),
    ("probe/telemetry", &[Rule::Init001, Rule::Sub006]),
    // Routines (exec/routines.rs, issue 24).
    ("routine/burst", &[Rule::Dispatch005]),
    (
        "routine/disposeThenList",
        &[Rule::Lifecycle009, Rule::Transport003],
    ),
    ("routine/handshake", &[Rule::Init002]),
    (
        "routine/window",
        &[Rule::Sub008, Rule::Turn011, Rule::Dispatch001],
    ),
    ("routine/createChat", &[Rule::Chat001, Rule::Root008]),
    (
        "routine/queue",
        &[Rule::Pending003, Rule::InvChat5, Rule::Dispatch001],
    ),
    (
        "routine/answerUnsubscribed",
        &[Rule::Session010, Rule::Dispatch001],
    ),
    // Issue 25's features (exec/routines/features.rs).
    (
        "routine/resources",
        &[Rule::Res002, Rule::Res008, Rule::Res009, Rule::Transport003],
    ),
    (
        "routine/watch",
        &[Rule::Res007, Rule::Res013, Rule::Transport003],
    ),
    (
        "routine/tree",
        &[
            Rule::Res001,
            Rule::Res003,
            Rule::Res004,
            Rule::Res005,
            Rule::Res010,
            Rule::Transport003,
        ],
    ),
    (
        "routine/config",
        &[Rule::Config003, Rule::Root012, Rule::Transport003],
    ),
    (
        "routine/stealTerminal",
        &[Rule::Term003, Rule::Transport003],
    ),
    (
        "routine/authenticate",
        &[Rule::Auth001, Rule::Auth004, Rule::Transport003],
    ),
    (
        "routine/subscribeRoot",
        &[Rule::Sub001, Rule::Root001, Rule::Init001],
    ),
    ("routine/chatOutside", &[Rule::Chat007, Rule::Transport003]),
    // Issue 24's reach misses (exec/routines/clients.rs).
    ("routine/chooseOption", &[Rule::Tool005, Rule::Dispatch001]),
    ("routine/leaveOnReconnect", &[Rule::Reconnect008]),
    // Issue 29's features (exec/routines/chats.rs, changes.rs, agent.rs).
    (
        "routine/chatSources",
        &[
            Rule::ChatFork001,
            Rule::ChatFork002,
            Rule::ChatFork003,
            Rule::ChatFork004,
            Rule::ChatFork005,
            Rule::Dispatch001,
            Rule::Transport003,
        ],
    ),
    (
        "routine/moveChat",
        &[
            Rule::ChatMove001,
            Rule::ChatMove002,
            Rule::Session005,
            Rule::Transport003,
        ],
    ),
    (
        "routine/promoteDefault",
        &[Rule::Session004, Rule::Transport003],
    ),
    (
        "routine/removeDirectory",
        &[Rule::Session012, Rule::Chat008, Rule::Transport003],
    ),
    (
        "routine/changeset",
        &[
            Rule::Changeset001,
            Rule::Changeset002,
            Rule::Changeset003,
            Rule::Changeset004,
            Rule::Transport003,
        ],
    ),
    (
        "routine/annotations",
        &[Rule::Annotation001, Rule::Annotation002, Rule::Transport003],
    ),
    (
        "routine/agentState",
        &[
            Rule::Chat004,
            Rule::Chat009,
            Rule::Session016,
            Rule::Root013,
            Rule::Dispatch001,
        ],
    ),
    // Issue 24's remaining reach misses (exec/routines/misses.rs).
    (
        "routine/versions",
        &[Rule::Version003, Rule::Version009, Rule::Transport003],
    ),
    (
        "routine/failedLifecycle",
        &[Rule::Lifecycle004, Rule::Transport003],
    ),
    ("routine/malformedTitle", &[Rule::Dispatch007]),
    (
        "routine/queueOnIdle",
        &[Rule::Pending004, Rule::Dispatch001],
    ),
    (
        "routine/toolOrder",
        &[Rule::Tool002, Rule::Session008, Rule::Dispatch001],
    ),
    // Malformed frames (frames.rs): the answer a correct host gives, and surviving the frame.
    ("frames/truncated", &[Rule::Transport006]),
    ("frames/binary", &[Rule::Transport006]),
    (
        "frames/paramsNotObject",
        &[Rule::Transport009, Rule::Transport010],
    ),
    ("frames/wrongMemberType", &[Rule::Transport009]),
    ("frames/unknownMethod", &[Rule::Transport008]),
    ("frames/noJsonrpc", &[Rule::Transport007]),
    ("frames/batch", &[Rule::Transport007]),
    ("frames/noMethod", &[Rule::Transport007]),
    ("frames/garbageAction", &[Rule::Dispatch007]),
    ("frames/hugeString", &[Rule::Fuzz003]),
    ("frames/deep", &[Rule::Fuzz003]),
    ("frames/shaped", &[Rule::Fuzz003]),
    ("frames/oddId", &[Rule::Fuzz004]),
    ("frames/strayUnsubscribe", &[Rule::Fuzz004]),
    ("frames/any", &[Rule::Fuzz001, Rule::Fuzz002]),
];

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, BTreeSet};

    use serde_json::{json, Value};

    use super::*;
    use crate::client::profile::Profile;
    use crate::fuzz::frames::Mutation;
    use crate::fuzz::model::{judge, plan};
    use crate::fuzz::ops::{Behaviour, Op, PendingKind, Probe, Routine};

    fn rules_of(op: &str) -> &'static [Rule] {
        OPERATIONS
            .iter()
            .find(|(name, _)| *name == op)
            .map(|(_, rules)| *rules)
            .unwrap_or_else(|| panic!("{op} is not in the table"))
    }

    /// The trace name of an operation (its serde tag), as the table keys it.
    fn name_of(value: &impl serde::Serialize, tag: &str) -> String {
        let value = serde_json::to_value(value).expect("serialises");
        match &value {
            Value::String(name) => name.clone(),
            _ => value[tag].as_str().expect("tagged").to_owned(),
        }
    }

    /// Chats in every state the model tells apart: idle with a queue and a resumable error,
    /// and a turn with a call in each status the judge reads and an open input request.
    fn chats() -> Vec<Value> {
        let resumable = json!({ "id": "t0", "state": "error",
            "responseParts": [{ "kind": "error", "resumable": true }] });
        let busy = json!({ "id": "t1", "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "a", "status": "pending-confirmation" } },
            { "kind": "toolCall", "toolCall": { "toolCallId": "b", "status": "pending-result-confirmation" } },
            { "kind": "toolCall", "toolCall": { "toolCallId": "c", "status": "running",
                "contributor": { "kind": "client", "clientId": "me" } } },
            { "kind": "inputRequest", "request": { "id": "r1",
                "questions": [{ "kind": "text", "id": "q-name" }] } } ] });
        let other = json!({ "id": "t1", "responseParts": [
            { "kind": "toolCall", "toolCall": { "toolCallId": "c", "status": "running",
                "contributor": { "kind": "client", "clientId": "someone-else" } } } ] });
        vec![
            json!({ "turns": [], "queuedMessages": [{ "id": "q1" }], "steeringMessage": { "id": "s1" } }),
            json!({ "turns": [resumable.clone()] }),
            json!({ "turns": [resumable], "activeTurn": busy }),
            json!({ "turns": [{ "id": "t0" }], "activeTurn": other }),
            json!({ "turns": [] }),
        ]
    }

    /// Every model operation with every flag each way.
    fn model_ops() -> Vec<Op> {
        let mut ops = Vec::new();
        for b in Behaviour::ALL {
            ops.push(Op::StartTurn {
                client: 0,
                behaviour: b,
            });
        }
        for flag in [false, true] {
            ops.push(Op::Cancel {
                client: 0,
                stale: flag,
            });
            for approve in [false, true] {
                ops.push(Op::Confirm {
                    client: 0,
                    approve,
                    stale: flag,
                });
            }
            ops.push(Op::ConfirmResult {
                client: 0,
                approve: flag,
            });
            ops.push(Op::Answer {
                client: 0,
                valid: flag,
            });
            ops.push(Op::CompleteInput {
                client: 0,
                accept: flag,
            });
            ops.push(Op::Truncate {
                client: 0,
                keep_first: flag,
            });
        }
        for kind in [PendingKind::Queued, PendingKind::Steering] {
            for id in [1, 9] {
                ops.push(Op::SetPending {
                    client: 0,
                    kind,
                    id,
                });
                ops.push(Op::RemovePending {
                    client: 0,
                    kind,
                    id,
                });
            }
        }
        ops.extend([
            Op::CompleteClientTool { client: 0 },
            Op::Reorder { client: 0 },
            Op::Draft { client: 0 },
            Op::Rename { client: 0 },
            Op::SetDirectory {
                client: 0,
                inside: true,
            },
            Op::SetDirectory {
                client: 0,
                inside: false,
            },
            Op::Resume { client: 0 },
            Op::ServerOnly { client: 0 },
        ]);
        ops
    }

    #[test]
    fn the_model_judges_each_operation_by_the_rules_the_table_lists() {
        let profile = Profile::scripted().expect("profile");
        let mut seen: BTreeMap<String, BTreeSet<Rule>> = BTreeMap::new();
        // An action planned on one state is judged on the state the host had when it took it
        // (another client may have moved the chat meanwhile): every pair is possible.
        for op in model_ops() {
            let name = format!("model/{}", name_of(&op, "op"));
            for planned_on in chats() {
                let Some(planned) = plan(&op, &planned_on, "me", "t9", "now", &profile) else {
                    continue;
                };
                for taken_on in chats() {
                    for client in ["me", "someone"] {
                        let (_, rule) = judge(&planned.action, &taken_on, client);
                        assert!(
                            rules_of(&name).contains(&rule),
                            "{name} judged by {rule}, which the table does not list"
                        );
                        seen.entry(name.clone()).or_default().insert(rule);
                    }
                }
            }
        }
        // And the table lists no rule of the judge that the judge never names.
        for (op, rules) in OPERATIONS.iter().filter(|(op, _)| seen.contains_key(*op)) {
            for rule in rules.iter().filter(|r| !r.id().starts_with("DISPATCH-00")) {
                let judged = seen[*op].contains(rule);
                // DISPATCH-006 (server-only) and -008 are the judge's own words too.
                assert!(judged, "{op} lists {rule}, which plan never judges it by");
            }
        }
        assert_eq!(
            seen.len(),
            16,
            "every dispatching operation was planned: {seen:?}"
        );
    }

    #[test]
    fn every_operation_probe_and_mutation_has_a_row() {
        let names: BTreeSet<&str> = OPERATIONS.iter().map(|(op, _)| *op).collect();
        assert_eq!(names.len(), OPERATIONS.len(), "no operation twice");
        for op in model_ops()
            .into_iter()
            .chain([Op::Reconnect { client: 0 }, Op::Checkpoint])
        {
            let name = format!("model/{}", name_of(&op, "op"));
            assert!(names.contains(name.as_str()), "{name}");
        }
        for probe in Probe::ALL {
            let name = format!("probe/{}", name_of(&probe, ""));
            assert!(names.contains(name.as_str()), "{name}");
        }
        for routine in Routine::ALL {
            let name = format!("routine/{}", name_of(&routine, "routine"));
            assert!(names.contains(name.as_str()), "{name}");
        }
        assert_eq!(
            names.iter().filter(|n| n.starts_with("routine/")).count(),
            Routine::ALL.len(),
            "a new routine needs a row"
        );
        let mutations = Mutation::one_of_each();
        for mutation in &mutations {
            let name = format!("frames/{}", name_of(mutation, "mutation"));
            assert!(names.contains(name.as_str()), "{name}");
            // The rule a host that stops answering after the frame breaks is listed.
            assert!(
                rules_of(&name).contains(&mutation.answering_rule()),
                "{name}: {}",
                mutation.answering_rule()
            );
        }
        assert_eq!(
            names.iter().filter(|n| n.starts_with("frames/")).count(),
            mutations.len() + 1,
            "a new mutation needs a row"
        );
    }
}
