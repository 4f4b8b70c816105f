//! `ahpspec fuzz --protocol aap --mode malformed`: requests a server has to cope with
//! (broken JSON, wrong content types, oversized bodies, unknown fields and enum values,
//! clients that read a stream badly) find nothing on the correct built-in server at every
//! version, find each robustness fault on its rule, shrink it, and write a trace that
//! `run --suites DIR` replays (failing its rule against the fault, passing without it).

#[path = "common/allocator.rs"]
mod allocator;

mod run_support;

use ahpspec::aaphost::AapHostConfig;
use run_support::{ahpspec, report_json, show, TempDir};

/// The verdict of the row whose ID starts with `prefix`.
fn verdict_of(report: &serde_json::Value, prefix: &str) -> Option<String> {
    report["cases"]
        .as_array()?
        .iter()
        .find(|c| {
            c["info"]["id"]
                .as_str()
                .is_some_and(|id| id.starts_with(prefix))
        })
        .and_then(|c| c["verdict"].as_str().map(str::to_owned))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_correct_server_copes_at_every_version() {
    // The three versions' servers and campaigns side by side: each mostly waits.
    futures_util::future::join_all([1, 2, 3].map(copes_at)).await;
}

/// A malformed-mode campaign against the correct server at `version` finds nothing.
async fn copes_at(version: u64) {
    let server = ahpspec::target::start_aap_server(AapHostConfig {
        version,
        ..AapHostConfig::default()
    })
    .await
    .expect("serve");
    let url = server.base_url();
    let dir = TempDir::new("aap-malformed-clean");
    let report_dir = dir.str().to_owned();
    let out = tokio::task::spawn_blocking(move || {
        ahpspec(&[
            "fuzz",
            "--protocol",
            "aap",
            &url,
            "--mode",
            "malformed",
            "--seed",
            "11",
            "--cases",
            "6",
            "--report-dir",
            &report_dir,
        ])
    })
    .await
    .expect("fuzz ran");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "version {version}\n{}",
        show(&out)
    );
    assert!(stdout.contains("mode malformed"), "{stdout}");
    assert!(stdout.contains("0 rule(s) failing"), "{stdout}");
    let report = report_json(&dir.path().join("fuzz"));
    assert_eq!(report["protocolVersion"], format!("AAP {version}"));
}

/// Each fault is found on its rule, and the shrunk trace replays: the rule's row is broken
/// against the fault and passes against the correct server.
#[test]
fn each_robustness_fault_is_found_shrunk_and_replayable() {
    // Each fault's campaign and replays are processes of their own, mostly waiting on their
    // servers: the three side by side. A failure names its fault.
    std::thread::scope(|scope| {
        for (fault, rule) in [
            ("abandoned-stream-wedges", "AAP-HTTP-008"),
            ("unknown-field-refused", "AAP-HTTP-009"),
            ("malformed-json-creates", "AAP-HTTP-003"),
        ] {
            scope.spawn(move || found_shrunk_and_replayable(fault, rule));
        }
    });
}

/// `fault` is found on `rule` alone; its shrunk trace fails `rule` against the fault and
/// passes without it.
fn found_shrunk_and_replayable(fault: &str, rule: &str) {
    let dir = TempDir::new("aap-malformed-fault");
    let out = ahpspec(&[
        "fuzz",
        "--protocol",
        "aap",
        "--mode",
        "malformed",
        "--fault",
        fault,
        "--seed",
        "3",
        "--cases",
        "6",
        "--shrink-time",
        "20s",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{fault}\n{}", show(&out));
    let report = report_json(&dir.path().join("fuzz"));
    let found: Vec<&str> = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["info"]["id"].as_str())
        .collect();
    assert_eq!(found, [rule], "{fault}\n{}", show(&out));
    let trace = dir.path().join(format!("fuzz/aap-3-{rule}"));
    let trace = trace.to_str().expect("utf-8 path");
    let replays = dir.sub("replay");
    let replay = ahpspec(&[
        "run",
        "--protocol",
        "aap",
        "--fault",
        fault,
        "--suites",
        trace,
        "--report-dir",
        &replays,
    ]);
    let replayed = report_json(std::path::Path::new(&replays));
    assert_eq!(
        verdict_of(&replayed, &format!("{rule}/fuzz-3-")).as_deref(),
        Some("warn"),
        "{fault}\n{}",
        show(&replay)
    );
    let fixed_dir = dir.sub("fixed");
    let fixed = ahpspec(&[
        "run",
        "--protocol",
        "aap",
        "--suites",
        trace,
        "--report-dir",
        &fixed_dir,
    ]);
    assert_eq!(fixed.status.code(), Some(0), "{fault}\n{}", show(&fixed));
    let fixed = report_json(std::path::Path::new(&fixed_dir));
    assert_eq!(
        verdict_of(&fixed, &format!("{rule}/fuzz-3-")).as_deref(),
        Some("pass"),
        "{fault}"
    );
}

#[test]
fn each_protocol_refuses_the_other_ones_malformed_mode() {
    let dir = TempDir::new("aap-malformed-cli");
    for (protocol, mode, says) in [
        ("ahp", "malformed", "AAP fuzzing only"),
        ("aap", "frames", "AHP fuzzing only"),
    ] {
        let out = ahpspec(&[
            "fuzz",
            "--protocol",
            protocol,
            "--mode",
            mode,
            "--cases",
            "1",
            "--report-dir",
            dir.str(),
        ]);
        assert_eq!(out.status.code(), Some(2), "{}", show(&out));
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(says),
            "{}",
            show(&out)
        );
    }
}
