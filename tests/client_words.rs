//! Always-on rows blame only what the server said, and judge what they saw wherever it
//! arrived. Captures written here (real files, checked offline by `ahpspec check`'s checks):
//! a client that spells its session URIs the legacy way, whose echoes and session actions
//! the host then sends on that URI (the spelling is the client's: neither ENV-004 nor SUB-012
//! fails); and a host that streams a turn on the session channel instead of the chat's
//! (ENV-004 fails, and TURN-003/004/005 still judge the turn's deltas, parts and turn ids).
//! And one connection's checks fed frame by frame: the answer to a request and the echo of a
//! dispatch sent invalid are left to the rule that message tests, counted as skipped; so is
//! the copy another connection of the same runner gets of such an echo.

use ahpspec::capture::{Peer, Record, Recorder};
use ahpspec::checks::frame::Schemas;
use ahpspec::checks::stream::StreamChecks;
use ahpspec::verdict::{CaseResult, RunReport, Verdict};
use serde_json::{json, Value};

mod run_support;
use run_support::{ahpspec, report_json, show, verdicts, TempDir};

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

/// The rules a host frame broke on a connection.
fn broke(checks: &mut StreamChecks, schemas: &Schemas, frame: &Value) -> Vec<String> {
    checks
        .received(&frame.to_string(), schemas)
        .iter()
        .map(|v| v.rule.id().to_owned())
        .collect()
}

fn skips_of(checks: &StreamChecks, rule: &str) -> Vec<(String, usize)> {
    let mut counts = Default::default();
    let mut skipped = ahpspec::checks::Skips::default();
    checks.tally(&mut counts, &mut skipped);
    let rule = *ahpspec::checks::Rule::ALWAYS_ON
        .iter()
        .find(|r| r.id() == rule)
        .expect("an always-on rule");
    skipped
        .of(rule)
        .into_iter()
        .map(|(why, n)| (why.to_owned(), n))
        .collect()
}

/// An accepted echo of a dispatch the harness sent invalid on purpose (a case's malformed
/// title change) is the case's to judge: neither INV-SCHEMA-1 nor DISPATCH-001 judges the
/// action it carries back, and both say they skipped it. The same holds when the invalid
/// dispatch was not declared (a harness error, or behind a proxy a client's problem).
#[test]
fn the_echo_of_an_invalid_dispatch_is_left_to_the_rule_it_tests() {
    let schemas = Schemas::load(None).expect("schemas");
    for declared in [true, false] {
        let mut checks = StreamChecks::new("client-1");
        if declared {
            checks.intended_invalid.push(0);
        }
        let (_, sent) = dispatch(
            "ahp-session:/s",
            1,
            json!({ "type": "session/titleChanged", "title": 42 }),
        );
        checks
            .dispatched
            .insert(1, json!({ "type": "session/titleChanged", "title": 42 }));
        checks.sent(0, 0.0, &sent.to_string(), &schemas);
        assert_eq!(checks.harness_errors.len(), usize::from(!declared));
        let (_, echo) = envelope(
            "ahp-session:/s",
            3,
            json!({ "type": "session/titleChanged", "title": 42 }),
            Some(1),
        );
        assert!(broke(&mut checks, &schemas, &echo).is_empty());
        let why = ahpspec::checks::words::ECHOES_INVALID.to_owned();
        assert_eq!(skips_of(&checks, "INV-SCHEMA-1"), vec![(why.clone(), 1)]);
        assert_eq!(skips_of(&checks, "DISPATCH-001"), vec![(why, 1)]);
        // A host action of the same shape is the host's own words: judged.
        let (_, own) = envelope(
            "ahp-session:/s",
            4,
            json!({ "type": "session/titleChanged", "title": 42 }),
            None,
        );
        assert_eq!(broke(&mut checks, &schemas, &own), vec!["INV-SCHEMA-1"]);
    }
}

/// A success answering a request sent invalid is that request's rule's matter: its result is
/// not schema-checked, and a request sent invalid that is never answered is not TRANSPORT-003's
/// (both counted as skipped); a valid request left unanswered still is.
#[test]
fn answers_to_requests_sent_invalid_are_left_to_the_rule_they_test() {
    let schemas = Schemas::load(None).expect("schemas");
    let mut checks = StreamChecks::new("client-1");
    checks.intended_invalid.extend([0, 1]);
    let (_, wrong) = request(
        5,
        "listSessions",
        json!({ "channel": "ahp-root://", "limit": "x" }),
    );
    checks.sent(0, 0.0, &wrong.to_string(), &schemas);
    let (_, never) = request(6, "subscribe", json!({}));
    checks.sent(1, 0.0, &never.to_string(), &schemas);
    let (_, valid) = request(7, "ping", json!({ "channel": "ahp-root://" }));
    checks.sent(2, 0.0, &valid.to_string(), &schemas);
    let (_, answer) = result(5, json!({ "items": "not a list" }));
    assert!(broke(&mut checks, &schemas, &answer).is_empty());
    assert_eq!(
        skips_of(&checks, "INV-SCHEMA-1"),
        vec![(ahpspec::checks::words::ANSWERS_INVALID.to_owned(), 1)]
    );
    let ended: Vec<String> = checks
        .ended(60_000.0, 5_000.0, false)
        .iter()
        .map(|v| v.actual.clone())
        .collect();
    assert_eq!(ended.len(), 1, "{ended:?}");
    assert!(ended[0].contains("none in"), "{ended:?}");
    assert_eq!(
        skips_of(&checks, "TRANSPORT-003"),
        vec![(ahpspec::checks::words::ASKED_INVALID.to_owned(), 1)]
    );
}

/// A -32009 answering a request sent invalid may repeat it in `data.request`: the members the
/// client spelled wrong there are its own words, left to the rule the request tests (ERR-003
/// counts the comparison as skipped); the same data answering a valid request is the host's,
/// and breaks ERR-003.
#[test]
fn permission_denied_data_repeating_an_invalid_request_is_the_clients() {
    let schemas = Schemas::load(None).expect("schemas");
    let params = json!({ "channel": "ahp-root://", "uri": "not a uri", "read": true });
    let denied = |id: u64| {
        json!({ "jsonrpc": "2.0", "id": id, "error": { "code": -32009, "message": "denied",
            "data": { "request": { "channel": "ahp-root://", "uri": "not a uri", "read": true } } } })
    };
    let mut checks = StreamChecks::new("client-1");
    checks.intended_invalid.push(0);
    let (_, sent) = request(5, "resourceRequest", params);
    checks.sent(0, 0.0, &sent.to_string(), &schemas);
    assert!(broke(&mut checks, &schemas, &denied(5)).is_empty());
    assert_eq!(
        skips_of(&checks, "ERR-003"),
        vec![(ahpspec::checks::words::ANSWERS_INVALID.to_owned(), 1)]
    );
    let (_, valid) = request(
        6,
        "resourceRequest",
        json!({ "channel": "ahp-root://", "uri": "file:///x", "read": true }),
    );
    checks.sent(1, 0.0, &valid.to_string(), &schemas);
    assert_eq!(broke(&mut checks, &schemas, &denied(6)), vec!["ERR-003"]);
}

/// The copy another connection of the same runner gets of a dispatch sent invalid is the
/// runner's words as much as the sender's echo is: left to the rule the dispatch tests,
/// counted as skipped, also when the sibling's frames are checked before the sender's
/// (a runner looks ahead at every connection's dispatches first). A connection of another
/// runner judges the same copy; the sender's checks, reaching the frame later, judge it once.
#[test]
fn a_siblings_copy_of_an_invalid_dispatch_is_the_runners_words() {
    use ahpspec::checks::words::{InvalidDispatches, ECHOES_INVALID};
    let schemas = Schemas::load(None).expect("schemas");
    let runner = InvalidDispatches::default();
    let mut sender = StreamChecks::new("client-1");
    sender.checker.words.share(&runner);
    let mut sibling = StreamChecks::new("client-2");
    sibling.checker.words.share(&runner);
    let mut early = StreamChecks::new("client-2");
    early.checker.words.share(&runner);
    let mut stranger = StreamChecks::new("client-3");
    let title = json!({ "type": "session/titleChanged", "title": 42 });
    let (_, sent) = dispatch("ahp-session:/s", 1, title.clone());
    let (_, copy) = envelope("ahp-session:/s", 3, title, Some(1));
    // Before anything looked at the sender's frame, the copy is the host's.
    assert_eq!(broke(&mut early, &schemas, &copy), vec!["INV-SCHEMA-1"]);
    sender.foresee_sent(0, &sent.to_string(), &schemas);
    assert!(broke(&mut sibling, &schemas, &copy).is_empty());
    assert_eq!(
        skips_of(&sibling, "INV-SCHEMA-1"),
        vec![(ECHOES_INVALID.to_owned(), 1)]
    );
    assert_eq!(broke(&mut stranger, &schemas, &copy), vec!["INV-SCHEMA-1"]);
    sender.sent(0, 0.0, &sent.to_string(), &schemas);
    assert_eq!(
        sender.harness_errors.len(),
        1,
        "{:?}",
        sender.harness_errors
    );
}

/// A case whose second connection dispatches a malformed title change to a session the
/// first also watches, run against a host that accepts it (`malformed-accepted`): the case
/// warns on its own rule, and the first connection's copy of the accepted echo is the
/// case's words, so INV-SCHEMA-1 does not fail on it (the first connection's frames are
/// checked first).
const SIBLING_SUITE: &str = r#"
page = "docs/specification/actions.md"

[[case]]
id = "DISPATCH-007"
level = "SHOULD"
spec = "(robustness)"
requirement = "A malformed action is not applied."
does = "c2 dispatches a title change with a numeric title to a session c1 also subscribes to; c1 reads on (its frames are checked before c2's)."
steps = [
  { initialize = {} },
  { session = { as = "S" } },
  { initialize = { on = "c2" } },
  { request = { on = "c2", method = "subscribe", params = { channel = "${S}", delivery = { maxLatencyMs = 0 } }, as = "sub" } },
  { response = { on = "c2", to = "sub", ok = true } },
  { dispatch = { on = "c2", channel = "${S}", action = { type = "session/titleChanged", title = 42 }, as = "wrong", intent = "wrong type" } },
  { request = { method = "ping", params = { channel = "ahp-root://" }, as = "ping" } },
  { response = { to = "ping", ok = true } },
  { echo = { on = "c2", of = "wrong", accepted = false, or_ignored = true } },
]
"#;

#[test]
fn a_case_connections_copy_of_its_siblings_invalid_dispatch_is_the_cases_words() {
    let suites = TempDir::new("sibling-suite");
    std::fs::write(suites.path().join("sibling.toml"), SIBLING_SUITE).expect("suite");
    let reports = TempDir::new("sibling-reports");
    let run = |fault: &[&str]| {
        let mut args = vec![
            "run",
            "--suites",
            suites.str(),
            "--report-dir",
            reports.str(),
        ];
        args.extend_from_slice(fault);
        let out = ahpspec(&args);
        (verdicts(&report_json(reports.path())), show(&out))
    };
    let (verdicts, out) = run(&["--fault", "malformed-accepted"]);
    assert_eq!(verdicts["DISPATCH-007"], "warn", "{out}");
    assert_eq!(verdicts["INV-SCHEMA-1"], "pass", "{out}");
    let (verdicts, out) = run(&[]);
    assert_eq!(verdicts["DISPATCH-007"], "pass", "{out}");
}
