//! AHP's declarative scenarios: the typed steps of its suite files (TOML, one file per spec
//! area; loaded by [`crate::catalog`]), the suites compiled in, and the checks a loaded AHP
//! catalog must pass. Nothing here executes anything.

mod assertions;
mod charge;
mod steps;

pub use charge::{acceptance_rule, command_rule, Names};
pub use steps::*;

pub use crate::catalog::SuiteError;
use crate::catalog::{always_on_info, SuiteFormat};
use crate::checks::{AlwaysOnRule, ALWAYS_ON};
use crate::verdict::{rule_of, CaseInfo};

/// An AHP case.
pub type Case = crate::catalog::Case<Step>;
/// An AHP step with where it stands.
pub type LocatedStep = crate::catalog::Located<Step>;
/// Every loaded AHP case, in file order.
pub type Catalog = crate::catalog::Catalog<Step>;

/// Suites compiled into the binary, so an installed `ahpspec` works from any directory.
pub const EMBEDDED: &[(&str, &str)] = &[
    (
        "transport.toml",
        include_str!("../../suites/transport.toml"),
    ),
    (
        "lifecycle.toml",
        include_str!("../../suites/lifecycle.toml"),
    ),
    (
        "subscriptions.toml",
        include_str!("../../suites/subscriptions.toml"),
    ),
    ("actions.toml", include_str!("../../suites/actions.toml")),
    (
        "reconnect.toml",
        include_str!("../../suites/reconnect.toml"),
    ),
    (
        "root-channel.toml",
        include_str!("../../suites/root-channel.toml"),
    ),
    (
        "session-channel.toml",
        include_str!("../../suites/session-channel.toml"),
    ),
    (
        "chat-channel.toml",
        include_str!("../../suites/chat-channel.toml"),
    ),
    (
        "pending-messages.toml",
        include_str!("../../suites/pending-messages.toml"),
    ),
    (
        "tool-calls.toml",
        include_str!("../../suites/tool-calls.toml"),
    ),
    (
        "input-requests.toml",
        include_str!("../../suites/input-requests.toml"),
    ),
    ("status.toml", include_str!("../../suites/status.toml")),
    ("errors.toml", include_str!("../../suites/errors.toml")),
    // Issue 25, resources (h25a).
    (
        "resources.toml",
        include_str!("../../suites/resources.toml"),
    ),
    (
        "robustness.toml",
        include_str!("../../suites/robustness.toml"),
    ),
    // Issue 25, terminals (i25b).
    (
        "terminals.toml",
        include_str!("../../suites/terminals.toml"),
    ),
    // Issue 25, session configuration and completions (i25b).
    (
        "session-config.toml",
        include_str!("../../suites/session-config.toml"),
    ),
    // Issue 25, the stateless telemetry channel (i25b).
    (
        "telemetry.toml",
        include_str!("../../suites/telemetry.toml"),
    ),
    // Issue 25, authentication (i25c).
    ("auth.toml", include_str!("../../suites/auth.toml")),
    // Issue 29, forked and side chats (i29).
    (
        "chat-sources.toml",
        include_str!("../../suites/chat-sources.toml"),
    ),
    // Issue 29, changesets (i29b).
    (
        "changesets.toml",
        include_str!("../../suites/changesets.toml"),
    ),
    // Issue 29, automations (i29c).
    (
        "automations.toml",
        include_str!("../../suites/automations.toml"),
    ),
    // Issue 29, automations' schedules and disable conditions (split from automations.toml).
    (
        "automation-schedules.toml",
        include_str!("../../suites/automation-schedules.toml"),
    ),
    // Issue 29, annotations (i29b).
    (
        "annotations.toml",
        include_str!("../../suites/annotations.toml"),
    ),
    // Issue 29, background work, session metadata, agent changes (i29b).
    (
        "agent-state.toml",
        include_str!("../../suites/agent-state.toml"),
    ),
    // Issue 29, customizations and MCP servers (i29d).
    (
        "customizations.toml",
        include_str!("../../suites/customizations.toml"),
    ),
    // Issue 29, configuration changes and session activity (i29d).
    (
        "session-state.toml",
        include_str!("../../suites/session-state.toml"),
    ),
    // Issue 29, sub-agents (i29d).
    (
        "subagents.toml",
        include_str!("../../suites/subagents.toml"),
    ),
];

/// The `relies_on` value of an expectation that rests on what the target profile promises
/// a behaviour does (not on a rule): a miss means the server does not do what its profile
/// says, and the case is not testable.
pub const PROFILE_PROMISE: &str = "profile";

/// AHP's suites: its steps, its files, its always-on rules; a catalog whose steps rely on
/// rules nothing proves, or whose cases claim nothing of their own rule, does not load.
impl SuiteFormat for Step {
    const EMBEDDED: &'static [(&'static str, &'static str)] = EMBEDDED;
    const AREA_PREFIX: &'static str = "";
    const PROBES_AND_VERSIONS: bool = true;
    const ALWAYS_ON: &'static [AlwaysOnRule] = ALWAYS_ON;
    const ALWAYS_ON_OVER: &'static str = "frame of every case";

    fn embedded_once() -> &'static std::sync::OnceLock<Catalog> {
        static ONCE: std::sync::OnceLock<Catalog> = std::sync::OnceLock::new();
        &ONCE
    }

    fn check(catalog: &Catalog) -> Result<(), SuiteError> {
        catalog.check_relied_on_rules()?;
        catalog.check_claims()
    }
}

impl Catalog {
    /// Every `relies_on` must name a rule the run can report on: a case's rule or an
    /// always-on check's, of these suites or of the built-in ones (a directory of some suite
    /// files may rely on a rule another built-in file proves).
    fn check_relied_on_rules(&self) -> Result<(), SuiteError> {
        let builtin = |rule: &str| {
            EMBEDDED.iter().any(|(name, text)| {
                Catalog::parse_suite(name, text)
                    .is_ok_and(|cases| cases.iter().any(|case| rule_of(&case.info.id) == rule))
            })
        };
        for case in &self.cases {
            for located in &case.steps {
                if let Some(rule) = located.step.relies_on() {
                    if rule != PROFILE_PROMISE && self.rule(rule).is_none() && !builtin(rule) {
                        return Err(SuiteError::UnknownRule {
                            at: located.at.clone(),
                            rule: rule.to_owned(),
                        });
                    }
                }
            }
        }
        Ok(())
    }

    /// Every case asserts something of its own rule (`Case::claims_own_rule`).
    fn check_claims(&self) -> Result<(), SuiteError> {
        match self.cases.iter().find(|case| !case.claims_own_rule()) {
            Some(case) => Err(SuiteError::ClaimsNothing {
                at: case.info.source.clone(),
                id: case.info.id.clone(),
            }),
            None => Ok(()),
        }
    }

    /// The level of every rule a step may rely on: each case's rule and each always-on check.
    pub fn rule_levels(&self) -> std::collections::HashMap<String, crate::verdict::Level> {
        let mut levels: std::collections::HashMap<String, crate::verdict::Level> =
            crate::checks::ALWAYS_ON
                .iter()
                .map(|rule| (rule.id.to_owned(), rule.level))
                .collect();
        for case in &self.cases {
            let rule = rule_of(&case.info.id);
            if case.info.id == rule || !levels.contains_key(rule) {
                levels.insert(rule.to_owned(), case.info.level);
            }
        }
        levels
    }

    /// What the run says about a rule that is not (or not only) a case of its own, e.g.
    /// one a step relies on: the case proving it (`RULE` or `RULE/slug`), or the always-on
    /// check under that ID. `None` when neither exists.
    pub fn rule(&self, rule: &str) -> Option<CaseInfo> {
        let of_case = self
            .cases
            .iter()
            .find(|case| case.info.id == rule)
            .or_else(|| {
                self.cases
                    .iter()
                    .find(|case| rule_of(&case.info.id) == rule)
            });
        if let Some(case) = of_case {
            return Some(CaseInfo {
                id: rule.to_owned(),
                ..case.info.clone()
            });
        }
        crate::checks::always_on(rule).map(|check| always_on_info(check, Step::ALWAYS_ON_OVER))
    }
}
