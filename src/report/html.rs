//! `report.html`: one self-contained page (inline CSS, no scripts, no external resources;
//! the only links out are spec references to the upstream specification): run header, the
//! run's scope (rules checked and passed, and why the others were not), the tally, an area ×
//! verdict matrix, then every case with its findings and a collapsible transcript.

use std::fmt::Write as _;

use super::scope::Scope;
use super::spec_link;
use super::{
    arrow, by_area, outcome, render_summary_line, seconds, tally_count, verdict_label, VERDICTS,
};
use crate::verdict::{CaseResult, Finding, ReportedFrame, RunReport, Verdict};

/// Longest frame text shown in a transcript, in characters; `report.json` keeps it whole.
pub const HTML_FRAME_LIMIT: usize = 4000;

/// Longest frame text shown in a finding's context frames, in characters.
pub const HTML_CONTEXT_LIMIT: usize = 600;

const STYLE: &str = r#"
:root{--fg:#1d232a;--muted:#5f6b76;--line:#d9dee3;--bg:#f6f7f9;--card:#fff;
--pass:#1f7a3a;--fail:#c62828;--warn:#b26a00;--info:#1565c0;--na:#6b7480;--nt:#7b3fa0;--bl:#8d3b14;--he:#4a1010}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
main{max-width:1200px;margin:0 auto;padding:24px}
h1{font-size:22px;margin:0 0 4px}h2{font-size:18px;margin:28px 0 10px}h3{font-size:16px;margin:22px 0 8px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}
code,pre{font:12.5px/1.4 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.top{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:18px 20px}
.outcome{display:inline-block;font-weight:600;padding:2px 10px;border-radius:12px;color:#fff;margin-left:8px;font-size:13px;vertical-align:middle}
.outcome.ok{background:var(--pass)}.outcome.bad{background:var(--fail)}
.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:12px 0}
.meta dt{color:var(--muted)}.meta dd{margin:0;word-break:break-all}
.tally{display:flex;flex-wrap:wrap;gap:8px;margin-top:10px}
.chip{border:1px solid var(--line);border-radius:6px;padding:4px 10px;background:var(--bg)}
.chip b{font-size:16px;margin-right:4px}
.note{margin:8px 0 0;color:var(--fail)}
.scope{margin:12px 0 4px}.scope p{margin:4px 0}.scope .matrix{width:auto;margin:6px 0}
.scope ul{margin:4px 0;padding-left:20px}
table{border-collapse:collapse;background:var(--card)}
.matrix{width:100%;border:1px solid var(--line)}
.matrix th,.matrix td{border-bottom:1px solid var(--line);padding:6px 10px;text-align:right}
.matrix th:first-child,.matrix td:first-child{text-align:left}
.matrix thead th{background:var(--bg);font-weight:600}
.matrix tfoot td{font-weight:600;background:var(--bg)}
.matrix td.zero{color:#b8bfc6}
.badge{display:inline-block;min-width:92px;text-align:center;font-size:12px;font-weight:600;color:#fff;border-radius:4px;padding:1px 6px;text-transform:uppercase}
.v-pass{--v:var(--pass)}.v-fail{--v:var(--fail)}.v-warn{--v:var(--warn)}.v-info{--v:var(--info)}
.v-not-applicable{--v:var(--na)}.v-not-testable{--v:var(--nt)}.v-blocked{--v:var(--bl)}.v-harness-error{--v:var(--he)}
.badge{background:var(--v)}
.matrix th .badge{min-width:0}
.case{background:var(--card);border:1px solid var(--line);border-left:5px solid var(--v);border-radius:6px;padding:10px 14px;margin:8px 0}
.case-head{display:flex;gap:10px;align-items:baseline;flex-wrap:wrap}
.case-head .id{font-weight:700;font-size:14px}
.level{font-size:11px;font-weight:700;color:var(--muted);border:1px solid var(--line);border-radius:3px;padding:0 4px}
.req{flex:1 1 400px}
.case dl{display:grid;grid-template-columns:max-content 1fr;gap:1px 12px;margin:8px 0 4px}
.case dt{color:var(--muted)}.case dd{margin:0;word-break:break-word}
.finding{border:1px solid var(--line);border-radius:4px;background:#fbfbfc;padding:6px 10px;margin:8px 0}
.finding .rule{font-weight:600}
.frames{width:100%;margin-top:6px;table-layout:fixed}
.frames td{border-top:1px solid var(--line);padding:3px 6px;vertical-align:top}
.frames td.dir{width:26px;text-align:center;font-weight:700}
.frames td.conn{width:44px;color:var(--muted)}
.frames td.at{width:86px;text-align:right;color:var(--muted);white-space:nowrap}
.frames pre{margin:0;white-space:pre-wrap;word-break:break-all}
.frames tr.sent td.dir{color:var(--info)}.frames tr.received td.dir{color:var(--pass)}
details{margin-top:6px}summary{cursor:pointer;color:var(--muted)}
.rerun{margin:6px 0 0;color:var(--muted)}
.filter{font-weight:normal;font-size:13px;margin-left:12px;color:var(--muted)}
body:has(#hide-pass:checked) .case.v-pass{display:none}
footer{color:var(--muted);margin:28px 0 8px;font-size:12px}
"#;

/// The report as a single HTML page.
pub fn render(report: &RunReport) -> String {
    let mut out = String::with_capacity(16 * 1024);
    let conforming = report.conforming() && !report.interrupted;
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>ahpspec — {}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(&report.target)
    );

    header(&mut out, report, conforming);

    let areas = by_area(report);
    area_matrix(&mut out, report, &areas);
    version_matrix(&mut out, report);

    // Cases.
    out.push_str(
        "<h2>Cases<label class=\"filter\"><input type=\"checkbox\" id=\"hide-pass\"> \
         hide passing cases</label></h2>\n",
    );
    for (area, cases) in &areas {
        let _ = writeln!(
            out,
            "<h3 id=\"{}\">{}</h3>",
            esc(&area_anchor(area)),
            esc(area)
        );
        for case in cases {
            case_card(&mut out, case, &report.protocol_version);
        }
    }
    let _ = writeln!(
        out,
        "<footer>Generated by {} {} · report format {} · the full transcripts are in report.json</footer>",
        esc(&report.tool),
        esc(&report.tool_version),
        report.format
    );
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// The top of the page: outcome, run facts, tally, baseline lists.
fn header(out: &mut String, report: &RunReport, conforming: bool) {
    out.push_str("<section class=\"top\">\n");
    let _ = writeln!(
        out,
        "<h1>AHP conformance report<span class=\"outcome {}\">{}</span></h1>",
        if conforming { "ok" } else { "bad" },
        outcome(report)
    );
    out.push_str("<dl class=\"meta\">\n");
    meta(
        out,
        "Target",
        &format!("<code>{}</code>", esc(&report.target)),
    );
    meta(out, "Protocol version", &esc(&report.protocol_version));
    meta(out, "Started", &esc(&report.started_at));
    meta(out, "Duration", &esc(&seconds(report.duration_ms)));
    meta(
        out,
        "Tool",
        &format!("{} {}", esc(&report.tool), esc(&report.tool_version)),
    );
    if let Some(fault) = &report.fault {
        meta(
            out,
            "Injected fault",
            &format!("<code>{}</code>", esc(fault)),
        );
    }
    meta(
        out,
        "Mode",
        if report.strict {
            "strict (warnings fail the run)"
        } else {
            "default (warnings do not fail the run)"
        },
    );
    out.push_str("</dl>\n<div class=\"tally\">\n");
    for verdict in VERDICTS {
        let _ = writeln!(
            out,
            "<span class=\"chip v-{v}\"><b>{n}</b><span class=\"badge\">{label}</span></span>",
            v = verdict.as_str(),
            n = tally_count(report, verdict),
            label = verdict_label(verdict),
        );
    }
    if report.tally.baselined > 0 {
        let _ = writeln!(
            out,
            "<span class=\"chip\"><b>{}</b>baselined</span>",
            report.tally.baselined
        );
    }
    out.push_str("</div>\n");
    scope_block(out, report);
    let _ = writeln!(out, "<p>{}</p>", esc(&render_summary_line(report)));
    if report.interrupted {
        out.push_str("<p class=\"note\">The run was interrupted; cases not run are absent.</p>\n");
    }
    id_list(
        out,
        "Failures not in the baseline",
        &report.unexpected_failures,
    );
    id_list(
        out,
        "Stale baseline entries (these cases now pass; remove them)",
        &report.stale_baseline,
    );
    out.push_str("</section>\n");
}

/// The scope: the headline, rules by level, and the reasons rules were not checked (each
/// with its rules).
fn scope_block(out: &mut String, report: &RunReport) {
    let scope = Scope::of(report);
    let _ = writeln!(
        out,
        "<div class=\"scope\">\n<p><b>Scope:</b> {}</p>",
        esc(&scope.headline)
    );
    if !scope.levels.is_empty() {
        out.push_str("<table class=\"matrix\"><thead><tr><th>Rules</th><th>total</th>");
        for (label, _) in scope.levels[0].columns() {
            let _ = write!(out, "<th>{label}</th>");
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for l in &scope.levels {
            let _ = write!(out, "<tr><td>{}</td><td>{}</td>", l.level, l.rules);
            for (_, n) in l.columns() {
                count_cell(out, n);
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody></table>\n");
    }
    let mut items = String::new();
    for (label, groups) in scope.reason_groups() {
        for group in groups {
            let rules: Vec<String> = group
                .rules
                .iter()
                .map(|r| format!("<code>{}</code>", esc(r)))
                .collect();
            let _ = writeln!(
                items,
                "<li>{}: {}</li>",
                esc(&Scope::title(label, &group.because)),
                rules.join(", ")
            );
        }
    }
    if !items.is_empty() {
        let _ = write!(out, "<ul>\n{items}</ul>\n");
    }
    out.push_str("</div>\n");
}

/// A spec reference with its upstream pages and sections as links (HTML).
fn spec_html(spec: &str, version: &str) -> String {
    spec_link::pieces(spec, version)
        .into_iter()
        .map(|piece| match piece.url {
            Some(url) => format!("<a href=\"{}\">{}</a>", esc(&url), esc(piece.text)),
            None => esc(piece.text),
        })
        .collect()
}

/// Areas × verdicts, with totals.
fn area_matrix(out: &mut String, report: &RunReport, areas: &[(&str, Vec<&CaseResult>)]) {
    out.push_str("<h2>By spec area</h2>\n<table class=\"matrix\">\n<thead><tr><th>Area</th>");
    for verdict in VERDICTS {
        let _ = write!(
            out,
            "<th><span class=\"badge v-{}\">{}</span></th>",
            verdict.as_str(),
            verdict_label(verdict)
        );
    }
    out.push_str("<th>Total</th></tr></thead>\n<tbody>\n");
    for (area, cases) in areas {
        let _ = write!(
            out,
            "<tr><td><a href=\"#{}\">{}</a></td>",
            esc(&area_anchor(area)),
            esc(area)
        );
        for verdict in VERDICTS {
            count_cell(out, cases.iter().filter(|c| c.verdict == verdict).count());
        }
        let _ = writeln!(out, "<td>{}</td></tr>", cases.len());
    }
    out.push_str("</tbody>\n<tfoot><tr><td>All areas</td>");
    for verdict in VERDICTS {
        count_cell(out, tally_count(report, verdict));
    }
    let _ = writeln!(
        out,
        "<td>{}</td></tr></tfoot>\n</table>",
        report.tally.total()
    );
}

/// Cases × protocol versions, in a run of several versions.
fn version_matrix(out: &mut String, report: &RunReport) {
    if let Some((versions, rows)) = super::by_version(report) {
        out.push_str(
            "<h2>By protocol version</h2>\n<table class=\"matrix\">\n<thead><tr><th>Case</th>",
        );
        for version in &versions {
            let _ = write!(out, "<th>{}</th>", esc(version));
        }
        out.push_str("</tr></thead>\n<tbody>\n");
        for (id, verdicts) in &rows {
            let _ = write!(out, "<tr><td>{}</td>", esc(id));
            for verdict in verdicts {
                match verdict {
                    Some(v) => {
                        let _ = write!(
                            out,
                            "<td><span class=\"badge v-{}\">{}</span></td>",
                            v.as_str(),
                            verdict_label(*v)
                        );
                    }
                    None => out.push_str("<td class=\"zero\">—</td>"),
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</tbody>\n</table>\n");
    }
}

fn meta(out: &mut String, name: &str, html_value: &str) {
    let _ = writeln!(out, "<dt>{name}</dt><dd>{html_value}</dd>");
}

fn id_list(out: &mut String, title: &str, ids: &[String]) {
    if ids.is_empty() {
        return;
    }
    let _ = write!(out, "<p class=\"note\">{title}: ");
    for (i, id) in ids.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        let _ = write!(
            out,
            "<a href=\"#{}\"><code>{}</code></a>",
            esc(&case_anchor(id)),
            esc(id)
        );
    }
    out.push_str("</p>\n");
}

fn count_cell(out: &mut String, n: usize) {
    if n == 0 {
        out.push_str("<td class=\"zero\">0</td>");
    } else {
        let _ = write!(out, "<td>{n}</td>");
    }
}

fn case_card(out: &mut String, case: &CaseResult, run_version: &str) {
    let info = &case.info;
    let v = case.verdict.as_str();
    // In a run of several protocol versions each version's row is `ID@version`, the name
    // the failure lists link to.
    let id = case.key();
    let _ = writeln!(
        out,
        "<article class=\"case v-{v}\" id=\"{}\">",
        esc(&case_anchor(&id))
    );
    let _ = writeln!(
        out,
        "<div class=\"case-head\"><span class=\"badge\">{}</span><code class=\"id\">{}</code>\
         <span class=\"level\">{}</span><span class=\"req\">{}</span></div>",
        verdict_label(case.verdict),
        esc(&id),
        info.level.as_str(),
        esc(&info.requirement)
    );
    out.push_str("<dl>\n");
    let version = case.protocol_version.as_deref().unwrap_or(run_version);
    meta(out, "Spec", &spec_html(&info.spec, version));
    meta(out, "Does", &esc(&info.does));
    meta(out, "Result", &esc(&case.summary));
    if let Some(rule) = &case.blocked_by {
        meta(out, "Blocked by", &esc(rule));
    }
    meta(
        out,
        "Source",
        &format!(
            "<code>{}</code> · {:.1} ms",
            esc(&info.source),
            case.duration_ms
        ),
    );
    out.push_str("</dl>\n");
    for finding in &case.findings {
        finding_block(out, finding, case);
    }
    if !case.transcript.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Transcript ({} {})</summary>",
            case.transcript.len(),
            if case.transcript.len() == 1 {
                "frame"
            } else {
                "frames"
            }
        );
        frames_table(out, &case.transcript, HTML_FRAME_LIMIT);
        out.push_str("</details>\n");
    }
    if case.verdict != Verdict::Pass {
        let _ = writeln!(
            out,
            "<p class=\"rerun\">Re-run: <code>{}</code></p>",
            esc(&case.rerun)
        );
    }
    out.push_str("</article>\n");
}

fn finding_block(out: &mut String, finding: &Finding, case: &CaseResult) {
    let _ = writeln!(
        out,
        "<div class=\"finding v-{}\">",
        finding.verdict.as_str()
    );
    if finding.rule != case.info.id || finding.verdict != case.verdict {
        let _ = writeln!(
            out,
            "<div class=\"rule\"><code>{}</code> <span class=\"badge\">{}</span></div>",
            esc(&finding.rule),
            verdict_label(finding.verdict)
        );
    }
    out.push_str("<dl>\n");
    meta(out, "Expected", &esc(&finding.expected));
    meta(out, "Actual", &esc(&finding.actual));
    if let Some(step) = &finding.step {
        meta(out, "Step", &format!("<code>{}</code>", esc(step)));
    }
    out.push_str("</dl>\n");
    if !finding.context.is_empty() {
        frames_table(out, &finding.context, HTML_CONTEXT_LIMIT);
    }
    out.push_str("</div>\n");
}

fn frames_table(out: &mut String, frames: &[ReportedFrame], limit: usize) {
    out.push_str("<table class=\"frames\">\n");
    for frame in frames {
        let total = frame.text.chars().count();
        let shown = super::truncate_chars(&frame.text, limit);
        let more = if total > limit {
            format!(
                " <em>({} more characters in report.json)</em>",
                total - limit
            )
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "<tr class=\"{dir}\"><td class=\"dir\" title=\"{dir}\">{arrow}</td>\
             <td class=\"conn\">{conn}</td><td class=\"at\">{at:.1} ms</td>\
             <td><pre>{text}</pre>{more}</td></tr>",
            dir = esc(&frame.direction),
            arrow = arrow(&frame.direction),
            conn = esc(&frame.conn),
            at = frame.at_ms,
            text = esc(&shown),
        );
    }
    out.push_str("</table>\n");
}

fn case_anchor(id: &str) -> String {
    format!("case-{}", anchor_safe(id))
}

fn area_anchor(area: &str) -> String {
    format!("area-{}", anchor_safe(area))
}

/// An id attribute value: no whitespace (HTML forbids it), everything else kept.
fn anchor_safe(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_whitespace() { '_' } else { c })
        .collect()
}

/// Escapes text for HTML content and double- or single-quoted attributes. Control
/// characters other than tab and newline are shown as `\u{1b}`-style escapes.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::sample_report;

    /// Every value of `attr="…"` in the document.
    fn attr_values<'a>(html: &'a str, attr: &str) -> Vec<&'a str> {
        let needle = format!("{attr}=\"");
        let mut values = Vec::new();
        let mut rest = html;
        while let Some(i) = rest.find(&needle) {
            let after = &rest[i + needle.len()..];
            let end = after.find('"').unwrap_or(after.len());
            values.push(&after[..end]);
            rest = &after[end..];
        }
        values
    }

    #[test]
    fn html_lists_every_case_and_area() {
        let report = sample_report();
        let html = render(&report);
        for case in &report.cases {
            assert!(
                html.contains(&format!(">{}</code>", case.info.id)),
                "{}",
                case.info.id
            );
            assert!(html.contains(&format!("id=\"case-{}\"", case.info.id)));
        }
        assert!(html.contains("<h3 id=\"area-lifecycle\">lifecycle</h3>"));
        assert!(html.contains("<h3 id=\"area-subscriptions\">subscriptions</h3>"));
        assert!(html.contains("ws://127.0.0.1:4100/ahp?x=1&amp;y=&lt;2&gt;"));
        assert!(html.contains("<dt>Protocol version</dt><dd>1.0.0</dd>"));
        assert!(html.contains("not conforming"));
        assert!(html.contains("Transcript (3 frames)"));
        // The long frame is cut in the finding's context but whole in the transcript.
        assert_eq!(html.matches("more characters in report.json").count(), 1);
        assert!(html.contains("<dt>Expected</dt><dd>no `action` on ahp-root:// for 500 ms</dd>"));
        // The subscriptions row of the matrix: 0 pass, 1 fail, 1 warn, 0 info, 1 n/a, 0 n/t,
        // 0 blocked, 1 error.
        assert!(html.contains(
            "subscriptions</a></td><td class=\"zero\">0</td><td>1</td><td>1</td>\
             <td class=\"zero\">0</td><td>1</td><td class=\"zero\">0</td>\
             <td class=\"zero\">0</td><td>1</td><td>4</td>"
        ));
    }

    #[test]
    fn html_heads_with_the_scope() {
        let html = render(&sample_report());
        let scope = html
            .find("<b>Scope:</b> MUST: 1 of 6 rules passed (2 checked, 1 failed;")
            .expect("scope line");
        assert!(scope < html.find("<h2>By spec area</h2>").expect("matrix"));
        assert!(html.contains("<tr><td>MUST</td><td>6</td><td>2</td><td>1</td><td>1</td>"));
        assert!(html.contains("<li>blocked by LIFECYCLE-003: <code>PENDING-002</code></li>"));
    }

    #[test]
    fn html_escapes_frame_text() {
        let html = render(&sample_report());
        assert!(
            !html.contains("<script"),
            "no script element, and frame markup is escaped"
        );
        assert!(html.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; friends"));
        assert!(!html.contains('\u{1b}'));
        assert!(html.contains("friends\\u{1b}[2J"));
    }

    #[test]
    fn html_is_self_contained() {
        let html = render(&sample_report());
        // Spec references are the only links out, to the upstream specification.
        let upstream = format!("{}/blob/", spec_link::UPSTREAM);
        for attr in ["src", "href", "action", "srcset", "poster", "data"] {
            for value in attr_values(&html, attr) {
                assert!(
                    value.starts_with('#') || (attr == "href" && value.starts_with(&upstream)),
                    "{attr}=\"{value}\" points outside the page"
                );
            }
        }
        assert!(attr_values(&html, "href")
            .iter()
            .any(|v| v.ends_with("/docs/specification/lifecycle.md#initialize")));
        assert!(!html.contains("<link"));
        assert!(!html.contains("@import"));
        assert!(!html.contains("url("));
        let lower = html.to_ascii_lowercase();
        let without_spec_links = lower.replace(&format!("href=\"{upstream}"), "");
        for scheme in [
            "src=\"http",
            "href=\"http",
            "src='http",
            "href='http",
            "src=http",
            "href=http",
        ] {
            assert!(!without_spec_links.contains(scheme), "{scheme}");
        }
    }

    #[test]
    fn html_is_balanced() {
        let html = render(&sample_report());
        for tag in ["article", "details", "table", "dl", "div", "section", "pre"] {
            let open = html.matches(&format!("<{tag}>")).count()
                + html.matches(&format!("<{tag} ")).count();
            let close = html.matches(&format!("</{tag}>")).count();
            assert_eq!(open, close, "<{tag}>");
        }
    }
}
