//! Authentication (issue 25, auth): the protected resources this host advertises, the
//! tokens connections push with `authenticate`, their expiry (`auth/required` with reason
//! `expired`), the gate on sessions of the agent that needs a token (`-32007`), and the
//! tool calls of the scripted agent that wait for a token (`chat/toolCallAuthRequired`,
//! resolved by `authenticate` with `chat/toolCallAuthResolved`).
//!
//! Tokens belong to the connection that pushed them (a client authenticates for itself), and
//! the host accepts exactly one token, [`ACCEPTED_TOKEN`], for every resource it protects.

use std::time::Duration;

use ahp_types::commands::AuthenticateParams;
use serde_json::{json, Value};

pub use super::agents::{metadata, AGENT_RESOURCE, PROTECTED_PROVIDER, TOOL_RESOURCE};
use super::commands::RpcError;
use super::faults::Fault;
use super::world::{ConnId, World, ROOT};

/// The one token this host accepts, for either resource (a test token, not a secret of
/// anyone's; reports redact it all the same, as they do any profile token).
pub const ACCEPTED_TOKEN: &str = "ahpspec-test-token";
/// The customization id of the MCP server the scripted agent's authenticated tools come from.
pub const MCP_CUSTOMIZATION: &str = "ahpspec-mcp";

/// AuthRequired.
pub const AUTH_REQUIRED: i64 = -32007;

/// An AuthRequired error listing `resources` (or, for an answer to `authenticate` under the
/// auth-required-without-resources fault, no `data`).
fn auth_required(
    world: &World,
    message: &str,
    resources: &[&str],
    to_authenticate: bool,
) -> RpcError {
    let mut error = RpcError::new(AUTH_REQUIRED, message);
    if !(to_authenticate && world.fault(Fault::AuthRequiredWithoutResources)) {
        let resources: Vec<Value> = resources.iter().map(|r| metadata(r)).collect();
        error.data = Some(json!({ "resources": resources }));
    }
    error
}

impl World {
    /// `authenticate`: an advertised resource and the accepted token answer `{}` (and
    /// resume the tool calls waiting for that resource in sessions the connection follows);
    /// an empty token revokes; anything else (params that do not decode, an `expiresIn` below
    /// the schema's minimum of 1) is refused.
    pub(super) fn authenticate(&mut self, conn: ConnId, params: &Value) -> Result<Value, RpcError> {
        let anything = self.fault(Fault::AuthenticateAnything);
        let params: AuthenticateParams = match super::commands::parse(params) {
            Ok(params) => params,
            Err(_) if anything || self.fault(Fault::MalformedAuthenticateAccepted) => {
                return Ok(json!({}))
            }
            Err(error) => return Err(error),
        };
        let resource = params.resource.as_str();
        if resource != AGENT_RESOURCE && resource != TOOL_RESOURCE {
            if anything {
                return Ok(json!({}));
            }
            return Err(auth_required(
                self,
                &format!("unknown protected resource {resource:?}"),
                &[AGENT_RESOURCE, TOOL_RESOURCE],
                true,
            ));
        }
        if params.token.is_empty() {
            if !self.fault(Fault::RevocationIgnored) {
                self.auth_grants.revoke(conn, resource);
            }
            return Ok(json!({}));
        }
        // The schema's minimum is 1: a token's lifetime of zero or less is a malformed request
        // (the field is irrelevant to a revocation, above).
        if params.expires_in.is_some_and(|seconds| seconds < 1)
            && !self.fault(Fault::ZeroExpiryAccepted)
        {
            return Err(RpcError::new(
                super::commands::INVALID_PARAMS,
                "expiresIn must be a positive number of seconds",
            ));
        }
        let accepted = if self.fault(Fault::ValidTokenRefused) {
            false
        } else {
            params.token == ACCEPTED_TOKEN || self.fault(Fault::WrongTokenAccepted) || anything
        };
        if !accepted {
            return Err(auth_required(
                self,
                &format!("the token is not valid for {resource}"),
                &[resource],
                true,
            ));
        }
        let generation = self.auth_grants.grant(conn, resource);
        if let Some(seconds) = params.expires_in.filter(|s| *s > 0) {
            self.expire_later(conn, resource.to_owned(), generation, seconds as u64);
        }
        if (resource == TOOL_RESOURCE || self.fault(Fault::ToolAuthByAnyResource))
            && !self.fault(Fault::ToolAuthUnresolved)
        {
            self.resolve_tool_auth(conn);
        }
        Ok(json!({}))
    }

    /// The gate on sessions of the protected agent: `-32007` (with the resource) unless the
    /// connection pushed a token for it, and an `auth/required` (reason `required`) to it.
    pub(super) fn auth_gate(&self, conn: ConnId, provider: &str) -> Result<(), RpcError> {
        if provider != PROTECTED_PROVIDER
            || self.auth_grants.holds(conn, AGENT_RESOURCE)
            || self.fault(Fault::ProtectedAgentOpen)
        {
            return Ok(());
        }
        let message = format!("the {PROTECTED_PROVIDER} agent needs a token for {AGENT_RESOURCE}");
        let notice = super::world::notification(
            "auth/required",
            json!({ "channel": ROOT, "resource": metadata(AGENT_RESOURCE), "reason": "required" }),
        );
        self.notify_root_subscriber(conn, &notice);
        if self.fault(Fault::AuthRefusedInvalidParams) {
            return Err(RpcError::new(super::commands::INVALID_PARAMS, message));
        }
        Err(auth_required(self, &message, &[AGENT_RESOURCE], false))
    }

    /// After `seconds`, forgets the grant (unless pushed again or revoked meanwhile) and
    /// tells the connection with `auth/required` (reason `expired`).
    fn expire_later(&self, conn: ConnId, resource: String, generation: u64, seconds: u64) {
        // The timer holds the world weakly: a host shut down meanwhile is not kept alive.
        let shared = self.shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            let Some(shared) = shared.upgrade() else {
                return;
            };
            let mut world = shared.lock();
            let expired = if world.fault(Fault::StaleExpiryApplied) {
                world.auth_grants.revoke(conn, &resource);
                true
            } else {
                world.auth_grants.expire(conn, &resource, generation)
            };
            if expired {
                let notice = super::world::notification(
                    "auth/required",
                    json!({ "channel": ROOT, "resource": metadata(&resource), "reason": "expired" }),
                );
                world.notify_root_subscriber(conn, &notice);
            }
        });
    }

    /// Sends a root-channel notification to `conn` if it subscribes to the root channel
    /// (notifications go only to subscribers of their channel).
    fn notify_root_subscriber(&self, conn: ConnId, notice: &Value) {
        if self
            .conns
            .get(&conn)
            .is_some_and(|entry| entry.subscriptions.contains(ROOT))
        {
            self.send_to(conn, notice);
        }
    }

    /// Resumes every tool call waiting for [`TOOL_RESOURCE`] in the sessions `conn`
    /// subscribes to (or in their chats), or in every session under the host-wide variant:
    /// `chat/toolCallAuthResolved`.
    fn resolve_tool_auth(&mut self, conn: ConnId) {
        let Some(followed) = self.conns.get(&conn).map(|c| c.subscriptions.clone()) else {
            return;
        };
        let mut waiting = Vec::new();
        for (chat, entry) in &self.chats {
            // A client that follows either the chat or its session may answer the call. Each
            // fault ignores a client that follows only the one, so that together they still
            // leave a client following both.
            let (in_chat, in_session) =
                (followed.contains(chat), followed.contains(&entry.session));
            let follows_chat =
                in_chat && (in_session || !self.fault(Fault::TokenIgnoresChatFollowers));
            let follows_session =
                in_session && (in_chat || !self.fault(Fault::TokenIgnoresSessionFollowers));
            let anyone = self.config.variants.host_wide_tool_tokens;
            if !follows_chat && !follows_session && !anyone {
                continue;
            }
            let Some(turn) = entry.state.active_turn.as_ref() else {
                continue;
            };
            let parts = super::world::to_value(&turn.response_parts);
            for part in parts.as_array().into_iter().flatten() {
                let call = &part["toolCall"];
                if call["status"] == "auth-required"
                    && call["auth"]["resource"]["resource"] == TOOL_RESOURCE
                {
                    waiting.push((chat.clone(), turn.id.clone(), call["toolCallId"].clone()));
                }
            }
        }
        for (chat, turn_id, call_id) in waiting {
            self.emit_chat(
                &chat,
                json!({ "type": "chat/toolCallAuthResolved", "turnId": turn_id, "toolCallId": call_id }),
            );
        }
    }
}
