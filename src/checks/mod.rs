//! Checks: small functions over frames, history and state that say whether a rule held.
//! No I/O, no sleeping, no printing. Two tiers:
//! - always-on checks ([`frame`], [`mirror`], [`invariants`]) run on every frame of every
//!   connection; each is reported as one case row under its own rule ID, with the number of
//!   things it looked at;
//! - case expectations (in the engine) judge what a scenario asks for.

pub mod action_decode;
pub mod compare;
pub mod delivery;
pub mod error_data;
pub mod fold_owner;
pub mod frame;
pub mod invariants;
pub mod malformed;
pub mod mirror;
pub mod rejected;
pub mod replayed;
pub mod resnapshot;
pub mod rpc;
mod rules;
pub mod schedule;
pub mod stream;
pub mod terminals;
pub mod toolcalls;
pub mod words;

pub use crate::fasthash::{FastHasher, FastMap, FastSet};
use crate::verdict::Level;
pub use rules::{Rule, AAP_ALWAYS_ON, ALWAYS_ON};

/// A rule broken by the server, found by an always-on check.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    pub rule: Rule,
    pub expected: String,
    pub actual: String,
    /// The envelope origin involved, when the rule is about one (lets the runner tell a
    /// harness client's echo from a host-originated action).
    pub origin: Option<(String, i64)>,
}

impl Violation {
    /// Whether this is ENV-005 flagging the echo of a client's own dispatch (`own` says
    /// which client and clientSeq are): an origin on a host-only action type that echoes a
    /// dispatch is that dispatch's business (DISPATCH-006), not a host action carrying an
    /// origin, so runners drop it.
    pub fn is_own_echo(&self, own: impl Fn(&str, i64) -> bool) -> bool {
        self.rule == Rule::Env005
            && self
                .origin
                .as_ref()
                .is_some_and(|(client, seq)| own(client, *seq))
    }

    pub fn new(rule: Rule, expected: impl Into<String>, actual: impl Into<String>) -> Self {
        Violation {
            rule,
            expected: expected.into(),
            actual: actual.into(),
            origin: None,
        }
    }
}

/// What the report says about an always-on rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AlwaysOnRule {
    pub rule: Rule,
    pub id: &'static str,
    pub level: Level,
    pub area: &'static str,
    pub spec: &'static str,
    pub requirement: &'static str,
    /// What one unit of work is, for "looked at N …".
    pub unit: &'static str,
}

/// Items an always-on rule could not judge, by rule and reason: they are reported as
/// skipped, never counted as checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Skips(std::collections::BTreeMap<Rule, std::collections::BTreeMap<&'static str, usize>>);

impl Skips {
    /// Records `n` items of `rule` skipped because of `why`.
    pub fn add(&mut self, rule: Rule, why: &'static str, n: usize) {
        if n > 0 {
            *self.0.entry(rule).or_default().entry(why).or_insert(0) += n;
        }
    }

    /// Adds every skip of `other`.
    pub fn merge(&mut self, other: &Skips) {
        for (rule, reasons) in &other.0 {
            for (why, n) in reasons {
                self.add(*rule, why, *n);
            }
        }
    }

    /// The skips of `rule`: (why, how many), by reason.
    pub fn of(&self, rule: Rule) -> Vec<(&'static str, usize)> {
        self.0
            .get(&rule)
            .map(|reasons| reasons.iter().map(|(why, n)| (*why, *n)).collect())
            .unwrap_or_default()
    }
}

/// How an always-on row ends: broken, not testable (it judged nothing), or passed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowOutcome {
    Broken,
    NotTestable,
    Passed,
}

/// The outcome and summary line of an always-on rule's row, from the number of violations,
/// the items checked, the items skipped (why, how many) and the first violation (expected,
/// actual). A row that checked nothing is not a pass, whatever it skipped.
pub fn row_summary(
    unit: &str,
    violations: usize,
    checked: usize,
    skipped: &[(&str, usize)],
    first: Option<(&str, &str)>,
) -> (RowOutcome, String) {
    let total: usize = skipped.iter().map(|(_, n)| n).sum();
    let skips = if total == 0 {
        String::new()
    } else {
        let reasons: Vec<String> = skipped
            .iter()
            .map(|(why, n)| format!("{why}: {n}"))
            .collect();
        format!(", skipped {total} ({})", reasons.join("; "))
    };
    match first {
        Some((expected, actual)) if violations > 0 => (
            RowOutcome::Broken,
            format!("{violations} violation(s) in {checked} {unit}{skips}; first: expected {expected}; got {actual}"),
        ),
        _ if checked == 0 && total == 0 => (
            RowOutcome::NotTestable,
            format!("Not testable: no {unit} were seen during the run"),
        ),
        _ if checked == 0 => (
            RowOutcome::NotTestable,
            format!("Not testable: checked no {unit}{skips}"),
        ),
        _ => (
            RowOutcome::Passed,
            format!("checked {checked} {unit}{skips}; no violation"),
        ),
    }
}

/// Looks an always-on rule up.
pub fn always_on(id: &str) -> Option<&'static AlwaysOnRule> {
    ALWAYS_ON.iter().find(|rule| rule.id == id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_add_up_by_rule_and_reason() {
        let mut skips = Skips::default();
        skips.add(Rule::InvFold1, "no snapshot", 1);
        skips.add(Rule::InvFold1, "ahead", 0);
        let mut other = Skips::default();
        other.add(Rule::InvFold1, "no snapshot", 2);
        other.add(Rule::Transport003, "closed", 1);
        skips.merge(&other);
        assert_eq!(skips.of(Rule::InvFold1), vec![("no snapshot", 3)]);
        assert_eq!(skips.of(Rule::Transport003), vec![("closed", 1)]);
        assert!(skips.of(Rule::Env003).is_empty());
    }

    #[test]
    fn a_row_that_compared_nothing_is_not_a_pass() {
        let why = [("the observer got no snapshot", 2)];
        let (outcome, summary) = row_summary("mirror comparisons", 0, 0, &why, None);
        assert_eq!(outcome, RowOutcome::NotTestable);
        assert_eq!(
            summary,
            "Not testable: checked no mirror comparisons, skipped 2 (the observer got no snapshot: 2)"
        );
        let (outcome, _) = row_summary("responses", 0, 0, &[], None);
        assert_eq!(outcome, RowOutcome::NotTestable);
    }

    #[test]
    fn a_row_says_what_it_compared_and_what_it_skipped() {
        let why = [("ahead", 1), ("no snapshot", 2)];
        let (outcome, summary) = row_summary("mirror comparisons", 0, 5, &why, None);
        assert_eq!(outcome, RowOutcome::Passed);
        assert_eq!(
            summary,
            "checked 5 mirror comparisons, skipped 3 (ahead: 1; no snapshot: 2); no violation"
        );
        let (outcome, summary) = row_summary("responses", 0, 4, &[], None);
        assert_eq!(outcome, RowOutcome::Passed);
        assert_eq!(summary, "checked 4 responses; no violation");
        let (outcome, summary) = row_summary("responses", 1, 4, &[], Some(("a", "b")));
        assert_eq!(outcome, RowOutcome::Broken);
        assert_eq!(
            summary,
            "1 violation(s) in 4 responses; first: expected a; got b"
        );
    }
}
