//! What `GET /meta` says about the one agent of the built-in server: its server-side
//! tools, its options and its capabilities. The request validation reads the same tables,
//! so what is declared and what is accepted cannot drift apart.

use serde_json::{json, Map, Value};

use super::{AapFault, AapFaultSet, AapHostConfig, HistoryKinds};

/// The AAP protocol version this server speaks by default (docs/endpoints.md, GET /meta).
pub const PROTOCOL_VERSION: u64 = 3;
/// Every version it can speak (`AapHostConfig::version`).
pub const VERSIONS: &[u64] = &[1, 2, 3];
/// The name of the scripted agent (SCRIPTED-AGENT.md).
pub const AGENT_NAME: &str = "ahpspec-scripted";

/// The server-side tools the agent exposes; whether a call needs permission is the
/// session's `trust`, not the tool's.
pub const SERVER_TOOLS: &[(&str, &str)] = &[
    (
        "lookup",
        "Looks a query up (the scripted agent's stand-in for a search).",
    ),
    (
        "publish",
        "Publishes a note (a tool a client would want to approve).",
    ),
];

/// One declared option: its name, kind and default (select options after the default).
struct OptionSpec {
    name: &'static str,
    kind: OptionKind,
    default: &'static str,
    description: &'static str,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum OptionKind {
    Text,
    Secret,
    Select(&'static [&'static str]),
}

const OPTIONS: &[OptionSpec] = &[
    OptionSpec {
        name: "model",
        kind: OptionKind::Select(&["scripted-small", "scripted-large"]),
        default: "scripted-small",
        description: "Which scripted model answers (both answer alike).",
    },
    OptionSpec {
        name: "language",
        kind: OptionKind::Text,
        default: "English",
        description: "Response language (recorded, not used).",
    },
    OptionSpec {
        name: "api_key",
        kind: OptionKind::Secret,
        default: "",
        description: "A secret the server must never return in plaintext.",
    },
];

/// The `GET /meta` body.
pub fn meta_body(config: &AapHostConfig) -> Value {
    let faults = &config.faults;
    let version = match (faults.contains(AapFault::MetaVersion2), config.version) {
        (true, 2) => 1,
        (true, _) => 2,
        (false, version) => version,
    };
    let agent = agent_info(&config.history, faults);
    let agents = if faults.contains(AapFault::DuplicateAgent) {
        vec![agent.clone(), agent]
    } else {
        vec![agent]
    };
    json!({"version": version, "agents": agents})
}

fn agent_info(history: &HistoryKinds, faults: &AapFaultSet) -> Value {
    let tools: Vec<Value> = SERVER_TOOLS
        .iter()
        .map(|(name, description)| {
            let mut tool = json!({
                "name": name,
                "title": name,
                "description": description,
                "inputSchema": {"type": "object"},
            });
            if let (true, Some(tool)) = (
                faults.contains(AapFault::ToolSpecNoDescription),
                tool.as_object_mut(),
            ) {
                tool.remove("description");
            }
            tool
        })
        .collect();
    let mut options: Vec<Value> = OPTIONS.iter().map(option_info).collect();
    if faults.contains(AapFault::SelectDefaultNotOption) {
        options[0]["default"] = json!("scripted-none");
    }
    let version = if faults.contains(AapFault::VersionNotSemver) {
        "1.0"
    } else {
        "1.0.0"
    };
    let mut history_caps = Map::new();
    if history.compacted {
        history_caps.insert("compacted".into(), json!({}));
    }
    if history.full {
        history_caps.insert("full".into(), json!({}));
    }
    json!({
        "name": AGENT_NAME,
        "title": "ahpspec scripted agent",
        "version": version,
        "description": "Deterministic test agent: a user message starting with \
                        `ahpspec-script:` scripts the turn, anything else is echoed.",
        "tools": tools,
        "options": options,
        "capabilities": {
            "history": history_caps,
            "stream": {"delta": {}, "message": {}, "none": {}},
            "application": {"tools": {}},
            "image": {"http": {}, "data": {}},
        },
    })
}

fn option_info(option: &OptionSpec) -> Value {
    let kind = match option.kind {
        OptionKind::Text => "text",
        OptionKind::Secret => "secret",
        OptionKind::Select(_) => "select",
    };
    let mut info = json!({
        "type": kind,
        "name": option.name,
        "title": option.name,
        "description": option.description,
        "default": option.default,
    });
    if let (OptionKind::Select(values), Some(object)) = (option.kind, info.as_object_mut()) {
        object.insert("options".into(), json!(values));
    }
    info
}

/// Whether `name` is a declared server-side tool.
pub fn is_server_tool(name: &str) -> bool {
    SERVER_TOOLS.iter().any(|(tool, _)| *tool == name)
}

/// Whether option `name` is declared with type `secret`.
pub fn is_secret_option(name: &str) -> bool {
    OPTIONS
        .iter()
        .any(|option| option.name == name && option.kind == OptionKind::Secret)
}

/// Whether option `name` is declared with type `text`.
pub fn is_text_option(name: &str) -> bool {
    OPTIONS
        .iter()
        .any(|option| option.name == name && option.kind == OptionKind::Text)
}

/// Checks one `agent.options` entry against the declarations: the key is declared, the
/// value is a string, and a select's value is one of its options. endpoints.md asks for
/// "key-value pairs matching the agent's declared options" without saying what happens
/// otherwise; refusing (400) keeps a typo from being silently ignored.
pub fn check_option(name: &str, value: &Value) -> Result<(), String> {
    let Some(option) = OPTIONS.iter().find(|option| option.name == name) else {
        return Err(format!(
            "agent.options: {name:?} is not an option of {AGENT_NAME}"
        ));
    };
    let Some(value) = value.as_str() else {
        return Err(format!("agent.options.{name}: the value must be a string"));
    };
    match option.kind {
        OptionKind::Select(values) if !values.contains(&value) => Err(format!(
            "agent.options.{name}: {value:?} is not one of {values:?}"
        )),
        _ => Ok(()),
    }
}
