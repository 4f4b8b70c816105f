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
    /// Behaviour name → the user message text that triggers it, alone or with what the
    /// behaviour promises beyond its name (`{ message = "…", promises = ["editable"] }`).
    #[serde(default)]
    pub behaviours: BTreeMap<String, Behaviour>,
    /// Working directories (URIs) the server accepts for new sessions: cases that create
    /// sessions in directories take them from here (`${directory.0}`, `${directory.1}`),
    /// and without two of them they are not testable.
    #[serde(default)]
    pub working_directories: Vec<String>,
    /// A directory (a `file:` URI) the server serves through the `resource*` commands and
    /// lets the harness create, write and delete files in: resource cases work in fresh
    /// subdirectories of it (`${workspace}`), and without it they are not testable. The
    /// built-in host serves a directory of its own, which the run fills in when absent.
    pub workspace: Option<String>,
    /// Names of the query parameters and headers this server takes credentials in, besides
    /// the usual ones ([`crate::redact`]): their values never reach a report or capture.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// What the session-configuration cases ask of `sessionConfigCompletions` (issue 25):
    /// without it they are not testable.
    #[serde(default)]
    pub session_config: Option<SessionConfigNeeds>,
    /// What the `completions` cases type (issue 25): without it they are not testable.
    #[serde(default)]
    pub completions: Option<CompletionsNeeds>,
    /// What the root-configuration case sets (issue 25): without it it is not testable.
    #[serde(default)]
    pub root_config: Option<RootConfigNeeds>,
    /// The agent that needs a token, its protected resource and a token the server accepts
    /// (issue 25, authentication): without it the auth cases are not testable. The token
    /// is a secret: it never reaches a report or a capture ([`crate::redact`]).
    #[serde(default)]
    pub auth: Option<AuthNeeds>,
    /// Whether a case may wait up to a minute for a schedule trigger to fire (the AHP cron
    /// grammar has no seconds): off, the firing case is not testable and a run stays fast.
    #[serde(default)]
    pub schedule_waits: bool,
    /// An event trigger whose event the harness can cause: the event-trigger case creates an
    /// automation on it and writes a file into the `workspace` (`resourceWrite`). Without
    /// it (or without a workspace) that case is not testable.
    #[serde(default)]
    pub event_trigger: Option<EventTriggerNeeds>,
}

/// A trigger type `listAutomationTriggerDefinitions` lists and one of its events that occurs
/// when a file in the profile's workspace is written (`${event_trigger.type}`,
/// `${event_trigger.event}`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EventTriggerNeeds {
    #[serde(rename = "type")]
    pub kind: String,
    pub event: String,
}

/// An agent that advertises a required protected resource, that resource's id, and a token
/// the server accepts for it (and for the resources its MCP tools ask a token for):
/// `${auth.provider}`, `${auth.resource}`, `${auth.token}`.
#[derive(Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthNeeds {
    pub provider: String,
    pub resource: String,
    pub token: String,
}

/// Never prints the token (a profile is printed in debug output and error messages).
impl std::fmt::Debug for AuthNeeds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthNeeds")
            .field("provider", &self.provider)
            .field("resource", &self.resource)
            .field("token", &crate::redact::REDACTED)
            .finish()
    }
}

/// A property of the server's root configuration and a value it allows other than its
/// current one (`${root_config.property}`, `${root_config.value}`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RootConfigNeeds {
    pub property: String,
    pub value: serde_json::Value,
}

/// A property `resolveSessionConfig` marks `enumDynamic`, and a query
/// `sessionConfigCompletions` answers for it with a value other than the property's default
/// (`${config.property}`, `${config.query}`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SessionConfigNeeds {
    pub dynamic_property: String,
    pub query: String,
}

/// A user-message text `completions` answers with at least one item, the cursor at its end
/// (`${completions.text}`, and `${completions.length}`: its length in UTF-16 code units).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CompletionsNeeds {
    pub text: String,
}

/// How to trigger one behaviour, and what it promises. A case that needs more than the
/// behaviour's name promises (`needs = ["tool-ask.editable"]`) is not testable on a
/// profile that does not promise it.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum Behaviour {
    Message(String),
    Promising(PromisingBehaviour),
}

#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct PromisingBehaviour {
    pub message: String,
    /// What the behaviour does beyond its name, e.g. `editable` and `options` for a tool
    /// call that asks for confirmation, `part-first` for a long turn that streams a part
    /// before it waits.
    #[serde(default)]
    pub promises: Vec<String>,
}

impl Behaviour {
    pub fn message(&self) -> &str {
        match self {
            Behaviour::Message(message) => message,
            Behaviour::Promising(behaviour) => &behaviour.message,
        }
    }

    pub fn promises(&self, promise: &str) -> bool {
        match self {
            Behaviour::Message(_) => false,
            Behaviour::Promising(behaviour) => behaviour.promises.iter().any(|p| p == promise),
        }
    }
}

/// The profile need for working directories (`needs = ["directories"]`).
pub const DIRECTORIES: &str = "directories";
/// The profile need for a dynamic session-configuration property (`session_config`).
pub const SESSION_CONFIG: &str = "session-config";
/// The profile need for a completable message text (`completions`).
pub const COMPLETIONS: &str = "completions";
/// The profile need for a settable root-configuration property (`root_config`).
pub const ROOT_CONFIG: &str = "root-config";
/// The profile need for a served, writable directory (`needs = ["workspace"]`).
pub const WORKSPACE: &str = "workspace";
/// The profile need for an agent that needs a token, and the token (`auth`).
pub const AUTH: &str = "auth";
/// The profile need for waits of up to a minute, for a schedule to fire (`schedule_waits`).
pub const SCHEDULE_WAITS: &str = "schedule-waits";
/// The profile need for an event trigger the harness causes by writing a file (`event_trigger`).
pub const EVENT_TRIGGER: &str = "event-trigger";

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
        let profile = Profile::parse("profiles/ahpspec-scripted.toml", SCRIPTED)?;
        profile.learn_secrets();
        Ok(profile)
    }

    /// Tells [`crate::redact`] what of the profile is secret: the names of its `secrets`
    /// and its auth token.
    pub fn learn_secrets(&self) {
        for name in &self.secrets {
            crate::redact::learn_name(name);
        }
        if let Some(auth) = &self.auth {
            crate::redact::learn_value(&auth.token);
        }
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
        profile.learn_secrets();
        Ok(profile)
    }

    /// The message text that triggers `behaviour`, if the target has one.
    pub fn behaviour(&self, behaviour: &str) -> Option<&str> {
        self.behaviours.get(behaviour).map(Behaviour::message)
    }

    /// Whether the profile provides a case's need: a behaviour (`tool-ask`), a promise of
    /// one (`tool-ask.editable`), or two working directories (`directories`).
    pub fn provides(&self, need: &str) -> bool {
        if need == DIRECTORIES {
            return self.working_directories.len() >= 2;
        }
        if need == SESSION_CONFIG {
            return self.session_config.is_some();
        }
        if need == COMPLETIONS {
            return self.completions.is_some();
        }
        if need == ROOT_CONFIG {
            return self.root_config.is_some();
        }
        if need == WORKSPACE {
            return self.workspace.is_some();
        }
        if need == AUTH {
            return self.auth.is_some();
        }
        if need == SCHEDULE_WAITS {
            return self.schedule_waits;
        }
        if need == EVENT_TRIGGER {
            return self.event_trigger.is_some();
        }
        match need.split_once('.') {
            Some((behaviour, promise)) => self
                .behaviours
                .get(behaviour)
                .is_some_and(|b| b.promises(promise)),
            None => self.behaviours.contains_key(need),
        }
    }
}
