//! Replayable traces of fuzz failures (sequence + observed frames + verdict), and their
//! conversion into an ordinary suite case so a found bug becomes a regression test.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::exec::{Failure, Performed};
use super::model::{Channel, Expect};
use super::ops::{Op, Probe};
use super::Found;
use crate::verdict::ReportedFrame;

/// A saved failure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    pub format: u32,
    pub tool_version: String,
    pub seed: u64,
    /// `builtin` or the server URL.
    pub target: String,
    /// The built-in host's faults, combined (`a,b`; traces of older versions name one).
    pub fault: Option<String>,
    /// `model` (operation sequences) or `frames` (mutated frames).
    pub mode: String,
    pub failure: Failure,
    pub original_len: usize,
    pub shrink_steps: usize,
    /// The shrunk sequence (operations or frame mutations, by mode).
    pub ops: Value,
    pub performed: Vec<Performed>,
    pub frames: Vec<ReportedFrame>,
}

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot write {path}: {source}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path} is not a fuzz trace: {source}")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl Trace {
    pub fn new<T: Serialize>(
        found: &Found<T>,
        mode: &str,
        target: &str,
        fault: Option<String>,
    ) -> Trace {
        Trace {
            mode: mode.to_owned(),
            format: 1,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            seed: found.seed,
            target: target.to_owned(),
            fault,
            failure: found.failure.clone(),
            original_len: found.original_len,
            shrink_steps: found.shrink_steps,
            ops: serde_json::to_value(&found.ops).unwrap_or(Value::Null),
            performed: found.execution.performed.clone(),
            frames: found.execution.frames.clone(),
        }
    }

    /// Writes the trace as `<dir>/<seed>-<rule>.json` (atomically) and returns the path.
    pub fn save(&self, dir: &Path) -> Result<PathBuf, TraceError> {
        let path = trace_path(dir, self.seed, &self.failure.rule);
        let write = |path: &Path| -> std::io::Result<()> {
            std::fs::create_dir_all(dir)?;
            let text = serde_json::to_string_pretty(self).map_err(std::io::Error::other)?;
            let temp = path.with_extension("json.tmp");
            std::fs::write(&temp, text + "\n")?;
            std::fs::rename(&temp, path)
        };
        write(&path).map_err(|source| TraceError::Write {
            path: path.clone(),
            source,
        })?;
        Ok(path)
    }

    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        let text = std::fs::read_to_string(path).map_err(|source| TraceError::Read {
            path: path.to_owned(),
            source,
        })?;
        serde_json::from_str(&text).map_err(|source| TraceError::Parse {
            path: path.to_owned(),
            source,
        })
    }

    /// The failing sequence as a suite case (TOML): the same dispatches with the answers a
    /// correct host gives, and a checkpoint at the end.
    pub fn to_case(&self) -> String {
        let mut out = String::new();
        let id = format!("{}/fuzz-{}", self.failure.rule, self.seed);
        out.push_str(&format!(
            "# Regression case from `ahpspec fuzz --seed {}`: {}\n",
            self.seed,
            // TOML comments admit no control characters but tab.
            self.failure
                .actual
                .chars()
                .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
                .collect::<String>()
        ));
        out.push_str("[[case]]\n");
        out.push_str(&format!("id = {}\n", toml_string(&id)));
        out.push_str("level = \"MUST\"\n");
        out.push_str(&format!("spec = {}\n", toml_string("found by the fuzzer")));
        out.push_str(&format!(
            "requirement = {}\n",
            toml_string(&format!(
                "{} (expected {})",
                self.failure.rule, self.failure.expected
            ))
        ));
        let ops: Vec<Op> = serde_json::from_value(self.ops.clone()).unwrap_or_default();
        out.push_str(&format!(
            "does = {}\n",
            toml_string(&format!(
                "Replays the shrunk fuzz sequence: {} dispatches and {} protocol probes.",
                self.performed.len(),
                ops.iter()
                    .filter(|op| matches!(op, Op::Probe { .. }))
                    .count()
            ))
        ));
        let mut needs: Vec<&str> = ops
            .iter()
            .filter_map(|op| match op {
                Op::StartTurn { behaviour, .. } => Some(behaviour.key()),
                _ => None,
            })
            .collect();
        needs.sort();
        needs.dedup();
        if !needs.is_empty() {
            out.push_str(&format!(
                "needs = [{}]\n",
                needs
                    .iter()
                    .map(|n| toml_string(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        out.push_str("steps = [\n  { initialize = {} },\n  { session = { as = \"S\" } },\n");
        out.push_str(&self.other_clients_join());
        let mut performed = self.performed.iter().enumerate().peekable();
        for (op_index, op) in ops.iter().enumerate() {
            while let Some((index, done)) = performed.next_if(|(_, p)| p.op_index == op_index) {
                out.push_str(&dispatch_steps(index, done));
            }
            if let Op::Probe { probe, .. } = op {
                out.push_str(&probe_steps(op_index, *probe));
            }
        }
        // Traces of older formats may name dispatches the operations do not reach.
        for (index, done) in performed {
            out.push_str(&dispatch_steps(index, done));
        }
        out.push_str("  { checkpoint = {} },\n]\n");
        out
    }

    /// Steps for the other clients of the run: they join the session and its chat, as in
    /// the run: some dispatch, and all of them observe (a missing broadcast shows on them).
    fn other_clients_join(&self) -> String {
        let mut out = String::new();
        let mut others: Vec<usize> = self
            .performed
            .iter()
            .map(|p| p.client)
            .chain(self.frames.iter().filter_map(|f| {
                f.conn
                    .strip_prefix('c')
                    .and_then(|n| n.parse::<usize>().ok())
                    .and_then(|n| n.checked_sub(1))
            }))
            .filter(|c| *c > 0)
            .collect();
        others.sort_unstable();
        others.dedup();
        for client in others {
            let conn = format!("c{}", client + 1);
            out.push_str(&format!("  {{ initialize = {{ on = \"{conn}\" }} }},\n"));
            for (channel, tag) in [("${S}", "s"), ("${S.chat}", "c")] {
                out.push_str(&format!(
                    "  {{ request = {{ on = \"{conn}\", method = \"subscribe\", params = {{ channel = \"{channel}\", delivery = {{ maxLatencyMs = 0 }} }}, as = \"{conn}{tag}\" }} }},\n  {{ response = {{ on = \"{conn}\", to = \"{conn}{tag}\", ok = true }} }},\n"
                ));
            }
        }
        out
    }
}

/// Where the trace of `rule`'s finding in the campaign with `seed` is saved: one per rule.
pub fn trace_path(dir: &Path, seed: u64, rule: &str) -> PathBuf {
    dir.join(format!("{seed}-{rule}.json"))
}

/// The steps that replay one dispatch and expect what the model judged.
fn dispatch_steps(index: usize, performed: &Performed) -> String {
    let channel = match performed.planned.channel {
        Channel::Session => "${S}",
        Channel::Chat => "${S.chat}",
    };
    let name = format!("d{index}");
    // Each dispatch on the connection of the client that made it.
    let on = match performed.client {
        0 => String::new(),
        client => format!("on = \"c{}\", ", client + 1),
    };
    let mut out = format!(
        "  {{ dispatch = {{ {on}channel = \"{channel}\", action = {}, as = \"{name}\" }} }},\n",
        toml_inline(&performed.planned.action)
    );
    let echo = match performed.planned.expect {
        Expect::Accept => "accepted = true",
        Expect::Reject => "accepted = false",
        Expect::RejectOrIgnore => "accepted = false, or_ignored = true",
        Expect::Either => "",
    };
    if !echo.is_empty() {
        out.push_str(&format!("  {{ echo = {{ of = \"{name}\", {echo} }} }},\n"));
    }
    out.push_str("  { sleep = { ms = 20 } },\n");
    out
}

/// The steps that repeat a protocol probe with the same expectation.
fn probe_steps(n: usize, probe: Probe) -> String {
    let lines: Vec<String> = match probe {
        Probe::SubscribeUnknown => vec![
            format!("{{ request = {{ method = \"subscribe\", params = {{ channel = \"ahp-session:/${{run}}-nope-{n}\" }}, as = \"p{n}\" }} }}"),
            format!("{{ response = {{ to = \"p{n}\", ok = false }} }}"),
        ],
        Probe::DispatchToMissing => vec![
            format!("{{ dispatch = {{ channel = \"ahp-session:/${{run}}-nope-{n}\", action = {{ type = \"session/titleChanged\", title = \"nowhere\" }} }} }}"),
            "{ silence = { for_ms = 200, method = \"action\", where = { \"/params/channel\" = \"ahp-session:/${run}-nope-".to_owned() + &format!("{n}\" }} }} }}"),
        ],
        Probe::SideSession => vec![
            format!("{{ session = {{ as = \"X{n}\", wait_ready = false }} }}"),
            format!("{{ notification = {{ method = \"root/sessionAdded\", where = {{ \"/summary/resource\" = \"${{X{n}}}\" }} }} }}"),
            format!("{{ request = {{ method = \"disposeSession\", params = {{ channel = \"${{X{n}}}\" }}, as = \"p{n}\" }} }}"),
            format!("{{ response = {{ to = \"p{n}\", ok = true }} }}"),
            format!("{{ notification = {{ method = \"root/sessionRemoved\", where = {{ \"/session\" = \"${{X{n}}}\" }} }} }}"),
        ],
        Probe::DuplicateSession => vec![
            format!("{{ request = {{ method = \"createSession\", params = {{ channel = \"${{S}}\" }}, as = \"p{n}\" }} }}"),
            format!("{{ response = {{ to = \"p{n}\", ok = false, codes = [-32003] }} }}"),
        ],
        Probe::UnknownProvider => vec![
            format!("{{ request = {{ method = \"createSession\", params = {{ channel = \"ahp-session:/${{run}}-provider-{n}\", provider = \"fz-no-such-agent\" }}, as = \"p{n}\" }} }}"),
            format!("{{ response = {{ to = \"p{n}\", ok = false, codes = [-32002] }} }}"),
        ],
        Probe::PingBeforeInitialize => vec![
            format!("{{ connect = {{ on = \"p{n}\" }} }}"),
            format!("{{ request = {{ on = \"p{n}\", method = \"ping\", params = {{ channel = \"ahp-root://\" }}, as = \"ping{n}\" }} }}"),
            format!("{{ response = {{ on = \"p{n}\", to = \"ping{n}\", ok = true }} }}"),
        ],
        Probe::MixedVersions => vec![
            format!("{{ initialize = {{ on = \"v{n}\", versions = [\"0.9.0\", \"1.2.0\"] }} }}"),
            format!("{{ response = {{ on = \"v{n}\", to = \"v{n}.init\", equals = {{ \"/result/protocolVersion\" = \"1.2.0\" }} }} }}"),
        ],
        Probe::UnsupportedVersion => vec![
            format!("{{ initialize = {{ on = \"v{n}\", versions = [\"2.0.0\"], send_only = true }} }}"),
            format!("{{ response = {{ on = \"v{n}\", to = \"v{n}.init\", ok = false, codes = [-32005], has = [\"/error/data/supportedVersions/0\"] }} }}"),
            format!("{{ closed = {{ on = \"v{n}\", within_ms = 2000 }} }}"),
        ],
        Probe::Unsubscribe => vec![
            format!("{{ initialize = {{ on = \"u{n}\" }} }}"),
            format!("{{ request = {{ on = \"u{n}\", method = \"subscribe\", params = {{ channel = \"${{S}}\" }}, as = \"u{n}sub\" }} }}"),
            format!("{{ response = {{ on = \"u{n}\", to = \"u{n}sub\", ok = true }} }}"),
            format!("{{ notify = {{ on = \"u{n}\", method = \"unsubscribe\", params = {{ channel = \"${{S}}\" }} }} }}"),
            format!("{{ request = {{ on = \"u{n}\", method = \"ping\", params = {{ channel = \"ahp-root://\" }}, as = \"u{n}sync\" }} }}"),
            format!("{{ response = {{ on = \"u{n}\", to = \"u{n}sync\", ok = true }} }}"),
            format!("{{ dispatch = {{ channel = \"${{S}}\", action = {{ type = \"session/titleChanged\", title = \"unsub-{n}\" }}, as = \"u{n}title\" }} }}"),
            format!("{{ echo = {{ of = \"u{n}title\", accepted = true }} }}"),
            format!("{{ silence = {{ on = \"u{n}\", for_ms = 150, channel = \"${{S}}\" }} }}"),
        ],
        // The fuzzer's turns happened on c1 before: a one-turn window leaves a cursor.
        Probe::FetchTurns => vec![
            format!("{{ initialize = {{ on = \"f{n}\" }} }}"),
            format!("{{ request = {{ on = \"f{n}\", method = \"subscribe\", params = {{ channel = \"${{S.chat}}\", view = {{ turns = 1 }}, delivery = {{ maxLatencyMs = 0 }} }}, as = \"f{n}sub\" }} }}"),
            format!("{{ response = {{ on = \"f{n}\", to = \"f{n}sub\", ok = true, has = [\"/result/snapshot/state/turnsNextCursor\"] }} }}"),
            format!("{{ request = {{ on = \"f{n}\", method = \"fetchTurns\", params = {{ channel = \"${{S.chat}}\", cursor = \"fz-bogus-{n}\" }}, as = \"f{n}bad\" }} }}"),
            format!("{{ response = {{ on = \"f{n}\", to = \"f{n}bad\", ok = false, codes = [-32602] }} }}"),
            format!("{{ request = {{ on = \"f{n}\", method = \"fetchTurns\", params = {{ channel = \"${{S.chat}}\", cursor = \"${{f{n}sub/result/snapshot/state/turnsNextCursor}}\" }}, as = \"f{n}fetch\" }} }}"),
            format!("{{ action = {{ on = \"f{n}\", channel = \"${{S.chat}}\", type = \"chat/turnsLoaded\" }} }}"),
            format!("{{ silence = {{ on = \"f{n}\", for_ms = 0, responses = true }} }}"),
            format!("{{ response = {{ on = \"f{n}\", to = \"f{n}fetch\", ok = true }} }}"),
        ],
        Probe::Telemetry => vec![
            format!("{{ initialize = {{ on = \"l{n}\" }} }}"),
            format!("{{ request = {{ on = \"l{n}\", method = \"subscribe\", params = {{ channel = \"${{l{n}.init/result/telemetry/logs}}\" }}, as = \"l{n}sub\" }} }}"),
            format!("{{ response = {{ on = \"l{n}\", to = \"l{n}sub\", ok = true, lacks = [\"/result/snapshot\"] }} }}"),
        ],
        Probe::SessionConfig => vec![
            format!("{{ request = {{ method = \"resolveSessionConfig\", params = {{ channel = \"ahp-root://\" }}, as = \"p{n}\" }} }}"),
            format!("{{ response = {{ to = \"p{n}\", ok = true }} }}"),
            format!("{{ request = {{ method = \"resolveSessionConfig\", params = {{ channel = \"ahp-root://\", config = \"${{p{n}/result/values}}\" }}, as = \"p{n}a\" }} }}"),
            format!("{{ response = {{ to = \"p{n}a\", ok = true, equals = {{ \"/result/values\" = \"${{p{n}/result/values}}\" }} }} }}"),
            format!("{{ request = {{ method = \"completions\", params = {{ channel = \"${{S.chat}}\", kind = \"userMessage\", text = \"🙂 see @C\", offset = 9 }}, as = \"p{n}c\" }} }}"),
            format!("{{ response = {{ to = \"p{n}c\", ok = true }} }}"),
        ],
        Probe::Terminal => vec![
            format!("{{ request = {{ method = \"createTerminal\", params = {{ channel = \"ahp-terminal:/${{run}}-term-{n}\", claim = {{ kind = \"client\", clientId = \"${{c1.clientId}}\" }} }}, as = \"p{n}\" }} }}"),
            format!("{{ response = {{ to = \"p{n}\", ok = true }} }}"),
            format!("{{ action = {{ channel = \"ahp-root://\", type = \"root/terminalsChanged\", where_contains = {{ \"/action/terminals\" = {{ resource = \"ahp-terminal:/${{run}}-term-{n}\" }} }} }} }}"),
            format!("{{ state = {{ channel = \"ahp-terminal:/${{run}}-term-{n}\", has = [\"/lifecycle\"] }} }}"),
            format!("{{ dispatch = {{ channel = \"ahp-terminal:/${{run}}-term-{n}\", action = {{ type = \"terminal/input\", data = \"true\\nexit 0\\n\" }} }} }}"),
            format!("{{ action = {{ channel = \"ahp-terminal:/${{run}}-term-{n}\", type = \"terminal/exited\" }} }}"),
            format!("{{ request = {{ method = \"disposeTerminal\", params = {{ channel = \"ahp-terminal:/${{run}}-term-{n}\" }}, as = \"p{n}d\" }} }}"),
            format!("{{ response = {{ to = \"p{n}d\", ok = true }} }}"),
            format!("{{ action = {{ channel = \"ahp-root://\", type = \"root/terminalsChanged\", where_excludes = {{ \"/action/terminals\" = {{ resource = \"ahp-terminal:/${{run}}-term-{n}\" }} }} }} }}"),
        ],
    };
    lines.iter().map(|line| format!("  {line},\n")).collect()
}

fn toml_string(text: &str) -> String {
    // A TOML basic string is a JSON string, except that TOML also wants DEL (U+007F) escaped,
    // which JSON leaves as it is (a fuzz campaign of the loaders found it).
    Value::String(text.to_owned())
        .to_string()
        .replace('\u{7f}', "\\u007F")
}

/// A JSON value as a TOML inline value (nulls dropped: TOML has none).
fn toml_inline(value: &Value) -> String {
    match value {
        Value::Null => "\"\"".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => toml_string(s),
        Value::Array(items) => format!(
            "[{}]",
            items
                .iter()
                .filter(|v| !v.is_null())
                .map(toml_inline)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Value::Object(map) => format!(
            "{{ {} }}",
            map.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| format!("{} = {}", toml_string(k), toml_inline(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
