//! The routines about what the agent changes and what clients note on it (issue 29), each
//! only where the host offers it: a changeset of the agent's edits in a fresh directory of
//! the workspace — listed and ready (CHANGESET-003), a client's server-side action not
//! applied and its review applied (CHANGESET-001), operations outside the list or the scopes
//! refused (CHANGESET-002), a revert reaching the changeset (CHANGESET-004) —; and the
//! session's annotations channel — entries taken (ANNOTATION-001), an annotation never left
//! without entries (ANNOTATION-002).

use serde_json::{json, Value};

use super::side::{immediate, snapshot_state, turn_to_end, Side};
use super::{ask, echo_before_ping, finding, refused, rejected, Finding};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::ROOT;
use crate::fuzz::exec::Run;

/// Whether a changeset's files list `file`.
fn lists(changeset: &Value, file: &str) -> bool {
    changeset["files"]
        .as_array()
        .is_some_and(|f| f.iter().any(|f| f["id"] == file))
}

/// A refusal with -32602 (invalid params).
fn invalid_params(answer: &Value) -> bool {
    answer.pointer("/error/code") == Some(&json!(-32602))
}

impl Run<'_> {
    /// The agent's `edit` turn in a session of the routine's own whose working directory is
    /// a fresh directory of the workspace, then the changeset the session advertises judged
    /// (see the module). Nothing without a workspace, the `edit` behaviour or a changeset.
    pub(super) async fn changeset(&mut self, index: usize, client: usize) -> Option<Finding> {
        let dir = self.scratch_dir("changes", index)?;
        let turn = self.turn_of("edit", "edit", index)?;
        let timeout = self.cfg.timeout;
        let mkdir = json!({ "channel": ROOT, "uri": dir });
        self.exec.operations += 1;
        // Making the directory is RES-004's.
        match ask(&mut self.conns[client], "resourceMkdir", mkdir, timeout).await {
            Ok(answer) if !refused(&answer) => {}
            Ok(_) => return None,
            Err(found) => return found,
        }
        let found = match self
            .side_session("changes", index, Some(vec![dir.clone()]))
            .await
        {
            Ok(mut side) => {
                let (id, text, now) = turn;
                let ended = turn_to_end(&mut side.link, &side.chat, (&id, &text, now), timeout);
                self.exec.operations += 1;
                let found = match ended.await {
                    Some(_) => self.changeset_of(&mut side, &dir).await,
                    None => None,
                };
                self.drop_side(side).await;
                found
            }
            Err(found) => found,
        };
        self.remove_tree(client, &dir).await;
        found
    }

    async fn changeset_of(&mut self, side: &mut Side, dir: &str) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let session = side.session.clone();
        let advertised = self.fresh(&session).await?;
        let channel = advertised
            .pointer("/changesets/0/uriTemplate")?
            .as_str()?
            .to_owned();
        let notes = format!("{dir}/notes.txt");
        let state = self
            .fresh_until(&channel, |c| c["status"] == "ready" && lists(c, &notes))
            .await?;
        if state["status"] != "ready" || !lists(&state, &notes) {
            return finding(
                Rule::Changeset003,
                &format!(
                    "the session's changeset ready and listing {notes} once the agent's turn ended"
                ),
                format!(
                    "status {}, files {}",
                    state["status"],
                    clip(&state["files"].to_string())
                ),
            );
        }
        let chat = side.chat.clone();
        let chat_state = self.fresh(&chat).await?;
        if chat_state["changesets"]
            .as_array()
            .is_none_or(Vec::is_empty)
        {
            return finding(
                Rule::Changeset003,
                "the chat whose agent changed files advertises a changeset too",
                format!("changesets {}", chat_state["changesets"]),
            );
        }
        self.exec.operations += 1;
        let subscribed = ask(&mut side.link, "subscribe", immediate(&channel), timeout).await;
        // Subscribed (the changeset's own case judges that it can be): its actions follow.
        subscribed.ok().and_then(|a| snapshot_state(&a))?;
        let review = advertised
            .pointer("/changesets/0/capabilities/review")
            .is_some_and(|r| !r.is_null() && *r != false);
        if let Some(found) = self.client_changes(side, &channel, &notes, review).await {
            return Some(found);
        }
        self.operations_judged(side, &channel, &state, &notes).await
    }

    /// changeset/fileRemoved from a client not applied; changeset/filesReviewChanged, where
    /// review is advertised, taken (CHANGESET-001).
    async fn client_changes(
        &mut self,
        side: &mut Side,
        channel: &str,
        notes: &str,
        review: bool,
    ) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let remove = json!({ "type": "changeset/fileRemoved", "fileId": notes });
        let _ = echo_before_ping(&mut side.link, channel, &remove, timeout).await;
        self.exec.operations += 1;
        let after = self.fresh(channel).await?;
        if !lists(&after, notes) {
            return finding(
                Rule::Changeset001,
                &format!("a client's changeset/fileRemoved not applied: {notes} still listed"),
                clip(&after["files"].to_string()),
            );
        }
        if !review {
            return None;
        }
        let mark =
            json!({ "type": "changeset/filesReviewChanged", "files": [notes], "reviewed": true });
        let echo = echo_before_ping(&mut side.link, channel, &mark, timeout).await;
        self.exec.operations += 1;
        match echo {
            Some(echo) if rejected(&echo) => finding(
                Rule::Changeset001,
                "a client's changeset/filesReviewChanged taken on a changeset that advertises review",
                format!("rejected: {}", clip(&echo.to_string())),
            ),
            _ => None,
        }
    }

    /// invokeChangesetOperation: an operation the changeset does not list, and its first
    /// operation on a target of a kind its scopes leave out, refused with -32602
    /// (CHANGESET-002); the contract's revert of one file accepted and the file no longer
    /// listed (CHANGESET-004).
    async fn operations_judged(
        &mut self,
        side: &mut Side,
        channel: &str,
        state: &Value,
        notes: &str,
    ) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let invoke = |operation: &Value, target: Option<Value>| {
            let mut params = json!({ "channel": channel, "operationId": operation });
            if let Some(target) = target {
                params["target"] = target;
            }
            params
        };
        let unknown = invoke(&json!("ahpspec-no-such-operation"), None);
        self.exec.operations += 1;
        let answer = match ask(&mut side.link, "invokeChangesetOperation", unknown, timeout).await {
            Ok(answer) => answer,
            Err(found) => return found,
        };
        if !invalid_params(&answer) {
            return finding(
                Rule::Changeset002,
                "-32602 to invokeChangesetOperation of an operation the changeset does not list",
                clip(&answer.to_string()),
            );
        }
        let operations = state["operations"].as_array().cloned().unwrap_or_default();
        let range = json!({ "kind": "range", "resource": notes,
                            "range": { "start": { "line": 0, "character": 0 }, "end": { "line": 0, "character": 1 } } });
        let narrow = operations.iter().find(|o| {
            o["scopes"]
                .as_array()
                .is_some_and(|s| !s.is_empty() && !s.contains(&json!("range")))
        });
        if let Some(operation) = narrow {
            let params = invoke(&operation["id"], Some(range));
            self.exec.operations += 1;
            let answer =
                match ask(&mut side.link, "invokeChangesetOperation", params, timeout).await {
                    Ok(answer) => answer,
                    Err(found) => return found,
                };
            if !invalid_params(&answer) {
                return finding(
                    Rule::Changeset002,
                    &format!(
                        "-32602 to operation {} on a range, which its scopes leave out",
                        operation["id"]
                    ),
                    clip(&answer.to_string()),
                );
            }
        }
        let revert = operations.iter().any(|o| {
            o["id"] == "revert"
                && o["scopes"]
                    .as_array()
                    .is_some_and(|s| s.contains(&json!("resource")))
        });
        if !revert {
            return None;
        }
        let target = json!({ "kind": "resource", "resource": notes });
        let params = invoke(&json!("revert"), Some(target));
        self.exec.operations += 1;
        match ask(&mut side.link, "invokeChangesetOperation", params, timeout).await {
            Ok(answer) if !refused(&answer) => {}
            Ok(_) => return None,
            Err(found) => return found,
        }
        let after = self.fresh_until(channel, |c| !lists(c, notes)).await?;
        if lists(&after, notes) {
            return finding(
                Rule::Changeset004,
                &format!("{notes} no longer listed once its revert was accepted"),
                clip(&after["files"].to_string()),
            );
        }
        None
    }

    /// On the run's session's annotations channel (a connection of its own): an annotation
    /// made, a second entry added (taken: ANNOTATION-001), both entries removed (the
    /// annotation is never left without entries: ANNOTATION-002), the annotation removed.
    pub(super) async fn annotations(&mut self, index: usize) -> Option<Finding> {
        let session = self.conns[0].mirror().state(&self.session)?;
        let channel = session
            .pointer("/annotations/resource")?
            .as_str()?
            .to_owned();
        let timeout = self.cfg.timeout;
        let mut link = match self.side(crate::client::DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        self.exec.operations += 1;
        let subscribed = ask(&mut link, "subscribe", immediate(&channel), timeout).await;
        let found = match subscribed {
            Ok(answer) if !refused(&answer) => self.annotate(index, &mut link, &channel).await,
            Ok(_) => None,
            Err(found) => found,
        };
        link.close().await;
        found
    }

    async fn annotate(
        &mut self,
        index: usize,
        link: &mut crate::client::Conn,
        channel: &str,
    ) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let id = format!("fz-note-{}-{index}", self.token);
        let annotation = json!({ "id": id, "origin": { "session": self.session, "chat": self.chat },
            "resource": format!("file:///ahpspec-annotations/{}.txt", self.token),
            "resolved": false, "entries": [{ "id": "e1", "text": "first" }] });
        let set = json!({ "type": "annotations/set", "annotation": annotation });
        self.exec.operations += 2;
        // Creating it is the first step of ANNOTATION-001's own case; refused, nothing to judge.
        let made = echo_before_ping(link, channel, &set, timeout).await;
        if made.as_ref().is_none_or(rejected) {
            return None;
        }
        let entry = json!({ "type": "annotations/entrySet", "annotationId": id,
                            "entry": { "id": "e2", "text": { "markdown": "**second**" } } });
        if let Some(echo) = echo_before_ping(link, channel, &entry, timeout).await {
            if rejected(&echo) {
                return finding(
                    Rule::Annotation001,
                    "a client's annotations/entrySet on an annotation of the channel taken",
                    format!("rejected: {}", clip(&echo.to_string())),
                );
            }
        }
        for entry in ["e1", "e2"] {
            let removal =
                json!({ "type": "annotations/entryRemoved", "annotationId": id, "entryId": entry });
            let _ = echo_before_ping(link, channel, &removal, timeout).await;
            self.exec.operations += 1;
        }
        let state = self.fresh(channel).await;
        let removal = json!({ "type": "annotations/removed", "annotationId": id });
        let _ = echo_before_ping(link, channel, &removal, timeout).await;
        let emptied = state?["annotations"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|a| a["id"] == id.as_str() && a["entries"].as_array().is_some_and(Vec::is_empty))
            .cloned();
        if let Some(emptied) = emptied {
            return finding(
                Rule::Annotation002,
                "no annotation left without entries once its last entry's removal was dispatched",
                clip(&emptied.to_string()),
            );
        }
        None
    }
}
