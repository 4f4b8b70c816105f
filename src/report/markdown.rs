//! `summary.md`: a short Markdown summary for a CI job page (`$GITHUB_STEP_SUMMARY`): the
//! run's scope (rules checked and passed by level, and why the others were not checked),
//! verdict counts, a per-area table, the failing and warning cases (with links to the
//! specification), and the cases that could not be tested.

use std::fmt::Write as _;

use super::scope::Scope;
use super::spec_link;
use super::{by_area, outcome, seconds, tally_count, truncate_chars, verdict_label, VERDICTS};
use crate::verdict::{CaseResult, RunReport, Verdict};

/// Most rule IDs listed under one reason before the rest is counted.
const RULES_LISTED: usize = 12;

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

    scope_section(&mut out, report);

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

/// The scope: one line, a table of rules by level, and the reasons rules were not checked.
fn scope_section(out: &mut String, report: &RunReport) {
    let scope = Scope::of(report);
    let _ = writeln!(out, "**Scope:** {}\n", md(&scope.headline));
    if scope.levels.is_empty() {
        return;
    }
    let columns = scope.levels[0].columns();
    out.push_str("| Rules | total |");
    for (label, _) in columns {
        let _ = write!(out, " {label} |");
    }
    out.push_str("\n|---|---:|");
    out.push_str(&"---:|".repeat(columns.len()));
    out.push('\n');
    for l in &scope.levels {
        let _ = write!(out, "| {} | {} |", l.level, l.rules);
        for (_, n) in l.columns() {
            let _ = write!(out, " {n} |");
        }
        out.push('\n');
    }
    let mut reasons = String::new();
    for (label, groups) in scope.reason_groups() {
        for group in groups {
            let _ = writeln!(
                reasons,
                "- {}: {}",
                md(&Scope::title(label, &group.because)),
                rule_list(&group.rules)
            );
        }
    }
    if !reasons.is_empty() {
        let _ = write!(out, "\n{reasons}");
    }
    out.push('\n');
}

/// Up to [`RULES_LISTED`] rule IDs, then how many more.
fn rule_list(rules: &[String]) -> String {
    let mut shown: Vec<String> = rules.iter().take(RULES_LISTED).map(|r| md(r)).collect();
    if rules.len() > RULES_LISTED {
        shown.push(format!("and {} more", rules.len() - RULES_LISTED));
    }
    shown.join(", ")
}

/// A case's spec reference, its upstream pages and sections as links.
fn spec(case: &CaseResult, report: &RunReport) -> String {
    let version = case
        .protocol_version
        .as_deref()
        .unwrap_or(&report.protocol_version);
    spec_link::pieces(&case.info.spec, version)
        .into_iter()
        .map(|piece| match piece.url {
            Some(url) => format!("[{}]({url})", md(piece.text)),
            None => md(piece.text),
        })
        .collect()
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
                "- **{}** ({}, {}) — {}  \n  Actual: {}  \n  Spec: {}",
                md(&case.key()),
                case.info.level.as_str(),
                verdict_label(case.verdict),
                md(&case.info.requirement),
                md(&truncate_chars(actual, ACTUAL_LIMIT)),
                spec(case, report)
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
        // The scope comes before the verdict counts.
        let scope = text
            .find("**Scope:** MUST: 1 of 6 rules passed")
            .expect("scope line");
        assert!(scope < text.find("| Verdict | Cases |").expect("tally"));
        assert!(text.contains("| MUST | 6 | 2 | 1 | 1 | 1 | 1 | 1 | 1 |"));
        assert!(text.contains("- blocked by LIFECYCLE-003: PENDING-002"));
        assert!(text.contains("- not applicable (the server does not advertise tools): SUB-012"));
        // Spec references link to the upstream page and section at the run's version.
        assert!(text.contains(
            "Spec: [docs/specification/subscriptions.md § Unsubscribe](https://github.com/microsoft/agent-host-protocol/blob/5f16d81bb7045b66d7bc768d244feab75002d943/docs/specification/subscriptions.md#unsubscribe)"
        ));
    }

    #[test]
    fn markdown_escapes_cells_and_markup() {
        assert_eq!(md("a|b\n<i>`x`"), "a\\|b &lt;i&gt;\\`x\\`");
    }
}
