//! Seeded random AAP request sequences, valid for the model of the server most of the
//! time (sessions, turns in the declared modes, scripted tool calls answered in the next
//! turn, reads, deletes), mixed with requests whose correct answer is a refusal (broken
//! JSON, wrong content types, bodies off the schema, unknown sessions). Each operation is a
//! group of suite steps — the request and what its answer must show, with the rule a miss
//! breaks — so a sequence runs, shrinks and replays as an ordinary AAP case.

use serde_json::{json, Value};

use crate::aap::agent::Agent;
use crate::aap::suite::{Expect, HttpStep, ListStep, SessionStep, Step, TurnStep};
use crate::checks::Rule;

/// SplitMix64: small, fast, and the same sequence for the same seed everywhere.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`n > 0`).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    pub fn chance(&mut self, percent: u64) -> bool {
        self.next_u64() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// A generated script: its JSON, the calls it leaves pending (id, whether a client call),
/// and the stop reason it must end with, with the rule a wrong one breaks.
type Scripted = (Value, Vec<(String, bool)>, Option<(String, Rule)>);

/// One operation: its steps (a request and its expectations).
pub type Op = Vec<Step>;

const CLIENT_TOOL: &str = "fz_client";
const WORDS: &[&str] = &[
    "alpha ",
    "beta",
    " gamma ",
    "δέλτα ",
    "",
    "e\nf",
    "quote\" ",
    "tab\t",
];

#[derive(Debug, Clone)]
struct Session {
    name: String,
    live: bool,
    client_tool: bool,
    /// The server tool enabled, and whether it is trusted.
    server_tool: Option<(String, bool)>,
    /// Calls left pending by the last turn: (id, whether a client call).
    pending: Vec<(String, bool)>,
}

/// What the generator knows about the target.
pub struct Generator<'a> {
    agent: &'a Agent,
    modes: Vec<&'static str>,
    server_tool: Option<String>,
    sessions: Vec<Session>,
    op: usize,
}

pub(super) fn expect(of: &str, rule: Rule) -> Expect {
    Expect {
        of: of.to_owned(),
        relies_on: Some(rule.to_string()),
        ..Expect::default()
    }
}

pub(super) fn http(method: &str, path: String, body: Option<Value>, name: &str) -> Step {
    Step::Http(HttpStep {
        method: method.to_owned(),
        path,
        body,
        raw: None,
        content_type: None,
        auth: Default::default(),
        name: Some(name.to_owned()),
    })
}

impl<'a> Generator<'a> {
    pub fn new(agent: &'a Agent) -> Generator<'a> {
        let modes = ["none", "delta", "message"]
            .into_iter()
            .filter(|m| agent.declares(&format!("stream.{m}")))
            .collect();
        let server_tool = agent
            .vars()
            .into_iter()
            .find(|(k, _)| k == "server_tool")
            .map(|(_, v)| v);
        Generator {
            agent,
            modes,
            server_tool,
            sessions: Vec::new(),
            op: 0,
        }
    }

    /// A sequence of up to `max_len` operations.
    pub fn sequence(&mut self, rng: &mut Rng, max_len: usize) -> Vec<Op> {
        let len = 1 + rng.below(max_len.max(1));
        (0..len).map(|_| self.operation(rng)).collect()
    }

    fn operation(&mut self, rng: &mut Rng) -> Op {
        self.op += 1;
        let live: Vec<usize> = (0..self.sessions.len())
            .filter(|i| self.sessions[*i].live)
            .collect();
        if live.is_empty() || rng.chance(15) {
            return self.create(rng);
        }
        let index = *rng.pick(&live);
        if !self.sessions[index].pending.is_empty() {
            return self.answer(rng, index);
        }
        match rng.below(10) {
            0..=3 => self.turn(rng, index),
            4 => self.read(index),
            5 => self.history(index),
            6 => vec![Step::List(ListStep {
                contains: live
                    .iter()
                    .map(|i| self.sessions[*i].name.clone())
                    .collect(),
                lacks: Vec::new(),
            })],
            7 => self.delete(index),
            _ => self.malformed(rng, index),
        }
    }

    fn name(&self, what: &str) -> String {
        format!("{what}{}", self.op)
    }

    fn create(&mut self, rng: &mut Rng) -> Op {
        let name = format!("s{}", self.sessions.len());
        let client_tool = self.agent.declares("application.tools") && rng.chance(50);
        let server_tool = self
            .server_tool
            .clone()
            .filter(|_| rng.chance(60))
            .map(|t| (t, rng.chance(50)));
        let tools = client_tool.then(|| json!([{ "name": CLIENT_TOOL, "description": "fuzz", "inputSchema": { "type": "object" } }]));
        let agent_tools = server_tool
            .as_ref()
            .map(|(t, trust)| json!([{ "name": t, "trust": trust }]));
        self.sessions.push(Session {
            name: name.clone(),
            live: true,
            client_tool,
            server_tool,
            pending: Vec::new(),
        });
        vec![Step::Session(SessionStep {
            name,
            options: None,
            agent_tools,
            tools,
            messages: None,
        })]
    }

    fn mode(&self, rng: &mut Rng) -> Option<String> {
        // `None` leaves `stream` out: the default, none mode.
        let index = rng.below(self.modes.len() + 1);
        self.modes.get(index).map(|m| (*m).to_owned())
    }

    fn turn(&mut self, rng: &mut Rng, index: usize) -> Op {
        let name = self.name("t");
        let mode = self.mode(rng);
        let rule = match mode.as_deref() {
            Some("delta") => Rule::AapTurn003,
            Some("message") => Rule::AapTurn004,
            _ => Rule::AapTurn001,
        };
        let session = self.sessions[index].clone();
        let (script, text, stop) = if self.agent.scripted() && rng.chance(75) {
            let (script, pending, stop) = self.script(rng, &session);
            self.sessions[index].pending = pending;
            (Some(script), None, stop)
        } else {
            (None, Some(format!("hello {}", rng.pick(WORDS))), None)
        };
        let turn = Step::Turn(TurnStep {
            session: session.name,
            stream: mode,
            script,
            text,
            messages: None,
            agent: None,
            tools: None,
            reader: None,
            name: Some(name.clone()),
        });
        let mut ok = expect(&name, rule);
        ok.status = Some(200);
        let mut steps = vec![turn, Step::Expect(ok)];
        if let Some((stop, rule)) = stop {
            let mut stopped = expect(&name, rule);
            stopped.stop_reason = Some(stop);
            steps.push(Step::Expect(stopped));
        }
        steps
    }

    /// A script for the session's tools: its JSON, the calls it leaves pending, and the stop
    /// reason it must end with (with the rule a wrong one breaks).
    fn script(&mut self, rng: &mut Rng, session: &Session) -> Scripted {
        let mut steps = Vec::new();
        let mut pending = Vec::new();
        for k in 0..rng.below(4) {
            match rng.below(5) {
                0 | 1 => {
                    let text = format!("{}{}", rng.pick(WORDS), rng.pick(WORDS));
                    steps.push(json!({ "text": text }));
                }
                2 => steps.push(json!({ "thinking": *rng.pick(WORDS) })),
                3 if session.client_tool => {
                    let id = format!("fz_{}_{k}", self.op);
                    steps.push(json!({ "tool_call": { "name": CLIENT_TOOL, "input": { "k": k }, "id": id } }));
                    pending.push((id, true));
                }
                _ => {
                    if let Some((tool, trust)) = &session.server_tool {
                        let id = format!("fz_{}_{k}", self.op);
                        steps.push(
                            json!({ "tool_call": { "name": tool, "input": { "k": k }, "id": id } }),
                        );
                        if !trust {
                            pending.push((id, false));
                        }
                    }
                }
            }
        }
        let stops = ["end_turn", "max_tokens", "refusal", "error"];
        let stop = *rng.pick(&stops);
        let script =
            json!({ "steps": steps, "stop": stop, "then": { "steps": [{ "text": "resumed" }] } });
        let expected = match pending.first() {
            Some((_, true)) => ("tool_use".to_owned(), Rule::AapTool001),
            Some((_, false)) => ("tool_use".to_owned(), Rule::AapTool004),
            None if session.server_tool.as_ref().is_some_and(|(_, t)| *t)
                && steps.iter().any(|s| s.get("tool_call").is_some()) =>
            {
                (stop.to_owned(), Rule::AapTool007)
            }
            None => (stop.to_owned(), Rule::AapTurn006),
        };
        (script, pending, Some(expected))
    }

    fn answer(&mut self, rng: &mut Rng, index: usize) -> Op {
        let name = self.name("a");
        let pending = std::mem::take(&mut self.sessions[index].pending);
        let messages: Vec<Value> = pending
            .iter()
            .map(|(id, client)| match client {
                true => json!({ "role": "tool", "toolCallId": id, "content": "fuzz result" }),
                false => json!({ "role": "tool_permission", "toolCallId": id, "granted": rng.chance(50) }),
            })
            .collect();
        let mode = self.mode(rng);
        let turn = Step::Turn(TurnStep {
            session: self.sessions[index].name.clone(),
            stream: mode,
            script: None,
            text: None,
            messages: Some(Value::Array(messages)),
            agent: None,
            tools: None,
            reader: None,
            name: Some(name.clone()),
        });
        let mut ok = expect(&name, Rule::AapTool002);
        ok.status = Some(200);
        vec![turn, Step::Expect(ok)]
    }

    fn read(&mut self, index: usize) -> Op {
        let name = self.name("g");
        let session = &self.sessions[index];
        let mut got = expect(&name, Rule::AapSession003);
        got.status = Some(200);
        got.json
            .insert("/sessionId".into(), json!(format!("${{{}}}", session.name)));
        vec![
            http(
                "GET",
                format!("/sessions/${{{}}}", session.name),
                None,
                &name,
            ),
            Step::Expect(got),
        ]
    }

    fn history(&mut self, index: usize) -> Op {
        let name = self.name("h");
        let session = self.sessions[index].name.clone();
        let declared = self.agent.declares("history.full");
        let mut got = expect(
            &name,
            if declared {
                Rule::AapHistory001
            } else {
                Rule::AapHistory002
            },
        );
        got.status = Some(if declared { 200 } else { 404 });
        vec![
            http(
                "GET",
                format!("/sessions/${{{session}}}/history?type=full"),
                None,
                &name,
            ),
            Step::Expect(got),
        ]
    }

    fn delete(&mut self, index: usize) -> Op {
        let name = self.name("d");
        let session = self.sessions[index].name.clone();
        self.sessions[index].live = false;
        let mut gone = expect(&name, Rule::AapSession005);
        gone.status = Some(204);
        let after = self.name("x");
        let mut missing = expect(&after, Rule::AapSession005);
        missing.status = Some(404);
        vec![
            http("DELETE", format!("/sessions/${{{session}}}"), None, &name),
            Step::Expect(gone),
            http("GET", format!("/sessions/${{{session}}}"), None, &after),
            Step::Expect(missing),
        ]
    }

    /// A request whose correct answer is a refusal (or, for a text/plain body, a refusal or
    /// the JSON reading of it).
    fn malformed(&mut self, rng: &mut Rng, index: usize) -> Op {
        let name = self.name("m");
        let session = self.sessions[index].name.clone();
        let turns = format!("/sessions/${{{session}}}/turns");
        let (step, rule, statuses): (Step, Rule, Option<Vec<u16>>) = match rng.below(5) {
            0 => (
                raw("POST", "/sessions".into(), "{\"agent\":", None, &name),
                Rule::AapHttp003,
                None,
            ),
            1 => (
                raw("POST", turns, "{\"messages\": [", None, &name),
                Rule::AapHttp003,
                None,
            ),
            2 => (
                http(
                    "POST",
                    turns,
                    Some(
                        json!({ "stream": "sideways", "messages": [{ "role": "user", "content": "x" }] }),
                    ),
                    &name,
                ),
                Rule::AapHttp004,
                None,
            ),
            3 => (
                http(
                    "POST",
                    format!("/sessions/fz-missing-{}/turns", self.op),
                    Some(json!({ "messages": [{ "role": "user", "content": "x" }] })),
                    &name,
                ),
                Rule::AapTurn005,
                Some(vec![404]),
            ),
            _ => {
                let body = json!({ "agent": { "name": self.agent.name } }).to_string();
                (
                    raw("POST", "/sessions".into(), &body, Some("text/plain"), &name),
                    Rule::AapHttp005,
                    Some(vec![201, 400, 415]),
                )
            }
        };
        let mut refused = expect(&name, rule);
        match statuses {
            Some(list) => refused.status_in = Some(list),
            None => refused.class = Some("4xx".into()),
        }
        vec![step, Step::Expect(refused)]
    }
}

pub(super) fn raw(
    method: &str,
    path: String,
    body: &str,
    content_type: Option<&str>,
    name: &str,
) -> Step {
    Step::Http(HttpStep {
        method: method.to_owned(),
        path,
        body: None,
        raw: Some(body.to_owned()),
        content_type: content_type.map(str::to_owned),
        auth: Default::default(),
        name: Some(name.to_owned()),
    })
}
