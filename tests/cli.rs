//! The command line as a user sees it: exit codes, reports, baselines, usage errors, the
//! catalog listing and Ctrl-C.
//!
//! The tests run as libtest-mimic trials, two per core (`tests/common/trials.rs`): most wait
//! on the processes they start (the three fuzz campaigns ~40 s each for ~9 s of CPU), and
//! one per core took 89 s of wall time for 38 s of CPU.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use libtest_mimic::Trial;
use serde_json::Value;

#[path = "common/trials.rs"]
mod trials;

/// Trials of test functions, named as the functions.
macro_rules! trials {
    ($($test:ident),* $(,)?) => {
        vec![$(Trial::test(stringify!($test), || {
            $test();
            Ok(())
        }),)*]
    };
}

fn main() -> std::process::ExitCode {
    // The longest first: the fuzz campaigns.
    let mut all = trials![
        serve_with_two_faults_fails_both_rules_in_run_and_fuzz,
        fuzz_reports_each_unbaselined_rule_with_a_trace_that_replays,
        fuzz_exits_0_when_every_rule_found_is_baselined,
        run_against_the_builtin_host_exits_0_and_writes_four_reports,
        a_broken_should_warns_and_fails_only_with_strict,
        a_broken_must_fails_and_names_the_rerun_command,
        a_baseline_accepts_listed_failures_and_rejects_stale_entries,
        bad_input_exits_2_and_names_the_problem_on_stderr,
        bad_input_is_exactly_one_line_on_stderr,
        list_prints_the_catalog_and_honours_filters,
        a_refused_connection_is_not_a_conforming_run,
        the_echo_check_follows_a_case_chosen_client_id,
        run_with_two_faults_breaks_both_rules,
        a_replay_that_stops_at_another_rule_says_which,
    ];
    all.push(Trial::test(
        "ctrl_c_stops_the_run_and_still_writes_the_report",
        || {
            let mut runtime = tokio::runtime::Builder::new_multi_thread();
            runtime.worker_threads(2);
            trials::on_runtime(runtime, ctrl_c_stops_the_run_and_still_writes_the_report())
        },
    ));
    libtest_mimic::run(&trials::arguments(), all).exit_code()
}

fn ahpspec() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ahpspec"))
}

/// Runs `ahpspec` with `args` and waits for it.
fn run(args: &[&str]) -> Output {
    ahpspec()
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ahpspec runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        text(&out.stdout),
        text(&out.stderr)
    )
}

/// A fresh, empty directory under the system temp dir (removed when dropped).
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "ahpspec-cli-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }

    fn str(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }

    fn file(&self, name: &str, contents: &str) -> String {
        let path = self.0.join(name);
        std::fs::write(&path, contents).expect("writes temp file");
        path.to_str().expect("utf-8 temp path").to_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn report_json(dir: &Path) -> Value {
    let path = dir.join("report.json");
    let body = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&body).expect("report.json parses")
}

fn run_against_the_builtin_host_exits_0_and_writes_four_reports() {
    let dir = TempDir::new("builtin");
    let out = run(&["run", "--report-dir", dir.str()]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    for name in ["report.json", "junit.xml", "report.html", "summary.md"] {
        let path = dir.path().join(name);
        let meta = std::fs::metadata(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(meta.len() > 0, "{name} is empty");
    }
    let report = report_json(dir.path());
    assert_eq!(report["tally"]["fail"], 0, "{}", report["tally"]);
    assert_eq!(report["interrupted"], false);
    assert!(
        report["cases"].as_array().is_some_and(|c| c.len() >= 10),
        "report.json lists the cases"
    );
}

fn a_broken_should_warns_and_fails_only_with_strict() {
    let dir = TempDir::new("lifo");
    let base = [
        "run",
        "--fault",
        "queue-lifo",
        "--filter",
        "PENDING-*",
        "--report-dir",
        dir.str(),
    ];
    let out = run(&base);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        text(&out.stdout).contains("PENDING-003 (SHOULD)"),
        "{}",
        show(&out)
    );
    let strict = [&base[..], &["--strict"]].concat();
    let out = run(&strict);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
}

fn a_broken_must_fails_and_names_the_rerun_command() {
    let dir = TempDir::new("lowest");
    let out = run(&[
        "run",
        "--fault",
        "lowest-version",
        "--filter",
        "VERSION-*",
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("VERSION-002 (MUST)"), "{}", show(&out));
    assert!(
        stdout.contains("Re-run: ahpspec run --fault lowest-version --filter VERSION-002"),
        "{}",
        show(&out)
    );
}

fn a_baseline_accepts_listed_failures_and_rejects_stale_entries() {
    let dir = TempDir::new("baseline");
    let known = dir.file("known.txt", "# known failures\nVERSION-002\n");
    let out = run(&[
        "run",
        "--fault",
        "lowest-version",
        "--filter",
        "VERSION-*",
        "--baseline",
        &known,
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(report_json(dir.path())["tally"]["baselined"], 1);

    let stale = dir.file("stale.txt", "VERSION-001  # fixed long ago\n");
    let out = run(&[
        "run",
        "--filter",
        "VERSION-001",
        "--baseline",
        &stale,
        "--report-dir",
        dir.str(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert!(
        text(&out.stdout).contains("stale baseline entry: VERSION-001 now passes"),
        "{}",
        show(&out)
    );
}

/// Bad input a user may type, with what each must be about.
const BAD_INPUT: &[(&[&str], &str)] = &[
    (&["run", "--no-such-flag"], "--no-such-flag"),
    (&["run", "--fault", "nope"], "nope"),
    (&["run", "http://127.0.0.1:1"], "http://127.0.0.1:1"),
    (&["run", "--timeout", "banana"], "banana"),
    (&["run", "--level", "maybe"], "maybe"),
    (
        &["run", "--protocol", "aap", "--protocol-version", "0.9.0"],
        "--protocol-version",
    ),
    // AAP fuzzing takes --shard and --record (issue 27), but not AHP's frames mode, and
    // AHP fuzzing not AAP's malformed mode.
    (
        &["fuzz", "--protocol", "aap", "--mode", "frames"],
        "--mode frames",
    ),
    (&["fuzz", "--mode", "malformed"], "--mode malformed"),
    (
        &[
            "fuzz",
            "--protocol",
            "aap",
            "--record",
            "/nonexistent-dir/x.jsonl",
        ],
        "/nonexistent-dir/x.jsonl",
    ),
    // AAP fuzzing takes --baseline (issue 27); a file it cannot read is bad input.
    (
        &[
            "fuzz",
            "--protocol",
            "aap",
            "--baseline",
            "/nonexistent/ahpspec-b.txt",
        ],
        "ahpspec-b.txt",
    ),
    // --fault a,b and fuzz's own inputs (issue 11, fuzz slice).
    (&["run", "--fault", "queue-lifo,nope"], "nope"),
    (&["serve", "--fault", "queue-lifo,nope"], "nope"),
    (&["fuzz", "--fault", "nope"], "nope"),
    // Issue 25, resources (h25a): the served directory must be one.
    (
        &["serve", "--workspace", "/nonexistent/ahpspec-workspace"],
        "/nonexistent/ahpspec-workspace",
    ),
    (
        &["serve", "--protocol", "aap", "--workspace", "/tmp"],
        "--workspace",
    ),
    (
        &["fuzz", "--baseline", "/nonexistent/ahpspec-fuzz-baseline"],
        "/nonexistent/ahpspec-fuzz-baseline",
    ),
];

fn bad_input_exits_2_and_names_the_problem_on_stderr() {
    for (args, culprit) in BAD_INPUT {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", show(&out));
        assert!(out.stdout.is_empty(), "{args:?}: {}", show(&out));
        let stderr = text(&out.stderr);
        let first = stderr.lines().next().unwrap_or_default();
        assert!(
            first.starts_with("error: ") || first.starts_with("ahpspec: "),
            "{args:?}: {}",
            show(&out)
        );
        assert!(first.contains(culprit), "{args:?}: {}", show(&out));
    }
}

/// The standard: a usage error is exactly one line on stderr. clap's own errors (unknown
/// flag, unparsable value) add a blank line, a tip/usage block and "For more information,
/// try '--help'." — this test fails for them until the CLI renders its errors itself.
fn bad_input_is_exactly_one_line_on_stderr() {
    let mut problems = Vec::new();
    for (args, _) in BAD_INPUT {
        let out = run(args);
        let stderr = text(&out.stderr);
        if stderr.lines().count() != 1 || !stderr.ends_with('\n') {
            problems.push(format!("{args:?} printed:\n{stderr}"));
        }
    }
    assert!(
        problems.is_empty(),
        "usage errors must be one line:\n{}",
        problems.join("\n")
    );
}

/// Whether `id` looks like a case ID: `AREA-N` words, optionally `/slug`.
fn is_case_id(id: &str) -> bool {
    let (rule, slug) = match id.split_once('/') {
        Some((rule, slug)) => (rule, Some(slug)),
        None => (id, None),
    };
    let mut parts = rule.split('-');
    let area_ok = parts
        .next()
        .is_some_and(|a| !a.is_empty() && a.chars().all(|c| c.is_ascii_uppercase()));
    let rest: Vec<&str> = parts.collect();
    area_ok
        && !rest.is_empty()
        && rest.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        })
        && slug.is_none_or(|s| {
            !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.')
        })
}

fn list_prints_the_catalog_and_honours_filters() {
    let out = run(&["list"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let stdout = text(&out.stdout);
    let mut ids = Vec::new();
    for line in stdout.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 4, "ID, level, area, description: {line:?}");
        assert!(is_case_id(fields[0]), "first field is a case ID: {line:?}");
        assert!(
            ["MUST", "SHOULD", "MAY"].contains(&fields[1]),
            "level: {line:?}"
        );
        assert!(!fields[2].is_empty() && !fields[3].is_empty(), "{line:?}");
        ids.push(fields[0].to_owned());
    }
    assert!(ids.len() >= 50, "{} cases listed", ids.len());
    assert!(ids.iter().any(|id| id == "TRANSPORT-010"));
    assert!(
        ids.iter().any(|id| id == "INV-FOLD-1"),
        "always-on rows too"
    );

    let out = run(&["list", "--filter", "TOOL-*"]);
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    let tools: Vec<String> = text(&out.stdout).lines().map(str::to_owned).collect();
    assert!(!tools.is_empty(), "TOOL-* selects something");
    assert!(tools.len() < ids.len());
    for line in &tools {
        assert!(line.starts_with("TOOL-"), "filtered: {line:?}");
    }
}

/// A WebSocket server that accepts and then never sends anything.
async fn silent_server() -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("binds loopback");
    let url = format!("ws://{}", listener.local_addr().expect("local address"));
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                if let Ok(ws) = tokio_tungstenite::accept_async(stream).await {
                    let _ws = ws;
                    std::future::pending::<()>().await;
                }
            });
        }
    });
    (url, task)
}

async fn ctrl_c_stops_the_run_and_still_writes_the_report() {
    let (url, server) = silent_server().await;
    let dir = TempDir::new("sigint");
    let mut child = ahpspec()
        .args(["run", &url, "--timeout", "30s", "--report-dir", dir.str()])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("ahpspec run starts");
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        child.try_wait().expect("child status").is_none(),
        "the run is still waiting on the silent server"
    );
    let status = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let sent = Instant::now();
    let exit = loop {
        if let Some(exit) = child.try_wait().expect("child status") {
            break exit;
        }
        if sent.elapsed() > Duration::from_secs(10) {
            let _ = child.kill();
            let _ = child.wait();
            server.abort();
            panic!("ahpspec run did not exit within 10 s of SIGINT");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    server.abort();
    assert_eq!(exit.code(), Some(1), "an interrupted run exits 1: {exit}");
    let report = report_json(dir.path());
    assert_eq!(report["interrupted"], true);
}

/// Nothing listens at the URL: no case can run, which is a connection error (exit 2 per
/// the README), never "conforming".
fn a_refused_connection_is_not_a_conforming_run() {
    let port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("binds loopback");
        listener.local_addr().expect("local address").port()
    };
    let dir = TempDir::new("refused");
    let url = format!("ws://127.0.0.1:{port}");
    let out = run(&["run", &url, "--timeout", "300ms", "--report-dir", dir.str()]);
    assert_eq!(out.status.code(), Some(2), "{}", show(&out));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "one-line error: {stderr}");
    assert!(stderr.contains("cannot connect"), "{stderr}");
}

/// The always-on echo check follows the clientId a case initialises with: a case that
/// names its own clientId and dispatches, with no echo step of its own, fails only through
/// that check against a host that echoes with the wrong clientSeq.
fn the_echo_check_follows_a_case_chosen_client_id() {
    let dir = TempDir::new("client-id");
    let suites = dir.path().join("suites");
    std::fs::create_dir_all(&suites).expect("suites dir");
    std::fs::write(
        suites.join("custom-id.toml"),
        r#"page = "custom client id"

[[case]]
id = "ENV-001"
level = "MUST"
spec = "test"
requirement = "A renamed session takes the title."
does = "Initialises with its own clientId, renames a session, reads the title."
steps = [
  { initialize = { client_id = "custom-${run}" } },
  { session = { as = "S" } },
  { dispatch = { channel = "${S}", action = { type = "session/titleChanged", title = "mine" }, as = "rename" } },
  { state = { channel = "${S}", equals = { "/title" = "mine" } } },
]
"#,
    )
    .expect("suite written");
    let run_on = |fault: Option<&str>, report: &str| {
        let mut args = vec!["run", "--suites", suites.to_str().expect("utf-8 path")];
        let report = dir.path().join(report);
        let report = report.to_str().expect("utf-8 path").to_owned();
        args.extend(["--report-dir", &report]);
        if let Some(fault) = fault {
            args.extend(["--fault", fault]);
        }
        let out = run(&args);
        let json = report_json(Path::new(&report));
        let row = json["cases"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["info"]["id"] == "DISPATCH-001")
            .cloned()
            .unwrap_or(Value::Null);
        (out, row)
    };
    let (out, row) = run_on(None, "correct");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert_eq!(row["verdict"], "pass", "{row}");
    let (out, row) = run_on(Some("wrong-client-seq"), "faulty");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(row["verdict"], "fail", "{row}");
}

// --fault a,b and fuzz campaigns that go on after a finding (issue 11, fuzz slice).

/// Two faults whose rules differ: CHAT-VALIDATE-003 (a MUST: fails) and PENDING-003 (a
/// SHOULD: warns).
const TWO_FAULTS: &str = "cancel-idle-accepted,queue-lifo";

/// The rules of the rows of `report` that did not pass (case IDs without their slug).
fn broken_rules(report: &Value) -> std::collections::BTreeSet<String> {
    report["cases"]
        .as_array()
        .into_iter()
        .flatten()
        // Not testable breaks nothing: a URL run without a target profile's workspace
        // cannot try the resource cases. Nor does not applicable (CHAT-FORK-001 is about
        // agents without fork, which the built-in one advertises).
        .filter(|c| {
            c["verdict"] != "pass"
                && c["verdict"] != "not-testable"
                && c["verdict"] != "not-applicable"
        })
        .filter_map(|c| c["info"]["id"].as_str())
        .map(|id| id.split('/').next().unwrap_or(id).to_owned())
        .collect()
}

fn both_rules() -> std::collections::BTreeSet<String> {
    ["CHAT-VALIDATE-003", "PENDING-003"]
        .map(str::to_owned)
        .into()
}

fn run_with_two_faults_breaks_both_rules() {
    let dir = TempDir::new("two-faults");
    let out = run(&["run", "--fault", TWO_FAULTS, "--report-dir", dir.str()]);
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let report = report_json(dir.path());
    assert_eq!(report["fault"], TWO_FAULTS);
    assert_eq!(broken_rules(&report), both_rules(), "{}", show(&out));
    assert!(
        text(&out.stdout).contains(&format!(
            "Re-run: ahpspec run --fault {TWO_FAULTS} --filter"
        )),
        "{}",
        show(&out)
    );
}

/// The issue's demonstration: a server with two deviations (`serve --fault a,b`) fails both
/// rules in a conformance run, and one fuzz campaign against it reports both.
fn serve_with_two_faults_fails_both_rules_in_run_and_fuzz() {
    let mut child = ahpspec()
        .args(["serve", "--fault", TWO_FAULTS])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ahpspec serve starts");
    let mut url = String::new();
    let mut said = String::new();
    {
        use std::io::BufRead;
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufReader::new(stdout)
            .read_line(&mut url)
            .expect("the URL");
        let stderr = child.stderr.take().expect("stderr");
        std::io::BufReader::new(stderr)
            .read_line(&mut said)
            .expect("the faults");
    }
    let dir = TempDir::new("serve-two-faults");
    let out = run(&["run", url.trim(), "--report-dir", dir.str()]);
    let fuzzed = run(&[
        "fuzz",
        url.trim(),
        "--seed",
        "1",
        "--cases",
        "400",
        "--shrink-time",
        "3s",
        "--report-dir",
        dir.str(),
    ]);
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        said.contains("cancel-idle-accepted (breaks CHAT-VALIDATE-003)")
            && said.contains("queue-lifo (breaks PENDING-003)"),
        "{said}"
    );
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    assert_eq!(broken_rules(&report_json(dir.path())), both_rules());
    assert_eq!(fuzzed.status.code(), Some(1), "{}", show(&fuzzed));
    let found = broken_rules(&report_json(&dir.path().join("fuzz")));
    for rule in both_rules() {
        assert!(found.contains(&rule), "{rule} not found: {}", show(&fuzzed));
        assert!(
            text(&fuzzed.stdout).contains(&format!("FOUND {rule}")),
            "{}",
            show(&fuzzed)
        );
    }
}

/// One campaign (seed 1, 400 sequences) against both faults, with `baseline` (rule IDs).
fn fuzz_two_faults(dir: &TempDir, baseline: &str) -> Output {
    let baseline = dir.file("baseline.txt", baseline);
    run(&[
        "fuzz",
        "--fault",
        TWO_FAULTS,
        "--seed",
        "1",
        "--cases",
        "400",
        "--shrink-time",
        "3s",
        "--baseline",
        &baseline,
        "--report-dir",
        dir.str(),
    ])
}

fn fuzz_reports_each_unbaselined_rule_with_a_trace_that_replays() {
    let dir = TempDir::new("fuzz-two-faults");
    let out = fuzz_two_faults(&dir, "PENDING-003  # known\n");
    assert_eq!(out.status.code(), Some(1), "{}", show(&out));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("FOUND CHAT-VALIDATE-003"), "{}", show(&out));
    assert!(
        stdout.contains("seen and baselined: PENDING-003"),
        "{}",
        show(&out)
    );
    assert!(!stdout.contains("FOUND PENDING-003"), "{}", show(&out));
    let reports = dir.path().join("fuzz");
    let report = report_json(&reports);
    assert_eq!(report["fault"], TWO_FAULTS);
    assert_eq!(
        report["unexpectedFailures"],
        serde_json::json!(["CHAT-VALIDATE-003"])
    );
    assert_eq!(report["tally"]["baselined"], 1);
    assert!(
        broken_rules(&report).contains("PENDING-003"),
        "the baselined row is there"
    );
    let trace = reports.join("1-CHAT-VALIDATE-003.json");
    assert!(
        !reports.join("1-PENDING-003.json").exists(),
        "baselined rules are not shrunk"
    );
    let replay = run(&["replay", trace.to_str().expect("utf-8")]);
    assert_eq!(replay.status.code(), Some(1), "{}", show(&replay));
    assert!(text(&replay.stdout).starts_with("reproduced: CHAT-VALIDATE-003"));
    // Traces of older versions name a single fault.
    let mut old: Value =
        serde_json::from_str(&std::fs::read_to_string(&trace).expect("trace")).expect("json");
    old["fault"] = Value::from("cancel-idle-accepted");
    let old_trace = dir.file("old-trace.json", &old.to_string());
    let replay = run(&["replay", &old_trace]);
    assert_eq!(replay.status.code(), Some(1), "{}", show(&replay));
    // A trace naming a case this catalog lacks: the operation runs nothing, the replay
    // says so and gives no verdict (exit 2), not "no longer reproduces".
    old["ops"] = serde_json::json!([{ "op": "case", "case": "NOPE-999" }]);
    let foreign = dir.file("foreign-trace.json", &old.to_string());
    let replay = run(&["replay", &foreign]);
    assert_eq!(replay.status.code(), Some(2), "{}", show(&replay));
    let stderr = text(&replay.stderr);
    assert!(
        stderr.contains("left out: case NOPE-999"),
        "{}",
        show(&replay)
    );
    assert!(!text(&replay.stdout).contains("no longer reproduces"));
}

fn fuzz_exits_0_when_every_rule_found_is_baselined() {
    let dir = TempDir::new("fuzz-all-baselined");
    let out = fuzz_two_faults(&dir, "PENDING-003\nCHAT-VALIDATE-003\nINV-FOLD-1\n");
    assert_eq!(out.status.code(), Some(0), "{}", show(&out));
    assert!(
        text(&out.stdout).contains("no failure found besides baselined rules"),
        "{}",
        show(&out)
    );
}

/// A replay whose sequence now stops at another rule's failure says which, with what it
/// expected and got, and exits 1: it did not run cleanly. The sequence: a cancel sent
/// together with the truncation of a running turn, against a host that keeps the turn
/// (`truncate-keeps-active`). Older versions blamed the accepted cancel (CHAT-VALIDATE-003,
/// the trace's rule); the truncation's fresh-snapshot judge now finds the kept turn first,
/// whether its snapshot comes before the cancel ends the turn or after (TURN-012).
fn a_replay_that_stops_at_another_rule_says_which() {
    let dir = TempDir::new("replay-instead");
    let trace = serde_json::json!({
        "format": 2, "toolVersion": "0.1.0", "seed": 1, "target": "builtin",
        "fault": "truncate-keeps-active", "mode": "model",
        "failure": { "rule": "CHAT-VALIDATE-003", "expected": "chat/turnCancelled rejected",
                     "actual": "chat/turnCancelled accepted", "opIndex": 1 },
        "originalLen": 2, "shrinkSteps": 0,
        "ops": [
            { "op": "startTurn", "client": 0, "behaviour": "long" },
            { "op": "together",
              "first": { "op": "truncate", "client": 0, "keep_first": false },
              "second": { "op": "cancel", "client": 0, "stale": false } }
        ],
        "performed": [], "frames": []
    });
    let path = dir.file("trace.json", &trace.to_string());
    for _ in 0..3 {
        let replay = run(&["replay", &path]);
        assert_eq!(replay.status.code(), Some(1), "{}", show(&replay));
        assert!(
            text(&replay.stdout).starts_with(
                "no longer reproduces: CHAT-VALIDATE-003; the sequence fails on TURN-012 instead"
            ),
            "{}",
            show(&replay)
        );
    }
}
