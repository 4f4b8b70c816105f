//! Fault injection for the connection lifecycle: initialize results and root snapshots that
//! break INIT-*, version offers read the wrong way (VERSION-*), and request params judged
//! too strictly (TRANSPORT-013).

use std::time::Duration;

use serde_json::{json, Value};

use super::commands::parse_version;
use super::faults::Fault;
use super::world::{ConnId, Version, World, ROOT};

/// The newest 1.x minor the `known-minors-only` fault accepts.
const NEWEST_KNOWN_MINOR: u64 = 2;

/// Session initialisation time under `creating-lifecycle-unknown`.
const SLOW_SESSION_INIT: Duration = Duration::from_millis(200);

/// The params members of `listSessions` (ahp-types `ListSessionsParams`).
const LIST_SESSIONS_KEYS: &[&str] = &["channel", "_meta", "limit", "cursor"];

impl World {
    /// Breaks an initialize result as the active fault says.
    pub(super) fn break_initialize_result(&self, result: &mut Value) {
        let server_seq = result["serverSeq"].as_u64().unwrap_or(0);
        if let Some(snapshots) = result["snapshots"].as_array_mut() {
            if self.fault(Fault::RootFromSeqAhead) {
                for snapshot in snapshots.iter_mut().filter(|s| s["resource"] == ROOT) {
                    snapshot["fromSeq"] = json!(server_seq + 1);
                }
            }
            if self.fault(Fault::RootSnapshotTwice) {
                if let Some(root) = snapshots.iter().find(|s| s["resource"] == ROOT).cloned() {
                    snapshots.push(root);
                }
            }
        }
        if self.fault(Fault::RootWithoutAgents) {
            for snapshot in result["snapshots"].as_array_mut().into_iter().flatten() {
                if let Some(state) = snapshot["state"].as_object_mut() {
                    state.remove("agents");
                }
            }
        }
        if self.fault(Fault::ServerInfoNameless) {
            if let Some(info) = result["serverInfo"].as_object_mut() {
                info.remove("name");
            }
        }
    }

    /// Breaks a root snapshot's state as the active fault says (see
    /// [`World::break_root_agents`]).
    pub(super) fn break_root_snapshot(&self, state: &mut Value) {
        if let Some(agents) = state.get_mut("agents") {
            self.break_root_agents(agents);
        }
    }

    /// Breaks an agent list (a root snapshot's, or a `root/agentsChanged`'s) as the active
    /// fault says: the scripted agent gains an MCP server customization carrying an MCP App,
    /// which only clients that declared the `mcpApps` capability may be shown (and this host
    /// never checks). Snapshots and announcements show the same agents, so the fault breaks
    /// what it advertises (INIT-006), not whether changes are announced (ROOT-013).
    pub(super) fn break_root_agents(&self, agents: &mut Value) {
        if !self.fault(Fault::McpAppUnasked) {
            return;
        }
        let app_server = json!({
            "type": "mcpServer",
            "id": "ahpspec-apps",
            "uri": "mcp://ahpspec-apps",
            "name": "ahpspec apps",
            "state": { "kind": "ready" },
            "mcpApp": { "capabilities": {} },
        });
        if let Some(agent) = agents.get_mut(0).and_then(Value::as_object_mut) {
            agent.insert("customizations".to_owned(), json!([app_server]));
        }
    }

    /// Breaks the lifecycle members of a session snapshot as the active fault says.
    pub(super) fn break_session_lifecycle(&self, state: &mut Value) {
        let failed = state["lifecycle"] == "failed";
        if state["lifecycle"] == "creating" && self.fault(Fault::CreatingLifecycleUnknown) {
            state["lifecycle"] = json!("pending");
        }
        if failed && self.fault(Fault::FailedAsCreationFailed) {
            state["lifecycle"] = json!("creationFailed");
        }
        if failed && self.fault(Fault::FailedWithoutError) {
            if let Some(state) = state.as_object_mut() {
                state.remove("creationError");
            }
        }
    }

    /// How long a session takes to initialise. Under `creating-lifecycle-unknown` at least
    /// [`SLOW_SESSION_INIT`], so that a subscribe right after createSession reliably meets
    /// the creating state the fault mislabels, however loaded the machine.
    pub(super) fn session_init_time(&self) -> Duration {
        if self.fault(Fault::CreatingLifecycleUnknown) {
            self.config.session_init.max(SLOW_SESSION_INIT)
        } else {
            self.config.session_init
        }
    }

    /// Under `rejects-unknown-keys`: the first `listSessions` params member the host does
    /// not know.
    pub(super) fn unknown_list_sessions_key(&self, params: &Value) -> Option<String> {
        if !self.fault(Fault::RejectsUnknownKeys) {
            return None;
        }
        params
            .as_object()?
            .keys()
            .find(|key| !LIST_SESSIONS_KEYS.contains(&key.as_str()))
            .cloned()
    }

    /// The offers negotiation considers: under `known-minors-only`, 1.x versions newer
    /// than 1.2.x are dropped as unknown (malformed entries stay, so they still fail).
    pub(super) fn considered_offers(&self, offered: &[String]) -> Vec<String> {
        let known = |version: &String| match parse_version(version) {
            Some((1, minor, _)) => minor <= NEWEST_KNOWN_MINOR,
            _ => true,
        };
        offered
            .iter()
            .filter(|v| !self.fault(Fault::KnownMinorsOnly) || known(v))
            .cloned()
            .collect()
    }

    /// Under `two-part-version-selected`: the first offer of the form `MAJOR.MINOR`,
    /// read as `MAJOR.MINOR.0`.
    pub(super) fn lenient_two_part_version(&self, offered: &[String]) -> Option<(String, Version)> {
        if !self.fault(Fault::TwoPartVersionSelected) {
            return None;
        }
        offered.iter().find_map(|offer| {
            let read = parse_version(&format!("{offer}.0"))?;
            (offer.split('.').count() == 2).then(|| (offer.clone(), read))
        })
    }

    /// Under `old-offers-invalid-request`: whether a refused offer is one of only 0.x
    /// versions (answered with -32600 instead of -32005).
    pub(super) fn refuses_old_offer_as_invalid(&self, offered: &[String]) -> bool {
        self.fault(Fault::OldOffersInvalidRequest)
            && !offered.is_empty()
            && offered
                .iter()
                .all(|v| matches!(parse_version(v), Some((0, _, _))))
    }
}

/// The group of connections a clientId belongs to under `binary-wedges-peers`: everything
/// before its last '-' (a client application's connections share it).
fn client_group(client_id: &str) -> &str {
    client_id
        .rsplit_once('-')
        .map_or(client_id, |(group, _)| group)
}

impl World {
    /// Under `binary-wedges-peers`: a binary frame from `sender` wedges the other
    /// connections of its clientId group.
    pub(super) fn wedge_sibling_connections(&mut self, sender: ConnId) {
        if self.fault(Fault::BinaryWedgesPeers) {
            self.wedge_group_of(sender, Some(sender));
        }
    }

    /// Under `deep-nesting-wedges`: a frame of `text` nested deeper than
    /// [`WEDGING_DEPTH`] wedges every connection of the sender's clientId group, the
    /// sender's own too. Returns whether it did (the frame is then not answered either).
    pub(super) fn wedge_on_deep_frame(&mut self, sender: ConnId, text: &str) -> bool {
        if !self.fault(Fault::DeepNestingWedges) || nesting_depth(text) <= WEDGING_DEPTH {
            return false;
        }
        self.wedge_group_of(sender, None);
        true
    }

    fn wedge_group_of(&mut self, sender: ConnId, spared: Option<ConnId>) {
        let group = self
            .conns
            .get(&sender)
            .and_then(|entry| entry.client_id.as_deref())
            .map(|id| client_group(id).to_owned());
        if let Some(group) = group {
            self.wedged_groups.push((spared, group));
        }
    }

    /// Whether `conn` was wedged: by a binary frame on a sibling connection, or by a too
    /// deep frame from its client application.
    pub(super) fn wedged_by_sibling(&self, conn: ConnId) -> bool {
        let Some(client_id) = self.conns.get(&conn).and_then(|e| e.client_id.as_deref()) else {
            return false;
        };
        let group = client_group(client_id);
        self.wedged_groups
            .iter()
            .any(|(spared, wedged)| *spared != Some(conn) && wedged == group)
    }
}

/// The nesting depth under `deep-nesting-wedges` beyond which a frame wedges its client.
const WEDGING_DEPTH: usize = 1_000;

/// The deepest nesting of arrays and objects in `text`, brackets inside strings not
/// counted (a byte scan: the frame need not be valid JSON).
fn nesting_depth(text: &str) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for byte in text.bytes() {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::nesting_depth;

    #[test]
    fn nesting_depth_counts_brackets_outside_strings() {
        assert_eq!(nesting_depth("{}"), 1);
        assert_eq!(nesting_depth(r#"{"a":[[1],{"b":[]}]}"#), 4);
        assert_eq!(nesting_depth(r#"{"a":"[[[[\"[[["}"#), 1);
        assert_eq!(
            nesting_depth(&format!("{}{}", "[".repeat(1001), "]".repeat(1001))),
            1001
        );
        // Not JSON: unbalanced brackets still count as they open.
        assert_eq!(nesting_depth("[[[ garbage"), 3);
    }
}
