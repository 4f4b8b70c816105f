//! The harness against hostile servers: bad input never crashes or hangs it. A malformed
//! frame, an oversized message, a silent, slow or vanishing server all end in a clear
//! verdict within a bounded time, and the report is still written.
//!
//! The hostile servers are tiny WebSocket servers on 127.0.0.1 (`hostile_servers`); the
//! binary's exit codes against them are in `tests/hostile_cli.rs`.

#[path = "common/allocator.rs"]
mod allocator;

mod hostile_servers;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use ahpspec::catalog::Selection;
use ahpspec::certify::{certify, HarnessError, Options};
use ahpspec::report;
use ahpspec::rows::Quiet;
use ahpspec::suite::Catalog;
use ahpspec::transport::MAX_INBOUND_BYTES;
use ahpspec::verdict::{CaseResult, RunReport, Verdict};
use hostile_servers::{hostile, Mode, LATE};
use serde_json::Value;

/// The cases every hostile run selects: scripted cases of several areas plus the
/// always-on TRANSPORT-001 row.
const FILTER: &[&str] = &[
    "TRANSPORT-010",
    "TRANSPORT-003/*",
    "VERSION-001",
    "SUB-001",
    "TURN-001",
    "TRANSPORT-001",
    "TRANSPORT-004",
];

/// How long a whole run may take before the test calls it a hang.
const RUN_LIMIT: Duration = Duration::from_secs(30);

fn options(url: String) -> Options {
    Options {
        url: Some(url),
        timeout: Duration::from_millis(300),
        jobs: 4,
        selection: Selection {
            filter: FILTER.iter().map(|s| s.to_string()).collect(),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The IDs the filter selects (scripted cases and always-on rows).
fn selected_ids() -> BTreeSet<String> {
    let selection = options(String::new()).selection;
    let catalog = Catalog::embedded().expect("embedded suites load");
    let mut ids: BTreeSet<String> = catalog
        .cases
        .iter()
        .filter(|c| selection.includes(&c.info.id, c.info.level))
        .map(|c| c.info.id.clone())
        .collect();
    ids.extend(
        ahpspec::checks::ALWAYS_ON
            .iter()
            .filter(|r| selection.includes(r.id, r.level))
            .map(|r| r.id.to_owned()),
    );
    ids
}

/// Certifies `url`, failing the test if the run takes longer than [`RUN_LIMIT`].
async fn run_against(url: String) -> (Result<RunReport, HarnessError>, Duration) {
    run_with(options(url)).await
}

async fn run_with(options: Options) -> (Result<RunReport, HarnessError>, Duration) {
    let url = options.url.clone().unwrap_or_default();
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let outcome = tokio::time::timeout(RUN_LIMIT, certify(&options, &mut Quiet, interrupt))
        .await
        .unwrap_or_else(|_| panic!("certify against {url} hung for more than {RUN_LIMIT:?}"));
    (outcome, started.elapsed())
}

fn describe(report: &RunReport) -> String {
    report
        .cases
        .iter()
        .map(|c| format!("  {} [{}] {}", c.info.id, c.verdict.as_str(), c.summary))
        .collect::<Vec<_>>()
        .join("\n")
}

fn case<'a>(report: &'a RunReport, id: &str) -> &'a CaseResult {
    report
        .cases
        .iter()
        .find(|c| c.info.id == id)
        .unwrap_or_else(|| panic!("no row for {id}:\n{}", describe(report)))
}

/// The finding text of a case: its summary and every finding's expected/actual.
fn finding_text(case: &CaseResult) -> String {
    let mut text = case.summary.clone();
    for finding in &case.findings {
        text.push_str(&format!(
            "\n{} | {} | {}",
            finding.rule, finding.expected, finding.actual
        ));
    }
    text
}

/// What every hostile run must give: a complete, non-interrupted report in which no case
/// passes and every case says why, and which can be written in all four formats.
/// `may_pass`: always-on rows the server does not break (its frames are well-formed JSON-RPC
/// objects, say), which may rightly pass.
fn check_common(mode: &str, report: &RunReport, took: Duration, may_pass: &[&str]) {
    let details = describe(report);
    assert!(took < RUN_LIMIT, "{mode}: took {took:?}\n{details}");
    assert!(!report.interrupted, "{mode}: not interrupted\n{details}");
    // Rows of the selected cases, plus one per prerequisite rule the server broke.
    let ids: BTreeSet<String> = report
        .cases
        .iter()
        .filter(|c| c.info.source != "prerequisite")
        .map(|c| c.info.id.clone())
        .collect();
    assert_eq!(ids, selected_ids(), "{mode}: one row per selected case");
    let all: BTreeSet<&str> = report.cases.iter().map(|c| c.info.id.as_str()).collect();
    assert_eq!(all.len(), report.cases.len(), "{mode}: no duplicate rows");
    for case in report
        .cases
        .iter()
        .filter(|c| !may_pass.contains(&c.info.id.as_str()))
    {
        assert_ne!(
            case.verdict,
            Verdict::Pass,
            "{mode}: {} passed against a hostile server\n{details}",
            case.info.id
        );
        assert!(
            !case.summary.trim().is_empty(),
            "{mode}: {} has no summary",
            case.info.id
        );
    }
    assert_eq!(report.tally.total(), report.cases.len(), "{mode}: tally");
    assert!(report.tally.pass <= may_pass.len(), "{mode}: tally");
    let dir = temp_dir(mode);
    let written = report::write_all(report, &dir).expect("reports are written");
    for path in [
        &written.json,
        &written.junit,
        &written.html,
        &written.markdown,
    ] {
        let meta = std::fs::metadata(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        assert!(meta.len() > 0, "{} is empty", path.display());
    }
    for name in [
        report::JSON_FILE,
        report::JUNIT_FILE,
        report::HTML_FILE,
        report::MARKDOWN_FILE,
    ] {
        assert!(dir.join(name).is_file(), "{mode}: {name} written");
    }
    let json: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join(report::JSON_FILE)).expect("report.json reads"),
    )
    .expect("report.json parses");
    assert_eq!(
        json["cases"].as_array().map(Vec::len),
        Some(report.cases.len())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn temp_dir(mode: &str) -> PathBuf {
    std::env::temp_dir().join(format!(
        "ahpspec-hostile-{mode}-{}-{:x}",
        std::process::id(),
        jiff::Timestamp::now().as_nanosecond() as u64
    ))
}

/// Asserts that every scripted case (all rows but the always-on and prerequisite ones) has
/// `verdict` and a summary containing `why`.
fn assert_scripted(report: &RunReport, except: &[&str], verdict: Verdict, why: &str) {
    for case in report.cases.iter().filter(|c| {
        !matches!(c.info.source.as_str(), "builtin" | "prerequisite")
            && !except.contains(&c.info.id.as_str())
    }) {
        assert_eq!(
            case.verdict,
            verdict,
            "{}: {}\n{}",
            case.info.id,
            case.summary,
            describe(report)
        );
        assert!(
            case.summary.contains(why),
            "{}: {:?} should mention {why:?}",
            case.info.id,
            case.summary
        );
    }
}

/// A server that answers no `initialize` at all: INIT-001 fails once, on its own row, with
/// why; every other scripted case but `except` is blocked by INIT-001, VERSION-001 (which
/// chooses its own offer) too: a server that answers no initialize answers none.
fn assert_initialize_broken(report: &RunReport, except: &[&str], why: &str) {
    let init = case(report, "INIT-001");
    assert_eq!(init.verdict, Verdict::Fail, "{}", describe(report));
    assert!(finding_text(init).contains(why), "{}", finding_text(init));
    assert_scripted(report, except, Verdict::Blocked, "Blocked by INIT-001");
    assert_scripted(report, except, Verdict::Blocked, why);
    for row in report
        .cases
        .iter()
        .filter(|c| c.verdict == Verdict::Blocked)
    {
        assert_eq!(
            row.blocked_by.as_deref(),
            Some("INIT-001"),
            "{}",
            row.info.id
        );
    }
}

/// The always-on TRANSPORT-001 row when the server sent no frame at all.
fn assert_no_frames_seen(report: &RunReport) {
    let row = case(report, "TRANSPORT-001");
    assert_eq!(row.verdict, Verdict::NotTestable, "{}", describe(report));
    assert!(
        row.summary.contains("no frames were seen"),
        "{}",
        row.summary
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server() {
    let server = hostile(Mode::Silent).await;
    let (report, took) = run_against(server.url.clone()).await;
    let report = report.expect("a report");
    check_common("silent", &report, took, &[]);
    let ping = case(&report, "TRANSPORT-010");
    assert_eq!(ping.verdict, Verdict::Fail, "{}", describe(&report));
    assert!(
        finding_text(ping).contains("nothing within 300 ms"),
        "{}",
        finding_text(ping)
    );
    assert_initialize_broken(&report, &["TRANSPORT-010"], "timed out after 300ms");
    assert_no_frames_seen(&report);
}

/// The whole catalog against a silent server: the run's own initialize fails, so INIT-001
/// fails once and every case that starts with the default initialize is blocked without
/// running (it would only wait out the same timeout); the rest run and fail or block on
/// their own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_blocks_the_catalog_at_once() {
    let server = hostile(Mode::Silent).await;
    let mut opts = options(server.url.clone());
    opts.selection = Selection::default();
    opts.jobs = 8;
    let (report, took) = run_with(opts).await;
    let report = report.expect("a report");
    assert!(took < RUN_LIMIT, "took {took:?}");
    assert!(!report.conforming(), "{}", describe(&report));
    assert_eq!(verdict_of(&report, "INIT-001"), Verdict::Fail);
    let not_run = report
        .cases
        .iter()
        .filter(|c| c.verdict == Verdict::Blocked && c.summary.contains("not run"))
        .count();
    let scripted = report
        .cases
        .iter()
        .filter(|c| !matches!(c.info.source.as_str(), "builtin" | "prerequisite"))
        .count();
    assert!(
        not_run * 4 > scripted * 3,
        "only {not_run} of {scripted} cases blocked at once:\n{}",
        describe(&report)
    );
    assert!(report.cases.iter().all(|c| c.verdict != Verdict::Pass));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_server() {
    let server = hostile(Mode::Garbage).await;
    let (report, took) = run_against(server.url.clone()).await;
    let report = report.expect("a report");
    check_common("garbage", &report, took, &[]);
    let row = case(&report, "TRANSPORT-001");
    assert_eq!(row.verdict, Verdict::Fail, "{}", describe(&report));
    let text = finding_text(row);
    assert!(text.contains("not JSON"), "{text}");
    assert!(text.contains("a binary frame"), "{text}");
    assert!(text.contains("a JSON array"), "{text}");
    let ping = case(&report, "TRANSPORT-010");
    assert_eq!(ping.verdict, Verdict::Fail, "{}", describe(&report));
    assert!(
        finding_text(ping).contains("nothing within 300 ms"),
        "{}",
        finding_text(ping)
    );
    assert_initialize_broken(&report, &["TRANSPORT-010"], "timed out after 300ms");
    // The garbage is in the transcript as evidence.
    assert!(
        ping.transcript
            .iter()
            .any(|f| f.direction == "received" && f.text.starts_with("<binary 4 bytes>")),
        "{:#?}",
        ping.transcript
    );
}

/// AHP sets no message-size limit (TRANSPORT-014), so a message bigger than the harness
/// accepts is the harness's limit, not the server's fault: never a pass and never a fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn oversized_server() {
    let server = hostile(Mode::Oversized).await;
    // Reading 70 MiB takes a while on a loaded machine: give it time, so what is judged is
    // the size, not the clock.
    let mut opts = options(server.url.clone());
    opts.timeout = Duration::from_secs(10);
    let (report, took) = run_with(opts).await;
    let report = report.expect("a report");
    check_common("oversized", &report, took, &[]);
    let limit = format!("larger than {MAX_INBOUND_BYTES} bytes");
    for row in report.cases.iter().filter(|c| c.info.source != "builtin") {
        assert!(
            matches!(row.verdict, Verdict::HarnessError | Verdict::NotTestable),
            "{}: {}\n{}",
            row.info.id,
            row.verdict.as_str(),
            describe(&report)
        );
        assert!(
            row.summary.contains(&limit),
            "{}: {}",
            row.info.id,
            row.summary
        );
    }
    // A `response` step that meets the oversized message says so as a harness error.
    assert_eq!(
        verdict_of(&report, "TRANSPORT-010"),
        Verdict::HarnessError,
        "{}",
        describe(&report)
    );
    assert_no_frames_seen(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_server() {
    let server = hostile(Mode::Slow).await;
    let (report, took) = run_against(server.url.clone()).await;
    let report = report.expect("a report");
    check_common("slow", &report, took, &[]);
    let ping = case(&report, "TRANSPORT-010");
    assert_eq!(ping.verdict, Verdict::Fail, "{}", describe(&report));
    assert!(
        finding_text(ping).contains("nothing within 300 ms"),
        "{}",
        finding_text(ping)
    );
    assert_initialize_broken(&report, &["TRANSPORT-010"], "timed out after 300ms");
    // The late answers (2 s) never stretch the run to wait for them.
    assert!(took < Duration::from_secs(10), "slow run took {took:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hangup_server() {
    let server = hostile(Mode::Hangup).await;
    let (report, took) = run_against(server.url.clone()).await;
    let report = report.expect("a report");
    check_common("hangup", &report, took, &[]);
    let ping = case(&report, "TRANSPORT-010");
    assert_eq!(ping.verdict, Verdict::Fail, "{}", describe(&report));
    assert!(
        finding_text(ping).contains("the connection closed"),
        "{}",
        finding_text(ping)
    );
    assert_initialize_broken(&report, &["TRANSPORT-010"], "the connection is closed");
    assert_no_frames_seen(&report);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_ids_server() {
    let server = hostile(Mode::WrongIds).await;
    let (report, took) = run_against(server.url.clone()).await;
    let report = report.expect("a report");
    check_common("wrong-ids", &report, took, &["TRANSPORT-001"]);
    // Every answer carries an id the harness never sent: a response to no request.
    let row = case(&report, "TRANSPORT-004");
    assert_eq!(row.verdict, Verdict::Fail, "{}", describe(&report));
    assert_initialize_broken(&report, &["TRANSPORT-010"], "timed out after 300ms");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deeply_nested_server() {
    let server = hostile(Mode::DeepNesting).await;
    let (report, took) = run_against(server.url.clone()).await;
    let report = report.expect("a report");
    check_common("deep", &report, took, &[]);
    // 200,000 nested arrays are past any JSON parser's depth limit: not one JSON-RPC object.
    let row = case(&report, "TRANSPORT-001");
    assert_eq!(row.verdict, Verdict::Fail, "{}", describe(&report));
    assert_initialize_broken(&report, &["TRANSPORT-010"], "timed out after 300ms");
}

/// A 40 MB message is within the harness's limit: it is read and judged like any other.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_message_server() {
    let server = hostile(Mode::Big).await;
    let mut opts = options(server.url.clone());
    opts.timeout = Duration::from_secs(5);
    let (report, took) = run_with(opts).await;
    let report = report.expect("a report");
    check_common("big", &report, took, &["TRANSPORT-001"]);
    assert_eq!(
        verdict_of(&report, "INIT-001"),
        Verdict::Fail,
        "{}",
        describe(&report)
    );
    assert!(
        report
            .cases
            .iter()
            .all(|c| c.verdict != Verdict::HarnessError),
        "a 40 MB message is not the harness's problem:\n{}",
        describe(&report)
    );
}

/// Correct answers 20 s late are no answers: the run judges them by its own timeout and
/// ends without waiting for them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn late_server() {
    let server = hostile(Mode::Late).await;
    let (report, took) = run_against(server.url.clone()).await;
    let report = report.expect("a report");
    check_common("late", &report, took, &[]);
    let ping = case(&report, "TRANSPORT-010");
    assert_eq!(ping.verdict, Verdict::Fail, "{}", describe(&report));
    assert!(
        finding_text(ping).contains("nothing within 300 ms"),
        "{}",
        finding_text(ping)
    );
    assert_initialize_broken(&report, &["TRANSPORT-010"], "timed out after 300ms");
    assert_no_frames_seen(&report);
    assert!(took < LATE, "the run waited for the late answers: {took:?}");
}

/// Correct answers in binary frames: AHP messages are text frames, so each binary frame
/// breaks TRANSPORT-001 and answers nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_frames_server() {
    let server = hostile(Mode::Binary).await;
    let (report, took) = run_against(server.url.clone()).await;
    let report = report.expect("a report");
    check_common("binary", &report, took, &[]);
    let row = case(&report, "TRANSPORT-001");
    assert_eq!(row.verdict, Verdict::Fail, "{}", describe(&report));
    assert!(
        finding_text(row).contains("a binary frame"),
        "{}",
        finding_text(row)
    );
    assert_initialize_broken(&report, &["TRANSPORT-010"], "timed out after 300ms");
}

/// Nothing listens: `certify` refuses to produce a report of non-verdicts and says why, in
/// bounded time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_connection() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds loopback");
        listener.local_addr().expect("local address").port()
    };
    let url = format!("ws://127.0.0.1:{port}");
    let (report, _took) = run_against(url.clone()).await;
    match report {
        Ok(report) => panic!(
            "an unreachable server must not yield a report: {:?}",
            report.tally
        ),
        Err(error) => {
            let text = error.to_string();
            assert!(text.contains(&format!("cannot connect to {url}")), "{text}");
        }
    }
}

fn verdict_of(report: &RunReport, id: &str) -> Verdict {
    case(report, id).verdict
}
