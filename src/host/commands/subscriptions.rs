//! `subscribe` (a request) and `unsubscribe` (a notification).

use ahp_types::commands::SubscribeParams;
use serde_json::{json, Value};

use super::{parse, RpcError, INTERNAL_ERROR, INVALID_PARAMS, NOT_FOUND, SESSION_NOT_FOUND};
use crate::host::faults::Fault;
use crate::host::world::{ConnId, World};

impl World {
    pub fn subscribe_conn(&mut self, conn: ConnId, uri: &str) {
        self.subscribed_at.insert(uri.to_owned(), self.seq);
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.subscriptions.insert(uri.to_owned());
        }
        if let Some(watch) = self.watches.get_mut(uri) {
            watch.subscribed = true;
        }
    }

    pub(super) fn subscribe(&mut self, conn: ConnId, params: &Value) -> Result<Value, RpcError> {
        let params: SubscribeParams = parse(params).map_err(|mut error| {
            if self.fault(Fault::SubscribeParamsInternalError) {
                error.code = INTERNAL_ERROR;
            }
            error
        })?;
        let view_turns = params
            .view
            .as_ref()
            .and_then(|v| v.turns)
            .filter(|_| self.config.turn_windows);
        if self.refuses_root_subscribe(conn, &params.channel) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "the root channel is only subscribable at initialize (injected fault)",
            ));
        }
        if crate::host::telemetry::is_stateless(&params.channel) {
            // A stateless channel: no snapshot (SUB-006).
            self.subscribe_conn(conn, &params.channel);
            if self.fault(Fault::StatelessSnapshot) {
                // A snapshot valid in shape (the root's state), on a channel that has none.
                if let Some(mut snapshot) = self.snapshot(crate::host::world::ROOT, None) {
                    snapshot["resource"] = json!(params.channel);
                    return Ok(json!({ "snapshot": snapshot }));
                }
            }
            return Ok(json!({}));
        }
        match self.snapshot(&params.channel, view_turns) {
            Some(mut snapshot) => {
                self.break_subscribe_snapshot(&mut snapshot, view_turns.is_some());
                self.subscribe_conn(conn, &params.channel);
                let budget = params
                    .delivery
                    .as_ref()
                    .and_then(|d| d.max_latency_ms)
                    .is_some_and(|ms| ms > 0);
                if let Some(entry) = self.conns.get_mut(&conn).filter(|_| budget) {
                    entry.coalesced.insert(params.channel.clone());
                }
                Ok(json!({ "snapshot": snapshot }))
            }
            None if self.fault(Fault::SubscribeUnknownOk)
                && params.channel.starts_with("ahp-session:/") =>
            {
                Ok(
                    json!({ "snapshot": { "resource": params.channel, "fromSeq": self.seq,
                    "state": { "provider": "none", "title": "", "status": 1, "lifecycle": "ready",
                               "activeClients": [], "chats": [] } } }),
                )
            }
            None if params.channel.starts_with("ahp-session:/") => Err(RpcError::new(
                SESSION_NOT_FOUND,
                format!("no such session: {}", params.channel),
            )),
            None => Err(RpcError::new(
                NOT_FOUND,
                format!("no such channel: {}", params.channel),
            )),
        }
    }

    /// Handles the `unsubscribe` notification.
    pub fn unsubscribe(&mut self, conn: ConnId, params: &Value) {
        let Some(channel) = params.get("channel").and_then(Value::as_str) else {
            return;
        };
        // The fault keeps session channels only (other channels' traffic, such as the
        // telemetry logs, is not a session's actions).
        let keep_sending =
            self.fault(Fault::ActionAfterUnsubscribe) && self.sessions.contains_key(channel);
        let keeps_client = self.fault(Fault::UnsubscribeKeepsActiveClient);
        let Some(entry) = self.conns.get_mut(&conn) else {
            return;
        };
        if !keep_sending {
            entry.subscriptions.remove(channel);
        }
        if channel.starts_with(crate::host::watches::WATCH_SCHEME) {
            self.release_watches();
            return;
        }
        let client_id = entry.client_id.clone().filter(|_| !keeps_client);
        if let (Some(client_id), Some(session)) = (client_id, self.sessions.get(channel)) {
            if session
                .state
                .active_clients
                .iter()
                .any(|c| c.client_id == client_id)
            {
                self.emit_logged(
                    channel,
                    json!({ "type": "session/activeClientRemoved", "clientId": client_id }),
                );
            }
        }
    }
}
