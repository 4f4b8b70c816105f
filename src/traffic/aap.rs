//! AAP traffic the harness did not drive — a proxy's exchanges, a capture's — judged
//! exchange by exchange by the AAP runner's own always-on checks
//! ([`crate::aap::checks::Observer`]), in the order they finished, and made into the
//! report's rows, one per always-on AAP rule. The version comes from `--protocol-version`,
//! else from the last `GET /meta` seen. No I/O.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use serde_json::Value;

use crate::aap::case::{created_id, session_of};
use crate::aap::checks::{schemas_for, Endpoint, Observer, Seen};
use crate::aap::http::exchange::{Ending, Exchange};
use crate::aap::http::Body;
use crate::aap::AapVersion;
use crate::checks::{Rule, Violation, AAP_ALWAYS_ON};
use crate::rows::AlwaysOnRows;
use crate::schema::{SchemaError, SchemaSet};
use crate::verdict::{ReportedFrame, RunReport, Verdict};

/// What the rows of an observation say they ran over.
const OVER: &str = "response the proxy forwarded";

/// A violation found in one exchange, with the exchange's transcript.
#[derive(Debug, Clone)]
pub struct AapFound {
    pub violation: Violation,
    /// `N: METHOD PATH`.
    pub exchange: String,
    pub context: Vec<ReportedFrame>,
}

impl AapFound {
    /// One line for a live log: rule, level, exchange, what broke.
    pub fn line(&self) -> String {
        let level = super::level_of(self.violation.rule);
        format!(
            "{} [{level}] exchange {}: expected {}; got {}",
            self.violation.rule, self.exchange, self.violation.expected, self.violation.actual
        )
    }
}

/// The secret options seen declared and the values seen set.
#[derive(Debug, Default)]
struct Secrets {
    names: HashSet<String>,
    values: Vec<String>,
}

impl Secrets {
    /// Takes the secret option names of a `GET /meta` answer, and the values a request
    /// sets those options to (`agent.options`).
    fn learn(
        &mut self,
        request: Option<&Value>,
        response: &crate::aap::http::Response,
        endpoint: Option<Endpoint>,
    ) {
        if endpoint == Some(Endpoint::Meta) && response.status == 200 {
            let agents = response.json().and_then(|m| m.get("agents"));
            let options = agents
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.get("options").and_then(Value::as_array))
                .flatten();
            for option in options {
                if option.get("type").and_then(Value::as_str) == Some("secret") {
                    if let Some(name) = option.get("name").and_then(Value::as_str) {
                        self.names.insert(name.to_owned());
                    }
                }
            }
        }
        let set = request
            .and_then(|r| r.pointer("/agent/options"))
            .and_then(Value::as_object);
        for (name, value) in set.into_iter().flatten() {
            let Some(value) = value.as_str() else {
                continue;
            };
            // Shorter values would match by chance (and are not redacted everywhere).
            if self.names.contains(name)
                && value.chars().count() >= crate::redact::MIN_LEARNED
                && !self.values.iter().any(|v| v == value)
            {
                crate::redact::learn_value(value);
                self.values.push(value.to_owned());
            }
        }
    }

    /// AAP-OPTION-003 on one response body: none of the values set comes back.
    fn check(&self, exchange: &Exchange, observer: &mut Observer) {
        let body = exchange
            .response
            .as_ref()
            .map(|b| b.bytes())
            .unwrap_or_default();
        if body.is_empty() {
            return;
        }
        if self.values.is_empty() {
            observer.skips.add(
                Rule::AapOption003,
                "no secret option value set through the proxy yet",
                1,
            );
            return;
        }
        observer.count(Rule::AapOption003);
        let text = String::from_utf8_lossy(&body);
        if self.values.iter().any(|v| text.contains(v.as_str())) {
            observer.violate(
                Rule::AapOption003,
                "no secret option value in any response",
                "the body holds a value a client set for a secret option",
            );
        }
    }
}

/// Which version judges the exchanges.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Judging {
    /// None asked and no `GET /meta` seen yet: the newest, assumed.
    Assumed,
    Known(AapVersion),
    /// `GET /meta` named a version ahpspec does not know: nothing is judged.
    Unknown(String),
}

/// Every exchange taken in, and what the checks found.
pub struct AapTraffic {
    asked: Option<AapVersion>,
    judging: Judging,
    schemas: HashMap<AapVersion, Arc<SchemaSet>>,
    rows: AlwaysOnRows,
    transcripts: HashMap<Rule, Vec<ReportedFrame>>,
    /// Client tool names of each session seen created (AAP-TOOL-008 reads them).
    sessions: HashMap<String, HashSet<String>>,
    /// What AAP-OPTION-003 looks for: the options the last `GET /meta` declares secret,
    /// and the values clients set them to.
    secrets: Secrets,
    /// Versions exchanges were judged at; `assumed` when some were judged at none named.
    judged_at: BTreeSet<AapVersion>,
    assumed: bool,
    exchanges: usize,
    unanswered: usize,
}

impl AapTraffic {
    /// An observation judged at `asked` (`--protocol-version`), or at the version each
    /// `GET /meta` seen names.
    pub fn new(asked: Option<AapVersion>) -> Result<AapTraffic, SchemaError> {
        let mut schemas = HashMap::new();
        for version in AapVersion::ALL {
            schemas.insert(version, Arc::new(schemas_for(version)?));
        }
        Ok(AapTraffic {
            asked,
            judging: asked.map_or(Judging::Assumed, Judging::Known),
            schemas,
            rows: AlwaysOnRows::default(),
            transcripts: HashMap::new(),
            sessions: HashMap::new(),
            secrets: Secrets::default(),
            judged_at: BTreeSet::new(),
            assumed: false,
            exchanges: 0,
            unanswered: 0,
        })
    }

    /// Judges one finished exchange; returns what it broke and, when the exchange named a
    /// version ahpspec does not know, a line saying so.
    pub fn exchange(&mut self, exchange: &Exchange) -> (Vec<AapFound>, Option<String>) {
        self.exchanges += 1;
        let name = format!("{}: {} {}", self.exchanges, exchange.method, exchange.path);
        let Some(mut response) = exchange.response() else {
            self.unanswered += 1;
            return (Vec::new(), None);
        };
        let notice = self.learn_version(exchange, &response);
        let version = match &self.judging {
            Judging::Known(version) => *version,
            Judging::Assumed => {
                self.assumed = true;
                AapVersion::LATEST
            }
            Judging::Unknown(_) => {
                let mut skips = crate::checks::Skips::default();
                skips.add(
                    Rule::AapHttp007,
                    "GET /meta named a version ahpspec does not know",
                    1,
                );
                self.rows.looked_at([], &skips);
                return (Vec::new(), notice);
            }
        };
        self.judged_at.insert(version);
        let (method, path) = version.unwire(&exchange.method, &exchange.path);
        let request = exchange.request_json();
        let mut observer = Observer::at(Arc::clone(&self.schemas[&version]), version);
        // A body longer than the copy, or a stream still open, cannot be judged whole:
        // the status is judged, the body skipped (counted).
        let streamed = response.is_media("text/event-stream");
        let unjudged = if exchange.cut() {
            Some("a body longer than the proxy keeps (--max-body)")
        } else if exchange.ending == Some(Ending::Open) {
            Some("a response still open when the proxy or the recording client stopped reading")
        } else {
            None
        };
        if let Some(why) = unjudged {
            response.body = Body::Empty;
            let rules: &[Rule] = match streamed {
                true => &[Rule::AapSse001, Rule::AapSse002, Rule::AapSse003],
                false => &[Rule::AapHttp001, Rule::AapHttp002],
            };
            for rule in rules {
                observer.skips.add(*rule, why, 1);
            }
        }
        let no_tools = HashSet::new();
        let client_tools = session_of(&path)
            .and_then(|id| self.sessions.get(id))
            .unwrap_or(&no_tools);
        self.secrets
            .learn(request.as_ref(), &response, Endpoint::of(&method, &path));
        observer.observe(&Seen {
            method: &method,
            path: &path,
            request: request.as_ref(),
            response: &response,
            client_tools,
        });
        // The runner's AAP-OPTION-003 looks for the harness's own secret values; here it
        // looks for the values the clients set.
        observer.counts.remove(&Rule::AapOption003);
        observer.violations.retain(|v| v.rule != Rule::AapOption003);
        if unjudged.is_none() {
            self.secrets.check(exchange, &mut observer);
        }
        self.follow(&method, &path, request.as_ref(), &response);
        self.rows.looked_at(&observer.counts, &observer.skips);
        let context = exchange.transcript(&self.exchanges.to_string());
        let found: Vec<AapFound> = observer
            .violations
            .into_iter()
            .map(|violation| AapFound {
                violation,
                exchange: name.clone(),
                context: context.clone(),
            })
            .collect();
        for one in &found {
            self.rows.found(
                one.violation.clone(),
                &format!("on exchange {}", one.exchange),
                one.context.clone(),
            );
            self.transcripts
                .entry(one.violation.rule)
                .or_insert_with(|| context.clone());
        }
        (found, notice)
    }

    /// Takes the version a `GET /meta` answer names (unless one was asked for).
    fn learn_version(
        &mut self,
        exchange: &Exchange,
        response: &crate::aap::http::Response,
    ) -> Option<String> {
        let meta = Endpoint::of(&exchange.method, &exchange.path) == Some(Endpoint::Meta);
        if self.asked.is_some() || !meta || response.status != 200 {
            return None;
        }
        let said = response.json()?.get("version")?;
        match AapVersion::choose(None, Some(said)) {
            Ok(version) => {
                self.judging = Judging::Known(version);
                None
            }
            Err(said) => {
                self.judging = Judging::Unknown(said.clone());
                Some(format!(
                    "GET /meta says AAP version {said}, which ahpspec does not know (it knows 1, 2 and 3; --protocol-version picks one): later exchanges are not judged"
                ))
            }
        }
    }

    /// Keeps each created session's client tools (and a turn's new ones).
    fn follow(
        &mut self,
        method: &str,
        path: &str,
        request: Option<&Value>,
        response: &crate::aap::http::Response,
    ) {
        if !(200..300).contains(&response.status) {
            return;
        }
        let tools = || -> HashSet<String> {
            request
                .and_then(|r| r.get("tools"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|t| t.get("name").and_then(Value::as_str).map(str::to_owned))
                .collect()
        };
        match Endpoint::of(method, path) {
            Some(Endpoint::Create) => {
                if let Some(id) = created_id(response) {
                    self.sessions.insert(id, tools());
                }
            }
            Some(Endpoint::Turn) if request.is_some_and(|r| r.get("tools").is_some()) => {
                if let Some(id) = session_of(path) {
                    self.sessions.insert(id.to_owned(), tools());
                }
            }
            _ => {}
        }
    }

    /// The report: one row per always-on AAP rule over every exchange taken in.
    pub fn report(
        mut self,
        target: &str,
        started_at: String,
        duration_ms: f64,
        rerun: &str,
    ) -> RunReport {
        let mut cases = Vec::with_capacity(AAP_ALWAYS_ON.len());
        let creation_streams = self.judged_at.iter().any(|v| v.creation_runs_turn());
        for rule in AAP_ALWAYS_ON {
            let mut row = self.rows.row(rule, OVER, rerun.to_owned());
            let not_judged = match rule.rule {
                Rule::AapSse007 => Some(
                    "Not testable: a proxy sees no scripted turn run in several modes to compare (a run does)",
                ),
                Rule::AapHistory004 => Some(
                    "Not testable: a proxy keeps no model of what a session's full history must hold (a run does)",
                ),
                _ => None,
            };
            if let Some(summary) = not_judged {
                row.verdict = Verdict::NotTestable;
                row.summary = summary.to_owned();
                row.findings.clear();
            } else if rule.rule == Rule::AapSse009
                && !creation_streams
                && !self.judged_at.is_empty()
                && row.findings.is_empty()
            {
                // Judged exchanges, all at version 3: the rule has nothing to hold of.
                let judged: Vec<String> = self.judged_at.iter().map(|v| v.to_string()).collect();
                row.verdict = Verdict::NotApplicable;
                row.summary = format!(
                    "not applicable: no {} at AAP version {}",
                    rule.unit,
                    judged.join(",")
                );
            }
            if let Some(transcript) = self.transcripts.remove(&rule.rule) {
                row.transcript = transcript;
            }
            cases.push(row);
        }
        let unanswered = match self.unanswered {
            0 => String::new(),
            n => format!(", {n} without a response"),
        };
        let target = format!("{target} ({} exchanges{unanswered})", self.exchanges);
        let mut versions: Vec<String> = self.judged_at.iter().map(|v| v.to_string()).collect();
        if let Judging::Unknown(said) = &self.judging {
            versions.push(format!("{said} (unknown: not judged)"));
        }
        let mut version = match versions.as_slice() {
            [] => "AAP (no exchange judged)".to_owned(),
            _ => format!("AAP {}", versions.join(",")),
        };
        if self.assumed {
            version.push_str(" (assumed: no GET /meta seen before some exchanges)");
        }
        let mut report = RunReport {
            started_at,
            duration_ms,
            ..RunReport::of(target, version, cases)
        };
        crate::rows::reconcile(&mut report, None);
        report
    }
}
