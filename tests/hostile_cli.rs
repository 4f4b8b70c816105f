//! The `ahpspec` binary against hostile servers (`hostile_servers`): the exit code the
//! README promises (1: the server broke rules or left cases blocked) and all four reports
//! written, however the server misbehaves. The time a wholly silent server costs is a
//! benchmark figure (benches/README.md), not asserted here beyond "it ends".

mod hostile_servers;
mod run_support;

use hostile_servers::{hostile, Mode};
use run_support::{ahpspec, report_json, show, TempDir};

/// Runs the binary against a fresh server of `mode` with `args` and checks the exit code
/// and the reports; returns report.json.
async fn run_binary(mode: Mode, args: &[&str]) -> serde_json::Value {
    let server = hostile(mode).await;
    let dir = TempDir::new(&format!("hostile-cli-{mode:?}"));
    let mut all = vec!["run", server.url.as_str(), "--report-dir", dir.str()];
    all.extend_from_slice(args);
    let all: Vec<String> = all.into_iter().map(str::to_owned).collect();
    let started = std::time::Instant::now();
    let out = tokio::task::spawn_blocking(move || {
        ahpspec(&all.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .expect("the run finishes");
    // Shown with --nocapture; benches/README.md records it for the silent server.
    eprintln!("{mode:?} {args:?}: {:?}", started.elapsed());
    assert_eq!(out.status.code(), Some(1), "{mode:?}: {}", show(&out));
    for name in ["report.json", "junit.xml", "report.html", "summary.md"] {
        let meta = std::fs::metadata(dir.path().join(name));
        assert!(
            meta.is_ok_and(|m| m.len() > 0),
            "{mode:?}: {name} written\n{}",
            show(&out)
        );
    }
    report_json(dir.path())
}

/// The whole catalog with the default timeout against a server that never says a word:
/// INIT-001 fails, the rest is blocked, exit 1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_server_whole_catalog_exits_1_with_reports() {
    let report = run_binary(Mode::Silent, &[]).await;
    let cases = report["cases"].as_array().expect("cases");
    let init = cases
        .iter()
        .find(|c| c["info"]["id"] == "INIT-001")
        .expect("an INIT-001 row");
    assert_eq!(init["verdict"], "fail", "{init}");
    let blocked = cases.iter().filter(|c| c["verdict"] == "blocked").count();
    assert!(
        blocked * 2 > cases.len(),
        "{blocked} of {} blocked",
        cases.len()
    );
    assert!(cases.iter().all(|c| c["verdict"] != "pass"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_hostile_server_exits_1_with_reports() {
    for mode in [
        Mode::Garbage,
        Mode::Slow,
        Mode::Hangup,
        Mode::WrongIds,
        Mode::DeepNesting,
        Mode::Late,
        Mode::Binary,
    ] {
        let report = run_binary(
            mode,
            &["--timeout", "500ms", "--filter", "INIT-*,TRANSPORT-*"],
        )
        .await;
        let verdicts: Vec<&str> = report["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter_map(|c| c["verdict"].as_str())
            .collect();
        assert!(verdicts.contains(&"fail"), "{mode:?}: {verdicts:?}");
    }
}
