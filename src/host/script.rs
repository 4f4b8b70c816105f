//! The scripted-agent contract: a user message whose text starts with [`SCRIPT_PREFIX`]
//! carries a JSON document (schema: `schemas/agent-script.schema.json`) that says exactly
//! what the agent does during that turn. Any server can implement the contract to become
//! testable on the agent-driven rules; this host is the reference implementation.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Text prefix that marks a user message as a script.
pub const SCRIPT_PREFIX: &str = "ahpspec-script:";

/// Longest wait a script may ask for, in milliseconds.
pub const MAX_WAIT_MS: u64 = 600_000;

/// A whole turn script.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    /// The steps, run in order; the turn completes after the last one.
    pub steps: Vec<Step>,
}

/// One thing the agent does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub enum Step {
    /// Stream a markdown part.
    Markdown(TextStep),
    /// Stream a reasoning part.
    Reasoning(TextStep),
    /// Run a tool call through its lifecycle.
    ToolCall(ToolCallStep),
    /// Ask the user for input and wait until the request is completed.
    InputRequest(InputRequestStep),
    /// Pause for a fixed time.
    Wait(WaitStep),
    /// Wait until the client cancels the turn (bounded by [`MAX_WAIT_MS`]).
    WaitForCancel(Empty),
    /// Report token usage.
    Usage(UsageStep),
    /// End the turn with `chat/error`.
    Error(ErrorStep),
    /// Replace the chat's canvases list with an empty one (`chat/canvasesChanged`, an action
    /// introduced in 0.10.0: never sent to 0.9.x connections).
    Canvases(Empty),
    /// Describe what the chat is doing (`chat/activityChanged`, mirrored into the session's
    /// catalog); issue 29.
    Activity(ActivityStep),
    /// Write a file under the session's first working directory and report it in the
    /// session's and the chat's changesets (issue 29).
    EditFile(EditFileStep),
    /// Start tracking background shell work in the chat (`chat/backgroundWorkSet`), which
    /// outlives the turn until a `backgroundWorkDone` step removes it (issue 29).
    BackgroundWork(BackgroundWorkStep),
    /// Stop tracking background work (`chat/backgroundWorkRemoved`).
    BackgroundWorkDone(WorkIdStep),
    /// Replace the session's `_meta` (`session/metaChanged`, issue 29).
    SessionMeta(SessionMetaStep),
    /// Change the agent's own description in the root state (`root/agentsChanged` with
    /// every agent, issue 29).
    AgentDescription(ActivityStep),
    /// Upsert a plugin customization (`session/customizationUpdated`, issue 29).
    Plugin(super::script_state::PluginStep),
    /// Remove a customization by id (`session/customizationRemoved`, issue 29).
    CustomizationRemoved(WorkIdStep),
    /// Replace the session's customizations with its own (`session/customizationsChanged`,
    /// issue 29): what the agent added goes.
    Customizations(Empty),
    /// Describe what the session is doing, or clear it (`session/activityChanged`, issue 29).
    SessionActivity(super::script_state::SessionActivityStep),
    /// Open a canvas in the chat (`chat/canvasesChanged`) or replace its state
    /// (`canvas/stateChanged`), issue 29.
    Canvas(super::script_state::CanvasStep),
    /// Delegate to a sub-agent: a tool call spawning a worker chat, whose result names it
    /// (issue 29).
    Subagent(super::script_state::SubagentStep),
    /// End the turn with `chat/turnComplete` now, ignoring any further steps.
    Complete(Empty),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ActivityStep {
    /// The activity description the chat now shows.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EditFileStep {
    /// Relative to the session's first working directory (the host's workspace when it
    /// has none); it may not lead outside the workspace.
    pub path: String,
    /// The file's whole new content.
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BackgroundWorkStep {
    pub id: String,
    pub label: String,
    /// The shell command the work runs (only described: nothing is run).
    pub command: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkIdStep {
    pub id: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionMetaStep {
    /// The session's whole new `_meta`.
    pub meta: serde_json::Map<String, Value>,
}

/// A step with no parameters: `{}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Empty {}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TextStep {
    /// The full text of the part.
    pub text: String,
    /// Number of deltas the text is split into (default 1, at least 1).
    #[serde(default)]
    pub chunks: Option<u32>,
}

/// How a tool call is confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Confirmation {
    /// Ready with `confirmed: "not-needed"`: runs at once.
    #[default]
    Auto,
    /// Ready without `confirmed`: waits in `pending-confirmation` for the client.
    Ask,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolCallStep {
    /// Tool call id (default: a random one, as a real agent makes up).
    #[serde(default)]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Display name (default: the tool name).
    #[serde(default)]
    pub display_name: Option<String>,
    /// Tool input, streamed as `chat/toolCallDelta` before the call is ready.
    #[serde(default)]
    pub input: Option<String>,
    /// Number of input deltas (default 1).
    #[serde(default)]
    pub input_chunks: Option<u32>,
    #[serde(default)]
    pub confirmation: Confirmation,
    /// Confirmation options offered with `ask` (`ConfirmationOption` objects; one without
    /// an `id` gets a random one).
    #[serde(default)]
    pub options: Option<Vec<Value>>,
    /// Whether the client may edit the input when confirming.
    #[serde(default)]
    pub editable: Option<bool>,
    /// After the call starts running, ask for confirmation once more (mid-execution
    /// re-confirmation through a second `chat/toolCallReady`).
    #[serde(default)]
    pub reconfirm: bool,
    /// A client-provided tool: contributed by the client that started the turn (or
    /// `clientId`), which must complete it with `chat/toolCallComplete`.
    #[serde(default)]
    pub client: bool,
    /// Owner of a client-provided tool (default: the client that started the turn).
    #[serde(default)]
    pub client_id: Option<String>,
    /// Number of `chat/toolCallContentChanged` updates while running (default 0).
    #[serde(default)]
    pub content_updates: u32,
    /// The result the host reports (ignored for client tools).
    #[serde(default)]
    pub result: Option<ToolResultStep>,
    /// Whether the result needs the client's confirmation.
    #[serde(default)]
    pub result_confirmation: bool,
    /// A tool of an MCP server that needs a token (issue 25, authentication): contributed
    /// by the MCP server, and once running it pauses in `auth-required`
    /// (`chat/toolCallAuthRequired`) until the client pushes a token for the tool resource
    /// with `authenticate` (the host resumes it with `chat/toolCallAuthResolved`) or ends
    /// it with a failed `chat/toolCallComplete`.
    #[serde(default)]
    pub mcp_auth: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ToolResultStep {
    pub success: bool,
    /// Past-tense message (default: generated).
    #[serde(default)]
    pub message: Option<String>,
    /// Text content of the result.
    #[serde(default)]
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InputRequestStep {
    /// Request id (default: a random one).
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    #[serde(default)]
    pub url: Option<String>,
    /// `ChatInputQuestion` objects, passed through verbatim, except that a question (or a
    /// select option) without an `id` gets a random one.
    #[serde(default)]
    pub questions: Option<Vec<Value>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WaitStep {
    pub ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UsageStep {
    #[serde(default)]
    pub input_tokens: Option<i64>,
    #[serde(default)]
    pub output_tokens: Option<i64>,
    #[serde(default)]
    pub model: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ErrorStep {
    pub message: String,
    /// `ErrorInfo.errorType` (default `"ScriptedError"`).
    #[serde(default)]
    pub error_type: Option<String>,
    /// Whether `chat/turnResume` may reopen the turn (it then continues after this step).
    #[serde(default)]
    pub resumable: bool,
}

/// Why a message's script cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ScriptError {
    #[error("invalid agent script: {0}")]
    Invalid(String),
    #[error("invalid agent script: wait of {0} ms exceeds the limit of {MAX_WAIT_MS} ms")]
    WaitTooLong(u64),
}

/// What the agent does for a user message: a script when the text starts with the prefix,
/// otherwise a one-part echo of the message.
pub fn plan_for_message(text: &str) -> Result<Vec<Step>, ScriptError> {
    let Some(document) = text.trim_start().strip_prefix(SCRIPT_PREFIX) else {
        return Ok(vec![Step::Markdown(TextStep {
            text: format!("You said: {text}"),
            chunks: None,
        })]);
    };
    let script: Script =
        serde_json::from_str(document).map_err(|e| ScriptError::Invalid(e.to_string()))?;
    for step in &script.steps {
        if let Step::Wait(WaitStep { ms }) = step {
            if *ms > MAX_WAIT_MS {
                return Err(ScriptError::WaitTooLong(*ms));
            }
        }
    }
    Ok(script.steps)
}

/// Splits `text` into `chunks` pieces on character boundaries (empty pieces dropped).
pub fn split_text(text: &str, chunks: Option<u32>) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let count = usize::try_from(chunks.unwrap_or(1).max(1)).unwrap_or(1);
    let size = chars.len().div_ceil(count).max(1);
    chars
        .chunks(size)
        .map(|piece| piece.iter().collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_echoes() {
        let plan = plan_for_message("hello").expect("plain text is a valid plan");
        assert!(matches!(&plan[..], [Step::Markdown(step)] if step.text == "You said: hello"));
    }

    #[test]
    fn script_parses_and_rejects_unknown_fields() {
        let plan = plan_for_message(
            r#"ahpspec-script:{"steps":[{"markdown":{"text":"hi","chunks":2}},{"toolCall":{"name":"t","confirmation":"ask"}},{"complete":{}}]}"#,
        )
        .expect("valid script");
        assert_eq!(plan.len(), 3);
        assert!(
            plan_for_message(r#"ahpspec-script:{"steps":[{"markdown":{"txt":"hi"}}]}"#).is_err()
        );
        assert!(plan_for_message("ahpspec-script:{").is_err());
        assert!(plan_for_message(r#"ahpspec-script:{"steps":[{"wait":{"ms":9999999}}]}"#).is_err());
    }

    #[test]
    fn split_text_keeps_all_characters() {
        assert_eq!(split_text("abcdefg", Some(3)), vec!["abc", "def", "g"]);
        assert_eq!(split_text("", Some(3)), Vec::<String>::new());
        assert_eq!(split_text("héllo", None), vec!["héllo"]);
    }
}
