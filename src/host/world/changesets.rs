//! Changesets (issue 29): what the agent changed in the host's real workspace, on
//! `ahp-changeset:` channels advertised by the session's and the chat's catalogues
//! (`session/changesetsChanged`, `chat/changesetsChanged`).
//!
//! The scripted agent's `editFile` step writes a file under the session's first working
//! directory (the workspace itself when it has none) and reports it in both changesets:
//! `changeset/statusChanged` (recomputing), `changeset/fileSet`, the operations once
//! (`changeset/operationsChanged`), then `statusChanged` ready. Three operations are offered:
//! `revert` (changeset or file: restores what was on disk before, `fileRemoved` or
//! `cleared`), `refresh` (changeset: re-reads the files, `contentChanged`) and `open` (file
//! or range: a follow-up naming the file). The only changeset action a client may dispatch
//! is `changeset/filesReviewChanged` (each changeset advertises review).

use std::collections::BTreeMap;
use std::path::PathBuf;

use ahp::reducers::apply_action_to_changeset;
use ahp_types::actions::StateAction;
use ahp_types::state::{ChangesetState, ChangesetStatus};
use base64::Engine;
use serde_json::{json, Value};

use super::{to_value, World};
use crate::host::faults::Fault;
use crate::host::workspace::{file_uri, read_bounded};

/// One changeset channel.
#[derive(Debug)]
pub struct ChangesetEntry {
    /// The session it belongs to (it goes away with it).
    pub session: String,
    pub state: ChangesetState,
    /// Per file id: the path on disk and its content before the agent first changed it
    /// (`None`: the file did not exist), which `revert` restores.
    pub originals: BTreeMap<String, (PathBuf, Option<Vec<u8>>)>,
}

/// Changesets by channel URI.
pub type Changesets = BTreeMap<String, ChangesetEntry>;

/// The changeset a session or chat advertises: one static URI per owner.
pub fn changeset_uri(owner: &str) -> String {
    let (scheme, rest) = owner.split_once(':').unwrap_or(("owner", owner));
    format!("ahp-changeset:/{scheme}/{}", rest.trim_start_matches('/'))
}

/// The catalogue entry of `owner`'s changeset.
fn catalogue_entry(owner: &str, is_chat: bool) -> Value {
    let (label, kind) = if is_chat {
        ("Changes of this chat", "chat")
    } else {
        ("Changes of this session", "session")
    };
    json!({ "label": label, "uriTemplate": changeset_uri(owner), "changeKind": kind,
            "capabilities": { "review": {} } })
}

/// The operations every changeset of this host offers, all idle.
fn operations() -> Value {
    json!([
        { "id": "revert", "label": "Revert", "scopes": ["changeset", "resource"],
          "confirmation": "Restore the files as they were before the agent changed them?",
          "icon": "discard", "status": "idle" },
        { "id": "refresh", "label": "Refresh", "scopes": ["changeset"], "status": "idle" },
        { "id": "open", "label": "Open", "scopes": ["resource", "range"], "status": "idle" },
    ])
}

/// A changeset file entry for `path`, now holding `now`, before the agent `before`.
fn file_entry(path: &std::path::Path, before: Option<&[u8]>, now: &[u8]) -> Value {
    let uri = file_uri(path);
    let lines = |bytes: &[u8]| {
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .count()
    };
    let mut edit = json!({
        "after": { "uri": uri, "content": { "uri": uri, "contentType": "text/plain" } },
        "diff": { "added": lines(now), "removed": before.map_or(0, lines) },
    });
    if let Some(before) = before {
        let data = base64::engine::general_purpose::STANDARD.encode(before);
        edit["before"] = json!({ "uri": uri,
            "content": { "uri": format!("data:text/plain;base64,{data}"), "contentType": "text/plain" } });
    }
    json!({ "id": uri, "edit": edit })
}

impl World {
    /// The snapshot state of a changeset channel.
    pub(in crate::host) fn changeset_state(&self, uri: &str) -> Option<Value> {
        Some(to_value(&self.changesets.get(uri)?.state))
    }

    /// Folds an action into a changeset channel.
    pub(in crate::host) fn apply_changeset(&mut self, uri: &str, action: &StateAction) {
        if let Some(entry) = self.changesets.get_mut(uri) {
            apply_action_to_changeset(&mut entry.state, action);
        }
    }

    /// The changesets of a session (its own and its chats').
    pub(in crate::host) fn session_changesets(&self, session: &str) -> Vec<String> {
        self.changesets
            .iter()
            .filter(|(_, entry)| entry.session == session)
            .map(|(uri, _)| uri.clone())
            .collect()
    }

    /// Drops the changesets of a disposed session: each subscriber gets `changeset/cleared`
    /// (the URI is becoming un-subscribable), then is unsubscribed.
    pub(in crate::host) fn drop_changesets(&mut self, session: &str) {
        for uri in self.session_changesets(session) {
            if !self.fault(Fault::ChangesetsDroppedSilently) {
                self.emit_logged(&uri, json!({ "type": "changeset/cleared" }));
            }
            if self.fault(Fault::DisposedChangesetsKept) {
                continue;
            }
            self.changesets.remove(&uri);
            for conn in self.conns.values_mut() {
                conn.subscriptions.remove(&uri);
            }
        }
    }

    /// The scripted agent's `editFile` step: writes `text` to `path` (relative to the
    /// session's first working directory) and reports it in the session's and the chat's
    /// changesets. `Err` says why the file could not be written.
    pub(in crate::host) fn agent_edit(
        &mut self,
        chat: &str,
        path: &str,
        text: &str,
    ) -> Result<(), String> {
        let session = self
            .chats
            .get(chat)
            .map(|entry| entry.session.clone())
            .ok_or("the chat is gone")?;
        let base = self
            .sessions
            .get(&session)
            .and_then(|entry| entry.state.working_directories.as_ref()?.first().cloned())
            .unwrap_or_else(|| self.workspace.uri());
        let relative = std::path::Path::new(path);
        if path.is_empty() || relative.is_absolute() {
            return Err(format!("{path:?} is not a relative path"));
        }
        let dir = self
            .workspace
            .path_of(&base, true)
            .map_err(|_| format!("{base} is not in the host's workspace"))?;
        let file = self
            .workspace
            .path_of(&file_uri(&dir.join(relative)), false)
            .map_err(|_| format!("{path:?} leads outside the host's workspace"))?;
        let before = read_bounded(&file).ok();
        if let Some(parent) = file.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{path}: {e}"))?;
        }
        std::fs::write(&file, text).map_err(|e| format!("{path}: {e}"))?;
        let mut owners = vec![(session.clone(), false)];
        if !self.fault(Fault::ChangesetChatUnreported) {
            owners.push((chat.to_owned(), true));
        }
        for (owner, is_chat) in owners {
            let uri = self.open_changeset(&owner, &session, is_chat);
            let original = self.changesets.get_mut(&uri).map(|entry| {
                let id = file_uri(&file);
                let known = entry
                    .originals
                    .entry(id)
                    .or_insert((file.clone(), before.clone()));
                known.1.clone()
            });
            let entry = file_entry(&file, original.flatten().as_deref(), text.as_bytes());
            self.recompute(&uri, |world| {
                world.emit_logged(&uri, json!({ "type": "changeset/fileSet", "file": entry }));
            });
        }
        Ok(())
    }

    /// The owner's changeset, advertised in its catalogue the first time.
    fn open_changeset(&mut self, owner: &str, session: &str, is_chat: bool) -> String {
        let uri = changeset_uri(owner);
        if self.changesets.contains_key(&uri) {
            return uri;
        }
        let state = serde_json::from_value(json!({ "status": "computing", "files": [] }));
        let Ok(state) = state else {
            return uri;
        };
        self.changesets.insert(
            uri.clone(),
            ChangesetEntry {
                session: session.to_owned(),
                state,
                originals: BTreeMap::new(),
            },
        );
        let listed = if is_chat {
            self.chats.get(owner).map(|c| &c.state.changesets)
        } else {
            self.sessions.get(owner).map(|s| &s.state.changesets)
        };
        let mut listed: Vec<Value> = listed
            .cloned()
            .flatten()
            .iter()
            .flatten()
            .map(to_value)
            .collect();
        listed.push(catalogue_entry(owner, is_chat));
        if is_chat {
            let action = json!({ "type": "chat/changesetsChanged", "changesets": listed });
            self.emit_chat(owner, action);
        } else {
            let action = json!({ "type": "session/changesetsChanged", "changesets": listed });
            self.emit_logged(owner, action);
        }
        uri
    }

    /// Runs `change` between `statusChanged` recomputing (when the changeset was ready) and
    /// `statusChanged` ready, giving the changeset its operations the first time.
    pub(in crate::host) fn recompute(&mut self, uri: &str, change: impl FnOnce(&mut World)) {
        let Some(entry) = self.changesets.get(uri) else {
            return;
        };
        let ready = entry.state.status == ChangesetStatus::Ready;
        let has_operations = entry.state.operations.is_some();
        if ready {
            let action = json!({ "type": "changeset/statusChanged", "status": "recomputing" });
            self.emit_logged(uri, action);
        }
        change(self);
        if !has_operations {
            let action =
                json!({ "type": "changeset/operationsChanged", "operations": operations() });
            self.emit_logged(uri, action);
        }
        if !self.fault(Fault::ChangesetNeverReady) {
            self.emit_logged(
                uri,
                json!({ "type": "changeset/statusChanged", "status": "ready" }),
            );
        }
    }
}
