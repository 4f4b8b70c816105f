//! Every rule of RULES.md is accounted for: proven by a case or an always-on check, checked
//! under another rule, or listed in coverage.toml as not covered yet, with a reason. A rule
//! checked under another rule names cases and checks that exist and cite it, says how they
//! check it, and says what they leave out when they cover it in part; and `ahpspec coverage`
//! maps every rule to what proves it.

use std::collections::BTreeSet;
use std::path::Path;

mod ledger;

use ahpspec::checks::ALWAYS_ON;
use ahpspec::suite::Catalog;
use ledger::{cites, covered_by_problems};

/// Every case of the catalog and every always-on check, with its spec.
fn defined(catalog: &Catalog) -> Vec<(&str, &str)> {
    catalog
        .cases
        .iter()
        .map(|case| (case.info.id.as_str(), case.info.spec.as_str()))
        .chain(ALWAYS_ON.iter().map(|rule| (rule.id, rule.spec)))
        .collect()
}

fn rule_ids() -> BTreeSet<String> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/ahp/RULES.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    text.lines()
        .filter_map(|line| line.strip_prefix("| "))
        .filter_map(|rest| rest.split(" |").next())
        .map(str::trim)
        .filter(|id| {
            id.rsplit_once('-').is_some_and(|(head, number)| {
                !head.is_empty()
                    && head.chars().all(|c| c.is_ascii_uppercase() || c == '-')
                    && number.chars().all(|c| c.is_ascii_digit())
                    && !number.is_empty()
            })
        })
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_rule_is_covered_or_excluded_with_a_reason() {
    let rules = rule_ids();
    assert!(
        rules.len() > 200,
        "RULES.md parsed into only {} IDs",
        rules.len()
    );
    let catalog = Catalog::embedded().expect("suites parse");
    let mut proven: BTreeSet<String> = catalog
        .cases
        .iter()
        .map(|case| {
            case.info
                .id
                .split('/')
                .next()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    proven.extend(ALWAYS_ON.iter().map(|rule| rule.id.to_owned()));
    let ledger: toml::Table =
        toml::from_str(include_str!("../coverage.toml")).expect("coverage.toml parses");
    let listed = |section: &str| -> BTreeSet<String> {
        ledger
            .get(section)
            .and_then(|v| v.as_table())
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    };
    let covered_by = listed("covered_by");
    let problems = covered_by_problems(&ledger, &defined(&catalog));
    assert!(
        problems.is_empty(),
        "coverage.toml [covered_by]:\n{}",
        problems.join("\n")
    );
    let not_covered = listed("not_covered");
    for (section, ids) in [("covered_by", &covered_by), ("not_covered", &not_covered)] {
        for id in ids {
            assert!(
                rules.contains(id),
                "coverage.toml [{section}] names {id}, which RULES.md does not have"
            );
            assert!(
                !proven.contains(id),
                "coverage.toml [{section}] lists {id}, but a case now proves it: remove the entry"
            );
        }
    }
    for id in &proven {
        assert!(
            rules.contains(id),
            "case or check ID {id} is not a RULES.md rule"
        );
    }
    let missing: Vec<&String> = rules
        .iter()
        .filter(|id| {
            !proven.contains(*id) && !covered_by.contains(*id) && !not_covered.contains(*id)
        })
        .collect();
    assert!(
        missing.is_empty(),
        "rules neither covered nor listed in coverage.toml: {missing:?}"
    );
    let partial: Vec<&String> = covered_by
        .iter()
        .filter(|id| ledger["covered_by"][id.as_str()].get("partial").is_some())
        .collect();
    println!(
        "{} rules: {} proven by cases or always-on checks, {} checked under another rule ({} of them in part: {partial:?}), {} not covered yet",
        rules.len(),
        rules.iter().filter(|id| proven.contains(*id)).count(),
        covered_by.len(),
        partial.len(),
        not_covered.len()
    );
}

/// The ledger check can fail: an entry naming a case that does not exist, a case that does
/// not cite the rule, a plain string, or an entry without `how` is each a problem.
#[test]
fn a_covered_by_entry_naming_a_missing_or_unrelated_case_fails() {
    let catalog = Catalog::embedded().expect("suites parse");
    let ledger = |entries: &str| -> toml::Table {
        toml::from_str(&format!("[covered_by]\n{entries}")).expect("parses")
    };
    let good = ledger(r#""INV-SEQ-2" = { by = ["INIT-004", "SUB-002"], how = "both." }"#);
    assert_eq!(
        covered_by_problems(&good, &defined(&catalog)),
        Vec::<String>::new()
    );
    for (entries, problem) in [
        (
            r#""INV-SEQ-2" = { by = ["INIT-404"], how = "x." }"#,
            "names INIT-404, which is no case",
        ),
        (
            r#""INV-SEQ-2" = { by = ["TRANSPORT-001"], how = "x." }"#,
            "TRANSPORT-001 does not cite INV-SEQ-2",
        ),
        (r#""INV-SEQ-2" = "INIT-004, SUB-002""#, "not a table"),
        (r#""INV-SEQ-2" = { by = ["INIT-004"] }"#, "`how` must be"),
        (
            r#""INV-SEQ-2" = { by = ["INIT-004"], how = "x.", partal = "y" }"#,
            "unknown key",
        ),
        (r#""INV-SEQ-2" = { by = [], how = "x." }"#, "names no case"),
    ] {
        let problems = covered_by_problems(&ledger(entries), &defined(&catalog));
        assert!(
            problems.iter().any(|p| p.contains(problem)),
            "{entries}: {problems:?}"
        );
    }
    assert!(cites("RULES.md §17 INV-SEQ-1, INV-SEQ-2", "INV-SEQ-1"));
    assert!(!cites("RULES.md §17 INV-SEQ-10", "INV-SEQ-1"));
}

/// `ahpspec coverage` lists every rule of the catalog once, in text and JSON, with the
/// cases named after it and the faults that break it.
#[test]
fn coverage_command_maps_every_rule() {
    let run = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_ahpspec"))
            .arg("coverage")
            .args(args)
            .output()
            .expect("ahpspec runs");
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).expect("utf-8")
    };
    let rules = rule_ids();
    let text = run(&[]);
    for id in &rules {
        let lines = text
            .lines()
            .filter(|l| l.starts_with(&format!("{id}  ")))
            .count();
        assert_eq!(lines, 1, "{id} listed {lines} times");
    }
    assert!(text
        .lines()
        .last()
        .is_some_and(|l| l.starts_with(&format!("{} rules of docs/ahp/RULES.md", rules.len()))));

    let json: serde_json::Value = serde_json::from_str(&run(&["--json"])).expect("JSON");
    let listed: BTreeSet<String> = json["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| r["id"].as_str().expect("id").to_owned())
        .collect();
    assert_eq!(listed, rules);
    let catalog = Catalog::embedded().expect("suites parse");
    for row in json["rules"].as_array().expect("rules") {
        let id = row["id"].as_str().expect("id");
        let cases: Vec<&str> = catalog
            .cases
            .iter()
            .map(|c| c.info.id.as_str())
            .filter(|c| c.split('/').next() == Some(id))
            .collect();
        assert_eq!(row["cases"], serde_json::json!(cases), "{id}");
        let faults: Vec<&str> = ahpspec::host::Fault::ALL
            .iter()
            .filter(|f| f.rule() == id)
            .map(|f| f.name())
            .collect();
        assert_eq!(row["faults"], serde_json::json!(faults), "{id}");
        assert_eq!(
            row["alwaysOn"].is_string(),
            ALWAYS_ON.iter().any(|r| r.id == id),
            "{id}"
        );
    }
    let aap = run(&["--protocol", "aap"]);
    assert!(aap.lines().any(|l| l.starts_with("AAP-HTTP-001  MUST  ")));
}
