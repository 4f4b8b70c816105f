//! Reporters: render a finished [`RunReport`] as files (`report.json`, `junit.xml`,
//! `report.html`, `summary.md`, `badge.json`) and as terminal text. Every format opens with
//! the run's [`scope::Scope`]: the rules checked and passed, and those it could not check.
//!
//! Reporters only read the result model; they never decide a verdict and know nothing
//! about how the run was produced. Everything a server sent is untrusted text: each
//! format escapes it for its own syntax (XML, HTML, Markdown, terminal control bytes).

pub mod badge;
pub mod html;
pub mod json;
pub mod junit;
pub mod markdown;
pub mod scope;
pub mod spec_link;

#[cfg(test)]
pub(crate) mod sample;

use std::fmt::Write as _;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::verdict::{CaseResult, ReportedFrame, RunReport, Verdict};

/// Longest frame text shown in a terminal failure block, in characters.
pub const FRAME_TEXT_LIMIT: usize = 300;

/// File names written by [`write_all`].
pub const JSON_FILE: &str = "report.json";
pub const JUNIT_FILE: &str = "junit.xml";
pub const HTML_FILE: &str = "report.html";
pub const MARKDOWN_FILE: &str = "summary.md";
pub const BADGE_FILE: &str = "badge.json";

/// Where [`write_all`] put each report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrittenReports {
    pub json: PathBuf,
    pub junit: PathBuf,
    pub html: PathBuf,
    pub markdown: PathBuf,
    pub badge: PathBuf,
}

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error("cannot create report directory {}", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write report file {}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot serialise the run report as JSON")]
    Json(#[from] serde_json::Error),
}

/// Writes every report format into `dir` (created if missing), secrets redacted. Each file
/// is written to a temporary file in `dir` and renamed into place, so a reader never sees
/// half a report.
pub fn write_all(report: &RunReport, dir: &Path) -> Result<WrittenReports, ReportError> {
    fs::create_dir_all(dir).map_err(|source| ReportError::CreateDir {
        path: dir.to_path_buf(),
        source,
    })?;
    // No secret reaches a report file (crate::redact): the URL, re-run commands,
    // transcripts, findings.
    let mut redacted = report.clone();
    crate::redact::report(&mut redacted);
    let report = &redacted;
    // Render everything first: a serialisation error then leaves the directory untouched.
    let json = json::render(report)?;
    let junit = junit::render(report);
    let html = html::render(report);
    let markdown = markdown::render(report);
    let badge = badge::render(report, &scope::Scope::of(report));
    Ok(WrittenReports {
        json: write_atomic(dir, JSON_FILE, json.as_bytes())?,
        junit: write_atomic(dir, JUNIT_FILE, junit.as_bytes())?,
        html: write_atomic(dir, HTML_FILE, html.as_bytes())?,
        markdown: write_atomic(dir, MARKDOWN_FILE, markdown.as_bytes())?,
        badge: write_atomic(dir, BADGE_FILE, badge.as_bytes())?,
    })
}

/// Writes `bytes` to `dir/name` via a temporary sibling file and a rename. The temporary
/// file is removed if anything fails.
fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, ReportError> {
    let target = dir.join(name);
    // Unique per process and per call, so concurrent writers never share a temp file.
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let seq = NEXT.fetch_add(1, Ordering::Relaxed);
    let tmp = dir.join(format!(".{name}.tmp-{}-{seq}", std::process::id()));
    let result = (|| {
        let mut file = fs::File::create(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        fs::rename(&tmp, &target)
    })();
    match result {
        Ok(()) => Ok(target),
        Err(source) => {
            let _ = fs::remove_file(&tmp);
            Err(ReportError::Write {
                path: target,
                source,
            })
        }
    }
}

/// The one-line tally, e.g. `142 cases: 130 pass, 2 fail, 3 warn, 5 info, 1 not
/// applicable, 1 not testable, 0 blocked, 0 harness errors in 1.84 s`.
pub fn render_summary_line(report: &RunReport) -> String {
    let t = &report.tally;
    let mut line = format!(
        "{} {}: {} pass, {} fail, {} warn, {} info, {} not applicable, {} not testable, {} blocked, {} harness {}",
        t.total(),
        plural(t.total(), "case", "cases"),
        t.pass,
        t.fail,
        t.warn,
        t.info,
        t.not_applicable,
        t.not_testable,
        t.blocked,
        t.harness_error,
        plural(t.harness_error, "error", "errors"),
    );
    if t.baselined > 0 {
        let _ = write!(line, " ({} baselined)", t.baselined);
    }
    let _ = write!(line, " in {}", seconds(report.duration_ms));
    if report.interrupted {
        line.push_str(" (interrupted)");
    }
    line
}

/// The run's scope for the terminal: `Scope: MUST: 183 of 199 rules passed (…)`, then one
/// line per kind of unchecked rule with its reasons (capability, behaviour or promise,
/// blocking rule) and how many rules each left unchecked.
pub fn render_scope(report: &RunReport) -> String {
    let scope = scope::Scope::of(report);
    let mut out = format!("Scope: {}", terminal_safe(&scope.headline));
    for line in scope.reason_lines() {
        let _ = write!(out, "\n  {}", terminal_safe(&line));
    }
    out
}

/// The terminal block for a case that did not pass, read top to bottom as
/// requirement → spec → expected → actual → step → frames → how to re-run it. Secrets are
/// redacted as in the report files.
pub fn render_failure(case: &CaseResult) -> String {
    let mut redacted = case.clone();
    crate::redact::case_result(&mut redacted);
    let case = &redacted;
    let info = &case.info;
    let mut out = String::new();
    let version = case
        .protocol_version
        .as_ref()
        .map(|v| format!(" @{}", terminal_safe(v)))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "{}{version} ({}) — {}",
        terminal_safe(&info.id),
        info.level.as_str(),
        terminal_safe(&info.requirement)
    );
    let _ = writeln!(out, "  Spec: {}", terminal_safe(&info.spec));
    if let Some(rule) = &case.blocked_by {
        let _ = writeln!(
            out,
            "  Blocked by {}: the case could not run to its end because that rule failed (see its row)",
            terminal_safe(rule)
        );
    }
    if case.findings.is_empty() {
        let _ = writeln!(
            out,
            "  Actual: {} ({})",
            terminal_safe(&case.summary),
            case.verdict.as_str()
        );
    }
    for finding in &case.findings {
        if finding.rule != info.id || finding.verdict != case.verdict {
            let _ = writeln!(
                out,
                "  [{} {}]",
                terminal_safe(&finding.rule),
                finding.verdict.as_str()
            );
        }
        let _ = writeln!(out, "  Expected: {}", terminal_safe(&finding.expected));
        let _ = writeln!(out, "    Actual: {}", terminal_safe(&finding.actual));
        if let Some(step) = &finding.step {
            let _ = writeln!(out, "      Step: {}", terminal_safe(step));
        }
        for frame in &finding.context {
            let _ = writeln!(out, "      {}", frame_line(frame));
        }
    }
    let _ = write!(out, "  Re-run: {}", terminal_safe(&case.rerun));
    out
}

/// One transcript frame on one line: `→ c1 +12.5 ms {…}`.
fn frame_line(frame: &ReportedFrame) -> String {
    format!(
        "{} {} {:>9} {}",
        arrow(&frame.direction),
        terminal_safe(&frame.conn),
        format!("+{:.1} ms", frame.at_ms),
        terminal_safe(&truncate_chars(&frame.text, FRAME_TEXT_LIMIT))
    )
}

/// `→` for a frame the harness sent, `←` for one it received.
pub(crate) fn arrow(direction: &str) -> &'static str {
    match direction {
        "sent" => "→",
        "received" => "←",
        _ => "?",
    }
}

/// The first `limit` characters of `text`, with `…` when something was cut.
pub(crate) fn truncate_chars(text: &str, limit: usize) -> String {
    match text.char_indices().nth(limit) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Text from the server on one terminal line: newlines, tabs and control bytes (which
/// could drive the terminal) are shown as escapes.
pub fn terminal_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

/// A duration in seconds with two decimals: `1.84 s`.
pub(crate) fn seconds(ms: f64) -> String {
    format!("{:.2} s", ms / 1000.0)
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 {
        one
    } else {
        many
    }
}

/// Every verdict, in the order reports list them.
pub(crate) const VERDICTS: [Verdict; 8] = [
    Verdict::Pass,
    Verdict::Fail,
    Verdict::Warn,
    Verdict::Info,
    Verdict::NotApplicable,
    Verdict::NotTestable,
    Verdict::Blocked,
    Verdict::HarnessError,
];

/// The verdicts of a run of several protocol versions side by side: the versions in run
/// order, and each case ID with its verdict per version (`None` where that version's run has
/// no such row). `None` for a run of one version.
pub(crate) type VersionMatrix = (Vec<String>, Vec<(String, Vec<Option<Verdict>>)>);

pub(crate) fn by_version(report: &RunReport) -> Option<VersionMatrix> {
    let mut versions: Vec<String> = Vec::new();
    for version in report
        .cases
        .iter()
        .filter_map(|c| c.protocol_version.as_ref())
    {
        if !versions.contains(version) {
            versions.push(version.clone());
        }
    }
    if versions.len() < 2 {
        return None;
    }
    let mut rows: Vec<(String, Vec<Option<Verdict>>)> = Vec::new();
    for case in &report.cases {
        let Some(column) = case
            .protocol_version
            .as_ref()
            .and_then(|v| versions.iter().position(|x| x == v))
        else {
            continue;
        };
        let at = match rows.iter().position(|(id, _)| *id == case.info.id) {
            Some(at) => at,
            None => {
                rows.push((case.info.id.clone(), vec![None; versions.len()]));
                rows.len() - 1
            }
        };
        rows[at].1[column] = Some(case.verdict);
    }
    Some((versions, rows))
}

/// Spec areas in order of first appearance, each with its cases.
pub(crate) fn by_area(report: &RunReport) -> Vec<(&str, Vec<&CaseResult>)> {
    let mut areas: Vec<(&str, Vec<&CaseResult>)> = Vec::new();
    for case in &report.cases {
        match areas.iter_mut().find(|(a, _)| *a == case.info.area) {
            Some((_, cases)) => cases.push(case),
            None => areas.push((&case.info.area, vec![case])),
        }
    }
    areas
}

/// Count of one verdict in the tally.
pub(crate) fn tally_count(report: &RunReport, verdict: Verdict) -> usize {
    let t = &report.tally;
    match verdict {
        Verdict::Pass => t.pass,
        Verdict::Fail => t.fail,
        Verdict::Warn => t.warn,
        Verdict::Info => t.info,
        Verdict::NotApplicable => t.not_applicable,
        Verdict::NotTestable => t.not_testable,
        Verdict::Blocked => t.blocked,
        Verdict::HarnessError => t.harness_error,
    }
}

/// The run's one-phrase outcome. An interrupted run without failures is not called
/// conforming: the cases that did not run prove nothing.
pub(crate) fn outcome(report: &RunReport) -> &'static str {
    match (report.conforming(), report.interrupted) {
        (false, _) => "not conforming",
        (true, false) => "conforming",
        (true, true) => "incomplete (interrupted)",
    }
}

/// Human label of a verdict (`not applicable`).
pub(crate) fn verdict_label(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Pass => "pass",
        Verdict::Fail => "fail",
        Verdict::Warn => "warn",
        Verdict::Info => "info",
        Verdict::NotApplicable => "not applicable",
        Verdict::NotTestable => "not testable",
        Verdict::Blocked => "blocked",
        Verdict::HarnessError => "harness error",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::{golden, sample_report};

    #[test]
    fn summary_line_counts_every_verdict() {
        let report = sample_report();
        assert_eq!(
            render_summary_line(&report),
            "8 cases: 1 pass, 1 fail, 1 warn, 1 info, 1 not applicable, 1 not testable, \
             1 blocked, 1 harness error in 1.84 s"
        );
    }

    #[test]
    fn failure_block_reads_requirement_expected_actual_frames_rerun() {
        let report = sample_report();
        let mut text = String::new();
        for case in report.cases.iter().filter(|c| c.verdict != Verdict::Pass) {
            text.push_str(&render_failure(case));
            text.push_str("\n\n");
        }
        golden("failures.txt", &text);

        let fail = &report.cases[1];
        let block = render_failure(fail);
        let lines: Vec<&str> = block.lines().collect();
        assert!(lines[0].starts_with("SUB-004 (MUST) — After unsubscribing"));
        assert!(lines[1].starts_with("  Spec: "));
        assert!(block.contains("Expected: no `action` on ahp-root:// for 500 ms"));
        assert!(block.contains("Step: suites/subscriptions.toml:42"));
        assert!(block.contains("→ c1"));
        assert!(block.contains("← c2"));
        assert!(lines
            .last()
            .is_some_and(|l| l.starts_with("  Re-run: ahpspec run")));
        // The 2,000-character frame is cut, and its control bytes are neutralised.
        assert!(block.contains('…'));
        assert!(!block.contains('\u{1b}'));
        assert!(block
            .lines()
            .all(|l| l.chars().count() < FRAME_TEXT_LIMIT + 40));
    }

    #[test]
    fn empty_and_interrupted_run_renders() {
        let mut report = sample_report();
        report.cases.clear();
        report.tally = Default::default();
        report.interrupted = true;
        report.unexpected_failures.clear();
        assert_eq!(
            render_summary_line(&report),
            "0 cases: 0 pass, 0 fail, 0 warn, 0 info, 0 not applicable, 0 not testable, \
             0 blocked, 0 harness errors in 1.84 s (interrupted)"
        );
        let md = markdown::render(&report);
        assert!(md.contains("## AHP conformance: incomplete (interrupted)"));
        assert!(md.contains("**interrupted**"));
        assert!(!md.contains("### Failures"));
        let html = html::render(&report);
        assert!(html.contains("The run was interrupted"));
        assert!(html.contains("<span class=\"outcome bad\">incomplete (interrupted)</span>"));
    }

    #[test]
    fn terminal_scope_names_levels_and_reasons() {
        let text = render_scope(&sample_report());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("Scope: MUST: 1 of 6 rules passed (2 checked, 1 failed;"));
        assert!(lines[0].contains("SHOULD: 0 of 1 rule passed (1 checked, 1 warned)"));
        assert!(lines.contains(&"  blocked by: LIFECYCLE-003 (1)"));
        assert!(lines
            .iter()
            .any(|l| l.starts_with("  not testable: the idle timeout is not configurable")));
    }

    #[test]
    fn truncation_respects_char_boundaries() {
        assert_eq!(truncate_chars("héllo", 2), "hé…");
        assert_eq!(truncate_chars("hé", 2), "hé");
        assert_eq!(truncate_chars("", 0), "");
    }

    #[test]
    fn write_all_is_atomic_and_complete() {
        let dir = std::env::temp_dir().join(format!(
            "ahpspec-report-test-{}-{}",
            std::process::id(),
            line!()
        ));
        let _ = fs::remove_dir_all(&dir);
        let nested = dir.join("run").join("1");
        let report = sample_report();
        let written = write_all(&report, &nested).expect("reports written");
        for path in [
            &written.json,
            &written.junit,
            &written.html,
            &written.markdown,
            &written.badge,
        ] {
            let meta = fs::metadata(path).expect("report file exists");
            assert!(meta.len() > 0, "{} is empty", path.display());
            assert_eq!(path.parent(), Some(nested.as_path()));
        }
        let mut names: Vec<String> = fs::read_dir(&nested)
            .expect("dir readable")
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "badge.json",
                "junit.xml",
                "report.html",
                "report.json",
                "summary.md"
            ],
            "no temporary files are left behind"
        );
        // Writing again replaces the files in place.
        write_all(&report, &nested).expect("rewrite");
        let back: RunReport =
            serde_json::from_str(&fs::read_to_string(&written.json).expect("read back"))
                .expect("report.json parses back");
        assert_eq!(back, report);
        let _ = fs::remove_dir_all(&dir);
    }

    #[test]
    fn write_failure_names_the_file_and_leaves_no_temp() {
        let dir = std::env::temp_dir().join(format!(
            "ahpspec-report-test-{}-{}",
            std::process::id(),
            line!()
        ));
        let _ = fs::remove_dir_all(&dir);
        // A directory where report.json should go makes the rename fail.
        fs::create_dir_all(dir.join(JSON_FILE).join("occupied")).expect("setup");
        let err = write_all(&sample_report(), &dir).expect_err("rename onto a directory fails");
        assert!(matches!(&err, ReportError::Write { path, .. } if path.ends_with(JSON_FILE)));
        assert!(err.to_string().contains("report.json"));
        let leftovers: Vec<_> = fs::read_dir(&dir)
            .expect("dir readable")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp-"))
            .collect();
        assert!(leftovers.is_empty());
        let _ = fs::remove_dir_all(&dir);
    }
}
