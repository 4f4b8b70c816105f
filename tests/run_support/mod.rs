//! Running the `ahpspec` binary from tests and reading what it wrote: shared by the test
//! binaries that drive the CLI end to end (not every binary uses every helper).
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// Runs `ahpspec` with `args` (no standard input) and waits for it.
pub fn ahpspec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ahpspec"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("ahpspec runs")
}

/// Exit code, stdout and stderr, for assertion messages.
pub fn show(out: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// A fresh, empty directory under the system temp dir, removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "ahpspec-test-{label}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }

    pub fn str(&self) -> &str {
        self.0.to_str().expect("utf-8 temp path")
    }

    /// The path of `name` inside the directory, as a string for command lines.
    pub fn sub(&self, name: &str) -> String {
        self.0.join(name).to_string_lossy().into_owned()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The `report.json` a run wrote into `dir`.
pub fn report_json(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("report.json")).expect("report.json");
    serde_json::from_str(&text).expect("report.json parses")
}

/// Every row's verdict by `ID`, or `ID@version` in a run of several protocol versions.
pub fn verdicts(report: &Value) -> BTreeMap<String, String> {
    rows(report).into_iter().collect()
}

/// Every row of a report in report order: `ID` (or `ID@version`) and its verdict.
pub fn rows(report: &Value) -> Vec<(String, String)> {
    report["cases"]
        .as_array()
        .expect("cases")
        .iter()
        .map(|c| {
            let id = c["info"]["id"].as_str().unwrap_or_default();
            let key = match c["protocolVersion"].as_str() {
                Some(v) => format!("{id}@{v}"),
                None => id.to_owned(),
            };
            (key, c["verdict"].as_str().unwrap_or_default().to_owned())
        })
        .collect()
}

/// A child process whose first stdout line is a URL (`serve`, `proxy`), killed with
/// SIGTERM when dropped unless waited for.
pub struct Served {
    child: std::process::Child,
    pub url: String,
    /// Kept open: the process prints its summary there at the end.
    _stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Served {
    pub fn start(args: &[&str]) -> Served {
        use std::io::BufRead;
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_ahpspec"))
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("ahpspec starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut url = String::new();
        let mut stdout = std::io::BufReader::new(stdout);
        stdout.read_line(&mut url).expect("a URL line");
        Served {
            child,
            url: url.trim().to_owned(),
            _stdout: stdout,
        }
    }

    /// SIGTERM, then its exit code and stderr.
    pub fn terminate(self) -> (Option<i32>, String) {
        self.signal("-TERM")
    }

    /// Sends `signal` (`-INT`, `-TERM`), then its exit code and stderr.
    pub fn signal(mut self, signal: &str) -> (Option<i32>, String) {
        let pid = self.child.id().to_string();
        let status = std::process::Command::new("kill")
            .args([signal, &pid])
            .status()
            .expect("kill runs");
        assert!(status.success());
        let child = std::mem::replace(
            &mut self.child,
            std::process::Command::new("true").spawn().expect("true"),
        );
        let out = child.wait_with_output().expect("exits");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The whole catalog against the built-in host, recorded to `catalog.jsonl` in `dir`: the
/// run's report and the capture's path (for the tests that read what a run sent and got).
pub async fn recorded_catalog_run(dir: &TempDir) -> (ahpspec::verdict::RunReport, PathBuf) {
    let capture = dir.path().join("catalog.jsonl");
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let options = ahpspec::certify::Options {
        record: Some(capture.clone()),
        ..ahpspec::certify::Options::default()
    };
    let report = ahpspec::certify::certify(&options, &mut ahpspec::rows::Quiet, interrupt)
        .await
        .expect("the run starts");
    (report, capture)
}

/// The rules (IDs without their slug) of a report's rows that did not pass: failed (fail,
/// warn, info), blocked (a row blocked by `own`, that rule failing on its way, is left
/// out) or a harness error — not applicable and not testable rows are no finding — with a
/// listing of those rows.
pub fn rules_not_passing(
    report: &ahpspec::verdict::RunReport,
    own: Option<&str>,
) -> (std::collections::BTreeSet<String>, String) {
    use ahpspec::verdict::Verdict;
    let mut rules = std::collections::BTreeSet::new();
    let mut detail = String::new();
    for case in &report.cases {
        let quiet = matches!(
            case.verdict,
            Verdict::Pass | Verdict::NotApplicable | Verdict::NotTestable
        );
        let own_block =
            case.verdict == Verdict::Blocked && own.is_some() && case.blocked_by.as_deref() == own;
        if quiet || own_block {
            continue;
        }
        rules.insert(
            case.info
                .id
                .split('/')
                .next()
                .unwrap_or_default()
                .to_owned(),
        );
        detail.push_str(&format!(
            "  {} {}: {}\n",
            case.info.id,
            case.verdict.as_str(),
            case.summary
        ));
    }
    (rules, detail)
}
