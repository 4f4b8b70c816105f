//! The agent under test, as `GET /meta` describes it: which agent a run talks to, what it
//! declares and offers, and the suite variables it gives. `GET /meta` is read here, once
//! for whoever needs the agent (the runner, the fuzzer).

use serde_json::Value;

use super::http::{Client, HttpError, Request};
use super::SCRIPTED_AGENT;

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

/// Reads `GET /meta`: the chosen agent, or why the server's answer names none (a status
/// other than 200, a body without an agent). `Err` when no answer came at all.
pub async fn read_meta(client: &mut Client) -> Result<Result<Agent, String>, HttpError> {
    Ok(read_meta_version(client).await?.0)
}

/// Reads `GET /meta`: the chosen agent (as [`read_meta`]) and the body's `version` member
/// as it came (absent when there was no JSON body or no such member).
pub async fn read_meta_version(
    client: &mut Client,
) -> Result<(Result<Agent, String>, Option<Value>), HttpError> {
    let request = Request {
        method: "GET".into(),
        path: "/meta".into(),
        ..Request::default()
    };
    let response = client.send(&request).await?;
    let version = response.json().and_then(|m| m.get("version")).cloned();
    let agent = match response.json() {
        Some(meta) if response.status == 200 => {
            Agent::choose(meta).ok_or_else(|| "GET /meta lists no agent".to_owned())
        }
        _ => Err(format!("GET /meta answered {}", response.status)),
    };
    Ok((agent, version))
}

#[cfg(test)]
mod tests {
    use super::*;

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
