//! Runs a catalog case as one of a sequence's operations (`case/<ID>`): the case's steps
//! through the one step interpreter, on connections of the case's own, while the sequence's
//! clients, session and turns stand. The case judges the host amid that traffic; a broken
//! expectation is the failure of the rule it checks, and the rest of the sequence runs on.

use std::sync::Arc;

use super::probes::probe_failure;
use super::{Failure, Run};
use crate::steps::{agents_in, run_case, AgentsUnread, CaseContext};
use crate::suite::Step;

impl Run<'_> {
    /// Runs the catalog case `id`; a failure names the rule it broke. A case the catalog
    /// does not hold (a trace from another catalog) is run as nothing, and said so.
    pub(super) async fn case(&mut self, index: usize, id: &str) -> Option<Failure> {
        let catalog = self.cfg.catalog.clone()?;
        let Some(case) = catalog.cases.iter().find(|case| case.info.id == id) else {
            self.exec
                .skipped_cases
                .push(format!("{id} (operation {index}): not in the catalog"));
            return None;
        };
        let steps: Vec<Step> = case.steps.iter().map(|s| s.step.clone()).collect();
        let agents = match &self.first_init {
            Some(init) => agents_in(init, self.cfg.profile.provider.as_deref()),
            None => Err(AgentsUnread::Harness(
                "the sequence's first client has no initialize answer".into(),
            )),
        };
        // The cases that need a workspace get the one the routines use: the profile's, or
        // the built-in host's own (as `certify` hands the catalog the host's).
        let mut profile = self.cfg.profile.clone();
        profile.workspace = self.workspace.clone();
        let base = self.step_context(&steps, crate::verdict::rule_of(id));
        let ctx = CaseContext {
            profile,
            token: format!("{}-case{index}", self.token),
            agent_capabilities: agents,
            rule_levels: Arc::clone(
                self.case_levels
                    .get_or_insert_with(|| Arc::new(catalog.rule_levels())),
            ),
            ..base
        };
        // Boxed: a case's future is large in a debug build (see `Run::go`).
        let mut outcome = Box::pin(run_case(case, &ctx)).await;
        self.made.append(&mut outcome.made_sessions);
        // What the always-on checks found on the case's connections is reported by the next
        // `checks`, named as the case's.
        self.pending
            .extend(outcome.always_on.into_iter().map(|(mut found, _)| {
                found.conn = format!("{} of case {id}", found.conn);
                found
            }));
        if let Some(failure) = probe_failure(outcome.result, outcome.prerequisite, index) {
            return Some(failure);
        }
        self.settle().await;
        self.checks(Some(index))
    }
}
