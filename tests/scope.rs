//! Every report opens with the run's scope — the rules checked and passed by level, and the
//! rules not applicable, not testable and blocked with their reasons — in the terminal,
//! report.json, summary.md, report.html and badge.json alike. Checked end to end on the
//! built-in host for a clean run, a narrow target profile and two faulty hosts; the counts
//! are recomputed here from the rows of report.json, not taken from the tool.

// This file reads the list only.
#[allow(dead_code)]
#[path = "common/builtin.rs"]
mod builtin;
mod run_support;

use std::collections::BTreeMap;

use run_support::{ahpspec, show, TempDir};
use serde_json::Value;

/// What one run left behind.
struct Run {
    stdout: String,
    exit: Option<i32>,
    json: Value,
    markdown: String,
    html: String,
    badge: Value,
}

fn run(dir: &TempDir, extra: &[&str]) -> Run {
    let reports = dir.sub("reports");
    let mut args = vec!["run", "--report-dir", &reports];
    args.extend_from_slice(extra);
    let out = ahpspec(&args);
    let read = |name: &str| {
        std::fs::read_to_string(dir.path().join("reports").join(name))
            .unwrap_or_else(|e| panic!("{name}: {e}\n{}", show(&out)))
    };
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        exit: out.status.code(),
        json: serde_json::from_str(&read("report.json")).expect("report.json"),
        markdown: read("summary.md"),
        html: read("report.html"),
        badge: serde_json::from_str(&read("badge.json")).expect("badge.json"),
    }
}

/// Per level: (rules, passed, failed, not applicable, not testable, blocked), folded here
/// from the rows: a rule is failed if a row failed or warned, else blocked if a row was
/// blocked, else passed if a row passed, else not testable if a row was, else not
/// applicable (harness errors count nowhere of these).
fn counts(report: &Value) -> BTreeMap<String, [usize; 6]> {
    let mut rules: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for row in report["cases"].as_array().expect("cases") {
        let id = row["info"]["id"].as_str().expect("id");
        let rule = id.split('/').next().expect("rule").to_owned();
        let entry = rules.entry(rule).or_insert_with(|| {
            (
                row["info"]["level"].as_str().expect("level").to_owned(),
                vec![],
            )
        });
        entry
            .1
            .push(row["verdict"].as_str().expect("verdict").to_owned());
    }
    let mut out: BTreeMap<String, [usize; 6]> = BTreeMap::new();
    for (level, verdicts) in rules.values() {
        let has = |v: &str| verdicts.iter().any(|x| x == v);
        let row = out.entry(level.clone()).or_default();
        row[0] += 1;
        let at = if has("fail") || has("warn") {
            2
        } else if has("harness-error") {
            continue;
        } else if has("blocked") {
            5
        } else if has("pass") || has("info") {
            1
        } else if has("not-testable") {
            4
        } else {
            3
        };
        row[at] += 1;
    }
    out
}

/// The scope's counts of `level` from report.json, in the order of [`counts`].
fn scope_counts(report: &Value, level: &str) -> [usize; 6] {
    let levels = report["scope"]["levels"].as_array().expect("scope levels");
    let l = levels
        .iter()
        .find(|l| l["level"] == level)
        .unwrap_or_else(|| panic!("no {level} in the scope"));
    let n = |k: &str| l[k].as_u64().expect(k) as usize;
    [
        n("rules"),
        n("passed"),
        n("failed"),
        n("notApplicable"),
        n("notTestable"),
        n("blocked"),
    ]
}

/// The headline is the same in every format, and its counts are the rows'.
fn check_headline(run: &Run) -> String {
    let headline = run.json["scope"]["headline"]
        .as_str()
        .expect("scope headline")
        .to_owned();
    let terminal = run
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Scope: "))
        .unwrap_or_else(|| panic!("no Scope: line in\n{}", run.stdout));
    assert_eq!(terminal, headline);
    assert!(
        run.markdown.contains(&format!("**Scope:** {headline}\n")),
        "summary.md lacks the headline"
    );
    assert!(
        run.html.contains(&format!("<b>Scope:</b> {headline}</p>")),
        "report.html lacks the headline"
    );
    let expected = counts(&run.json);
    for (level, row) in &expected {
        assert_eq!(&scope_counts(&run.json, level), row, "{level}");
        if level != "MAY" {
            assert!(
                headline.contains(&format!("{level}: {} of {} rule", row[1], row[0])),
                "{headline}"
            );
        }
    }
    let must = expected.get("MUST").expect("MUST rules");
    assert_eq!(
        run.badge["message"],
        format!("{}/{} MUST", must[1], must[0])
    );
    assert_eq!(run.badge["label"], "AHP 1.0.0");
    headline
}

#[test]
fn a_clean_run_says_every_rule_was_checked() {
    let dir = TempDir::new("scope-clean");
    let run = run(&dir, &[]);
    assert_eq!(run.exit, Some(0), "{}", run.stdout);
    let headline = check_headline(&run);
    let must = counts(&run.json)["MUST"];
    assert!(must[0] > 100, "{must:?}");
    // Every MUST rule passed but those the scripted profile leaves not testable on purpose
    // (tests/common/builtin.rs: the wait for a schedule), and the headline names them.
    let waits = builtin::NOT_TESTABLE_WITH_SCRIPTED_PROFILE.len();
    assert_eq!(
        must[0],
        must[1] + waits,
        "every MUST rule passed: {headline}"
    );
    assert_eq!(must[4], waits, "{headline}");
    // A rule whose cases the built-in host is rightly not applicable to in part
    // (tests/common/builtin.rs) passed only in part, and the headline says so.
    let in_part = builtin::NOT_APPLICABLE_TO_BUILTIN.len();
    let checked = must[1];
    let said = match (in_part, waits) {
        (0, 0) => format!("({checked} checked)"),
        (_, 0) => format!("({checked} checked, {in_part} passed only in part)"),
        (0, _) => format!("({checked} checked; {waits} not testable)"),
        _ => format!("({checked} checked, {in_part} passed only in part; {waits} not testable)"),
    };
    assert!(headline.contains(&said), "{headline}");
    for kind in ["notApplicable", "blocked"] {
        assert_eq!(run.json["scope"][kind], serde_json::json!([]), "{kind}");
    }
    let reasons = run.json["scope"]["notTestable"]
        .as_array()
        .expect("reasons");
    assert_eq!(reasons.len(), usize::from(waits > 0), "{reasons:?}");
    for (id, _) in builtin::NOT_TESTABLE_WITH_SCRIPTED_PROFILE {
        assert!(reasons[0]["rules"]
            .as_array()
            .expect("rules")
            .contains(&serde_json::json!(id)));
    }
    // A MUST rule left not testable keeps the badge from green.
    let color = if waits == 0 { "brightgreen" } else { "yellow" };
    assert_eq!(run.badge["color"], color);
}

#[test]
fn a_narrow_profile_names_the_behaviours_it_lacks() {
    let dir = TempDir::new("scope-narrow");
    let profile = dir.path().join("narrow.toml");
    std::fs::write(
        &profile,
        "name = \"echo only\"\n[behaviours]\necho = \"hello from ahpspec\"\n",
    )
    .expect("profile");
    let run = run(&dir, &["--target-profile", profile.to_str().expect("path")]);
    // Nothing failed, so the run conforms, and the headline says how little it showed.
    assert_eq!(run.exit, Some(0), "{}", run.stdout);
    let headline = check_headline(&run);
    let must = counts(&run.json)["MUST"];
    assert!(must[4] >= 20, "many MUST rules not testable: {must:?}");
    assert!(
        headline.contains(&format!("{} not testable", must[4])),
        "{headline}"
    );
    // Every not-testable rule is listed under the behaviour that would make it testable.
    let reasons = run.json["scope"]["notTestable"]
        .as_array()
        .expect("reasons");
    let input = reasons
        .iter()
        .find(|r| r["because"] == "behaviour \"input\"")
        .expect("the input behaviour is named");
    let input_rules = input["rules"].as_array().expect("rules");
    assert!(!input_rules.is_empty());
    for rule in input_rules {
        let rule = rule.as_str().expect("rule");
        let rows: Vec<&Value> = run.json["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|c| {
                c["info"]["id"]
                    .as_str()
                    .is_some_and(|id| id.split('/').next() == Some(rule))
            })
            .collect();
        assert!(
            rows.iter().all(|c| c["verdict"] == "not-testable"),
            "{rule}"
        );
        assert!(rows.iter().any(|c| c["summary"]
            .as_str()
            .is_some_and(|s| s.contains("behaviour \"input\""))));
    }
    let listed: usize = reasons
        .iter()
        .flat_map(|r| r["rules"].as_array().expect("rules"))
        .map(|r| r.as_str().expect("rule"))
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let all = counts(&run.json);
    assert_eq!(listed, all.values().map(|r| r[4]).sum::<usize>());
    assert!(run
        .stdout
        .lines()
        .any(|l| l.starts_with("  not testable: ") && l.contains("behaviour \"input\" (")));
    assert!(run
        .markdown
        .contains("- not testable (behaviour \"input\"): "));
    assert!(run
        .html
        .contains("<li>not testable (behaviour &quot;input&quot;): <code>"));
    assert_eq!(run.badge["color"], "yellow");
}

#[test]
fn a_faulty_host_shows_what_failed_and_what_it_blocked() {
    let dir = TempDir::new("scope-faulty");
    let run = run(&dir, &["--fault", "initialize-error"]);
    assert_eq!(run.exit, Some(1), "{}", run.stdout);
    let headline = check_headline(&run);
    let must = counts(&run.json)["MUST"];
    assert!(must[2] >= 1 && must[5] >= 50, "{must:?}");
    assert!(
        headline.contains(&format!("{} failed", must[2])),
        "{headline}"
    );
    assert!(
        headline.contains(&format!("{} blocked", must[5])),
        "{headline}"
    );
    let blocked = &run.json["scope"]["blocked"][0];
    assert_eq!(blocked["because"], "INIT-001");
    assert!(run.stdout.contains("  blocked by: INIT-001 ("));
    assert!(run.markdown.contains("- blocked by INIT-001: "));
    assert_eq!(run.badge["color"], "red");

    // One broken rule among many passing: the headline counts it, nothing is blocked.
    let dir = TempDir::new("scope-one-fault");
    let run = self::run(&dir, &["--fault", "no-broadcast"]);
    assert_eq!(run.exit, Some(1), "{}", run.stdout);
    let headline = check_headline(&run);
    assert!(headline.contains("1 failed"), "{headline}");
}
