//! `invokeChangesetOperation` (issue 29, changesets): the operation must be one the
//! changeset lists and the target's kind one of its scopes (no target: the changeset
//! scope); a file target must be a file of the changeset. Anything else is `-32602`.
//! Progress shows as `changeset/operationStatusChanged` (running, then idle), the effect
//! through the changeset's own actions.

use ahp_types::commands::{ChangesetOperationTarget, InvokeChangesetOperationParams};
use serde_json::{json, Value};

use super::{parse, RpcError, INVALID_PARAMS, NOT_FOUND};
use crate::host::faults::Fault;
use crate::host::world::{to_value, World};

/// What an operation acts on: the whole changeset or one of its files.
enum Target {
    Changeset,
    File(String),
}

impl World {
    pub(super) fn invoke_changeset_operation(&mut self, params: &Value) -> Result<Value, RpcError> {
        let params: InvokeChangesetOperationParams = parse(params)?;
        let channel = params.channel.clone();
        let Some(entry) = self.changesets.get(&channel) else {
            return Err(RpcError::new(NOT_FOUND, format!("no changeset {channel}")));
        };
        let operations = to_value(&entry.state.operations);
        let operation = operations
            .as_array()
            .into_iter()
            .flatten()
            .find(|op| op["id"] == params.operation_id.as_str());
        let Some(operation) = operation.cloned() else {
            if self.fault(Fault::ChangesetUnknownOperationAccepted) {
                return Ok(json!({}));
            }
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("{channel} has no operation {:?}", params.operation_id),
            ));
        };
        let (scope, target) = match &params.target {
            None => ("changeset", Target::Changeset),
            Some(ChangesetOperationTarget::Resource { resource, .. }) => {
                ("resource", Target::File(resource.clone()))
            }
            Some(ChangesetOperationTarget::Range { resource, .. }) => {
                ("range", Target::File(resource.clone()))
            }
            Some(ChangesetOperationTarget::Unknown(_)) => {
                return Err(RpcError::new(INVALID_PARAMS, "unknown target kind"))
            }
        };
        let scopes = operation["scopes"].as_array();
        let in_scope = scopes.is_some_and(|s| s.iter().any(|s| s == scope));
        if !in_scope && !self.fault(Fault::ChangesetScopeIgnored) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                    "operation {:?} does not apply to a {scope}",
                    params.operation_id
                ),
            ));
        }
        if let Target::File(file) = &target {
            if !entry.state.files.iter().any(|f| f.id == *file) {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("{file} is not a file of {channel}"),
                ));
            }
        }
        let id = params.operation_id.as_str();
        self.operation_status(&channel, id, "running");
        let result = match (id, target) {
            ("revert", target) => self.revert(&channel, target),
            ("refresh", _) => self.refresh(&channel),
            (_, Target::File(file)) => json!({ "message": format!("opening {file}"),
                "followUp": { "content": { "uri": file, "contentType": "text/plain" } } }),
            (_, Target::Changeset) => json!({}),
        };
        self.operation_status(&channel, id, "idle");
        self.withdraw_operations(&channel);
        Ok(result)
    }

    /// A changeset of the session left without files offers nothing to operate on: its
    /// operations are withdrawn (`changeset/operationsChanged` without any), and come back
    /// with the agent's next change.
    fn withdraw_operations(&mut self, channel: &str) {
        let Some(session) = self.changesets.get(channel).map(|e| e.session.clone()) else {
            return;
        };
        for uri in self.session_changesets(&session) {
            let empty = self
                .changesets
                .get(&uri)
                .is_some_and(|e| e.state.files.is_empty() && e.state.operations.is_some());
            if !empty {
                continue;
            }
            self.emit_logged(&uri, json!({ "type": "changeset/operationsChanged" }));
        }
    }

    fn operation_status(&mut self, channel: &str, id: &str, status: &str) {
        let action = json!({ "type": "changeset/operationStatusChanged", "operationId": id, "status": status });
        self.emit_logged(channel, action);
    }

    /// Restores the target's files on disk and takes them out of every changeset of the
    /// session that lists them: `cleared` for the changeset reverted whole, `fileRemoved`
    /// elsewhere.
    fn revert(&mut self, channel: &str, target: Target) -> Value {
        let Some(entry) = self.changesets.get(channel) else {
            return json!({});
        };
        let session = entry.session.clone();
        let files: Vec<(String, std::path::PathBuf, Option<Vec<u8>>)> = entry
            .originals
            .iter()
            .filter(|(id, _)| match &target {
                Target::Changeset => true,
                Target::File(file) => *id == file,
            })
            .map(|(id, (path, before))| (id.clone(), path.clone(), before.clone()))
            .collect();
        for (_, path, before) in &files {
            // A file that cannot be restored stays as it is; the changeset still drops it.
            let _ = match before {
                Some(content) => std::fs::write(path, content),
                None => std::fs::remove_file(path),
            };
        }
        let whole = matches!(target, Target::Changeset);
        for uri in self.session_changesets(&session) {
            let ids: Vec<String> = files
                .iter()
                .map(|(id, _, _)| id.clone())
                .filter(|id| {
                    self.changesets[&uri]
                        .state
                        .files
                        .iter()
                        .any(|f| f.id == *id)
                })
                .collect();
            if let Some(entry) = self.changesets.get_mut(&uri) {
                entry.originals.retain(|id, _| !ids.contains(id));
            }
            if self.fault(Fault::RevertLeavesFile) {
                continue;
            }
            if self.fault(Fault::RevertUnannounced) {
                // The state drops the files, no subscriber hears of it.
                if let Some(entry) = self.changesets.get_mut(&uri) {
                    entry.state.files.retain(|file| !ids.contains(&file.id));
                }
                continue;
            }
            if whole && uri == channel {
                self.emit_logged(&uri, json!({ "type": "changeset/cleared" }));
                continue;
            }
            for id in ids {
                self.emit_logged(
                    &uri,
                    json!({ "type": "changeset/fileRemoved", "fileId": id }),
                );
            }
        }
        json!({ "message": format!("reverted {} file(s)", files.len()) })
    }

    /// Re-reads the changeset's files from disk: `contentChanged` with what is still there.
    fn refresh(&mut self, channel: &str) -> Value {
        let Some(entry) = self.changesets.get(channel) else {
            return json!({});
        };
        let files: Vec<Value> = entry
            .state
            .files
            .iter()
            .filter(|file| {
                entry
                    .originals
                    .get(&file.id)
                    .is_some_and(|(path, _)| path.exists())
            })
            .map(to_value)
            .collect();
        let operations = to_value(&entry.state.operations);
        let message = format!("{} file(s)", files.len());
        self.recompute(channel, |world| {
            let action = json!({ "type": "changeset/contentChanged", "files": files,
                                 "operations": operations });
            world.emit_logged(channel, action);
        });
        json!({ "message": message })
    }
}
