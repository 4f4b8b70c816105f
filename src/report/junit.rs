//! `junit.xml`: one `<testsuite>` per spec area, one `<testcase>` per case.
//!
//! Mapping: `fail` → `<failure>`; `blocked` → `<failure type="blocked">` (it fails the run); `harness-error` → `<error>`; `warn` → `<failure
//! type="warning">` under `--strict`, otherwise a `<system-out>` note; `not-applicable` and
//! `not-testable` → `<skipped>`; `info` passes with a `<system-out>` note.

use std::fmt::Write as _;

use super::{by_area, render_failure};
use crate::verdict::{CaseResult, RunReport, Verdict};

/// The report as a JUnit XML document.
pub fn render(report: &RunReport) -> String {
    let areas = by_area(report);
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let all: Vec<&CaseResult> = report.cases.iter().collect();
    let totals = Counts::of(&all, report.strict);
    let _ = writeln!(
        out,
        "<testsuites name=\"ahpspec\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\" timestamp=\"{}\">",
        totals.tests,
        totals.failures,
        totals.errors,
        totals.skipped,
        secs(report.duration_ms),
        attr(&report.started_at),
    );
    for (area, cases) in &areas {
        let counts = Counts::of(cases, report.strict);
        let time: f64 = cases.iter().map(|c| c.duration_ms).sum();
        let _ = writeln!(
            out,
            "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{}\" errors=\"{}\" skipped=\"{}\" time=\"{}\" timestamp=\"{}\">",
            attr(area),
            counts.tests,
            counts.failures,
            counts.errors,
            counts.skipped,
            secs(time),
            attr(&report.started_at),
        );
        out.push_str("    <properties>\n");
        property(&mut out, "target", &report.target);
        property(&mut out, "protocolVersion", &report.protocol_version);
        if let Some(fault) = &report.fault {
            property(&mut out, "fault", fault);
        }
        property(
            &mut out,
            "strict",
            if report.strict { "true" } else { "false" },
        );
        out.push_str("    </properties>\n");
        for case in cases {
            testcase(&mut out, case, area, report.strict);
        }
        out.push_str("  </testsuite>\n");
    }
    out.push_str("</testsuites>\n");
    out
}

#[derive(Default)]
struct Counts {
    tests: usize,
    failures: usize,
    errors: usize,
    skipped: usize,
}

impl Counts {
    fn of(cases: &[&CaseResult], strict: bool) -> Counts {
        let mut c = Counts::default();
        for case in cases {
            c.tests += 1;
            match case.verdict {
                Verdict::Fail | Verdict::Blocked => c.failures += 1,
                Verdict::Warn if strict => c.failures += 1,
                Verdict::HarnessError => c.errors += 1,
                Verdict::NotApplicable | Verdict::NotTestable => c.skipped += 1,
                Verdict::Pass | Verdict::Info | Verdict::Warn => {}
            }
        }
        c
    }
}

fn property(out: &mut String, name: &str, value: &str) {
    let _ = writeln!(
        out,
        "      <property name=\"{}\" value=\"{}\"/>",
        attr(name),
        attr(value)
    );
}

fn testcase(out: &mut String, case: &CaseResult, area: &str, strict: bool) {
    // In a run of several protocol versions each version's row is a test of its own.
    let id = case.key();
    let _ = write!(
        out,
        "    <testcase name=\"{} — {}\" classname=\"ahpspec.{}\" time=\"{}\"",
        attr(&id),
        attr(&case.info.does),
        attr(area),
        secs(case.duration_ms),
    );
    let body = match case.verdict {
        Verdict::Pass => None,
        Verdict::Fail => Some(format!(
            "<failure message=\"{}\" type=\"fail\">{}</failure>",
            attr(&case.summary),
            text(&render_failure(case))
        )),
        Verdict::Blocked => Some(format!(
            "<failure message=\"{}\" type=\"blocked\">{}</failure>",
            attr(&case.summary),
            text(&render_failure(case))
        )),
        Verdict::Warn if strict => Some(format!(
            "<failure message=\"{}\" type=\"warning\">{}</failure>",
            attr(&case.summary),
            text(&render_failure(case))
        )),
        Verdict::Warn => Some(format!(
            "<system-out>warning (a SHOULD; fails the run only with --strict)\n{}</system-out>",
            text(&render_failure(case))
        )),
        Verdict::Info => Some(format!(
            "<system-out>info\n{}</system-out>",
            text(&render_failure(case))
        )),
        Verdict::NotApplicable => Some(format!(
            "<skipped message=\"not applicable: {}\"/>",
            attr(&case.summary)
        )),
        Verdict::NotTestable => {
            let message = if case.summary.starts_with("Not testable:") {
                case.summary.clone()
            } else {
                format!("Not testable: {}", case.summary)
            };
            Some(format!("<skipped message=\"{}\"/>", attr(&message)))
        }
        Verdict::HarnessError => Some(format!(
            "<error message=\"{}\" type=\"harness-error\">{}</error>",
            attr(&case.summary),
            text(&render_failure(case))
        )),
    };
    match body {
        None => out.push_str("/>\n"),
        Some(body) => {
            let _ = write!(out, ">\n      {body}\n    </testcase>\n");
        }
    }
}

/// Seconds with millisecond precision, as JUnit's `time` attribute wants.
fn secs(ms: f64) -> String {
    format!("{:.3}", ms / 1000.0)
}

/// Escapes character data. Characters XML 1.0 cannot carry at all become U+FFFD.
pub(crate) fn text(s: &str) -> String {
    escape(s, false)
}

/// Escapes an attribute value (double-quoted); whitespace survives attribute
/// normalisation as character references.
pub(crate) fn attr(s: &str) -> String {
    escape(s, true)
}

fn escape(s: &str, attribute: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if attribute => out.push_str("&quot;"),
            '\'' if attribute => out.push_str("&apos;"),
            '\n' if attribute => out.push_str("&#10;"),
            '\r' => out.push_str("&#13;"),
            '\t' if attribute => out.push_str("&#9;"),
            '\n' | '\t' => out.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::{golden, sample_report};

    /// Known or numeric entities only.
    fn check_entities(s: &str) -> Result<(), String> {
        let mut rest = s;
        while let Some(i) = rest.find('&') {
            let after = &rest[i + 1..];
            let end = after
                .find(';')
                .ok_or_else(|| format!("unterminated entity in {s:?}"))?;
            let name = &after[..end];
            let ok = matches!(name, "amp" | "lt" | "gt" | "quot" | "apos")
                || name
                    .strip_prefix('#')
                    .is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()));
            if !ok {
                return Err(format!("bad entity &{name};"));
            }
            rest = &after[end + 1..];
        }
        Ok(())
    }

    /// Attributes: `name="value"` pairs, each name once, no raw `<` in a value.
    fn check_attributes(name: &str, attrs: &str) -> Result<(), String> {
        let mut attrs = attrs.trim();
        let mut seen = Vec::new();
        while !attrs.is_empty() {
            let eq = attrs
                .find("=\"")
                .ok_or_else(|| format!("bad attribute in <{name}>"))?;
            let key = attrs[..eq].trim();
            if key.is_empty() || seen.contains(&key) {
                return Err(format!("empty or duplicate attribute in <{name}>"));
            }
            seen.push(key);
            let value_and_rest = &attrs[eq + 2..];
            let close = value_and_rest.find('"').ok_or("unterminated attribute")?;
            let value = &value_and_rest[..close];
            if value.contains('<') {
                return Err(format!("raw < in attribute {key}"));
            }
            check_entities(value)?;
            attrs = value_and_rest[close + 1..].trim_start();
        }
        Ok(())
    }

    /// A deliberately small XML well-formedness check: balanced, properly nested tags,
    /// quoted attributes without raw `<` or `&`, only known or numeric entities, no raw
    /// `<`/`&` in text, exactly one root element. Returns the element names in order.
    fn check_well_formed(doc: &str) -> Result<Vec<String>, String> {
        let body = doc
            .strip_prefix("<?xml version=\"1.0\" encoding=\"UTF-8\"?>")
            .ok_or("missing XML declaration")?;
        let mut stack: Vec<String> = Vec::new();
        let mut names = Vec::new();
        let mut roots = 0;
        let mut rest = body;
        while !rest.is_empty() {
            let lt = rest.find('<').unwrap_or(rest.len());
            let chars = &rest[..lt];
            if stack.is_empty() && !chars.trim().is_empty() {
                return Err(format!("text outside the root: {chars:?}"));
            }
            check_entities(chars)?;
            rest = &rest[lt..];
            if rest.is_empty() {
                break;
            }
            let gt = rest.find('>').ok_or("unterminated tag")?;
            let tag = &rest[1..gt];
            rest = &rest[gt + 1..];
            if let Some(name) = tag.strip_prefix('/') {
                let open = stack.pop().ok_or_else(|| format!("stray </{name}>"))?;
                if open != name.trim() {
                    return Err(format!("<{open}> closed by </{name}>"));
                }
                continue;
            }
            let self_closing = tag.ends_with('/');
            let tag = tag.trim_end_matches('/');
            let name_end = tag.find(char::is_whitespace).unwrap_or(tag.len());
            let name = &tag[..name_end];
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(format!("bad element name {name:?}"));
            }
            check_attributes(name, &tag[name_end..])?;
            if stack.is_empty() {
                roots += 1;
            }
            names.push(name.to_owned());
            if !self_closing {
                stack.push(name.to_owned());
            }
        }
        if let Some(open) = stack.pop() {
            return Err(format!("<{open}> never closed"));
        }
        if roots != 1 {
            return Err(format!("{roots} root elements"));
        }
        Ok(names)
    }

    fn count(names: &[String], name: &str) -> usize {
        names.iter().filter(|n| *n == name).count()
    }

    #[test]
    fn checker_rejects_broken_xml() {
        let decl = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>";
        for bad in [
            "<a><b></a></b>",
            "<a>x & y</a>",
            "<a>x < y</a>",
            "<a x=\"1\" x=\"2\"/>",
            "<a x=\"<\"/>",
            "<a/><b/>",
            "<a>",
        ] {
            assert!(check_well_formed(&format!("{decl}{bad}")).is_err(), "{bad}");
        }
        assert!(check_well_formed(&format!("{decl}<a x=\"&amp;\">&lt;&#10;</a>")).is_ok());
    }

    #[test]
    fn junit_is_well_formed_and_counts_match_tally() {
        let report = sample_report();
        let xml = render(&report);
        let names = check_well_formed(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        let t = &report.tally;
        assert_eq!(count(&names, "testsuite"), 3);
        assert_eq!(count(&names, "testcase"), t.total());
        assert_eq!(count(&names, "failure"), t.fail + t.blocked);
        assert_eq!(count(&names, "error"), t.harness_error);
        assert_eq!(count(&names, "skipped"), t.not_applicable + t.not_testable);
        assert_eq!(count(&names, "system-out"), t.warn + t.info);
        assert!(xml.contains("tests=\"8\" failures=\"2\" errors=\"1\" skipped=\"2\""));
        assert!(xml.contains("classname=\"ahpspec.subscriptions\""));
        assert!(xml.contains("name=\"SUB-004 — Subscribes to the root channel"));
        assert!(
            xml.contains("&lt;script&gt;alert(&apos;x&apos;)&lt;/script&gt; &amp; friends")
                || xml.contains("&lt;script&gt;alert('x')&lt;/script&gt; &amp; friends")
        );
        assert!(!xml.contains("<script>"));
        assert!(
            !xml.contains('\u{1b}'),
            "control bytes cannot appear in XML 1.0"
        );
        assert!(xml.contains("<skipped message=\"Not testable: the idle timeout"));
        golden("junit.xml", &xml);
    }

    #[test]
    fn empty_run_is_well_formed() {
        let mut report = sample_report();
        report.cases.clear();
        report.tally = Default::default();
        let xml = render(&report);
        let names = check_well_formed(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        assert_eq!(names, ["testsuites"]);
    }

    #[test]
    fn strict_turns_warnings_into_failures() {
        let mut report = sample_report();
        report.strict = true;
        let xml = render(&report);
        let names = check_well_formed(&xml).unwrap_or_else(|e| panic!("{e}\n{xml}"));
        assert_eq!(
            count(&names, "failure"),
            report.tally.fail + report.tally.blocked + report.tally.warn
        );
        assert!(
            xml.contains("<failure message=\"an action preceded the snapshot\" type=\"warning\">")
        );
        assert_eq!(count(&names, "system-out"), report.tally.info);
    }

    #[test]
    fn escaper_handles_markup_quotes_and_control_bytes() {
        assert_eq!(attr("a<b>&\"c'\n"), "a&lt;b&gt;&amp;&quot;c&apos;&#10;");
        assert_eq!(text("a<b>&\"\n\u{1}"), "a&lt;b&gt;&amp;\"\n\u{fffd}");
    }
}
