//! The routines about what a client chooses and where it stays active: a confirmation
//! option chosen by id and stored on the tool call (TOOL-005), and a client that reconnects
//! without a session it was active in leaving that session's activeClients (RECONNECT-008).

use serde_json::{json, Value};

use super::{echo_before_ping, finding, ok, rejected, Finding};
use crate::checks::frame::clip;
use crate::checks::invariants::tool_calls;
use crate::checks::Rule;
use crate::client::{Conn, Offer, DEFAULT_OFFER, ROOT};
use crate::fuzz::exec::{Failure, Run};
use crate::fuzz::ops::{Behaviour, Op};

/// The tool call waiting for confirmation in `chat`'s active turn that offers an approving
/// option: the turn's id, the call's id and the option's id.
fn pending_choice(chat: &Value) -> Option<(Value, Value, Value)> {
    let turn = chat.get("activeTurn").filter(|t| !t.is_null())?;
    tool_calls(turn).find_map(|call| {
        let option = call["options"]
            .as_array()?
            .iter()
            .find(|o| o["kind"] == "approve")?;
        (call["status"] == "pending-confirmation").then(|| {
            (
                turn["id"].clone(),
                call["toolCallId"].clone(),
                option["id"].clone(),
            )
        })
    })
}

/// The tool call `call` of turn `turn` in a chat state, ended or active.
fn tool_call<'a>(chat: &'a Value, turn: &Value, call: &Value) -> Option<&'a Value> {
    let ended = chat["turns"].as_array().into_iter().flatten();
    ended
        .chain(chat.get("activeTurn"))
        .find(|t| t["id"] == *turn)
        .and_then(|t| tool_calls(t).find(|c| c["toolCallId"] == *call))
}

impl Run<'_> {
    /// A tool call waiting for confirmation (a `tool-ask` turn started when the chat is idle
    /// and the profile promises options) approved by choosing its approving option's id: a
    /// new subscriber's snapshot holds that option as the call's selectedOption (TOOL-005).
    pub(super) async fn choose_option(
        &mut self,
        index: usize,
        client: usize,
    ) -> Result<Option<Finding>, Failure> {
        if !self.cfg.profile.provides("tool-ask.options") {
            return Ok(None);
        }
        let chat = |run: &Run<'_>| run.conns[0].mirror().state(&run.chat);
        let state = chat(self).unwrap_or(Value::Null);
        if pending_choice(&state).is_none() && state["activeTurn"].is_null() {
            let start = Op::StartTurn {
                client: client as u8,
                behaviour: Behaviour::ToolAsk,
            };
            if let Some(failure) = self.dispatch(index, &[&start]).await {
                return Err(failure);
            }
        }
        let Some((turn, call, option)) = chat(self).as_ref().and_then(pending_choice) else {
            return Ok(None);
        };
        let action = json!({ "type": "chat/toolCallConfirmed", "turnId": turn, "toolCallId": call,
                             "approved": true, "confirmed": "user-action", "selectedOptionId": option });
        let timeout = self.cfg.timeout;
        let channel = self.chat.clone();
        let echo = echo_before_ping(&mut self.conns[client], &channel, &action, timeout).await;
        self.exec.operations += 1;
        // Refused (another client came first) or never echoed (DISPATCH-001's): no choice.
        if echo.as_ref().is_none_or(rejected) {
            return Ok(None);
        }
        self.settle().await;
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Ok(Some(found)),
        };
        let subscribed = link.subscribe_immediate(&channel, timeout).await;
        link.close().await;
        self.exec.operations += 1;
        let Ok(subscribed) = subscribed else {
            return Ok(None);
        };
        let snapshot = subscribed
            .pointer("/result/snapshot/state")
            .unwrap_or(&Value::Null);
        let Some(stored) = tool_call(snapshot, &turn, &call) else {
            return Ok(None);
        };
        if stored.pointer("/selectedOption/id") != Some(&option) {
            return Ok(finding(
                Rule::Tool005,
                &format!("the tool call confirmed with selectedOptionId {option} holds that option as selectedOption"),
                clip(&stored.to_string()),
            ));
        }
        Ok(None)
    }

    /// A new connection becomes active in the session (session/activeClientSet), drops, and
    /// reconnects listing the root channel only: the first client, subscribed to the session,
    /// hears session/activeClientRemoved for it by the answer to a ping sent after the
    /// reconnect's answer (RECONNECT-008).
    pub(super) async fn leave_on_reconnect(&mut self, index: usize) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let client_id = format!("ahpspec-{}-leaver-{index}", self.token);
        let connect = || Conn::connect(&self.url, timeout, "leaver", &client_id);
        let mut link = match connect().await {
            Ok(link) => link.sharing(&self.invalid),
            Err(error) => return finding(Rule::Fuzz001, "a new connection", error.to_string()),
        };
        // Initialize and subscribe are every sequence's set-up, judged there.
        let joined = link
            .initialize(&Offer::of([DEFAULT_OFFER]), timeout)
            .await
            .is_ok()
            && ok(&link.subscribe_immediate(&self.session, timeout).await);
        let join = json!({ "type": "session/activeClientSet",
                           "activeClient": { "clientId": client_id, "tools": [] } });
        let echo = match joined {
            true => echo_before_ping(&mut link, &self.session, &join, timeout).await,
            false => None,
        };
        self.exec.operations += 1;
        let last_seen = link.highest_seq();
        link.close().await;
        if echo.as_ref().is_none_or(rejected) {
            return None;
        }
        let mut back = match connect().await {
            Ok(back) => back.sharing(&self.invalid),
            Err(error) => return finding(Rule::Fuzz001, "a new connection", error.to_string()),
        };
        let from = self.conns[0].frame_count();
        let answer = back.reconnect(last_seen, [ROOT], timeout).await;
        back.close().await;
        self.exec.operations += 1;
        // A refused reconnect is RECONNECT-001's matter.
        if !ok(&answer) {
            return None;
        }
        let _ = self.conns[0].ping(timeout).await;
        let session = self.session.clone();
        let removed = self.conns[0].received_since(from).any(|m| {
            m["method"] == "action"
                && m["params"]["channel"] == session.as_str()
                && m["params"]["action"]["type"] == "session/activeClientRemoved"
                && m["params"]["action"]["clientId"] == client_id.as_str()
        });
        if !removed {
            return finding(
                Rule::Reconnect008,
                "session/activeClientRemoved for a client whose reconnect leaves the session out",
                format!("none for {client_id} by the answer to a later ping"),
            );
        }
        None
    }
}
