//! The `[covered_by]` entries of a coverage ledger (coverage.toml, aap/coverage.toml):
//! a rule checked under other rules' IDs names cases and checks that exist and cite it.
#![allow(dead_code)]

/// What is wrong with the `[covered_by]` entries of `ledger`: each is a table with a
/// non-empty `by` list, a `how` and, optionally, a `partial`; each name in `by` is one of
/// `defined` — the cases and always-on checks, each `(ID, spec)` — by its ID or the rule ID
/// its cases share (`TOOL-007` for `TOOL-007/denied`), and (one of) its specs cites the
/// covered rule.
pub fn covered_by_problems(ledger: &toml::Table, defined: &[(&str, &str)]) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(entries) = ledger.get("covered_by").and_then(|v| v.as_table()) else {
        return vec!["no [covered_by] table".to_owned()];
    };
    for (rule, entry) in entries {
        let Some(entry) = entry.as_table() else {
            problems.push(format!(
                "{rule}: not a table {{ by = [...], how = \"...\" }}"
            ));
            continue;
        };
        for key in entry.keys() {
            if !["by", "how", "partial"].contains(&key.as_str()) {
                problems.push(format!("{rule}: unknown key {key:?}"));
            }
        }
        for key in ["how", "partial"] {
            let text = entry.get(key).map(|v| v.as_str().map(str::trim));
            if matches!(text, Some(None | Some(""))) || (key == "how" && text.is_none()) {
                problems.push(format!("{rule}: `{key}` must be a sentence"));
            }
        }
        let names: Vec<&str> = entry
            .get("by")
            .and_then(|v| v.as_array())
            .map(|names| names.iter().filter_map(|n| n.as_str()).collect())
            .unwrap_or_default();
        if names.is_empty() {
            problems.push(format!("{rule}: `by` names no case or check"));
        }
        for name in names {
            let specs: Vec<&str> = defined
                .iter()
                .filter(|(id, _)| *id == name || id.split('/').next() == Some(name))
                .map(|(_, spec)| *spec)
                .collect();
            if specs.is_empty() {
                problems.push(format!(
                    "{rule}: names {name}, which is no case and no always-on check"
                ));
            } else if !specs.iter().any(|spec| cites(spec, rule)) {
                problems.push(format!(
                    "{rule}: {name} does not cite {rule} in its spec ({specs:?})"
                ));
            }
        }
    }
    problems
}

/// Whether `spec` names `rule` as a whole ID (`INV-SEQ-1`, not `INV-SEQ-10`).
pub fn cites(spec: &str, rule: &str) -> bool {
    spec.match_indices(rule).any(|(at, _)| {
        !spec[at + rule.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}
