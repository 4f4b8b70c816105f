//! Opening a sequence: its clients (initialized, the first on the root channel), its
//! session and default chat, every client subscribed to both.

use serde_json::{json, Value};

use super::{in_setup, refused, ExecError, Failure, Halt, Run};
use crate::checks::Rule;
use crate::client::{ends_creation, Conn, Offer, DEFAULT_OFFER, ROOT};
use crate::transport::Incoming;

impl Run<'_> {
    pub(super) async fn connect(&self, index: usize) -> Result<Conn, Halt> {
        let name = format!("c{}", index + 1);
        let client_id = format!("ahpspec-{}-{name}", self.token);
        Conn::connect(&self.url, self.cfg.timeout, &name, &client_id)
            .await
            .map(|conn| conn.sharing(&self.invalid))
            .map_err(|e| refused(index == 0, e))
    }

    /// A timestamp for the next dispatch: a second ahead of the wall clock and at least a
    /// millisecond after the previous one, so every turn the fuzzer starts changes the
    /// chat's modifiedAt (at millisecond resolution a fast sequence would otherwise leave
    /// it unchanged, and whether a missing announcement shows would depend on timing).
    pub(super) fn tick(&mut self) -> String {
        let ahead = jiff::Timestamp::now()
            .checked_add(jiff::SignedDuration::from_secs(1))
            .unwrap_or_else(|_| jiff::Timestamp::now());
        let next = match self.clock {
            Some(last) => last
                .checked_add(jiff::SignedDuration::from_millis(1))
                .map_or(ahead, |after| after.max(ahead)),
            None => ahead,
        };
        self.clock = Some(next);
        format!("{next:.3}")
    }

    /// createSession params for `uri` with the target profile's provider.
    pub(super) fn create_params(&self, uri: &str) -> Value {
        let mut params = json!({ "channel": uri });
        if let Some(provider) = &self.cfg.profile.provider {
            params["provider"] = json!(provider);
        }
        // The profile's first working directory (its second stays outside the session's
        // set, for chat/workingDirectorySet to be refused).
        if let Some(directory) = self.cfg.profile.working_directories.first() {
            params["workingDirectories"] = json!([directory]);
        }
        params
    }

    pub(super) async fn open_client(&mut self, index: usize) -> Result<(), Halt> {
        let mut conn = self.connect(index).await?;
        let roots: &[&str] = if index == 0 { &[ROOT] } else { &[] };
        let offer = Offer::of([DEFAULT_OFFER]).subscribing(roots.iter().copied());
        let initialized = conn.initialize(&offer, self.cfg.timeout).await;
        if index == 0 {
            self.first_init = initialized.as_ref().ok().cloned();
        }
        // Kept either way: a refused initialize's frames are the finding's.
        self.conns.push(conn);
        let initialized = initialized.map_err(|e| Halt::initialize(e, None))?;
        match snapshot_past_server_seq(&initialized) {
            Some(failure) => Err(Halt::Finding(failure)),
            None => Ok(()),
        }
    }

    pub(super) async fn setup(&mut self) -> Result<(), Halt> {
        self.open_client(0).await?;
        self.session = format!("ahp-session:/{}", self.token);
        let params = self.create_params(&self.session);
        let timeout = self.cfg.timeout;
        // Subscribing in the same breath sees the session while it is still `creating`, so
        // the envelope that ends it is checked too.
        let first = &mut self.conns[0];
        let create = first
            .send_create_session(params)
            .await
            .map_err(|e| in_setup("createSession", e))?;
        let subscribe = first
            .send_subscribe_immediate(&self.session)
            .await
            .map_err(|e| in_setup("subscribe", e))?;
        let created = first
            .response(create, timeout)
            .await
            .map_err(|e| in_setup("createSession", e))?;
        if created.get("error").is_some() {
            return Err(ExecError::Setup(format!("createSession failed: {created}")).into());
        }
        let subscribed = first
            .response(subscribe, timeout)
            .await
            .map_err(|e| in_setup("subscribe", e))?;
        let state = subscribed
            .pointer("/result/snapshot/state")
            .cloned()
            .unwrap_or(Value::Null);
        // The other clients connect while the session initialises.
        for index in 1..self.cfg.clients.max(1) {
            self.open_client(index).await?;
        }
        // A session may still be `creating`: wait for the envelope that ends it.
        if state["lifecycle"] == "creating" {
            let session = self.session.clone();
            let ended = self.conns[0]
                .wait_for(
                    timeout,
                    |item| matches!(item, Incoming::Message(m) if ends_creation(m, &session)),
                )
                .await;
            match ended {
                Ok(Incoming::Message(m)) if m["params"]["action"]["type"] == "session/ready" => {}
                Err(error @ crate::transport::TransportError::Closed) => {
                    return Err(in_setup("the session's creation", error))
                }
                Err(crate::transport::TransportError::Timeout(waited)) => {
                    // A creation that never ends is LIFECYCLE-003's failure, not the harness's.
                    return Err(Halt::Finding(Failure {
                        rule: Rule::Lifecycle003,
                        expected: format!(
                            "session/ready or session/creationFailed on {} within {waited:?}",
                            self.session
                        ),
                        actual: "the session stayed creating".into(),
                        op_index: None,
                    }));
                }
                other => {
                    return Err(ExecError::Setup(format!(
                        "the session did not become ready: {other:?}"
                    ))
                    .into())
                }
            }
        } else if !matches!(state["lifecycle"].as_str(), Some("ready" | "failed")) {
            return Err(Halt::Finding(Failure {
                rule: Rule::Lifecycle002,
                expected: "the first snapshot's lifecycle creating, ready or failed".into(),
                actual: format!("lifecycle {}", state["lifecycle"]),
                op_index: None,
            }));
        } else if state["lifecycle"] != "ready" {
            return Err(ExecError::Setup(format!(
                "the session did not become ready: {}",
                state["lifecycle"]
            ))
            .into());
        }
        self.chat = state["defaultChat"].as_str().unwrap_or_default().to_owned();
        for index in 0..self.conns.len() {
            let (session, chat) = (self.session.clone(), self.chat.clone());
            if index > 0 {
                self.subscribe(index, &session).await?;
            }
            self.subscribe(index, &chat).await?;
        }
        self.settle().await;
        Ok(())
    }

    pub(super) async fn subscribe(&mut self, index: usize, channel: &str) -> Result<Value, Halt> {
        let timeout = self.cfg.timeout;
        let response = self.conns[index]
            .subscribe_immediate(channel, timeout)
            .await
            .map_err(|e| in_setup(&format!("subscribe {channel}"), e))?;
        Ok(response
            .pointer("/result/snapshot/state")
            .cloned()
            .unwrap_or(Value::Null))
    }
}

/// INIT-004: every snapshot of an initialize result starts at or before the result's
/// `serverSeq` (the frame checks count such a `fromSeq` as that `serverSeq`, so the envelopes
/// after it are not SUB-002's).
fn snapshot_past_server_seq(answer: &Value) -> Option<Failure> {
    let result = answer.get("result")?;
    let server_seq = result.get("serverSeq")?.as_u64()?;
    let snapshot = result
        .get("snapshots")?
        .as_array()?
        .iter()
        .find(|s| s.get("fromSeq").and_then(Value::as_u64) > Some(server_seq))?;
    Some(Failure {
        rule: Rule::Init004,
        expected: format!("snapshot fromSeq <= the result's serverSeq {server_seq}"),
        actual: format!(
            "fromSeq {} for {}",
            snapshot["fromSeq"],
            snapshot["resource"].as_str().unwrap_or("a snapshot")
        ),
        op_index: None,
    })
}
