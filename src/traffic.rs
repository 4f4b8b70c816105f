//! Traffic the harness did not drive — a proxy's connections, a capture's — judged
//! connection by connection by the runner's own always-on checks
//! ([`crate::checks::stream::StreamChecks`]), and what they found turned into the report's
//! rows, one per always-on rule (as a run reports them). No I/O: the proxy and `check` feed
//! it frames.

use std::collections::{BTreeSet, HashMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::checks::frame::{Counts, Schemas};
use crate::checks::stream::StreamChecks;
use crate::checks::words::{EarlierDispatches, InvalidDispatches};
use crate::checks::{AlwaysOnRule, Rule, Skips, Violation, ALWAYS_ON};
use crate::rows::AlwaysOnRows;
use crate::verdict::{ReportedFrame, RunReport};

pub mod aap;

/// Frames before a violation shown with it (as a run shows them).
const CONTEXT_FRAMES: usize = 8;
/// Frames of a connection kept for its transcript; later ones are counted, not kept, so a
/// long-lived connection costs bounded memory.
const TRANSCRIPT_FRAMES: usize = 256;
/// Client-side problems kept for the report.
const CLIENT_PROBLEMS_KEPT: usize = 20;

/// Case rules that traffic can judge as well, after the always-on rows: in a run their
/// cases judge them, but a client nobody scripted has no case
/// ([`crate::checks::malformed`]). Their text is their case's in
/// the catalog (a test holds the two together).
pub const OBSERVED_CASE_RULES: &[AlwaysOnRule] = &[AlwaysOnRule {
    rule: Rule::Dispatch007,
    id: "DISPATCH-007",
    level: crate::verdict::Level::Should,
    area: "actions",
    spec: "docs/guide/actions.md (robustness)",
    requirement: "Malformed actions (missing members, wrong types, unknown type) are not applied and do not break the connection.",
    unit: "echoes of actions a client dispatched malformed (no type, or invalid for theirs)",
}, AlwaysOnRule {
    rule: Rule::Transport009,
    id: "TRANSPORT-009",
    level: crate::verdict::Level::Should,
    area: "transport",
    spec: "docs/specification/root-channel.md § Paginating the catalogue",
    requirement: "Params of the wrong shape get -32602 (not a success, not a hang).",
    unit: "answers to requests a client sent with params of the wrong shape",
}];

/// Which peer sent a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Peer {
    Client,
    Server,
}

/// One frame as observed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Seen<'a> {
    Text(&'a str),
    Binary(usize),
    Close {
        code: Option<u16>,
        reason: &'a str,
    },
    /// The connection broke without a close frame.
    Lost,
}

/// A violation with where it was found and the frames before it.
#[derive(Debug, Clone)]
pub struct Found {
    pub violation: Violation,
    pub conn: String,
    /// The frame's position in its connection (0-based).
    pub frame: usize,
    pub context: Vec<ReportedFrame>,
}

impl Found {
    /// One line for a live log: rule, level, connection, frame, what broke.
    pub fn line(&self) -> String {
        let level = level_of(self.violation.rule);
        format!(
            "{} [{level}] connection {} frame {}: expected {}; got {}",
            self.violation.rule,
            self.conn,
            self.frame + 1,
            self.violation.expected,
            self.violation.actual
        )
    }
}

/// The level a rule's row says (violations carry always-on rules, and the case rules
/// traffic judges).
fn level_of(rule: Rule) -> &'static str {
    rule.always_on()
        .or_else(|| OBSERVED_CASE_RULES.iter().find(|row| row.rule == rule))
        .map_or(crate::verdict::Level::Must, |row| row.level)
        .as_str()
}

/// One connection's checks and the frames kept for its report.
#[derive(Debug)]
pub struct ConnWatch {
    name: String,
    checks: StreamChecks,
    /// How long a request may go unanswered before the connection's end judges it.
    timeout_ms: f64,
    frames: usize,
    recent: VecDeque<ReportedFrame>,
    kept: Vec<ReportedFrame>,
    /// Rules this connection broke (its transcript goes with their rows).
    broke: BTreeSet<Rule>,
    /// The client sent its close frame: the server may still send frames (answers among
    /// them) until its own close, which then ends the connection as the client's doing.
    client_closed: bool,
    /// How far `checks.harness_errors` has been reported.
    client_problems_seen: usize,
}

impl ConnWatch {
    pub fn new(name: &str, timeout_ms: f64) -> ConnWatch {
        ConnWatch {
            name: name.to_owned(),
            checks: StreamChecks::observing(),
            timeout_ms,
            frames: 0,
            recent: VecDeque::with_capacity(CONTEXT_FRAMES),
            kept: Vec::new(),
            broke: BTreeSet::new(),
            client_closed: false,
            client_problems_seen: 0,
        }
    }

    /// The watch, sharing `runner`'s registry of invalid dispatches and `earlier`'s of every
    /// client's dispatches with the other connections of the same traffic (a proxy's
    /// clients, a capture's connections).
    pub fn sharing(mut self, runner: &InvalidDispatches, earlier: &EarlierDispatches) -> ConnWatch {
        self.checks.checker.words.share(runner);
        self.checks.earlier = Some(earlier.clone());
        self
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Checks one frame `from` a peer, `at_ms` after the connection opened. Client text is
    /// redacted before anything keeps it.
    pub fn frame(
        &mut self,
        from: Peer,
        at_ms: f64,
        seen: Seen<'_>,
        schemas: &Schemas,
    ) -> Vec<Found> {
        let index = self.frames;
        self.frames += 1;
        let text = match seen {
            Seen::Text(text) if from == Peer::Client => crate::redact::frame(text).into_owned(),
            Seen::Text(text) => text.to_owned(),
            Seen::Binary(n) => format!("<binary {n} bytes>"),
            Seen::Close { code, reason } => format!(
                "<close {} {reason}>",
                code.map_or_else(|| "-".to_owned(), |c| c.to_string())
            ),
            Seen::Lost => "<connection lost>".to_owned(),
        };
        let by_server = from == Peer::Server;
        let violations = match seen {
            // The client's close half-closes: what the server sends until its own close
            // is still checked, a response answering a request sent before it.
            Seen::Close { .. } if !by_server => {
                self.client_closed = true;
                Vec::new()
            }
            Seen::Close { .. } | Seen::Lost => {
                let by_host = by_server && !self.client_closed;
                self.checks.ended(at_ms, self.timeout_ms, by_host)
            }
            _ if by_server => self.checks.received(&text, schemas),
            _ => {
                self.checks.observed_sent(index, at_ms, &text, schemas);
                Vec::new()
            }
        };
        self.keep(ReportedFrame {
            conn: self.name.clone(),
            direction: if by_server { "received" } else { "sent" }.to_owned(),
            at_ms,
            text,
        });
        self.located(violations, index)
    }

    /// The connection is over (or the observation is) at `at_ms`: requests left
    /// unanswered for the timeout or more break TRANSPORT-003 (younger ones are skipped).
    /// Does nothing after the server's close or a lost connection was seen.
    pub fn end(&mut self, at_ms: f64) -> Vec<Found> {
        let violations = self.checks.ended(at_ms, self.timeout_ms, false);
        self.located(violations, self.frames.saturating_sub(1))
    }

    /// Schema problems in what the client sent since the last call (the client's, not the
    /// server's: reported, never a rule's failure).
    pub fn client_problems(&mut self) -> Vec<String> {
        let new = self.checks.harness_errors[self.client_problems_seen..]
            .iter()
            .map(|problem| {
                let problem =
                    problem.replace("the harness sent an invalid", "the client sent an invalid");
                let problem = problem.replace(" (not declared deliberate)", "");
                format!("connection {}: {problem}", self.name)
            })
            .collect();
        self.client_problems_seen = self.checks.harness_errors.len();
        new
    }

    fn keep(&mut self, frame: ReportedFrame) {
        if self.kept.len() < TRANSCRIPT_FRAMES {
            self.kept.push(frame.clone());
        }
        if self.recent.len() == CONTEXT_FRAMES {
            self.recent.pop_front();
        }
        self.recent.push_back(frame);
    }

    fn located(&mut self, violations: Vec<Violation>, frame: usize) -> Vec<Found> {
        let checks = &self.checks;
        let kept: Vec<Violation> = violations
            .into_iter()
            .filter(|v| !v.is_own_echo(|client, seq| checks.dispatched_here(client, seq)))
            .collect();
        kept.into_iter()
            .map(|violation| {
                self.broke.insert(violation.rule);
                Found {
                    violation,
                    conn: self.name.clone(),
                    frame,
                    context: self.recent.iter().cloned().collect(),
                }
            })
            .collect()
    }
}

/// What all connections found, gathered into the report.
#[derive(Debug, Default)]
pub struct Traffic {
    always_on: AlwaysOnRows,
    /// The transcript of the first connection that broke each rule.
    transcripts: HashMap<Rule, Vec<ReportedFrame>>,
    connections: usize,
    frames: usize,
    not_kept: usize,
    versions: BTreeSet<String>,
    client_problems: Vec<String>,
    client_problem_count: usize,
}

impl Traffic {
    /// Adds one violation.
    pub fn found(&mut self, found: Found) {
        let at = format!("on connection {}, frame {}", found.conn, found.frame + 1);
        self.always_on.found(found.violation, &at, found.context);
    }

    /// Adds client-side problems (see [`ConnWatch::client_problems`]).
    pub fn client_problems(&mut self, problems: Vec<String>) {
        self.client_problem_count += problems.len();
        let room = CLIENT_PROBLEMS_KEPT.saturating_sub(self.client_problems.len());
        self.client_problems.extend(problems.into_iter().take(room));
    }

    /// Takes in a finished connection: what its checks looked at, and its transcript for
    /// the rows of the rules it broke first.
    pub fn close(&mut self, mut watch: ConnWatch) {
        let problems = watch.client_problems();
        self.client_problems(problems);
        self.connections += 1;
        self.frames += watch.frames;
        self.not_kept += watch.frames.saturating_sub(watch.kept.len());
        let (mut counts, mut skipped) = (Counts::default(), Skips::default());
        watch.checks.tally(&mut counts, &mut skipped);
        self.always_on.looked_at(&counts, &skipped);
        if let Some((a, b, c)) = watch.checks.negotiated {
            self.versions.insert(format!("{a}.{b}.{c}"));
        }
        for rule in &watch.broke {
            self.transcripts
                .entry(*rule)
                .or_insert_with(|| watch.kept.clone());
        }
    }

    /// Client-side problems, kept and in all.
    pub fn client_problem_summary(&self) -> (&[String], usize) {
        (&self.client_problems, self.client_problem_count)
    }

    /// The report: one row per always-on rule over every connection taken in.
    pub fn report(
        mut self,
        target: &str,
        started_at: String,
        duration_ms: f64,
        rerun: &str,
    ) -> RunReport {
        let mut cases = Vec::with_capacity(ALWAYS_ON.len() + OBSERVED_CASE_RULES.len());
        for rule in ALWAYS_ON.iter().chain(OBSERVED_CASE_RULES) {
            let over = "frame of every connection";
            let mut row = self.always_on.row(rule, over, rerun.to_owned());
            if rule.requirement.contains("(at checkpoints)")
                || rule.requirement.contains("(and, at checkpoints,")
            {
                // Observed traffic has no checkpoints: say what was not judged.
                row.summary
                    .push_str("; the parts judged at checkpoints need a run and were not judged");
            }
            if rule.rule == Rule::InvFold1 {
                row.summary.push_str(
                    "; compared only where a client subscribed again to a channel its connection folded, once the channel's next action or the connection's end showed no action of it was still to come (observed traffic has no checkpoints)",
                );
            }
            if let Some(transcript) = self.transcripts.remove(&rule.rule) {
                row.transcript = transcript;
            }
            cases.push(row);
        }
        let target = format!(
            "{target} ({} connections, {} frames{})",
            self.connections,
            self.frames,
            if self.not_kept > 0 {
                format!(", {} beyond the kept transcripts", self.not_kept)
            } else {
                String::new()
            }
        );
        let version = if self.versions.is_empty() {
            "none negotiated".to_owned()
        } else {
            self.versions.into_iter().collect::<Vec<_>>().join(",")
        };
        let mut report = RunReport {
            started_at,
            duration_ms,
            ..RunReport::of(target, version, cases)
        };
        crate::rows::reconcile(&mut report, None);
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PING: &str =
        r#"{"jsonrpc":"2.0","id":3,"method":"ping","params":{"channel":"ahp-root://"}}"#;

    fn rules(found: &[Found]) -> Vec<&'static str> {
        found.iter().map(|f| f.violation.rule.id()).collect()
    }

    /// A ping, the client's close, then what the server sends before its own close.
    fn after_client_close(answer: &str) -> Vec<&'static str> {
        let schemas = Schemas::load(None).expect("schemas");
        let mut watch = ConnWatch::new("1", 1000.0);
        let mut found = watch.frame(Peer::Client, 0.7, Seen::Text(PING), &schemas);
        let close = Seen::Close {
            code: Some(1000),
            reason: "",
        };
        found.extend(watch.frame(Peer::Client, 1.0, close, &schemas));
        found.extend(watch.frame(Peer::Server, 1.2, Seen::Text(answer), &schemas));
        found.extend(watch.frame(Peer::Server, 1.3, close, &schemas));
        found.extend(watch.end(2.0));
        rules(&found)
    }

    #[test]
    fn an_answer_after_the_clients_close_answers_its_request() {
        let answer = r#"{"jsonrpc":"2.0","id":3,"result":null}"#;
        assert_eq!(after_client_close(answer), Vec::<&str>::new());
        // Its twin: an answer to nothing is still TRANSPORT-004's, close or no close.
        let stray = r#"{"jsonrpc":"2.0","id":4,"result":null}"#;
        assert_eq!(after_client_close(stray), vec!["TRANSPORT-004"]);
    }

    #[test]
    fn a_request_unanswered_past_the_timeout_breaks_transport_003_at_the_servers_close() {
        let schemas = Schemas::load(None).expect("schemas");
        let mut watch = ConnWatch::new("1", 1000.0);
        let close = Seen::Close {
            code: Some(1000),
            reason: "",
        };
        let mut found = watch.frame(Peer::Client, 0.0, Seen::Text(PING), &schemas);
        found.extend(watch.frame(Peer::Client, 1500.0, close, &schemas));
        assert!(found.is_empty(), "the client's close ends nothing yet");
        found.extend(watch.frame(Peer::Server, 1501.0, close, &schemas));
        assert_eq!(rules(&found), vec!["TRANSPORT-003"]);
        assert!(watch.end(2000.0).is_empty(), "judged once");
    }

    #[test]
    fn the_observed_case_rules_say_what_their_cases_say() {
        let catalog = crate::suite::Catalog::embedded().expect("the embedded suites");
        for rule in OBSERVED_CASE_RULES {
            let case = catalog
                .cases
                .iter()
                .find(|case| case.info.id == rule.id)
                .unwrap_or_else(|| panic!("{} has no case", rule.id));
            assert_eq!(rule.rule.id(), rule.id);
            assert_eq!(case.info.level, rule.level, "{}", rule.id);
            assert_eq!(case.info.spec, rule.spec, "{}", rule.id);
            assert_eq!(case.info.requirement, rule.requirement, "{}", rule.id);
            assert!(case.info.area.ends_with(rule.area), "{}", case.info.area);
            assert!(
                rule.rule.always_on().is_none(),
                "{} is a case rule",
                rule.id
            );
        }
    }

    /// A client that reconnects may get the echo of a dispatch it sent on its earlier
    /// connection (the replay carries it when the echo had not reached it before it left):
    /// that echo is its own, judged against that dispatch; an echo of a clientSeq it never
    /// sent, or of another action, still breaks DISPATCH-001.
    #[test]
    fn an_echo_of_a_dispatch_from_the_clients_earlier_connection_is_its_own() {
        let schemas = Schemas::load(None).expect("schemas");
        let hello = |method: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"{method}","params":{{"protocolVersions":["1.0.0"],"clientId":"me","lastSeenServerSeq":0,"subscriptions":[]}}}}"#
            )
        };
        let dispatch = r#"{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-session:/s","clientSeq":1,"action":{"type":"session/titleChanged","title":"one"}}}"#;
        let echo = |seq: u32, title: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"action","params":{{"channel":"ahp-session:/s","serverSeq":1,"origin":{{"clientId":"me","clientSeq":{seq}}},"action":{{"type":"session/titleChanged","title":"{title}"}}}}}}"#
            )
        };
        let dispatch_001 = |seq: u32, title: &str| {
            let (runner, earlier) = (InvalidDispatches::default(), EarlierDispatches::default());
            let mut first = ConnWatch::new("1", 1000.0).sharing(&runner, &earlier);
            let mut second = ConnWatch::new("2", 1000.0).sharing(&runner, &earlier);
            let mut found = Vec::new();
            for text in [hello("initialize"), dispatch.to_owned()] {
                found.extend(first.frame(Peer::Client, 0.0, Seen::Text(&text), &schemas));
            }
            let reconnect = hello("reconnect");
            found.extend(second.frame(Peer::Client, 1.0, Seen::Text(&reconnect), &schemas));
            let echoed = echo(seq, title);
            found.extend(second.frame(Peer::Server, 2.0, Seen::Text(&echoed), &schemas));
            found
                .iter()
                .filter(|f| f.violation.rule == Rule::Dispatch001)
                .count()
        };
        assert_eq!(
            dispatch_001(1, "one"),
            0,
            "the earlier connection's dispatch"
        );
        assert_eq!(
            dispatch_001(1, "two"),
            1,
            "another action than the one dispatched"
        );
        assert_eq!(
            dispatch_001(2, "one"),
            1,
            "a clientSeq the client never sent"
        );
    }

    /// A client dispatches a title change with a numeric title: the host's echo to it
    /// without rejectionReason breaks DISPATCH-007 (a warning: SHOULD), with one rejected
    /// the row passes; a copy another client gets is not judged again.
    #[test]
    fn an_observed_client_s_malformed_action_applied_breaks_dispatch_007() {
        let schemas = Schemas::load(None).expect("schemas");
        let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersions":["1.0.0"],"clientId":"me"}}"#;
        // Messages are judged malformed against the schemas of 1.0.0, once it is negotiated.
        let initialized = |version: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"protocolVersion":"{version}"}}}}"#)
        };
        let dispatch = |seq: u32, title: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"dispatchAction","params":{{"channel":"ahp-session:/s","clientSeq":{seq},"action":{{"type":"session/titleChanged","title":{title}}}}}}}"#
            )
        };
        let echo = |seq: u32, server_seq: u32, extra: &str, title: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"action","params":{{"channel":"ahp-session:/s","serverSeq":{server_seq},"origin":{{"clientId":"me","clientSeq":{seq}}}{extra},"action":{{"type":"session/titleChanged","title":{title}}}}}}}"#
            )
        };
        let run = |rejected: bool, version: &str| {
            let runner = InvalidDispatches::default();
            let mut traffic = Traffic::default();
            let earlier = EarlierDispatches::default();
            let mut sender = ConnWatch::new("1", 1000.0).sharing(&runner, &earlier);
            let mut other = ConnWatch::new("2", 1000.0).sharing(&runner, &earlier);
            let extra = if rejected {
                r#","rejectionReason":"title is no string""#
            } else {
                ""
            };
            let frames = [
                (Peer::Client, init.to_owned()),
                (Peer::Server, initialized(version)),
                (Peer::Client, dispatch(1, "42")),
                (Peer::Client, dispatch(2, r#""fine""#)),
                (Peer::Server, echo(1, 1, extra, "42")),
                (Peer::Server, echo(2, 2, "", r#""fine""#)),
            ];
            let mut found = Vec::new();
            for (at, (peer, text)) in frames.iter().enumerate() {
                found.extend(sender.frame(*peer, at as f64, Seen::Text(text), &schemas));
            }
            found.extend(other.frame(
                Peer::Server,
                9.0,
                Seen::Text(&echo(1, 1, extra, "42")),
                &schemas,
            ));
            let lines: Vec<String> = found.iter().map(Found::line).collect();
            let dispatch_007 = found
                .iter()
                .filter(|f| f.violation.rule == Rule::Dispatch007)
                .count();
            found.into_iter().for_each(|f| traffic.found(f));
            traffic.close(sender);
            traffic.close(other);
            let report = traffic.report("t", String::new(), 0.0, "");
            let row = report
                .cases
                .into_iter()
                .find(|row| row.info.id == "DISPATCH-007")
                .expect("a DISPATCH-007 row");
            (dispatch_007, lines, row)
        };
        use crate::verdict::Verdict;
        // A 0.9.x client's action may be well formed in its version: not judged.
        for (rejected, version, broken, verdict) in [
            (false, "1.0.0", 1, Verdict::Warn),
            (true, "1.0.0", 0, Verdict::Pass),
            (false, "0.9.0", 0, Verdict::NotTestable),
        ] {
            let (applied, lines, row) = run(rejected, version);
            assert_eq!(applied, broken, "{lines:?}");
            assert_eq!(row.verdict, verdict, "{}", row.summary);
            if broken > 0 {
                assert!(
                    lines.iter().any(|l| l.starts_with("DISPATCH-007 [SHOULD]")),
                    "{lines:?}"
                );
                assert!(
                    row.summary.contains("1 violation(s) in 1 echoes"),
                    "{}",
                    row.summary
                );
            }
        }
    }
}
