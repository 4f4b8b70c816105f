//! The routines about issue 25's features, each only where the host advertises the feature
//! (a host without it gives nothing, never a finding): resource commands on the workspace
//! (RES-002, RES-008, RES-009), a terminal claimed by a connection without the claim
//! (TERM-003), authenticate with a wrong and a valid token (AUTH-001, AUTH-004), a
//! subscription to the root channel after initialize (SUB-001), and a chat created outside
//! the session's working directories (CHAT-007).

use serde_json::{json, Value};

use super::{ask, echo_before_ping, finding, ok, refused, rejected, Finding};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::{DEFAULT_OFFER, ROOT};
use crate::fuzz::exec::Run;
use crate::fuzz::model::outside_directory;

/// A request's params, what a conforming answer is, the rule a wrong answer breaks, and what
/// was expected of it.
type AnswerProbe<'a> = (Value, &'a dyn Fn(&Value) -> bool, Rule, &'a str);

impl Run<'_> {
    /// The root state as the first client (subscribed to the root channel) sees it.
    fn root_state(&self) -> Value {
        self.conns[0].mirror().state(ROOT).unwrap_or(Value::Null)
    }

    /// A fresh directory of the workspace for routine `kind` at operation `index`; `None`
    /// without a workspace (the routine then does nothing).
    pub(super) fn scratch_dir(&self, kind: &str, index: usize) -> Option<String> {
        let workspace = self.workspace.as_deref()?;
        Some(format!(
            "{}/ahpspec-{}-{kind}-{index}",
            workspace.trim_end_matches('/'),
            self.token
        ))
    }

    /// Deletes what a routine made in `dir`, whatever the host answers.
    pub(super) async fn remove_tree(&mut self, client: usize, dir: &str) {
        let timeout = self.cfg.timeout;
        let clean = json!({ "channel": ROOT, "uri": dir, "recursive": true });
        let _ = ask(&mut self.conns[client], "resourceDelete", clean, timeout).await;
    }

    /// Resource commands in a fresh directory of the workspace, deleted at the end.
    pub(super) async fn resources(&mut self, index: usize, client: usize) -> Option<Finding> {
        let dir = self.scratch_dir("resources", index)?;
        let found = self.resources_in(client, &dir).await.err().flatten();
        self.remove_tree(client, &dir).await;
        found
    }

    /// The three checks in `dir`: `Err(Some(…))` a finding, `Err(None)` nothing to judge.
    async fn resources_in(&mut self, client: usize, dir: &str) -> Result<(), Option<Finding>> {
        let timeout = self.cfg.timeout;
        let conn = &mut self.conns[client];
        let (a, d) = (format!("{dir}/a.txt"), format!("{dir}/d.txt"));
        let write = |uri: &str, data: &str| json!({ "channel": ROOT, "uri": uri, "data": data, "encoding": "utf-8" });
        let read = |uri: &str| json!({ "channel": ROOT, "uri": uri, "encoding": "utf-8" });
        // Making the directory and writing its files are other rules' (RES-004, and RES-008's
        // own write below): a host that refuses them leaves nothing to judge here.
        let steps = [
            ("resourceMkdir", json!({ "channel": ROOT, "uri": dir })),
            ("resourceWrite", write(&a, "ab")),
            ("resourceWrite", write(&d, "from d")),
        ];
        for (method, params) in steps {
            self.exec.operations += 1;
            if refused(&ask(conn, method, params, timeout).await?) {
                return Err(None);
            }
        }
        self.exec.operations += 5;
        let list = json!({ "channel": ROOT, "uri": a });
        let listed = ask(conn, "resourceList", list, timeout).await?;
        if !refused(&listed) {
            return Err(finding(
                Rule::Res002,
                "an error to resourceList of a file",
                clip(&listed.to_string()),
            ));
        }
        let mut append = write(&a, "cd");
        append["mode"] = json!("append");
        let appended = ask(conn, "resourceWrite", append, timeout).await?;
        let back = ask(conn, "resourceRead", read(&a), timeout).await?;
        let data = back.pointer("/result/data").and_then(Value::as_str);
        if refused(&appended) || data.is_some_and(|data| data != "abcd") {
            return Err(finding(
                Rule::Res008,
                "resourceWrite of \"cd\" in mode append to a file holding \"ab\" accepted, the file then reading \"abcd\"",
                format!("{} then {}", clip(&appended.to_string()), clip(&back.to_string())),
            ));
        }
        let copy = json!({ "channel": ROOT, "source": a, "destination": d, "failIfExists": true });
        let copied = ask(conn, "resourceCopy", copy, timeout).await?;
        let kept = ask(conn, "resourceRead", read(&d), timeout).await?;
        let data = kept.pointer("/result/data").and_then(Value::as_str);
        if !refused(&copied) || data.is_some_and(|data| data != "from d") {
            return Err(finding(
                Rule::Res009,
                "an error to resourceCopy with failIfExists onto an existing file, the file unchanged",
                format!("{} then {}", clip(&copied.to_string()), clip(&kept.to_string())),
            ));
        }
        Ok(())
    }

    /// A terminal created claimed by client `client`, claimed by a new connection subscribed
    /// to it: the claim's echo carries a rejection (TERM-003).
    pub(super) async fn steal_terminal(&mut self, index: usize, client: usize) -> Option<Finding> {
        self.root_state().get("terminals")?;
        let timeout = self.cfg.timeout;
        let uri = format!("ahp-terminal:/{}-claim-{index}", self.token);
        let conn = &mut self.conns[client];
        let owner = conn.client_id().to_owned();
        let claim = json!({ "kind": "client", "clientId": owner });
        let create = json!({ "channel": uri, "claim": claim, "cols": 80, "rows": 24 });
        self.exec.operations += 1;
        // Creating terminals is the terminal probe's matter (TERM-001).
        match ask(conn, "createTerminal", create, timeout).await {
            Ok(answer) if !refused(&answer) => {}
            Ok(_) => return None,
            Err(found) => return found,
        }
        let found = self.claim_from_elsewhere(&uri).await;
        let dispose = json!({ "channel": uri });
        let _ = ask(&mut self.conns[client], "disposeTerminal", dispose, timeout).await;
        found
    }

    async fn claim_from_elsewhere(&mut self, uri: &str) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        if !ok(&link.subscribe_immediate(uri, timeout).await) {
            link.close().await;
            return None;
        }
        let claim = json!({ "kind": "client", "clientId": link.client_id() });
        let action = json!({ "type": "terminal/claimed", "claim": claim });
        let echo = echo_before_ping(&mut link, uri, &action, timeout).await;
        self.exec.operations += 1;
        link.close().await;
        // No echo at all is DISPATCH-001's matter.
        match echo {
            Some(echo) if !rejected(&echo) => finding(
                Rule::Term003,
                "terminal/claimed from a connection that does not hold the claim rejected",
                format!("accepted: {}", clip(&echo.to_string())),
            ),
            _ => None,
        }
    }

    /// authenticate for the profile's protected resource on a new connection: a token it
    /// does not accept is refused (AUTH-001), and so are params without a token (AUTH-001);
    /// `expiresIn` 0 gets -32602 (TRANSPORT-009); the profile's token is accepted (AUTH-004). The
    /// token never shows: the connection's frames are not the run's, and a finding shows
    /// the answer only.
    pub(super) async fn authenticate(&mut self) -> Option<Finding> {
        let auth = self.cfg.profile.auth.clone()?;
        let advertised = self.root_state()["agents"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|a| a["protectedResources"].as_array().into_iter().flatten())
            .any(|r| r["resource"] == auth.resource.as_str());
        if !advertised {
            return None;
        }
        let timeout = self.cfg.timeout;
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        let mut wrong = "ahpspec-fuzz-not-the-token".to_owned();
        if wrong == auth.token {
            wrong.push_str("-either");
        }
        let push =
            |token: &str| json!({ "channel": ROOT, "resource": auth.resource, "token": token });
        let mut zero_expiry = push(&auth.token);
        zero_expiry["expiresIn"] = json!(0);
        let accepted = |answer: &Value| !refused(answer);
        let invalid_params = |answer: &Value| answer["error"]["code"] == -32602;
        let probes: [AnswerProbe; 4] = [
            (
                push(&wrong),
                &refused,
                Rule::Auth001,
                "an error to authenticate with a token the server does not accept",
            ),
            (
                json!({ "channel": ROOT, "resource": auth.resource }),
                &refused,
                Rule::Auth001,
                "an error to authenticate without a token",
            ),
            (
                zero_expiry,
                &invalid_params,
                Rule::Transport009,
                "-32602 to authenticate with expiresIn 0, below the schema's minimum of 1",
            ),
            (
                push(&auth.token),
                &accepted,
                Rule::Auth004,
                "a result to authenticate with the profile's token for its advertised resource",
            ),
        ];
        let mut found = None;
        for (params, conforms, rule, expected) in probes {
            self.exec.operations += 1;
            match ask(&mut link, "authenticate", params, timeout).await {
                Err(missing) => found = missing,
                Ok(answer) if !conforms(&answer) => {
                    found = finding(rule, expected, clip(&answer.to_string()));
                }
                Ok(_) => continue,
            }
            break;
        }
        link.close().await;
        found
    }

    /// A new connection, initialized without subscriptions, subscribes to the root channel:
    /// the snapshot is of `ahp-root://` with an integer fromSeq (SUB-001), its state
    /// without a session list (ROOT-001).
    pub(super) async fn subscribe_root(&mut self) -> Option<Finding> {
        let timeout = self.cfg.timeout;
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        self.exec.operations += 1;
        let answer = ask(&mut link, "subscribe", json!({ "channel": ROOT }), timeout).await;
        link.close().await;
        let answer = match answer {
            Ok(answer) => answer,
            Err(found) => return found,
        };
        let snapshot = answer.pointer("/result/snapshot").unwrap_or(&Value::Null);
        let integer = snapshot["fromSeq"].is_i64() || snapshot["fromSeq"].is_u64();
        if snapshot["resource"] != ROOT || !integer {
            return finding(
                Rule::Sub001,
                "a snapshot of resource ahp-root:// with an integer fromSeq",
                clip(&answer.to_string()),
            );
        }
        // ROOT-001: sessions are listed by listSessions, never in the root state.
        let state = &snapshot["state"];
        if let Some(list) = ["sessions", "items"].iter().find_map(|k| state.get(*k)) {
            return finding(
                Rule::Root001,
                "no session list in the root state",
                format!(
                    "the root snapshot's state lists {}",
                    clip(&list.to_string())
                ),
            );
        }
        None
    }

    /// createChat in the session with a directory outside its set: refused (CHAT-007).
    pub(super) async fn chat_outside(&mut self, index: usize, client: usize) -> Option<Finding> {
        let profile = &self.cfg.profile;
        // The session was made in the profile's first directory: without one it has no set.
        profile.working_directories.first()?;
        let capable = self.root_state()["agents"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| {
                profile.provider.is_none()
                    || a["provider"] == profile.provider.as_deref().unwrap_or_default()
            })
            .any(|a| {
                a.pointer("/capabilities/multipleChats").is_some()
                    && a.pointer("/capabilities/multipleWorkingDirectories")
                        .is_some()
            });
        if !capable {
            return None;
        }
        let outside = outside_directory(profile);
        let chat = format!("ahp-chat:/{}-outside-{index}", self.token);
        let params =
            json!({ "channel": self.session, "chat": chat, "workingDirectories": [outside] });
        let timeout = self.cfg.timeout;
        self.exec.operations += 1;
        let answer = ask(&mut self.conns[client], "createChat", params, timeout).await;
        match answer {
            Err(found) => found,
            Ok(answer) if !refused(&answer) => finding(
                Rule::Chat007,
                "an error to createChat with a working directory outside the session's set",
                clip(&answer.to_string()),
            ),
            Ok(_) => None,
        }
    }
}
