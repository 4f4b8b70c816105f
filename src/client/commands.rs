//! What a client sends, typed: the handshake, ping, subscriptions, sessions, reconnect and
//! dispatches (each request written once, here), and the transport's reads and raw writes
//! for the steps that send what a suite or a mutation spells out. Every frame goes through
//! the connection's own transport, so the always-on checks see it.

use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use super::{initialize_params, reconnect_params, Conn, HandshakeError, ROOT};
use crate::transport::{Connection, Incoming, TransportError};

/// What an `initialize` offers: the protocol versions, the channels subscribed in the same
/// breath (the field is left out unless set), and whether the client names itself
/// (`clientInfo`).
#[derive(Debug, Clone, Default)]
pub struct Offer {
    pub versions: Vec<String>,
    pub subscriptions: Option<Vec<String>>,
    pub client_info: bool,
    /// The client capabilities declared (`capabilities`, e.g. `{"mcpApps": {}}`); none
    /// when absent.
    pub capabilities: Option<Value>,
}

impl Offer {
    /// An offer of `versions` and nothing else.
    pub fn of<S: Into<String>>(versions: impl IntoIterator<Item = S>) -> Offer {
        Offer {
            versions: versions.into_iter().map(Into::into).collect(),
            ..Offer::default()
        }
    }

    /// The offer, subscribing to `channels` at initialize.
    pub fn subscribing<S: Into<String>>(mut self, channels: impl IntoIterator<Item = S>) -> Offer {
        self.subscriptions = Some(channels.into_iter().map(Into::into).collect());
        self
    }

    /// The offer, declaring `capabilities`.
    pub fn declaring(mut self, capabilities: Value) -> Offer {
        self.capabilities = Some(capabilities);
        self
    }

    /// The offer, naming the client (`clientInfo`: ahpspec and its version).
    pub fn naming_the_client(mut self) -> Offer {
        self.client_info = true;
        self
    }

    /// The `initialize` params of this offer from `client_id`.
    pub fn params(&self, client_id: &str) -> Value {
        let mut params = initialize_params(&self.versions, client_id);
        if self.client_info {
            params["clientInfo"] =
                json!({ "name": "ahpspec", "version": env!("CARGO_PKG_VERSION") });
        }
        if let Some(channels) = &self.subscriptions {
            params["initialSubscriptions"] = json!(channels);
        }
        if let Some(capabilities) = &self.capabilities {
            params["capabilities"] = capabilities.clone();
        }
        params
    }
}

/// `ping` params: the request every liveness and ordering probe sends.
pub fn ping_params() -> Value {
    json!({ "channel": ROOT })
}

/// A whole `ping` request with `id`, for the steps that send frames as written.
pub fn ping_request(id: impl Serialize) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "ping", "params": ping_params() })
}

/// `subscribe` params for `channel` with the host's default delivery.
pub(super) fn subscribe_params(channel: &str) -> Value {
    json!({ "channel": channel })
}

/// `subscribe` params for `channel` asking for every envelope at once (no batching), so
/// what a client sees does not depend on the host's latency budget.
fn immediate(channel: &str) -> Value {
    json!({ "channel": channel, "delivery": { "maxLatencyMs": 0 } })
}

/// The protocol's requests.
impl Conn {
    /// Connects client `name` (clientId `client_id`) to `url`.
    pub async fn connect(
        url: &str,
        timeout: Duration,
        name: &str,
        client_id: &str,
    ) -> Result<Conn, TransportError> {
        let link = Connection::connect(url, timeout).await?;
        Ok(Conn::new(name, client_id, link))
    }

    /// Sends `initialize` with `offer` from this connection's clientId and waits for the
    /// answer: the response when it carries a result.
    pub async fn initialize(
        &mut self,
        offer: &Offer,
        timeout: Duration,
    ) -> Result<Value, HandshakeError> {
        let params = offer.params(self.client_id());
        super::initialize(&mut self.link, params, timeout).await
    }

    /// Sends `initialize` with `offer` without waiting; the request id.
    pub async fn send_initialize(&mut self, offer: &Offer) -> Result<u64, TransportError> {
        let params = offer.params(self.client_id());
        self.link.send_request("initialize", params).await
    }

    /// Sends `reconnect` resuming this connection's clientId after `last_seen` with
    /// `subscriptions`, without waiting; the request id.
    pub async fn send_reconnect(
        &mut self,
        last_seen: impl Serialize,
        subscriptions: impl Serialize,
    ) -> Result<u64, TransportError> {
        let params = reconnect_params(self.client_id(), last_seen, subscriptions);
        self.link.send_request("reconnect", params).await
    }

    /// `reconnect` resuming this connection's clientId after `last_seen` with
    /// `subscriptions`, and its answer.
    pub async fn reconnect(
        &mut self,
        last_seen: impl Serialize,
        subscriptions: impl Serialize,
        timeout: Duration,
    ) -> Result<Value, TransportError> {
        let params = reconnect_params(self.client_id(), last_seen, subscriptions);
        self.link.request("reconnect", params, timeout).await
    }

    /// `ping` and its answer (a result or an error: any answer shows the host alive, and
    /// everything it sent before it has arrived).
    pub async fn ping(&mut self, timeout: Duration) -> Result<Value, TransportError> {
        self.link.request("ping", ping_params(), timeout).await
    }

    /// Sends `ping` without waiting; the request id, whose answer ends a wait.
    pub async fn send_ping(&mut self) -> Result<u64, TransportError> {
        self.link.send_request("ping", ping_params()).await
    }

    /// `subscribe` to `channel` with the host's default delivery.
    pub async fn subscribe(
        &mut self,
        channel: &str,
        timeout: Duration,
    ) -> Result<Value, TransportError> {
        let params = subscribe_params(channel);
        self.link.request("subscribe", params, timeout).await
    }

    /// `subscribe` to `channel`, every envelope at once (no batching).
    pub async fn subscribe_immediate(
        &mut self,
        channel: &str,
        timeout: Duration,
    ) -> Result<Value, TransportError> {
        self.link
            .request("subscribe", immediate(channel), timeout)
            .await
    }

    /// Sends `subscribe` to `channel`, every envelope at once, without waiting.
    pub async fn send_subscribe_immediate(&mut self, channel: &str) -> Result<u64, TransportError> {
        self.link
            .send_request("subscribe", immediate(channel))
            .await
    }

    /// `unsubscribe` from `channel` (a notification: nothing answers it).
    pub async fn unsubscribe(&mut self, channel: &str) -> Result<(), TransportError> {
        self.link
            .send_notification("unsubscribe", json!({ "channel": channel }))
            .await
    }

    /// `createSession` with `params` (the channel, and a provider when one is named).
    pub async fn create_session(
        &mut self,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, TransportError> {
        self.link.request("createSession", params, timeout).await
    }

    /// Sends `createSession` with `params` without waiting.
    pub async fn send_create_session(&mut self, params: Value) -> Result<u64, TransportError> {
        self.link.send_request("createSession", params).await
    }

    /// `disposeSession` of `channel`.
    pub async fn dispose_session(
        &mut self,
        channel: &str,
        timeout: Duration,
    ) -> Result<Value, TransportError> {
        let params = json!({ "channel": channel });
        self.link.request("disposeSession", params, timeout).await
    }

    /// Sends `action` to `channel` with this connection's next clientSeq, remembered so
    /// its echo can be checked (DISPATCH-001); returns that clientSeq.
    pub async fn dispatch(&mut self, channel: &str, action: &Value) -> Result<i64, TransportError> {
        self.client_seq += 1;
        let seq = self.client_seq;
        self.checks.dispatched.insert(seq, action.clone());
        let params = json!({ "channel": channel, "clientSeq": seq, "action": action });
        self.link
            .send_notification("dispatchAction", params)
            .await?;
        Ok(seq)
    }

    /// Any request, for methods the protocol adds and suites spell out: sends it and waits
    /// for its response.
    pub async fn request(
        &mut self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, TransportError> {
        self.link.request(method, params, timeout).await
    }

    /// Sends any request without waiting; the request id.
    pub async fn send_request(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<u64, TransportError> {
        self.link.send_request(method, params).await
    }

    /// Sends any notification.
    pub async fn send_notification(
        &mut self,
        method: &str,
        params: Value,
    ) -> Result<(), TransportError> {
        self.link.send_notification(method, params).await
    }
}

/// Frames as written: what suites and mutations send byte for byte.
impl Conn {
    /// The id the next request gets.
    pub fn next_id(&mut self) -> u64 {
        self.link.next_id()
    }

    pub async fn send_json(&mut self, message: &Value) -> Result<(), TransportError> {
        self.link.send_json(message).await
    }

    pub async fn send_raw(&mut self, text: &str) -> Result<(), TransportError> {
        self.link.send_raw(text).await
    }

    pub async fn send_binary(&mut self, bytes: Vec<u8>) -> Result<(), TransportError> {
        self.link.send_binary(bytes).await
    }
}

/// Reading: waits, answers and the backlog (see [`Connection`]).
impl Conn {
    /// Waits for the response to request `id`.
    pub async fn response(&mut self, id: u64, timeout: Duration) -> Result<Value, TransportError> {
        self.link.response(id, timeout).await
    }

    /// The next item (from the backlog first).
    pub async fn recv(&mut self, timeout: Duration) -> Result<Incoming, TransportError> {
        self.link.recv(timeout).await
    }

    /// The first item `pred` matches; the others stay in the backlog.
    pub async fn wait_for(
        &mut self,
        timeout: Duration,
        pred: impl FnMut(&Incoming) -> bool,
    ) -> Result<Incoming, TransportError> {
        self.link.wait_for(timeout, pred).await
    }

    /// Like [`Conn::wait_for`], but only items that arrive from now on count.
    pub async fn wait_for_new(
        &mut self,
        timeout: Duration,
        pred: impl FnMut(&Incoming) -> bool,
    ) -> Result<Incoming, TransportError> {
        self.link.wait_for_new(timeout, pred).await
    }

    /// Like [`Conn::wait_for`], but the item found stays in the backlog for later steps.
    pub async fn wait_keeping(
        &mut self,
        timeout: Duration,
        pred: impl FnMut(&Incoming) -> bool,
    ) -> Result<Incoming, TransportError> {
        self.link.wait_keeping(timeout, pred).await
    }

    /// The JSON messages received from transcript frame `from` on.
    pub fn received_since(&self, from: usize) -> impl Iterator<Item = Value> + '_ {
        self.link.received_since(from)
    }

    /// Reads whatever arrives within `quiet` into the backlog.
    pub async fn drain(&mut self, quiet: Duration) {
        self.link.drain(quiet).await;
    }

    /// Reads one more frame into the backlog within `timeout`; whether one came.
    pub async fn pull(&mut self, timeout: Duration) -> bool {
        self.link.pull(timeout).await
    }

    /// Moves everything that has already arrived into the backlog, without waiting.
    pub fn take_arrived(&mut self) {
        self.link.take_arrived();
    }

    /// Removes and returns the whole backlog (its frames stay in the transcript).
    pub fn take_backlog(&mut self) -> Vec<Incoming> {
        self.link.take_backlog()
    }

    /// Remembers the backlog, so that what later reads consume can be put back
    /// ([`Conn::rewind_backlog`]) or kept ([`Conn::release_backlog`]); see
    /// [`Connection::mark`].
    pub fn mark_backlog(&mut self) {
        self.link.mark();
    }

    /// Puts back everything consumed since the innermost mark.
    pub fn rewind_backlog(&mut self) {
        self.link.rewind();
    }

    /// Keeps what was consumed since the innermost mark, and ends it.
    pub fn release_backlog(&mut self) {
        self.link.release();
    }

    /// How many frames the transcript holds (a position later reads start from).
    pub fn frame_count(&self) -> usize {
        self.link.transcript().frames.len()
    }

    /// The last frame of the transcript: its direction and text.
    pub fn last_frame(&self) -> Option<&crate::transport::Frame> {
        self.link.transcript().frames.last()
    }

    pub fn is_closed(&self) -> bool {
        self.link.is_closed()
    }

    pub async fn close(&mut self) {
        self.link.close().await;
    }
}

/// Whether `message` is the action that ends the creation of `session` (`session/ready` or
/// `session/creationFailed`), on the session's channel in any spelling: one the host spells
/// its own way is ENV-004's to judge, not a creation that never ends.
pub fn ends_creation(message: &Value, session: &str) -> bool {
    message["method"] == "action"
        && super::is_channel(&message["params"]["channel"], session)
        && matches!(
            message["params"]["action"]["type"].as_str(),
            Some("session/ready" | "session/creationFailed")
        )
}
