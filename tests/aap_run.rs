//! `ahpspec run` against AAP servers, end to end through the binary: the built-in server
//! conforms (exit 0), a server at an http:// URL is certified with its key, the report says
//! which protocol, and bad input is a one-line error with exit 2.

mod run_support;

use run_support::{ahpspec, report_json, show, verdicts, TempDir};

#[test]
fn the_built_in_aap_server_conforms() {
    let dir = TempDir::new("aap-run");
    let out = ahpspec(&["run", "--protocol", "aap", "--report-dir", dir.str()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report = report_json(dir.path());
    assert_eq!(report["protocolVersion"], "AAP 3");
    assert_eq!(report["target"], "builtin");
    let verdicts = verdicts(&report);
    for (id, verdict) in &verdicts {
        assert!(
            verdict == "pass" || verdict == "not-applicable",
            "{id}: {verdict}\n{}",
            show(&out)
        );
    }
    // The streams, the cross-mode comparison and the history check looked at something.
    for rule in [
        "AAP-SSE-003",
        "AAP-SSE-007",
        "AAP-HISTORY-004",
        "AAP-AUTH-002",
        "AAP-TOOL-005",
    ] {
        assert_eq!(
            verdicts.get(rule).map(String::as_str),
            Some("pass"),
            "{rule}"
        );
    }
    for file in ["report.html", "junit.xml", "summary.md"] {
        assert!(dir.path().join(file).exists(), "{file} written");
    }
}

#[test]
fn an_aap_server_at_a_url_is_certified_with_its_key() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .expect("runtime");
    let server = runtime
        .block_on(ahpspec::aaphost::spawn(ahpspec::aaphost::AapHostConfig {
            token: Some("k3y".into()),
            base_path: "/v1".into(),
            ..Default::default()
        }))
        .expect("server");
    let url = server.base_url();
    assert!(url.starts_with("http://") && url.ends_with("/v1"), "{url}");
    let dir = TempDir::new("aap-url");
    let out = ahpspec(&[
        "run",
        &url,
        "--token",
        "k3y",
        "--filter",
        "AAP-SESSION-*,AAP-SSE-*",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let report = report_json(dir.path());
    assert_eq!(report["target"], url.as_str());
    assert_eq!(
        verdicts(&report).get("AAP-SESSION-005").map(String::as_str),
        Some("pass")
    );
    // Without the key every session endpoint is refused: the run fails, it does not pass.
    let out = ahpspec(&[
        "run",
        &url,
        "--filter",
        "AAP-SESSION-001",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    drop(server);
}

#[test]
fn bad_aap_invocations_are_one_line_errors() {
    for args in [
        vec!["run", "ftp://127.0.0.1:1"],
        vec!["run", "ws://127.0.0.1:1", "--protocol", "aap"],
        vec!["run", "--protocol", "xmpp"],
        vec!["run", "--protocol", "aap", "--fault", "no-such-fault"],
        vec!["run", "--protocol", "aap", "--filter", "NOPE-*"],
        vec!["run", "http://127.0.0.1:1"],
        vec!["list", "--protocol", "aap", "--filter", "NOPE-*"],
    ] {
        let out = ahpspec(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}\n{}", show(&out));
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    }
}

#[test]
fn list_shows_the_aap_catalog() {
    let out = ahpspec(&["list", "--protocol", "aap"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().any(|l| l.starts_with("AAP-SSE-003\tMUST")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.starts_with("AAP-TOOL-005\tMUST")),
        "{text}"
    );
}
