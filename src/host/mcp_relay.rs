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
use super::mcp_apps::MCP_SCHEME;
use super::world::World;

impl World {
    /// Whether every client is shown MCP Apps: under `session-mcp-apps-to-all`, and under
    /// `mcp-app-unasked`, whose root snapshot's App would otherwise be stripped on its way.
    /// Whether `client_id`'s connections are shown MCP Apps: it declared `mcpApps` at its
    /// initialize (a reconnect resumes that), or a fault shows them to every client —
    /// `session-mcp-apps-to-all`, and `mcp-app-unasked`, whose root snapshot's App would
    /// otherwise be stripped on its way.
    pub(super) fn shows_mcp_apps(&self, client_id: &str) -> bool {
        self.client_mcp_apps.contains(client_id)
            || self.fault(Fault::SessionMcpAppsToAll)
            || self.fault(Fault::McpAppUnasked)
    }

    /// Answers an MCP request on `channel`: the served `serverTools` methods of the echo
    /// server whose channel it is, `-32601` for every other method.
    pub(super) fn mcp_request(
        &self,
        channel: &str,
        method: &str,
        params: &Value,
    ) -> Result<Value, RpcError> {
        // The channel names its server and session (`channel_of`); it is open while the
        // session lists the server with that channel (the server is ready).
        let session = channel
            .strip_prefix(MCP_SCHEME)
            .and_then(|rest| rest.strip_prefix(ECHO_SERVER))
            .and_then(|rest| rest.strip_prefix('/'))
            .map(|id| format!("ahp-session:/{id}"));
        let open = session
            .and_then(|uri| self.customization(&uri, ECHO_SERVER))
            .is_some_and(|server| server["channel"] == channel);
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
            "tools/call" if params["name"] == "echo" && !self.fault(Fault::McpToolCallUnserved) => {
                let text = params["arguments"]["text"].as_str().unwrap_or_default();
                Ok(json!({ "content": [{ "type": "text", "text": text }], "isError": false }))
            }
            // Under mcp-unknown-tool-unserved an unknown tool falls through to -32601.
            "tools/call" if !self.fault(Fault::McpUnknownToolUnserved) => Err(RpcError::new(
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
