//! What the agent behind a session advertises, read from the root state: the capabilities
//! that gate fork and side chats and the primary working directory's removal.

use ahp_types::state::AgentCapabilities;

use super::World;

impl World {
    /// What the agent behind `session` advertises in the root state.
    pub(in crate::host) fn session_agent_capabilities(
        &self,
        session: &str,
    ) -> Option<&AgentCapabilities> {
        let provider = &self.sessions.get(session)?.state.provider;
        self.root
            .agents
            .iter()
            .find(|agent| agent.provider == *provider)?
            .capabilities
            .as_ref()
    }

    /// Whether `session`'s agent protects its first working directory as a replaceable
    /// primary (`multipleWorkingDirectories.primaryReplacement`): it cannot be removed.
    pub(in crate::host) fn primary_is_protected(&self, session: &str) -> bool {
        self.session_agent_capabilities(session)
            .and_then(|caps| caps.multiple_working_directories.as_ref())
            .and_then(|dirs| dirs.primary_replacement)
            .unwrap_or(false)
    }
}
