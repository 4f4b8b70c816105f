//! Steps that wait for what the server sends: responses, echoes, action envelopes,
//! notifications, silence and the connection's close.

use super::*;
use crate::client::is_channel;

/// A ping sent now when `settled` (its id), whose answer ends a wait for what a settled
/// rule says will not come: the host answers it after whatever it did before. `None` when
/// not settled, or the ping could not be sent.
pub async fn ping_if(conn: &mut Conn, settled: bool) -> Option<u64> {
    if !settled {
        return None;
    }
    conn.send_ping().await.ok()
}

/// What a wait that found nothing is reported with: how long it waited, and what came of
/// the awaited kind that the filter did not match.
pub(super) struct Miss {
    within: Duration,
    near: Option<String>,
}

impl Runner<'_> {
    /// Whether the rule a miss of the running step is charged to is settled for the caller
    /// (see [`CaseContext::settled`]): its `relies_on`, else the rule the waited-for part
    /// exercises (`exercised`: a session's creation is LIFECYCLE-003's, a turn's end
    /// TURN-002's, an echo its acceptance rule's), else the case's. Judged by the case's own
    /// rule instead, a case whose rule a campaign knows fails cut such a wait short and
    /// charged the miss to a rule that did not break.
    fn settled(&self, exercised: Option<Rule>) -> bool {
        let rule = match (&self.relies_on, exercised) {
            (Some(rule), _) => rule.as_str(),
            (None, Some(rule)) => rule.id(),
            (None, None) => own_rule(self.case),
        };
        self.ctx.settled.contains(rule)
    }

    /// What a wait of `within` on `on` that found nothing saw: the connection's end, nothing
    /// in that time, or, when it ended at a ping's answer (a settled rule), nothing before
    /// it.
    fn missed(&self, on: &Option<String>, within: Duration, exercised: Option<Rule>) -> String {
        let ended = self
            .conns
            .get(&Self::conn_name(on))
            .filter(|conn| conn.is_closed());
        if let Some(conn) = ended {
            let last = conn.last_frame().map_or(String::new(), |f| f.text.clone());
            format!(
                "the connection ended before it came ({})",
                crate::checks::frame::clip(&last)
            )
        } else if self.settled(exercised) {
            "none before the answer to a ping sent after it".to_owned()
        } else {
            format!("nothing within {} ms", within.as_millis())
        }
    }

    /// Messages of the awaited kind that the connection `on` received in the case but that
    /// do not match the step's filter (`near` tells both): how many, and the last, so that a
    /// miss shows what came instead.
    fn near_misses(
        &mut self,
        on: &Option<String>,
        mut near: impl FnMut(&Value) -> bool,
    ) -> Option<String> {
        let conn = self.conns.get(&Self::conn_name(on))?;
        let (count, last) = conn
            .received_since(0)
            .filter(|m| near(m))
            .fold((0usize, None), |(n, _), m| (n + 1, Some(m)));
        let last = last?;
        Some(format!(
            "{count} of that kind came that the filter did not match, the last: {}",
            crate::checks::frame::clip(&last["params"].to_string())
        ))
    }

    /// An awaited message arrived (its params are stored under `name`), or it did not (what
    /// the wait saw instead is in `miss`).
    pub(super) fn store_or_missing(
        &mut self,
        found: Option<Value>,
        name: &Option<String>,
        level: &Option<Level>,
        on: &Option<String>,
        expected: String,
        miss: Miss,
    ) -> StepResult {
        match found {
            Some(message) => {
                if let Some(name) = name {
                    self.vars.set(name, message["params"].clone());
                }
                Ok(())
            }
            None => {
                let mut actual = self.missed(on, miss.within, None);
                if let Some(near) = miss.near {
                    actual = format!("{actual}; {near}");
                }
                self.broken(level, on, expected, actual)
            }
        }
    }

    /// Waits for a message on a connection; `None` on timeout or close.
    pub(super) async fn wait_message(
        &mut self,
        on: &Option<String>,
        within: Duration,
        pred: impl FnMut(&Value) -> bool,
    ) -> Result<Option<Value>, Stop> {
        self.wait_message_for(None, on, within, pred).await
    }

    /// As [`Runner::wait_message`], for a wait whose miss is charged to `exercised` when
    /// the step names no `relies_on` ([`Runner::settled`]).
    pub(super) async fn wait_message_for(
        &mut self,
        exercised: Option<Rule>,
        on: &Option<String>,
        within: Duration,
        mut pred: impl FnMut(&Value) -> bool,
    ) -> Result<Option<Value>, Stop> {
        let settled = self.settled(exercised);
        let conn = self.conn(on)?;
        let ping = ping_if(conn, settled).await;
        let pong = |m: &Value| ping.is_some_and(|id| crate::transport::is_response_to(m, id));
        match conn
            .wait_for(
                within,
                |item| matches!(item, Incoming::Message(m) if pred(m) || pong(m)),
            )
            .await
        {
            Ok(Incoming::Message(message)) if pong(&message) => Ok(None),
            Ok(Incoming::Message(message)) => Ok(Some(message)),
            Ok(_)
            | Err(TransportError::Timeout(_))
            | Err(TransportError::Closed)
            | Err(TransportError::Oversized) => Ok(None),
            Err(error) => Err(Stop::Harness(error.to_string())),
        }
    }

    pub(super) async fn expect_response(&mut self, s: &Asserting<ExpectResponse>) -> StepResult {
        let on_name = Self::conn_name(&s.on);
        let (conn_name, id) = match &s.to {
            Some(to) => self
                .requests
                .get(to)
                .cloned()
                .ok_or_else(|| Stop::Harness(format!("{}: no request named {to}", self.at)))?,
            None => (on_name.clone(), 0),
        };
        let literal_id = s.id.clone().unwrap_or(Value::Null);
        let already = s.to.as_ref().and_then(|to| self.received.get(to).cloned());
        let on = Some(conn_name.clone());
        let timeout = self.ctx.timeout;
        let conn = self.conn(&on)?;
        let waited = if let Some(response) = already {
            Ok(response)
        } else if s.to.is_some() {
            conn.response(id, timeout).await
        } else {
            conn
                .wait_for(timeout, |item| matches!(item, Incoming::Message(m) if m.get("id") == Some(&literal_id) && m.get("method").is_none()))
                .await
                .and_then(|item| match item {
                    Incoming::Message(m) => Ok(m),
                    _ => Err(TransportError::Closed),
                })
        };
        let what = s.to.clone().unwrap_or_else(|| match &s.id {
            Some(id) => format!("the frame with id {id}"),
            None => "the unparseable frame".into(),
        });
        let exercised = s.exercised(&self.names).for_case(own_rule(self.case));
        let response = match waited {
            Ok(response) => response,
            Err(TransportError::Closed) | Err(TransportError::Oversized) if s.or_close => {
                return Ok(())
            }
            Err(TransportError::Closed) => {
                return self.broken_part(
                    exercised.answered,
                    &s.level,
                    &on,
                    format!("a response to {what}"),
                    "the connection closed".into(),
                );
            }
            Err(TransportError::Timeout(t)) => {
                return self.broken_part(
                    exercised.answered,
                    &s.level,
                    &on,
                    format!("a response to {what}"),
                    format!("nothing within {} ms", t.as_millis()),
                );
            }
            Err(error) => return Err(Stop::Harness(error.to_string())),
        };
        self.judge_response(s, &on, &what, response, exercised.succeeded)
    }

    /// What an `expect_response` step asks of the response it got (`what` names it).
    fn judge_response(
        &mut self,
        s: &Asserting<ExpectResponse>,
        on: &Option<String>,
        what: &str,
        response: Value,
        succeeded: Option<Rule>,
    ) -> StepResult {
        let on = on.clone();
        if let Some(to) = &s.to {
            self.vars.set(to, response.clone());
        }
        if let Some(name) = &s.name {
            self.vars.set(name, response.clone());
        }
        let is_error = response.get("error").is_some();
        if let Some(ok) = s.ok {
            if ok && is_error {
                return self.broken_part(
                    succeeded,
                    &s.level,
                    &on,
                    format!("{what} succeeds"),
                    format!("error {}", response["error"]),
                );
            }
            if !ok && !is_error {
                return self.broken(
                    &s.level,
                    &on,
                    format!("{what} fails with an error"),
                    format!(
                        "success {}",
                        crate::checks::frame::clip(&response.to_string())
                    ),
                );
            }
        }
        if let Some(codes) = &s.codes {
            let code = response["error"]["code"].as_i64();
            if !code.is_some_and(|c| codes.contains(&c)) {
                return self.broken(
                    &s.level,
                    &on,
                    format!("error code in {codes:?}"),
                    crate::checks::frame::clip(&response.to_string()),
                );
            }
        }
        self.judge_document(&response, &s.assert, &s.level, &on)
    }

    pub(super) async fn expect_echo(&mut self, s: &ExpectEcho) -> StepResult {
        let (conn_name, seq) = self
            .dispatches
            .get(&s.of)
            .cloned()
            .ok_or_else(|| Stop::Harness(format!("{}: no dispatch named {}", self.at, s.of)))?;
        let on = Some(conn_name.clone());
        let conn = self.conn(&on)?;
        let client_id = conn.client_id().to_owned();
        let dispatched = conn.dispatched(seq).cloned().unwrap_or(Value::Null);
        let timeout = if s.or_ignored && !s.accepted {
            Duration::from_millis(300).min(self.ctx.timeout)
        } else {
            self.ctx.timeout
        };
        let exercised = s.exercised(&self.names);
        let echo = self
            .wait_message_for(exercised.answered, &on, timeout, |m| {
                // The echo of this dispatch carries its action (a wrong clientSeq is
                // DISPATCH-001's business, checked on every echo).
                m["method"] == "action"
                    && m["params"]["origin"]["clientId"] == client_id.as_str()
                    && json_eq(&m["params"]["action"], &dispatched)
            })
            .await?;
        let Some(echo) = echo else {
            if s.or_ignored && !s.accepted {
                return Ok(());
            }
            let actual = self.missed(&on, timeout, exercised.answered);
            return self.broken_part(
                exercised.answered,
                &s.level,
                &on,
                format!("an echo of {} (clientSeq {seq})", s.of),
                actual,
            );
        };
        if let Some(name) = &s.name {
            self.vars.set(name, echo["params"].clone());
        }
        let reason = echo["params"]
            .get("rejectionReason")
            .filter(|r| !r.is_null());
        match (s.accepted, reason) {
            (true, Some(reason)) => self.broken_part(
                exercised.succeeded,
                &s.level,
                &on,
                format!("{} accepted", s.of),
                format!("rejected: {reason}"),
            ),
            (false, None) => self.broken(
                &s.level,
                &on,
                format!("{} rejected (echo with rejectionReason)", s.of),
                "accepted (echo without rejectionReason)".into(),
            ),
            (false, Some(reason)) if reason.as_str().is_none_or(str::is_empty) => self.broken(
                &s.level,
                &on,
                "a non-empty rejectionReason".into(),
                format!("rejectionReason {reason}"),
            ),
            _ => Ok(()),
        }
    }

    pub(super) async fn expect_silence(&mut self, s: &ExpectSilence) -> StepResult {
        let method = s.method.clone();
        let channel = match &s.channel {
            Some(c) => Some(self.subst_str(c)?),
            None => None,
        };
        let kind = s.action_type.clone();
        let matching = self.subst_matches(&s.matching)?;
        let contains = self.subst_matches(&s.where_contains)?;
        let conn = self.conn(&s.on)?;
        let responses = s.responses;
        let pred = |m: &Value| {
            (!responses || m.get("method").is_none())
                && method.as_ref().is_none_or(|x| m["method"] == x.as_str())
                && channel
                    .as_ref()
                    .is_none_or(|c| is_channel(&m["params"]["channel"], c))
                && kind
                    .as_ref()
                    .is_none_or(|k| m["params"]["action"]["type"] == k.as_str())
                && matches_all(m, &matching)
                && lists(m, &contains, true)
        };
        let within = Duration::from_millis(s.for_ms);
        let waited = if s.fresh {
            conn.wait_for_new(within, |i| matches!(i, Incoming::Message(m) if pred(m)))
                .await
        } else {
            conn.wait_for(within, |i| matches!(i, Incoming::Message(m) if pred(m)))
                .await
        };
        match waited {
            Ok(Incoming::Message(message)) => self.broken(
                &s.level,
                &s.on,
                format!("nothing matching for {} ms", s.for_ms),
                crate::checks::frame::clip(&message.to_string()),
            ),
            _ => Ok(()),
        }
    }

    pub(super) async fn expect_action(&mut self, s: &ExpectAction) -> StepResult {
        let channel = self.subst_str(&s.channel)?;
        let matching = self.subst_matches(&s.matching)?;
        let contains = self.subst_matches(&s.where_contains)?;
        let excludes = self.subst_matches(&s.where_excludes)?;
        let kind = s.action_type.clone();
        let within = s.within_ms.map_or(self.ctx.timeout, Duration::from_millis);
        let next = s.next;
        let of_kind = |m: &Value| {
            m["method"] == "action"
                && is_channel(&m["params"]["channel"], &channel)
                && m["params"]["action"]["type"] == kind.as_str()
        };
        let filtered = |m: &Value| {
            (next || matches_all(&m["params"], &matching))
                && lists(&m["params"], &contains, true)
                && lists(&m["params"], &excludes, false)
        };
        let found = self
            .wait_message(&s.on, within, |m| of_kind(m) && filtered(m))
            .await?;
        match found {
            Some(message) if next && !matches_all(&message["params"], &matching) => self.broken(
                &s.level,
                &s.on,
                format!("the next {kind} on {channel}{}", describe(&matching)),
                crate::checks::frame::clip(&message["params"].to_string()),
            ),
            found => {
                let near = match found {
                    Some(_) => None,
                    None => self.near_misses(&s.on, |m| of_kind(m) && !filtered(m)),
                };
                self.store_or_missing(
                    found,
                    &s.name,
                    &s.level,
                    &s.on,
                    format!("a {kind} action on {channel}{}", describe(&matching)),
                    Miss { within, near },
                )
            }
        }
    }

    pub(super) async fn expect_notification(&mut self, s: &ExpectNotification) -> StepResult {
        let matching = self.subst_matches(&s.matching)?;
        let method = s.method.clone();
        let within = s.within_ms.map_or(self.ctx.timeout, Duration::from_millis);
        let of_kind =
            |m: &Value| m["method"] == method.as_str() && m.get("id").is_some() == s.request;
        let found = self
            .wait_message(&s.on, within, |m| {
                of_kind(m) && matches_all(&m["params"], &matching)
            })
            .await?;
        let near = match found {
            Some(_) => None,
            None => self.near_misses(&s.on, |m| {
                of_kind(m) && !matches_all(&m["params"], &matching)
            }),
        };
        self.store_or_missing(
            found,
            &s.name,
            &s.level,
            &s.on,
            format!("a {method} notification{}", describe(&matching)),
            Miss { within, near },
        )
    }

    pub(super) async fn expect_closed(&mut self, s: &ExpectClosed) -> StepResult {
        let within = s.within_ms.map_or(self.ctx.timeout, Duration::from_millis);
        let settled = self.settled(None);
        let conn = self.conn(&s.on)?;
        let closed = if conn.is_closed() {
            true
        } else {
            let ping = ping_if(conn, settled).await;
            match conn
                .wait_for(within, |i| match i {
                    Incoming::Closed { .. } => true,
                    Incoming::Message(m) => {
                        ping.is_some_and(|id| crate::transport::is_response_to(m, id))
                    }
                    _ => false,
                })
                .await
            {
                Ok(Incoming::Message(_)) => false,
                Ok(_) | Err(TransportError::Closed) | Err(TransportError::Oversized) => true,
                Err(TransportError::Timeout(_)) => false,
                Err(error) => return Err(Stop::Harness(error.to_string())),
            }
        };
        if closed {
            Ok(())
        } else {
            self.broken(
                &s.level,
                &s.on,
                "the server closes the connection".into(),
                format!("still open after {} ms", within.as_millis()),
            )
        }
    }
}

/// Whether each array `filters` points to (in `document`) holds an element like the one
/// named (`holds`), or holds none (`!holds`).
fn lists(document: &Value, filters: &crate::suite::Matches, holds: bool) -> bool {
    filters.iter().all(|(pointer, element)| {
        let found = document
            .pointer(pointer)
            .and_then(Value::as_array)
            .is_some_and(|items| {
                items
                    .iter()
                    .any(|i| super::document::partial_match(i, element))
            });
        found == holds
    })
}
