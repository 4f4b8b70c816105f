//! The scripted test agent (aap/SCRIPTED-AGENT.md): a user message starting with
//! `ahpspec-script:` scripts the turn; any other text is echoed. A script becomes a
//! [`Plan`]: what the turn outputs, in order, which calls it leaves pending and its stop
//! reason. Plans are pure, so a request is validated whole before the session changes.

use serde::Deserialize;
use serde_json::{Map, Value};

use super::settings::{Settings, ToolKind};
use super::{AapFault, AapFaultSet};

/// The prefix that turns a user message into a script.
pub const SCRIPT_PREFIX: &str = "ahpspec-script:";

/// One scripted turn (SCRIPTED-AGENT.md, "Scripted turns").
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    steps: Vec<Step>,
    #[serde(default)]
    stop: Option<StopReason>,
    #[serde(default)]
    then: Option<Box<Script>>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
enum Step {
    Thinking(Pieces),
    Text(Pieces),
    ToolCall(ScriptCall),
}

/// A text given whole (split after spaces for deltas) or as its exact deltas.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
enum Pieces {
    Whole(String),
    Split(Vec<String>),
}

impl Pieces {
    fn pieces(&self) -> Vec<String> {
        match self {
            Pieces::Whole(text) => split_after_spaces(text),
            Pieces::Split(pieces) => pieces.clone(),
        }
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct ScriptCall {
    name: String,
    #[serde(default)]
    input: Map<String, Value>,
    #[serde(default)]
    id: Option<String>,
}

/// Why a turn stopped (schema.md, StopReason).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Refusal,
    Error,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EndTurn => "end_turn",
            StopReason::ToolUse => "tool_use",
            StopReason::MaxTokens => "max_tokens",
            StopReason::Refusal => "refusal",
            StopReason::Error => "error",
        }
    }
}

/// One thing a turn produces, in order; rendered as SSE events or as messages.
#[derive(Debug, Clone, PartialEq)]
pub enum Output {
    /// Thinking, as its deltas.
    Thinking(Vec<String>),
    /// Text, as its deltas.
    Text(Vec<String>),
    ToolCall {
        id: String,
        name: String,
        input: Value,
    },
    /// A server-side tool's result (run inline, or after permission).
    ToolResult { id: String, content: String },
}

/// A call a turn left for the client to answer.
#[derive(Debug, Clone)]
pub struct PendingCall {
    pub id: String,
    pub name: String,
    pub input: Value,
    pub kind: ToolKind,
}

/// What one turn does.
#[derive(Debug, Clone)]
pub struct Plan {
    pub outputs: Vec<Output>,
    pub pending: Vec<PendingCall>,
    pub stop: StopReason,
    /// The continuation's script, once the pending calls are answered.
    pub then: Option<Script>,
}

/// The script of a user message's text, or `None` for an unscripted (echoed) message.
pub fn parse_user_text(text: &str) -> Result<Option<Script>, String> {
    let Some(json) = text.strip_prefix(SCRIPT_PREFIX) else {
        return Ok(None);
    };
    serde_json::from_str(json.trim())
        .map(Some)
        .map_err(|error| format!("invalid {SCRIPT_PREFIX} script: {error}"))
}

/// The unscripted answer: `echo: ` and the user text, ending the turn.
pub fn echo_plan(user_text: &str) -> Plan {
    text_plan(&format!("echo: {user_text}"))
}

/// A turn that says `text` and ends.
pub fn text_plan(text: &str) -> Plan {
    Plan {
        outputs: vec![Output::Text(split_after_spaces(text))],
        pending: Vec::new(),
        stop: StopReason::EndTurn,
        then: None,
    }
}

/// The plan of `script` as turn number `turn` of a session configured by `settings`.
pub fn plan(
    script: &Script,
    settings: &Settings,
    turn: u32,
    faults: &AapFaultSet,
) -> Result<Plan, String> {
    if script.stop == Some(StopReason::ToolUse) {
        return Err(
            "a script cannot ask for stop \"tool_use\": it follows from pending calls".into(),
        );
    }
    let mut outputs = Vec::new();
    let mut pending = Vec::new();
    let mut ids: Vec<String> = Vec::new();
    let mut ran_inline = false;
    for step in &script.steps {
        match step {
            Step::Thinking(pieces) => outputs.push(Output::Thinking(pieces.pieces())),
            Step::Text(pieces) => outputs.push(Output::Text(pieces.pieces())),
            Step::ToolCall(call) => {
                let id = call
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{turn}_{}", ids.len() + 1));
                if ids.contains(&id) {
                    return Err(format!("the script uses tool call ID {id:?} twice"));
                }
                ids.push(id.clone());
                let kind = settings.tool_kind(&call.name).ok_or_else(|| {
                    format!(
                        "the script calls {:?}, neither a client tool of this session nor an enabled server tool",
                        call.name
                    )
                })?;
                let input = Value::Object(call.input.clone());
                outputs.push(Output::ToolCall {
                    id: id.clone(),
                    name: call.name.clone(),
                    input: input.clone(),
                });
                let inline = match kind {
                    ToolKind::Server { trusted } => {
                        trusted || faults.contains(AapFault::UntrustedRunsInline)
                    }
                    ToolKind::Client => false,
                };
                if inline {
                    ran_inline = true;
                    if !faults.contains(AapFault::TrustedResultMissing) {
                        let content = run_server_tool(&call.name, &input);
                        outputs.push(Output::ToolResult { id, content });
                    }
                } else {
                    pending.push(PendingCall {
                        id,
                        name: call.name.clone(),
                        input,
                        kind,
                    });
                }
            }
        }
    }
    let scripted = match script.stop.unwrap_or(StopReason::EndTurn) {
        StopReason::Refusal if faults.contains(AapFault::RefusalAsEndTurn) => StopReason::EndTurn,
        stop => stop,
    };
    let stop = if ran_inline && pending.is_empty() && faults.contains(AapFault::TrustedStopsToolUse)
    {
        StopReason::ToolUse
    } else if pending.is_empty()
        || (faults.contains(AapFault::ClientCallEndsTurn)
            && pending.iter().all(|call| call.kind == ToolKind::Client))
    {
        scripted
    } else {
        StopReason::ToolUse
    };
    Ok(Plan {
        outputs,
        pending,
        stop,
        then: script.then.as_deref().cloned(),
    })
}

/// What a server-side tool returns: its name and its input, so results are predictable.
pub fn run_server_tool(name: &str, input: &Value) -> String {
    format!("{name} ran with {input}")
}

/// `text` cut after every space (`"a b"` → `"a "`, `"b"`); an empty text is one empty piece.
pub fn split_after_spaces(text: &str) -> Vec<String> {
    let mut pieces: Vec<String> = text.split_inclusive(' ').map(str::to_owned).collect();
    if pieces.is_empty() {
        pieces.push(String::new());
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_after_spaces_and_concatenates_back() {
        assert_eq!(
            split_after_spaces("echo: hi there"),
            ["echo: ", "hi ", "there"]
        );
        assert_eq!(split_after_spaces(""), [""]);
        assert_eq!(split_after_spaces("a  b "), ["a ", " ", "b "]);
    }

    #[test]
    fn scripts_parse_and_refuse_typos() {
        let script =
            parse_user_text(r#"ahpspec-script: {"steps":[{"text":["a","b"]}],"stop":"refusal"}"#)
                .expect("valid")
                .expect("scripted");
        let none = AapFaultSet::default();
        let plan = plan(&script, &Settings::default(), 1, &none).expect("no tools");
        assert_eq!(plan.outputs, [Output::Text(vec!["a".into(), "b".into()])]);
        assert_eq!(plan.stop, StopReason::Refusal);
        assert!(parse_user_text("hello").expect("plain").is_none());
        assert!(parse_user_text(r#"ahpspec-script: {"step":[]}"#).is_err());
        assert!(parse_user_text(r#"ahpspec-script: {"steps":[{"txt":"a"}]}"#).is_err());
        let unknown_tool =
            parse_user_text(r#"ahpspec-script: {"steps":[{"tool_call":{"name":"x"}}]}"#)
                .expect("valid")
                .expect("scripted");
        assert!(super::plan(&unknown_tool, &Settings::default(), 1, &none).is_err());
    }
}
