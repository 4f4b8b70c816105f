//! The AAP suite files match schemas/aap-suite.schema.json and every rule of aap/RULES.md is
//! accounted for in aap/coverage.toml (a case, an always-on check, `covered_by` or
//! `not_covered` with a reason).

mod ledger;

use std::collections::BTreeSet;
use std::path::PathBuf;

use ahpspec::aap::checks::AAP_ALWAYS_ON;
use ahpspec::aap::suite::{AapCase, AapCatalog, EMBEDDED};
use ahpspec::catalog::SuiteError;

use serde_json::Value;

/// The built-in AAP cases.
fn embedded() -> Result<Vec<AapCase>, SuiteError> {
    AapCatalog::embedded().map(|catalog| catalog.cases)
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn rule_ids() -> BTreeSet<String> {
    let text = std::fs::read_to_string(root().join("aap/RULES.md")).expect("aap/RULES.md");
    text.lines()
        .filter_map(|line| line.strip_prefix("| AAP-"))
        .filter_map(|rest| rest.split(" |").next())
        .map(|id| format!("AAP-{}", id.trim()))
        .collect()
}

#[test]
fn every_aap_suite_matches_its_schema_and_parses() {
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(root().join("schemas/aap-suite.schema.json")).expect("schema"),
    )
    .expect("schema is JSON");
    let validator = jsonschema::draft202012::new(&schema).expect("schema compiles");
    let dir = root().join("suites/aap");
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("suites/aap")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".toml"))
        .collect();
    on_disk.sort();
    let mut embedded_names: Vec<String> = EMBEDDED.iter().map(|(n, _)| (*n).to_owned()).collect();
    embedded_names.sort();
    assert_eq!(on_disk, embedded_names, "every suites/aap file is embedded");
    for (name, text) in EMBEDDED {
        let table: toml::Table = toml::from_str(text).expect("TOML");
        let instance = serde_json::to_value(table).expect("TOML as JSON");
        let errors: Vec<String> = validator
            .iter_errors(&instance)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect();
        assert!(errors.is_empty(), "{name}: {errors:#?}");
        AapCatalog::parse_suite(name, text).expect("parses");
    }
}

#[test]
fn every_case_names_a_rule_of_the_catalog() {
    let rules = rule_ids();
    assert!(
        rules.len() > 50,
        "aap/RULES.md parsed into only {} IDs",
        rules.len()
    );
    for case in embedded().expect("suites") {
        let rule = case.info.id.split('/').next().unwrap_or_default();
        assert!(
            rules.contains(rule),
            "{} names no rule of aap/RULES.md",
            case.info.id
        );
    }
    for rule in AAP_ALWAYS_ON {
        assert!(
            rules.contains(rule.id),
            "always-on {} is not in aap/RULES.md",
            rule.id
        );
    }
}

#[test]
fn every_rule_is_covered_or_excluded_with_a_reason() {
    let rules = rule_ids();
    let mut proven: BTreeSet<String> = embedded()
        .expect("suites")
        .iter()
        .map(|c| c.info.id.split('/').next().unwrap_or_default().to_owned())
        .collect();
    proven.extend(AAP_ALWAYS_ON.iter().map(|r| r.id.to_owned()));
    let ledger: toml::Table =
        toml::from_str(include_str!("../aap/coverage.toml")).expect("coverage");
    let listed = |section: &str| -> BTreeSet<String> {
        ledger
            .get(section)
            .and_then(|v| v.as_table())
            .map(|t| t.keys().cloned().collect())
            .unwrap_or_default()
    };
    let (covered_by, not_covered) = (listed("covered_by"), listed("not_covered"));
    let cases = embedded().expect("suites");
    let defined: Vec<(&str, &str)> = cases
        .iter()
        .map(|c| (c.info.id.as_str(), c.info.spec.as_str()))
        .chain(AAP_ALWAYS_ON.iter().map(|r| (r.id, r.spec)))
        .collect();
    let problems = ledger::covered_by_problems(&ledger, &defined);
    assert!(
        problems.is_empty(),
        "aap/coverage.toml [covered_by]:\n{}",
        problems.join("\n")
    );
    for rule in &rules {
        let accounted =
            proven.contains(rule) || covered_by.contains(rule) || not_covered.contains(rule);
        assert!(
            accounted,
            "{rule} has no case, always-on check or coverage entry"
        );
    }
    for rule in not_covered.iter().chain(&covered_by) {
        assert!(
            rules.contains(rule),
            "coverage lists {rule}, which aap/RULES.md does not have"
        );
        assert!(
            !proven.contains(rule),
            "coverage lists {rule}, but a case or check now proves it"
        );
    }
}
