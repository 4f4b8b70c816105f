//! The `mcp://` side-channel (MCP Apps). The echo MCP server's customization advertises an
//! MCP App whose capabilities are `serverTools` only, and once the server is ready it gets
//! a channel (`session/mcpServerStateChanged.channel`). A request naming that channel is
//! MCP relayed verbatim: the `serverTools` methods (`tools/list`, `tools/call`) are served
//! from the server's one tool, every other method is `-32601` (MCP-001). The App and the
//! channel are shown only to clients that declared `capabilities.mcpApps` (INIT-006): for
//! the others every frame is stripped of them as it goes out, so what they fold and what
//! their snapshots say agree.
//!
//! The routing key is read from `params.channel`, as every AHP request carries it, and from
//! a top-level `channel` member (the specification's page names the key "top-level"
//! without saying of what): docs/status.md lists the ambiguity.

use serde_json::{json, Value};

use super::commands::{RpcError, INVALID_PARAMS, METHOD_NOT_FOUND, NOT_FOUND};
use super::customizations::ECHO_SERVER;
use super::faults::Fault;
use super::world::World;

/// The scheme of the MCP side-channels.
pub const MCP_SCHEME: &str = "mcp://";

/// The MCP App the echo server advertises: it proxies the `serverTools` methods only.
pub fn echo_app() -> Value {
    json!({ "capabilities": { "serverTools": {} } })
}

/// The channel of MCP server `server` in session `session` (`ahp-session:/<id>`).
pub fn channel_of(session: &str, server: &str) -> String {
    let id = session.strip_prefix("ahp-session:/").unwrap_or(session);
    format!("{MCP_SCHEME}{server}/{id}")
}

/// The `mcp://` channel a request names, if any.
pub fn requested_channel<'v>(message: &'v Value, params: &'v Value) -> Option<&'v str> {
    [params.get("channel"), message.get("channel")]
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find(|channel| channel.starts_with(MCP_SCHEME))
}

/// Whether a frame's text may carry what only mcpApps clients are shown (a cheap test
/// before [`strip_mcp_apps`] parses it).
pub fn may_show_mcp_apps(text: &str) -> bool {
    text.contains("\"mcpApp\"") || text.contains("\"mcp://")
}

/// Removes from `value`, at any depth, the MCP App and channel of every MCP server
/// customization and the channel of every `session/mcpServerStateChanged`.
pub fn strip_mcp_apps(value: &mut Value) {
    match value {
        Value::Object(object) => {
            match object.get("type").and_then(Value::as_str) {
                Some("mcpServer") => {
                    object.remove("mcpApp");
                    object.remove("channel");
                }
                Some("session/mcpServerStateChanged") => {
                    object.remove("channel");
                }
                _ => {}
            }
            object.values_mut().for_each(strip_mcp_apps);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_mcp_apps),
        _ => {}
    }
}

impl World {
    /// Whether every client is shown MCP Apps: under `session-mcp-apps-to-all`, and under
    /// `mcp-app-unasked`, whose root snapshot's App would otherwise be stripped on its way.
    pub(super) fn shows_mcp_apps_to_all(&self) -> bool {
        self.fault(Fault::SessionMcpAppsToAll) || self.fault(Fault::McpAppUnasked)
    }

    /// Answers an MCP request on `channel`: the served `serverTools` methods of the echo
    /// server whose channel it is, `-32601` for every other method.
    pub(super) fn mcp_request(
        &self,
        channel: &str,
        method: &str,
        params: &Value,
    ) -> Result<Value, RpcError> {
        let open = self.sessions.iter().any(|(uri, entry)| {
            let listed = entry.state.customizations.iter().flatten();
            listed
                .map(super::world::to_value)
                .any(|c| c["id"] == ECHO_SERVER && c["channel"] == channel_of(uri, ECHO_SERVER))
        });
        if !open {
            return Err(RpcError::new(
                NOT_FOUND,
                format!("no MCP channel {channel}"),
            ));
        }
        match method {
            "tools/list" if !self.fault(Fault::McpToolsUnserved) => Ok(json!({ "tools": [{
                "name": "echo", "description": "Answers with its input.",
                "inputSchema": { "type": "object", "properties": { "text": { "type": "string" } } },
            }] })),
            "tools/call" if params["name"] == "echo" => {
                let text = params["arguments"]["text"].as_str().unwrap_or_default();
                Ok(json!({ "content": [{ "type": "text", "text": text }], "isError": false }))
            }
            "tools/call" => Err(RpcError::new(
                INVALID_PARAMS,
                format!("unknown tool {}", params["name"]),
            )),
            // Outside serverTools, the one capability the App advertises.
            "resources/list" if self.fault(Fault::McpUnadvertisedServed) => {
                Ok(json!({ "resources": [] }))
            }
            _ => Err(RpcError::new(
                METHOD_NOT_FOUND,
                format!("{method} is not served on this MCP channel"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stripping_leaves_servers_without_their_app_and_channel() {
        let mut state = json!({ "customizations": [
            { "type": "mcpServer", "id": "a", "mcpApp": echo_app(), "channel": "mcp://a/s" },
            { "type": "plugin", "id": "p", "channel": "kept" },
        ], "action": { "type": "session/mcpServerStateChanged", "id": "a", "channel": "mcp://a/s" } });
        strip_mcp_apps(&mut state);
        assert_eq!(
            state["customizations"][0],
            json!({ "type": "mcpServer", "id": "a" })
        );
        assert_eq!(state["customizations"][1]["channel"], "kept");
        assert!(state["action"].get("channel").is_none());
    }

    #[test]
    fn the_channel_is_read_from_params_or_the_message() {
        let params = json!({ "channel": "mcp://x/1" });
        assert_eq!(requested_channel(&json!({}), &params), Some("mcp://x/1"));
        let message = json!({ "channel": "mcp://x/2" });
        assert_eq!(requested_channel(&message, &json!({})), Some("mcp://x/2"));
        assert_eq!(
            requested_channel(&json!({}), &json!({ "channel": "ahp-root://" })),
            None
        );
        assert_eq!(channel_of("ahp-session:/s1", "echo"), "mcp://echo/s1");
    }
}
