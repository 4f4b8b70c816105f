//! Target profiles: how to drive a server's agent into the behaviours agent-driven cases
//! need. A behaviour without a trigger makes its cases *not testable*.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

/// The profile for servers implementing the scripted-agent contract (the built-in host).
pub const SCRIPTED: &str = include_str!("../../profiles/ahpspec-scripted.toml");

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// Human-readable name.
    pub name: String,
    /// `createSession.provider` to use (absent: the server's default).
    pub provider: Option<String>,
    /// Behaviour name → user message text that triggers it.
    #[serde(default)]
    pub behaviours: BTreeMap<String, String>,
    /// Names of the query parameters and headers this server takes credentials in, besides
    /// the usual ones ([`crate::redact`]): their values never reach a report or capture.
    #[serde(default)]
    pub secrets: Vec<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read target profile {path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("invalid target profile {path}: {message}")]
    Parse { path: String, message: String },
}

impl Profile {
    pub fn scripted() -> Result<Profile, ProfileError> {
        Profile::parse("profiles/ahpspec-scripted.toml", SCRIPTED)
    }

    pub fn parse(path: &str, text: &str) -> Result<Profile, ProfileError> {
        toml::from_str(text).map_err(|e| ProfileError::Parse {
            path: path.to_owned(),
            message: e.to_string(),
        })
    }

    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Io {
            path: shown.clone(),
            source,
        })?;
        let profile = Profile::parse(&shown, &text)?;
        for name in &profile.secrets {
            crate::redact::learn_name(name);
        }
        Ok(profile)
    }

    /// The message text that triggers `behaviour`, if the target has one.
    pub fn behaviour(&self, behaviour: &str) -> Option<&str> {
        self.behaviours.get(behaviour).map(String::as_str)
    }
}
