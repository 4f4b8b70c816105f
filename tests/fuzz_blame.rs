//! The fuzzer judges only what it saw (issue 22, class 6): against quirky hosts
//! (`quirky_hosts`) a conforming host that answers out of order, or reads requests deeper
//! than the harness's parser goes, gives no finding; a host that dies on a frame is a FUZZ-001
//! finding with its trace and reports, a refused `initialize` an INIT-001 one (exit 1, never
//! the harness's exit 2); a host that never echoes does not cost a timeout per sequence once
//! its rule is known; and the campaign's duration bounds the whole campaign, shrinking
//! included.

#[path = "common/allocator.rs"]
mod allocator;

mod quirky_hosts;
mod run_support;

use std::time::Duration;

use ahpspec::checks::frame::Schemas;
use ahpspec::checks::Rule;
use ahpspec::client::Profile;
use ahpspec::fuzz::frames::{execute_frames, fuzz_frames, Mutation};
use ahpspec::fuzz::{fuzz, Excluded, ExecConfig, FuzzOptions, FuzzOutcome};
use ahpspec::host::variants::{AutoConfirmed, Variants};
use ahpspec::host::{self, HostConfig};
use ahpspec::target::Decided;
use quirky_hosts::{quirky, Quirk};
use run_support::{ahpspec, report_json, show, TempDir};

/// A whole campaign (no stop at the first finding) against `url` (the built-in host with
/// `faults` when `None`).
fn options(url: Option<&str>, seed: u64, duration: Duration) -> FuzzOptions {
    FuzzOptions {
        target: match url {
            Some(url) => Decided::Url(url.to_owned()),
            None => Decided::Host(Default::default()),
        }
        .for_sequences(None),
        exec: ExecConfig {
            timeout: Duration::from_secs(2),
            settle: Duration::from_millis(3),
            clients: 2,
            profile: Profile::scripted().expect("built-in profile"),
            schemas: Schemas::load(None).expect("schemas compile"),
            checkpoint_every: 10,
            exclude: Excluded::default(),
            known: Default::default(),
            catalog: None,
        },
        seed,
        cases: None,
        duration,
        shrink_time: Duration::from_secs(5),
        max_len: 10,
        baseline: Default::default(),
        stop_after: None,
        progress: None,
        uniform: false,
    }
}

fn no_finding<T: std::fmt::Debug>(outcome: &FuzzOutcome<T>) {
    assert!(
        outcome.findings.found.is_empty() && outcome.findings.baselined.is_empty(),
        "false positive: {:?}",
        outcome
            .findings
            .found
            .iter()
            .map(|f| (&f.failure, &f.ops))
            .collect::<Vec<_>>()
    );
}

/// The quirk is real: the answer to a listSessions sent before a ping arrives after the
/// pong. And the fuzzer judges each answer by its own id: no finding in a whole campaign of
/// either mode.
#[tokio::test]
async fn campaigns_pass_a_host_that_answers_out_of_order() {
    let host = quirky(Quirk::ReverseAnswers).await;
    let opts = options(Some(&host.url), 3, Duration::from_secs(120));
    let wrong_type = [
        Mutation::WrongMemberType,
        Mutation::ParamsNotObject { base: 1 },
    ];
    let execution = execute_frames(&wrong_type, &opts.target, &opts.exec)
        .await
        .expect("the sequence runs");
    assert_eq!(execution.failure, None, "{:?}", execution.frames);
    let at = |needle: &str| {
        execution
            .frames
            .iter()
            .position(|f| f.direction == "received" && f.text.contains(needle))
            .unwrap_or_else(|| panic!("no answer with {needle}"))
    };
    assert!(
        at(r#""id":8000000"#) < at(r#""id":7000000"#),
        "the pong overtakes the answer"
    );

    let frames_opts = FuzzOptions {
        cases: Some(40),
        ..opts.clone()
    };
    // Model mode too (its requests always waited by id). The two campaigns, each on
    // connections of its own, side by side: both mostly wait on the host's held answers.
    let model_opts = FuzzOptions {
        cases: Some(20),
        ..opts
    };
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let (frames, model) = tokio::join!(
        fuzz_frames(&frames_opts, interrupt.clone()),
        fuzz(&model_opts, interrupt.clone())
    );
    let frames = frames.expect("fuzzer runs");
    no_finding(&frames);
    assert_eq!(frames.cases, 40, "the whole budget ran");
    let model = model.expect("fuzzer runs");
    no_finding(&model);
    assert_eq!(model.cases, 20, "the whole budget ran");
}

/// The other conforming variants of issue 22, as the built-in host makes them
/// (`host::variants`: auto-confirmations recorded as `"setting"` or `"user-action"`, unknown
/// working directories refused): a campaign in either mode finds nothing.
#[tokio::test]
async fn campaigns_pass_the_other_conforming_variants() {
    let profile = Profile::scripted().expect("built-in profile");
    let all = [
        Variants {
            auto_confirmed: AutoConfirmed::Setting,
            ..Variants::default()
        },
        Variants {
            auto_confirmed: AutoConfirmed::UserAction,
            ..Variants::default()
        },
        Variants {
            known_directories: Some(profile.working_directories.clone()),
            ..Variants::default()
        },
    ];
    for variants in all {
        let host = host::spawn(HostConfig {
            variants: variants.clone(),
            ..HostConfig::default()
        })
        .await
        .expect("host starts");
        let mut opts = options(Some(host.url()), 6, Duration::from_secs(120));
        opts.cases = Some(30);
        let (_stop, interrupt) = tokio::sync::watch::channel(false);
        let frames = fuzz_frames(&opts, interrupt.clone())
            .await
            .expect("fuzzer runs");
        no_finding(&frames);
        let model = fuzz(&opts, interrupt).await.expect("fuzzer runs");
        no_finding(&model);
        assert_eq!((frames.cases, model.cases), (30, 30), "{variants:?}");
    }
}

/// A host whose parser has no nesting limit answers the fuzzer's deepest requests by their
/// ids (the harness's own parser stops at 128 levels): answers to requests it sent, not
/// TRANSPORT-004.
#[tokio::test]
async fn answers_to_requests_too_deep_for_the_harness_are_not_blamed() {
    let host = quirky(Quirk::ReadsDeepIds).await;
    let opts = options(Some(&host.url), 4, Duration::from_secs(60));
    let deep = [
        Mutation::Deep { depth: 3999 },
        Mutation::HugeString { kib: 1500 },
        Mutation::Deep { depth: 300 },
    ];
    let execution = execute_frames(&deep, &opts.target, &opts.exec)
        .await
        .expect("the sequence runs");
    assert_eq!(execution.failure, None);
    let answered = |id: &str| {
        execution
            .frames
            .iter()
            .any(|f| f.direction == "received" && f.text.contains(&format!(r#""id":{id}"#)))
    };
    assert!(answered("7000000") && answered("7000002"), "answered by id");
}

/// Runs `ahpspec fuzz` with `args` against `url` (the quirky host lives in this process);
/// returns the exit code, the output and report.json, after checking every report and
/// the summary line were written.
async fn fuzz_cli(
    url: &str,
    dir: &TempDir,
    args: &[&str],
) -> (Option<i32>, String, serde_json::Value) {
    let mut all = vec!["fuzz", url, "--report-dir", dir.str(), "--seed", "1"];
    all.extend_from_slice(args);
    let all: Vec<String> = all.into_iter().map(str::to_owned).collect();
    let out = tokio::task::spawn_blocking(move || {
        ahpspec(&all.iter().map(String::as_str).collect::<Vec<_>>())
    })
    .await
    .expect("the campaign finishes");
    let shown = show(&out);
    for name in ["report.json", "junit.xml", "report.html", "summary.md"] {
        let meta = std::fs::metadata(dir.path().join("fuzz").join(name));
        assert!(meta.is_ok_and(|m| m.len() > 0), "{name} written\n{shown}");
    }
    (
        out.status.code(),
        shown,
        report_json(&dir.path().join("fuzz")),
    )
}

/// The row of `rule` in a fuzz report, and the trace the campaign saved for it.
fn finding(
    dir: &TempDir,
    report: &serde_json::Value,
    rule: &str,
    shown: &str,
) -> ahpspec::fuzz::trace::Trace {
    let row = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .find(|c| c["info"]["id"] == rule)
        .unwrap_or_else(|| panic!("a {rule} row\n{shown}"));
    assert_eq!(row["verdict"], "fail", "{row}");
    let path = dir.path().join("fuzz").join(format!("1-{rule}.json"));
    ahpspec::fuzz::trace::Trace::load(&path).unwrap_or_else(|e| panic!("{e}\n{shown}"))
}

/// A server that dies on one kind of frame (every connection dropped, new ones refused):
/// the frame that killed it is a FUZZ-001 finding, the sequence ends at it, and the
/// campaign writes its trace and reports and exits 1 (not "cannot connect", exit 2).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_on_a_frame_is_a_fuzz_001_finding_with_trace_and_reports() {
    let host = quirky(Quirk::CrashesOn("fuzz/unknown")).await;
    let dir = TempDir::new("fuzz-crash-frames");
    let args = [
        "--mode",
        "frames",
        "--timeout",
        "1s",
        "--max-len",
        "10",
        "--duration",
        "60s",
    ];
    let (code, shown, report) = fuzz_cli(&host.url, &dir, &args).await;
    assert_eq!(code, Some(1), "{shown}");
    assert!(host.crashed(), "the fuzzer sent an unknown method");
    let trace = finding(&dir, &report, "FUZZ-001", &shown);
    let ops: Vec<Mutation> = serde_json::from_value(trace.ops.clone()).expect("mutations");
    assert!(
        matches!(ops.last(), Some(Mutation::UnknownMethod { .. })),
        "the sequence ends at the frame that killed the server: {ops:?}"
    );
    assert_eq!(
        trace.failure.op_index,
        Some(ops.len() - 1),
        "{:?}\n{shown}",
        trace.failure,
    );
    assert!(shown.contains("no longer accepts connections"), "{shown}");
}

/// The same in model mode: the server dies on a cancel.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_on_a_dispatch_is_a_fuzz_001_finding_in_model_mode() {
    let host = quirky(Quirk::CrashesOn("chat/turnCancelled")).await;
    let dir = TempDir::new("fuzz-crash-model");
    let args = ["--timeout", "1s", "--duration", "60s"];
    let (code, shown, report) = fuzz_cli(&host.url, &dir, &args).await;
    assert_eq!(code, Some(1), "{shown}");
    let trace = finding(&dir, &report, "FUZZ-001", &shown);
    let ops: Vec<ahpspec::fuzz::Op> = serde_json::from_value(trace.ops.clone()).expect("ops");
    assert_eq!(
        trace.failure.op_index,
        Some(ops.len() - 1),
        "{:?}\n{shown}",
        trace.failure,
    );
    // The last operation holds the fatal cancel: a cancel, a routine that cancels, a
    // cancel sent together with another dispatch (which may come after it), or a catalog
    // case that cancels on connections of its own (its dispatches are the case's, not the
    // sequence's: the case's steps name the cancel).
    let last = ops.len() - 1;
    let fatal: Vec<_> = trace
        .performed
        .iter()
        .filter(|p| p.op_index == last)
        .collect();
    let case_cancels = trace.ops[last]["case"].as_str().is_some_and(|id| {
        let catalog = ahpspec::suite::Catalog::embedded().expect("catalog");
        catalog.cases.iter().any(|case| {
            case.info.id == id
                && case.steps.iter().any(|s| {
                    serde_json::to_string(&s.step).is_ok_and(|t| t.contains("chat/turnCancelled"))
                })
        })
    });
    assert!(
        case_cancels
            || fatal
                .iter()
                .any(|p| p.planned.action["type"] == "chat/turnCancelled"),
        "the last operation dispatches the cancel: {} {fatal:?}",
        trace.ops[last]
    );
    let rows: Vec<&str> = report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .filter_map(|c| c["info"]["id"].as_str())
        .collect();
    assert_eq!(rows, ["FUZZ-001"], "nothing else is blamed\n{shown}");
}

/// A server that dies while a sequence is set up (on createSession): FUZZ-001's finding at
/// set-up (no operation involved), in both modes, with reports and exit 1 — not the
/// harness's "cannot connect" or "connection closed", exit 2.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_during_the_set_up_is_a_fuzz_001_finding_in_both_modes() {
    for mode in ["frames", "model"] {
        let host = quirky(Quirk::CrashesOn("createSession")).await;
        let dir = TempDir::new(&format!("fuzz-crash-setup-{mode}"));
        let args = ["--mode", mode, "--duration", "60s"];
        let (code, shown, report) = fuzz_cli(&host.url, &dir, &args).await;
        assert_eq!(code, Some(1), "{mode}: {shown}");
        let trace = finding(&dir, &report, "FUZZ-001", &shown);
        assert_eq!(trace.ops, serde_json::json!([]), "no operation involved");
        assert_eq!(trace.failure.op_index, None);
        assert!(shown.contains("no longer accepts connections"), "{shown}");
    }
}

/// A host that refuses `initialize`: INIT-001's finding, in both modes, with reports and
/// exit 1; the campaign stops (nothing past the handshake can be tested).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_initialize_is_an_init_001_finding_in_both_modes() {
    let host = quirky(Quirk::RefusesInitialize).await;
    for mode in ["frames", "model"] {
        let dir = TempDir::new(&format!("fuzz-init-{mode}"));
        let args = ["--mode", mode, "--duration", "60s"];
        let (code, shown, report) = fuzz_cli(&host.url, &dir, &args).await;
        assert_eq!(code, Some(1), "{mode}: {shown}");
        let trace = finding(&dir, &report, "INIT-001", &shown);
        assert_eq!(trace.ops, serde_json::json!([]), "no operation involved");
        assert_eq!(report["cases"].as_array().map(Vec::len), Some(1), "{shown}");
        assert!(shown.contains("INIT-001"), "{shown}");
    }
}

/// A host that never echoes a dispatch: after the first missing echo (DISPATCH-001 or
/// DISPATCH-003, found with the whole timeout), no sequence waits the timeout for an echo
/// again: a campaign bounded to a few timeouts runs many sequences.
#[tokio::test]
async fn a_known_missing_echo_is_not_waited_for_again() {
    let host = quirky(Quirk::NeverEchoes).await;
    let mut opts = options(Some(&host.url), 5, Duration::from_secs(10));
    opts.shrink_time = Duration::from_millis(500);
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let outcome = fuzz(&opts, interrupt).await.expect("fuzzer runs");
    let failing = &outcome.findings.failing;
    println!("{} sequences: {failing:?}", outcome.cases);
    // Five timeouts' worth of campaign: waiting out every missing echo, at most five
    // sequences (two of the timeouts go to finding DISPATCH-001 and DISPATCH-003).
    assert!(
        outcome.cases >= 15,
        "{} sequences: {failing:?}",
        outcome.cases
    );
    assert!(
        failing.contains_key(&Rule::Dispatch001) || failing.contains_key(&Rule::Dispatch003),
        "the missing echo is the echo rule's, not that of what the dispatch would show: {failing:?}"
    );
}

/// The duration bounds the whole campaign, shrinking included: a finding whose shrinking
/// would take longer than the campaign's duration is shrunk until the campaign's end, and
/// says so; the campaign's own figures stay within its duration (a sequence cut off at the
/// deadline is not counted).
#[tokio::test]
async fn the_duration_bounds_the_whole_campaign() {
    let mut opts = options(None, 1, Duration::from_secs(3));
    opts.target = Decided::Host(ahpspec::host::Fault::DiesOnMalformed.into()).for_sequences(None);
    opts.exec.timeout = Duration::from_secs(1);
    opts.shrink_time = Duration::from_secs(600);
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let outcome = fuzz_frames(&opts, interrupt).await.expect("fuzzer runs");
    let found = outcome
        .findings
        .found
        .first()
        .expect("dies-on-malformed is found");
    assert!(
        found.shrink_elapsed <= opts.duration,
        "{:?}",
        found.shrink_elapsed
    );
    // The margin is the cut-off sequence's clean-up (its connections closed, its host
    // stopped), not a speed: unbounded, shrinking alone would run for minutes.
    assert!(
        outcome.elapsed <= opts.duration + Duration::from_secs(3),
        "the campaign ran {:?}",
        outcome.elapsed
    );
    assert!(outcome.shrinking <= outcome.elapsed);
    // The report says the same: the campaign's time, shrinking's share, the duration.
    let report = ahpspec::fuzz::report(
        &outcome,
        &ahpspec::fuzz::ReportInput {
            target: "builtin",
            fault: Some("dies-on-malformed".into()),
            mode: "frames",
            baseline: &Default::default(),
            traces: std::path::Path::new("reports/fuzz"),
            shard: None,
            duration: opts.duration,
        },
    );
    assert_eq!(report.duration_ms, outcome.elapsed.as_secs_f64() * 1000.0);
    let does = &report.cases[0].info.does;
    assert!(
        does.contains("shrinking: ") && does.contains("(duration 3 s)"),
        "{does}"
    );
}

/// A campaign against a server that outlives its sequences leaves it as it found it: each
/// sequence disposes the sessions it made (its own, side sessions, a chat moved to a new
/// one), in both modes, so the session list every checkpoint reads does not grow with the
/// campaign (left behind, it slowed a second campaign on the same server from 295 to 125
/// operations/s).
#[tokio::test]
async fn campaigns_against_a_shared_server_dispose_the_sessions_they_made() {
    let host = host::spawn(HostConfig::default())
        .await
        .expect("host starts");
    let mut opts = options(Some(host.url()), 8, Duration::from_secs(120));
    opts.cases = Some(40);
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let model = fuzz(&opts, interrupt.clone()).await.expect("fuzzer runs");
    no_finding(&model);
    let frames = fuzz_frames(&opts, interrupt).await.expect("fuzzer runs");
    no_finding(&frames);
    assert_eq!((model.cases, frames.cases), (40, 40));
    let left = sessions_on(host.url()).await;
    assert!(
        left.is_empty(),
        "{} sessions left behind by 80 sequences: {left:?}",
        left.len()
    );
}

/// So does a catalog run against a URL: its cases' sessions are disposed at its end, and its
/// automations removed with their runs' sessions (a whole run left some 190 sessions and 10
/// automations behind).
#[tokio::test]
async fn a_catalog_run_against_a_url_disposes_its_cases_sessions() {
    use ahpspec::catalog::Selection;
    use ahpspec::certify::{certify, Options};
    let host = host::spawn(HostConfig::default())
        .await
        .expect("host starts");
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let options = Options {
        url: Some(host.url().to_owned()),
        selection: Selection {
            filter: vec![
                "SESSION-*".to_owned(),
                "CHAT-*".to_owned(),
                "AUTOMATION-*".to_owned(),
            ],
            ..Selection::default()
        },
        ..Options::default()
    };
    let report = certify(&options, &mut ahpspec::rows::Quiet, interrupt)
        .await
        .expect("the run runs");
    assert!(report.cases.len() > 20, "{} cases", report.cases.len());
    let left = sessions_on(host.url()).await;
    assert!(left.is_empty(), "{} sessions left: {left:?}", left.len());
    let automations = automations_on(host.url()).await;
    assert!(automations.is_empty(), "automations left: {automations:?}");
}

/// The resources of the automations `url`'s catalogue lists.
async fn automations_on(url: &str) -> Vec<String> {
    let channel = serde_json::json!({ "channel": "ahp-automations://" });
    resources_in(url, "subscribe", channel, "/result/snapshot/state/entries").await
}

/// The resources of the sessions `url` lists (its first page, which the built-in host does
/// not cut).
async fn sessions_on(url: &str) -> Vec<String> {
    let channel = serde_json::json!({ "channel": "ahp-root://" });
    resources_in(url, "listSessions", channel, "/result/items").await
}

/// The `resource` of each entry of the list at `pointer` in `url`'s answer to `method`.
async fn resources_in(
    url: &str,
    method: &str,
    params: serde_json::Value,
    pointer: &str,
) -> Vec<String> {
    let timeout = Duration::from_secs(5);
    let mut conn = ahpspec::client::checkpoint::observer(url, timeout, "lister", "1.0.0")
        .await
        .expect("a connection");
    let answer = conn
        .request(method, params, timeout)
        .await
        .expect("answered");
    answer
        .pointer(pointer)
        .and_then(serde_json::Value::as_array)
        .unwrap_or_else(|| panic!("a list at {pointer}: {answer}"))
        .iter()
        .filter_map(|entry| entry["resource"].as_str().map(str::to_owned))
        .collect()
}
