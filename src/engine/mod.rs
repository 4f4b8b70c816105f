//! The AHP runner: selects cases, runs them (in parallel up to `jobs`, each on its own
//! connections and session) against the URL it is given, turns always-on check findings
//! into one row per rule, and emits events. It never starts a server, prints, writes files
//! or exits; the baseline is composition's to apply.

mod prerequisite;

use std::sync::Arc;

use futures_util::stream::{FuturesUnordered, StreamExt};
use tokio::sync::watch;

pub use crate::steps::{run_case, AgentsRead, AgentsUnread, CaseContext, CaseOutcome};
// compat: old paths of what moved to the ground floor and the client, removed after the
// parallel branches merge
pub use crate::catalog::{glob, Selection, Shard, ShardError};
pub use crate::client::Profile;
pub use crate::rows::{baseline, reconcile, Event, EventSink, Quiet};

use crate::catalog::CaseQueue;
use crate::checks::frame::Schemas;
use crate::checks::{AlwaysOnRule, ALWAYS_ON};
use crate::rows::{Rows, RunPlan, Started};
use crate::suite::{Case, Catalog, Step};
use crate::verdict::{CaseResult, Finding, RunReport};

/// What the AHP runner needs besides the plan every run has: the server's URL, the cases,
/// the schemas frames are checked against, the target profile, and the protocol version
/// connections offer.
#[derive(Debug, Clone)]
pub struct RunConfig {
    pub plan: RunPlan,
    pub url: String,
    pub catalog: Catalog,
    pub schemas: Schemas,
    pub profile: Profile,
    /// The protocol version connections offer (a step may name its own).
    pub protocol_version: String,
    /// Whether the cases' sessions and automations are removed at the run's end
    /// (`client::sweep`): the server outlives the run (a URL), and a catalog run left some
    /// 190 sessions and 10 automations on it.
    pub sweep: bool,
}

/// What a run has gathered so far: its rows, and the rules broken as the prerequisite of a
/// case, with the cases they blocked (charged to those rules' rows at the end).
struct Gathered {
    rows: Rows,
    prerequisites: prerequisite::Prerequisites,
    /// Sessions the host made for cases outside their namespace (see `RunConfig::sweep`).
    made_sessions: Vec<String>,
}

impl Gathered {
    /// Keeps the row of a case blocked by `finding`'s rule.
    fn blocked(&mut self, result: CaseResult, finding: Finding, sink: &mut dyn EventSink) {
        self.prerequisites
            .entry(finding.rule.clone())
            .or_default()
            .push((result.info.id.clone(), finding));
        self.rows.case(result, sink);
    }

    /// Takes in a case that ran: its row, what its always-on checks found and counted.
    fn absorb(&mut self, mut outcome: CaseOutcome, sink: &mut dyn EventSink) {
        self.made_sessions.append(&mut outcome.made_sessions);
        let always_on = &mut self.rows.always_on;
        always_on.looked_at(&outcome.counts, &outcome.skipped);
        let case = &outcome.result.info.id;
        for (located, context) in outcome.always_on {
            let at = format!("on {} in case {case}", located.conn);
            always_on.found(located.violation, &at, context);
        }
        match outcome.prerequisite {
            Some(finding) => self.blocked(outcome.result, finding, sink),
            None => self.rows.case(outcome.result, sink),
        }
    }
}

/// Every case's context: the run's settings plus its own token and re-run command.
fn case_contexts(
    config: &RunConfig,
    nonce: &str,
    cases: &[&Case],
    agent_capabilities: &Result<AgentsRead, AgentsUnread>,
) -> Vec<CaseContext> {
    let rule_levels = Arc::new(config.catalog.rule_levels());
    cases
        .iter()
        .enumerate()
        .map(|(index, case)| CaseContext {
            url: config.url.clone(),
            schemas: config.schemas.clone(),
            profile: config.profile.clone(),
            timeout: config.plan.timeout,
            token: format!("{nonce}-{index}"),
            rerun: config.plan.rerun(&case.info.id),
            agent_capabilities: agent_capabilities.clone(),
            rule_levels: Arc::clone(&rule_levels),
            offer: config.protocol_version.clone(),
            settled: Default::default(),
        })
        .collect()
}

/// A server whose initialize failed for the run blocks, at once, every case that would only
/// fail the same initialize again after its own timeout. Returns the indexes left to run.
fn block_unstartable(
    config: &RunConfig,
    cases: &[&Case],
    contexts: &[CaseContext],
    agent_capabilities: &Result<AgentsRead, AgentsUnread>,
    gathered: &mut Gathered,
    sink: &mut dyn EventSink,
) -> Vec<usize> {
    let mut to_run: Vec<usize> = Vec::with_capacity(cases.len());
    for (index, case) in cases.iter().enumerate() {
        let (why, unanswered) = match agent_capabilities {
            Err(AgentsUnread::Server(why)) => (why, false),
            Err(AgentsUnread::Unanswered(why)) => (why, true),
            _ => {
                to_run.push(index);
                continue;
            }
        };
        let rerun = contexts[index].rerun.clone();
        let offer = &config.protocol_version;
        match prerequisite::blocked_before_running(case, why, offer, rerun, unanswered) {
            Some((result, finding)) => gathered.blocked(result, finding, sink),
            None => to_run.push(index),
        }
    }
    if let (Err(AgentsUnread::Server(why) | AgentsUnread::Unanswered(why)), false) =
        (agent_capabilities, gathered.rows.is_empty())
    {
        sink.event(&Event::Notice(format!(
            "the server answered no initialize ({why}): INIT-001 fails and the {} cases that start with one are blocked without running",
            gathered.rows.len()
        )));
    }
    to_run
}

/// Runs the selected cases. Stops early (keeping what it has) when `interrupt` turns true.
/// The report is the run's alone: the baseline is not applied.
pub async fn run(
    config: &RunConfig,
    sink: &mut dyn EventSink,
    mut interrupt: watch::Receiver<bool>,
) -> RunReport {
    let started = Started::now();
    let plan = &config.plan;
    let cases: Vec<&Case> = plan.selection.cases(&config.catalog);
    let always_on: Vec<&AlwaysOnRule> = ALWAYS_ON
        .iter()
        .filter(|rule| plan.selection.includes(rule.id, rule.level))
        .collect();
    let total = cases.len() + always_on.len();
    sink.event(&Event::RunStarted { cases: total });
    let mut gathered = Gathered {
        rows: Rows::new(total),
        prerequisites: prerequisite::Prerequisites::new(),
        made_sessions: Vec::new(),
    };
    let mut interrupted = *interrupt.borrow();
    // Reading the capabilities waits on the server: let Ctrl-C cut it short too.
    let agent_capabilities = tokio::select! {
        capabilities = prerequisite::agent_capabilities(config) => capabilities,
        _ = wait_for_interrupt(&mut interrupt) => {
            interrupted = true;
            Err(AgentsUnread::Harness("the run was interrupted".to_owned()))
        }
    };
    let nonce = crate::client::unique_token("");
    let contexts = Arc::new(case_contexts(config, &nonce, &cases, &agent_capabilities));
    let mut to_run: Vec<usize> = if interrupted {
        (0..cases.len()).collect()
    } else {
        block_unstartable(
            config,
            &cases,
            &contexts,
            &agent_capabilities,
            &mut gathered,
            sink,
        )
    };
    longest_waiters_first(&cases, &mut to_run);
    let mut queue = CaseQueue::new(&cases, to_run);
    let mut pending = FuturesUnordered::new();
    let jobs = plan.jobs.max(1);
    while !interrupted && (!queue.is_empty() || !pending.is_empty()) {
        while pending.len() < jobs {
            let Some(index) = queue.start() else {
                break;
            };
            let case = cases[index];
            let contexts = Arc::clone(&contexts);
            pending.push(async move { (index, run_case(case, &contexts[index]).await) });
        }
        tokio::select! {
            Some((index, outcome)) = pending.next() => {
                queue.finished(index);
                gathered.absorb(outcome, sink);
            }
            changed = interrupt.changed() => {
                if changed.is_err() || *interrupt.borrow() {
                    interrupted = true;
                }
            }
        }
    }
    if config.sweep && !interrupted {
        // Every case named its sessions `ahp-session:/{nonce}-{index}…`.
        let client_id = format!("ahpspec-{nonce}-sweep");
        let made = &gathered.made_sessions;
        crate::client::sweep_at(&config.url, &client_id, &nonce, made, plan.timeout).await;
    }
    gathered
        .rows
        .order_as(cases.iter().map(|c| c.info.id.as_str()));
    if !interrupted {
        let over = <Step as crate::catalog::SuiteFormat>::ALWAYS_ON_OVER;
        gathered.rows.always_on_rows(&always_on, over, plan, sink);
    }
    let Gathered {
        rows,
        prerequisites,
        ..
    } = gathered;
    let mut results = rows.into_results();
    for result in prerequisite::charge_prerequisites(&mut results, prerequisites, config) {
        sink.event(&Event::CaseFinished {
            result: Box::new(result),
            done: total,
            total,
        });
    }
    let report = plan.report(
        config.protocol_version.clone(),
        &started,
        interrupted,
        results,
    );
    sink.event(&Event::RunFinished);
    report
}

/// Orders `to_run` (indexes into `cases`) longest expected wait first, otherwise as it was
/// (file order): a case that waits out a timer then overlaps the others instead of ending
/// the run.
fn longest_waiters_first(cases: &[&Case], to_run: &mut [usize]) {
    to_run.sort_by_key(|&index| std::cmp::Reverse(expected_wait(cases[index])));
}

/// How long `case` waits whatever the server does: what the suite declares (`waits_ms`)
/// and its silence windows, which are always waited out in full.
fn expected_wait(case: &Case) -> u64 {
    let silences: u64 = case
        .steps
        .iter()
        .filter_map(|located| match &located.step {
            Step::Silence(silence) => Some(silence.for_ms),
            _ => None,
        })
        .sum();
    case.waits_ms + silences
}

/// Resolves once `interrupt` turns true (never, when its sender is gone without doing so).
async fn wait_for_interrupt(interrupt: &mut watch::Receiver<bool>) {
    loop {
        if *interrupt.borrow() {
            return;
        }
        if interrupt.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_waits_and_silences_start_first_and_the_rest_keep_file_order() {
        let text = r#"
page = "t"
[[case]]
id = "INIT-001/a"
level = "MUST"
spec = "s"
requirement = "r"
does = "d"
steps = [ { initialize = {} } ]
[[case]]
id = "INIT-001/b"
level = "MUST"
spec = "s"
requirement = "r"
does = "d"
steps = [ { initialize = {} }, { silence = { for_ms = 200 } } ]
[[case]]
id = "INIT-001/c"
level = "MUST"
spec = "s"
requirement = "r"
does = "d"
steps = [ { initialize = {} } ]
[[case]]
id = "INIT-001/d"
level = "MUST"
spec = "s"
requirement = "r"
does = "d"
waits_ms = 1000
steps = [ { initialize = {} } ]
"#;
        let catalog = Catalog::from_texts([("t.toml".to_owned(), text.to_owned())])
            .expect("the suite parses");
        let cases: Vec<&Case> = catalog.cases.iter().collect();
        let mut to_run: Vec<usize> = (0..cases.len()).collect();
        longest_waiters_first(&cases, &mut to_run);
        let ids: Vec<&str> = to_run.iter().map(|&i| cases[i].info.id.as_str()).collect();
        assert_eq!(
            ids,
            ["INIT-001/d", "INIT-001/b", "INIT-001/a", "INIT-001/c"]
        );
    }
}
