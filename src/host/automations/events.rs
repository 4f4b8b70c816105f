//! Event triggers (issue 29): the host's one trigger type, `ahpspec.workspace`, fires on real
//! file-system events of the served workspace (the `notify` crate, as resource watches do):
//! `fileChanged` when a file is created or written, `fileDeleted` when one is removed or
//! renamed away. A change starts one run of every enabled automation with an event trigger
//! selecting its event: origin `trigger` with the trigger's id and the change as the origin's
//! `event` provenance.
//!
//! One write is several OS events (a create, then modifications), so the first matching
//! change opens a short window per (automation, trigger) and one run starts when it closes;
//! the automation is looked at again then, so a trigger disabled, replaced or removed
//! meanwhile starts nothing. Runs from events do not count against an `afterRuns`
//! allowance: ahp-types defines that condition over scheduled runs.
//!
//! The workspace is watched (one recursive OS watcher) while an automation whose triggers
//! are live has an event trigger: from the first such automation on, until none is left
//! (the last disabled, changed or removed), so a large workspace holds its OS watches only
//! while something listens.

use std::time::Duration;

use ahp_types::state::AutomationTrigger;
use serde_json::{json, Value};

use super::definition::WORKSPACE_TRIGGER;
use crate::host::faults::Fault;
use crate::host::watches::{changes, start_watcher};
use crate::host::workspace::file_uri;
use crate::host::world::{to_value, World};
use crate::host::Shared;

/// How long the events of one change gather into one run.
const BURST: Duration = Duration::from_millis(100);

/// The workspace trigger's event for a change of `kind` (a resource watch's change kinds).
fn event_of(kind: &str) -> &'static str {
    if kind == "deleted" {
        "fileDeleted"
    } else {
        "fileChanged"
    }
}

/// The ids of `definition`'s workspace event triggers that select `event`.
fn triggers_selecting<'a>(definition: &'a Value, event: &'a str) -> Vec<&'a str> {
    let triggers = definition["triggers"].as_array().into_iter().flatten();
    triggers
        .filter(|trigger| trigger["kind"] == "event" && trigger["type"] == WORKSPACE_TRIGGER)
        .filter(|trigger| {
            let events = trigger["events"].as_array().into_iter().flatten();
            events.clone().any(|selected| selected["id"] == event)
        })
        .filter_map(|trigger| trigger["id"].as_str())
        .collect()
}

/// Whether `definition` has a workspace event trigger.
fn has_event_trigger(definition: &Value) -> bool {
    ["fileChanged", "fileDeleted"]
        .iter()
        .any(|event| !triggers_selecting(definition, event).is_empty())
}

impl World {
    /// Watches the workspace while an automation whose triggers are live has an event
    /// trigger, and stops watching when none has (dropping the watcher ends its OS watches).
    pub(in crate::host) fn watch_for_events(&mut self) {
        let entries = &self.automations.catalogue.entries;
        let wanted = entries.iter().any(|entry| {
            let definition = to_value(&entry.definition);
            self.triggers_live(&definition) && has_event_trigger(&definition)
        });
        match (wanted, self.automations.event_watcher.is_some()) {
            (true, false) => {}
            (false, true) => {
                self.automations.event_watcher = None;
                return;
            }
            _ => return,
        }
        // Events arrive on notify's own thread: the timers they arm need the host's runtime.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            let error = "event triggers are watched only inside the host's runtime";
            return self.internal_errors.push(error.into());
        };
        let on_event = move |shared: &Shared, event: &notify::Event| {
            let _inside = runtime.enter();
            shared.lock().workspace_event(event);
        };
        let root = self.workspace.root().to_path_buf();
        match start_watcher(self.shared.clone(), &root, true, on_event) {
            Ok(watcher) => self.automations.event_watcher = Some(watcher),
            Err(error) => self.internal_errors.push(format!(
                "cannot watch the workspace for event triggers: {error}"
            )),
        }
    }

    /// Whether `definition`'s automatic triggers may start runs (`enabled`).
    fn triggers_live(&self, definition: &Value) -> bool {
        definition["enabled"] == true || self.fault(Fault::DisabledTriggerFires)
    }

    /// Opens a window for each enabled automation's trigger a workspace change selects.
    fn workspace_event(&mut self, event: &notify::Event) {
        for (path, kind) in changes(event) {
            if kind != "deleted" && path.is_dir() {
                continue;
            }
            let event = event_of(kind);
            let provenance = json!({ "uri": file_uri(path), "event": event });
            let mut fired = Vec::new();
            for entry in &self.automations.catalogue.entries {
                // Most entries have no event trigger: they are passed over before any JSON.
                let triggers = &entry.definition.triggers;
                if !triggers
                    .iter()
                    .any(|t| matches!(t, AutomationTrigger::Event(_)))
                {
                    continue;
                }
                let definition = to_value(&entry.definition);
                if !self.triggers_live(&definition) {
                    continue;
                }
                for trigger in triggers_selecting(&definition, event) {
                    fired.push((entry.resource.to_string(), trigger.to_owned()));
                }
            }
            for key in fired {
                if self.automations.pending_events.insert(key.clone()) {
                    self.fire_after_burst(key, provenance.clone());
                }
            }
        }
    }

    /// Arms the timer that ends a window and starts its run.
    fn fire_after_burst(&self, (automation, trigger): (String, String), provenance: Value) {
        let shared = self.shared.clone();
        tokio::spawn(async move {
            tokio::time::sleep(BURST).await;
            if let Some(shared) = shared.upgrade() {
                shared.lock().fire_event(&automation, &trigger, provenance);
            }
        });
    }

    /// Starts the run of `automation`'s event `trigger`, if the automation is still enabled
    /// and the trigger still selects the event.
    fn fire_event(&mut self, automation: &str, trigger: &str, provenance: Value) {
        let key = (automation.to_owned(), trigger.to_owned());
        self.automations.pending_events.remove(&key);
        let Some(entry) = self.catalogue_entry(automation) else {
            return;
        };
        let definition = to_value(&entry.definition);
        let event = provenance["event"].as_str().unwrap_or_default();
        let selected = triggers_selecting(&definition, event).contains(&trigger);
        if !selected
            || !self.triggers_live(&definition)
            || self.fault(Fault::EventTriggerNeverFires)
        {
            return;
        }
        let origin = json!({ "kind": "trigger", "triggerId": trigger, "event": provenance });
        let request = self.fresh_id("event:");
        if let Ok(run) = self.record_new_run(automation, &request, origin) {
            self.launch_run(automation, &run);
        }
    }
}
