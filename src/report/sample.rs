//! Test support: a realistic run report covering every verdict, and golden-file checks.

use std::path::PathBuf;

use crate::verdict::{
    CaseInfo, CaseResult, Finding, Level, ReportedFrame, RunReport, Tally, Verdict,
};

fn frame(conn: &str, direction: &str, at_ms: f64, text: &str) -> ReportedFrame {
    ReportedFrame {
        conn: conn.to_owned(),
        direction: direction.to_owned(),
        at_ms,
        text: text.to_owned(),
    }
}

fn info(id: &str, level: Level, area: &str, requirement: &str, does: &str, line: u32) -> CaseInfo {
    CaseInfo {
        id: id.to_owned(),
        level,
        area: area.to_owned(),
        spec: format!(
            "docs/specification/{area}.md § {}",
            if area == "lifecycle" {
                "Initialize"
            } else {
                "Unsubscribe"
            }
        ),
        requirement: requirement.to_owned(),
        does: does.to_owned(),
        source: format!("suites/{area}.toml:{line}"),
    }
}

fn case(info: CaseInfo, verdict: Verdict, summary: &str, findings: Vec<Finding>) -> CaseResult {
    let rerun = format!("ahpspec run --filter {}", info.id);
    let transcript = findings
        .iter()
        .flat_map(|f| f.context.iter().cloned())
        .collect::<Vec<_>>();
    let transcript = if transcript.is_empty() {
        vec![
            frame(
                "c1",
                "sent",
                0.4,
                r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"1.0.0"}}"#,
            ),
            frame(
                "c1",
                "received",
                3.1,
                r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"1.0.0"}}"#,
            ),
        ]
    } else {
        transcript
    };
    CaseResult {
        info,
        verdict,
        summary: summary.to_owned(),
        findings,
        blocked_by: None,
        protocol_version: None,
        transcript,
        duration_ms: 12.5,
        rerun,
    }
}

/// Eight cases in three areas, one per verdict. The failing case's frames carry markup,
/// ampersands, a terminal escape and a very long line.
// Kept whole (over the ~80-line aim): data: the eight sample cases.
pub(crate) fn sample_report() -> RunReport {
    let long = format!(
        r#"{{"jsonrpc":"2.0","method":"action","params":{{"channel":"ahp-root://","seq":7,"note":"{}{}[31m"}}}}"#,
        "x".repeat(2000),
        '\u{1b}' // a raw terminal escape, as a hostile server might send
    );
    let cases = vec![
        case(
            info(
                "LIFE-001",
                Level::Must,
                "lifecycle",
                "The server answers initialize with the protocol version it speaks.",
                "Sends initialize and reads the result.",
                3,
            ),
            Verdict::Pass,
            "initialize answered with 1.0.0",
            vec![],
        ),
        case(
            info(
                "SUB-004",
                Level::Must,
                "subscriptions",
                "After unsubscribing, the client stops receiving messages for that channel.",
                "Subscribes to the root channel, unsubscribes, then has a peer change root state.",
                42,
            ),
            Verdict::Fail,
            "an action arrived 120 ms after unsubscribe",
            vec![Finding {
                rule: "SUB-004".to_owned(),
                verdict: Verdict::Fail,
                expected: "no `action` on ahp-root:// for 500 ms".to_owned(),
                actual: "action seq 7 on ahp-root:// after 120 ms".to_owned(),
                step: Some("suites/subscriptions.toml:42".to_owned()),
                context: vec![
                    frame(
                        "c1",
                        "sent",
                        10.0,
                        r#"{"jsonrpc":"2.0","id":3,"method":"unsubscribe","params":{"channel":"ahp-root://"}}"#,
                    ),
                    frame(
                        "c2",
                        "received",
                        61.25,
                        "{\"title\":\"<script>alert('x')</script> & friends\u{1b}[2J\"}",
                    ),
                    frame("c1", "received", 130.0, &long),
                ],
            }],
        ),
        case(
            info(
                "SUB-009",
                Level::Should,
                "subscriptions",
                "The server should send the snapshot before any action on a new subscription.",
                "Subscribes and checks that the first channel message is the snapshot.",
                77,
            ),
            Verdict::Warn,
            "an action preceded the snapshot",
            vec![Finding {
                rule: "SUB-009".to_owned(),
                verdict: Verdict::Warn,
                expected: "result with /snapshot first".to_owned(),
                actual: "action seq 1 before the result".to_owned(),
                step: None,
                context: vec![frame(
                    "c1",
                    "received",
                    5.5,
                    r#"{"jsonrpc":"2.0","method":"action","params":{"seq":1}}"#,
                )],
            }],
        ),
        case(
            info(
                "LIFE-007",
                Level::May,
                "lifecycle",
                "The server may include a serverInfo name in the initialize result.",
                "Records whether serverInfo is present.",
                31,
            ),
            Verdict::Info,
            "serverInfo absent",
            vec![Finding {
                rule: "LIFE-007".to_owned(),
                verdict: Verdict::Info,
                expected: "serverInfo.name (optional)".to_owned(),
                actual: "no serverInfo".to_owned(),
                step: Some("suites/lifecycle.toml:33".to_owned()),
                context: vec![],
            }],
        ),
        case(
            info(
                "SUB-012",
                Level::Must,
                "subscriptions",
                "Session channels deliver tool progress to every subscriber.",
                "Subscribes two clients to a session channel and runs a tool.",
                120,
            ),
            Verdict::NotApplicable,
            "the server does not advertise tools",
            vec![],
        ),
        case(
            info(
                "LIFE-010",
                Level::Must,
                "lifecycle",
                "The server closes the connection when the client never initializes.",
                "Connects and waits without sending initialize.",
                58,
            ),
            Verdict::NotTestable,
            "Not testable: the idle timeout is not configurable on this target",
            vec![],
        ),
        {
            let mut blocked = case(
                info(
                    "PENDING-002",
                    Level::Must,
                    "pending-messages",
                    "A queued message set again with the same id is updated in place.",
                    "Queues a message twice under one id and reads the queue.",
                    64,
                ),
                Verdict::Blocked,
                "Blocked by LIFECYCLE-003: expected session/ready; got nothing within 5000 ms",
                vec![Finding {
                    rule: "LIFECYCLE-003".to_owned(),
                    verdict: Verdict::Fail,
                    expected: "session/ready or session/creationFailed".to_owned(),
                    actual: "neither within 5000 ms".to_owned(),
                    step: Some("suites/pending-messages.toml:70".to_owned()),
                    context: vec![],
                }],
            );
            blocked.blocked_by = Some("LIFECYCLE-003".to_owned());
            blocked
        },
        case(
            info(
                "SUB-020/reconnect",
                Level::Must,
                "subscriptions",
                "A resumed subscription continues from the requested sequence number.",
                "Subscribes, reconnects and resubscribes with fromSeq.",
                150,
            ),
            Verdict::HarnessError,
            "connection refused: 127.0.0.1:4100 (os error 111)",
            vec![],
        ),
    ];
    let mut tally = Tally::default();
    for c in &cases {
        tally.add(c.verdict);
    }
    RunReport {
        format: 1,
        tool: "ahpspec".to_owned(),
        tool_version: "0.1.0".to_owned(),
        target: "ws://127.0.0.1:4100/ahp?x=1&y=<2>".to_owned(),
        fault: None,
        protocol_version: "1.0.0".to_owned(),
        started_at: "2025-01-31T12:00:00Z".to_owned(),
        duration_ms: 1840.0,
        interrupted: false,
        shard: None,
        selection: None,
        strict: false,
        tally,
        cases,
        stale_baseline: vec![],
        unexpected_failures: vec![
            "SUB-004".to_owned(),
            "PENDING-002".to_owned(),
            "SUB-020/reconnect".to_owned(),
        ],
    }
}

/// Compares `actual` with `tests/snapshots/report/<name>`; `AHPSPEC_BLESS=1` rewrites it.
pub(crate) fn golden(name: &str, actual: &str) {
    let path: PathBuf = [
        env!("CARGO_MANIFEST_DIR"),
        "tests",
        "snapshots",
        "report",
        name,
    ]
    .iter()
    .collect();
    if std::env::var_os("AHPSPEC_BLESS").is_some_and(|v| v == "1") {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create snapshot dir");
        }
        std::fs::write(&path, actual).expect("write snapshot");
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "snapshot {} unreadable ({e}); run with AHPSPEC_BLESS=1 to create it",
            path.display()
        )
    });
    assert!(
        expected == actual,
        "snapshot {} differs (AHPSPEC_BLESS=1 to update)\n--- expected\n{expected}\n--- actual\n{actual}",
        path.display()
    );
}
