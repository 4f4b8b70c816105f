//! Runs a protocol probe the fuzzer mixes into its sequences: the probe's typed steps
//! ([`crate::fuzz::probes`]) through the one step interpreter ([`crate::steps`]), on the
//! run's clients (lent to it by name) and on connections of the probe's own. A broken
//! expectation is the failure of the rule it checks; the rest of the sequence runs on.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::{Failure, Run};
use crate::catalog::{Case, Located};
use crate::checks::Rule;
use crate::client::{Conn, DEFAULT_OFFER};
use crate::fuzz::ops::Probe;
use crate::fuzz::probes::{probe_steps, ProbeSteps};
use crate::steps::{run_lent, CaseContext, CaseOutcome};
use crate::suite::Step;
use crate::verdict::{rule_of, CaseInfo, Level, Verdict};

/// The steps a probe ran (the `op_index`th operation), as `--to-case` writes them: none
/// when the host offered nothing to probe (it ended not applicable or not testable).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Probed {
    pub op_index: usize,
    pub steps: Vec<Step>,
}

impl Run<'_> {
    /// The context `steps` run in on this sequence's server (a probe's, or the base of a
    /// case's): the run's profile and token, no agent capabilities (probes name none), and
    /// among the rules the steps rest on or judge (`rule` with them), those whose verdict
    /// the campaign has settled, so their waits end at a ping.
    pub(super) fn step_context(&self, steps: &[Step], rule: &str) -> CaseContext {
        let settled = rules_of(steps)
            .chain([rule])
            .filter(|id| Rule::from_id(id).is_some_and(|rule| self.cfg.settled(rule)))
            .map(str::to_owned)
            .collect();
        CaseContext {
            url: self.url.clone(),
            schemas: self.cfg.schemas.clone(),
            profile: self.cfg.profile.clone(),
            timeout: self.cfg.timeout,
            token: self.token.clone(),
            rerun: String::new(),
            agent_capabilities: Ok(crate::steps::AgentsRead {
                capabilities: Value::Null,
                protects_resources: false,
            }),
            rule_levels: Arc::default(),
            offer: DEFAULT_OFFER.to_owned(),
            settled,
        }
    }

    /// Runs `probe` on client `client`; a failure names the rule it broke.
    pub(super) async fn probe(
        &mut self,
        index: usize,
        client: usize,
        probe: Probe,
    ) -> Option<Failure> {
        let probed = probe_steps(probe, index, client, self.conns.len());
        let outcome = self.run_probe(index, probe, &probed).await;
        let verdict = outcome.result.verdict;
        let applied = !matches!(verdict, Verdict::NotApplicable | Verdict::NotTestable);
        self.exec.probed.push(Probed {
            op_index: index,
            steps: if applied { probed.steps } else { Vec::new() },
        });
        // What the always-on checks found on the way is reported by the next `checks`.
        self.pending
            .extend(outcome.always_on.into_iter().map(|(found, _)| found));
        if let Some(failure) = probe_failure(outcome.result, outcome.prerequisite, index) {
            return Some(failure);
        }
        self.settle().await;
        self.checks(Some(index))
    }

    /// Runs the probe's steps as a case of its rule, on the clients lent by name (`c1`…),
    /// with the run's names set: `${S}`, `${S.chat}`, `${cN.clientId}`, `${c1.init}`.
    async fn run_probe(&mut self, index: usize, probe: Probe, probed: &ProbeSteps) -> CaseOutcome {
        let name = format!("{probe:?}");
        let info = CaseInfo {
            id: format!("{}/probe", probed.rule.id()),
            level: Level::Must,
            area: "fuzz".into(),
            spec: String::new(),
            requirement: String::new(),
            does: format!("the {name} probe"),
            source: format!("probe {name} (operation {index})"),
        };
        let steps = probed
            .steps
            .iter()
            .enumerate()
            .map(|(at, step)| Located {
                step: step.clone(),
                at: format!("probe {name} (operation {index}), step {}", at + 1),
            })
            .collect();
        let case = Case::of_steps(info, steps);
        let ctx = self.step_context(&probed.steps, probed.rule.id());
        let mut preset = vec![
            ("S".to_owned(), json!(self.session)),
            ("S.chat".to_owned(), json!(self.chat)),
        ];
        if let Some(init) = &self.first_init {
            preset.push(("c1.init".to_owned(), init.clone()));
        }
        let order: Vec<String> = self.conns.iter().map(|c| c.name.clone()).collect();
        let lent: BTreeMap<String, Conn> = std::mem::take(&mut self.conns)
            .into_iter()
            .map(|conn| {
                let id = json!(conn.client_id());
                preset.push((format!("{}.clientId", conn.name), id));
                (conn.name.clone(), conn)
            })
            .collect();
        let (mut outcome, mut back) = run_lent(&case, &ctx, lent, preset).await;
        self.conns = order.iter().filter_map(|name| back.remove(name)).collect();
        self.made.append(&mut outcome.made_sessions);
        outcome
    }
}

/// The rules the steps name (`relies_on`), alternatives included.
fn rules_of(steps: &[Step]) -> impl Iterator<Item = &str> {
    steps.iter().flat_map(|step| {
        let inner: Vec<&str> = match step {
            Step::AnyOf(any) => any
                .alternatives
                .iter()
                .flat_map(|steps| rules_of(steps).collect::<Vec<_>>())
                .collect(),
            _ => Vec::new(),
        };
        step.relies_on().into_iter().chain(inner)
    })
}

/// What a probe's outcome says of the host: the rule a broken expectation checks, or the
/// rule a step relied on; a probe the harness could not run (a new connection refused) is
/// FUZZ-001's matter, as the host stopped serving.
pub(super) fn probe_failure(
    result: crate::verdict::CaseResult,
    prerequisite: Option<crate::verdict::Finding>,
    index: usize,
) -> Option<Failure> {
    if result.verdict == Verdict::HarnessError {
        return Some(Failure {
            rule: Rule::Fuzz001,
            expected: "the host keeps serving (the probe's connections and answers)".into(),
            actual: result.summary,
            op_index: Some(index),
        });
    }
    let broken = matches!(
        result.verdict,
        Verdict::Fail | Verdict::Warn | Verdict::Blocked
    );
    let finding = match prerequisite {
        Some(finding) => finding,
        None if broken => result.findings.into_iter().last()?,
        None => return None,
    };
    Some(Failure {
        rule: Rule::from_id(rule_of(&finding.rule)).unwrap_or(Rule::Fuzz001),
        expected: finding.expected,
        actual: finding.actual,
        op_index: Some(index),
    })
}
