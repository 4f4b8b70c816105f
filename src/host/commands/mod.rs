//! JSON-RPC requests and client notifications other than `dispatchAction`.

use serde::de::DeserializeOwned;
use serde_json::Value;

use super::faults::Fault;
use super::world::{ConnId, Version, World};

// Issue 29, automations (i29c).
mod automations;
mod chat_sources;
// Issue 29, changesets (i29b).
mod changesets;
mod chats;
mod moves;
// Issue 25, session configuration and completions (i25b).
mod completions;
mod handshake;
mod resources;
mod sessions;
mod subscriptions;
mod watch;
// Issue 29, sub-agent worker chats (i29d).
mod workers;

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
pub(super) const NOT_FOUND: i64 = -32008;
const PERMISSION_DENIED: i64 = -32009;
const ALREADY_EXISTS: i64 = -32010;
const CONFLICT: i64 = -32011;

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

/// A terminal command's refusal as a JSON-RPC error.
fn refused(error: super::terminals::RpcError) -> RpcError {
    RpcError::new(error.code, error.message)
}

pub(super) fn parse<T: DeserializeOwned>(params: &Value) -> Result<T, RpcError> {
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
            // Issue 25, authentication (i25c).
            "authenticate" => Reply::of(self.authenticate(conn, params)),
            "completions" => Reply::of(self.completions(params)),
            "resolveSessionConfig" => Reply::of(self.resolve_session_config(params)),
            "sessionConfigCompletions" => Reply::of(self.session_config_completions(params)),
            "moveChat" => Reply::of(self.move_chat(params)),
            // Issue 25, resources (h25a): a real directory on disk.
            "resourceRead" | "resourceWrite" | "resourceList" | "resourceResolve"
            | "resourceDelete" | "resourceCopy" | "resourceMove" | "resourceMkdir"
            | "resourceRequest" => Reply::of(self.resource_command(method, params)),
            "createResourceWatch" => Reply::of(self.create_watch(conn, params)),
            // Issue 25, terminals (i25b).
            "createTerminal" => Reply::of(self.create_terminal(params).map_err(refused)),
            "disposeTerminal" => Reply::of(self.dispose_terminal(params).map_err(refused)),
            "invokeChangesetOperation" => Reply::of(self.invoke_changeset_operation(params)),
            "listAutomationTriggerDefinitions" => {
                Reply::of(self.list_automation_trigger_definitions(params))
            }
            "runAutomation" => Reply::of(self.run_automation(params)),
            "fetchAutomationRuns" => Reply::of(self.fetch_automation_runs(params)),
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
}

fn channel_param(params: &Value) -> Result<String, RpcError> {
    params
        .get("channel")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| RpcError::new(INVALID_PARAMS, "params.channel (string) is required"))
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
