//! The malformed-request mode (`fuzz --protocol aap --mode malformed`): each operation
//! makes its own session (so shrinking can drop any operation) and sends one request a
//! server has to cope with — a body that is
//! not JSON, a wrong `Content-Type`, an oversized body, unknown fields, unknown enum
//! values, or a turn whose stream the client reads badly (leaves after the first event,
//! reads a byte at a time, stops reading) — judged by the rule that says how it must be
//! answered, then an ordinary turn on the session and `GET /meta`, which must still be
//! answered (AAP-HTTP-008). A request that gets no answer at all is charged to the rule of
//! its expectation.

use serde_json::{json, Value};

use super::generate::{expect, http, raw, Op, Rng};
use crate::aap::agent::Agent;
use crate::aap::suite::{SessionStep, Step, TurnStep};
use crate::checks::Rule;

/// Bodies larger than any server's sensible limit (the built-in one's is 1 MiB).
const OVERSIZED_BYTES: usize = 2 * 1024 * 1024;

/// Generates malformed-request sequences against one agent.
pub struct Malformed<'a> {
    agent: &'a Agent,
    modes: Vec<&'static str>,
    op: usize,
}

impl<'a> Malformed<'a> {
    pub fn new(agent: &'a Agent) -> Malformed<'a> {
        let modes = ["delta", "message"]
            .into_iter()
            .filter(|m| agent.declares(&format!("stream.{m}")))
            .collect();
        Malformed {
            agent,
            modes,
            op: 0,
        }
    }

    /// Up to `max_len` malformed operations.
    pub fn sequence(&mut self, rng: &mut Rng, max_len: usize) -> Vec<Op> {
        let len = 1 + rng.below(max_len.max(1));
        (0..len).map(|_| self.operation(rng)).collect()
    }

    fn name(&self, what: &str) -> String {
        format!("{what}{}", self.op)
    }

    fn operation(&mut self, rng: &mut Rng) -> Op {
        self.op += 1;
        let name = self.name("m");
        let session = self.name("s");
        let create = Step::Session(SessionStep {
            name: session.clone(),
            options: None,
            agent_tools: None,
            tools: None,
            messages: None,
        });
        let turns = format!("/sessions/${{{session}}}/turns");
        let user = json!([{ "role": "user", "content": "hello" }]);
        let mut steps = match rng.below(8) {
            0 => {
                let (path, body) = match rng.below(2) {
                    0 => ("/sessions".to_owned(), self.create_body()),
                    _ => (turns, json!({ "messages": user })),
                };
                let text = broken_json(rng, &body);
                refused(
                    raw("POST", path, &text, None, &name),
                    &name,
                    Rule::AapHttp003,
                )
            }
            1 => {
                let content_type = [
                    "text/plain",
                    "application/xml",
                    "application/x-www-form-urlencoded",
                ];
                let body = self.create_body().to_string();
                let kind = content_type[rng.below(content_type.len())];
                let step = raw("POST", "/sessions".into(), &body, Some(kind), &name);
                let mut answered = expect(&name, Rule::AapHttp005);
                answered.status_in = Some(vec![201, 400, 415]);
                vec![step, Step::Expect(answered)]
            }
            2 => {
                let filler = "x".repeat(OVERSIZED_BYTES + rng.below(4096));
                let body = json!({ "messages": [{ "role": "user", "content": filler }] });
                // Any answer but a 5xx (always on) will do; no answer is AAP-HTTP-008's.
                vec![
                    http("POST", turns, Some(body), &name),
                    Step::Expect(expect(&name, Rule::AapHttp008)),
                ]
            }
            3 => {
                let field = format!("ahpspec_unknown_{}", rng.below(1000));
                let body = json!({ "messages": user, field: { "n": rng.below(10) } });
                let mut accepted = expect(&name, Rule::AapHttp009);
                accepted.status = Some(200);
                vec![
                    http("POST", turns, Some(body), &name),
                    Step::Expect(accepted),
                ]
            }
            4 => {
                let body = match rng.below(2) {
                    0 => {
                        json!({ "stream": format!("sideways{}", rng.below(100)), "messages": user })
                    }
                    _ => {
                        json!({ "messages": [{ "role": format!("robot{}", rng.below(100)), "content": "hello" }] })
                    }
                };
                refused(
                    http("POST", turns, Some(body), &name),
                    &name,
                    Rule::AapHttp004,
                )
            }
            _ => self.bad_reader(rng, &name, &session),
        };
        steps.insert(0, create);
        steps.extend(self.still_well(&session));
        steps
    }

    fn create_body(&self) -> Value {
        json!({ "agent": { "name": self.agent.name } })
    }

    /// A turn in a streamed mode whose answer the client reads badly (a plain turn when
    /// the agent streams in no mode: nothing to read badly).
    fn bad_reader(&mut self, rng: &mut Rng, name: &str, session: &str) -> Op {
        let Some(mode) = (!self.modes.is_empty()).then(|| self.modes[rng.below(self.modes.len())])
        else {
            return Vec::new();
        };
        let readers = ["drop", "slow", "stall"];
        let turn = Step::Turn(TurnStep {
            session: session.into(),
            stream: Some(mode.into()),
            script: None,
            text: Some(format!("hello {}", rng.below(100))),
            messages: None,
            agent: None,
            tools: None,
            reader: Some(readers[rng.below(readers.len())].into()),
            name: Some(name.to_owned()),
        });
        let rule = match mode {
            "delta" => Rule::AapTurn003,
            _ => Rule::AapTurn004,
        };
        let mut answered = expect(name, rule);
        answered.status = Some(200);
        vec![turn, Step::Expect(answered)]
    }

    /// An ordinary turn on the session and `GET /meta`: both answered 200.
    fn still_well(&mut self, session: &str) -> Op {
        let turn = self.name("w");
        let meta = self.name("v");
        let mut turned = expect(&turn, Rule::AapHttp008);
        turned.status = Some(200);
        let mut described = expect(&meta, Rule::AapHttp008);
        described.status = Some(200);
        vec![
            Step::Turn(TurnStep {
                session: session.into(),
                stream: None,
                script: None,
                text: Some("still there?".into()),
                messages: None,
                agent: None,
                tools: None,
                reader: None,
                name: Some(turn),
            }),
            Step::Expect(turned),
            http("GET", "/meta".into(), None, &meta),
            Step::Expect(described),
        ]
    }
}

/// `step` and the expectation that its answer is a 4xx (`rule`'s).
fn refused(step: Step, name: &str, rule: Rule) -> Op {
    let mut refusal = expect(name, rule);
    refusal.class = Some("4xx".into());
    vec![step, Step::Expect(refusal)]
}

/// `body` (an ASCII JSON object) as text, broken: cut short (no strict prefix of an
/// object is JSON), a stray quote inserted (it splits a string or stands between tokens),
/// or not JSON at all.
fn broken_json(rng: &mut Rng, body: &Value) -> String {
    let text = body.to_string();
    match rng.below(3) {
        0 => text[..1 + rng.below(text.len() - 1)].to_owned(),
        1 => {
            let at = 1 + rng.below(text.len() - 1);
            format!("{}\"{}", &text[..at], &text[at..])
        }
        _ => ["", "null garbage", "{'single': 'quotes'}", "\u{1}\u{2}"][rng.below(4)].to_owned(),
    }
}
