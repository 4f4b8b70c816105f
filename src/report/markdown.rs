//! `summary.md`: a short Markdown summary for a CI job page (`$GITHUB_STEP_SUMMARY`):
//! verdict counts, a per-area table, the failing and warning cases, and the cases that
//! could not be tested.

use std::fmt::Write as _;

use super::{by_area, outcome, seconds, tally_count, truncate_chars, verdict_label, VERDICTS};
use crate::verdict::{CaseResult, RunReport, Verdict};

/// Longest one-line "actual" shown per case, in characters.
const ACTUAL_LIMIT: usize = 200;

/// The report as a Markdown summary.
pub fn render(report: &RunReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## AHP conformance: {}\n", outcome(report));
    let mut about = format!(
        "Target {} · protocol {} · started {} · {}",
        md(&report.target),
        md(&report.protocol_version),
        md(&report.started_at),
        seconds(report.duration_ms)
    );
    if let Some(fault) = &report.fault {
        let _ = write!(about, " · injected fault {}", md(fault));
    }
    if report.strict {
        about.push_str(" · strict");
    }
    if report.interrupted {
        about.push_str(" · **interrupted**");
    }
    let _ = writeln!(out, "{about}\n");

    out.push_str("| Verdict | Cases |\n|---|---:|\n");
    for verdict in VERDICTS {
        let _ = writeln!(
            out,
            "| {} | {} |",
            verdict_label(verdict),
            tally_count(report, verdict)
        );
    }
    let _ = writeln!(out, "| **total** | **{}** |", report.tally.total());
    if report.tally.baselined > 0 {
        let _ = writeln!(
            out,
            "\n{} failures or warnings are accepted by the baseline.",
            report.tally.baselined
        );
    }

    area_table(&mut out, report);
    version_table(&mut out, report);

    problem_lists(&mut out, report);

    if !report.unexpected_failures.is_empty() {
        let _ = writeln!(
            out,
            "\nNot in the baseline: {}",
            id_list(&report.unexpected_failures)
        );
    }
    if !report.stale_baseline.is_empty() {
        let _ = writeln!(
            out,
            "\nStale baseline entries (now passing; remove them): {}",
            id_list(&report.stale_baseline)
        );
    }
    out
}

/// Areas × verdicts.
fn area_table(out: &mut String, report: &RunReport) {
    out.push_str("\n### By area\n\n| Area |");
    for verdict in VERDICTS {
        let _ = write!(out, " {} |", verdict_label(verdict));
    }
    out.push_str(" total |\n|---|");
    out.push_str(&"---:|".repeat(VERDICTS.len() + 1));
    out.push('\n');
    for (area, cases) in by_area(report) {
        let _ = write!(out, "| {} |", md(area));
        for verdict in VERDICTS {
            let _ = write!(
                out,
                " {} |",
                cases.iter().filter(|c| c.verdict == verdict).count()
            );
        }
        let _ = writeln!(out, " {} |", cases.len());
    }
}

/// The cases that are not passing in every version, in a run of several versions.
fn version_table(out: &mut String, report: &RunReport) {
    if let Some((versions, rows)) = super::by_version(report) {
        out.push_str("\n### By protocol version\n\n| Case |");
        for version in &versions {
            let _ = write!(out, " {} |", md(version));
        }
        out.push_str("\n|---|");
        out.push_str(&"---|".repeat(versions.len()));
        out.push('\n');
        let label = |v: &Option<Verdict>| v.map_or("—", verdict_label);
        let all_pass = rows
            .iter()
            .filter(|(_, vs)| vs.iter().all(|v| *v == Some(Verdict::Pass)))
            .count();
        for (id, verdicts) in rows
            .iter()
            .filter(|(_, vs)| vs.iter().any(|v| *v != Some(Verdict::Pass)))
        {
            let cells: Vec<&str> = verdicts.iter().map(label).collect();
            let _ = writeln!(out, "| {} | {} |", md(id), cells.join(" | "));
        }
        let _ = writeln!(
            out,
            "| *{all_pass} more passing in every version* |{}",
            " |".repeat(versions.len())
        );
    }
}

/// Failures and warnings (with what was found), then the cases not testable (with why).
fn problem_lists(out: &mut String, report: &RunReport) {
    let problems: Vec<&CaseResult> = report
        .cases
        .iter()
        .filter(|c| {
            matches!(
                c.verdict,
                Verdict::Fail | Verdict::Warn | Verdict::Blocked | Verdict::HarnessError
            )
        })
        .collect();
    if !problems.is_empty() {
        out.push_str("\n### Failures and warnings\n\n");
        for case in problems {
            let actual = match &case.blocked_by {
                Some(_) => case.summary.as_str(),
                None => case
                    .findings
                    .first()
                    .map_or(case.summary.as_str(), |f| f.actual.as_str()),
            };
            let _ = writeln!(
                out,
                "- **{}** ({}, {}) — {}  \n  Actual: {}",
                md(&case.key()),
                case.info.level.as_str(),
                verdict_label(case.verdict),
                md(&case.info.requirement),
                md(&truncate_chars(actual, ACTUAL_LIMIT))
            );
        }
    }

    let untestable: Vec<&CaseResult> = report
        .cases
        .iter()
        .filter(|c| c.verdict == Verdict::NotTestable)
        .collect();
    if !untestable.is_empty() {
        out.push_str("\n### Not testable\n\n");
        for case in untestable {
            let _ = writeln!(
                out,
                "- **{}** ({}) — {}  \n  {}",
                md(&case.key()),
                case.info.level.as_str(),
                md(&case.info.requirement),
                md(&truncate_chars(&case.summary, ACTUAL_LIMIT))
            );
        }
    }
}

fn id_list(ids: &[String]) -> String {
    ids.iter().map(|id| md(id)).collect::<Vec<_>>().join(", ")
}

/// Untrusted text as one line of inline Markdown: HTML is neutralised (GitHub renders
/// raw HTML in summaries), Markdown punctuation is backslash-escaped and newlines become
/// spaces, so table cells and list items stay intact.
pub(crate) fn md(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '_' | '[' | ']' | '|' | '~' | '#' | '!' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' | '\t' => out.push(' '),
            c if c.is_control() => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::{golden, sample_report};

    #[test]
    fn markdown_summary_snapshot() {
        let report = sample_report();
        let text = render(&report);
        golden("summary.md", &text);
        assert!(text.starts_with("## AHP conformance: not conforming\n"));
        assert!(text.contains("| fail | 1 |"));
        assert!(text.contains("| **total** | **8** |"));
        assert!(text.contains("| subscriptions | 0 | 1 | 1 | 0 | 1 | 0 | 0 | 1 | 4 |"));
        assert!(text.contains("- **SUB-004** (MUST, fail) — After unsubscribing"));
        assert!(text.contains("Actual: action seq 7 on ahp-root:// after 120 ms"));
        assert!(text.contains("- **SUB-009** (SHOULD, warn)"));
        assert!(text.contains("- **SUB-020/reconnect** (MUST, harness error)"));
        let not_testable = text.split("### Not testable").nth(1).expect("section");
        assert!(not_testable.contains("**LIFE-010**"));
        assert!(
            !text.contains("**LIFE-001**"),
            "passing cases are not listed"
        );
        assert!(text.contains("ws://127.0.0.1:4100/ahp?x=1&amp;y=&lt;2&gt;"));
    }

    #[test]
    fn markdown_escapes_cells_and_markup() {
        assert_eq!(md("a|b\n<i>`x`"), "a\\|b &lt;i&gt;\\`x\\`");
    }
}
