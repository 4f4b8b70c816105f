//! How a case ends: a broken expectation at the case's level, a prerequisite another rule
//! failed (the case is blocked), a harness-side transport failure, and the case result.

use super::*;

impl Runner<'_> {
    /// A failed expectation: stops the case at its own level, or is recorded at a lower
    /// step level and the case goes on.
    pub(super) fn broken(
        &mut self,
        level: &Option<Level>,
        on: &Option<String>,
        expected: String,
        actual: String,
    ) -> StepResult {
        // A step may only lower its case's level (the SHOULD part of a MUST case).
        let step_level = match level {
            Some(lower @ (Level::Should | Level::May)) => *lower,
            _ => self.level(),
        };
        let name = Self::conn_name(on);
        let context = self
            .conns
            .get(&name)
            .map(|conn| context_frames(conn, conn.frame_count()))
            .unwrap_or_default();
        if let Some(rule) = self.relies_on.clone() {
            if rule != crate::verdict::rule_of(&self.case.info.id) {
                return Err(self.prerequisite(&rule, on, expected, actual));
            }
        }
        let finding = Finding {
            rule: self.case.info.id.clone(),
            verdict: step_level.broken(),
            expected,
            actual,
            step: Some(self.at.clone()),
            context,
        };
        if level.is_some() && step_level > self.level() {
            self.findings.push(finding);
            Ok(())
        } else {
            Err(Stop::Broken(Box::new(finding)))
        }
    }

    /// A failed part of a step that exercises `exercised` (`suite::charge`) when that is
    /// not the case's claim: that rule's prerequisite, unless the step names its own
    /// `relies_on` or the rule is the case's; otherwise as `broken`.
    pub(super) fn broken_part(
        &mut self,
        exercised: Option<Rule>,
        level: &Option<Level>,
        on: &Option<String>,
        expected: String,
        actual: String,
    ) -> StepResult {
        match exercised {
            Some(rule) if self.relies_on.is_none() && rule != own_rule(self.case) => {
                Err(self.prerequisite(rule, on, expected, actual))
            }
            _ => self.broken(level, on, expected, actual),
        }
    }

    /// A step that rests on `rule` (or on the step's own `relies_on`, which takes
    /// precedence) failed because of the server. When that rule is the case's own, this is
    /// the case's failure; otherwise the case is blocked by it.
    pub(super) fn prerequisite(
        &self,
        rule: impl AsRef<str>,
        on: &Option<String>,
        expected: String,
        actual: String,
    ) -> Stop {
        let rule = self.relies_on.as_deref().unwrap_or(rule.as_ref());
        if rule == crate::suite::PROFILE_PROMISE {
            return Stop::NotTestable(format!(
                "the server did not do what the target profile promises: expected {expected}; got {actual} ({})",
                self.at
            ));
        }
        let context = self
            .conns
            .get(&Self::conn_name(on))
            .map(|conn| context_frames(conn, conn.frame_count()))
            .unwrap_or_default();
        let own = rule == crate::verdict::rule_of(&self.case.info.id);
        // A MAY leaves the host a choice: a case that needs one path of it, where the host
        // took the other, has nothing to judge (not applicable), and nothing is broken.
        if !own && self.ctx.rule_level(rule) == Level::May {
            return Stop::NotApplicable(format!(
                "the host took a path {rule} (a MAY) allows, on which this rule does not arise: expected {expected}; got {actual}"
            ));
        }
        let finding = Finding {
            rule: if own {
                self.case.info.id.clone()
            } else {
                rule.to_owned()
            },
            verdict: if own {
                self.level().broken()
            } else {
                self.ctx.rule_level(rule).broken()
            },
            expected,
            actual,
            step: Some(self.at.clone()),
            context,
        };
        if own {
            Stop::Broken(Box::new(finding))
        } else {
            Stop::Prerequisite(Box::new(finding))
        }
    }

    /// A request a step relies on got no response. Silence and a closed connection are the
    /// server's doing (the rule's failure); a message over the harness's size limit is the
    /// harness's (AHP sets no limit), and so is a connection or TLS failure.
    pub(super) fn transport_failure(
        &self,
        error: TransportError,
        rule: impl AsRef<str>,
        on: &Option<String>,
        expected: String,
    ) -> Stop {
        match error {
            TransportError::Timeout(_) | TransportError::Closed | TransportError::WebSocket(_) => {
                self.prerequisite(rule, on, expected, error.to_string())
            }
            TransportError::Oversized
            | TransportError::Connect { .. }
            | TransportError::Tls(_)
            | TransportError::CaCertificate { .. } => {
                Stop::Harness(format!("{}: {expected}: {error}", self.at))
            }
        }
    }

    /// The case's outcome, and the lent connections handed back.
    pub(super) fn finish(mut self, stop: Option<Stop>) -> (CaseOutcome, BTreeMap<String, Conn>) {
        let mut counts = self.counts.clone();
        let mut skipped = self.skipped.clone();
        // What a lent connection counted or could not do before it was lent is its
        // lender's: only the case's own connections are tallied here.
        let own = |name: &String| !self.lent.contains_key(name);
        for (_, conn) in self.conns.iter().filter(|(name, _)| own(name)) {
            conn.tally(&mut counts, &mut skipped);
        }
        let harness: Vec<String> = self
            .conns
            .iter()
            .filter(|(name, _)| own(name))
            .flat_map(|(_, c)| c.harness_errors().to_vec())
            .collect();
        let mut findings = self.findings;
        let mut blocked_by = None;
        let mut prerequisite = None;
        let (mut verdict, mut summary) = match stop {
            None => (
                Verdict::Pass,
                format!("{} steps passed", self.case.steps.len()),
            ),
            Some(Stop::Broken(finding)) => {
                let finding = *finding;
                let summary = format!("expected {}; got {}", finding.expected, finding.actual);
                let verdict = finding.verdict;
                findings.push(finding);
                (verdict, summary)
            }
            Some(Stop::Prerequisite(finding)) => {
                let finding = *finding;
                let summary = format!(
                    "Blocked by {}: expected {}; got {}",
                    finding.rule, finding.expected, finding.actual
                );
                blocked_by = Some(finding.rule.clone());
                prerequisite = Some(finding.clone());
                findings.push(finding);
                (Verdict::Blocked, summary)
            }
            Some(Stop::AfterClaims(finding)) => {
                let finding = *finding;
                let summary = format!(
                    "{} steps passed up to the case's last claim; a clean-up step after it broke {} (charged there): expected {}; got {}",
                    self.case.steps.len(),
                    finding.rule,
                    finding.expected,
                    finding.actual
                );
                prerequisite = Some(finding);
                (Verdict::Pass, summary)
            }
            Some(Stop::NotTestable(why)) => (Verdict::NotTestable, format!("Not testable: {why}")),
            Some(Stop::NotApplicable(why)) => (Verdict::NotApplicable, why),
            Some(Stop::Harness(why)) => (Verdict::HarnessError, why),
        };
        // A blocked case's own findings are recorded, but its verdict stays "blocked": the
        // prerequisite's failure is reported on that rule's row.
        for finding in findings
            .iter()
            .filter(|f| blocked_by.as_ref() != Some(&f.rule))
        {
            verdict = verdict.worst(finding.verdict);
        }
        if verdict == Verdict::Pass && !findings.is_empty() {
            summary = format!("{} (with notes)", summary);
        }
        if let Some(first) = harness.first() {
            if matches!(verdict, Verdict::Pass) {
                verdict = Verdict::HarnessError;
                summary = first.clone();
            }
        }
        let mut transcript: Vec<ReportedFrame> = self
            .conns
            .iter()
            .flat_map(|(name, conn)| {
                let from = self.lent.get(name).copied().unwrap_or(0);
                conn.reported(from, conn.frame_count())
            })
            .collect();
        transcript.sort_by(|a, b| a.at_ms.total_cmp(&b.at_ms));
        let elapsed = self.started.elapsed();
        let result = CaseResult {
            info: self.case.info.clone(),
            verdict,
            summary,
            findings,
            blocked_by: if verdict == Verdict::Blocked {
                blocked_by
            } else {
                None
            },
            protocol_version: None,
            transcript,
            duration_ms: elapsed.as_secs_f64() * 1000.0,
            rerun: self.ctx.rerun.clone(),
        };
        // Lent connections are their lender's to sweep.
        let made_sessions = self
            .conns
            .iter()
            .filter(|(name, _)| !self.lent.contains_key(*name))
            .flat_map(|(_, conn)| crate::client::sessions_made(conn))
            .collect();
        let outcome = CaseOutcome {
            result,
            always_on: std::mem::take(&mut self.always_on),
            counts,
            prerequisite,
            skipped,
            made_sessions,
        };
        let lent = std::mem::take(&mut self.lent);
        let conns = std::mem::take(&mut self.conns);
        let returned = conns
            .into_iter()
            .filter(|(name, _)| lent.contains_key(name))
            .collect();
        (outcome, returned)
    }
}

/// The rule a case proves (its ID without the `/slug`).
pub(super) fn own_rule(case: &Case) -> &str {
    crate::verdict::rule_of(&case.info.id)
}
