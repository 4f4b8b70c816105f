//! Replayable traces of fuzz failures (sequence + observed frames + verdict), and their
//! conversion into an ordinary suite case so a found bug becomes a regression test.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::exec::{Failure, Performed};
use super::model::{Channel, Expect};
use super::ops::Op;
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
        let path = dir.join(format!("{}-{}.json", self.seed, self.failure.rule));
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
            self.failure.actual.replace('\n', " ")
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
        out.push_str(&format!(
            "does = {}\n",
            toml_string(&format!(
                "Replays the {} dispatches of the shrunk fuzz sequence.",
                self.performed.len()
            ))
        ));
        let ops: Vec<Op> = serde_json::from_value(self.ops.clone()).unwrap_or_default();
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
        for (index, performed) in self.performed.iter().enumerate() {
            let channel = match performed.planned.channel {
                Channel::Session => "${S}",
                Channel::Chat => "${S.chat}",
            };
            let name = format!("d{index}");
            out.push_str(&format!(
                "  {{ dispatch = {{ channel = \"{channel}\", action = {}, as = \"{name}\" }} }},\n",
                toml_inline(&performed.planned.action)
            ));
            match performed.planned.expect {
                Expect::Accept => out.push_str(&format!(
                    "  {{ echo = {{ of = \"{name}\", accepted = true }} }},\n"
                )),
                Expect::Reject => out.push_str(&format!(
                    "  {{ echo = {{ of = \"{name}\", accepted = false }} }},\n"
                )),
                Expect::RejectOrIgnore => out.push_str(&format!(
                    "  {{ echo = {{ of = \"{name}\", accepted = false, or_ignored = true }} }},\n"
                )),
                Expect::Either => {}
            }
            out.push_str("  { sleep = { ms = 20 } },\n");
        }
        out.push_str("  { checkpoint = {} },\n]\n");
        out
    }
}

fn toml_string(text: &str) -> String {
    // A TOML basic string is a JSON string for everything we write.
    Value::String(text.to_owned()).to_string()
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
