//! What the host accepts in a client's automation actions (issue 29, i29c): the checks of
//! `automation/createRequested`, `updateRequested`, `removed` and
//! `automationRun/cancelRequested` (a refusal is the echo's `rejectionReason`), the AHP cron
//! grammar of schedule triggers, and the event triggers `listAutomationTriggerDefinitions`
//! offers.

use ahp_types::actions::StateAction;
use ahp_types::state::{AutomationOperation, AutomationRunLifecycle};
use serde_json::{json, Value};

use super::CATALOGUE;
use crate::host::agents::agent_for;
use crate::host::faults::Fault;
use crate::host::world::{to_value, World};

/// The event triggers this host offers: changes in its workspace.
pub fn trigger_definitions() -> Value {
    json!([{
        "type": "ahpspec.workspace",
        "title": "Workspace files",
        "description": "Changes to the files of the host's workspace",
        "events": [
            { "id": "fileChanged", "title": "A file changed",
              "description": "A file of the workspace was written" },
            { "id": "fileDeleted", "title": "A file was deleted" },
        ],
    }])
}

/// Whether a definition limits its scheduled runs (an `afterRuns` condition).
pub fn limits_runs(definition: &Value) -> bool {
    definition["disableConditions"]
        .as_array()
        .is_some_and(|conditions| conditions.iter().any(|c| c["kind"] == "afterRuns"))
}

/// `definition` with the patch's supplied fields replaced in full.
pub fn patched(definition: &Value, changes: &Value) -> Value {
    let mut patched = definition.clone();
    for (key, value) in changes.as_object().into_iter().flatten() {
        patched[key.as_str()] = value.clone();
    }
    patched
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
                self.check_definition(&to_value(&create.definition))
            }
            StateAction::AutomationUpdateRequested(update) => {
                let entry = self.operable(&update.resource, AutomationOperation::Update)?;
                let changes = to_value(&update.changes);
                self.check_definition(&patched(&entry["definition"], &changes))
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
            .automations
            .catalogue
            .entries
            .iter()
            .find(|entry| entry.resource == automation)
            .ok_or_else(|| format!("no automation {automation}"))?;
        if !entry.operations.contains(&operation) {
            return Err(format!("{automation} does not permit {operation:?} now"));
        }
        Ok(to_value(entry))
    }

    /// Why a complete definition is refused, if it is.
    fn check_definition(&self, definition: &Value) -> Result<(), String> {
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
            if kinds.contains(&kind) && !self.fault(Fault::AutomationDuplicateConditionsAccepted) {
                return Err(format!("disable condition {kind} appears twice"));
            }
            kinds.push(kind);
            match kind {
                "afterRuns" if condition["max"].as_i64().is_none_or(|max| max < 1) => {
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
                let names = !self.fault(Fault::AutomationCronNamesRefused);
                if !valid_cron(expression, names) {
                    return Err(format!("{expression:?} is no AHP cron expression"));
                }
                if trigger["schedule"]["timeZone"]
                    .as_str()
                    .is_none_or(str::is_empty)
                {
                    return Err("a schedule names its time zone".into());
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

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

/// Whether `expression` is a five-field AHP cron expression (month and weekday names only
/// when `names`).
pub fn valid_cron(expression: &str, names: bool) -> bool {
    let fields: Vec<&str> = expression.split_whitespace().collect();
    let ranges: [(u32, u32, &[&str], u32); 5] = [
        (0, 59, &[], 0),
        (0, 23, &[], 0),
        (1, 31, &[], 0),
        (1, 12, &MONTHS, 1),
        (0, 7, &WEEKDAYS, 0),
    ];
    fields.len() == 5
        && fields
            .iter()
            .zip(ranges)
            .all(|(field, (low, high, named, first))| {
                let named = if names { named } else { &[] };
                field
                    .split(',')
                    .all(|item| valid_item(item, low, high, named, first))
            })
}

/// One list item of a cron field: `*`, a value, a range, either with a positive step
/// (a step on a single value is not part of the grammar).
fn valid_item(item: &str, low: u32, high: u32, named: &[&str], first: u32) -> bool {
    let (base, step) = match item.split_once('/') {
        Some((base, step)) => (base, Some(step)),
        None => (item, None),
    };
    if let Some(step) = step {
        let digits = !step.is_empty() && step.bytes().all(|b| b.is_ascii_digit());
        if !digits || step.parse::<u32>().map_or(true, |n| n == 0) {
            return false;
        }
    }
    if base == "*" {
        return true;
    }
    let value = |token: &str| -> Option<u32> {
        if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) {
            return token
                .parse::<u32>()
                .ok()
                .filter(|v| (low..=high).contains(v));
        }
        let index = named.iter().position(|n| n.eq_ignore_ascii_case(token))?;
        u32::try_from(index).ok().map(|i| i + first)
    };
    match base.split_once('-') {
        Some((from, to)) => matches!((value(from), value(to)), (Some(a), Some(b)) if a <= b),
        None => step.is_none() && value(base).is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::valid_cron;

    #[test]
    fn the_cron_grammar_takes_what_ahp_allows_and_nothing_else() {
        for good in [
            "0 * * * *",
            "30 9 * * MON-FRI",
            "0 0 1,15 * *",
            "*/15 * * * *",
            "1-30/2 0-23 1-31 jan-Dec 0-7",
            "59 23 31 12 7",
        ] {
            assert!(valid_cron(good, true), "{good}");
        }
        for bad in [
            "",
            "* * * *",
            "* * * * * *",
            "60 * * * *",
            "* 24 * * *",
            "* * 0 * *",
            "* * * 13 *",
            "* * * * 8",
            "@daily",
            "*/0 * * * *",
            "5/2 * * * *",
            "* * ? * *",
            "5-1 * * * *",
            "1,,2 * * * *",
            "* * L * *",
        ] {
            assert!(!valid_cron(bad, true), "{bad}");
        }
        assert!(!valid_cron("30 9 * * MON-FRI", false));
    }
}
