//! Script steps of the scripted-agent contract that change session state beside the chat
//! (issue 29, i29d): customizations, the session's activity, canvases and sub-agents.

use serde::{Deserialize, Serialize};

/// Upsert a plugin container with one skill child (`session/customizationUpdated`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginStep {
    pub id: String,
    pub name: String,
}

/// Describe what the session is doing (`session/activityChanged`); no text clears it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionActivityStep {
    #[serde(default)]
    pub text: Option<String>,
}

/// Delegate a task to a sub-agent: a tool call that spawns a worker chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SubagentStep {
    /// The worker chat's title (and the `subagent` content's).
    pub title: String,
    /// The worker's task: the message of its first turn (a script runs as one).
    pub task: String,
}

/// Open a canvas in the chat, or give the one with this id a new whole state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CanvasStep {
    /// The canvas's instance id within the chat.
    pub id: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
}
