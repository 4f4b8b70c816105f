//! The version matrix: `run --protocol-version` runs the whole catalog as a client offering
//! that version (or each of several, side by side), with the negotiated version's schema.

#[path = "common/builtin.rs"]
mod builtin;
mod run_support;

use std::path::Path;

use run_support::{ahpspec, report_json, show, verdicts, TempDir};
use serde_json::Value;

/// Cases whose rule is newer than 0.9 (`since` in their suite): a 0.9.0 run finds them not
/// applicable.
const NEWER_THAN_0_9: &[&str] = &["CANVAS-001", "LIFECYCLE-012/canvas"];

/// Whether a 0.9.0 run's verdict `v` on case `id` is the correct host's.
fn conforms_as_0_9(id: &str, v: &str) -> bool {
    v == "pass"
        || builtin::not_applicable_to_builtin(id)
        || (v == "not-testable" && builtin::not_testable_with_scripted_profile(id))
        || (v == "not-applicable" && NEWER_THAN_0_9.contains(&id))
}

fn report(dir: &TempDir) -> Value {
    report_json(dir.path())
}

#[test]
fn the_built_in_host_passes_the_catalog_as_a_0_9_client() {
    let dir = TempDir::new("09");
    let out = ahpspec(&[
        "run",
        "--protocol-version",
        "0.9.0",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report = report(&dir);
    assert_eq!(report["protocolVersion"], "0.9.0");
    assert!(verdicts(&report)
        .iter()
        .all(|(id, v)| conforms_as_0_9(id, v)));
}

#[test]
fn newer_actions_sent_to_a_0_9_client_fail_version_009_and_its_schema() {
    let dir = TempDir::new("09-fault");
    let out = ahpspec(&[
        "run",
        "--protocol-version",
        "0.9.0",
        "--fault",
        "new-actions-to-old-client",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let failing: Vec<String> = verdicts(&report(&dir))
        .into_iter()
        .filter(|(id, v)| !conforms_as_0_9(id, v))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(failing, ["INV-SCHEMA-1", "VERSION-009"], "{}", show(&out));
}

#[test]
fn two_versions_run_side_by_side_with_a_column_each() {
    let dir = TempDir::new("both");
    let out = ahpspec(&[
        "run",
        "--protocol-version",
        "1.0.0,0.9.0",
        "--filter",
        "TOOL-*,VERSION-009",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report = report(&dir);
    assert_eq!(report["protocolVersion"], "1.0.0,0.9.0");
    let verdicts = verdicts(&report);
    for key in ["TOOL-001@1.0.0", "TOOL-001@0.9.0", "VERSION-009@0.9.0"] {
        assert_eq!(verdicts.get(key).map(String::as_str), Some("pass"), "{key}");
    }
    let summary = std::fs::read_to_string(Path::new(dir.str()).join("summary.md")).expect("md");
    assert!(summary.contains("| Case | 1.0.0 | 0.9.0 |"), "{summary}");
    let html = std::fs::read_to_string(Path::new(dir.str()).join("report.html")).expect("html");
    assert!(html.contains("By protocol version"));
    // Each version's case has its own card, the anchor the failure lists link to.
    assert!(
        html.contains("id=\"case-TOOL-001@0.9.0\""),
        "no card per version"
    );
    assert!(
        html.contains("id=\"case-TOOL-001@1.0.0\""),
        "no card per version"
    );
}

#[test]
fn a_version_that_is_not_major_minor_patch_is_a_usage_error() {
    for bad in ["1.0", "01.0.0", "1.0.0-rc.1", "x"] {
        let out = ahpspec(&["run", "--protocol-version", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}\n{}", show(&out));
    }
}

/// A case whose rule is younger than the version a run offers is not applicable there.
#[test]
fn a_case_since_a_newer_version_is_not_applicable_to_an_older_run() {
    let suites = TempDir::new("since-suites");
    std::fs::write(
        Path::new(suites.str()).join("young.toml"),
        r#"
page = "docs/specification/transport.md"

[[case]]
id = "TRANSPORT-010"
level = "MUST"
spec = "§ Keep-Alive"
requirement = "ping is answered with a success."
does = "Pings."
since = "1.0.0"
steps = [
  { initialize = {} },
  { request = { method = "ping", params = { channel = "ahp-root://" }, as = "p" } },
  { response = { to = "p", ok = true } },
]
"#,
    )
    .expect("suite");
    let dir = TempDir::new("since");
    let out = ahpspec(&[
        "run",
        "--suites",
        suites.str(),
        "--filter",
        "TRANSPORT-010",
        "--protocol-version",
        "1.0.0,0.9.0",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let verdicts = verdicts(&report(&dir));
    assert_eq!(verdicts["TRANSPORT-010@1.0.0"], "pass");
    assert_eq!(verdicts["TRANSPORT-010@0.9.0"], "not-applicable");
}
