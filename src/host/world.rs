//! The host's whole state: channels (root, sessions, chats), connections and their
//! subscriptions, the host-wide `serverSeq` counter and the replay buffer.
//!
//! Every mutation happens under one lock, synchronously: an action is folded through the
//! official reducers, numbered, and pushed onto each subscriber's outbound queue before the
//! lock is released. That is what makes the per-connection wire order match `serverSeq`.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;

use ahp::reducers::{
    apply_action_to_chat, apply_action_to_root, apply_action_to_session, apply_action_to_terminal,
};
use ahp_types::actions::StateAction;
use ahp_types::state::{ChatState, RootState, SessionState};
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, Notify};
use tokio_tungstenite::tungstenite::Utf8Bytes;

// The fault that parks dispatches and the host's conforming variants are parts of the
// world's behaviour, written apart.
mod capabilities;
// Issue 29, changesets and annotations (i29b).
pub mod annotations;
// Issue 29, canvases and chat snapshots (i29d).
pub mod canvases;
pub mod changesets;
mod chat_snapshot;
mod swap;
pub mod variants;
// Which connection receives what, and which actions refresh projections (issue 29: moved out).
mod wire;
use wire::{changes_projections, may_receive};

use super::catalog::action_info;
use super::faults::{Fault, FaultSet};

/// How far past its serverSeq the `snapshot-seq-ahead` fault puts a session snapshot's fromSeq.
const SNAPSHOT_LEAD: u64 = 1_000;

/// Identifies one WebSocket connection for the lifetime of the host.
pub type ConnId = u64;

/// What a connection's writer task sends.
#[derive(Debug, Clone)]
pub enum Outbound {
    /// One text frame.
    Text(Utf8Bytes),
    /// One binary frame (only the binary-frame fault sends one).
    Binary(Vec<u8>),
    /// Close the socket with this code and reason.
    Close(u16, &'static str),
}

/// A negotiated protocol version as (major, minor, patch).
pub type Version = (u64, u64, u64);

/// One connection as the world sees it.
#[derive(Debug)]
pub struct ConnEntry {
    pub tx: mpsc::UnboundedSender<Outbound>,
    pub client_id: Option<String>,
    pub version: Option<Version>,
    pub subscriptions: HashSet<String>,
    /// Channels subscribed with a latency budget (`delivery.maxLatencyMs` > 0); only the
    /// coalesced-drops-deltas fault reads it.
    pub coalesced: HashSet<String>,
    /// Whether this client may be shown MCP Apps and their `mcp://` channels (it declared
    /// `capabilities.mcpApps`); frames to the others are stripped of them.
    pub shows_mcp_apps: bool,
    /// Only the state-channel-unstripped fault sets it: frames to the others keep the
    /// channel of `session/mcpServerStateChanged`.
    pub leaks_state_channel: bool,
}

impl ConnEntry {
    pub fn send_json(&self, value: &Value) {
        self.send_text(Utf8Bytes::from(value.to_string()));
    }

    pub fn send_text(&self, text: Utf8Bytes) {
        let text = match self.shows_mcp_apps || !super::mcp_apps::may_show_mcp_apps(&text) {
            true => text,
            false => match serde_json::from_str::<Value>(&text) {
                Ok(mut frame) => {
                    super::mcp_apps::strip_mcp_apps(&mut frame, self.leaks_state_channel);
                    Utf8Bytes::from(frame.to_string())
                }
                Err(_) => text,
            },
        };
        // A closed receiver means the connection is going away; its entry is removed by
        // the connection task, so a failed send needs no handling here.
        let _ = self.tx.send(Outbound::Text(text));
    }
}

#[derive(Debug)]
pub struct SessionEntry {
    pub state: SessionState,
    pub created_at: String,
    /// The root summary as last published (sessionAdded / sessionSummaryChanged).
    pub published_summary: Value,
}

/// A running agent turn.
#[derive(Debug)]
pub struct TurnRunner {
    pub abort: tokio::task::AbortHandle,
}

/// Where a resumable errored turn picks up again.
#[derive(Debug, Clone)]
pub struct ResumePoint {
    pub turn_id: String,
    pub steps: Vec<super::script::Step>,
    pub client_id: Option<String>,
}

#[derive(Debug)]
pub struct ChatEntry {
    pub session: String,
    pub state: ChatState,
    pub runner: Option<TurnRunner>,
    /// Woken whenever an action is applied to this chat, so a waiting agent re-checks.
    pub changed: Arc<Notify>,
    /// Whether some subscriber got a windowed snapshot (`view.turns`) since the last full load.
    pub windowed: bool,
    /// The rest of each turn that ended in a resumable error, by turn id (a later turn
    /// truncated away can make an earlier one the latest again).
    pub resumes: std::collections::HashMap<String, ResumePoint>,
}

/// One accepted envelope kept for `reconnect`.
#[derive(Debug, Clone)]
pub struct Replayed {
    pub seq: u64,
    pub channel: String,
    pub introduced_in: Version,
    pub envelope: Value,
}

/// Why the host could not apply an action it produced itself.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    #[error("no such channel {0}")]
    NoChannel(String),
    #[error("action does not decode: {0}")]
    Decode(String),
}

/// Options that shape the host's behaviour.
#[derive(Debug, Clone)]
pub struct WorldConfig {
    pub faults: FaultSet,
    pub replay_capacity: usize,
    pub session_init: std::time::Duration,
    /// Whether `view.turns` windows snapshots (see `HostConfig::turn_windows`).
    pub turn_windows: bool,
    /// Conforming choices (see `HostConfig::variants`).
    pub variants: variants::Variants,
    /// Whether `createTerminal` starts shells: only on a host that listens on a loopback
    /// address (a terminal is a shell of the user running the host; see the terminals module).
    pub terminals: bool,
}

/// The directory the `resource*` commands serve (see `HostConfig::workspace`).
pub type SharedWorkspace = Arc<super::workspace::Workspace>;

#[derive(Debug)]
pub struct World {
    pub config: WorldConfig,
    /// The directory on disk the `resource*` commands serve.
    pub workspace: SharedWorkspace,
    /// Live resource watches by channel.
    pub watches: super::watches::Watches,
    pub seq: u64,
    pub root: RootState,
    pub sessions: BTreeMap<String, SessionEntry>,
    pub chats: HashMap<String, ChatEntry>,
    /// Terminals by URI (issue 25, terminals): each a shell on a pty.
    pub terminals: BTreeMap<String, super::terminals::entry::TerminalEntry>,
    /// Changesets by URI (issue 29).
    pub changesets: changesets::Changesets,
    /// Annotations channels by URI (issue 29).
    pub annotations: annotations::Annotations,
    /// Canvas channels by URI (issue 29, i29d).
    pub canvases: canvases::Canvases,
    /// The automation catalogue and runs (issue 29, i29c).
    pub automations: super::automations::state::Automations,
    pub conns: HashMap<ConnId, ConnEntry>,
    pub replay: VecDeque<Replayed>,
    /// Sequence number of the newest envelope evicted from the replay buffer.
    pub replay_floor: u64,
    /// Actions the host produced itself that failed to apply: always a host bug. Tests
    /// assert this stays empty.
    pub internal_errors: Vec<String>,
    /// Version each client last negotiated, for `reconnect` (which carries none).
    pub client_versions: HashMap<String, Version>,
    /// The clients that declared `capabilities.mcpApps` at initialize (a reconnect resumes it).
    pub client_mcp_apps: HashSet<String>,
    /// Lets the world start agent tasks that need the shared handle.
    pub shared: std::sync::Weak<super::Shared>,
    next_id: u64,
    repeat_seq_done: bool,
    /// (channel, action type, serverSeq) of the newest envelope, for the repeat-server-seq fault.
    last_envelope: Option<(String, String, u64)>,
    /// serverSeq at the newest subscription of each channel, for the same fault.
    pub subscribed_at: HashMap<String, u64>,
    /// Envelope frames held back instead of sent (connection, frame), for the
    /// cross-channel-reorder fault.
    pub(super) held_frames: Option<Vec<(ConnId, Utf8Bytes)>>,
    /// Client dispatches held back by the echo-order-swapped fault.
    pub parked: swap::ParkedDispatches,
    /// Summaries of disposed sessions still listed to the connection that disposed them,
    /// for the disposed-still-listed fault.
    pub listed_after_dispose: Vec<(ConnId, Value)>,
    /// (sender, clientId group) of binary frames, for the binary-wedges-peers fault (the
    /// sender spared), and of too deep frames, for deep-nesting-wedges (no one spared).
    pub wedged_groups: Vec<(Option<ConnId>, String)>,
    /// (client, session) the agent action being emitted is restricted to, for the
    /// turn-stream-to-starter-only and turn-end-elsewhere faults.
    pub turn_audience: Option<(String, String)>,
    /// Tokens connections pushed with `authenticate` (issue 25, auth).
    pub auth_grants: super::grants::Grants,
}

/// Channel kinds this host serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChannelKind {
    Root,
    Session,
    Chat,
    Terminal,
    ResourceWatch,
    Changeset,
    Annotations,
    Canvas,
    Automations,
    AutomationRun,
}

pub const ROOT: &str = "ahp-root://";

impl World {
    pub fn new(config: WorldConfig, workspace: SharedWorkspace) -> Self {
        let root = super::agents::root_state(config.variants.no_protected_agent);
        World {
            config,
            workspace,
            watches: Default::default(),
            seq: 0,
            held_frames: None,
            parked: Default::default(),
            turn_audience: None,
            root,
            sessions: BTreeMap::new(),
            chats: HashMap::new(),
            terminals: BTreeMap::new(),
            changesets: BTreeMap::new(),
            annotations: BTreeMap::new(),
            canvases: BTreeMap::new(),
            automations: Default::default(),
            conns: HashMap::new(),
            replay: VecDeque::new(),
            replay_floor: 0,
            internal_errors: Vec::new(),
            client_versions: HashMap::new(),
            client_mcp_apps: HashSet::new(),
            shared: std::sync::Weak::new(),
            next_id: 0,
            repeat_seq_done: false,
            last_envelope: None,
            subscribed_at: HashMap::new(),
            listed_after_dispose: Vec::new(),
            wedged_groups: Vec::new(),
            auth_grants: Default::default(),
        }
    }

    /// Whether `fault` is one of the faults this host injects.
    pub fn fault(&self, fault: Fault) -> bool {
        self.config.faults.contains(fault)
    }

    /// A fresh id, unique for this host's lifetime.
    pub fn fresh_id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{}", self.next_id)
    }

    pub fn channel_kind(&self, uri: &str) -> Option<ChannelKind> {
        if uri == ROOT {
            Some(ChannelKind::Root)
        } else if self.sessions.contains_key(uri) {
            Some(ChannelKind::Session)
        } else if self.chats.contains_key(uri) {
            Some(ChannelKind::Chat)
        } else if self.terminals.contains_key(uri) {
            Some(ChannelKind::Terminal)
        } else if self.watches.contains_key(uri) {
            Some(ChannelKind::ResourceWatch)
        } else if self.changesets.contains_key(uri) {
            Some(ChannelKind::Changeset)
        } else if self.annotations.contains_key(uri) {
            Some(ChannelKind::Annotations)
        } else if self.canvases.contains_key(uri) {
            Some(ChannelKind::Canvas)
        } else {
            self.automation_channel_kind(uri)
        }
    }

    /// The channel's current state as a snapshot, or `None` when it does not exist.
    pub fn snapshot(&mut self, uri: &str, view_turns: Option<i64>) -> Option<Value> {
        let state = match self.channel_kind(uri)? {
            ChannelKind::ResourceWatch => self.watches.get(uri)?.state.clone(),
            ChannelKind::Root => {
                let mut state = self.root_state_json();
                self.break_root_snapshot(&mut state);
                state
            }
            ChannelKind::Session => {
                let mut state = to_value(&self.sessions.get(uri)?.state);
                let repeated: &[&str] = if self.fault(Fault::ChatListedTwice) {
                    &["chats"]
                } else if self.fault(Fault::ClientListedTwice) {
                    &["activeClients", "inputNeeded"]
                } else if self.fault(Fault::DirectoryListedTwice) {
                    &["workingDirectories"]
                } else {
                    &[]
                };
                for list in repeated {
                    if let Some(only) = state[*list].as_array_mut().filter(|l| l.len() == 1) {
                        only.push(only[0].clone());
                    }
                }
                self.break_session_snapshot(&mut state);
                self.break_session_catalog(&mut state);
                self.break_session_lifecycle(&mut state);
                state
            }
            ChannelKind::Chat => self.chat_snapshot_state(uri, view_turns)?,
            ChannelKind::Terminal => self.terminal_snapshot(uri)?,
            ChannelKind::Changeset => self.changeset_state(uri)?,
            ChannelKind::Annotations => self.annotations_state(uri)?,
            ChannelKind::Canvas => self.canvas_state(uri)?,
            ChannelKind::Automations | ChannelKind::AutomationRun => self.automation_state(uri)?,
        };
        let ahead = self.fault(Fault::SnapshotSeqAhead) && uri.starts_with("ahp-session:");
        // A lead of one shows only when the host's very next action is on this session, which
        // concurrent clients' actions on other channels often hide; a long lead shows whenever
        // the session acts again soon.
        let from_seq = if ahead {
            self.seq + SNAPSHOT_LEAD
        } else {
            self.seq
        };
        Some(json!({ "resource": uri, "state": state, "fromSeq": from_seq }))
    }

    /// Applies an action to its channel's state, numbers it, records it for replay and
    /// delivers the envelope to every subscriber. Chat projections are not run here; the
    /// callers that change chats run [`World::sync_projections`] afterwards.
    pub fn emit(
        &mut self,
        channel: &str,
        action: Value,
        origin: Option<(&str, i64)>,
    ) -> Result<u64, EmitError> {
        let decoded: StateAction =
            serde_json::from_value(action.clone()).map_err(|e| EmitError::Decode(e.to_string()))?;
        self.emit_shown(channel, &decoded, action, origin)
    }

    /// [`World::emit`] of `decoded`, whose envelope shows `action` (the same action, unless
    /// a fault echoes a client's malformed action as it was sent).
    pub fn emit_shown(
        &mut self,
        channel: &str,
        decoded: &StateAction,
        action: Value,
        origin: Option<(&str, i64)>,
    ) -> Result<u64, EmitError> {
        self.apply(channel, decoded)?;
        if let Some(entry) = self.chats.get(channel) {
            entry.changed.notify_one();
        }
        let seq = self.next_seq(channel, &action);
        let is_delta = action["type"] == "chat/delta";
        let mut envelope = Map::new();
        envelope.insert("channel".into(), Value::String(channel.to_owned()));
        envelope.insert("action".into(), action);
        envelope.insert("serverSeq".into(), json!(seq));
        if let Some((client_id, client_seq)) = origin {
            let client_seq = if self.fault(Fault::WrongClientSeq) {
                client_seq + 1
            } else {
                client_seq
            };
            envelope.insert(
                "origin".into(),
                json!({ "clientId": client_id, "clientSeq": client_seq }),
            );
        } else if self.fault(Fault::HostActionOrigin)
            && envelope["action"]["type"] == "session/ready"
        {
            envelope.insert(
                "origin".into(),
                json!({ "clientId": "ahpspec-host", "clientSeq": 1 }),
            );
        }
        self.break_envelope(&mut envelope);
        let envelope = Value::Object(envelope);
        let introduced_in = action_type(&envelope["action"])
            .and_then(action_info)
            .map_or((0, 1, 0), |info| info.introduced_in);
        self.replay.push_back(Replayed {
            seq,
            channel: channel.to_owned(),
            introduced_in,
            envelope: envelope.clone(),
        });
        while self.replay.len() > self.config.replay_capacity {
            if let Some(old) = self.replay.pop_front() {
                self.replay_floor = old.seq;
            }
        }
        let kind = action_type(&envelope["action"])
            .unwrap_or_default()
            .to_owned();
        let frame = Utf8Bytes::from(notification("action", envelope).to_string());
        let session_action = channel.starts_with("ahp-session:");
        let sender_only = if origin.is_some() && self.fault(Fault::NoBroadcast) && session_action {
            origin.map(|(client_id, _)| client_id.to_owned())
        } else {
            None
        };
        for (id, conn) in &self.conns {
            let version_ok = may_receive(conn.version, introduced_in)
                || (self.fault(Fault::NewActionsToOldClient) && conn.version.is_some());
            let receives = conn.subscriptions.contains(channel)
                || self.leaks_to(&conn.subscriptions, channel, origin.is_some());
            if !receives || !version_ok {
                continue;
            }
            if !self.in_turn_audience(conn, channel, &kind) {
                continue;
            }
            if conn.coalesced.contains(channel)
                && is_delta
                && self.fault(Fault::CoalescedDropsDeltas)
            {
                continue;
            }
            if let Some(sender) = &sender_only {
                if conn.client_id.as_deref() != Some(sender) {
                    continue;
                }
            }
            match &mut self.held_frames {
                Some(held) => held.push((*id, frame.clone())),
                None => conn.send_text(frame.clone()),
            }
        }
        Ok(seq)
    }

    fn next_seq(&mut self, channel: &str, action: &Value) -> u64 {
        let kind = action["type"].as_str().unwrap_or_default().to_owned();
        if self.fault(Fault::RepeatServerSeq)
            && !self.repeat_seq_done
            && kind == "session/titleChanged"
        {
            // Reuse the number of the previous envelope once, when it was a title change of
            // the same session and nobody subscribed since: the channel's order is then no
            // longer strict, while every snapshot's fromSeq stays below it.
            if let Some((last_channel, last_kind, last_seq)) = &self.last_envelope {
                let quiet = self
                    .subscribed_at
                    .get(channel)
                    .is_none_or(|at| at < last_seq);
                if last_channel == channel && *last_kind == kind && *last_seq == self.seq && quiet {
                    self.repeat_seq_done = true;
                    return self.seq;
                }
            }
        }
        self.seq += 1;
        self.last_envelope = Some((channel.to_owned(), kind, self.seq));
        self.seq
    }

    fn apply(&mut self, channel: &str, action: &StateAction) -> Result<(), EmitError> {
        match self.channel_kind(channel) {
            Some(ChannelKind::Root) => {
                apply_action_to_root(&mut self.root, action);
            }
            Some(ChannelKind::Session) => {
                if let Some(entry) = self.sessions.get_mut(channel) {
                    apply_action_to_session(&mut entry.state, action);
                }
            }
            Some(ChannelKind::Chat) => {
                if let Some(entry) = self.chats.get_mut(channel) {
                    apply_action_to_chat(&mut entry.state, action);
                }
            }
            Some(ChannelKind::Terminal) => {
                if let Some(entry) = self.terminals.get_mut(channel) {
                    apply_action_to_terminal(&mut entry.state, action);
                }
            }
            // Change batches are events: the reducer keeps no history of them.
            Some(ChannelKind::ResourceWatch) => {}
            Some(ChannelKind::Changeset) => self.apply_changeset(channel, action),
            Some(ChannelKind::Annotations) => self.apply_annotations(channel, action),
            Some(ChannelKind::Canvas) => self.apply_canvas(channel, action),
            Some(ChannelKind::Automations | ChannelKind::AutomationRun) => {
                self.apply_automation(channel, action)
            }
            None => return Err(EmitError::NoChannel(channel.to_owned())),
        }
        Ok(())
    }

    /// Emits a host-originated action, recording a failure as an internal error.
    pub fn emit_logged(&mut self, channel: &str, action: Value) -> Option<u64> {
        let kind = action_type(&action).unwrap_or("?").to_owned();
        match self.emit(channel, action, None) {
            Ok(seq) => Some(seq),
            Err(error) => {
                self.internal_errors
                    .push(format!("{kind} on {channel}: {error}"));
                None
            }
        }
    }

    /// Emits a host-originated chat action and refreshes the owning session's projections
    /// (unless the action changes nothing they read: most of a turn).
    pub fn emit_chat(&mut self, chat: &str, action: Value) -> Option<u64> {
        let refresh = changes_projections(&action);
        if self.fault(Fault::CrossChannelReorder) && action["type"] == "chat/turnComplete" {
            self.held_frames = Some(Vec::new());
        }
        let seq = self.emit_logged(chat, action);
        let held = self.held_frames.take();
        if refresh {
            if let Some(session) = self.chats.get(chat).map(|entry| entry.session.clone()) {
                self.sync_projections(&session);
            }
        }
        for (id, frame) in held.into_iter().flatten() {
            if let Some(conn) = self.conns.get(&id) {
                conn.send_text(frame);
            }
        }
        seq
    }

    /// Sends a protocol notification to every subscriber of `channel`.
    pub fn notify_subscribers(&self, channel: &str, method: &str, params: Value) {
        let frame = Utf8Bytes::from(notification(method, params).to_string());
        for conn in self.conns.values() {
            if conn.subscriptions.contains(channel) {
                conn.send_text(frame.clone());
            }
        }
    }

    pub fn send_to(&self, conn: ConnId, value: &Value) {
        if let Some(entry) = self.conns.get(&conn) {
            entry.send_json(value);
        }
    }

    /// The chats of a session, in catalog order.
    pub fn session_chats(&self, session: &str) -> Vec<String> {
        self.sessions
            .get(session)
            .map(|entry| {
                entry
                    .state
                    .chats
                    .iter()
                    .map(|chat| chat.resource.clone())
                    .collect()
            })
            .unwrap_or_default()
    }
}

pub fn action_type(action: &Value) -> Option<&str> {
    action.get("type").and_then(Value::as_str)
}

pub fn notification(method: &str, params: Value) -> Value {
    json!({ "jsonrpc": "2.0", "method": method, "params": params })
}

pub fn to_value<T: serde::Serialize + ?Sized>(value: &T) -> Value {
    // Serialising the crate's state types cannot fail: they contain only JSON-compatible
    // data (string keys, no non-finite floats from our side).
    serde_json::to_value(value).unwrap_or(Value::Null)
}

/// The current time as an RFC 3339 timestamp with millisecond precision.
pub fn now_iso() -> String {
    let now = jiff::Timestamp::now();
    format!("{:.3}", now)
}
