//! Reach (composition: a fuzz campaign against the built-in host): which of the built-in host's faults a short campaign finds. One campaign per
//! fault (a fixed seed, a time budget, stopping at its first finding), recording the rule it
//! found, how long that took and whether the saved trace replays. The reach benchmark
//! (`benches/reach.rs`) runs it over `serve --fault list`; `tests/fuzz_reach.rs` over a fixed
//! sample, so reach cannot silently regress.

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::checks::frame::Schemas;
use crate::client::profile::Profile;
use crate::fuzz::trace::Trace;
use crate::fuzz::{Excluded, ExecConfig, ExecError, FuzzOptions, FuzzOutcome};
use crate::host::Fault;
use crate::rows::baseline::Baseline;
use crate::suite::Catalog;
use crate::target::Decided;

/// Which campaign runs against a fault.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReachMode {
    /// Model sequences.
    Model,
    /// Frame mutations.
    Frames,
    /// Model sequences and frame mutations interleaved (the default campaign).
    Mixed,
}

impl ReachMode {
    pub fn name(self) -> &'static str {
        match self {
            ReachMode::Model => "model",
            ReachMode::Frames => "frames",
            ReachMode::Mixed => "mixed",
        }
    }
}

/// How each fault's campaign runs.
#[derive(Debug, Clone)]
pub struct ReachConfig {
    /// Seed of every campaign.
    pub seed: u64,
    /// Time until the first finding; shrinking comes on top, capped by `shrink_time`.
    pub budget: Duration,
    pub shrink_time: Duration,
    /// Each expectation's wait.
    pub timeout: Duration,
    /// `None`: frames for the transport faults, model sequences for the rest.
    pub mode: Option<ReachMode>,
    pub profile: Profile,
    pub schemas: Schemas,
    /// The catalog whose cases the campaigns may run as operations (`None`: only the
    /// generator's own operations).
    pub catalog: Option<Arc<Catalog>>,
}

impl ReachConfig {
    /// The built-in profile, schemas and catalog, seed 1, 60 s to the first finding, 2 s
    /// waits.
    pub fn standard() -> Result<ReachConfig, String> {
        Ok(ReachConfig {
            seed: 1,
            budget: Duration::from_secs(60),
            shrink_time: Duration::from_secs(10),
            timeout: Duration::from_secs(2),
            mode: None,
            profile: Profile::scripted().map_err(|e| e.to_string())?,
            schemas: Schemas::load(None).map_err(|e| e.to_string())?,
            catalog: Some(Arc::new(Catalog::embedded().map_err(|e| e.to_string())?)),
        })
    }

    fn options(&self, fault: Fault) -> FuzzOptions {
        FuzzOptions {
            target: Decided::Host(fault.into()).for_sequences(None),
            exec: ExecConfig {
                timeout: self.timeout,
                settle: Duration::from_millis(3),
                clients: 2,
                profile: self.profile.clone(),
                schemas: self.schemas.clone(),
                checkpoint_every: 10,
                exclude: Excluded::default(),
                known: Default::default(),
                catalog: self.catalog.clone(),
            },
            seed: self.seed,
            cases: None,
            duration: self.budget + self.shrink_time,
            shrink_time: self.shrink_time,
            max_len: 30,
            baseline: Baseline::default(),
            stop_after: Some(1),
            progress: None,
            uniform: false,
        }
    }
}

/// What one fault's campaign did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reached {
    pub fault: String,
    /// The rule the fault breaks.
    pub rule: String,
    pub area: String,
    pub mode: ReachMode,
    /// Whether the campaign found the fault's own rule within the budget.
    pub found: bool,
    /// Whether the campaign's first finding, within the budget, named another rule the
    /// fault breaks by construction ([`Fault::also_breaks`]): the fault found, its own rule
    /// not named first.
    #[serde(default)]
    pub found_by_another: bool,
    /// The rule of the first finding (the fault's own, or another one).
    pub found_rule: Option<String>,
    /// Time to the first finding (shrinking excluded), in ms.
    pub first_finding_ms: Option<u64>,
    /// The catalog cases the shrunk finding still runs as operations (empty: the
    /// generator's own operations found it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cases: Vec<String>,
    /// Whether the saved trace replays to the same rule (`None`: nothing found).
    pub replays: Option<bool>,
    pub sequences: u64,
    pub operations: usize,
    /// Why the campaign ended early, or what went wrong.
    pub note: Option<String>,
}

impl Reached {
    /// Whether the campaign found the fault: by its own rule or by another it breaks.
    pub fn caught(&self) -> bool {
        self.found || self.found_by_another
    }
}

/// Every fault with its spec area, in the order `serve --fault list` prints them (grouped by
/// area, areas in the order their first fault comes in the catalog).
pub fn listed_faults(catalog: &Catalog) -> Vec<(Fault, String)> {
    let mut areas: Vec<(String, Vec<Fault>)> = Vec::new();
    for fault in Fault::ALL {
        let area = catalog
            .rule(fault.rule())
            .map_or_else(|| "other".to_owned(), |info| info.area);
        match areas.iter_mut().find(|(name, _)| *name == area) {
            Some((_, faults)) => faults.push(*fault),
            None => areas.push((area, vec![*fault])),
        }
    }
    areas
        .into_iter()
        .flat_map(|(area, faults)| faults.into_iter().map(move |f| (f, area.clone())))
        .collect()
}

/// The campaign a fault of `area` gets when none is named: frame mutations for the
/// transport faults, model sequences for the rest.
pub fn mode_for(area: &str, named: Option<ReachMode>) -> ReachMode {
    named.unwrap_or(if area == "transport" {
        ReachMode::Frames
    } else {
        ReachMode::Model
    })
}

/// Runs one campaign against the built-in host with `fault`, stopping at its first finding,
/// and replays the saved trace of what it found.
pub async fn reach(fault: Fault, area: &str, cfg: &ReachConfig) -> Reached {
    let mode = mode_for(area, cfg.mode);
    let options = cfg.options(fault);
    let mut reached = Reached {
        fault: fault.name().to_owned(),
        rule: fault.rule().to_owned(),
        area: area.to_owned(),
        mode,
        found: false,
        found_by_another: false,
        found_rule: None,
        cases: Vec::new(),
        first_finding_ms: None,
        replays: None,
        sequences: 0,
        operations: 0,
        note: None,
    };
    let (_stop, interrupt) = tokio::sync::watch::channel(false);
    let started = Instant::now();
    let trace = match mode {
        ReachMode::Model => {
            // Each campaign boxed: its future is large in a debug build (see fuzz/exec).
            let outcome = Box::pin(crate::fuzz::fuzz(&options, interrupt)).await;
            took(&mut reached, outcome, fault)
        }
        ReachMode::Frames => {
            let outcome = Box::pin(crate::fuzz::frames::fuzz_frames(&options, interrupt)).await;
            took(&mut reached, outcome, fault)
        }
        ReachMode::Mixed => {
            let outcome = Box::pin(crate::fuzz::mixed::fuzz_mixed(&options, interrupt)).await;
            took(&mut reached, outcome, fault)
        }
    };
    let Some(trace) = trace else {
        return reached;
    };
    let within = reached
        .first_finding_ms
        .is_some_and(|ms| u128::from(ms) <= cfg.budget.as_millis());
    reached.found = within && reached.found_rule.as_deref() == Some(fault.rule());
    reached.found_by_another = within
        && reached
            .found_rule
            .as_deref()
            .is_some_and(|rule| fault.also_breaks().contains(&rule));
    if !within {
        reached.note = Some(format!(
            "found after the budget ({:.1} s)",
            started.elapsed().as_secs_f64()
        ));
    }
    // A replay knows nothing of the campaign (as `ahpspec replay`): it waits in full for
    // what the campaign had learnt not to wait for.
    let exec = ExecConfig {
        known: Default::default(),
        ..options.exec.clone()
    };
    reached.replays = Some(
        match Box::pin(crate::fuzz::replay_trace(&trace, &options.target, &exec)).await {
            Ok(again) => again.failure.is_some(),
            Err(error) => {
                reached.note = Some(format!("replay: {error}"));
                false
            }
        },
    );
    reached
}

/// Records a campaign's outcome in `reached`; the trace of its first finding, if any.
fn took<T: Serialize + crate::fuzz::mixed::ModeOf>(
    reached: &mut Reached,
    outcome: Result<FuzzOutcome<T>, ExecError>,
    fault: Fault,
) -> Option<Trace> {
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(error) => {
            reached.note = Some(format!("the campaign could not run: {error}"));
            return None;
        }
    };
    reached.sequences = outcome.cases;
    reached.operations = outcome.operations;
    if let Some(stopped) = &outcome.stopped {
        reached.note = Some(format!("stopped: {stopped}"));
    }
    let found = outcome.findings.found.first()?;
    let running = outcome.elapsed.saturating_sub(outcome.shrinking);
    reached.first_finding_ms = Some(running.as_millis() as u64);
    reached.found_rule = Some(found.failure.rule.id().to_owned());
    reached.cases = cases_in(&serde_json::to_value(&found.ops).unwrap_or_default());
    let trace_mode = T::mode_of(&found.ops);
    Some(Trace::new(
        found,
        trace_mode,
        "builtin",
        Some(fault.name().to_owned()),
    ))
}

/// The catalog cases (`{"op": "case", "case": ID}`) anywhere in a serialized sequence.
fn cases_in(value: &serde_json::Value) -> Vec<String> {
    match value {
        serde_json::Value::Object(map) => {
            let own = (map.get("op").and_then(|op| op.as_str()) == Some("case"))
                .then(|| map.get("case").and_then(|c| c.as_str()).map(str::to_owned))
                .flatten();
            own.into_iter()
                .chain(map.values().flat_map(cases_in))
                .collect()
        }
        serde_json::Value::Array(items) => items.iter().flat_map(cases_in).collect(),
        _ => Vec::new(),
    }
}
