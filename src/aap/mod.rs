//! The AAP harness: certifies an Agent Application Protocol (version 3) server over HTTP +
//! SSE with the same verdicts, rows, baseline and reports as the AHP runner.
//!
//! Layers, from the wire up: [`http`] and [`sse`] (requests and streams, recorded into the
//! case transcript), [`checks`]/[`stream`] (always-on rules on every response and event),
//! [`model`] (what a conversation holds, mode-independent), [`suite`] (suites/aap/*.toml),
//! [`case`] (one case), and [`run`] (the catalog, always-on rows, cross-mode comparison).

pub mod case;
pub mod checks;
pub mod expect;
pub mod fuzz;
pub mod http;
pub mod model;
pub mod runner;
pub mod sse;
pub mod suite;
pub mod vars;

use serde_json::Value;

pub use runner::{certify, run, AapError, AapOptions};

/// The AAP protocol version the harness certifies.
pub const AAP_VERSION: u64 = 3;

/// The scripted test agent's name (aap/SCRIPTED-AGENT.md).
pub const SCRIPTED_AGENT: &str = "ahpspec-scripted";

/// The agent under test, as `GET /meta` describes it.
#[derive(Debug, Clone)]
pub struct Agent {
    pub name: String,
    pub info: Value,
}

impl Agent {
    /// Picks the scripted agent when the server has it, else the first agent.
    pub fn choose(meta: &Value) -> Option<Agent> {
        let agents = meta.get("agents")?.as_array()?;
        let named = |a: &&Value| a.get("name").and_then(Value::as_str) == Some(SCRIPTED_AGENT);
        let info = agents
            .iter()
            .find(named)
            .or_else(|| agents.first())?
            .clone();
        Some(Agent {
            name: info.get("name")?.as_str()?.to_owned(),
            info,
        })
    }

    pub fn scripted(&self) -> bool {
        self.name == SCRIPTED_AGENT
    }

    /// Whether a capability path (`stream.delta`, `history.full`) is declared. A missing
    /// `capabilities.stream` means `none` only (docs/endpoints.md § GET /meta).
    pub fn declares(&self, path: &str) -> bool {
        let capabilities = self.info.get("capabilities");
        if path == "stream.none" && capabilities.and_then(|c| c.get("stream")).is_none() {
            return true;
        }
        let pointer = format!("/{}", path.replace('.', "/"));
        capabilities.and_then(|c| c.pointer(&pointer)).is_some()
    }

    fn options_of(&self, kind: &str) -> Vec<&Value> {
        self.info
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter(|o| o.get("type").and_then(Value::as_str) == Some(kind))
            .collect()
    }

    /// Suite variables derived from the agent: `${agent}`, `${server_tool}`,
    /// `${text_option}`, `${select_option}` / `${select_value}`, `${secret_option}`.
    pub fn vars(&self) -> Vec<(String, String)> {
        let mut vars = vec![("agent".to_owned(), self.name.clone())];
        let name = |v: &Value| v.get("name").and_then(Value::as_str).map(str::to_owned);
        let tools: Vec<String> = self
            .info
            .get("tools")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(name)
            .collect();
        for (index, tool) in tools.iter().take(2).enumerate() {
            let key = if index == 0 {
                "server_tool"
            } else {
                "server_tool2"
            };
            vars.push((key.to_owned(), tool.clone()));
        }
        if let Some(text) = self.options_of("text").first().and_then(|o| name(o)) {
            vars.push(("text_option".to_owned(), text));
        }
        if let Some(secret) = self.options_of("secret").first().and_then(|o| name(o)) {
            vars.push(("secret_option".to_owned(), secret));
        }
        if let Some(select) = self.options_of("select").first() {
            let default = select.get("default").and_then(Value::as_str);
            let other = select
                .get("options")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .find(|v| Some(*v) != default);
            if let (Some(option), Some(value)) = (name(select), other) {
                vars.push(("select_option".to_owned(), option));
                vars.push(("select_value".to_owned(), value.to_owned()));
            }
        }
        vars
    }

    /// Whether the agent offers what a suite `needs` entry asks for.
    pub fn offers(&self, need: &str, vars: &[(String, String)], token: bool) -> bool {
        let has = |key: &str| vars.iter().any(|(k, _)| k == key);
        match need {
            "scripted" => self.scripted(),
            "server_tool" => has("server_tool"),
            "two_server_tools" => has("server_tool2"),
            "text_option" => has("text_option"),
            "secret_option" => has("secret_option"),
            "select_option" => has("select_option"),
            "token" => token,
            _ => false,
        }
    }
}

/// The command that re-runs an AAP run (a case's `--filter ID` is appended).
pub fn rerun_prefix(url: Option<&str>, fault: Option<&str>) -> String {
    let mut prefix = match url {
        Some(url) => format!("ahpspec run {url}"),
        None => "ahpspec run --protocol aap".to_owned(),
    };
    if let Some(fault) = fault {
        prefix.push_str(&format!(" --fault {fault}"));
    }
    prefix
}

/// The protocol a `run` speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    Ahp,
    Aap,
}

/// Decides the protocol from `--protocol` and the URL's scheme (`ws`/`wss` AHP,
/// `http`/`https` AAP; no URL and no `--protocol`: AHP). A contradiction is an error.
pub fn protocol_of(url: Option<&str>, named: Option<&str>) -> Result<Protocol, String> {
    let named = match named {
        None => None,
        Some("ahp") => Some(Protocol::Ahp),
        Some("aap") => Some(Protocol::Aap),
        Some(other) => return Err(format!("unknown protocol {other:?} (ahp or aap)")),
    };
    let by_scheme = match url {
        None => None,
        Some(u) if u.starts_with("ws://") || u.starts_with("wss://") => Some(Protocol::Ahp),
        Some(u) if u.starts_with("http://") || u.starts_with("https://") => Some(Protocol::Aap),
        Some(u) => {
            return Err(format!(
                "not a server URL: {u} (ws://… or wss://… for AHP, http://… or https://… for AAP)"
            ))
        }
    };
    match (named, by_scheme) {
        (Some(named), Some(scheme)) if named != scheme => Err(format!(
            "--protocol {} does not match the URL's scheme",
            if named == Protocol::Aap { "aap" } else { "ahp" }
        )),
        (named, scheme) => Ok(named.or(scheme).unwrap_or(Protocol::Ahp)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_or_the_flag_picks_the_protocol() {
        assert_eq!(protocol_of(Some("http://h:1/v1"), None), Ok(Protocol::Aap));
        assert_eq!(protocol_of(Some("https://h"), None), Ok(Protocol::Aap));
        assert_eq!(protocol_of(Some("ws://h:1"), None), Ok(Protocol::Ahp));
        assert_eq!(protocol_of(None, None), Ok(Protocol::Ahp));
        assert_eq!(protocol_of(None, Some("aap")), Ok(Protocol::Aap));
        assert!(protocol_of(Some("ws://h"), Some("aap")).is_err());
        assert!(protocol_of(Some("ftp://h"), None).is_err());
        assert!(protocol_of(None, Some("xmpp")).is_err());
    }

    #[test]
    fn capabilities_and_vars_come_from_meta() {
        let meta = serde_json::json!({"version": 3, "agents": [
            {"name": "other", "version": "1.0.0"},
            {"name": SCRIPTED_AGENT, "version": "1.0.0", "tools": [{"name": "lookup"}],
             "options": [{"type": "select", "name": "model", "options": ["a", "b"], "default": "a"},
                         {"type": "secret", "name": "key", "default": ""}],
             "capabilities": {"history": {"full": {}}}}]});
        let agent = Agent::choose(&meta).unwrap();
        assert!(agent.scripted());
        assert!(agent.declares("history.full") && !agent.declares("history.compacted"));
        assert!(agent.declares("stream.none") && !agent.declares("stream.delta"));
        let vars = agent.vars();
        assert!(vars.contains(&("select_value".into(), "b".into())));
        assert!(vars.contains(&("secret_option".into(), "key".into())));
        assert!(!agent.offers("two_server_tools", &vars, false));
    }
}
