//! `check` (assertions on a value an earlier step stored) and `any_of` (alternatives, each a
//! list of steps): for requirements that allow more than one conforming answer, such as
//! the two forms of a `reconnect` result.

use serde_json::Value;

use super::{Runner, StepResult, Stop};
use crate::client::Conn;
use crate::suite::{Asserting, ExpectCheck, Step};
use crate::verdict::Finding;

impl Runner<'_> {
    pub(super) fn expect_check(&mut self, s: &Asserting<ExpectCheck>) -> StepResult {
        let mut value = self.subst(&Value::String(s.value.clone()))?;
        for (pointer, partial) in &self.subst_matches(&s.select)? {
            let items = value.pointer(pointer).and_then(Value::as_array);
            let Some(found) = items.and_then(|items| {
                items
                    .iter()
                    .find(|item| super::document::partial_match(item, partial))
            }) else {
                let expected = format!("{pointer} holds an element matching {partial}");
                let actual = match value.pointer(pointer) {
                    Some(member) => crate::checks::frame::clip(&member.to_string()),
                    None => format!("{pointer} is absent"),
                };
                return self.broken(&s.level, &s.on, expected, actual);
            };
            value = found.clone();
        }
        if let Some(name) = &s.store_as {
            self.vars.set(name, value.clone());
        }
        self.judge_document(&value, &s.assert, &s.level, &s.on)
    }

    /// Runs the alternatives in order until one passes. Notes recorded by a failed
    /// alternative are dropped with it, and so is what it consumed of the connections'
    /// backlogs: the next alternative sees the frames it would have seen had the failed one
    /// not run (an echo the first alternative read and judged is still there for the
    /// second). When all fail, the failure lists each one's miss.
    /// Only a miss of the case's own rule moves on to the next alternative: a step that
    /// another rule's failure blocked (a prerequisite), or one that ends the case otherwise
    /// (`not_applicable`), ends it here.
    pub(super) async fn any_of(&mut self, alternatives: &[Vec<Step>]) -> StepResult {
        let mut misses: Vec<Finding> = Vec::new();
        for steps in alternatives {
            let noted = self.findings.len();
            self.conns.values_mut().for_each(Conn::mark_backlog);
            let outcome = self.run_alternative(steps).await;
            match outcome {
                Err(Stop::Broken(finding)) => {
                    self.conns.values_mut().for_each(Conn::rewind_backlog);
                    self.findings.truncate(noted);
                    misses.push(*finding);
                }
                ended => {
                    self.conns.values_mut().for_each(Conn::release_backlog);
                    return ended;
                }
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
