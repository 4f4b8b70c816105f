//! Always-on rows blame only what the server said, and judge what they saw wherever it
//! arrived. Captures written here (real files, checked offline by `ahpspec check`'s checks):
//! a client that spells its session URIs the legacy way, whose echoes and session actions
//! the host then sends on that URI (the spelling is the client's: neither ENV-004 nor SUB-012
//! fails); and a host that streams a turn on the session channel instead of the chat's
//! (ENV-004 fails, and TURN-003/004/005 still judge the turn's deltas, parts and turn ids).

use ahpspec::capture::{Peer, Record, Recorder};
use ahpspec::checks::frame::Schemas;
use ahpspec::verdict::{CaseResult, RunReport, Verdict};
use serde_json::{json, Value};

mod run_support;
use run_support::TempDir;

/// One connection's frames, in order: (who sent it, the message).
type Frames = Vec<(Peer, Value)>;

/// The capture of one connection with `frames`, checked offline: the report and the
/// client's problems.
fn checked(name: &str, frames: &Frames) -> (RunReport, Vec<String>) {
    let dir = TempDir::new(name);
    let path = dir.path().join(format!("{name}.jsonl"));
    let recorder = Recorder::create(&path).expect("capture");
    recorder.open("1", "/", None);
    for (index, (from, message)) in frames.iter().enumerate() {
        recorder.write(&Record::text(
            "1",
            *from,
            index as f64,
            &message.to_string(),
        ));
    }
    recorder.finish().expect("capture written");
    let schemas = Schemas::load(None).expect("schemas");
    let checked = ahpspec::capture::check(&[path], &schemas, 5_000.0).expect("capture checked");
    (checked.report, checked.client_problems)
}

fn row<'a>(report: &'a RunReport, id: &str) -> &'a CaseResult {
    report
        .cases
        .iter()
        .find(|c| c.info.id == id)
        .unwrap_or_else(|| panic!("no row {id}"))
}

fn request(id: u64, method: &str, params: Value) -> (Peer, Value) {
    (
        Peer::Client,
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }),
    )
}

fn result(id: u64, result: Value) -> (Peer, Value) {
    (
        Peer::Server,
        json!({ "jsonrpc": "2.0", "id": id, "result": result }),
    )
}

fn dispatch(channel: &str, seq: i64, action: Value) -> (Peer, Value) {
    (
        Peer::Client,
        json!({ "jsonrpc": "2.0", "method": "dispatchAction",
                "params": { "channel": channel, "clientSeq": seq, "action": action } }),
    )
}

/// An envelope from the host: its own action, or the echo of `origin`'s clientSeq.
fn envelope(channel: &str, seq: u64, action: Value, origin: Option<i64>) -> (Peer, Value) {
    let mut params = json!({ "channel": channel, "serverSeq": seq, "action": action });
    if let Some(client_seq) = origin {
        params["origin"] = json!({ "clientId": "client-1", "clientSeq": client_seq });
    }
    (
        Peer::Server,
        json!({ "jsonrpc": "2.0", "method": "action", "params": params }),
    )
}

/// A client that names its session `copilot:/s1` (a legacy spelling), and the host that
/// goes along: its session actions and its echo of the client's rename come on that URI.
/// `host_legacy`: the host also uses legacy URIs of its own choosing.
fn legacy_session(host_legacy: bool) -> Frames {
    let mut init = json!({ "protocolVersion": "1.0.0", "serverSeq": 0, "snapshots": [] });
    if host_legacy {
        init["defaultDirectory"] = json!("agenthost:/home");
    }
    let mut frames = vec![
        request(
            1,
            "initialize",
            json!({ "channel": "ahp-root://", "protocolVersions": ["1.0.0"], "clientId": "client-1" }),
        ),
        result(1, init),
        request(2, "createSession", json!({ "channel": "copilot:/s1" })),
        result(2, Value::Null),
        envelope("copilot:/s1", 1, json!({ "type": "session/ready" }), None),
        dispatch(
            "copilot:/s1",
            1,
            json!({ "type": "session/titleChanged", "title": "renamed" }),
        ),
        envelope(
            "copilot:/s1",
            2,
            json!({ "type": "session/titleChanged", "title": "renamed" }),
            Some(1),
        ),
    ];
    if host_legacy {
        frames.push(envelope(
            "agenthost:/s2",
            3,
            json!({ "type": "session/ready" }),
            None,
        ));
    }
    frames
}

#[test]
fn a_spelling_the_client_chose_is_the_clients() {
    let (report, problems) = checked("legacy-client", &legacy_session(false));
    let legacy = row(&report, "SUB-012");
    assert_eq!(legacy.verdict, Verdict::Pass, "{}", legacy.summary);
    // Every envelope came on the client's channel: ENV-004 had nothing of the host's to judge.
    let env = row(&report, "ENV-004");
    assert_eq!(env.verdict, Verdict::NotTestable, "{}", env.summary);
    assert!(
        row(&report, "ENV-004")
            .summary
            .contains(ahpspec::checks::words::CLIENT_CHANNEL),
        "{}",
        row(&report, "ENV-004").summary
    );
    // The client's frames are its problems: createSession and its dispatch name a legacy URI.
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems.iter().all(|p| p.contains("copilot:/s1")));
}

#[test]
fn a_legacy_spelling_the_host_chose_is_the_hosts() {
    let (report, _) = checked("legacy-host", &legacy_session(true));
    for id in ["ENV-004", "SUB-012"] {
        let row = row(&report, id);
        assert_eq!(row.verdict, Verdict::Fail, "{id}: {}", row.summary);
    }
    assert!(row(&report, "SUB-012").summary.contains("agenthost:/home"));
    assert!(row(&report, "ENV-004").summary.contains("agenthost:/s2"));
}

/// A host that echoes a turn start dispatched on the chat, and streams the whole turn, on
/// the session channel. `delta_part`: the part the second delta names.
fn turn_on_session_channel(delta_part: &str) -> Frames {
    let session = "ahp-session:/s";
    let turn = |action: Value| {
        let mut action = action;
        action["turnId"] = json!("t1");
        action
    };
    vec![
        request(
            1,
            "initialize",
            json!({ "channel": "ahp-root://", "protocolVersions": ["1.0.0"], "clientId": "client-1" }),
        ),
        result(
            1,
            json!({ "protocolVersion": "1.0.0", "serverSeq": 0, "snapshots": [] }),
        ),
        dispatch(
            "ahp-chat:/c",
            1,
            turn(
                json!({ "type": "chat/turnStarted", "startedAt": "2026-01-01T00:00:00Z",
                         "message": { "text": "hi", "origin": { "kind": "user" } } }),
            ),
        ),
        envelope(
            session,
            1,
            turn(
                json!({ "type": "chat/turnStarted", "startedAt": "2026-01-01T00:00:00Z",
                         "message": { "text": "hi", "origin": { "kind": "user" } } }),
            ),
            Some(1),
        ),
        envelope(
            session,
            2,
            turn(json!({ "type": "chat/responsePart",
                         "part": { "kind": "markdown", "id": "p1", "content": "" } })),
            None,
        ),
        envelope(
            session,
            3,
            turn(json!({ "type": "chat/delta", "partId": "p1", "content": "a" })),
            None,
        ),
        envelope(
            session,
            4,
            turn(json!({ "type": "chat/delta", "partId": delta_part, "content": "b" })),
            None,
        ),
        envelope(
            session,
            5,
            turn(json!({ "type": "chat/turnComplete", "duration": 5 })),
            None,
        ),
    ]
}

#[test]
fn chat_actions_on_a_session_channel_are_judged_where_they_arrived() {
    let (report, _) = checked("turn-on-session", &turn_on_session_channel("p1"));
    // The wrong channel is ENV-004's, on the host's echo and its own actions.
    let env = row(&report, "ENV-004");
    assert_eq!(env.verdict, Verdict::Fail, "{}", env.summary);
    assert!(env.summary.starts_with("5 violation(s)"), "{}", env.summary);
    // The turn's content was still seen, and judged.
    for (id, summary) in [
        ("TURN-003", "checked 2 text deltas; no violation"),
        ("TURN-004", "checked 3 host streaming actions; no violation"),
        ("TURN-005", "checked 1 response parts; no violation"),
    ] {
        let row = row(&report, id);
        assert_eq!(row.verdict, Verdict::Pass, "{id}: {}", row.summary);
        assert_eq!(row.summary, summary, "{id}");
    }
}

#[test]
fn a_delta_for_a_missing_part_breaks_turn_003_wherever_it_arrived() {
    let (report, _) = checked("turn-on-session-bad", &turn_on_session_channel("p2"));
    let deltas = row(&report, "TURN-003");
    assert_eq!(deltas.verdict, Verdict::Fail, "{}", deltas.summary);
    assert!(
        deltas
            .summary
            .starts_with("1 violation(s) in 2 text deltas"),
        "{}",
        deltas.summary
    );
}
