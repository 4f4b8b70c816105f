//! `report.json`: the run report as pretty JSON, described by `schemas/report.schema.json`.
//! Its `scope` member (the rules checked and passed, and why the others were not) is derived
//! from the rows when the report is written, so that a merged report states its own; reading
//! a report back ignores it.

use serde_json::Value;

use super::scope::Scope;
use crate::verdict::RunReport;

/// The JSON Schema (draft 2020-12) `report.json` conforms to.
pub const REPORT_SCHEMA: &str = include_str!("../../schemas/report.schema.json");

/// The report as pretty-printed JSON, ending with a newline; `scope` follows `tally`.
pub fn render(report: &RunReport) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(report)?;
    if let Value::Object(members) = &mut value {
        let at = members
            .keys()
            .position(|k| k == "tally")
            .map_or(members.len(), |i| i + 1);
        members.shift_insert(at, "scope".into(), serde_json::to_value(Scope::of(report))?);
    }
    let mut text = serde_json::to_string_pretty(&value)?;
    text.push('\n');
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::sample::sample_report;
    use serde_json::{json, Value};

    fn validator() -> jsonschema::Validator {
        let schema: Value = serde_json::from_str(REPORT_SCHEMA).expect("schema is JSON");
        jsonschema::draft202012::new(&schema).expect("schema compiles")
    }

    fn errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
        validator
            .iter_errors(instance)
            .map(|e| format!("{} at {}", e, e.instance_path()))
            .collect()
    }

    #[test]
    fn sample_report_matches_schema() {
        let validator = validator();
        let mut report = sample_report();
        // Cover both arms of the nullable fields.
        report.fault = Some("ActionAfterUnsubscribe".to_owned());
        report.stale_baseline.push("LIFE-001".to_owned());
        report.shard = Some("2/4".to_owned());
        let text = render(&report).expect("serialises");
        let instance: Value = serde_json::from_str(&text).expect("parses");
        assert_eq!(errors(&validator, &instance), Vec::<String>::new());
        assert_eq!(
            instance["scope"]["levels"][0]["level"], "MUST",
            "the scope heads the levels with MUST"
        );
        assert_eq!(instance["scope"]["blocked"][0]["because"], "LIFECYCLE-003");
        // Without the scope the report is not a report.json.
        let mut plain: Value = serde_json::to_value(sample_report()).expect("serialises");
        assert!(!errors(&validator, &plain).is_empty());
        plain["scope"] = serde_json::to_value(Scope::of(&sample_report())).expect("scope");
        assert_eq!(errors(&validator, &plain), Vec::<String>::new());
    }

    #[test]
    fn schema_is_closed_and_enumerates_verdicts() {
        let validator = validator();
        let good: Value =
            serde_json::from_str(&render(&sample_report()).expect("renders")).expect("JSON");
        assert!(validator.is_valid(&good));
        type Mutation = (&'static str, fn(&mut Value));
        let broken: [Mutation; 9] = [
            ("extra top-level field", |v| {
                v["extra"] = json!(1);
            }),
            ("extra case field", |v| {
                v["cases"][0]["extra"] = json!(1);
            }),
            ("unknown verdict", |v| {
                v["cases"][1]["verdict"] = json!("skipped");
            }),
            ("unknown level", |v| {
                v["cases"][1]["info"]["level"] = json!("MUST*");
            }),
            ("missing tally count", |v| {
                if let Some(t) = v["tally"].as_object_mut() {
                    t.remove("baselined");
                }
            }),
            ("bad frame direction", |v| {
                v["cases"][1]["findings"][0]["context"][0]["direction"] = json!("up");
            }),
            ("scope without headline", |v| {
                if let Some(s) = v["scope"].as_object_mut() {
                    s.remove("headline");
                }
            }),
            ("scope level unknown", |v| {
                v["scope"]["levels"][0]["level"] = json!("MUST*");
            }),
            ("scope reason without rules", |v| {
                if let Some(r) = v["scope"]["blocked"][0].as_object_mut() {
                    r.remove("rules");
                }
            }),
        ];
        for (what, mutate) in broken {
            let mut instance = good.clone();
            mutate(&mut instance);
            assert!(!validator.is_valid(&instance), "{what} was accepted");
        }
    }

    #[test]
    fn json_round_trips() {
        let report = sample_report();
        let text = render(&report).expect("serialises");
        assert!(text.ends_with("}\n"));
        let back: RunReport = serde_json::from_str(&text).expect("parses back");
        assert_eq!(back, report);
    }
}
