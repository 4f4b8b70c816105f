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
use super::mcp_apps::{channel_of, MCP_SCHEME};
use super::world::World;

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
        // The channel names its server and session (`channel_of`); it is open while the
        // session lists the server with that channel (the server is ready).
        let session = channel
            .strip_prefix(MCP_SCHEME)
            .and_then(|rest| rest.strip_prefix(ECHO_SERVER))
            .and_then(|rest| rest.strip_prefix('/'))
            .map(|id| format!("ahp-session:/{id}"));
        let open = session.as_deref().is_some_and(|uri| {
            let listed = self
                .sessions
                .get(uri)
                .and_then(|e| e.state.customizations.as_ref());
            listed
                .into_iter()
                .flatten()
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
