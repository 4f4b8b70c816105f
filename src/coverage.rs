//! `ahpspec coverage`: for every rule of a protocol's rule catalog, what in the tool proves
//! it — the suite cases named after it, the always-on check that judges it on every frame,
//! the built-in server's faults that break it (the twins that show the checks can fail),
//! and the fuzzer operations judged by it — with the coverage ledger's word where a rule has
//! none of these. For people who audit the tool itself, in text or JSON.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;

use crate::checks::{AlwaysOnRule, AAP_ALWAYS_ON, ALWAYS_ON};
use crate::suite::{Catalog, SuiteError};

/// The AHP rule catalog, compiled in (`docs/ahp/RULES.md`).
pub const AHP_RULES: &str = include_str!("../docs/ahp/RULES.md");
/// The AAP rule catalog, compiled in (`aap/RULES.md`).
pub const AAP_RULES: &str = include_str!("../aap/RULES.md");
const AHP_LEDGER: &str = include_str!("../coverage.toml");
const AAP_LEDGER: &str = include_str!("../aap/coverage.toml");

/// Why the map could not be made: the compiled-in suites or ledger do not load.
#[derive(Debug, thiserror::Error)]
pub enum CoverageError {
    #[error(transparent)]
    Suites(#[from] SuiteError),
    #[error("the coverage ledger does not parse: {0}")]
    Ledger(String),
}

/// One rule of the catalog and what proves it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleCoverage {
    pub id: String,
    /// As the catalog writes it (`MUST*`: derived from a type rather than a spec sentence).
    pub level: String,
    /// The catalog section the rule is listed under.
    pub section: String,
    /// The rule in one sentence (the catalog's words).
    pub rule: String,
    /// Suite cases named after the rule (`ID` or `ID/slug`).
    pub cases: Vec<String>,
    /// The unit the always-on check judges, when there is one.
    pub always_on: Option<String>,
    /// Built-in server faults that break the rule.
    pub faults: Vec<String>,
    /// Fuzzer operations judged by the rule.
    pub fuzz: Vec<String>,
    /// The ledger: checked under other rules instead.
    pub covered_by: Option<String>,
    /// The ledger: not covered yet, and why.
    pub not_covered: Option<String>,
    /// The ledger: why no fault breaks the rule's case.
    pub no_fault: Option<String>,
}

/// How many rules have each kind of proof.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Totals {
    pub rules: usize,
    pub with_case: usize,
    pub always_on: usize,
    pub with_fault: usize,
    pub with_fuzz: usize,
    pub covered_by: usize,
    pub not_covered: usize,
}

/// The map of one protocol's catalog.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CoverageMap {
    pub protocol: &'static str,
    pub catalog: &'static str,
    pub totals: Totals,
    pub rules: Vec<RuleCoverage>,
}

/// The rows of a catalog: `(id, level, section, rule)` of every `| ID | Lvl | Rule | …` row,
/// and of every `| ID | Invariant |` row (level empty: the invariants table has none).
pub fn catalog_rows(text: &str) -> Vec<(String, String, String, String)> {
    let mut section = String::new();
    let mut rows = Vec::new();
    for line in text.lines() {
        if let Some(heading) = line.strip_prefix("## ") {
            section = heading.trim().to_owned();
            continue;
        }
        let Some(rest) = line.strip_prefix("| ") else {
            continue;
        };
        let cells: Vec<&str> = rest.split(" | ").map(str::trim).collect();
        let (id, level, rule) = match cells.as_slice() {
            [id, level, rule, ..] if is_level(level) => (*id, *level, *rule),
            [id, rule, ..] => (*id, "", rule.trim_end_matches(" |").trim()),
            _ => continue,
        };
        if is_rule_id(id) {
            rows.push((
                id.to_owned(),
                level.to_owned(),
                section.clone(),
                rule.to_owned(),
            ));
        }
    }
    rows
}

fn is_level(cell: &str) -> bool {
    ["MUST", "SHOULD", "MAY"]
        .iter()
        .any(|l| cell.trim_end_matches('*') == *l)
}

/// `AREA-NNN` or `AREA-SUB-NNN` (upper-case words, a number).
fn is_rule_id(id: &str) -> bool {
    id.rsplit_once('-').is_some_and(|(head, number)| {
        !head.is_empty()
            && head.chars().all(|c| c.is_ascii_uppercase() || c == '-')
            && !number.is_empty()
            && number.chars().all(|c| c.is_ascii_digit())
    })
}

/// `section` of the ledger as rule → text.
fn ledger_section(ledger: &toml::Table, section: &str) -> BTreeMap<String, String> {
    ledger
        .get(section)
        .and_then(|v| v.as_table())
        .map(|t| {
            t.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// What the catalog rows, the cases, the always-on rules, faults and fuzz operations make.
struct Sources<'a> {
    protocol: &'static str,
    catalog: &'static str,
    rules_text: &'a str,
    ledger: &'a str,
    cases: Vec<String>,
    always_on: &'a [AlwaysOnRule],
    faults: Vec<(&'static str, &'static str)>,
    /// Fuzzer operations by the rule they are judged by.
    fuzz: BTreeMap<String, Vec<String>>,
}

fn build(sources: Sources<'_>) -> Result<CoverageMap, CoverageError> {
    let ledger: toml::Table =
        toml::from_str(sources.ledger).map_err(|e| CoverageError::Ledger(e.to_string()))?;
    let covered_by = ledger_section(&ledger, "covered_by");
    let not_covered = ledger_section(&ledger, "not_covered");
    let no_fault = ledger_section(&ledger, "no_fault_yet");
    let rule_of = |id: &str| id.split('/').next().unwrap_or_default().to_owned();
    let mut rules = Vec::new();
    let mut totals = Totals::default();
    for (id, level, section, rule) in catalog_rows(sources.rules_text) {
        // An invariant has no level in the catalog: the always-on check's, else MUST.
        let level = match sources.always_on.iter().find(|r| r.id == id) {
            Some(check) if level.is_empty() => check.level.as_str().to_owned(),
            _ if level.is_empty() => "MUST".to_owned(),
            _ => level,
        };
        let coverage = RuleCoverage {
            cases: sources
                .cases
                .iter()
                .filter(|case| rule_of(case) == id)
                .cloned()
                .collect(),
            always_on: sources
                .always_on
                .iter()
                .find(|r| r.id == id)
                .map(|r| r.unit.to_owned()),
            faults: sources
                .faults
                .iter()
                .filter(|(_, rule)| *rule == id)
                .map(|(name, _)| (*name).to_owned())
                .collect(),
            fuzz: sources.fuzz.get(&id).cloned().unwrap_or_default(),
            covered_by: covered_by.get(&id).cloned(),
            not_covered: not_covered.get(&id).cloned(),
            no_fault: no_fault.get(&id).cloned(),
            id,
            level,
            section,
            rule,
        };
        totals.rules += 1;
        totals.with_case += usize::from(!coverage.cases.is_empty());
        totals.always_on += usize::from(coverage.always_on.is_some());
        totals.with_fault += usize::from(!coverage.faults.is_empty());
        totals.with_fuzz += usize::from(!coverage.fuzz.is_empty());
        totals.covered_by += usize::from(coverage.covered_by.is_some());
        totals.not_covered += usize::from(coverage.not_covered.is_some());
        rules.push(coverage);
    }
    Ok(CoverageMap {
        protocol: sources.protocol,
        catalog: sources.catalog,
        totals,
        rules,
    })
}

/// `(operation, rules)` turned into rule → operations.
fn by_rule<'r, R: AsRef<str> + 'r>(
    operations: impl Iterator<Item = (&'r str, &'r [R])>,
) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (operation, rules) in operations {
        for rule in rules {
            map.entry(rule.as_ref().to_owned())
                .or_default()
                .push(operation.to_owned());
        }
    }
    map
}

/// The map of AHP's catalog (`docs/ahp/RULES.md`).
pub fn ahp() -> Result<CoverageMap, CoverageError> {
    let catalog = Catalog::embedded()?;
    build(Sources {
        protocol: "ahp",
        catalog: "docs/ahp/RULES.md",
        rules_text: AHP_RULES,
        ledger: AHP_LEDGER,
        cases: catalog.cases.iter().map(|c| c.info.id.clone()).collect(),
        always_on: ALWAYS_ON,
        faults: crate::host::Fault::ALL
            .iter()
            .map(|f| (f.name(), f.rule()))
            .collect(),
        fuzz: by_rule(crate::fuzz::coverage::OPERATIONS.iter().copied()),
    })
}

/// The map of AAP's catalog (`aap/RULES.md`). The AAP fuzzer's request sequences have no
/// named operations: its column lists `sequences` for the rules their expectations are
/// judged by, read from generated sequences ([`aap_fuzz_rules`]).
pub fn aap() -> Result<CoverageMap, CoverageError> {
    let cases = crate::aap::suite::AapCatalog::embedded()?.cases;
    let fuzzed = aap_fuzz_rules();
    let fuzzed: Vec<&str> = fuzzed.iter().map(String::as_str).collect();
    build(Sources {
        protocol: "aap",
        catalog: "aap/RULES.md",
        rules_text: AAP_RULES,
        ledger: AAP_LEDGER,
        cases: cases.iter().map(|c| c.info.id.clone()).collect(),
        always_on: AAP_ALWAYS_ON,
        faults: crate::aaphost::AapFault::ALL
            .iter()
            .map(|f| (f.name(), f.rule()))
            .collect(),
        fuzz: by_rule([("sequences", fuzzed.as_slice())].into_iter()),
    })
}

/// The rules the AAP fuzzer's expectations are judged by, over generated sequences (200
/// seeds) for an agent that declares every capability: an expectation's `relies_on`, or the
/// sequence's own rule (`aap::fuzz::OWN_RULE`) for one without.
pub fn aap_fuzz_rules() -> BTreeSet<String> {
    use crate::aap::fuzz::generate::{Generator, Rng};
    use crate::aap::suite::Step;
    let agent = crate::aap::agent::Agent {
        name: "every-capability".into(),
        info: serde_json::json!({
            "name": "every-capability",
            "capabilities": {
                "stream": { "delta": {}, "message": {} },
                "application": { "tools": {} },
                "history": { "full": {}, "compacted": {} }
            },
            "tools": [{ "name": "server_tool", "description": "x", "inputSchema": {} }]
        }),
    };
    let mut rules = BTreeSet::new();
    for seed in 0..200 {
        let mut generator = Generator::new(&agent);
        let mut rng = Rng::new(seed);
        for op in generator.sequence(&mut rng, 12) {
            for step in op {
                if let Step::Expect(expect) = step {
                    rules.insert(
                        expect
                            .relies_on
                            .unwrap_or_else(|| crate::aap::fuzz::OWN_RULE.to_string()),
                    );
                }
            }
        }
    }
    rules
}

impl CoverageMap {
    /// One line per rule (`ID  LEVEL  cases: … · always-on: … · faults: … · fuzz: …`, and
    /// the ledger's word where there is one), then the totals.
    pub fn render_text(&self) -> String {
        let list = |items: &[String]| {
            if items.is_empty() {
                "—".to_owned()
            } else {
                items.join(", ")
            }
        };
        let mut out = String::new();
        for r in &self.rules {
            let _ = write!(
                out,
                "{}  {}  cases: {} · always-on: {} · faults: {} · fuzz: {}",
                r.id,
                r.level,
                list(&r.cases),
                r.always_on.as_deref().unwrap_or("—"),
                list(&r.faults),
                list(&r.fuzz)
            );
            for (what, text) in [
                ("covered by", &r.covered_by),
                ("not covered", &r.not_covered),
                ("no fault", &r.no_fault),
            ] {
                if let Some(text) = text {
                    let _ = write!(out, " · {what}: {text}");
                }
            }
            out.push('\n');
        }
        let t = &self.totals;
        let _ = writeln!(
            out,
            "{} rules of {}: {} with a case, {} always on, {} with a fault, {} with a fuzzer \
             operation, {} checked under another rule, {} not covered",
            t.rules,
            self.catalog,
            t.with_case,
            t.always_on,
            t.with_fault,
            t.with_fuzz,
            t.covered_by,
            t.not_covered
        );
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_rows_read_id_level_section_and_rule() {
        let text = "## 1. Transport\n\n| ID | Lvl | Rule | Source | How |\n|---|---|---|---|---|\n\
                    | TRANSPORT-001 | MUST | Text frames. | x | y |\n| INV-SEQ-1 | MUST* | Seq. | x | y |\n\
                    | not-a-rule | MUST | z | x | y |\n## 17. Invariants\n| INV-FOLD-1 | Folds agree. |\n";
        let rows = catalog_rows(text);
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows[2],
            (
                "INV-FOLD-1".into(),
                String::new(),
                "17. Invariants".into(),
                "Folds agree.".into()
            )
        );
        assert_eq!(
            rows[0],
            (
                "TRANSPORT-001".into(),
                "MUST".into(),
                "1. Transport".into(),
                "Text frames.".into()
            )
        );
        assert_eq!(rows[1].1, "MUST*");
    }

    #[test]
    fn the_ahp_map_lists_every_rule_with_its_proofs() {
        let map = ahp().expect("map");
        assert!(map.totals.rules > 200, "{:?}", map.totals);
        let row = |id: &str| map.rules.iter().find(|r| r.id == id).expect(id);
        let sub004 = row("SUB-004");
        assert!(sub004.cases.iter().any(|c| c == "SUB-004"));
        assert!(sub004
            .faults
            .iter()
            .any(|f| f == "action-after-unsubscribe"));
        assert!(sub004.fuzz.iter().any(|f| f == "probe/unsubscribe"));
        assert!(row("TRANSPORT-002").always_on.is_some());
        assert!(row("STATUS-008").not_covered.is_some());
        assert!(row("INV-SEQ-1").covered_by.is_some());
        // Every rule has some proof or the ledger's word on why not.
        for r in &map.rules {
            assert!(
                !r.cases.is_empty()
                    || r.always_on.is_some()
                    || r.covered_by.is_some()
                    || r.not_covered.is_some(),
                "{} has no proof and no ledger entry",
                r.id
            );
        }
        let text = map.render_text();
        assert_eq!(text.lines().count(), map.rules.len() + 1);
        assert!(text
            .lines()
            .any(|l| l.starts_with("SUB-004  MUST  cases: SUB-004")));
    }

    #[test]
    fn the_aap_map_names_its_fuzzer_sequences() {
        let map = aap().expect("map");
        assert!(map.totals.rules > 30);
        assert!(map.totals.with_fuzz > 5, "{:?}", map.totals);
        let turn = map
            .rules
            .iter()
            .find(|r| r.id == "AAP-TURN-003")
            .expect("rule");
        assert_eq!(turn.fuzz, ["sequences"]);
    }
}
