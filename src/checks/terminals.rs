//! The always-on terminal rules over one connection's frames: TERM-002 (no shell
//! integration in `terminal/data`) on every accepted action, INV-TERM-1 (the lifecycle only
//! goes from running to exited, complete command parts stay complete) on every terminal
//! snapshot and every accepted terminal action, per channel as this connection saw it.

use std::collections::BTreeSet;

use serde_json::Value;

use super::{FastMap, Rule, Violation};
use crate::tape::Node;

/// What one connection saw of one terminal.
#[derive(Debug, Default, Clone)]
struct Seen {
    exited: bool,
    /// Ids of the command parts seen complete.
    complete: BTreeSet<String>,
}

/// The terminals one connection follows.
#[derive(Debug, Default, Clone)]
pub struct Terminals {
    seen: FastMap<String, Seen>,
    /// terminal/data actions scanned (TERM-002).
    pub data_checked: usize,
    /// Terminal states and terminal lifecycle actions judged (INV-TERM-1).
    pub states_checked: usize,
}

/// Whether `data` holds an OSC 633 (VS Code) or OSC 133 (FinalTerm) sequence.
pub fn has_shell_integration(data: &str) -> bool {
    data.contains("\u{1b}]633;") || data.contains("\u{1b}]133;")
}

/// Whether a snapshot's state is a terminal's: by its URI, or by its shape.
pub fn is_terminal(resource: &str, state: &Value) -> bool {
    resource.starts_with("ahp-terminal:")
        || (state.get("content").is_some_and(Value::is_array)
            && state.get("lifecycle").is_some_and(Value::is_object)
            && state.get("claim").is_some())
}

impl Terminals {
    /// INV-TERM-1 on a terminal snapshot.
    pub fn snapshot(&mut self, resource: &str, state: &Value, found: &mut Vec<Violation>) {
        self.states_checked += 1;
        let seen = self.seen.entry(resource.to_owned()).or_default();
        let status = state["lifecycle"]["status"].as_str().unwrap_or_default();
        match status {
            "running" if seen.exited => found.push(Violation::new(
                Rule::InvTerm1,
                format!("{resource} stays exited once seen exited"),
                "a snapshot with lifecycle.status running",
            )),
            "running" => {}
            "exited" => seen.exited = true,
            other => found.push(Violation::new(
                Rule::InvTerm1,
                format!("{resource}: lifecycle.status running or exited"),
                format!("{other:?}"),
            )),
        }
        for part in state["content"].as_array().into_iter().flatten() {
            let Some(id) = part["commandId"]
                .as_str()
                .filter(|_| part["type"] == "command")
            else {
                continue;
            };
            if part["isComplete"] == true {
                seen.complete.insert(id.to_owned());
            } else if seen.complete.contains(id) {
                found.push(Violation::new(
                    Rule::InvTerm1,
                    format!("command {id} of {resource} stays complete"),
                    "a snapshot showing it with isComplete false",
                ));
            }
        }
    }

    /// TERM-002 and INV-TERM-1 on one accepted action envelope.
    pub fn action(&mut self, envelope: Node<'_>, found: &mut Vec<Violation>) {
        let action = envelope.member("action");
        let Some(kind) = action
            .member("type")
            .as_str()
            .filter(|k| k.starts_with("terminal/"))
        else {
            return;
        };
        let channel = envelope.member("channel").as_str().unwrap_or_default();
        match kind {
            "terminal/data" => {
                self.data_checked += 1;
                let data = action.member("data").as_str().unwrap_or_default();
                if has_shell_integration(data) {
                    found.push(Violation::new(
                        Rule::Term002,
                        "terminal/data without OSC 633 / OSC 133 sequences",
                        super::frame::clip(&format!("{data:?}")),
                    ));
                }
            }
            "terminal/exited" => {
                self.states_checked += 1;
                self.seen.entry(channel.to_owned()).or_default().exited = true;
            }
            "terminal/commandFinished" => {
                self.states_checked += 1;
                if let Some(id) = action.member("commandId").as_str() {
                    let seen = self.seen.entry(channel.to_owned()).or_default();
                    seen.complete.insert(id.to_owned());
                }
            }
            "terminal/commandExecuted" => {
                self.states_checked += 1;
                let id = action.member("commandId").as_str().unwrap_or_default();
                let reopens = self
                    .seen
                    .get(channel)
                    .is_some_and(|seen| seen.complete.contains(id));
                if reopens {
                    found.push(Violation::new(
                        Rule::InvTerm1,
                        format!("command {id} of {channel} stays complete"),
                        "terminal/commandExecuted opening it again",
                    ));
                }
            }
            _ => {}
        }
    }

    pub fn forget(&mut self, channel: &str) {
        self.seen.remove(channel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_exited_terminal_shown_running_again_breaks_the_lifecycle() {
        let mut terminals = Terminals::default();
        let mut found = Vec::new();
        let exited = json!({ "content": [], "claim": {}, "lifecycle": { "status": "exited" } });
        let running = json!({ "content": [], "claim": {}, "lifecycle": { "status": "running" } });
        terminals.snapshot("ahp-terminal:/t", &running, &mut found);
        terminals.snapshot("ahp-terminal:/t", &exited, &mut found);
        assert!(found.is_empty());
        terminals.snapshot("ahp-terminal:/t", &running, &mut found);
        assert_eq!(found.len(), 1);
        assert!(is_terminal("x:/t", &exited));
    }

    #[test]
    fn complete_commands_never_reopen() {
        let mut terminals = Terminals::default();
        let mut found = Vec::new();
        let part = |complete| {
            json!({ "content": [{ "type": "command", "commandId": "c1", "commandLine": "ls",
                    "output": "", "timestamp": 1, "isComplete": complete }],
                    "claim": {}, "lifecycle": { "status": "running" } })
        };
        terminals.snapshot("ahp-terminal:/t", &part(true), &mut found);
        terminals.snapshot("ahp-terminal:/t", &part(false), &mut found);
        assert_eq!(found.len(), 1);
        assert!(has_shell_integration("a\u{1b}]633;C\u{7}"));
        assert!(!has_shell_integration("\u{1b}]0;title\u{7}"));
    }
}
