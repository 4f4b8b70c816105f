//! Automations (issue 29, i29c): the `ahp-automations://` catalogue and the
//! `ahp-automation-run:` channels, advertised by `InitializeResult.automations`.
//!
//! The catalogue holds what the official reducer folds from `automation/set` and
//! `automation/removed`; a client's `automation/createRequested` and `updateRequested` leave it
//! unchanged (the reducer's no-op) and the host, once it accepted them, publishes the whole
//! entry with `automation/set`. Each run is a channel of its own, folded on the run reducer;
//! a run starts an ordinary session of the host (the definition's session template) whose
//! default chat gets the automation's message, and the run's lifecycle follows that turn
//! (`runs`). The runs of one automation execute one at a time: a run requested while another
//! is active stays `pending` until that one ends. Schedule triggers start runs of their own
//! (`scheduling`), and so do event triggers, on changes in the workspace (`events`).

use ahp::reducers::{apply_action_to_automation, apply_action_to_automation_run};
use ahp_types::actions::StateAction;
use ahp_types::state::AutomationEntry;
use serde_json::{json, Value};

use super::faults::Fault;
use super::world::{now_iso, to_value, ChannelKind, World};

mod definition;
mod events;
mod runs;
mod schedule;
mod scheduling;
pub mod state;

pub use state::RunEntry;

pub use definition::trigger_definitions;

/// The catalogue channel.
pub const CATALOGUE: &str = "ahp-automations://";

/// Run summaries one page of an entry's run history holds (`runsNextCursor` leads to the
/// older ones).
pub const RUNS_PAGE: usize = 2;

/// What `InitializeResult.automations` advertises: client-created definitions, schedule
/// triggers without an interval restriction, run cancellation. No retention limit (every run
/// is kept) and no captured customizations.
pub fn capabilities() -> Value {
    json!({ "create": {}, "schedules": {}, "runCancellation": {} })
}

impl World {
    /// The kind of an automation channel this host serves.
    pub(in crate::host) fn automation_channel_kind(&self, uri: &str) -> Option<ChannelKind> {
        if uri == CATALOGUE {
            Some(ChannelKind::Automations)
        } else if self.automations.runs.contains_key(uri) {
            Some(ChannelKind::AutomationRun)
        } else {
            None
        }
    }

    /// The snapshot state of an automation channel.
    pub(in crate::host) fn automation_state(&self, uri: &str) -> Option<Value> {
        if uri == CATALOGUE {
            return Some(to_value(&self.automations.catalogue));
        }
        Some(to_value(&self.automations.runs.get(uri)?.state))
    }

    /// Folds an action into an automation channel through the official reducers.
    pub(in crate::host) fn apply_automation(&mut self, uri: &str, action: &StateAction) {
        if uri == CATALOGUE {
            apply_action_to_automation(&mut self.automations.catalogue, action);
        } else if let Some(entry) = self.automations.runs.get_mut(uri) {
            apply_action_to_automation_run(&mut entry.state, action);
        }
    }

    /// The catalogue entry of `automation`.
    pub(in crate::host) fn catalogue_entry(&self, automation: &str) -> Option<&AutomationEntry> {
        let entries = &self.automations.catalogue.entries;
        entries.iter().find(|entry| entry.resource == automation)
    }

    /// The catalogue entry of `automation`, as JSON.
    pub(in crate::host) fn automation_entry(&self, automation: &str) -> Option<Value> {
        self.catalogue_entry(automation).map(to_value)
    }

    /// Publishes `automation`'s entry again (`automation/set`) with its run history as it is
    /// now: the shown pages, newest first, and the cursor to the older runs.
    pub(in crate::host) fn publish_automation(&mut self, automation: &str) {
        let Some(mut entry) = self.automation_entry(automation) else {
            return;
        };
        let history = self
            .automations
            .history
            .get(automation)
            .cloned()
            .unwrap_or_default();
        let pages = self.automations.pages.get(automation).copied().unwrap_or(1);
        let shown = history.len().min(RUNS_PAGE.saturating_mul(pages));
        let mut runs: Vec<Value> = history[..shown]
            .iter()
            .filter_map(|run| self.run_summary(run))
            .collect();
        if self.fault(Fault::AutomationRunsOldestFirst) {
            runs.reverse();
        }
        entry["runs"] = Value::Array(runs);
        match runs_cursor(&history, shown) {
            Some(cursor) => entry["runsNextCursor"] = json!(cursor),
            None if self.fault(Fault::RunsCursorNeverEnds) => {
                entry["runsNextCursor"] = json!(format!("{automation}#past-the-oldest"));
            }
            None => {
                if let Some(object) = entry.as_object_mut() {
                    object.remove("runsNextCursor");
                }
            }
        }
        self.emit_unless_unannounced(
            CATALOGUE,
            json!({ "type": "automation/set", "automation": entry }),
        );
    }

    /// Emits a host action on an automation channel; under `automation-state-unannounced`,
    /// applies it to the host's state only, sending nothing (INV-FOLD-1's fault).
    pub(in crate::host) fn emit_unless_unannounced(&mut self, channel: &str, action: Value) {
        if !self.fault(Fault::AutomationStateUnannounced) {
            self.emit_logged(channel, action);
        } else if let Ok(decoded) = serde_json::from_value::<StateAction>(action) {
            self.apply_automation(channel, &decoded);
        }
    }

    /// The cursor `fetchAutomationRuns` takes for `automation`'s next older page, if any.
    pub(in crate::host) fn automation_runs_cursor(&self, automation: &str) -> Option<String> {
        let history = self.automations.history.get(automation)?;
        let pages = self.automations.pages.get(automation).copied().unwrap_or(1);
        runs_cursor(history, history.len().min(RUNS_PAGE.saturating_mul(pages)))
    }

    /// Shows one more page of `automation`'s run history.
    pub(in crate::host) fn show_more_runs(&mut self, automation: &str) {
        *self
            .automations
            .pages
            .entry(automation.to_owned())
            .or_insert(1) += 1;
    }

    /// The summary of a run, as the catalogue lists it.
    fn run_summary(&self, run: &str) -> Option<Value> {
        let state = &self.automations.runs.get(run)?.state;
        let mut summary = json!({
            "resource": state.resource, "automation": state.automation,
            "origin": to_value(&state.origin), "lifecycle": to_value(&state.lifecycle),
            "sessionCount": state.sessions.len(),
        });
        if let Some(primary) = &state.primary_session {
            summary["primarySession"] = json!(primary);
        }
        Some(summary)
    }

    /// Records a new run of `automation` started by `request_id`.
    pub(in crate::host) fn record_run(
        &mut self,
        automation: &str,
        request_id: &str,
        entry: RunEntry,
    ) {
        let run = entry.state.resource.clone();
        self.automations
            .requests
            .insert((automation.to_owned(), request_id.to_owned()), run.clone());
        self.automations
            .history
            .entry(automation.to_owned())
            .or_default()
            .insert(0, run.clone());
        self.automations.runs.insert(run, entry);
    }

    /// The run an earlier `runAutomation` of `automation` with `request_id` started.
    pub(in crate::host) fn requested_run(
        &self,
        automation: &str,
        request_id: &str,
    ) -> Option<String> {
        if self.fault(Fault::AutomationRunNotIdempotent) {
            return None;
        }
        self.automations
            .requests
            .get(&(automation.to_owned(), request_id.to_owned()))
            .cloned()
    }

    /// Whether another run of `automation` than `run` is still pending or running.
    pub(in crate::host) fn automation_busy(&self, automation: &str, run: &str) -> bool {
        self.automations
            .history
            .get(automation)
            .into_iter()
            .flatten()
            .filter(|other| *other != run)
            .filter_map(|other| self.automations.runs.get(other))
            .any(|other| runs::active(&other.state.lifecycle))
    }

    /// The oldest run of `automation` still waiting to start.
    pub(in crate::host) fn next_pending_run(&self, automation: &str) -> Option<String> {
        let history = self.automations.history.get(automation)?;
        history
            .iter()
            .rev()
            .find(|run| {
                self.automations.runs.get(*run).is_some_and(|entry| {
                    matches!(
                        entry.state.lifecycle,
                        ahp_types::state::AutomationRunLifecycle::Pending(_)
                    )
                })
            })
            .cloned()
    }

    /// Links a session the run started to it.
    pub(in crate::host) fn link_run_session(&mut self, run: &str, session: &str) {
        self.automations
            .by_session
            .insert(session.to_owned(), run.to_owned());
    }

    /// Publishes what the host does with an accepted client action on an automation channel.
    pub(in crate::host) fn after_automation_accept(&mut self, channel: &str, action: &Value) {
        let resource = action["resource"].as_str().unwrap_or_default().to_owned();
        match action["type"].as_str().unwrap_or_default() {
            "automation/createRequested" => {
                let now = now_iso();
                let mut definition = action["definition"].clone();
                self.normalize_triggers(&mut definition);
                if self.fault(Fault::AutomationMetaDropped) {
                    if let Some(object) = definition.as_object_mut() {
                        object.remove("_meta");
                    }
                }
                let mut entry = json!({ "resource": resource, "definition": definition,
                    "runs": [], "operations": ["update", "remove", "run"],
                    "createdAt": now, "modifiedAt": now });
                if definition::limits_runs(&entry["definition"]) {
                    entry["runCount"] = json!(0);
                }
                self.schedule_entry(&mut entry);
                self.emit_logged(
                    CATALOGUE,
                    json!({ "type": "automation/set", "automation": entry }),
                );
            }
            "automation/updateRequested" => self.update_automation(&resource, &action["changes"]),
            "automationRun/cancelRequested" => self.cancel_run(channel),
            _ => {}
        }
        self.watch_for_events();
    }

    /// Applies an accepted patch to the definition and publishes the entry.
    fn update_automation(&mut self, resource: &str, changes: &Value) {
        let Some(mut entry) = self.automation_entry(resource) else {
            return;
        };
        let was_limited = definition::limits_runs(&entry["definition"]);
        let was_enabled = entry["definition"]["enabled"] == true;
        let mut changes = changes.clone();
        if self.fault(Fault::AutomationPatchDisables) && changes.get("enabled").is_none() {
            changes["enabled"] = json!(false);
        }
        let mut patched = definition::patched(&entry["definition"], &changes);
        let retriggered = changes.get("triggers").is_some() || changes.get("session").is_some();
        if retriggered && !self.fault(Fault::PatchedTriggerLabelsKept) {
            self.normalize_triggers(&mut patched);
        }
        let limited = definition::limits_runs(&patched);
        let re_enabled = !was_enabled
            && patched["enabled"] == true
            && !self.fault(Fault::RunCountKeptOnReEnable);
        entry["definition"] = patched;
        entry["modifiedAt"] = json!(now_iso());
        if let Some(object) = entry.as_object_mut() {
            if !limited {
                object.remove("runCount");
            } else if (!was_limited && !self.fault(Fault::AddedAllowanceUncounted)) || re_enabled {
                // A fresh allowance: the condition was added, or the automation re-enabled.
                object.insert("runCount".into(), json!(0));
            }
        }
        self.schedule_entry(&mut entry);
        self.emit_logged(
            CATALOGUE,
            json!({ "type": "automation/set", "automation": entry }),
        );
    }
}

/// The cursor past the `shown` newest runs of `history`: the oldest shown run.
fn runs_cursor(history: &[String], shown: usize) -> Option<String> {
    if shown >= history.len() {
        return None;
    }
    let oldest_shown = shown.checked_sub(1).map_or("", |i| history[i].as_str());
    Some(format!("before:{oldest_shown}"))
}
