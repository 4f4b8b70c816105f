//! Checkpoints: a fresh snapshot of every mirrored channel, taken on a separate observer
//! connection, compared with each connection's reducer mirror (INV-FOLD-1), each session's
//! chat catalog compared with its chats (CHAT-003), the snapshot invariants run on the
//! fresh states and their quiescence parts (INV-SESSION-1/2/3), each connection's tool-call
//! tracker and last turn timestamps (INV-TOOL-1, TOOL-007, INV-CHAT-6) and each session's
//! listSessions entry (INV-SUMMARY-2/3) held against them. Shared by the case runner and
//! the fuzzer.

use std::time::Duration;

use serde_json::{json, Value};

use super::commands::subscribe_params;
use super::{initialize, Conn, HandshakeError, Offer, ROOT};
use crate::checks::compare::{catalog_matches, fold_matches, instant, summary_matches, Kind};
use crate::checks::{invariants, Rule};
use crate::checks::{Skips, Violation};
use crate::transport::Connection;

// compat: old path, removed after the parallel branches merge
pub use super::DEFAULT_OFFER;

/// What a checkpoint found and how much it compared.
#[derive(Debug, Default)]
pub struct Checked {
    /// (connection or channel the finding belongs to, violation)
    pub violations: Vec<(String, Violation)>,
    /// Mirrors compared with a fresh snapshot (INV-FOLD-1).
    pub folds: usize,
    /// Each comparison made: (channel, connection, whether the fold equalled the snapshot).
    pub compared: Vec<(String, String, bool)>,
    /// Comparisons that could not be made, and why (INV-FOLD-1).
    pub skipped: Skips,
    pub catalog_entries: usize,
    /// How much each snapshot invariant looked at in the fresh snapshots.
    pub invariant_counts: Vec<(Rule, usize)>,
}

impl Checked {
    /// How much each rule looked at (folds, catalog entries, snapshot invariants): what the
    /// runner adds to its rows.
    pub fn counts(&self) -> impl Iterator<Item = (Rule, usize)> + '_ {
        [
            (Rule::InvFold1, self.folds),
            (Rule::Chat003, self.catalog_entries),
        ]
        .into_iter()
        .chain(self.invariant_counts.iter().copied())
    }
}

/// Every channel the open connections mirror (or lost track of), root excluded.
pub fn mirrored_channels<'a>(conns: impl Iterator<Item = &'a Conn>) -> Vec<String> {
    let mut all: Vec<String> = conns
        .filter(|c| !c.is_closed())
        .flat_map(|c| {
            c.checks
                .mirror
                .channels()
                .chain(c.checks.mirror.lost_channels())
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .filter(|c| c != ROOT)
        .collect();
    all.sort();
    all.dedup();
    all
}

/// Why INV-FOLD-1 skipped a mirror at a checkpoint.
pub const NO_SNAPSHOT: &str = "the observer got no snapshot of the channel";
/// Why INV-FOLD-1 skipped a mirror at a checkpoint.
pub const MIRROR_AHEAD: &str = "the mirror was ahead of the snapshot";
/// Why INV-FOLD-1 skipped a mirror at a checkpoint.
pub const MIRROR_LOST: &str =
    "the mirror had lost track of the channel (a snapshot or action it could not decode or fold)";

/// Whether a connection's mirror of a channel (its `serverSeq`, `None` when it does not
/// mirror the channel; `lost` when it stopped following it) can be compared with the
/// observer's snapshot taken at `from` (`None` when the observer got none): `Ok(true)`
/// compare, `Ok(false)` nothing to compare, `Err(why)` a comparison that had to be skipped.
pub fn fold_comparable(
    lost: bool,
    mirror_seq: Option<u64>,
    from: Option<u64>,
) -> Result<bool, &'static str> {
    match (mirror_seq, from) {
        _ if lost => Err(MIRROR_LOST),
        (None, _) => Ok(false),
        (Some(_), None) => Err(NO_SNAPSHOT),
        // The channel moved on between the snapshot and the mirror's last envelope.
        (Some(seq), Some(from)) if seq > from => Err(MIRROR_AHEAD),
        (Some(_), Some(_)) => Ok(true),
    }
}

/// Opens and initialises a connection that takes checkpoint snapshots, offering the same
/// protocol version as the connections it checks.
pub async fn observer(
    url: &str,
    timeout: Duration,
    client_id: &str,
    offer: &str,
) -> Result<Connection, String> {
    let mut observer = Connection::connect(url, timeout)
        .await
        .map_err(|e| format!("checkpoint observer: {e}"))?;
    match initialize(&mut observer, Offer::of([offer]).params(client_id), timeout).await {
        Ok(_) => Ok(observer),
        Err(HandshakeError::Refused(init)) => {
            Err(format!("checkpoint observer could not initialize: {init}"))
        }
        Err(error) => Err(format!("checkpoint observer: {error}")),
    }
}

/// [`compare`] on an observer connection of its own, closed afterwards.
pub async fn compare_once(
    conns: &mut [&mut Conn],
    channels: Vec<String>,
    url: &str,
    timeout: Duration,
    client_id: &str,
    offer: &str,
) -> Result<Checked, String> {
    let mut observer = observer(url, timeout, client_id, offer).await?;
    let checked = compare(conns, channels, &mut observer, timeout).await;
    observer.close().await;
    checked
}

/// The state of `channel` in a fresh snapshot taken on `observer`, which unsubscribes again
/// (so it can serve the next checkpoint), with the snapshot's `fromSeq` (`None` when it has
/// none: a fold is comparable with it only up to there, [`fold_comparable`]); `None` when no
/// snapshot comes.
pub async fn fresh_snapshot(
    observer: &mut Connection,
    channel: &str,
    timeout: Duration,
) -> Option<(Value, Option<u64>)> {
    observer.take_arrived();
    observer.take_backlog();
    let id = observer
        .send_request("subscribe", subscribe_params(channel))
        .await
        .ok()?;
    let answer = observer.response(id, timeout).await.ok();
    let _ = observer
        .send_notification("unsubscribe", json!({ "channel": channel }))
        .await;
    let snapshot = answer?.pointer("/result/snapshot")?.clone();
    let from = snapshot["fromSeq"].as_u64();
    Some((snapshot.get("state")?.clone(), from))
}

/// A fresh snapshot: channel, state, fromSeq.
type Fresh = (String, Value, u64);

/// Takes fresh snapshots of `channels` (and of the chats of every session among them) on
/// `observer` and compares them with the mirrors of `conns`. The observer unsubscribes
/// again, so it can serve the next checkpoint.
pub async fn compare(
    conns: &mut [&mut Conn],
    channels: Vec<String>,
    observer: &mut Connection,
    timeout: Duration,
) -> Result<Checked, String> {
    // What reached the observer since its last checkpoint is of no interest.
    observer.take_arrived();
    observer.take_backlog();
    let sessions: Vec<String> = channels
        .iter()
        .filter(|c| matches!(Kind::of(c), Some(Kind::Session) | None))
        .cloned()
        .collect();
    let listed_before = list_sessions_naming(observer, &sessions, timeout).await;
    let (fresh, unsnapped) = take_snapshots(observer, channels, timeout).await?;
    let mut checked = Checked::default();
    catch_up(conns, timeout, &mut checked).await;
    per_connection_chat_checks(conns, &fresh, &mut checked);
    compare_folds(conns, &fresh, &unsnapped, &mut checked);
    catalogs(&fresh, &mut checked);
    sessions_at_rest(&fresh, &mut checked);
    let listed_after = list_sessions_naming(observer, &sessions, timeout).await;
    summaries(listed_before, listed_after, &fresh, &mut checked);
    Ok(checked)
}

/// Subscribes `observer` to every channel (and to the chats of every session among them),
/// one round of subscriptions in flight at once, then unsubscribes again. Returns the
/// snapshots, and the channels it could not take a snapshot of (their mirrors go
/// uncompared).
async fn take_snapshots(
    observer: &mut Connection,
    mut channels: Vec<String>,
    timeout: Duration,
) -> Result<(Vec<Fresh>, Vec<String>), String> {
    let mut fresh: Vec<Fresh> = Vec::new();
    let mut unsnapped: Vec<String> = Vec::new();
    let mut asked = 0;
    while asked < channels.len() {
        let mut ids = Vec::new();
        for channel in &channels[asked..] {
            let id = observer
                .send_request("subscribe", subscribe_params(channel))
                .await
                .map_err(|e| format!("checkpoint subscribe {channel}: {e}"))?;
            ids.push((channel.clone(), id));
        }
        asked = channels.len();
        for (channel, id) in ids {
            let response = observer
                .response(id, timeout)
                .await
                .map_err(|e| format!("checkpoint subscribe {channel}: {e}"))?;
            let (Some(state), Some(from)) = (
                response.pointer("/result/snapshot/state"),
                response
                    .pointer("/result/snapshot/fromSeq")
                    .and_then(Value::as_u64),
            ) else {
                unsnapped.push(channel);
                continue;
            };
            if Kind::infer(&channel, state) == Some(Kind::Session) {
                for chat in state["chats"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| c["resource"].as_str())
                {
                    if !channels.iter().any(|c| c == chat) {
                        channels.push(chat.to_owned());
                    }
                }
            }
            fresh.push((channel, state.clone(), from));
        }
    }
    for (channel, _, _) in &fresh {
        let _ = observer
            .send_notification("unsubscribe", json!({ "channel": channel.as_str() }))
            .await;
    }
    Ok((fresh, unsnapped))
}

/// Every envelope the host sent before it took the snapshots is on each connection's wire
/// before the answer to a ping sent now: read up to it, so no mirror lags behind.
async fn catch_up(conns: &mut [&mut Conn], timeout: Duration, checked: &mut Checked) {
    let mut pings = Vec::new();
    for conn in conns.iter_mut().filter(|c| !c.is_closed()) {
        pings.push(conn.send_ping().await.ok());
    }
    for (conn, ping) in conns.iter_mut().filter(|c| !c.is_closed()).zip(pings) {
        if let Some(id) = ping {
            let _ = conn.response(id, timeout).await;
        }
        for located in conn.process_collect() {
            checked.violations.push((located.conn, located.violation));
        }
    }
}

/// The snapshot invariants on every fresh state, and every connection's mirror of a
/// channel folded against its fresh snapshot (INV-FOLD-1), or skipped with the reason.
fn compare_folds(
    conns: &mut [&mut Conn],
    fresh: &[Fresh],
    unsnapped: &[String],
    checked: &mut Checked,
) {
    for (channel, state, from) in fresh {
        let Some(kind) = Kind::infer(channel, state) else {
            continue;
        };
        let counts = &mut checked.invariant_counts;
        for violation in invariants::snapshot(channel, state, &mut |rule, n| counts.push((rule, n)))
        {
            checked.violations.push((channel.clone(), violation));
        }
        for conn in conns.iter_mut().filter(|c| !c.is_closed()) {
            let folded = conn.checks.mirror.state(channel);
            let seq = folded.as_ref().and(conn.checks.mirror.seq(channel));
            let lost = conn.checks.mirror.lost(channel).is_some();
            match fold_comparable(lost, seq, Some(*from)) {
                Ok(false) => continue,
                Err(why) => {
                    checked.skipped.add(Rule::InvFold1, why, 1);
                    continue;
                }
                Ok(true) => {}
            }
            let Some(folded) = folded else {
                continue;
            };
            checked.folds += 1;
            let violation = fold_matches(channel, kind, &folded, state);
            checked
                .compared
                .push((channel.clone(), conn.name.clone(), violation.is_none()));
            if let Some(violation) = violation {
                checked.violations.push((conn.name.clone(), violation));
            }
        }
    }
    for channel in unsnapped {
        for conn in conns.iter().filter(|c| !c.is_closed()) {
            let mirror = &conn.checks.mirror;
            if let Err(why) =
                fold_comparable(mirror.lost(channel).is_some(), mirror.seq(channel), None)
            {
                checked.skipped.add(Rule::InvFold1, why, 1);
            }
        }
    }
}

/// Every fresh session's chat catalog against the fresh states of its chats (CHAT-003).
fn catalogs(fresh: &[Fresh], checked: &mut Checked) {
    for (channel, state, _) in fresh
        .iter()
        .filter(|(c, state, _)| Kind::infer(c, state) == Some(Kind::Session))
    {
        let chats: Vec<(String, Value)> = fresh
            .iter()
            .filter(|(c, _, _)| {
                state["chats"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|k| k["resource"] == c.as_str())
            })
            .map(|(c, s, _)| (c.clone(), s.clone()))
            .collect();
        checked.catalog_entries += chats.len();
        for violation in catalog_matches(state, &chats) {
            checked.violations.push((channel.clone(), violation));
        }
    }
}

/// The quiescence parts of INV-SESSION-1/2/3 on every fresh session state with the fresh
/// states of its chats.
fn sessions_at_rest(fresh: &[Fresh], checked: &mut Checked) {
    for (session, state, _) in fresh
        .iter()
        .filter(|(c, state, _)| Kind::infer(c, state) == Some(Kind::Session))
    {
        let listed = state["chats"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default();
        let chats: Vec<(&str, &Value)> = fresh
            .iter()
            .filter(|(c, _, _)| listed.iter().any(|entry| entry["resource"] == c.as_str()))
            .map(|(c, s, _)| (c.as_str(), s))
            .collect();
        let counts = &mut checked.invariant_counts;
        let found = invariants::session_at_rest(session, state, &chats, &mut |rule, n| {
            counts.push((rule, n))
        });
        for violation in found {
            checked.violations.push((session.clone(), violation));
        }
    }
}

/// Per connection, on the fresh chat snapshots where its mirror is not ahead of the
/// snapshot (an older snapshot would show the chat moving backwards): the tool-call tracker
/// hears them (INV-TOOL-1, TOOL-007), and a chat whose turn started or ended since the
/// connection's own snapshot of it has the `modifiedAt` that event gave it (INV-CHAT-6).
fn per_connection_chat_checks(conns: &mut [&mut Conn], fresh: &[Fresh], checked: &mut Checked) {
    for (channel, state, from) in fresh
        .iter()
        .filter(|(c, state, _)| Kind::infer(c, state) == Some(Kind::Chat))
    {
        for conn in conns.iter_mut().filter(|c| !c.is_closed()) {
            if conn
                .checks
                .mirror
                .seq(channel)
                .is_none_or(|seq| seq > *from)
            {
                continue;
            }
            let mut found = Vec::new();
            let checks = &mut conn.checks;
            checks
                .tool_calls
                .snapshot(channel, state, &mut checks.invariant_counts, &mut found);
            if let Some(expected) = checks.mirror.modified_after_turn(channel) {
                *checks.invariant_counts.entry(Rule::InvChat6).or_insert(0) += 1;
                found.extend(modified_after_turn(channel, expected, &state["modifiedAt"]));
            }
            for violation in found {
                checked.violations.push((conn.name.clone(), violation));
            }
        }
    }
}

/// INV-CHAT-6: the chat's `modifiedAt` is an ISO 8601 instant equal to the one its last
/// observed turn start or end gave it.
fn modified_after_turn(channel: &str, expected: &str, actual: &Value) -> Option<Violation> {
    let wanted = instant(&Value::String(expected.to_owned()));
    let got = instant(actual);
    let parsed = got.as_str().is_some_and(|text| text.starts_with('@'));
    (!parsed || got != wanted).then(|| {
        Violation::new(
            Rule::InvChat6,
            format!("modifiedAt of {channel} is {expected}, as its last turn start or end set it"),
            format!("the fresh snapshot has modifiedAt {actual}"),
        )
    })
}

/// Every `listSessions` entry, following cursors (`None` when the host does not answer
/// with a list).
pub(super) async fn list_sessions(
    observer: &mut Connection,
    timeout: Duration,
) -> Option<Vec<Value>> {
    // A host that keeps handing out cursors is not followed forever.
    list_pages(observer, None, 64, |_| false, timeout).await
}

/// Entries of `listSessions` on a page of this size, newest first, find the sessions a
/// checkpoint looks at without the whole list: a catalog run's host keeps every case's
/// sessions, and listing them all twice per checkpoint made the run quadratic in its cases
/// (about a fifth of a catalog run's CPU, host and harness together).
const LIST_PAGE: u64 = 32;

/// Pages of `listSessions` this many at most before the whole list is asked for instead.
const LIST_PAGES: usize = 4;

/// The `listSessions` entries of `sessions` (and whatever else their pages hold): pages of
/// [`LIST_PAGE`], newest first, read until they name them all or the list ends; the whole
/// list as [`list_sessions`] reads it when [`LIST_PAGES`] pages do neither, or the host
/// does not answer a page (one that refuses `limit`). Nothing is asked for no session.
async fn list_sessions_naming(
    observer: &mut Connection,
    sessions: &[String],
    timeout: Duration,
) -> Option<Vec<Value>> {
    if sessions.is_empty() {
        return Some(Vec::new());
    }
    let names_all = |entries: &[Value]| {
        sessions.iter().all(|session| {
            entries
                .iter()
                .any(|e| super::is_channel(&e["resource"], session))
        })
    };
    match list_pages(observer, Some(LIST_PAGE), LIST_PAGES, names_all, timeout).await {
        Some(entries) => Some(entries),
        None => list_sessions(observer, timeout).await,
    }
}

/// `listSessions` pages of `limit` entries (the host's choice when `None`), following
/// cursors until the list ends or the entries so far are `enough`; `None` when the host
/// does not answer a page with a list, or after `pages` pages.
async fn list_pages(
    observer: &mut Connection,
    limit: Option<u64>,
    pages: usize,
    enough: impl Fn(&[Value]) -> bool,
    timeout: Duration,
) -> Option<Vec<Value>> {
    let mut entries = Vec::new();
    let mut cursor = Value::Null;
    for _ in 0..pages {
        let mut params = json!({ "channel": ROOT });
        if let Some(limit) = limit {
            params["limit"] = json!(limit);
        }
        if !cursor.is_null() {
            params["cursor"] = cursor;
        }
        let answer = observer
            .request("listSessions", params, timeout)
            .await
            .ok()?;
        let page = answer.get("result")?;
        entries.extend(page["items"].as_array()?.iter().cloned());
        cursor = page["nextCursor"].clone();
        if cursor.is_null() || enough(&entries) {
            return Some(entries);
        }
    }
    None
}

/// INV-SUMMARY-2/3 for every fresh session state whose `listSessions` entry read the same
/// before and after the snapshots were taken (the session was at rest meanwhile).
fn summaries(
    before: Option<Vec<Value>>,
    after: Option<Vec<Value>>,
    fresh: &[Fresh],
    checked: &mut Checked,
) {
    let (Some(before), Some(after)) = (before, after) else {
        return;
    };
    let entry = |list: &'_ [Value], session: &str| -> Option<Value> {
        list.iter()
            .find(|e| super::is_channel(&e["resource"], session))
            .cloned()
    };
    for (session, state, _) in fresh
        .iter()
        .filter(|(c, state, _)| Kind::infer(c, state) == Some(Kind::Session))
    {
        let (Some(first), Some(second)) = (entry(&before, session), entry(&after, session)) else {
            continue;
        };
        if first != second {
            continue;
        }
        let counts = &mut checked.invariant_counts;
        for violation in summary_matches(session, &second, state, &mut |rule, n| {
            counts.push((rule, n))
        }) {
            checked.violations.push((session.clone(), violation));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A mirror is compared only against a snapshot it is not ahead of; the rest is skipped
    /// with its reason, and a channel a connection does not mirror is neither.
    #[test]
    fn folds_are_compared_or_skipped_with_a_reason() {
        assert_eq!(fold_comparable(false, Some(4), Some(4)), Ok(true));
        assert_eq!(fold_comparable(false, Some(3), Some(4)), Ok(true));
        assert_eq!(fold_comparable(false, Some(5), Some(4)), Err(MIRROR_AHEAD));
        assert_eq!(fold_comparable(false, Some(5), None), Err(NO_SNAPSHOT));
        assert_eq!(fold_comparable(true, None, Some(4)), Err(MIRROR_LOST));
        assert_eq!(fold_comparable(true, None, None), Err(MIRROR_LOST));
        assert_eq!(fold_comparable(false, None, Some(4)), Ok(false));
        assert_eq!(fold_comparable(false, None, None), Ok(false));
    }
}
