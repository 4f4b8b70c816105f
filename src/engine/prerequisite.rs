//! Prerequisites: rules that cases rely on before they reach their own (initialize, a
//! ready session, a subscription, or a step's `relies_on`). A prerequisite the server
//! breaks is reported once, on that rule's row, and every case it stopped is blocked.

use std::collections::BTreeMap;

use super::RunConfig;
use crate::checks::Rule;
pub use crate::steps::{AgentsRead, AgentsUnread};
use crate::suite::{Case, Step};
use crate::transport::TransportError;
use crate::verdict::{CaseInfo, CaseResult, Finding, Level, Verdict};

/// Rules broken as a prerequisite, each with the cases it blocked and the finding.
pub(super) type Prerequisites = BTreeMap<String, Vec<(String, Finding)>>;

/// When the run's own `initialize` (the one that reads the agents) failed, a case that
/// starts by initialising with the default offer would only repeat that failure after a
/// timeout of its own: it is blocked by INIT-001 at once, without running. Cases that
/// first do something else (ping before initialize, malformed frames), INIT-001's own
/// cases and, unless the server answered no initialize at all, initializes of their own
/// (another offer, sent without waiting, charged to another rule) still run.
pub(super) fn blocked_before_running(
    case: &Case,
    why: &str,
    offer: &str,
    rerun: String,
    unanswered: bool,
) -> Option<(CaseResult, Finding)> {
    let first = case.steps.first()?;
    let Step::Initialize(init) = &first.step else {
        return None;
    };
    let own = crate::verdict::rule_of(&case.info.id) == Rule::Init001;
    // A server that answers no initialize at all answers none of these either.
    let own_kind = init.versions.is_some() || init.relies_on.is_some() || init.send_only;
    if own || (own_kind && !unanswered) {
        return None;
    }
    let finding = Finding {
        rule: Rule::Init001.to_string(),
        verdict: Verdict::Fail,
        expected: format!("an initialize result for [{offer:?}]"),
        actual: why.to_owned(),
        step: Some(first.at.clone()),
        context: Vec::new(),
    };
    let result = CaseResult {
        info: case.info.clone(),
        verdict: Verdict::Blocked,
        summary: format!(
            "Blocked by INIT-001 (not run: the run's own initialize already failed): {why}"
        ),
        findings: vec![finding.clone()],
        blocked_by: Some(Rule::Init001.to_string()),
        protocol_version: None,
        transcript: Vec::new(),
        duration_ms: 0.0,
        rerun,
    };
    Some((result, finding))
}

/// Reports each rule broken as a prerequisite once, on that rule's row: an existing row
/// (its case, or its always-on check) takes the findings and fails at the rule's level; a
/// rule without a row in this run gets one. Returns the rows it changed or added.
pub(super) fn charge_prerequisites(
    results: &mut Vec<CaseResult>,
    prerequisites: BTreeMap<String, Vec<(String, Finding)>>,
    config: &RunConfig,
) -> Vec<CaseResult> {
    let mut changed = Vec::new();
    for (rule, blocked) in prerequisites {
        let cases: Vec<&str> = blocked.iter().map(|(case, _)| case.as_str()).collect();
        let note = format!(
            "broken as a prerequisite of {} case(s): {}",
            cases.len(),
            clip_list(&cases)
        );
        let level = blocked[0].1.verdict;
        let mut findings: Vec<Finding> = blocked
            .iter()
            .map(|(case, finding)| Finding {
                actual: format!("{} (in case {case})", finding.actual),
                ..finding.clone()
            })
            .collect();
        findings.truncate(20);
        let first = &findings[0];
        let index = results.iter().position(|r| r.info.id == rule).or_else(|| {
            results
                .iter()
                .position(|r| crate::verdict::rule_of(&r.info.id) == rule)
        });
        let row = match index {
            Some(index) => {
                let row = &mut results[index];
                if matches!(row.verdict, Verdict::Fail | Verdict::Warn) {
                    row.summary = format!("{}; also {note}", row.summary);
                } else {
                    row.summary = format!(
                        "{note}; first: expected {}; got {}",
                        first.expected, first.actual
                    );
                }
                row.verdict = row.verdict.worst(level);
                row.blocked_by = None;
                row.findings.extend(findings);
                row.clone()
            }
            None => {
                let info = config.catalog.rule(&rule).unwrap_or_else(|| CaseInfo {
                    id: rule.clone(),
                    level: Level::Must,
                    area: "prerequisites".to_owned(),
                    spec: "RULES.md".to_owned(),
                    requirement: format!("{rule} (relied on by other cases)"),
                    does: String::new(),
                    source: "prerequisite".to_owned(),
                });
                let row = CaseResult {
                    info: CaseInfo {
                        does: format!("Relied on by other cases' steps ({})", info.does),
                        source: "prerequisite".to_owned(),
                        ..info
                    },
                    verdict: level,
                    summary: format!(
                        "{note}; first: expected {}; got {}",
                        first.expected, first.actual
                    ),
                    findings,
                    blocked_by: None,
                    protocol_version: None,
                    transcript: Vec::new(),
                    duration_ms: 0.0,
                    rerun: config.plan.rerun(&rule),
                };
                // Before the always-on rows, after the cases.
                let at = results
                    .iter()
                    .position(|r| r.info.source == "builtin")
                    .unwrap_or(results.len());
                results.insert(at, row.clone());
                row
            }
        };
        changed.push(row);
    }
    changed
}

/// Up to five IDs, then how many more.
fn clip_list(ids: &[&str]) -> String {
    if ids.len() <= 5 {
        ids.join(", ")
    } else {
        format!("{}, … and {} more", ids[..5].join(", "), ids.len() - 5)
    }
}

/// `capabilities` of the profile's agent as the root state advertises it (`{}` when the
/// agent lists none), or why the run could not read it.
pub(super) async fn agent_capabilities(config: &RunConfig) -> Result<AgentsRead, AgentsUnread> {
    use crate::client::{Conn, HandshakeError, Offer, ROOT};
    let client_id = format!("ahpspec-probe-{}", std::process::id());
    let mut conn = Conn::connect(&config.url, config.plan.timeout, "agents", &client_id)
        .await
        .map_err(|e| AgentsUnread::Harness(format!("cannot connect to read the agents: {e}")))?;
    let offer = Offer::of([&config.protocol_version]).subscribing([ROOT]);
    let init = conn.initialize(&offer, config.plan.timeout).await;
    conn.close().await;
    let init = match init {
        Ok(init) => init,
        Err(HandshakeError::Refused(init)) => {
            return Err(AgentsUnread::Server(format!(
                "initialize offering [{:?}] answered {}",
                config.protocol_version,
                crate::checks::frame::clip(&init.to_string())
            )))
        }
        // Silence and a closed connection are the server's; a message over the harness's
        // size limit is not (AHP sets none).
        Err(HandshakeError::Transport(
            error @ (TransportError::Timeout(_)
            | TransportError::Closed
            | TransportError::WebSocket(_)),
        )) => {
            return Err(AgentsUnread::Unanswered(format!(
                "initialize offering [{:?}]: {error}",
                config.protocol_version
            )))
        }
        Err(HandshakeError::Transport(error)) => {
            return Err(AgentsUnread::Harness(format!(
                "initialize offering [{:?}]: {error}",
                config.protocol_version
            )))
        }
    };
    crate::steps::agents_in(&init, config.profile.provider.as_deref())
}
