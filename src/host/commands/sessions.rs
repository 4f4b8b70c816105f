//! Session requests: `listSessions`, `createSession`, `disposeSession`,
//! `resolveSessionConfig`.

use std::sync::Arc;

use ahp_types::commands::{CreateSessionParams, ListSessionsParams};
use ahp_types::state::{ChatState, SessionState};
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::chats::{chat_summary, new_chat};
use super::{
    channel_param, parse, RpcError, INTERNAL_ERROR, INVALID_PARAMS, PROVIDER_NOT_FOUND,
    RESERVED_ERROR, SESSION_ALREADY_EXISTS, SESSION_NOT_FOUND,
};
use crate::host::agents::{agent_for, provider_name, AgentKind};
use crate::host::faults::Fault;
use crate::host::projection::instant_key;
use crate::host::session_config;
use crate::host::telemetry::Severity;
use crate::host::world::{now_iso, to_value, ChatEntry, ConnId, SessionEntry, World, ROOT};

/// How long the agent that never starts takes to give up (see `finish_creation_later`).
const UNAVAILABLE_GIVES_UP: std::time::Duration = std::time::Duration::from_millis(250);

impl World {
    pub(super) fn list_sessions(&self, conn: ConnId, params: &Value) -> Result<Value, RpcError> {
        if let Some(key) = self.unknown_list_sessions_key(params) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("unknown member {key:?}"),
            ));
        }
        let unchecked;
        let params = match params.get("limit") {
            Some(limit) if !limit.is_u64() && self.fault(Fault::ListLimitUnchecked) => {
                unchecked = without(params, "limit");
                &unchecked
            }
            _ => params,
        };
        let params: ListSessionsParams = parse(params)?;
        let mut items: Vec<Value> = self
            .sessions
            .keys()
            .filter_map(|uri| self.session_summary(uri))
            .collect();
        for item in &mut items {
            if self.fault(Fault::ListedIdleWhileBusy) {
                if let Some(status) = item["status"].as_u64() {
                    item["status"] = json!((status & !31) | 1);
                }
            }
            self.break_listed_summary(item);
        }
        items.extend(
            self.listed_after_dispose
                .iter()
                .filter(|(to, _)| *to == conn)
                .map(|(_, summary)| summary.clone()),
        );
        // Newest first, then by URI; each timestamp parsed once.
        items.sort_by_cached_key(|item| {
            (
                std::cmp::Reverse(instant_key(&item["modifiedAt"])),
                item["resource"].as_str().map(str::to_owned),
            )
        });
        if self.fault(Fault::SessionsOldestFirst) {
            items.reverse();
        }
        let start = match params.cursor.as_deref() {
            None => 0,
            Some(cursor) => match cursor
                .strip_prefix("offset:")
                .and_then(|n| n.parse::<usize>().ok())
                .filter(|n| *n <= items.len())
            {
                Some(start) => start,
                None if self.fault(Fault::UnknownCursorRestarts) => 0,
                None => {
                    return Err(RpcError::new(
                        INVALID_PARAMS,
                        format!("unknown cursor {cursor:?}"),
                    ))
                }
            },
        };
        let limit = match params.limit {
            Some(limit) if limit < 1 => {
                return Err(RpcError::new(INVALID_PARAMS, "limit must be at least 1"))
            }
            Some(limit) if limit > 1 && self.fault(Fault::LimitOverCapRefused) => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    "limit above the page size (1)",
                ))
            }
            Some(_) if self.fault(Fault::LimitIgnored) => usize::MAX,
            Some(limit) => usize::try_from(limit).unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        let listed = items.len();
        let end = start.saturating_add(limit).min(listed);
        items.truncate(end);
        let page: Vec<Value> = items.drain(start..).collect();
        let mut result = json!({ "items": page });
        if end < listed {
            result["nextCursor"] = json!(format!("offset:{end}"));
        }
        Ok(result)
    }

    pub(super) fn create_session(
        &mut self,
        conn: ConnId,
        params: &Value,
    ) -> Result<Value, RpcError> {
        let params: CreateSessionParams = parse(params)?;
        let uri = params.channel.clone();
        if !uri.starts_with("ahp-session:/") || uri.len() <= "ahp-session:/".len() {
            let code = if self.fault(Fault::ReservedErrorCode) {
                RESERVED_ERROR
            } else {
                INVALID_PARAMS
            };
            return Err(RpcError::new(
                code,
                "a session URI must start with ahp-session:/",
            ));
        }
        if self.sessions.contains_key(&uri) {
            if self.fault(Fault::DuplicateSessionOk) {
                return Ok(Value::Null);
            }
            return Err(RpcError::new(
                SESSION_ALREADY_EXISTS,
                format!("{uri} already exists"),
            ));
        }
        let without_protected = self.config.variants.no_protected_agent;
        let agent = match agent_for(params.provider.as_deref())
            .filter(|agent| !(without_protected && *agent == AgentKind::Protected))
        {
            Some(agent) => agent,
            None if self.fault(Fault::UnknownProviderOk) => AgentKind::Scripted,
            None => {
                return Err(RpcError::new(
                    PROVIDER_NOT_FOUND,
                    format!("unknown provider {:?}", params.provider.unwrap_or_default()),
                ))
            }
        };
        self.auth_gate(conn, provider_name(agent))?;
        if let Some(unknown) = params
            .working_directories
            .as_deref()
            .and_then(|directories| self.unknown_directory(directories))
        {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("unknown working directory {unknown}"),
            ));
        }
        let client_id = self.conns.get(&conn).and_then(|c| c.client_id.clone());
        if let Some(active) = &params.active_client {
            if Some(&active.client_id) != client_id.as_ref()
                && !self.fault(Fault::ForeignActiveClientOk)
            {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    "activeClient.clientId must be this connection's clientId",
                ));
            }
        }
        self.insert_new_session(&uri, agent, &params, None)?;
        self.announce_session(uri, agent, params.progress_token);
        Ok(Value::Null)
    }

    /// Publishes a new session (`root/sessionAdded`, the session count) and readies it
    /// later, reporting progress to `progress_token` when a client asked for it.
    pub(super) fn announce_session(
        &mut self,
        uri: String,
        agent: AgentKind,
        progress_token: Option<String>,
    ) {
        let summary = self.session_summary(&uri).unwrap_or(Value::Null);
        if let Some(entry) = self.sessions.get_mut(&uri) {
            entry.published_summary = summary.clone();
        }
        if !self.fault(Fault::NoSessionAdded) {
            self.notify_subscribers(
                ROOT,
                "root/sessionAdded",
                json!({ "channel": ROOT, "summary": summary }),
            );
        }
        self.publish_active_sessions();
        self.log(Severity::Info, &format!("session {uri} created"));
        if let Some(token) = &progress_token {
            self.notify_subscribers(
                ROOT,
                "root/progress",
                json!({ "channel": ROOT, "progressToken": token, "progress": 0, "total": 1,
                        "message": "initialising the session" }),
            );
        }
        self.finish_creation_later(uri, agent, progress_token);
    }

    /// Stores a new session (`creating`) with its default chat: a new one, or the existing
    /// chat `adopted` (a chat moved into a new session), which then belongs to it.
    pub(super) fn insert_new_session(
        &mut self,
        uri: &str,
        agent: AgentKind,
        params: &CreateSessionParams,
        adopted: Option<&str>,
    ) -> Result<(), RpcError> {
        let now = now_iso();
        let config = if self.fault(Fault::SessionConfigIgnored) {
            session_config::resolve(None)
        } else {
            session_config::resolve(params.config.as_ref())
        };
        let chat_state = match adopted.and_then(|chat| self.chats.get(chat)) {
            Some(entry) => entry.state.clone(),
            None => {
                let chat_uri = self.fresh_id("ahp-chat:/chat-");
                let mut chat_state = new_chat(&chat_uri, "Chat", &now, None)?;
                if self.fault(Fault::DefaultChatMovable) {
                    chat_state.movable = Some(true);
                }
                chat_state
            }
        };
        let chat_uri = chat_state.resource.clone();
        let session_state: SessionState = serde_json::from_value(json!({
            "provider": provider_name(agent),
            "title": "New session",
            "status": 1,
            "workingDirectories": params.working_directories,
            "lifecycle": "creating",
            "activeClients": params.active_client.iter().map(to_value).collect::<Vec<_>>(),
            "chats": [chat_summary(&chat_state)],
            "defaultChat": chat_uri,
            // The configuration the client resolved (resolveSessionConfig): one property
            // it may change during the session, others it may not (SESSION-014).
            "config": { "schema": session_config::schema(&config), "values": config },
            // Issue 29 (i29d): a plugin and two MCP servers, stopped.
            "customizations": crate::host::customizations::initial(),
        }))
        .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("building session state: {e}")))?;
        self.sessions.insert(
            uri.to_owned(),
            SessionEntry {
                state: session_state,
                created_at: now,
                published_summary: Value::Null,
            },
        );
        match adopted.and_then(|chat| self.chats.get_mut(chat)) {
            Some(entry) => entry.session = uri.to_owned(),
            None => self.insert_chat(uri, chat_state),
        }
        self.open_annotations(uri);
        Ok(())
    }

    pub(super) fn insert_chat(&mut self, session: &str, state: ChatState) {
        self.chats.insert(
            state.resource.clone(),
            ChatEntry {
                session: session.to_owned(),
                state,
                runner: None,
                changed: Arc::new(Notify::new()),
                windowed: false,
                resumes: Default::default(),
            },
        );
    }

    /// Initialises the session asynchronously: `session/ready` (or `creationFailed`) and the
    /// final `root/progress` frame (after the first, 0 of 1, sent on creation) when the
    /// client asked for progress.
    pub(super) fn finish_creation_later(
        &self,
        uri: String,
        agent: AgentKind,
        token: Option<String>,
    ) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let init = match agent {
            // An agent that never starts gives up a while later, as a real one does after
            // its start-up attempt: a client that subscribes right after createSession's
            // answer sees the session creating and then session/creationFailed on the wire,
            // even on a loaded machine (not only the failed state in its snapshot).
            // A host configured to initialise at once (the fuzzer's) gives up at once too:
            // its clients judge the failed lifecycle in the snapshot as well as on the wire.
            AgentKind::Unavailable => match self.session_init_time() {
                now if now.is_zero() => now,
                init => init.max(UNAVAILABLE_GIVES_UP),
            },
            AgentKind::Scripted | AgentKind::Protected => self.session_init_time(),
        };
        tokio::spawn(async move {
            // Initialising takes a moment, as with a real agent: subscribers see `creating`.
            if init.is_zero() {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(init).await;
            }
            let mut world = shared.lock();
            if !world.sessions.contains_key(&uri) {
                return;
            }
            if world.fault(Fault::SessionsNeverReady)
                && matches!(agent, AgentKind::Scripted | AgentKind::Protected)
            {
                return;
            }
            let action = match agent {
                AgentKind::Scripted | AgentKind::Protected => json!({ "type": "session/ready" }),
                AgentKind::Unavailable => json!({ "type": "session/creationFailed",
                    "error": { "errorType": "AgentUnavailable",
                               "message": "the ahpspec-unavailable agent never starts" } }),
            };
            world.emit_logged(&uri, action);
            if world.fault(Fault::ActionOnWrongChannel) {
                world.emit_logged(&uri, json!({ "type": "chat/activityChanged" }));
            }
            world.sync_projections(&uri);
            if let Some(token) = token.filter(|_| !world.fault(Fault::ProgressNeverFinal)) {
                world.notify_subscribers(
                    ROOT,
                    "root/progress",
                    json!({ "channel": ROOT, "progressToken": token, "progress": 1, "total": 1,
                            "message": "session initialised" }),
                );
            }
        });
    }

    pub(super) fn publish_active_sessions(&mut self) {
        if self.fault(Fault::NoActiveSessionsChanged) {
            return;
        }
        let count = self.sessions.len();
        self.emit_logged(
            ROOT,
            json!({ "type": "root/activeSessionsChanged", "activeSessions": count }),
        );
    }

    pub(super) fn dispose_session(
        &mut self,
        conn: ConnId,
        params: &Value,
    ) -> Result<Value, RpcError> {
        let uri = channel_param(params)?;
        let had_turn = self.sessions.get(&uri).is_some_and(|entry| {
            entry.state.chats.iter().any(|chat| {
                self.chats
                    .get(&chat.resource)
                    .is_some_and(|c| !c.state.turns.is_empty() || c.state.active_turn.is_some())
            })
        });
        if self.fault(Fault::DisposedStillListed)
            || (had_turn && self.fault(Fault::BusyDisposedListed))
        {
            if let Some(summary) = self.session_summary(&uri) {
                self.listed_after_dispose.push((conn, summary));
            }
        }
        let Some(entry) = self.sessions.remove(&uri) else {
            return Err(RpcError::new(
                SESSION_NOT_FOUND,
                format!("no such session: {uri}"),
            ));
        };
        for chat in entry.state.chats.iter().map(|c| c.resource.clone()) {
            self.stop_agent(&chat);
            self.chats.remove(&chat);
            self.drop_canvases(&chat);
            self.forget_channel(&chat);
        }
        if !self.fault(Fault::DisposedSubscriptionsKept) {
            self.forget_channel(&uri);
        }
        self.drop_changesets(&uri);
        self.unlink_run_session(&uri);
        self.drop_annotations(&uri);
        if !self.fault(Fault::NoSessionRemoved) {
            self.notify_subscribers(
                ROOT,
                "root/sessionRemoved",
                json!({ "channel": ROOT, "session": uri }),
            );
        }
        self.log(Severity::Info, &format!("session {uri} disposed"));
        self.publish_active_sessions();
        Ok(Value::Null)
    }

    /// Drops a channel that no longer exists from every subscription set.
    pub(super) fn forget_channel(&mut self, uri: &str) {
        for conn in self.conns.values_mut() {
            conn.subscriptions.remove(uri);
        }
    }
}

/// `params` without the member `name`.
fn without(params: &Value, name: &str) -> Value {
    let mut params = params.clone();
    if let Some(object) = params.as_object_mut() {
        object.remove(name);
    }
    params
}
