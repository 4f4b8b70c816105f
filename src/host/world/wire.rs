//! Two small rules of the world's delivery: which connection may receive an action, and
//! which chat actions can change a projection.

use serde_json::Value;

use super::Version;

/// Whether a connection that negotiated `version` may receive an action introduced in
/// `introduced_in` (nothing newer than the negotiated version is sent).
pub(super) fn may_receive(version: Option<Version>, introduced_in: Version) -> bool {
    match version {
        Some(version) => introduced_in <= version,
        None => false,
    }
}

/// Whether a chat action can change a projection. Text streaming only grows a markdown or
/// reasoning part, which no summary field and no `inputNeeded` entry reads (the parts
/// [`World::live_chat_json`](super::World) leaves out).
pub(super) fn changes_projections(action: &Value) -> bool {
    const TEXT_ONLY: &[&str] = &["chat/delta", "chat/reasoning"];
    !action["type"]
        .as_str()
        .is_some_and(|kind| TEXT_ONLY.contains(&kind))
}
