//! What of MCP Apps a client is shown, and how an `mcp://` channel is named and found in a
//! request: pure helpers of the relay (src/host/mcp_relay.rs) and of every connection's
//! outbound frames (`ConnEntry::send_text`), which strips Apps and channels for clients that
//! did not declare `capabilities.mcpApps`.

use serde_json::{json, Value};

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
/// customization and the channel of every `session/mcpServerStateChanged` (unless
/// `state_changes_kept`: a fault's partial strip).
pub fn strip_mcp_apps(value: &mut Value, state_changes_kept: bool) {
    match value {
        Value::Object(object) => {
            match object.get("type").and_then(Value::as_str) {
                Some("mcpServer") => {
                    object.remove("mcpApp");
                    object.remove("channel");
                }
                Some("session/mcpServerStateChanged") if !state_changes_kept => {
                    object.remove("channel");
                }
                _ => {}
            }
            object
                .values_mut()
                .for_each(|v| strip_mcp_apps(v, state_changes_kept));
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(|v| strip_mcp_apps(v, state_changes_kept)),
        _ => {}
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
        strip_mcp_apps(&mut state, false);
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
