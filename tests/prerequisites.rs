//! Prerequisites and selections: a rule a case relies on that the server breaks is that
//! rule's failure and blocks the case; blocked cases and empty selections never let a run
//! pass.

mod run_support;

use ahpspec::rows::reconcile;
use ahpspec::verdict::{CaseInfo, CaseResult, Level, RunReport, Tally, Verdict};
use run_support::{ahpspec, report_json, show, TempDir};
use serde_json::Value;

fn case<'a>(report: &'a Value, id: &str) -> &'a Value {
    report["cases"]
        .as_array()
        .and_then(|cases| cases.iter().find(|c| c["info"]["id"] == id))
        .unwrap_or_else(|| panic!("no row {id} in the report"))
}

#[test]
fn a_selection_that_matches_nothing_is_a_usage_error() {
    for args in [
        &["run", "--filter", "NOPE-*"][..],
        &["run", "--exclude", "*"][..],
        &["list", "--filter", "NOPE-*"][..],
    ] {
        let out = ahpspec(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}\n{}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.lines().count(), 1, "{}", show(&out));
        assert!(
            stderr.contains("matches no case") && stderr.contains(args[2]),
            "{}",
            show(&out)
        );
    }
}

#[test]
fn a_host_whose_sessions_never_get_ready_fails_lifecycle_003_and_blocks_the_rest() {
    let reports = TempDir::new("never-ready");
    let out = ahpspec(&[
        "run",
        "--fault",
        "sessions-never-ready",
        "--filter",
        "LIFECYCLE-003,PENDING-*,TOOL-001",
        "--timeout",
        "1s",
        "--report-dir",
        reports.str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("Blocked by LIFECYCLE-003"),
        "{}",
        show(&out)
    );
    let report = report_json(reports.path());
    assert_eq!(case(&report, "LIFECYCLE-003")["verdict"], "fail");
    for id in ["PENDING-001", "TOOL-001"] {
        let row = case(&report, id);
        assert_eq!(row["verdict"], "blocked", "{row}");
        assert_eq!(row["blockedBy"], "LIFECYCLE-003", "{row}");
    }
    assert!(report["tally"]["blocked"].as_u64().unwrap_or(0) >= 2);
    let unexpected = report["unexpectedFailures"].to_string();
    assert!(unexpected.contains("TOOL-001"), "{unexpected}");
}

const RELYING_SUITE: &str = r#"
page = "docs/specification/transport.md"

[[case]]
id = "TRANSPORT-010"
level = "MUST"
spec = "§ Keep-Alive"
requirement = "ping is answered with a success."
does = "Pings."
steps = [
  { initialize = {} },
  { request = { method = "ping", params = { channel = "ahp-root://" }, as = "p" } },
  { response = { to = "p", ok = true } },
]

[[case]]
id = "ROOT-001"
level = "MUST"
spec = "§ Root"
requirement = "Relies on a step no correct host can satisfy, charged to TRANSPORT-010."
does = "Expects a success for an unknown method, relying on TRANSPORT-010."
steps = [
  { initialize = {} },
  { request = { method = "noSuchMethod", params = { channel = "ahp-root://" }, as = "q" } },
  { response = { to = "q", ok = true, relies_on = "TRANSPORT-010" } },
  { state = { channel = "ahp-root://", lacks = ["/sessions"] } },
]
"#;

/// Runs the one suite `text` (as `{name}.toml`, the cases `extra` selects) and returns the
/// process's output and its JSON report.
fn run_suite(name: &str, text: &str, extra: &[&str]) -> (std::process::Output, Value) {
    let suites = TempDir::new(name);
    std::fs::write(suites.path().join(format!("{name}.toml")), text).expect("suite");
    let reports = TempDir::new(&format!("{name}-reports"));
    let mut args = vec![
        "run",
        "--suites",
        suites.str(),
        "--report-dir",
        reports.str(),
    ];
    args.extend_from_slice(extra);
    let out = ahpspec(&args);
    let report = report_json(reports.path());
    (out, report)
}

#[test]
fn a_step_that_relies_on_another_rule_charges_that_rule_and_blocks_its_case() {
    let (out, report) = run_suite(
        "relying",
        RELYING_SUITE,
        &["--filter", "TRANSPORT-010,ROOT-001"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let blocked = case(&report, "ROOT-001");
    assert_eq!(blocked["verdict"], "blocked", "{blocked}");
    assert_eq!(blocked["blockedBy"], "TRANSPORT-010");
    // The relied-on rule's own case passed, but the failure seen elsewhere is its failure.
    let relied = case(&report, "TRANSPORT-010");
    assert_eq!(relied["verdict"], "fail", "{relied}");
    assert!(
        relied["summary"]
            .as_str()
            .is_some_and(|s| s.contains("prerequisite of 1 case(s): ROOT-001")),
        "{relied}"
    );
    assert_eq!(relied["findings"][0]["rule"], "TRANSPORT-010");
}

#[test]
fn relies_on_must_name_a_rule_the_run_reports() {
    let suites = TempDir::new("unknown-rule");
    let text = RELYING_SUITE.replace("relies_on = \"TRANSPORT-010\"", "relies_on = \"NOPE-001\"");
    std::fs::write(suites.path().join("relying.toml"), text).expect("suite");
    let out = ahpspec(&["run", "--suites", suites.str()]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("relying.toml:") && stderr.contains("NOPE-001"),
        "{}",
        show(&out)
    );
}

#[test]
fn a_case_that_claims_nothing_of_its_own_rule_does_not_load() {
    let suites = TempDir::new("claims-nothing");
    // Without its last step, ROOT-001 only exercises TRANSPORT-010 (its relies_on) and
    // TRANSPORT-003 (a response to a named request must come): nothing of ROOT-001.
    let text = RELYING_SUITE.replace(
        "  { state = { channel = \"ahp-root://\", lacks = [\"/sessions\"] } },\n",
        "",
    );
    assert_ne!(text, RELYING_SUITE);
    std::fs::write(suites.path().join("relying.toml"), text).expect("suite");
    let out = ahpspec(&["run", "--suites", suites.str()]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("relying.toml:") && stderr.contains("ROOT-001 claims nothing"),
        "{}",
        show(&out)
    );
}

fn row(id: &str, verdict: Verdict) -> CaseResult {
    CaseResult {
        info: CaseInfo {
            id: id.to_owned(),
            level: Level::Must,
            area: "a".to_owned(),
            spec: String::new(),
            requirement: String::new(),
            does: String::new(),
            source: String::new(),
        },
        verdict,
        summary: String::new(),
        findings: Vec::new(),
        blocked_by: None,
        protocol_version: None,
        transcript: Vec::new(),
        duration_ms: 0.0,
        rerun: String::new(),
    }
}

#[test]
fn a_blocked_case_is_never_conforming() {
    let mut report = RunReport {
        format: 1,
        tool: "ahpspec".to_owned(),
        tool_version: String::new(),
        target: String::new(),
        fault: None,
        protocol_version: "1.0.0".to_owned(),
        started_at: String::new(),
        duration_ms: 0.0,
        interrupted: false,
        shard: None,
        selection: None,
        strict: false,
        tally: Tally::default(),
        cases: vec![row("A-001", Verdict::Pass), row("B-001", Verdict::Pass)],
        stale_baseline: Vec::new(),
        unexpected_failures: Vec::new(),
    };
    reconcile(&mut report, None);
    assert!(report.conforming());
    report.cases[1].verdict = Verdict::Blocked;
    reconcile(&mut report, None);
    assert!(!report.conforming());
    assert_eq!(report.unexpected_failures, ["B-001"]);
    assert_eq!(report.tally.blocked, 1);
}

/// An always-on row that saw nothing because the cases that would have fed it were blocked
/// says so, and by which rule, rather than that nothing was seen.
#[tokio::test]
async fn always_on_rows_that_saw_nothing_because_cases_were_blocked_say_so() {
    use ahpspec::catalog::Selection;
    use ahpspec::certify::{certify, Options};
    use ahpspec::host::Fault;
    use ahpspec::rows::Quiet;
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let options = Options {
        faults: Fault::InitializeError.into(),
        selection: Selection {
            filter: vec!["TURN-*".to_owned()],
            ..Selection::default()
        },
        timeout: std::time::Duration::from_secs(1),
        ..Options::default()
    };
    let report = certify(&options, &mut Quiet, interrupt)
        .await
        .expect("the run starts");
    let blocked = report
        .cases
        .iter()
        .filter(|c| c.verdict == Verdict::Blocked)
        .count();
    assert!(blocked > 5, "only {blocked} cases blocked");
    for id in ["TURN-003", "TURN-004", "TURN-005"] {
        let row = report
            .cases
            .iter()
            .find(|c| c.info.id == id)
            .unwrap_or_else(|| panic!("no row {id}"));
        assert_eq!(row.verdict, Verdict::NotTestable, "{id}: {}", row.summary);
        assert!(
            row.summary.starts_with(&format!(
                "Not testable: {blocked} cases blocked by INIT-001"
            )),
            "{id}: {}",
            row.summary
        );
    }
}

/// A case whose `any_of` tries a rejection first and an acceptance second: the first
/// alternative reads the echo and fails on it, and the second must still find it.
const ECHO_EITHER_WAY_SUITE: &str = r#"
page = "docs/specification/session-channel.md"

[[case]]
id = "DISPATCH-008"
level = "MUST"
spec = "§ Actions"
requirement = "A client's rename of its session is echoed, accepted or rejected."
does = "Renames a session; the echo is looked for as a rejection, then as an acceptance."
steps = [
  { initialize = {} },
  { session = { as = "S" } },
  { dispatch = { channel = "${S}", action = { type = "session/titleChanged", title = "either way" }, as = "rename" } },
  { any_of = { alternatives = [
    [{ echo = { of = "rename", accepted = false } }],
    [{ echo = { of = "rename", accepted = true } }],
  ] } },
]
"#;

#[test]
fn an_alternative_that_fails_leaves_the_frames_it_read_to_the_next() {
    let (out, report) = run_suite("either", ECHO_EITHER_WAY_SUITE, &[]);
    let row = case(&report, "DISPATCH-008");
    assert_eq!(row["verdict"], "pass", "{row}\n{}", show(&out));
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
}
