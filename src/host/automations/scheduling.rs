//! The host's scheduler (issue 29): an enabled automation's schedule triggers give its
//! `nextRunAt`, the earliest next occurrence of their expressions in their time zones; a timer
//! armed for that instant starts a run (origin `trigger`, with the trigger and the occurrence)
//! and moves `nextRunAt` on. A timer whose occurrence is no longer the entry's `nextRunAt`
//! (the automation changed, was disabled or removed, or the occurrence already has its run)
//! does nothing, so each occurrence gets at most one run.
//!
//! The disable conditions end scheduling: the host sets `enabled` to `false` when a scheduled
//! run uses up an `afterRuns` allowance (`runCount` reaches `max`) or when the next occurrence
//! would come after an `afterDate`.

use std::time::Duration;

use ahp_types::state::AutomationEntry;
use jiff::tz::TimeZone;
use jiff::Timestamp;
use serde_json::{json, Value};

use super::definition::condition;
use super::schedule::{Cron, Dialect};
use crate::host::faults::Fault;
use crate::host::world::World;

/// The next occurrence of an entry's schedule triggers after `after`, their expressions
/// read in `dialect`: (instant, trigger id).
fn next_occurrence(
    definition: &Value,
    after: Timestamp,
    dialect: Dialect,
) -> Option<(Timestamp, String)> {
    let triggers = definition["triggers"].as_array().into_iter().flatten();
    triggers
        .filter(|trigger| trigger["kind"] == "schedule")
        .filter_map(|trigger| {
            let schedule = &trigger["schedule"];
            let cron = Cron::parse(schedule["expression"].as_str()?, dialect)?;
            let zone = TimeZone::get(schedule["timeZone"].as_str()?).ok()?;
            let at = cron.next_after(&zone, after)?;
            Some((at, trigger["id"].as_str().unwrap_or_default().to_owned()))
        })
        .min_by_key(|(at, _)| *at)
}

/// The `afterDate` of a definition's disable conditions, if it has one.
fn after_date(definition: &Value) -> Option<Timestamp> {
    condition(definition, "afterDate")?["date"]
        .as_str()?
        .parse()
        .ok()
}

/// Whether a scheduled run used up the entry's `afterRuns` allowance.
fn allowance_used(entry: &Value) -> bool {
    let max = condition(&entry["definition"], "afterRuns").and_then(|c| c["max"].as_i64());
    max.is_some_and(|max| entry["runCount"].as_i64().unwrap_or(0) >= max)
}

impl World {
    /// Sets `entry`'s `nextRunAt` from its definition (removing it when the automation is
    /// disabled or has no occurrence ahead), disables it when an `afterDate` comes first,
    /// and arms a timer for the occurrence.
    pub(in crate::host) fn schedule_entry(&self, entry: &mut Value) {
        let Some(object) = entry.as_object_mut() else {
            return;
        };
        object.remove("nextRunAt");
        let definition = object.get("definition").cloned().unwrap_or_default();
        if definition["enabled"] != true || self.fault(Fault::ScheduleNextRunUnset) {
            return;
        }
        let dialect = Dialect {
            both_days: self.fault(Fault::DayFieldsBothRequired),
            sundays_cancel: self.fault(Fault::SundayListedTwiceLost),
            ..Dialect::AHP
        };
        let Some((at, trigger)) = next_occurrence(&definition, Timestamp::now(), dialect) else {
            return;
        };
        let expired = after_date(&definition).is_some_and(|date| at > date);
        if expired && !self.fault(Fault::AfterDateIgnored) {
            // Scheduling stops before that occurrence: the condition is met.
            if let Some(definition) = object.get_mut("definition") {
                definition["enabled"] = json!(false);
            }
            return;
        }
        let resource = object.get("resource").cloned().unwrap_or_default();
        object.insert("nextRunAt".into(), json!(at.to_string()));
        self.fire_at(
            resource.as_str().unwrap_or_default().to_owned(),
            trigger,
            at,
        );
    }

    /// Arms the timer that starts the run of `automation`'s occurrence `at`.
    fn fire_at(&self, automation: String, trigger: String, at: Timestamp) {
        // The timer holds the world weakly: a host shut down meanwhile is not kept alive.
        let shared = self.shared.clone();
        let wait = Timestamp::now().duration_until(at);
        let wait = Duration::try_from(wait).unwrap_or_default();
        tokio::spawn(async move {
            tokio::time::sleep(wait).await;
            if let Some(shared) = shared.upgrade() {
                shared.lock().fire_schedule(&automation, &trigger, at);
            }
        });
    }

    /// Starts the run of `automation`'s occurrence `at`, if that is still the occurrence the
    /// entry waits for, and publishes the entry (its runs, `runCount` and the next
    /// occurrence) with one `automation/set`.
    fn fire_schedule(&mut self, automation: &str, trigger: &str, at: Timestamp) {
        let Some(mut entry) = self.automation_entry(automation) else {
            return;
        };
        let scheduled_for = at.to_string();
        let disabled_fires =
            entry["definition"]["enabled"] == false && self.fault(Fault::DisabledScheduleFires);
        let stale = entry["nextRunAt"] != scheduled_for.as_str() && !disabled_fires;
        if stale || self.fault(Fault::ScheduleNeverFires) {
            return;
        }
        let origin =
            json!({ "kind": "trigger", "triggerId": trigger, "scheduledFor": scheduled_for });
        // One run per occurrence: the occurrence is the run's request key.
        let request = format!("schedule:{scheduled_for}");
        let Ok(run) = self.record_new_run(automation, &request, origin) else {
            return;
        };
        if let Some(count) = entry["runCount"].as_i64() {
            entry["runCount"] = json!(count.saturating_add(1));
            let used = allowance_used(&entry) || self.fault(Fault::AllowanceEndsEarly);
            if used && !self.fault(Fault::RunAllowanceIgnored) {
                entry["definition"]["enabled"] = json!(false);
            }
        }
        // The fault's mistake is about automations with no disable condition: those with one
        // keep their own allowance (AUTOMATION-021's), so the fault breaks one rule.
        let unconditioned = entry["definition"]["disableConditions"]
            .as_array()
            .is_none_or(Vec::is_empty);
        if unconditioned && self.fault(Fault::ScheduleStopsAfterRun) {
            entry["definition"]["enabled"] = json!(false);
        }
        self.schedule_entry(&mut entry);
        if let Ok(entry) = serde_json::from_value::<AutomationEntry>(entry) {
            // Published with the run history by launch_run, in one automation/set.
            let entries = &mut self.automations.catalogue.entries;
            if let Some(slot) = entries.iter_mut().find(|e| e.resource == automation) {
                *slot = entry;
            }
        }
        self.launch_run(automation, &run);
    }
}
