//! JSON-RPC requests and client notifications other than `dispatchAction`.

use std::collections::HashSet;
use std::sync::Arc;

use ahp_types::commands::{
    CreateChatParams, CreateSessionParams, InitializeParams, ListSessionsParams, ReconnectParams,
    ResourceRequestParams, SubscribeParams,
};
use ahp_types::negotiate_protocol_version;
use ahp_types::state::{ChatState, SessionState};
use serde::de::DeserializeOwned;
use serde_json::{json, Value};
use tokio::sync::Notify;

use super::agents::{agent_for, provider_name};
use super::faults::Fault;
use super::projection::instant_key;
use super::world::{
    notification, now_iso, to_value, AgentKind, ChatEntry, ConnId, SessionEntry, Version, World,
    ROOT,
};

/// Versions (or caret ranges) this host accepts, as reported with `-32005`.
pub const SUPPORTED_RANGES: &[&str] = &["^1.0.0", "^0.9.0"];

/// A JSON-RPC error answer.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }
}

pub const INVALID_REQUEST: i64 = -32600;
pub const METHOD_NOT_FOUND: i64 = -32601;
pub const INVALID_PARAMS: i64 = -32602;
pub const INTERNAL_ERROR: i64 = -32603;
const SESSION_NOT_FOUND: i64 = -32001;
const PROVIDER_NOT_FOUND: i64 = -32002;
const SESSION_ALREADY_EXISTS: i64 = -32003;
const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32005;
/// Reserved and unassigned in 1.0.0; only the `reserved-error-code` fault uses it.
const RESERVED_ERROR: i64 = -32006;
const AUTH_REQUIRED: i64 = -32007;
const NOT_FOUND: i64 = -32008;
const PERMISSION_DENIED: i64 = -32009;
const ALREADY_EXISTS: i64 = -32010;

/// Work run right after a response is queued, still under the world lock.
pub type AfterReply = Box<dyn FnOnce(&mut World) + Send>;

/// The answer to one request.
pub struct Reply {
    pub result: Result<Value, RpcError>,
    /// Close the connection once the answer is sent (after `-32005`).
    pub close_after: bool,
    /// Work to do after the answer is queued (keeps "dispatch before respond" rules honest
    /// the other way round too).
    pub after: Option<AfterReply>,
}

impl Reply {
    fn of(result: Result<Value, RpcError>) -> Self {
        Reply {
            result,
            close_after: false,
            after: None,
        }
    }
}

/// Whether `text` is an absolute URI made only of characters RFC 3986 allows outside IP
/// literals (stricter than the RFC: a URI this refuses is answered as invalid params).
fn plain_uri(text: &str) -> bool {
    let Some((scheme, rest)) = text.split_once(':') else {
        return false;
    };
    let mut scheme_chars = scheme.chars();
    let scheme_ok = scheme_chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && scheme_chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let bytes = rest.as_bytes();
    let mut at = 0;
    while at < bytes.len() {
        let b = bytes[at];
        if b == b'%' {
            let hex = |i: usize| bytes.get(i).is_some_and(u8::is_ascii_hexdigit);
            if !(hex(at + 1) && hex(at + 2)) {
                return false;
            }
            at += 3;
            continue;
        }
        if !(b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/?#".contains(&b)) {
            return false;
        }
        at += 1;
    }
    scheme_ok && plain_authority(rest)
}

/// The authority of `rest` (after `scheme:`), if any: at most one `@`, and a port of digits.
fn plain_authority(rest: &str) -> bool {
    let Some(after) = rest.strip_prefix("//") else {
        return true;
    };
    let authority = after.split(['/', '?', '#']).next().unwrap_or_default();
    let mut parts = authority.split('@');
    let host = match (parts.next(), parts.next(), parts.next()) {
        (Some(host), None, _) | (Some(_), Some(host), None) => host,
        _ => return false,
    };
    host.split_once(':')
        .is_none_or(|(_, port)| port.bytes().all(|b| b.is_ascii_digit()))
}

fn parse<T: DeserializeOwned>(params: &Value) -> Result<T, RpcError> {
    serde_json::from_value(params.clone())
        .map_err(|e| RpcError::new(INVALID_PARAMS, format!("invalid params: {e}")))
}

impl World {
    /// Answers one request. `ping` is handled by the connection layer.
    pub fn handle_request(&mut self, conn: ConnId, method: &str, params: &Value) -> Reply {
        self.apply_parked_before_request(conn, params);
        let initialized = self.conns.get(&conn).is_some_and(|c| c.client_id.is_some());
        match method {
            "initialize" if initialized => {
                Reply::of(Err(RpcError::new(INVALID_REQUEST, "already initialized")))
            }
            "reconnect" if initialized => {
                Reply::of(Err(RpcError::new(INVALID_REQUEST, "already initialized")))
            }
            "initialize" => self.initialize(conn, params),
            "reconnect" => self.reconnect(conn, params),
            _ if !initialized && is_known_method(method) => Reply::of(Err(RpcError::new(
                INVALID_REQUEST,
                "the connection must be initialized first (send initialize or reconnect)",
            ))),
            "subscribe" => Reply::of(self.subscribe(conn, params)),
            "listSessions" => Reply::of(self.list_sessions(conn, params)),
            "createSession" => Reply::of(self.create_session(conn, params)),
            "disposeSession" => Reply::of(self.dispose_session(conn, params)),
            "createChat" if self.fault(Fault::ChatAddedAfterResponse) => {
                self.create_chat_announced_late(conn, params)
            }
            "createChat" => Reply::of(self.create_chat(conn, params)),
            "disposeChat" => Reply::of(self.dispose_chat(params)),
            "fetchTurns" => self.fetch_turns(params),
            "authenticate" if self.fault(Fault::AuthenticateAnything) => Reply::of(Ok(json!({}))),
            "authenticate" => Reply::of(Err(self.auth_required())),
            "completions" => Reply::of(self.existing_chat(params).map(|_| json!({ "items": [] }))),
            "resolveSessionConfig" => Reply::of(self.resolve_session_config(params)),
            "sessionConfigCompletions" => Reply::of(Ok(json!({ "items": [] }))),
            "moveChat" => Reply::of(self.move_chat(params)),
            "resourceResolve" if self.fault(Fault::ResolveMissingWrongCode) => {
                Reply::of(Err(RpcError::new(INVALID_PARAMS, "no such resource")))
            }
            "resourceRead" | "resourceList" | "resourceResolve" | "resourceDelete"
            | "resourceCopy" | "resourceMove" => Reply::of(Err(RpcError::new(
                NOT_FOUND,
                "this host exposes no resources",
            ))),
            // Only well-formed params are echoed in the denial's data (ERR-003); others are
            // invalid params, like any method's.
            "resourceRequest" => Reply::of(Err(match parse::<ResourceRequestParams>(params) {
                Ok(p) if plain_uri(&p.channel) && plain_uri(&p.uri) => self.request_denied(params),
                Ok(_) => RpcError::new(INVALID_PARAMS, "channel and uri must be URIs"),
                Err(error) => error,
            })),
            "resourceWrite" | "resourceMkdir" | "createResourceWatch" | "createTerminal" => {
                Reply::of(Err(RpcError::new(
                    PERMISSION_DENIED,
                    "this host does not grant file-system or terminal access",
                )))
            }
            "disposeTerminal"
            | "invokeChangesetOperation"
            | "listAutomationTriggerDefinitions"
            | "runAutomation"
            | "fetchAutomationRuns" => Reply::of(Err(RpcError::new(
                NOT_FOUND,
                "no such channel on this host",
            ))),
            _ => {
                let code = if self.fault(Fault::WrongMethodNotFound) {
                    INTERNAL_ERROR
                } else {
                    METHOD_NOT_FOUND
                };
                Reply::of(Err(RpcError::new(
                    code,
                    format!("method not found: {method}"),
                )))
            }
        }
    }

    fn initialize(&mut self, conn: ConnId, params: &Value) -> Reply {
        let params: InitializeParams = match parse(params) {
            Ok(params) => params,
            Err(error) => return Reply::of(Err(error)),
        };
        if params.protocol_versions.is_empty() && self.fault(Fault::EmptyOfferInvalidParams) {
            return Reply::of(Err(RpcError::new(
                INVALID_PARAMS,
                "protocolVersions must not be empty",
            )));
        }
        let (chosen, version) = match self.negotiate(&params.protocol_versions) {
            Ok(Some(pair)) => pair,
            Ok(None) => {
                let code = if self.refuses_old_offer_as_invalid(&params.protocol_versions) {
                    INVALID_REQUEST
                } else {
                    UNSUPPORTED_PROTOCOL_VERSION
                };
                let mut error =
                    RpcError::new(code, "none of the offered protocol versions is supported");
                if !self.fault(Fault::NoSupportedVersions) {
                    error.data = Some(json!({ "supportedVersions": SUPPORTED_RANGES }));
                }
                return Reply {
                    result: Err(error),
                    close_after: !self.fault(Fault::NoCloseAfterVersionError),
                    after: None,
                };
            }
            Err(message) => return Reply::of(Err(RpcError::new(INVALID_PARAMS, message))),
        };
        if self.fault(Fault::InitializeError) && params.protocol_versions == ["1.0.0"] {
            return Reply::of(Err(RpcError::new(
                INTERNAL_ERROR,
                "initialization failed (injected fault)",
            )));
        }
        let snapshots: Vec<Value> = params
            .initial_subscriptions
            .iter()
            .flatten()
            .filter_map(|uri| {
                let snapshot = self.snapshot(uri, None)?;
                self.subscribe_conn(conn, uri);
                Some(snapshot)
            })
            .collect();
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.client_id = Some(params.client_id.clone());
            entry.version = Some(version);
        }
        self.client_versions.insert(params.client_id, version);
        let mut result = json!({
            "protocolVersion": chosen,
            "serverSeq": self.seq,
            "snapshots": snapshots,
            "serverInfo": { "name": "ahpspec-reference-host", "version": env!("CARGO_PKG_VERSION") },
        });
        if self.fault(Fault::LegacyUri) {
            result["defaultDirectory"] = json!("agenthost:/workspace");
        }
        self.break_initialize_result(&mut result);
        let binary = self.fault(Fault::BinaryFrame);
        let no_channel = self.fault(Fault::NotificationWithoutChannel);
        let after: Option<AfterReply> = (binary || no_channel).then(|| {
            Box::new(move |world: &mut World| {
                if let Some(entry) = world.conns.get(&conn) {
                    if binary {
                        let _ = entry
                            .tx
                            .send(super::world::Outbound::Binary(vec![0, 1, 2, 3]));
                    }
                    if no_channel {
                        entry.send_json(&notification("ahpspec/heartbeat", json!({})));
                    }
                }
            }) as AfterReply
        });
        Reply {
            result: Ok(result),
            close_after: false,
            after,
        }
    }

    /// Picks the version: (the string answered, the version the connection then speaks).
    /// Faults bend the choice.
    fn negotiate(&self, offered: &[String]) -> Result<Option<(String, Version)>, String> {
        if let Some(lenient) = self.lenient_two_part_version(offered) {
            return Ok(Some(lenient));
        }
        let offered = &self.considered_offers(offered);
        let Some(best) = negotiate_protocol_version(offered)?.map(str::to_owned) else {
            return Ok(None);
        };
        let speaks = parse_version(&best).unwrap_or((1, 0, 0));
        let own = ahp_types::PROTOCOL_VERSION.to_owned();
        if self.fault(Fault::VersionNotOffered) && !offered.contains(&own) {
            return Ok(Some((own, speaks)));
        }
        if self.fault(Fault::LowestVersion) {
            let lowest = offered
                .iter()
                .filter(|v| {
                    negotiate_protocol_version(std::slice::from_ref(*v))
                        .ok()
                        .flatten()
                        .is_some()
                })
                .min_by_key(|v| parse_version(v))
                .cloned()
                .unwrap_or(best);
            let speaks = parse_version(&lowest).unwrap_or(speaks);
            return Ok(Some((lowest, speaks)));
        }
        Ok(Some((best, speaks)))
    }

    fn reconnect(&mut self, conn: ConnId, params: &Value) -> Reply {
        let params: ReconnectParams = match parse(params) {
            Ok(params) => params,
            Err(error) => return Reply::of(Err(error)),
        };
        let version = self
            .client_versions
            .get(&params.client_id)
            .copied()
            .unwrap_or((1, 0, 0));
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.client_id = Some(params.client_id.clone());
            entry.version = Some(version);
        }
        let (present, missing): (Vec<String>, Vec<String>) = params
            .subscriptions
            .iter()
            .cloned()
            .partition(|uri| self.channel_kind(uri).is_some());
        for uri in &present {
            self.subscribe_conn(conn, uri);
        }
        let last_seen = u64::try_from(params.last_seen_server_seq).unwrap_or(0);
        let replayable = params.last_seen_server_seq >= 0
            && last_seen >= self.replay_floor
            && last_seen <= self.seq;
        let mut held_back = None;
        let result = if replayable {
            let from = if self.fault(Fault::ReplayWrongRange) {
                last_seen
            } else {
                last_seen + 1
            };
            let mut actions: Vec<Value> = self
                .replay
                .iter()
                .filter(|r| {
                    r.seq >= from && present.contains(&r.channel) && r.introduced_in <= version
                })
                .map(|r| r.envelope.clone())
                .collect();
            held_back = self.break_replay(&mut actions);
            let missing = if self.fault(Fault::MissingNotListed) {
                Vec::new()
            } else {
                missing
            };
            let kind = self.replay_kind(&actions, &missing);
            json!({ "type": kind, "actions": actions, "missing": missing })
        } else {
            let snapshots: Vec<Value> = present
                .iter()
                .filter_map(|uri| self.snapshot(uri, None))
                .collect();
            json!({ "type": "snapshot", "snapshots": snapshots })
        };
        let client_id = params.client_id;
        let kept: HashSet<String> = present.into_iter().collect();
        let after: AfterReply = Box::new(move |world: &mut World| {
            if let Some(envelope) = held_back {
                world.send_to(conn, &notification("action", envelope));
            }
            if !world.fault(Fault::ReconnectKeepsActiveClient) {
                world.drop_active_client_outside(&client_id, &kept);
            }
            if world.fault(Fault::ReplayNotifications) {
                let summaries: Vec<Value> = world
                    .sessions
                    .keys()
                    .filter_map(|uri| world.session_summary(uri))
                    .collect();
                for summary in summaries {
                    world.send_to(
                        conn,
                        &notification(
                            "root/sessionAdded",
                            json!({ "channel": ROOT, "summary": summary }),
                        ),
                    );
                }
            }
        });
        Reply {
            result: Ok(result),
            close_after: false,
            after: Some(after),
        }
    }

    /// Removes `client_id` from `activeClients` of every session not in `kept`.
    pub fn drop_active_client_outside(&mut self, client_id: &str, kept: &HashSet<String>) {
        let sessions: Vec<String> = self
            .sessions
            .iter()
            .filter(|(uri, entry)| {
                !kept.contains(*uri)
                    && entry
                        .state
                        .active_clients
                        .iter()
                        .any(|c| c.client_id == client_id)
            })
            .map(|(uri, _)| uri.clone())
            .collect();
        for session in sessions {
            self.emit_logged(
                &session,
                json!({ "type": "session/activeClientRemoved", "clientId": client_id }),
            );
        }
    }

    pub fn subscribe_conn(&mut self, conn: ConnId, uri: &str) {
        self.subscribed_at.insert(uri.to_owned(), self.seq);
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.subscriptions.insert(uri.to_owned());
        }
    }

    fn subscribe(&mut self, conn: ConnId, params: &Value) -> Result<Value, RpcError> {
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
        match self.snapshot(&params.channel, view_turns) {
            Some(mut snapshot) => {
                self.break_subscribe_snapshot(&mut snapshot, view_turns.is_some());
                self.subscribe_conn(conn, &params.channel);
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
        let keep_sending = self.fault(Fault::ActionAfterUnsubscribe);
        let keeps_client = self.fault(Fault::UnsubscribeKeepsActiveClient);
        let Some(entry) = self.conns.get_mut(&conn) else {
            return;
        };
        if !keep_sending {
            entry.subscriptions.remove(channel);
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

    /// The answer to `authenticate`: this host protects no resource, so the token is for
    /// none of them (AuthRequired, listing the protected resources: none).
    fn auth_required(&self) -> RpcError {
        let mut error = RpcError::new(
            AUTH_REQUIRED,
            "unknown protected resource: this host advertises none",
        );
        if !self.fault(Fault::AuthRequiredWithoutResources) {
            error.data = Some(json!({ "resources": [] }));
        }
        error
    }

    /// The answer to `resourceRequest`: access is never granted; the denial names the
    /// request it refuses.
    fn request_denied(&self, params: &Value) -> RpcError {
        let mut error = RpcError::new(
            PERMISSION_DENIED,
            "this host does not grant file-system access",
        );
        let request = if self.fault(Fault::PermissionDeniedBadData) {
            params["uri"].clone()
        } else {
            params.clone()
        };
        error.data = Some(json!({ "request": request }));
        error
    }

    /// No chat of this host is movable: every move is refused (the
    /// `move-non-movable-accepted` fault answers success and moves nothing).
    fn move_chat(&self, params: &Value) -> Result<Value, RpcError> {
        let chat = self.existing_chat(params)?;
        let owner = self.chats.get(&chat).map(|chat| chat.session.clone());
        match owner {
            Some(session) if self.fault(Fault::MoveNonMovableAccepted) => {
                Ok(json!({ "session": session }))
            }
            _ => Err(RpcError::new(INVALID_PARAMS, "the chat is not movable")),
        }
    }

    fn list_sessions(&self, conn: ConnId, params: &Value) -> Result<Value, RpcError> {
        if let Some(key) = self.unknown_list_sessions_key(params) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("unknown member {key:?}"),
            ));
        }
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
        items.sort_by(|a, b| {
            instant_key(&b["modifiedAt"])
                .cmp(&instant_key(&a["modifiedAt"]))
                .then_with(|| a["resource"].as_str().cmp(&b["resource"].as_str()))
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
            Some(limit) => usize::try_from(limit).unwrap_or(usize::MAX),
            None => usize::MAX,
        };
        let end = start.saturating_add(limit).min(items.len());
        let page: Vec<Value> = items[start..end].to_vec();
        let mut result = json!({ "items": page });
        if end < items.len() {
            result["nextCursor"] = json!(format!("offset:{end}"));
        }
        Ok(result)
    }

    fn create_session(&mut self, conn: ConnId, params: &Value) -> Result<Value, RpcError> {
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
        let agent = match agent_for(params.provider.as_deref()) {
            Some(agent) => agent,
            None if self.fault(Fault::UnknownProviderOk) => AgentKind::Scripted,
            None => {
                return Err(RpcError::new(
                    PROVIDER_NOT_FOUND,
                    format!("unknown provider {:?}", params.provider.unwrap_or_default()),
                ))
            }
        };
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
        let now = now_iso();
        let chat_uri = self.fresh_id("ahp-chat:/chat-");
        let mut chat_state = new_chat(&chat_uri, "Chat", &now, None)?;
        if self.fault(Fault::DefaultChatMovable) {
            chat_state.movable = Some(true);
        }
        let session_state: SessionState = serde_json::from_value(json!({
            "provider": provider_name(agent),
            "title": "New session",
            "status": 1,
            "workingDirectories": params.working_directories,
            "lifecycle": "creating",
            "activeClients": params.active_client.iter().map(to_value).collect::<Vec<_>>(),
            "chats": [chat_summary(&chat_state)],
            "defaultChat": chat_uri,
        }))
        .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("building session state: {e}")))?;
        self.sessions.insert(
            uri.clone(),
            SessionEntry {
                state: session_state,
                created_at: now,
                published_summary: Value::Null,
            },
        );
        self.insert_chat(&uri, chat_state);
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
        if let Some(token) = &params.progress_token {
            self.notify_subscribers(
                ROOT,
                "root/progress",
                json!({ "channel": ROOT, "progressToken": token, "progress": 0, "total": 1,
                        "message": "initialising the session" }),
            );
        }
        self.finish_creation_later(uri, agent, params.progress_token);
        Ok(Value::Null)
    }

    fn insert_chat(&mut self, session: &str, state: ChatState) {
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
    fn finish_creation_later(&self, uri: String, agent: AgentKind, token: Option<String>) {
        let Some(shared) = self.shared.upgrade() else {
            return;
        };
        let init = self.session_init_time();
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
            if world.fault(Fault::SessionsNeverReady) && matches!(agent, AgentKind::Scripted) {
                return;
            }
            let action = match agent {
                AgentKind::Scripted => json!({ "type": "session/ready" }),
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

    fn publish_active_sessions(&mut self) {
        if self.fault(Fault::NoActiveSessionsChanged) {
            return;
        }
        let count = self.sessions.len();
        self.emit_logged(
            ROOT,
            json!({ "type": "root/activeSessionsChanged", "activeSessions": count }),
        );
    }

    fn dispose_session(&mut self, conn: ConnId, params: &Value) -> Result<Value, RpcError> {
        let uri = channel_param(params)?;
        if self.fault(Fault::DisposedStillListed) {
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
            self.forget_channel(&chat);
        }
        self.forget_channel(&uri);
        if !self.fault(Fault::NoSessionRemoved) {
            self.notify_subscribers(
                ROOT,
                "root/sessionRemoved",
                json!({ "channel": ROOT, "session": uri }),
            );
        }
        self.publish_active_sessions();
        Ok(Value::Null)
    }

    /// Drops a channel that no longer exists from every subscription set.
    fn forget_channel(&mut self, uri: &str) {
        for conn in self.conns.values_mut() {
            conn.subscriptions.remove(uri);
        }
    }

    pub(super) fn create_chat(&mut self, conn: ConnId, params: &Value) -> Result<Value, RpcError> {
        let params: CreateChatParams = parse(params)?;
        let session = params.channel.clone();
        let Some(entry) = self.sessions.get(&session) else {
            if self.fault(Fault::ChatInMissingSessionOk) {
                return Ok(Value::Null);
            }
            return Err(RpcError::new(
                SESSION_NOT_FOUND,
                format!("no such session: {session}"),
            ));
        };
        if params.source.is_some() && !self.fault(Fault::UnsupportedSourceAccepted) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "this agent supports neither forked nor side chats",
            ));
        }
        if !params.chat.starts_with("ahp-chat:/") || params.chat.len() <= "ahp-chat:/".len() {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "a chat URI must start with ahp-chat:/",
            ));
        }
        if self.chats.contains_key(&params.chat) {
            return Err(RpcError::new(
                ALREADY_EXISTS,
                format!("{} already exists", params.chat),
            ));
        }
        let checked_directories = params
            .working_directories
            .as_ref()
            .filter(|_| !self.fault(Fault::ChatOutsideDirectoryAccepted));
        if let Some(dirs) = checked_directories {
            let allowed = entry
                .state
                .working_directories
                .as_deref()
                .unwrap_or_default();
            if let Some(outside) = dirs.iter().find(|d| !allowed.contains(d)) {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("{outside} is not a working directory of the session"),
                ));
            }
        }
        let state = new_chat(
            &params.chat,
            "Chat",
            &now_iso(),
            params.working_directories.clone(),
        )?;
        let summary = chat_summary(&state);
        self.insert_chat(&session, state);
        self.emit_logged(
            &session,
            json!({ "type": "session/chatAdded", "summary": summary }),
        );
        self.sync_projections(&session);
        if let Some(message) = params.initial_message {
            let client_id = self.conns.get(&conn).and_then(|c| c.client_id.clone());
            let turn_id = self.fresh_id("turn-");
            let text = message.text.clone();
            let action = json!({ "type": "chat/turnStarted", "turnId": turn_id,
                                 "startedAt": now_iso(), "message": to_value(&message) });
            if self.emit_chat(&params.chat, action).is_some() {
                self.run_message(&params.chat, &turn_id, &text, client_id);
            }
        }
        Ok(Value::Null)
    }

    fn dispose_chat(&mut self, params: &Value) -> Result<Value, RpcError> {
        let uri = channel_param(params)?;
        let Some(session) = self.chats.get(&uri).map(|c| c.session.clone()) else {
            return Err(RpcError::new(NOT_FOUND, format!("no such chat: {uri}")));
        };
        self.stop_agent(&uri);
        self.chats.remove(&uri);
        self.forget_channel(&uri);
        let unannounced = self.fault(Fault::NoChatRemoved) && !self.is_default_chat(&session, &uri);
        if !unannounced {
            self.emit_logged(
                &session,
                json!({ "type": "session/chatRemoved", "chat": uri }),
            );
        }
        if self.fault(Fault::DefaultChatRestored) {
            self.restore_default_chat(&session, &uri);
        }
        self.sync_projections(&session);
        Ok(Value::Null)
    }

    fn fetch_turns(&mut self, params: &Value) -> Reply {
        let chat = match self.existing_chat(params) {
            Ok(chat) => chat,
            Err(error) => return Reply::of(Err(error)),
        };
        let cursor = params.get("cursor").and_then(Value::as_str);
        let Some(entry) = self.chats.get(&chat) else {
            return Reply::of(Err(RpcError::new(NOT_FOUND, "no such chat")));
        };
        let turns = &entry.state.turns;
        let cut = match cursor {
            None | Some("before-active") => Some(turns.len()),
            Some(cursor) => cursor
                .strip_prefix("before:")
                .and_then(|id| turns.iter().position(|t| t.id == id)),
        };
        let Some(cut) = cut else {
            return Reply::of(Err(RpcError::new(
                INVALID_PARAMS,
                format!("unknown cursor {:?}", cursor.unwrap_or_default()),
            )));
        };
        let mut older = turns.get(..cut).unwrap_or_default().to_vec();
        if self.fault(Fault::TurnsLoadedNewestFirst) {
            older.reverse();
        }
        let older = to_value(&older);
        let action = json!({ "type": "chat/turnsLoaded", "turns": older });
        if self.fault(Fault::TurnsLoadedAfterResponse) {
            let after: AfterReply = Box::new(move |world: &mut World| {
                world.emit_logged(&chat, action);
            });
            return Reply {
                result: Ok(json!({})),
                close_after: false,
                after: Some(after),
            };
        }
        self.emit_logged(&chat, action);
        if let Some(entry) = self.chats.get_mut(&chat) {
            entry.windowed = false;
        }
        Reply::of(Ok(json!({})))
    }

    fn resolve_session_config(&self, params: &Value) -> Result<Value, RpcError> {
        let provider = params.get("provider").and_then(Value::as_str);
        if agent_for(provider).is_none() {
            return Err(RpcError::new(PROVIDER_NOT_FOUND, "unknown provider"));
        }
        Ok(json!({ "schema": { "type": "object", "properties": {} }, "values": {} }))
    }

    /// The chat named by `params.channel`, which must exist.
    fn existing_chat(&self, params: &Value) -> Result<String, RpcError> {
        let uri = channel_param(params)?;
        if self.chats.contains_key(&uri) {
            Ok(uri)
        } else {
            Err(RpcError::new(NOT_FOUND, format!("no such chat: {uri}")))
        }
    }
}

fn channel_param(params: &Value) -> Result<String, RpcError> {
    params
        .get("channel")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| RpcError::new(INVALID_PARAMS, "params.channel (string) is required"))
}

fn new_chat(
    uri: &str,
    title: &str,
    now: &str,
    working_directories: Option<Vec<String>>,
) -> Result<ChatState, RpcError> {
    serde_json::from_value(json!({
        "resource": uri, "title": title, "status": 1, "modifiedAt": now,
        "workingDirectories": working_directories, "turns": [],
    }))
    .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("building chat state: {e}")))
}

fn chat_summary(chat: &ChatState) -> Value {
    Value::Object(super::projection::chat_summary(&to_value(chat)))
}

/// Whether `method` is one of the protocol's client→host requests.
pub fn is_known_method(method: &str) -> bool {
    matches!(
        method,
        "subscribe"
            | "listSessions"
            | "createSession"
            | "disposeSession"
            | "createChat"
            | "disposeChat"
            | "moveChat"
            | "fetchTurns"
            | "authenticate"
            | "completions"
            | "resolveSessionConfig"
            | "sessionConfigCompletions"
            | "resourceRead"
            | "resourceWrite"
            | "resourceList"
            | "resourceCopy"
            | "resourceMove"
            | "resourceDelete"
            | "resourceResolve"
            | "resourceMkdir"
            | "resourceRequest"
            | "createResourceWatch"
            | "createTerminal"
            | "disposeTerminal"
            | "invokeChangesetOperation"
            | "listAutomationTriggerDefinitions"
            | "runAutomation"
            | "fetchAutomationRuns"
    )
}

/// Parses a strict `MAJOR.MINOR.PATCH` version.
pub fn parse_version(text: &str) -> Option<Version> {
    let mut parts = text.split('.');
    let mut next = || -> Option<u64> {
        let part = parts.next()?;
        if part.is_empty() || (part.len() > 1 && part.starts_with('0')) {
            return None;
        }
        part.parse().ok()
    };
    let version = (next()?, next()?, next()?);
    parts.next().is_none().then_some(version)
}
