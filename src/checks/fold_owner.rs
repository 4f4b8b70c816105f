//! Which rule a difference between a chat's fold and its fresh snapshot breaks. Such a
//! difference is INV-FOLD-1's (the host's state is not the fold of what it announced),
//! unless every difference lies in one member whose value a single rule fixes and the fold
//! holds the value that rule asks for: the reducers computed it from actions the host
//! accepted, and the host changed it behind their back. That rule is the one broken.

use serde_json::Value;

use super::{Rule, Violation};

/// The chat activity bit Error (`ChatStatus`).
const ERROR_BIT: u64 = 2;

/// Where the differences between two states lie: the deepest member holding all of them,
/// and its value on each side (`None`: absent).
#[derive(Debug)]
struct Difference<'a> {
    path: String,
    folded: Option<&'a Value>,
    fresh: Option<&'a Value>,
}

/// The deepest member of `folded` and `fresh` (both under `path`) under which they differ.
fn lowest<'a>(folded: &'a Value, fresh: &'a Value, path: String) -> Option<Difference<'a>> {
    if folded == fresh {
        return None;
    }
    let here = |path| Difference {
        path,
        folded: Some(folded),
        fresh: Some(fresh),
    };
    match (folded, fresh) {
        (Value::Object(a), Value::Object(b)) => {
            let mut differing = a
                .keys()
                .chain(b.keys().filter(|key| !a.contains_key(*key)))
                .filter(|key| a.get(*key) != b.get(*key));
            let (Some(key), None) = (differing.next(), differing.next()) else {
                return Some(here(path));
            };
            let path = format!("{path}/{key}");
            match (a.get(key), b.get(key)) {
                (Some(x), Some(y)) => lowest(x, y, path),
                (x, y) => Some(Difference {
                    path,
                    folded: x,
                    fresh: y,
                }),
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            let mut differing = a.iter().zip(b).enumerate().filter(|(_, (x, y))| x != y);
            match (differing.next(), differing.next()) {
                (Some((index, (x, y))), None) => lowest(x, y, format!("{path}/{index}")),
                _ => Some(here(path)),
            }
        }
        _ => Some(here(path)),
    }
}

/// The violation of the rule that owns every difference between the comparable fold and
/// fresh snapshot of chat `channel`, when one does (see the module's note).
pub fn owner(channel: &str, folded: &Value, fresh: &Value) -> Option<Violation> {
    let difference = lowest(folded, fresh, String::new())?;
    let path = difference.path.as_str();
    let shown =
        |value: Option<&Value>| value.map_or_else(|| "nothing".to_owned(), Value::to_string);
    let actual = format!(
        "a fresh snapshot with {} at {path} (the fold has {}), and no action that changed it",
        shown(difference.fresh),
        shown(difference.folded)
    );
    let (rule, expected) = if path == "/status" {
        status_owner(channel, &difference)?
    } else if path.ends_with("/toolCall/reason") {
        reason_owner(difference.folded?.as_str()?)?
    } else if let Some(at) = path.find("/request/answers") {
        let part = folded.pointer(&path[..at])?;
        answers_owner(part)
    } else {
        return None;
    };
    Some(Violation::new(rule, expected, actual))
}

/// STATUS-004 when the fold has the Error bit the snapshot lost: the reducers keep it from
/// chat/error until a turn starts, resumes or a truncation.
fn status_owner(channel: &str, difference: &Difference<'_>) -> Option<(Rule, String)> {
    let (was, now) = (difference.folded?.as_u64()?, difference.fresh?.as_u64()?);
    (was & ERROR_BIT != 0 && now & ERROR_BIT == 0).then(|| {
        (
            Rule::Status004,
            format!("{channel} keeps the Error status bit after chat/error until a turn starts, resumes or a truncation (the fold of its actions has status {was})"),
        )
    })
}

/// The rule of the reason a tool call's cancellation has in the fold: the reducers set it
/// from the accepted denial (TOOL-003), result denial (TOOL-006) or turn end (TOOL-007).
fn reason_owner(folded: &str) -> Option<(Rule, String)> {
    let (rule, by) = match folded {
        "denied" => (Rule::Tool003, "a denied chat/toolCallConfirmed"),
        "result-denied" => (Rule::Tool006, "a denied chat/toolCallResultConfirmed"),
        "skipped" => (Rule::Tool007, "the end of its turn"),
        _ => return None,
    };
    Some((
        rule,
        format!("a tool call cancelled by {by} has reason \"{folded}\" (as the fold has it)"),
    ))
}

/// The rule of an input request's answers: final once the part is resolved (INPUT-004),
/// the merged drafts of every client before (INPUT-003).
fn answers_owner(part: &Value) -> (Rule, String) {
    if part.get("response").is_some_and(|r| !r.is_null()) {
        (
            Rule::Input004,
            "chat/inputCompleted resolves the part with its final answers (as the fold has them)"
                .to_owned(),
        )
    } else {
        (
            Rule::Input003,
            "an open input request holds every client's answer drafts, merged (as the fold has them)"
                .to_owned(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(folded: &Value, fresh: &Value) -> Option<Rule> {
        owner("ahp-chat:/c", folded, fresh).map(|v| v.rule)
    }

    fn chat_with_call(reason: &str, text: &str) -> Value {
        json!({ "status": 1, "turns": [{ "id": "t1", "responseParts": [
            { "kind": "markdown", "content": text },
            { "kind": "toolCall", "toolCall": { "toolCallId": "tc", "status": "cancelled", "reason": reason } }
        ] }] })
    }

    #[test]
    fn a_cancellation_reason_changed_alone_is_the_rule_that_set_it() {
        let skipped = chat_with_call("skipped", "a");
        assert_eq!(
            rule(&chat_with_call("denied", "a"), &skipped),
            Some(Rule::Tool003)
        );
        assert_eq!(
            rule(
                &chat_with_call("result-denied", "a"),
                &chat_with_call("denied", "a")
            ),
            Some(Rule::Tool006)
        );
        assert_eq!(
            rule(&skipped, &chat_with_call("denied", "a")),
            Some(Rule::Tool007)
        );
        // Another difference besides: the fold comparison's.
        assert_eq!(
            rule(
                &chat_with_call("denied", "a"),
                &chat_with_call("skipped", "b")
            ),
            None
        );
    }

    fn chat_with_input(response: Option<&str>, answers: Option<Value>) -> Value {
        let mut part = json!({ "kind": "inputRequest", "request": { "id": "r", "questions": [] } });
        if let Some(response) = response {
            part["response"] = json!(response);
        }
        if let Some(answers) = answers {
            part["request"]["answers"] = answers;
        }
        json!({ "status": 1, "activeTurn": { "id": "t1", "responseParts": [part] } })
    }

    #[test]
    fn answers_lost_alone_are_the_input_rule_of_the_parts_state() {
        let answers = json!({ "q1": { "state": "submitted" }, "q2": { "state": "draft" } });
        let resolved = chat_with_input(Some("accept"), Some(answers.clone()));
        assert_eq!(
            rule(&resolved, &chat_with_input(Some("accept"), None)),
            Some(Rule::Input004)
        );
        let open = chat_with_input(None, Some(answers));
        let one_lost = chat_with_input(None, Some(json!({ "q2": { "state": "draft" } })));
        assert_eq!(rule(&open, &one_lost), Some(Rule::Input003));
        // The response differs too: the differences lie in the part, no rule's alone.
        assert_eq!(rule(&resolved, &chat_with_input(None, None)), None);
    }
}
