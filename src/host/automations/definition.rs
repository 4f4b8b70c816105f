//! What the host accepts in a client's automation actions (issue 29, i29c): the checks of
//! `automation/createRequested`, `updateRequested`, `removed` and
//! `automationRun/cancelRequested` (a refusal is the echo's `rejectionReason`), the AHP cron
//! grammar of schedule triggers, and the event triggers `listAutomationTriggerDefinitions`
//! offers.

use ahp_types::actions::StateAction;
use ahp_types::state::{AutomationOperation, AutomationRunLifecycle};
use serde_json::{json, Value};

use super::schedule::{Cron, Dialect};
use super::CATALOGUE;
use crate::host::agents::agent_for;
use crate::host::faults::Fault;
use crate::host::world::{to_value, World};

/// The host's one event trigger type: changes to the files of its workspace (`events`).
pub const WORKSPACE_TRIGGER: &str = "ahpspec.workspace";

/// The event triggers this host offers: changes in its workspace.
pub fn trigger_definitions() -> Value {
    json!([{
        "type": WORKSPACE_TRIGGER,
        "title": "Workspace files",
        "description": "Changes to the files of the host's workspace",
        "events": [
            { "id": "fileChanged", "title": "A file changed",
              "description": "A file of the workspace was written" },
            { "id": "fileDeleted", "title": "A file was deleted" },
        ],
    }])
}

/// The definition's disable condition of `kind` (each kind appears at most once).
pub fn condition<'a>(definition: &'a Value, kind: &str) -> Option<&'a Value> {
    let conditions = definition["disableConditions"].as_array();
    conditions.into_iter().flatten().find(|c| c["kind"] == kind)
}

/// Whether a definition limits its scheduled runs (an `afterRuns` condition).
pub fn limits_runs(definition: &Value) -> bool {
    condition(definition, "afterRuns").is_some()
}

/// `definition` with the patch's supplied fields replaced in full.
pub fn patched(definition: &Value, changes: &Value) -> Value {
    let mut patched = definition.clone();
    for (key, value) in changes.as_object().into_iter().flatten() {
        patched[key.as_str()] = value.clone();
    }
    patched
}

/// Which request a definition comes with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Request {
    Create,
    Update,
}

impl World {
    /// Why a client's action on an automation channel is refused, if it is.
    pub(in crate::host) fn check_automation(
        &self,
        channel: &str,
        action: &StateAction,
    ) -> Result<(), String> {
        match action {
            StateAction::AutomationCreateRequested(create) => {
                if !create.resource.starts_with("ahp-automation:") {
                    return Err("an automation's resource uses the ahp-automation: scheme".into());
                }
                if self.automation_entry(&create.resource).is_some() {
                    return Err(format!(
                        "{} already identifies an automation",
                        create.resource
                    ));
                }
                self.check_definition(&to_value(&create.definition), Request::Create)
            }
            StateAction::AutomationUpdateRequested(update) => {
                let entry = self.operable(&update.resource, AutomationOperation::Update)?;
                if self.fault(Fault::UpdateUnvalidated) {
                    return Ok(());
                }
                let changes = to_value(&update.changes);
                self.check_definition(&patched(&entry["definition"], &changes), Request::Update)
            }
            StateAction::AutomationRemoved(removed) => {
                // Removing an unknown resource is a no-op.
                if self.automation_entry(&removed.resource).is_some() {
                    self.operable(&removed.resource, AutomationOperation::Remove)?;
                }
                Ok(())
            }
            StateAction::AutomationRunCancelRequested(_) => {
                let run = self.automations.runs.get(channel).ok_or("no such run")?;
                match run.state.lifecycle {
                    AutomationRunLifecycle::Pending(_) | AutomationRunLifecycle::Running(_) => {
                        Ok(())
                    }
                    _ => Err("the run has ended: a terminal run cannot be cancelled".into()),
                }
            }
            _ if channel == CATALOGUE => Ok(()),
            _ => Err("not an action a client may dispatch on a run".into()),
        }
    }

    /// The entry of `automation` when it currently permits `operation`.
    fn operable(&self, automation: &str, operation: AutomationOperation) -> Result<Value, String> {
        let entry = self
            .catalogue_entry(automation)
            .ok_or_else(|| format!("no automation {automation}"))?;
        if !entry.operations.contains(&operation) {
            return Err(format!("{automation} does not permit {operation:?} now"));
        }
        Ok(to_value(entry))
    }

    /// Why a complete definition is refused, if it is.
    fn check_definition(&self, definition: &Value, request: Request) -> Result<(), String> {
        // The condition faults break creation's checks alone (AUTOMATION-003); an update's
        // are AUTOMATION-017's, which `update-unvalidated` breaks.
        let created = request == Request::Create;
        if definition["message"]["origin"]["kind"] != "automation" {
            return Err("an automation's message has origin kind automation".into());
        }
        let template = &definition["session"];
        if template.get("customizations").is_some() {
            return Err("this host captures no customizations (automations.customizations)".into());
        }
        if let Some(provider) = template["provider"].as_str() {
            if agent_for(Some(provider)).is_none() {
                return Err(format!("unknown provider {provider:?}"));
            }
        }
        let triggers = definition["triggers"].as_array().into_iter().flatten();
        let mut ids = Vec::new();
        for trigger in triggers {
            let id = trigger["id"].as_str().unwrap_or_default();
            if ids.contains(&id) {
                return Err(format!("trigger id {id:?} is used twice"));
            }
            ids.push(id);
            self.check_trigger(trigger)?;
        }
        let conditions = definition["disableConditions"].as_array();
        let mut kinds = Vec::new();
        for condition in conditions.into_iter().flatten() {
            let kind = condition["kind"].as_str().unwrap_or_default();
            if kinds.contains(&kind)
                && !(created && self.fault(Fault::AutomationDuplicateConditionsAccepted))
            {
                return Err(format!("disable condition {kind} appears twice"));
            }
            kinds.push(kind);
            match kind {
                _ if created && self.fault(Fault::DisableConditionsUnchecked) => {}
                "afterDate" if self.fault(Fault::AfterDateRefused) => {
                    return Err("this host takes no afterDate condition".into())
                }
                "afterRuns"
                    if condition["max"].as_i64().is_none_or(|max| {
                        max < 1 || (max == 1 && self.fault(Fault::RunCapOfOneRefused))
                    }) =>
                {
                    return Err("afterRuns.max is a positive integer".into())
                }
                "afterDate"
                    if condition["date"]
                        .as_str()
                        .and_then(|date| date.parse::<jiff::Timestamp>().ok())
                        .is_none() =>
                {
                    return Err("afterDate.date is an ISO 8601 timestamp".into())
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn check_trigger(&self, trigger: &Value) -> Result<(), String> {
        match trigger["kind"].as_str() {
            Some("schedule") => {
                let expression = trigger["schedule"]["expression"]
                    .as_str()
                    .unwrap_or_default();
                let dialect = Dialect {
                    names: !self.fault(Fault::AutomationCronNamesRefused),
                    loose_steps: self.fault(Fault::CronStepsLoose),
                    ..Dialect::AHP
                };
                if Cron::parse(expression, dialect).is_none() {
                    return Err(format!("{expression:?} is no AHP cron expression"));
                }
                let zone = trigger["schedule"]["timeZone"].as_str().unwrap_or_default();
                if jiff::tz::TimeZone::get(zone).is_err()
                    && !self.fault(Fault::UnknownTimeZoneAccepted)
                {
                    return Err(format!("{zone:?} is no IANA time zone this host knows"));
                }
                Ok(())
            }
            Some("event") => {
                let definitions = trigger_definitions();
                let definition = definitions
                    .as_array()
                    .into_iter()
                    .flatten()
                    .find(|d| d["type"] == trigger["type"])
                    .ok_or_else(|| format!("no event trigger type {}", trigger["type"]))?;
                let events = trigger["events"].as_array().filter(|e| !e.is_empty());
                for event in events.ok_or("an event trigger selects at least one event")? {
                    let known = definition["events"].as_array().into_iter().flatten();
                    if !known.clone().any(|k| k["id"] == event["id"]) {
                        return Err(format!("no event {} of {}", event["id"], trigger["type"]));
                    }
                }
                Ok(())
            }
            _ => Err("unknown trigger kind".into()),
        }
    }

    /// Replaces the labels of a definition's event triggers with those of the trigger
    /// definitions they name (the host normalizes them on create and on trigger changes).
    pub(in crate::host) fn normalize_triggers(&self, definition: &mut Value) {
        if self.fault(Fault::AutomationEventLabelsKept) {
            return;
        }
        let definitions = trigger_definitions();
        let triggers = definition["triggers"].as_array_mut().into_iter().flatten();
        for trigger in triggers.filter(|t| t["kind"] == "event") {
            let Some(known) = definitions
                .as_array()
                .into_iter()
                .flatten()
                .find(|d| d["type"] == trigger["type"])
            else {
                continue;
            };
            copy_labels(known, trigger);
            let events = trigger["events"].as_array_mut().into_iter().flatten();
            for event in events {
                let listed = known["events"].as_array().into_iter().flatten();
                if let Some(listed) = listed.clone().find(|k| k["id"] == event["id"]) {
                    copy_labels(listed, event);
                }
            }
        }
    }
}

/// Sets `to`'s title and description to `from`'s (no description when `from` has none).
fn copy_labels(from: &Value, to: &mut Value) {
    let Some(object) = to.as_object_mut() else {
        return;
    };
    object.insert("title".into(), from["title"].clone());
    match from.get("description") {
        Some(description) => object.insert("description".into(), description.clone()),
        None => object.remove("description"),
    };
}
