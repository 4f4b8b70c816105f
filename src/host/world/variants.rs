//! Conforming variants of the reference host: choices the protocol leaves to a host, each
//! taken the other way than the default. Unlike a [`crate::host::Fault`], a variant breaks no
//! rule — the whole catalog must pass against it (with a target profile that says what the
//! variant needs, e.g. the working directories it knows) — so tests use them to show that a
//! case accepts every conforming answer, not just the one the default host gives.

use serde_json::Value;

use super::World;

/// What an auto-approved tool call records as `confirmed` (`ToolCallConfirmationReason`):
/// a host may run a call without asking because none was needed, because the user allowed
/// it before, or because a setting does.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AutoConfirmed {
    #[default]
    NotNeeded,
    UserAction,
    Setting,
}

impl AutoConfirmed {
    pub fn as_str(self) -> &'static str {
        match self {
            AutoConfirmed::NotNeeded => "not-needed",
            AutoConfirmed::UserAction => "user-action",
            AutoConfirmed::Setting => "setting",
        }
    }
}

/// The conforming choices a host makes (the default: the built-in host's usual ones).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Variants {
    /// How auto-approved tool calls are recorded as confirmed.
    pub auto_confirmed: AutoConfirmed,
    /// The working directories `createSession` accepts besides those of the host's own
    /// workspace; any other is refused with -32602, as a host that only opens directories it
    /// knows does. `None`: any.
    pub known_directories: Option<Vec<String>>,
    /// Rejects a `chat/truncated` naming a turn the chat does not have (the default accepts
    /// it as a no-op): either way it changes nothing.
    pub rejects_unknown_truncation: bool,
    /// Leaves the optional `chats` list out of session summaries (`listSessions`,
    /// `root/sessionAdded`, `root/sessionSummaryChanged`).
    pub summaries_without_chats: bool,
    /// Advertises no agent behind a protected resource (issue 25, authentication), as a host
    /// without authentication: the `ahpspec-protected` agent is neither listed nor known.
    pub no_protected_agent: bool,
    /// A pushed token for the tool's resource resumes every call waiting for it, in every
    /// session, whoever pushed it (the default: only calls in the sessions or chats the
    /// pushing client follows). No rule says whose calls a token is for.
    pub host_wide_tool_tokens: bool,
}

impl World {
    /// The first of `directories` the host does not know, under the known-directories
    /// variant. A directory of the host's own workspace is always known: the host serves
    /// it (the changeset cases give each session a scratch directory there).
    pub(in crate::host) fn unknown_directory<'a>(
        &self,
        directories: &'a [String],
    ) -> Option<&'a str> {
        let known = self.config.variants.known_directories.as_ref()?;
        directories
            .iter()
            .find(|directory| {
                !known.contains(directory) && self.workspace.path_of(directory, true).is_err()
            })
            .map(String::as_str)
    }

    /// Whether the variant rejects this truncation: it names a turn the chat (`state`, as
    /// JSON) has neither ended nor active.
    pub(in crate::host) fn rejects_truncation(&self, state: &Value, action: &Value) -> bool {
        let Some(turn) = action["turnId"].as_str() else {
            return false;
        };
        self.config.variants.rejects_unknown_truncation
            && state["activeTurn"]["id"] != turn
            && !state["turns"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|t| t["id"] == turn)
    }
}
