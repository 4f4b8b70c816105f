//! Which rule a step's failure is charged to. A case claims only its own assertions: a step
//! that exercises another rule (a `ping` used as a barrier, a dispatch that must be
//! accepted to set the scene, a command that must succeed) is that rule's prerequisite, so a
//! server that breaks it fails that rule once and the case is blocked by it. The loader
//! knows each step kind's own rule, so no suite author has to remember an annotation; a
//! step says `claim = true` where the exercised rule's behaviour is what its case proves,
//! and `relies_on` where an assertion step is set-up for another rule.

use std::collections::HashMap;

use super::{Case, ExpectEcho, ExpectResponse, Step};
use crate::checks::Rule;

/// The rule a successful answer to a command is owed to, for the commands whose success a
/// catalog rule states. A step that needs the command to succeed relies on it.
pub fn command_rule(method: &str) -> Option<Rule> {
    Some(match method {
        "ping" => Rule::Transport010,
        "initialize" => Rule::Init001,
        "subscribe" => Rule::Sub001,
        "reconnect" => Rule::Reconnect001,
        "listSessions" => Rule::Root001,
        "createSession" => Rule::Lifecycle002,
        "disposeSession" => Rule::Lifecycle009,
        "createChat" => Rule::Chat001,
        "disposeChat" => Rule::Chat006,
        "moveChat" => Rule::ChatMove002,
        "fetchTurns" => Rule::Turn010,
        // Issue 25, terminals (i25b).
        "createTerminal" | "disposeTerminal" => Rule::Term001,
        "resolveSessionConfig" => Rule::Config001,
        "sessionConfigCompletions" => Rule::Config003,
        "completions" => Rule::Completions001,
        // Issue 25, resources (h25a).
        "resourceList" => Rule::Res002,
        "resourceMkdir" => Rule::Res004,
        "resourceDelete" => Rule::Res005,
        "resourceRead" => Rule::Res006,
        "resourceWrite" => Rule::Res008,
        "resourceCopy" | "resourceMove" => Rule::Res009,
        "resourceResolve" => Rule::Res010,
        "createResourceWatch" => Rule::Res007,
        // Issue 25, authentication (i25c).
        "authenticate" => Rule::Auth004,
        _ => return None,
    })
}

/// The rule that says a client action of this type is accepted when its preconditions
/// hold: the turn actions have rules of their own, every other client-dispatchable action
/// falls under DISPATCH-008.
pub fn acceptance_rule(action_type: &str) -> Rule {
    match action_type {
        "chat/turnStarted" => Rule::Turn001,
        "chat/turnCancelled" => Rule::Turn007,
        "chat/turnResume" => Rule::Turn008,
        "chat/truncated" => Rule::Turn012,
        "chat/toolCallConfirmed" => Rule::Tool003,
        _ => Rule::Dispatch008,
    }
}

/// What the steps before a step named: request names → methods, dispatch names → action
/// types. The loader and the engine resolve `to` / `of` references with it.
#[derive(Debug, Default, Clone)]
pub struct Names {
    methods: HashMap<String, String>,
    actions: HashMap<String, String>,
}

impl Names {
    /// Records what a step names (requests, dispatches, turn starts).
    pub fn note(&mut self, step: &Step) {
        match step {
            Step::Request(s) => {
                if let Some(name) = &s.name {
                    self.methods.insert(name.clone(), s.method.clone());
                }
            }
            // An initialize with the default offer relies on INIT-001; one that chooses its
            // offer is a negotiation case, whose answer is its own.
            Step::Initialize(s) if s.versions.is_none() => {
                let name = s.name.clone().unwrap_or_else(|| {
                    format!("{}.init", s.on.clone().unwrap_or_else(|| "c1".into()))
                });
                self.methods.insert(name, "initialize".into());
            }
            Step::Reconnect(s) => {
                self.methods.insert(s.name.clone(), "reconnect".into());
            }
            Step::Dispatch(s) => {
                if let (Some(name), Some(kind)) = (&s.name, s.action["type"].as_str()) {
                    self.actions.insert(name.clone(), kind.to_owned());
                }
            }
            Step::Turn(s) => {
                let name = s
                    .name
                    .clone()
                    .unwrap_or_else(|| s.id.clone().unwrap_or_else(|| "t1".into()));
                let kind = if s.pending.is_some() {
                    "chat/pendingMessageSet"
                } else {
                    "chat/turnStarted"
                };
                self.actions.insert(name, kind.into());
            }
            Step::AnyOf(s) => {
                for step in s.alternatives.iter().flatten() {
                    self.note(step);
                }
            }
            _ => {}
        }
    }

    pub fn method(&self, request: &str) -> Option<&str> {
        self.methods.get(request).map(String::as_str)
    }

    pub fn action(&self, dispatch: &str) -> Option<&str> {
        self.actions.get(dispatch).map(String::as_str)
    }
}

/// The rules a step's parts exercise when they are not the case's claim.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[must_use]
pub struct Exercised {
    /// A request must be answered at all (TRANSPORT-003); a dispatch must be echoed.
    pub answered: Option<Rule>,
    /// The answer must be a success (the command's rule), the echo an acceptance (the
    /// action's acceptance rule).
    pub succeeded: Option<Rule>,
}

impl Exercised {
    /// As seen from a case proving `own`: where the command's success is the case's own
    /// rule (TRANSPORT-010's ping), its being answered at all is the case's too.
    pub fn for_case(self, own: &str) -> Exercised {
        if self.succeeded.is_some_and(|rule| rule == own) {
            Exercised {
                answered: None,
                succeeded: None,
            }
        } else {
            self
        }
    }
}

impl Step {
    /// What this step's "it was answered" and "it succeeded" parts exercise when they are
    /// not the case's claim: `None` parts, and steps whose every miss is their case's
    /// (assertions, refusals, answers to raw frames, `or_close` probes, `claim = true`),
    /// are charged to the case. Composite steps (initialize, session, turn) charge their
    /// parts themselves.
    pub fn exercised(&self, names: &Names) -> Exercised {
        match self {
            Step::Response(s) => s.exercised(names),
            Step::Echo(s) => s.exercised(names),
            _ => Exercised::default(),
        }
    }

    /// Whether this step asserts something of the case's own rule `own`: a miss of some part
    /// of it is charged to the case rather than to another rule.
    fn claims(&self, own: &str, names: &Names) -> bool {
        if let Some(rule) = self.relies_on() {
            return rule == own;
        }
        match self {
            // Version negotiation cases choose their offer: the refusal is their own.
            Step::Initialize(s) => own == Rule::Init001 || s.versions.is_some(),
            Step::Session(_) => [Rule::Lifecycle002, Rule::Lifecycle003, Rule::Sub001]
                .iter()
                .any(|rule| own == *rule),
            Step::Turn(s) => {
                [Rule::Turn001, Rule::Turn002]
                    .iter()
                    .any(|rule| own == *rule)
                    || (s.pending.is_some() && own == Rule::Dispatch008)
            }
            Step::Response(s) => {
                let exercised = self.exercised(names).for_case(own);
                let own_part = |part: Option<Rule>| part.is_none_or(|rule| rule == own);
                own_part(exercised.answered)
                    || (s.ok.is_some() && own_part(exercised.succeeded))
                    || !s.assert.is_empty()
            }
            Step::Echo(_) => self
                .exercised(names)
                .succeeded
                .is_none_or(|rule| rule == own),
            Step::Action(_)
            | Step::Notification(_)
            | Step::Silence(_)
            | Step::Closed(_)
            | Step::State(_)
            | Step::Check(_)
            | Step::Progress(_) => true,
            Step::Checkpoint(s) => s.own || own == Rule::InvFold1,
            Step::AnyOf(s) => s
                .alternatives
                .iter()
                .flatten()
                .any(|step| step.claims(own, names)),
            Step::Connect(_)
            | Step::Reconnect(_)
            | Step::Request(_)
            | Step::Notify(_)
            | Step::Raw(_)
            | Step::Binary(_)
            | Step::Dispatch(_)
            | Step::Disconnect(_)
            | Step::Sleep(_)
            | Step::NotApplicable(_) => false,
        }
    }
}

impl Case {
    /// The index of the last step that asserts something of the case's own rule: a step after
    /// it only tidies up (ends a turn, say), so another rule's failure there is charged to
    /// that rule without taking the case's judged verdict away.
    pub fn last_claim(&self) -> Option<usize> {
        let own = super::rule_of(&self.info.id);
        let mut names = Names::default();
        let mut last = None;
        for (at, located) in self.steps.iter().enumerate() {
            names.note(&located.step);
            if located.step.claims(own, &names) {
                last = Some(at);
            }
        }
        last
    }

    /// Whether some step of the case asserts its own rule. A case none of whose steps does
    /// would only ever report other rules' failures as its own verdict: a load error.
    pub fn claims_own_rule(&self) -> bool {
        if self.probe.is_some() {
            return true;
        }
        let own = crate::verdict::rule_of(&self.info.id);
        let mut names = Names::default();
        self.steps.iter().any(|located| {
            names.note(&located.step);
            located.step.claims(own, &names)
        })
    }
}

impl ExpectResponse {
    /// A response to a named request must come (TRANSPORT-003) and, with `ok = true`, be a
    /// success (the command's rule). A refusal the step expects, an answer to a raw frame,
    /// an `or_close` probe and a `claim` are the case's own throughout.
    pub fn exercised(&self, names: &Names) -> Exercised {
        if self.claim || self.ok == Some(false) || self.codes.is_some() {
            return Exercised::default();
        }
        let Some(method) = self.to.as_deref().and_then(|to| names.method(to)) else {
            return Exercised::default();
        };
        Exercised {
            answered: (!self.or_close && method != "initialize").then_some(Rule::Transport003),
            succeeded: if self.ok == Some(true) {
                command_rule(method)
            } else {
                None
            },
        }
    }
}

impl ExpectEcho {
    /// An echo that must be an acceptance exercises the action's acceptance rule.
    pub fn exercised(&self, names: &Names) -> Exercised {
        if !self.accepted || self.claim {
            return Exercised::default();
        }
        let rule = acceptance_rule(names.action(&self.of).unwrap_or_default());
        Exercised {
            answered: Some(rule),
            succeeded: Some(rule),
        }
    }
}
