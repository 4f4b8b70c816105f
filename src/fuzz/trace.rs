//! Replayable traces of fuzz failures (sequence + observed frames + verdict), and their
//! conversion into an ordinary suite case so a found bug becomes a regression test.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::exec::{Failure, Performed, Probed};
use super::ops::Op;
use super::{regression, Found};
use crate::checks::Rule;
use crate::suite::{Checkpoint, Initialize, MakeSession, Step};
use crate::verdict::{Level, ReportedFrame};

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
    /// The steps each protocol probe ran (format 2; traces of format 1 hold none).
    #[serde(default)]
    pub probed: Vec<Probed>,
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
            format: 2,
            tool_version: env!("CARGO_PKG_VERSION").into(),
            seed: found.seed,
            target: target.to_owned(),
            fault,
            failure: found.failure.clone(),
            original_len: found.original_len,
            shrink_steps: found.shrink_steps,
            ops: serde_json::to_value(&found.ops).unwrap_or(Value::Null),
            performed: found.execution.performed.clone(),
            probed: found.execution.probed.clone(),
            frames: found.execution.frames.clone(),
        }
    }

    /// Writes the trace as `<dir>/<seed>-<rule>.json` (atomically) and returns the path.
    pub fn save(&self, dir: &Path) -> Result<PathBuf, TraceError> {
        let path = trace_path(dir, self.seed, self.failure.rule);
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
    /// correct host gives, each probe as the steps it ran, and a checkpoint at the end. The
    /// steps are typed and written by serde; only the comments above are text.
    pub fn to_case(&self) -> String {
        let ops: Vec<Op> = serde_json::from_value(self.ops.clone()).unwrap_or_default();
        let mut needs: Vec<String> = ops
            .iter()
            .filter_map(|op| match op {
                Op::StartTurn { behaviour, .. } => Some(behaviour.key().to_owned()),
                _ => None,
            })
            .collect();
        needs.sort();
        needs.dedup();
        let probes = ops
            .iter()
            .filter(|op| matches!(op, Op::Probe { .. }))
            .count();
        let routines = ops
            .iter()
            .filter(|op| matches!(op, Op::Routine { .. }))
            .count();
        // Delivery across connections is judged at the fuzzer's checkpoints only, and a
        // rejected dispatch's effect on a fresh snapshot after the rejection: no step claims
        // either. The case stands on what a checkpoint does see of them, the fold they leave
        // behind (INV-FOLD-1), and its requirement names the finding.
        let claimed = match self.failure.rule {
            Rule::Dispatch002 | Rule::Sub003 | Rule::Dispatch003 => Rule::InvFold1,
            rule => rule,
        };
        let case = RegressionCase {
            id: format!("{claimed}/fuzz-{}", self.seed),
            level: Level::Must,
            spec: "found by the fuzzer".into(),
            requirement: format!("{} (expected {})", self.failure.rule, self.failure.expected),
            does: format!(
                "Replays the shrunk fuzz sequence: {} dispatches and {probes} protocol probes.",
                self.performed.len()
            ),
            needs,
        };
        let cases = RegressionCases { case: vec![case] };
        // A TOML comment admits no control character but tab.
        let said: String = self
            .failure
            .actual
            .chars()
            .map(|c| if c.is_control() && c != '\t' { ' ' } else { c })
            .collect();
        let written = toml::to_string(&cases).and_then(|head| {
            // The `[[case]]` table's last key, `steps`: one inline step a line, as suite
            // files hold them (the document serializer would give each step tables of its
            // own). Each line is the toml crate's rendering of a typed step.
            let mut steps = String::from("steps = [\n");
            for step in self.steps(&ops) {
                let mut line = String::new();
                step.serialize(toml::ser::ValueSerializer::new(&mut line))?;
                steps.push_str(&format!("  {line},\n"));
            }
            Ok(format!("{head}{steps}]\n"))
        });
        let body =
            written.unwrap_or_else(|error| format!("# the case could not be written: {error}\n"));
        // A trace of format 1 recorded no probe's steps: say what the case leaves out.
        let unrecorded = ops
            .iter()
            .enumerate()
            .filter(|(at, op)| {
                matches!(op, Op::Probe { .. }) && !self.probed.iter().any(|p| p.op_index == *at)
            })
            .count();
        let mut left_out = if unrecorded > 0 {
            format!("# {unrecorded} protocol probes of this trace are left out: its format records no probe's steps.\n")
        } else {
            String::new()
        };
        // A probe that tells the state it meets first (not applicable in another) would end
        // the whole regression case there: left out, and said so.
        let guarded_probes = self.probed.iter().filter(|p| guarded(&p.steps)).count();
        if guarded_probes > 0 {
            left_out.push_str(&format!(
                "# {guarded_probes} protocol probes of this trace are left out: each is not applicable in some states, which would end this case there.\n"
            ));
        }
        // A catalog case runs on connections of its own: the regression case names it.
        let cases: Vec<&str> = ops
            .iter()
            .filter_map(|op| match op {
                Op::Case { case } => Some(case.as_str()),
                _ => None,
            })
            .collect();
        if !cases.is_empty() {
            left_out.push_str(&format!(
                "# catalog cases this trace ran amid its operations are left out (re-run them with `ahpspec run --filter ID`): {}\n",
                cases.join(", ")
            ));
        }
        // A routine records the dispatches it made, not its other requests nor its own
        // judgement (an order, a listing): the case may pass where the routine failed.
        if routines > 0 {
            left_out.push_str(&format!(
                "# {routines} routines of this trace: the case replays the dispatches they made, not their other requests nor their own judgements.\n"
            ));
        }
        format!(
            "# Regression case from `ahpspec fuzz --seed {}`: {said}\n{left_out}{body}",
            self.seed
        )
    }

    /// The case's steps: the first client's session, the other clients joining it, then
    /// the dispatches and probes in the order the operations ran, and a checkpoint.
    fn steps(&self, ops: &[Op]) -> Vec<Step> {
        let mut steps = vec![
            Step::Initialize(Initialize::default()),
            Step::Session(MakeSession {
                name: "S".into(),
                ..MakeSession::default()
            }),
        ];
        for client in self.other_clients() {
            steps.extend(regression::client_joins(client));
        }
        let mut performed = self.performed.iter().enumerate().peekable();
        for op_index in 0..ops.len() {
            while let Some((index, done)) = performed.next_if(|(_, p)| p.op_index == op_index) {
                steps.extend(regression::dispatch_steps(index, done));
            }
            if let Some(probed) = self
                .probed
                .iter()
                .find(|p| p.op_index == op_index && !guarded(&p.steps))
            {
                steps.extend(probed.steps.iter().cloned());
            }
        }
        // Traces of older formats may name dispatches the operations do not reach.
        for (index, done) in performed {
            steps.extend(regression::dispatch_steps(index, done));
        }
        steps.push(Step::Checkpoint(Checkpoint::default()));
        steps
    }

    /// The run's clients other than the first (by index): those that dispatched, and those
    /// whose frames the trace holds.
    fn other_clients(&self) -> Vec<usize> {
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
        others
    }
}

/// A regression case as a suite file's `[[case]]` table.
#[derive(Serialize)]
struct RegressionCase {
    id: String,
    level: Level,
    spec: String,
    requirement: String,
    does: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    needs: Vec<String>,
}

#[derive(Serialize)]
struct RegressionCases {
    case: Vec<RegressionCase>,
}

/// Where the trace of `rule`'s finding in the campaign with `seed` is saved: one per rule.
pub fn trace_path(dir: &Path, seed: u64, rule: Rule) -> PathBuf {
    dir.join(format!("{seed}-{rule}.json"))
}

/// Whether `steps` can end a case as not applicable (a probe guarded by the state it meets).
fn guarded(steps: &[Step]) -> bool {
    steps.iter().any(|step| match step {
        Step::NotApplicable(_) => true,
        Step::AnyOf(any) => any.alternatives.iter().any(|steps| guarded(steps)),
        _ => false,
    })
}
