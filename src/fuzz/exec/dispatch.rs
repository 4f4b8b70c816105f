//! The dispatch step (planned on the observed state, judged against each client's fold
//! at its echo) and the reconnect step (resume with replay, RECONNECT-001).

use serde_json::Value;

use super::{ping_if, Failure, Performed, Run};
use crate::checks::replayed::out_of_range;
use crate::checks::Rule;
use crate::client::{Conn, ROOT};
use crate::fuzz::guidance::{kind_of, state_of, Seen};
use crate::fuzz::model::{judge_in, plan, Channel, Expect};
use crate::fuzz::ops::Op;
use crate::transport::{Connection, Incoming};

impl Run<'_> {
    /// Plans `ops` on the state the first client observed, sends them all at once (each on
    /// its client), then judges each against the state its client folded just before the
    /// echo — the order the host chose.
    pub(super) async fn dispatch(&mut self, index: usize, ops: &[&Op]) -> Option<Failure> {
        let chat = self.conns[0]
            .mirror()
            .state(&self.chat)
            .unwrap_or(Value::Null);
        let mut sent = Vec::new();
        for op in ops {
            let client = op.client() % self.conns.len();
            self.next_turn += 1;
            let fresh = format!("fz-{}", self.next_turn);
            let now = self.tick();
            let client_id = self.conns[client].client_id().to_owned();
            let Some(planned) = plan(op, &chat, &client_id, &fresh, &now, &self.cfg.profile) else {
                continue;
            };
            if let Op::StartTurn { behaviour, .. } = op {
                self.behaviours.insert(fresh.clone(), *behaviour);
            }
            let channel = match planned.channel {
                Channel::Session => self.session.clone(),
                Channel::Chat => self.chat.clone(),
            };
            let conn = &mut self.conns[client];
            let seq = match conn.dispatch(&channel, &planned.action).await {
                Ok(seq) => seq,
                Err(error) => {
                    return Some(Failure {
                        rule: Rule::Fuzz001,
                        expected: "the connection stays open".into(),
                        actual: error.to_string(),
                        op_index: Some(index),
                    })
                }
            };
            // The echo has not been read yet: its pre-state is recorded when it is.
            conn.watch_echo(seq);
            // A dispatch the host may ignore is followed by a ping: the host answers it
            // after whatever it does with the dispatch, so the pong ends the wait.
            let ping = match planned.expect {
                Expect::RejectOrIgnore => conn.send_ping().await.ok(),
                _ => None,
            };
            self.exec.operations += 1;
            sent.push((self.exec.performed.len(), seq, ping, kind_of(*op, "op")));
            self.exec.performed.push(Performed {
                op_index: index,
                client,
                planned,
            });
        }
        if sent.is_empty() {
            return None;
        }
        for (done, (slot, seq, ping, kind)) in sent.iter().enumerate() {
            if let Some(failure) = self.judge_echo(index, *slot, (*seq, *ping), kind).await {
                // Dispatches the run stopped before judging keep no claim about their answer
                // (a regression case then expects nothing of them).
                for (later, _, _, _) in &sent[done + 1..] {
                    self.exec.performed[*later].planned.expect = Expect::Either;
                }
                return Some(failure);
            }
        }
        // The first client is caught up if it dispatched (the echo it read flushed it);
        // the others' frames are checked as they come.
        let pinged = sent
            .iter()
            .any(|(slot, _, _, _)| self.exec.performed[*slot].client != 0);
        self.catch_up(pinged).await;
        for conn in self.conns.iter_mut().skip(1) {
            conn.take_arrived();
        }
        self.checks(Some(index))
    }

    /// Waits for the echo of the dispatch recorded in `performed[slot]` and judges it
    /// against the state its client had folded just before it (or, when the host ignored
    /// it, the state now); records the state and the response for the coverage map under
    /// the operation's `kind`. `sent`: its clientSeq, and the ping sent after it.
    pub(super) async fn judge_echo(
        &mut self,
        index: usize,
        slot: usize,
        sent: (i64, Option<u64>),
        kind: &str,
    ) -> Option<Failure> {
        let (seq, ping) = sent;
        let performed = &self.exec.performed[slot];
        let (client, action) = (performed.client, performed.planned.action.clone());
        let channel = match performed.planned.channel {
            Channel::Session => self.session.clone(),
            Channel::Chat => self.chat.clone(),
        };
        let schemas = self.cfg.schemas.clone();
        let wait = self.cfg.timeout;
        // Once a missing echo is known to fail (or is not judged), the host's answer to a
        // ping sent after the dispatch ends the wait: what it did with the dispatch came
        // before it.
        let planned_rule = echo_rule(performed.planned.expect);
        let conn = &mut self.conns[client];
        let ping = match ping {
            None => ping_if(conn, self.cfg.settled(planned_rule)).await,
            ping => ping,
        };
        let client_id = conn.client_id().to_owned();
        let echo = conn
            .wait_for(wait, |item| match item {
                Incoming::Message(m) => {
                    (m["method"] == "action"
                        && m["params"]["origin"]["clientId"] == client_id.as_str()
                        && crate::client::json_equal(&m["params"]["action"], &action))
                        || ping.is_some_and(|id| crate::transport::is_response_to(m, id))
                }
                _ => false,
            })
            .await;
        let rejected = match &echo {
            Ok(Incoming::Message(m)) if m["method"] == "action" => Some(
                m["params"]
                    .get("rejectionReason")
                    .is_some_and(|r| !r.is_null()),
            ),
            _ => None,
        };
        // Folding up to the echo records the state the host judged it in.
        let found = conn.process(&schemas);
        let before = conn.echo_prestate(seq);
        let before = before.unwrap_or_else(|| conn.mirror().state(&channel).unwrap_or(Value::Null));
        let session = conn.mirror().state(&self.session).unwrap_or(Value::Null);
        let (expect, rule) = judge_in(&action, &before, &session, &client_id);
        let planned = &mut self.exec.performed[slot].planned;
        (planned.expect, planned.rule) = (expect, rule.to_owned());
        let chat_state = match planned.channel {
            Channel::Chat => before.clone(),
            Channel::Session => conn.mirror().state(&self.chat).unwrap_or(Value::Null),
        };
        self.exec.seen.push(Seen {
            channel: match planned.channel {
                Channel::Chat => "chat",
                Channel::Session => "session",
            },
            state: state_of(&chat_state),
            operation: kind.to_owned(),
            response: match rejected {
                Some(true) => "rejected",
                Some(false) => "accepted",
                None => "ignored",
            }
            .to_owned(),
        });
        // A broken always-on rule is the better explanation of anything that follows
        // (unless every one found is excluded: then the echo is judged as usual).
        if !found.is_empty() {
            self.pending.extend(found);
            if let Some(failure) = self.checks(Some(index)) {
                return Some(failure);
            }
        }
        let kind = action["type"].as_str().unwrap_or("?").to_owned();
        let failure = match (expect, rejected) {
            (Expect::Accept, Some(false))
            | (Expect::Reject, Some(true))
            | (Expect::Either, Some(_))
            | (Expect::RejectOrIgnore, Some(true) | None) => None,
            (Expect::Accept, Some(true)) => Some((rule, "accepted", format!("{kind} rejected"))),
            (Expect::Reject | Expect::RejectOrIgnore, Some(false)) => {
                Some((rule, "rejected", format!("{kind} accepted")))
            }
            // No echo at all: neither accepted nor rejected, which the echo rules judge,
            // not the rule of what the dispatch would have shown.
            (_, None) => Some((
                echo_rule(expect),
                "echoed to its dispatcher",
                match (&echo, ping) {
                    (Err(crate::transport::TransportError::Closed), _) => {
                        "the connection closed first".to_owned()
                    }
                    (_, Some(_)) => "no echo before the answer to a ping sent after it".into(),
                    _ => format!("no echo within {} ms", wait.as_millis()),
                },
            )),
        };
        let failure = failure
            .filter(|(rule, _, _)| self.cfg.exclude.judges(rule))
            .map(|(rule, expected, actual)| Failure {
                rule: rule.to_owned(),
                expected: format!("{kind} {expected}"),
                actual,
                op_index: Some(index),
            });
        // An accepted truncation of a chat with a running turn has to drop that turn.
        let active = &before["activeTurn"]["id"];
        if failure.is_none()
            && rejected == Some(false)
            && kind == "chat/truncated"
            && !active.is_null()
            && self.cfg.exclude.judges(Rule::Turn012.id())
        {
            let active = active.clone();
            return self.truncated_turn_dropped(index, &channel, &active).await;
        }
        // A rejection the model expected (or allowed) still has to leave the state alone.
        if failure.is_none()
            && rejected == Some(true)
            && self.cfg.exclude.judges(Rule::Dispatch003.id())
        {
            return self
                .rejected_left_alone(index, client, &channel, &action)
                .await;
        }
        failure
    }

    pub(super) async fn reconnect(&mut self, index: usize, client: usize) -> Option<Failure> {
        let link = match Connection::connect(&self.url, self.cfg.timeout).await {
            Ok(link) => link,
            Err(error) => {
                return Some(Failure {
                    rule: Rule::Fuzz001,
                    expected: "a new connection for reconnect".into(),
                    actual: error.to_string(),
                    op_index: Some(index),
                })
            }
        };
        self.conns[client].close().await;
        // The old connection's last frames are judged like every other frame.
        if let Some(failure) = self.checks(Some(index)) {
            return Some(failure);
        }
        let away = self.create_while_away(index, client).await;
        let resumed = Conn::resuming(&self.conns[client], link);
        let old = std::mem::replace(&mut self.conns[client], resumed);
        let conn = &mut self.conns[client];
        // The first client also listens to the root channel (it subscribed at initialize).
        let mut channels = vec![self.session.clone(), self.chat.clone()];
        if client == 0 {
            channels.insert(0, ROOT.to_owned());
        }
        let last_seen = old.highest_seq();
        let answer = conn.reconnect(last_seen, channels, self.cfg.timeout).await;
        match answer {
            Ok(response) if response.get("result").is_some() => {
                let replayed = out_of_range(&response["result"], last_seen);
                if let Some(violation) = replayed.filter(|v| self.cfg.exclude.judges(v.rule)) {
                    return Some(Failure::after(index, violation));
                }
            }
            Ok(response) => {
                return Some(Failure {
                    rule: Rule::Reconnect001,
                    expected: "a reconnect result".into(),
                    actual: response.to_string(),
                    op_index: Some(index),
                })
            }
            Err(error) => {
                return Some(Failure {
                    rule: Rule::Reconnect001,
                    expected: "a reconnect result".into(),
                    actual: error.to_string(),
                    op_index: Some(index),
                })
            }
        }
        self.settle().await;
        if let Some(failure) = self.away_not_replayed(index, away).await {
            return Some(failure);
        }
        self.checks(Some(index))
    }

    /// While the root subscriber (client 0) is away, another client creates a session: its
    /// root/sessionAdded must not be replayed (RECONNECT-006). The session's URI, when made.
    async fn create_while_away(&mut self, index: usize, client: usize) -> Option<String> {
        let uri = self.missing("away", index);
        let params = self.create_params(&uri);
        match (client, self.conns.get_mut(1)) {
            (0, Some(other)) => {
                let created = other.create_session(params, self.cfg.timeout).await;
                created
                    .is_ok_and(|m| m.get("result").is_some())
                    .then_some(uri)
            }
            _ => None,
        }
    }

    /// RECONNECT-006 after a reconnect of client 0: the session created while it was away
    /// is not replayed to it (the new connection's transcript starts at the reconnect).
    /// The session is disposed of afterwards.
    async fn away_not_replayed(&mut self, index: usize, away: Option<String>) -> Option<Failure> {
        let uri = away?;
        let replayed = self.conns[0].received_since(0).find(|m| {
            m["method"] == "root/sessionAdded" && m["params"]["summary"]["resource"] == uri.as_str()
        });
        if let Some(message) = replayed {
            return Some(Failure {
                rule: Rule::Reconnect006,
                expected: "no root/sessionAdded replayed for a session created while away".into(),
                actual: crate::checks::frame::clip(&message.to_string()),
                op_index: Some(index),
            });
        }
        let _ = self.conns[1].dispose_session(&uri, self.cfg.timeout).await;
        None
    }
}

/// The rule a dispatch without any echo breaks: an accepted one must be echoed to its
/// dispatcher (DISPATCH-001), a rejected one too, with its reason (DISPATCH-003).
fn echo_rule(expect: Expect) -> Rule {
    match expect {
        Expect::Reject => Rule::Dispatch003,
        _ => Rule::Dispatch001,
    }
}
