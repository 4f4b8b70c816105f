//! `badge.json`: the run as a shields.io endpoint badge (`https://img.shields.io/endpoint?url=…`),
//! e.g. `AHP 1.0.0 | 183/199 MUST`: the MUST rules passed of those the run had, so that a
//! badge never shows a narrow run as a full one.

use serde_json::json;

use super::scope::Scope;
use crate::verdict::{Level, RunReport};

/// The badge's label: the protocol and the version(s) the run spoke.
fn label(report: &RunReport) -> String {
    if report.protocol_version.starts_with("AAP") {
        report.protocol_version.clone()
    } else {
        format!("AHP {}", report.protocol_version)
    }
}

/// The badge of `report` as shields.io endpoint JSON (schemaVersion 1), ending in a newline.
pub fn render(report: &RunReport, scope: &Scope) -> String {
    // The MUST level speaks for the run; a run of SHOULD (or MAY) rules only shows its own.
    let level = [Level::Must, Level::Should, Level::May]
        .into_iter()
        .map(|level| scope.level(level))
        .find(|l| l.rules > 0)
        .unwrap_or_else(|| scope.level(Level::Must));
    let mut message = format!("{}/{} {}", level.passed, level.rules, level.level);
    let color = if report.interrupted {
        message.push_str(" (interrupted)");
        "lightgrey"
    } else if !report.conforming() {
        "red"
    } else if report.tally.harness_error > 0 || level.passed < level.rules {
        // Conforming, but not every rule was checked: the badge says so in its colour too.
        "yellow"
    } else {
        "brightgreen"
    };
    let mut text = json!({
        "schemaVersion": 1,
        "label": label(report),
        "message": message,
        "color": color,
    })
    .to_string();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::sample_report;
    use crate::verdict::Verdict;
    use serde_json::Value;

    fn badge(report: &RunReport) -> Value {
        serde_json::from_str(&render(report, &Scope::of(report))).expect("badge is JSON")
    }

    #[test]
    fn badge_is_a_shields_endpoint() {
        let value = badge(&sample_report());
        assert_eq!(value["schemaVersion"], 1);
        assert_eq!(value["label"], "AHP 1.0.0");
        assert_eq!(value["message"], "1/6 MUST");
        assert_eq!(value["color"], "red");
        let keys: Vec<&String> = value.as_object().expect("object").keys().collect();
        assert_eq!(keys, ["schemaVersion", "label", "message", "color"]);
    }

    #[test]
    fn colour_follows_outcome_and_scope() {
        let mut report = sample_report();
        report.cases.retain(|c| c.verdict == Verdict::Pass);
        report.tally = Default::default();
        report.tally.pass = 1;
        report.unexpected_failures.clear();
        assert_eq!(badge(&report)["color"], "brightgreen");
        assert_eq!(badge(&report)["message"], "1/1 MUST");
        let mut narrow = sample_report();
        narrow
            .cases
            .retain(|c| matches!(c.verdict, Verdict::Pass | Verdict::NotTestable));
        narrow.unexpected_failures.clear();
        narrow.tally = Default::default();
        assert_eq!(badge(&narrow)["message"], "1/2 MUST");
        assert_eq!(badge(&narrow)["color"], "yellow");
        report.interrupted = true;
        assert_eq!(badge(&report)["color"], "lightgrey");
        report.protocol_version = "AAP 3".into();
        assert_eq!(badge(&report)["label"], "AAP 3");
    }
}
