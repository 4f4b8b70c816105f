//! `check` (assertions on a value an earlier step stored) and `any_of` (alternatives, each a
//! list of steps): for requirements that allow more than one conforming answer, such as
//! the two forms of a `reconnect` result.

use std::collections::BTreeMap;

use serde_json::Value;

use super::{DocChecks, Runner, StepResult, Stop};
use crate::suite::{ExpectCheck, Matches, Step};
use crate::verdict::Finding;

impl Runner<'_> {
    pub(super) fn expect_check(&mut self, s: &ExpectCheck) -> StepResult {
        let value = self.subst(&Value::String(s.value.clone()))?;
        for (pointer, kind) in &s.types {
            let member = value.pointer(pointer);
            if !member.is_some_and(|m| kind.holds(m)) {
                return self.broken(
                    &s.level,
                    &s.on,
                    format!("{pointer} is of type {}", kind.as_str()),
                    match member {
                        Some(m) => format!("{pointer} = {m}"),
                        None => format!("{pointer} is absent"),
                    },
                );
            }
        }
        for (pointer, bound) in &self.subst_matches(&s.above)? {
            let member = value.pointer(pointer);
            let above = match (member.and_then(Value::as_f64), bound.as_f64()) {
                (Some(m), Some(b)) => m > b,
                _ => false,
            };
            if !above {
                return self.broken(
                    &s.level,
                    &s.on,
                    format!("{pointer} greater than {bound}"),
                    member.map_or_else(
                        || format!("{pointer} is absent"),
                        |m| format!("{pointer} = {m}"),
                    ),
                );
            }
        }
        for (pointer, other) in &self.subst_matches(&s.differs)? {
            let member = value.pointer(pointer);
            if member.is_none_or(|m| crate::client::json_equal(m, other)) {
                return self.broken(
                    &s.level,
                    &s.on,
                    format!("{pointer} present and not {other}"),
                    member.map_or_else(
                        || format!("{pointer} is absent"),
                        |m| format!("{pointer} = {m}"),
                    ),
                );
            }
        }
        for (pointer, wanted) in &s.in_order {
            let wanted: Vec<Value> = wanted
                .iter()
                .map(|element| self.subst(element))
                .collect::<Result<_, _>>()?;
            let items = value
                .pointer(pointer)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let mut next = wanted.iter().peekable();
            for item in items {
                if next
                    .peek()
                    .is_some_and(|w| super::document::partial_match(item, w))
                {
                    next.next();
                }
            }
            if let Some(missing) = next.next() {
                return self.broken(
                    &s.level,
                    &s.on,
                    format!(
                        "{pointer} holds {} in this order",
                        Value::Array(wanted.clone())
                    ),
                    format!(
                        "no {missing} after the ones before it in {}",
                        crate::checks::frame::clip(&Value::Array(items.to_vec()).to_string())
                    ),
                );
            }
        }
        let no_bits = BTreeMap::new();
        let no_bounds = Matches::new();
        let checks = DocChecks {
            has: &s.has,
            lacks: &s.lacks,
            equals: &s.equals,
            one_of: &s.one_of,
            len: &s.len,
            bits_set: &no_bits,
            bits_clear: &no_bits,
            at_most: &no_bounds,
            contains: &s.contains,
            excludes: &s.excludes,
        };
        self.judge_document(&value, &checks, &s.level, &s.on)
    }

    /// Runs the alternatives in order until one passes. Notes recorded by a failed
    /// alternative are dropped with it; when all fail, the failure lists each one's miss.
    /// Only a miss of the case's own rule moves on to the next alternative: a step that
    /// another rule's failure blocked (a prerequisite), or one that ends the case otherwise
    /// (`not_applicable`), ends it here.
    pub(super) async fn any_of(&mut self, alternatives: &[Vec<Step>]) -> StepResult {
        let mut misses: Vec<Finding> = Vec::new();
        for steps in alternatives {
            let noted = self.findings.len();
            match self.run_alternative(steps).await {
                Ok(()) => return Ok(()),
                Err(Stop::Broken(finding)) => {
                    self.findings.truncate(noted);
                    misses.push(*finding);
                }
                Err(other) => return Err(other),
            }
        }
        let Some(last) = misses.last().cloned() else {
            return Err(Stop::Harness(format!(
                "{}: any_of without alternatives",
                self.at
            )));
        };
        let numbered = |part: fn(&Finding) -> &str| {
            misses
                .iter()
                .enumerate()
                .map(|(index, miss)| format!("({}) {}", index + 1, part(miss)))
                .collect::<Vec<_>>()
                .join("; ")
        };
        Err(Stop::Broken(Box::new(Finding {
            expected: format!("one of: {}", numbered(|m| &m.expected)),
            actual: numbered(|m| &m.actual),
            ..last
        })))
    }

    /// Runs one alternative's steps, each under its own `relies_on` (as the case's steps
    /// are); the `any_of` step's own is restored afterwards.
    async fn run_alternative(&mut self, steps: &[Step]) -> StepResult {
        let outer = self.relies_on.clone();
        let mut outcome = Ok(());
        for step in steps {
            self.relies_on = step.relies_on().map(str::to_owned);
            self.names.note(step);
            outcome = Box::pin(self.step(step)).await;
            if outcome.is_err() {
                break;
            }
        }
        self.relies_on = outer;
        outcome
    }
}
