//! Leaving a shared server as it was found: the sessions (and automations) a run created,
//! disposed at its end.
//!
//! A server somebody else runs lives on between sequences. A campaign that left every
//! sequence's sessions behind made that server's session list, which every checkpoint reads
//! whole, grow with the campaign: against the built-in host served on its own, a second
//! campaign of 45 s ran at 125 operations/s where the first 15 s had run at 295.

use std::time::Duration;

use serde_json::json;

use super::checkpoint::{list_sessions, observer};
use super::{Conn, DEFAULT_OFFER};
use crate::transport::{Connection, Direction};

/// The sessions the host named in its answers to `conn`'s requests: the new session of a
/// chat moved to one (`moveChat`'s `result.session`). They are not in the run's namespace.
pub fn sessions_made(conn: &Conn) -> Vec<String> {
    let mut asked: Vec<u64> = Vec::new();
    let mut made = Vec::new();
    for frame in &conn.link.transcript().frames {
        // Only frames that can be a moveChat or its answer are parsed.
        let wanted = match frame.direction {
            Direction::Sent => frame.text.contains("\"moveChat\""),
            Direction::Received => !asked.is_empty() && frame.text.contains("\"session\""),
        };
        if !wanted {
            continue;
        }
        let Ok(message) = serde_json::from_str::<serde_json::Value>(&frame.text) else {
            continue;
        };
        let Some(id) = message["id"].as_u64() else {
            continue;
        };
        match frame.direction {
            Direction::Sent if message["method"] == "moveChat" => asked.push(id),
            Direction::Received if asked.contains(&id) => {
                if let Some(session) = message["result"]["session"].as_str() {
                    made.push(session.to_owned());
                }
            }
            _ => {}
        }
    }
    made
}

/// Leaves the server as the run found it, on `conn`: removes the run's automations (with
/// their runs' sessions), disposes the sessions the host `made` for it (see
/// [`sessions_made`]) and every session `listSessions` lists in the namespace
/// `ahp-session:/{token}` (that URI itself, or one that continues it with `-`): the URIs the
/// run named with its own token, and no one else's. So do the listed sessions whose origin
/// names an automation of the run's (a case that removed its automation left its runs'
/// sessions behind). A host that does not list or dispose is left as it is: this is
/// housekeeping, not a check.
pub async fn sweep(conn: &mut Connection, token: &str, made: &[String], timeout: Duration) {
    remove_own_automations(conn, token, timeout).await;
    dispose_sessions(conn, made, timeout).await;
    let Some(listed) = list_sessions(conn, timeout).await else {
        return;
    };
    let own = format!("ahp-session:/{token}");
    let own_automations = format!("ahp-automation:/ahpspec-{token}");
    let named: Vec<String> = listed
        .iter()
        .filter(|entry| {
            let of_automation = entry["origin"]["automation"].as_str();
            of_automation.is_some_and(|uri| in_namespace(uri, &own_automations))
                || entry["resource"]
                    .as_str()
                    .is_some_and(|uri| in_namespace(uri, &own))
        })
        .filter_map(|entry| entry["resource"].as_str())
        .map(str::to_owned)
        .collect();
    dispose_sessions(conn, &named, timeout).await;
}

/// [`sweep`] on a connection of its own to `url` (as `client_id`), closed afterwards;
/// nothing when it cannot be opened.
pub async fn sweep_at(url: &str, client_id: &str, token: &str, made: &[String], timeout: Duration) {
    let Ok(mut conn) = observer(url, timeout, client_id, DEFAULT_OFFER).await else {
        return;
    };
    sweep(&mut conn, token, made, timeout).await;
    conn.close().await;
}

/// Disposes `sessions` on `conn`, whatever each answer.
async fn dispose_sessions(conn: &mut Connection, sessions: &[String], timeout: Duration) {
    for session in sessions {
        let params = json!({ "channel": session });
        let _ = conn.request("disposeSession", params, timeout).await;
    }
}

/// Removes, on `conn`, the automations of the catalogue in the namespace
/// `ahp-automation:/ahpspec-{token}` (the URIs cases create) with `automation/removed`, after
/// disposing the primary sessions of their runs (which the host named, outside the run's
/// namespace). Nothing when the host has no catalogue to subscribe to.
async fn remove_own_automations(conn: &mut Connection, token: &str, timeout: Duration) {
    const CATALOGUE: &str = "ahp-automations://";
    let params = json!({ "channel": CATALOGUE });
    let Ok(answer) = conn.request("subscribe", params, timeout).await else {
        return;
    };
    let own = format!("ahp-automation:/ahpspec-{token}");
    let entries = answer["result"]["snapshot"]["state"]["entries"].clone();
    let mine = entries.as_array().into_iter().flatten().filter(|entry| {
        entry["resource"]
            .as_str()
            .is_some_and(|uri| in_namespace(uri, &own))
    });
    let mut seq = 0;
    for entry in mine {
        let sessions: Vec<String> = entry["runs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|run| run["primarySession"].as_str().map(str::to_owned))
            .collect();
        dispose_sessions(conn, &sessions, timeout).await;
        seq += 1;
        let action = json!({ "type": "automation/removed", "resource": entry["resource"] });
        let params = json!({ "channel": CATALOGUE, "clientSeq": seq, "action": action });
        let _ = conn.send_notification("dispatchAction", params).await;
    }
    let _ = conn
        .send_notification("unsubscribe", json!({ "channel": CATALOGUE }))
        .await;
    // The removals are notifications: a request answered after them has seen them through.
    let _ = conn
        .request("ping", json!({ "channel": super::ROOT }), timeout)
        .await;
}

/// Whether `uri` is `own` or continues it with `-` (a token is not padded: `…/fz12` must
/// not claim `…/fz123`).
fn in_namespace(uri: &str, own: &str) -> bool {
    uri.strip_prefix(own)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('-'))
}

#[cfg(test)]
mod tests {
    use super::in_namespace;

    #[test]
    fn a_namespace_is_the_uri_or_its_continuation_with_a_dash() {
        let own = "ahp-session:/fz12";
        assert!(in_namespace("ahp-session:/fz12", own));
        assert!(in_namespace("ahp-session:/fz12-gone-3", own));
        assert!(in_namespace("ahp-session:/fz12-case4-f", own));
        assert!(!in_namespace("ahp-session:/fz123", own));
        assert!(!in_namespace("ahp-session:/fz123-gone-3", own));
        assert!(!in_namespace("ahp-session:/other", own));
        assert!(!in_namespace("ahp-chat:/fz12-x", own));
    }
}
