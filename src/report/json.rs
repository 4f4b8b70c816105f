//! `report.json`: the run report as pretty JSON, described by `schemas/report.schema.json`.

use crate::verdict::RunReport;

/// The JSON Schema (draft 2020-12) `report.json` conforms to.
pub const REPORT_SCHEMA: &str = include_str!("../../schemas/report.schema.json");

/// The report as pretty-printed JSON, ending with a newline.
pub fn render(report: &RunReport) -> Result<String, serde_json::Error> {
    let mut text = serde_json::to_string_pretty(report)?;
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
        let plain: Value = serde_json::to_value(sample_report()).expect("serialises");
        assert_eq!(errors(&validator, &plain), Vec::<String>::new());
    }

    #[test]
    fn schema_is_closed_and_enumerates_verdicts() {
        let validator = validator();
        let good = serde_json::to_value(sample_report()).expect("serialises");
        type Mutation = (&'static str, fn(&mut Value));
        let broken: [Mutation; 6] = [
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
