//! The AHP client layer, between the transport and both runners (the case runner in
//! [`crate::engine`] and the fuzzer in [`crate::fuzz`], peers over it): the handshake and
//! subscribe messages written once, a connection whose every frame is recorded and run
//! through the always-on checks and whose dispatches carry its own clientSeq ([`Conn`]),
//! checkpoints that hold its reducer mirrors against fresh snapshots ([`checkpoint`]), and
//! the target profile that says how to drive the server's agent ([`profile`]).

pub mod checkpoint;
mod commands;
mod conn;
pub mod profile;
mod spelling;
mod sweep;

use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::transport::{Connection, TransportError};

pub use commands::{ends_creation, ping_params, ping_request, Offer};
pub use conn::{json_equal, Conn, Located};
pub use profile::Profile;
pub use spelling::{is_channel, json_finds, same_channel};
pub use sweep::{sessions_made, sweep, sweep_at};

/// The root channel: requests that belong to no session or chat go to it.
pub const ROOT: &str = "ahp-root://";

/// The protocol version a connection offers unless told otherwise.
pub const DEFAULT_OFFER: &str = "1.0.0";

/// A short token unique to this moment, for URIs and client ids of one run.
pub fn unique_token(prefix: &str) -> String {
    format!(
        "{prefix}{:x}",
        jiff::Timestamp::now().as_nanosecond() as u64 & 0xffff_ffff
    )
}

/// Why a handshake did not give a result.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("{0}")]
    Transport(#[from] TransportError),
    /// The host answered without a result (an error response); the whole answer.
    #[error("{0}")]
    Refused(Value),
}

/// `initialize` params offering `versions` as `client_id`; a caller that sends
/// `clientInfo` or `initialSubscriptions` adds them (in that order).
pub fn initialize_params(versions: impl Serialize, client_id: &str) -> Value {
    json!({ "channel": ROOT, "protocolVersions": versions, "clientId": client_id })
}

/// `reconnect` params resuming `client_id` after `last_seen` with `subscriptions`.
pub fn reconnect_params(
    client_id: &str,
    last_seen: impl Serialize,
    subscriptions: impl Serialize,
) -> Value {
    json!({ "channel": ROOT, "clientId": client_id, "lastSeenServerSeq": last_seen,
            "subscriptions": subscriptions })
}

/// Sends `initialize` with `params` and waits for the answer: the response when it
/// carries a result.
pub async fn initialize(
    link: &mut Connection,
    params: Value,
    timeout: Duration,
) -> Result<Value, HandshakeError> {
    let answer = link.request("initialize", params, timeout).await?;
    if answer.get("result").is_none() {
        return Err(HandshakeError::Refused(answer));
    }
    Ok(answer)
}
