//! Steps that set the scene: a ready session with its default chat, a turn driven by a
//! target-profile behaviour, and checkpoints (mirrors against fresh snapshots).

use super::*;
use crate::client::ends_creation;

impl Runner<'_> {
    pub(super) async fn make_session(&mut self, s: &MakeSession) -> StepResult {
        let uri = format!("ahp-session:/{}-{}", self.ctx.token, s.name);
        let mut params = json!({ "channel": uri });
        if let Some(provider) = s
            .provider
            .clone()
            .or_else(|| self.ctx.profile.provider.clone())
        {
            params["provider"] = json!(provider);
        }
        if let Some(dirs) = &s.working_directories {
            params["workingDirectories"] = self.subst(&json!(dirs))?;
        }
        let timeout = self.ctx.timeout;
        let conn = self.conn(&s.on)?;
        let created = conn.create_session(params, timeout).await;
        // After createSession the session exists (creating, ready or failed): LIFECYCLE-002.
        match created {
            Ok(created) if created.get("error").is_none() => {}
            Ok(created) => {
                return Err(self.prerequisite(
                    Rule::Lifecycle002,
                    &s.on,
                    format!("createSession {uri} succeeds"),
                    crate::checks::frame::clip(&created.to_string()),
                ))
            }
            Err(error) => {
                return Err(self.transport_failure(
                    error,
                    Rule::Lifecycle002,
                    &s.on,
                    format!("a response to createSession {uri}"),
                ))
            }
        }
        let snapshot = self.subscribe_state(&s.on, &uri).await?;
        let mut state = snapshot
            .pointer("/result/snapshot/state")
            .cloned()
            .unwrap_or(Value::Null);
        if s.wait_ready.unwrap_or(true) && state["lifecycle"] != "ready" {
            self.wait_ready(&s.on, &uri).await?;
            state = self
                .subscribe_state(&s.on, &uri)
                .await?
                .pointer("/result/snapshot/state")
                .cloned()
                .unwrap_or(Value::Null);
        }
        let chat = state["defaultChat"]
            .as_str()
            .or_else(|| state["chats"][0]["resource"].as_str())
            .map(str::to_owned);
        self.vars.set(&s.name, json!(uri));
        if let Some(chat) = chat {
            self.subscribe_state(&s.on, &chat).await?;
            self.vars.set(&format!("{}.chat", s.name), json!(chat));
        }
        Ok(())
    }

    /// Waits for the session `uri` created on `on` to be ready: its creation failing or
    /// never ending is a LIFECYCLE-003 failure that blocks the case.
    async fn wait_ready(&mut self, on: &Option<String>, uri: &str) -> StepResult {
        let timeout = self.ctx.timeout;
        let found = self
            .wait_message_for(Some(Rule::Lifecycle003), on, timeout, |m| {
                ends_creation(m, uri)
            })
            .await?;
        match found {
            Some(m) if m["params"]["action"]["type"] == "session/ready" => {}
            // A provider the target profile names (or the server's first agent) that
            // cannot create sessions leaves nothing to test; LIFECYCLE-003 is the rule a
            // session's creation ends by.
            Some(m) => {
                return Err(self.prerequisite(
                    Rule::Lifecycle003,
                    on,
                    format!("session/ready for {uri} (the target profile's provider)"),
                    format!(
                        "session/creationFailed {}",
                        crate::checks::frame::clip(&m["params"]["action"]["error"].to_string())
                    ),
                ))
            }
            None => {
                return Err(self.prerequisite(
                    Rule::Lifecycle003,
                    on,
                    format!("session/ready or session/creationFailed for {uri}"),
                    format!("neither within {} ms", timeout.as_millis()),
                ))
            }
        }
        Ok(())
    }

    pub(super) async fn start_turn(&mut self, s: &StartTurn) -> StepResult {
        let behaviour = s.behaviour.clone().unwrap_or_else(|| "echo".to_owned());
        let Some(text) = self.ctx.profile.behaviour(&behaviour).map(str::to_owned) else {
            return Err(Stop::NotTestable(format!(
                "the target profile has no trigger for behaviour {behaviour:?}"
            )));
        };
        let chat = self.subst_str(&s.chat)?;
        let turn_id = s.id.clone().unwrap_or_else(|| "t1".to_owned());
        let message = json!({ "text": text, "origin": { "kind": "user" } });
        let action = match &s.pending {
            Some(kind) => json!({ "type": "chat/pendingMessageSet", "kind": kind,
                                  "id": s.message_id.clone().unwrap_or_else(|| turn_id.clone()), "message": message }),
            None => {
                json!({ "type": "chat/turnStarted", "turnId": turn_id, "startedAt": super::vars::now_iso(), "message": message })
            }
        };
        let seq = self.dispatch(&s.on, &chat, action, false).await?;
        // A case that names its turn start judges the echo itself; for every other case a
        // rejected start is a failure of TURN-001, which the case relies on to get a turn.
        if s.pending.is_none() && (s.name.is_none() || s.wait_end) {
            if let Some(reason) = self.turn_start_rejection(&s.on, &chat, &turn_id).await? {
                return Err(self.prerequisite(
                    Rule::Turn001,
                    &s.on,
                    format!("turn {turn_id} started (an echo without rejectionReason)"),
                    format!("rejected: {reason}"),
                ));
            }
        }
        self.dispatches.insert(
            s.name.clone().unwrap_or_else(|| turn_id.clone()),
            (Self::conn_name(&s.on), seq),
        );
        if s.wait_end {
            let within = self.ctx.timeout * 4;
            let ended = self
                .wait_message_for(Some(Rule::Turn002), &s.on, within, |m| {
                    m["method"] == "action"
                        && m["params"]["channel"] == chat.as_str()
                        && m["params"]["action"]["turnId"] == turn_id.as_str()
                        && matches!(
                            m["params"]["action"]["type"].as_str(),
                            Some("chat/turnComplete" | "chat/turnCancelled" | "chat/error")
                        )
                })
                .await?;
            if ended.is_none() {
                let on = Self::conn_name(&s.on);
                if let Some(other) = self.ended_elsewhere(&on, &chat, &turn_id) {
                    // The turn did end: the connection waiting for it, subscribed to the
                    // chat, was not sent the end another connection got (SUB-003).
                    return Err(self.prerequisite(
                        Rule::Sub003,
                        &s.on,
                        format!("turn {turn_id}'s end on {on}, subscribed to {chat}"),
                        format!("it reached {other} only"),
                    ));
                }
                // Every started turn ends (TURN-002); a case that waits for one relies on it.
                return Err(self.prerequisite(
                    Rule::Turn002,
                    &s.on,
                    format!("turn {turn_id} ends"),
                    format!("no end within {} ms", within.as_millis()),
                ));
            }
        }
        Ok(())
    }

    /// Another connection of the case that received the end of `turn_id` in `chat` when
    /// connection `on`, subscribed to the chat, did not: where the end went instead.
    fn ended_elsewhere(&mut self, on: &str, chat: &str, turn_id: &str) -> Option<String> {
        let subscribed = self.conns.get(on).is_some_and(|conn| {
            let mirror = &conn.mirror();
            mirror
                .channels()
                .chain(mirror.lost_channels())
                .any(|c| c == chat)
        });
        if !subscribed {
            return None;
        }
        let ends = |m: &Value| {
            m["method"] == "action"
                && m["params"]["channel"] == chat
                && m["params"]["action"]["turnId"] == turn_id
                && matches!(
                    m["params"]["action"]["type"].as_str(),
                    Some("chat/turnComplete" | "chat/turnCancelled" | "chat/error")
                )
        };
        self.conns
            .iter_mut()
            .filter(|(name, _)| name.as_str() != on)
            .find_map(|(name, conn)| {
                conn.take_arrived();
                let seen = conn.received_since(0).any(|m| ends(&m));
                seen.then(|| name.clone())
            })
    }

    /// The rejection reason of this connection's echo of `chat/turnStarted` for `turn_id`, if
    /// the echo came and was rejected; the echo stays for the case's own echo steps. No echo
    /// is not judged here (the steps that wait for the turn's actions judge it).
    async fn turn_start_rejection(
        &mut self,
        on: &Option<String>,
        chat: &str,
        turn_id: &str,
    ) -> Result<Option<Value>, Stop> {
        let timeout = self.ctx.timeout;
        let conn = self.conn(on)?;
        let client_id = conn.client_id().to_owned();
        let echo = conn
            .wait_keeping(timeout, |item| {
                matches!(item, Incoming::Message(m)
                    if m["method"] == "action"
                        && m["params"]["channel"] == chat
                        && m["params"]["origin"]["clientId"] == client_id.as_str()
                        && m["params"]["action"]["type"] == "chat/turnStarted"
                        && m["params"]["action"]["turnId"] == turn_id)
            })
            .await;
        Ok(match echo {
            Ok(Incoming::Message(m)) => m["params"]
                .get("rejectionReason")
                .filter(|r| !r.is_null())
                .cloned(),
            _ => None,
        })
    }

    /// Compares every mirror with a fresh snapshot from a separate observer connection,
    /// and every session catalog with its chats.
    pub(super) async fn checkpoint(&mut self, s: &Checkpoint) -> StepResult {
        // Let in-flight frames land first.
        for conn in self.conns.values_mut() {
            if !conn.is_closed() {
                conn.drain(Duration::from_millis(20)).await;
            }
        }
        self.process_all();
        let channels: Vec<String> = match &s.channels {
            Some(list) => list
                .iter()
                .map(|c| self.subst_str(c))
                .collect::<Result<_, _>>()?,
            None => crate::client::checkpoint::mirrored_channels(self.conns.values()),
        };
        let mut conns: Vec<&mut Conn> = self.conns.values_mut().collect();
        let client_id = format!("ahpspec-{}-observer", self.ctx.token);
        let checked = crate::client::checkpoint::compare_once(
            &mut conns,
            channels,
            &self.ctx.url,
            self.ctx.timeout,
            &client_id,
            &self.ctx.offer,
        )
        .await
        .map_err(Stop::Harness)?;
        for (rule, n) in checked.counts() {
            *self.counts.entry(rule).or_insert(0) += n;
        }
        self.skipped.merge(&checked.skipped);
        // An own comparison (a fold after a replay, a coalesced subscription) is judged by the
        // case's rule, once, for the connection it is about, unless another connection's fold
        // of the same channel differs from the fresh snapshot too: then the host's snapshot
        // disagrees with its actions, INV-FOLD-1's matter, not the case's.
        let subject = Self::conn_name(&s.on);
        let agreed = |conn: &str| {
            conn == subject
                && checked
                    .compared
                    .iter()
                    .filter(|(_, name, equal)| name == conn && !equal)
                    .any(|(channel, _, _)| {
                        checked
                            .compared
                            .iter()
                            .filter(|(other, name, _)| other == channel && name != conn)
                            .all(|(_, _, equal)| *equal)
                    })
        };
        let (own, others): (Vec<_>, Vec<_>) = checked
            .violations
            .into_iter()
            .partition(|(name, v)| s.own && v.rule == Rule::InvFold1 && agreed(name));
        let own_miss = own
            .into_iter()
            .next()
            .map(|(name, v)| (name, v.expected, v.actual));
        for (name, violation) in others {
            let context = self
                .conns
                .get(&name)
                .map(|c| context_frames(c, c.frame_count()))
                .unwrap_or_default();
            self.always_on.push((
                Located {
                    violation,
                    conn: name,
                    frame: 0,
                },
                context,
            ));
        }
        // A case whose claim is the comparison claims nothing when a mirror could not fold
        // what it was sent (that is another rule's matter, charged there).
        let unfolded = checked
            .skipped
            .of(Rule::InvFold1)
            .iter()
            .any(|(why, _)| *why == crate::client::checkpoint::MIRROR_LOST);
        match own_miss {
            Some((name, expected, actual)) => self.broken(&None, &Some(name), expected, actual),
            None if s.own && unfolded => Err(Stop::NotTestable(format!(
                "the comparison this case makes was skipped: {}",
                crate::client::checkpoint::MIRROR_LOST
            ))),
            None => Ok(()),
        }
    }
}
