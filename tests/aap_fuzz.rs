//! `ahpspec fuzz --protocol aap` end to end: clean on the correct built-in server, finds a
//! fault's rule, shrinks it, and writes a trace that `run --protocol aap --suites DIR`
//! replays (failing against the fault, passing against the correct server).

mod run_support;

use run_support::{ahpspec, report_json, show, TempDir};

#[test]
fn the_correct_server_is_clean() {
    let dir = TempDir::new("aap-fuzz-clean");
    let out = ahpspec(&[
        "fuzz",
        "--protocol",
        "aap",
        "--seed",
        "5",
        "--cases",
        "40",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("40 sequences"), "{stdout}");
    assert!(stdout.contains("0 rule(s) failing"), "{stdout}");
}

#[test]
fn a_dropped_turn_stop_is_found_shrunk_and_replayable() {
    let dir = TempDir::new("aap-fuzz-fault");
    let fault = "delta-drops-turn-stop";
    let out = ahpspec(&[
        "fuzz",
        "--protocol",
        "aap",
        "--fault",
        fault,
        "--seed",
        "5",
        "--cases",
        "40",
        "--shrink-time",
        "20s",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let report = report_json(&dir.path().join("fuzz"));
    let rows: Vec<&str> = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["info"]["id"].as_str())
        .collect();
    assert!(rows.contains(&"AAP-SSE-003"), "{rows:?}\n{}", show(&out));
    let trace = dir.path().join("fuzz").join("aap-5-AAP-SSE-003");
    let text = std::fs::read_to_string(trace.join("trace.toml")).expect("trace written");
    assert!(text.contains("stream = \"delta\""), "{text}");
    let trace = trace.to_str().expect("utf-8 path");
    let replay = ahpspec(&[
        "run",
        "--protocol",
        "aap",
        "--fault",
        fault,
        "--suites",
        trace,
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(replay.status.code(), Some(1), "{}", show(&replay));
    let fixed = ahpspec(&[
        "run",
        "--protocol",
        "aap",
        "--suites",
        trace,
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(fixed.status.code(), Some(0), "{}", show(&fixed));
}

/// `--baseline`: a listed rule is seen (said so), not shrunk, and fails nothing; the same
/// campaign without it exits 1 (the test above).
#[test]
fn a_baselined_rule_is_seen_but_fails_nothing() {
    let dir = TempDir::new("aap-fuzz-baseline");
    let baseline = dir.path().join("baseline.txt");
    std::fs::write(&baseline, "AAP-SSE-003  # the known stream cut\n").expect("baseline");
    let out = ahpspec(&[
        "fuzz",
        "--protocol",
        "aap",
        "--fault",
        "delta-drops-turn-stop",
        "--seed",
        "5",
        "--cases",
        "40",
        "--baseline",
        baseline.to_str().expect("utf-8 path"),
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("seen and baselined: AAP-SSE-003"),
        "{stdout}"
    );
    assert!(
        stdout.contains("0 rule(s) failing besides baselined rules"),
        "{stdout}"
    );
    assert!(
        !dir.path().join("fuzz/aap-5-AAP-SSE-003").exists(),
        "not shrunk into a trace"
    );
}
