//! Steps that send: connecting and initialising, requests, notifications, raw and binary
//! frames, dispatches, and resuming with `reconnect`.

use super::*;
use crate::client;

impl Runner<'_> {
    pub(super) async fn open(&mut self, name: &str) -> Result<(), Stop> {
        if self.conns.contains_key(name) {
            return Ok(());
        }
        let client_id = format!("ahpspec-{}-{name}", self.ctx.token);
        let conn = Conn::connect(&self.ctx.url, self.ctx.timeout, name, &client_id)
            .await
            .map_err(|e| Stop::Harness(format!("{}: {e}", self.at)))?
            .sharing(&self.invalid);
        self.next_client += 1;
        self.vars.set(&format!("{name}.clientId"), json!(client_id));
        self.conns.insert(name.to_owned(), conn);
        Ok(())
    }

    pub(super) async fn dispatch(
        &mut self,
        on: &Option<String>,
        channel: &str,
        action: Value,
        invalid: bool,
    ) -> Result<i64, Stop> {
        let conn = self.conn(on)?;
        if invalid {
            conn.next_frame_invalid();
        }
        conn.dispatch(channel, &action)
            .await
            .map_err(|e| Stop::Harness(e.to_string()))
    }

    pub(super) async fn initialize(&mut self, s: &Initialize) -> StepResult {
        let name = Self::conn_name(&s.on);
        self.open(&name).await?;
        let versions = s
            .versions
            .clone()
            .unwrap_or_else(|| vec![self.ctx.offer.clone()]);
        let subscriptions = s
            .subscriptions
            .clone()
            .unwrap_or_else(|| vec![ROOT.to_owned()]);
        let subscriptions: Vec<String> = subscriptions
            .iter()
            .map(|u| self.subst_str(u))
            .collect::<Result<_, _>>()?;
        let client_id = match &s.client_id {
            Some(id) => {
                let id = self.subst_str(id)?;
                self.vars.set(&format!("{name}.clientId"), json!(id));
                id
            }
            None => self
                .conns
                .get(&name)
                .map(|c| c.client_id().to_owned())
                .unwrap_or_default(),
        };
        let capabilities = s.capabilities.as_ref().map(|c| self.subst(c)).transpose()?;
        let conn = self.conn(&s.on)?;
        conn.set_client_id(&client_id);
        let mut offer = client::Offer::of(&versions)
            .subscribing(subscriptions)
            .naming_the_client();
        if let Some(capabilities) = capabilities {
            offer = offer.declaring(capabilities);
        }
        let id = conn
            .send_initialize(&offer)
            .await
            .map_err(|e| Stop::Harness(e.to_string()))?;
        let key = s.name.clone().unwrap_or_else(|| format!("{name}.init"));
        self.requests.insert(key.clone(), (name.clone(), id));
        if s.send_only {
            return Ok(());
        }
        let timeout = self.ctx.timeout;
        let response = self.conn(&s.on)?.response(id, timeout).await;
        // A case that chooses the versions it offers is about version negotiation: a
        // refusal is its own failure. With the default offer, every case relies on
        // INIT-001 (an initialize result for 1.0.0).
        let rule = if s.versions.is_some() {
            own_rule(self.case)
        } else {
            Rule::Init001.id()
        };
        match response {
            Ok(response) if response.get("result").is_some() => {
                self.vars.set(&key, response.clone());
                self.received.insert(key, response);
                Ok(())
            }
            // Only a refusal of the offered versions (-32005) says the version is optional
            // for this server; any other error is a failure.
            Ok(response)
                if s.refused_means_not_applicable && response["error"]["code"] == -32005 =>
            {
                Err(Stop::NotApplicable(format!(
                    "the server does not accept {versions:?}: {}",
                    crate::checks::frame::clip(&response["error"].to_string())
                )))
            }
            Ok(response) => Err(self.prerequisite(
                rule,
                &s.on,
                format!("an initialize result for {versions:?}"),
                crate::checks::frame::clip(&response.to_string()),
            )),
            Err(error) => Err(self.transport_failure(
                error,
                rule,
                &s.on,
                format!("a response to initialize offering {versions:?}"),
            )),
        }
    }

    pub(super) async fn reconnect(&mut self, s: &Reconnect) -> StepResult {
        let name = Self::conn_name(&s.on);
        let mut old = self
            .conns
            .remove(&name)
            .ok_or_else(|| Stop::Harness(format!("{}: no connection {name} to resume", self.at)))?;
        old.close().await;
        for located in old.process(&self.ctx.schemas) {
            let context = context_frames(&old, located.frame + 1);
            self.always_on.push((located, context));
        }
        let last_seen = match &s.last_seen {
            Some(value) => self.subst(value)?,
            None => json!(old.highest_seq()),
        };
        let subscriptions: Vec<String> = s
            .subscriptions
            .iter()
            .map(|u| self.subst_str(u))
            .collect::<Result<_, _>>()?;
        let mut conn = Conn::resume(&old, &self.ctx.url, self.ctx.timeout)
            .await
            .map_err(|e| Stop::Harness(format!("{}: {e}", self.at)))?;
        let id = conn
            .send_reconnect(last_seen, subscriptions)
            .await
            .map_err(|e| Stop::Harness(e.to_string()))?;
        // Keep the old transcript in the case's report under its own name.
        self.conns
            .insert(format!("{name}~{}", self.conns.len()), old);
        self.conns.insert(name.clone(), conn);
        self.requests.insert(s.name.clone(), (name, id));
        Ok(())
    }

    pub(super) async fn send_request(&mut self, s: &Request) -> StepResult {
        let params = match &s.params {
            Some(p) => Some(self.subst(p)?),
            None => None,
        };
        let conn = self.conn(&s.on)?;
        let id = conn.next_id();
        let mut message = json!({ "jsonrpc": "2.0", "id": id, "method": s.method });
        if let Some(params) = params {
            message["params"] = params;
        }
        if s.intent.is_some() {
            conn.next_frame_invalid();
        }
        conn.send_json(&message)
            .await
            .map_err(|e| Stop::Harness(e.to_string()))?;
        let name = s.name.clone().unwrap_or_else(|| s.method.clone());
        self.requests.insert(name, (Self::conn_name(&s.on), id));
        Ok(())
    }

    pub(super) async fn send_notify(&mut self, s: &Notify) -> StepResult {
        let params = match &s.params {
            Some(p) => self.subst(p)?,
            None => Value::Null,
        };
        let conn = self.conn(&s.on)?;
        if s.intent.is_some() {
            conn.next_frame_invalid();
        }
        let mut message = json!({ "jsonrpc": "2.0", "method": s.method });
        if !params.is_null() {
            message["params"] = params;
        }
        conn.send_json(&message)
            .await
            .map_err(|e| Stop::Harness(e.to_string()))
    }

    pub(super) async fn send_raw(&mut self, s: &Raw) -> StepResult {
        let text = s.grown(self.subst_str(&s.text)?).map_err(Stop::Harness)?;
        let conn = self.conn(&s.on)?;
        conn.next_frame_invalid();
        conn.send_raw(&text)
            .await
            .map_err(|e| Stop::Harness(e.to_string()))
    }

    pub(super) async fn send_binary(&mut self, s: &Binary) -> StepResult {
        let conn = self.conn(&s.on)?;
        conn.send_binary(vec![0u8; s.bytes])
            .await
            .map_err(|e| Stop::Harness(e.to_string()))
    }

    pub(super) async fn send_dispatch(&mut self, s: &Dispatch) -> StepResult {
        let channel = self.subst_str(&s.channel)?;
        let action = self.subst(&s.action)?;
        let name = s.name.clone();
        let seq = self
            .dispatch(&s.on, &channel, action, s.intent.is_some())
            .await?;
        if let Some(name) = name {
            self.dispatches.insert(name, (Self::conn_name(&s.on), seq));
        }
        Ok(())
    }
}
