//! The automation commands (issue 29, i29c): `listAutomationTriggerDefinitions` (on the root
//! channel), and on the `ahp-automations://` channel `runAutomation` (idempotent by `requestId`; the run
//! starts a session of the host, as `createSession` does, from the definition's session
//! template) and `fetchAutomationRuns` (one more page of run history, published with
//! `automation/set`).

use ahp_types::commands::{
    CreateSessionParams, FetchAutomationRunsParams, ListAutomationTriggerDefinitionsParams,
    RunAutomationParams,
};
use ahp_types::state::{AutomationOperation, AutomationSessionOrigin, SessionOrigin};
use serde_json::{json, Value};

use super::{parse, RpcError, INVALID_PARAMS, NOT_FOUND, PERMISSION_DENIED};
use crate::host::agents::agent_for;
use crate::host::automations::{trigger_definitions, RunEntry, CATALOGUE};
use crate::host::faults::Fault;
use crate::host::world::{now_iso, World, ROOT};

impl World {
    /// The run commands' `channel` is the one value `ahp-automations://` (the schema's enum):
    /// another is params of the wrong shape.
    fn on_catalogue(&self, channel: &str) -> Result<(), RpcError> {
        if channel == CATALOGUE || self.fault(Fault::AutomationCommandsAnyChannel) {
            Ok(())
        } else {
            Err(RpcError::new(
                INVALID_PARAMS,
                format!("{channel} is not the automation catalogue ({CATALOGUE})"),
            ))
        }
    }

    pub(super) fn list_automation_trigger_definitions(
        &self,
        params: &Value,
    ) -> Result<Value, RpcError> {
        let params: ListAutomationTriggerDefinitionsParams = parse(params)?;
        // Trigger definitions are discovered from the root channel.
        if params.channel != ROOT {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!(
                    "trigger definitions are listed on {ROOT}, not {}",
                    params.channel
                ),
            ));
        }
        if let Some(provider) = params.provider.as_deref() {
            if agent_for(Some(provider)).is_none() {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("unknown provider {provider:?}"),
                ));
            }
        }
        Ok(json!({ "items": trigger_definitions() }))
    }

    pub(super) fn run_automation(&mut self, params: &Value) -> Result<Value, RpcError> {
        let params: RunAutomationParams = parse(params)?;
        self.on_catalogue(&params.channel)?;
        let automation = params.automation.as_str();
        let Some(entry) = self.catalogue_entry(automation) else {
            return Err(RpcError::new(
                NOT_FOUND,
                format!("no automation {automation}"),
            ));
        };
        if !entry.operations.contains(&AutomationOperation::Run) {
            return Err(RpcError::new(
                PERMISSION_DENIED,
                format!("{automation} does not permit runs now"),
            ));
        }
        if let Some(run) = self.requested_run(automation, &params.request_id) {
            return Ok(json!({ "resource": run }));
        }
        let run = self
            .record_new_run(automation, &params.request_id, json!({ "kind": "manual" }))
            .map_err(|e| RpcError::new(super::INTERNAL_ERROR, e))?;
        self.launch_run(automation, &run);
        Ok(json!({ "resource": run }))
    }

    /// Records a new pending run of `automation` with `origin`, started by `request` (its
    /// idempotency key), from the definition as it is now: the run's URI.
    pub(in crate::host) fn record_new_run(
        &mut self,
        automation: &str,
        request: &str,
        origin: Value,
    ) -> Result<String, String> {
        let entry = self
            .catalogue_entry(automation)
            .ok_or_else(|| format!("no automation {automation}"))?;
        let message = crate::host::world::to_value(&entry.definition.message);
        let template = crate::host::world::to_value(&entry.definition.session);
        let run = self.fresh_id("ahp-automation-run:/run-");
        let state = serde_json::from_value(json!({
            "resource": run, "automation": automation, "origin": origin,
            "lifecycle": { "status": "pending", "createdAt": now_iso() }, "sessions": [],
        }))
        .map_err(|e| format!("building the run: {e}"))?;
        let entry = RunEntry {
            state,
            message,
            template,
            turn: None,
        };
        self.record_run(automation, request, entry);
        Ok(run)
    }

    /// Publishes `automation`'s entry with its new `run` and starts the run's session. The
    /// run exists before its session does: it waits, `pending`, while another run of the
    /// automation is active.
    pub(in crate::host) fn launch_run(&mut self, automation: &str, run: &str) {
        self.publish_automation(automation);
        if !self.automation_busy(automation, run) {
            self.start_run_session(run);
        }
    }

    /// Creates the run's session from its session template, through the same steps
    /// `createSession` takes; a template the host cannot honour fails the run.
    pub(in crate::host) fn start_run_session(&mut self, run: &str) {
        let Some(entry) = self.automations.runs.get(run) else {
            return;
        };
        let automation = entry.state.automation.clone();
        let automation = automation.as_str();
        let template = entry.template.clone();
        let provider = template["provider"].as_str();
        let Some(agent) = agent_for(provider) else {
            return self.fail_run_start(run, format!("unknown provider {provider:?}"));
        };
        let session = self.fresh_id("ahp-session:/automation-");
        let mut params = json!({ "channel": session });
        for key in ["provider", "workingDirectories", "config"] {
            if let Some(value) = template.get(key) {
                params[key] = value.clone();
            }
        }
        let params: CreateSessionParams = match serde_json::from_value(params) {
            Ok(params) => params,
            Err(error) => return self.fail_run_start(run, format!("session template: {error}")),
        };
        if let Some(unknown) = params
            .working_directories
            .as_deref()
            .and_then(|directories| self.unknown_directory(directories))
        {
            let message = format!("unknown working directory {unknown}");
            return self.fail_run_start(run, message);
        }
        if let Err(error) = self.insert_new_session(&session, agent, &params, None) {
            return self.fail_run_start(run, error.message);
        }
        if let Some(entry) = self.sessions.get_mut(&session) {
            entry.state.origin = Some(SessionOrigin::Automation(AutomationSessionOrigin {
                automation: automation.to_owned(),
                run: run.to_owned(),
            }));
        }
        self.link_run_session(run, &session);
        self.run_started(run, &session);
        self.announce_session(session, agent, None);
    }

    pub(super) fn fetch_automation_runs(&mut self, params: &Value) -> Result<Value, RpcError> {
        let params: FetchAutomationRunsParams = parse(params)?;
        self.on_catalogue(&params.channel)?;
        let automation = params.automation.as_str();
        if self.automation_entry(automation).is_none() {
            return Err(RpcError::new(
                NOT_FOUND,
                format!("no automation {automation}"),
            ));
        }
        let next = self.automation_runs_cursor(automation);
        match (params.cursor.as_deref(), next.as_deref()) {
            // Nothing older than what the catalogue shows.
            (None, None) => return Ok(json!({})),
            (None, Some(_)) => {}
            (Some(cursor), Some(next)) if cursor == next => {}
            (Some(cursor), _) => {
                return Err(RpcError::new(
                    INVALID_PARAMS,
                    format!("unknown or stale cursor {cursor:?}"),
                ))
            }
        }
        self.show_more_runs(automation);
        self.publish_automation(automation);
        Ok(json!({}))
    }
}
