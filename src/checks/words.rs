//! Whose words a host frame carries. A host frame may repeat what the client said: the
//! answer to a request, the echo of a dispatch (its action and, when it comes there, the
//! channel the client dispatched to), a URI the client spelled. What repeats a message the
//! client sent invalid is judged by the rule that message tests, once (the case that sent it
//! deliberately; behind a proxy, the client's problem), never again by an always-on rule; a
//! spelling the client chose is the client's. What the host adds of its own (an envelope's
//! `serverSeq` and origin, the form of a response) stays the host's and is judged.

use super::{FastMap, FastSet};
use crate::tape::{Node, Scanned};

/// Why an always-on rule left the content of an answer unjudged.
pub const ANSWERS_INVALID: &str =
    "it answers a request sent invalid (judged by the rule that request tests)";
/// Why TRANSPORT-003 did not judge a request left unanswered.
pub const ASKED_INVALID: &str =
    "the request was sent invalid (whether it is answered is the rule it tests' matter)";
/// Why an always-on rule left an echoed action unjudged.
pub const ECHOES_INVALID: &str =
    "it echoes an action dispatched invalid (judged by the rule that dispatch tests)";
/// Why ENV-004 did not judge an envelope whose channel is not its action's kind.
pub const CLIENT_CHANNEL: &str =
    "the client chose the channel (the one it dispatched to, or a URI it spelled itself)";

/// URI prefixes of the channel names before 1.0.0 (SUB-012).
pub const LEGACY_PREFIXES: &[&str] = &["agenthost:", "copilot:"];

/// Whether `text` starts like a URI of a pre-1.0.0 scheme.
pub fn is_legacy(text: &str) -> bool {
    // First bytes before prefixes: this looks at every string of every frame.
    matches!(text.as_bytes().first(), Some(b'a' | b'c'))
        && LEGACY_PREFIXES.iter().any(|p| text.starts_with(p))
}

/// Whose content a host frame carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Says {
    /// The host's own.
    Host,
    /// The answer to a request the client sent invalid.
    AnswerToInvalid,
    /// The echo of one of the client's dispatches (an envelope whose origin names it):
    /// `invalid` when the dispatch was sent invalid, `same_channel` when the echo comes on
    /// the channel the client dispatched to.
    Echo { invalid: bool, same_channel: bool },
}

impl Says {
    /// Whether the frame echoes an action the client dispatched invalid.
    pub fn echoes_invalid(self) -> bool {
        matches!(self, Says::Echo { invalid: true, .. })
    }
}

/// One dispatch the client sent.
#[derive(Debug, Clone)]
struct Dispatch {
    channel: String,
    invalid: bool,
}

/// What the client said on one connection that the host's frames may repeat.
#[derive(Debug, Default, Clone)]
pub struct ClientWords {
    /// clientSeq → the dispatch it numbered.
    dispatches: FastMap<i64, Dispatch>,
    /// Strings the client sent that are no 1.0.0 URI: legacy URIs anywhere in its frames,
    /// and channels it named in another scheme than `ahp-…`.
    spellings: FastSet<String>,
    /// Dispatches sent invalid on other connections of the same runner, (clientId,
    /// clientSeq) → channel: their echoes, broadcast here too, carry the runner's words.
    heard: FastMap<(String, i64), String>,
}

impl ClientWords {
    /// Takes in a frame the client sent; `invalid` when it was sent invalid (deliberately,
    /// or found so by the schemas).
    pub fn said(&mut self, message: Node<'_>, invalid: bool) {
        let params = message.member("params");
        if message.member("method").as_str() == Some("dispatchAction") {
            if let (Some(seq), Some(channel)) = (
                params.member("clientSeq").as_i64(),
                params.member("channel").as_str(),
            ) {
                let dispatch = Dispatch {
                    channel: channel.to_owned(),
                    invalid,
                };
                self.dispatches.insert(seq, dispatch);
            }
        }
        for item in message.scan("channel") {
            let spelled = match item {
                Scanned::String { text, .. } if is_legacy(text) => text,
                Scanned::Member { value } => match value.as_str() {
                    Some(channel) if !channel.starts_with("ahp-") && !channel.is_empty() => channel,
                    _ => continue,
                },
                _ => continue,
            };
            if !self.spellings.contains(spelled) {
                self.spellings.insert(spelled.to_owned());
            }
        }
        for list in ["initialSubscriptions", "subscriptions"] {
            for channel in params.member(list).elements().filter_map(|c| c.as_str()) {
                if !channel.starts_with("ahp-") && !self.spellings.contains(channel) {
                    self.spellings.insert(channel.to_owned());
                }
            }
        }
    }

    /// The channel of this connection's dispatch `seq`, when it was sent invalid.
    pub fn sent_invalid(&self, seq: i64) -> Option<&str> {
        self.dispatches
            .get(&seq)
            .filter(|d| d.invalid)
            .map(|d| d.channel.as_str())
    }

    /// Learns that another connection of the same runner, `client_id`, sent its dispatch
    /// `seq` to `channel` invalid: its echo here is judged by the rule that dispatch tests.
    pub fn heard_invalid(&mut self, client_id: &str, seq: i64, channel: &str) {
        self.heard
            .insert((client_id.to_owned(), seq), channel.to_owned());
    }

    /// Whether the client itself spelled `text` (a legacy URI, or a channel outside the
    /// 1.0.0 schemes).
    pub fn spelled(&self, text: &str) -> bool {
        self.spellings.contains(text)
    }

    /// Whose content an `action` envelope carries: an echo when its origin names
    /// `client_id` and a clientSeq the client dispatched, or another connection's dispatch
    /// sent invalid that this one heard of.
    pub fn envelope(&self, envelope: Node<'_>, client_id: &str) -> Says {
        let origin = envelope.member("origin");
        let from = origin.member("clientId").as_str();
        if client_id.is_empty() || from != Some(client_id) {
            return self.heard_of(envelope, from);
        }
        let Some(dispatch) = origin
            .member("clientSeq")
            .as_i64()
            .and_then(|seq| self.dispatches.get(&seq))
        else {
            return Says::Host;
        };
        Says::Echo {
            invalid: dispatch.invalid,
            same_channel: envelope.member("channel").as_str() == Some(dispatch.channel.as_str()),
        }
    }

    /// An envelope naming another client: the echo of a dispatch sent invalid that this
    /// connection heard of, or the host's own.
    fn heard_of(&self, envelope: Node<'_>, from: Option<&str>) -> Says {
        if self.heard.is_empty() {
            return Says::Host;
        }
        let (Some(from), Some(seq)) =
            (from, envelope.member("origin").member("clientSeq").as_i64())
        else {
            return Says::Host;
        };
        match self.heard.get(&(from.to_owned(), seq)) {
            Some(channel) => Says::Echo {
                invalid: true,
                same_channel: envelope.member("channel").as_str() == Some(channel.as_str()),
            },
            None => Says::Host,
        }
    }

    /// Carries on what the client said on the connection `old` (a reconnect resumes it).
    pub fn resume_from(&mut self, old: &ClientWords) {
        self.clone_from(old);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tape::Tape;

    fn said(words: &mut ClientWords, text: &str, invalid: bool) {
        let mut tape = Tape::default();
        words.said(tape.parse(text).expect("JSON"), invalid);
    }

    fn says(words: &ClientWords, envelope: &str) -> Says {
        let mut tape = Tape::default();
        words.envelope(tape.parse(envelope).expect("JSON"), "me")
    }

    #[test]
    fn an_echo_is_told_from_host_actions_and_knows_its_dispatch() {
        let mut words = ClientWords::default();
        said(
            &mut words,
            r#"{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-session:/s","clientSeq":1,"action":{"type":"session/titleChanged","title":1}}}"#,
            true,
        );
        said(
            &mut words,
            r#"{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-session:/s","clientSeq":2,"action":{"type":"session/titleChanged","title":"t"}}}"#,
            false,
        );
        let echo = |seq: i64, channel: &str, client: &str| {
            format!(
                r#"{{"channel":"{channel}","serverSeq":4,"origin":{{"clientId":"{client}","clientSeq":{seq}}},"action":{{}}}}"#
            )
        };
        assert_eq!(
            says(&words, &echo(1, "ahp-session:/s", "me")),
            Says::Echo {
                invalid: true,
                same_channel: true
            }
        );
        assert_eq!(
            says(&words, &echo(2, "ahp-chat:/c", "me")),
            Says::Echo {
                invalid: false,
                same_channel: false
            }
        );
        assert_eq!(
            says(&words, &echo(1, "ahp-session:/s", "other")),
            Says::Host
        );
        assert_eq!(says(&words, &echo(9, "ahp-session:/s", "me")), Says::Host);
        assert_eq!(
            says(
                &words,
                r#"{"channel":"ahp-session:/s","serverSeq":4,"action":{}}"#
            ),
            Says::Host
        );
    }

    #[test]
    fn spellings_are_the_clients_legacy_uris_and_foreign_channels() {
        let mut words = ClientWords::default();
        said(
            &mut words,
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"channel":"ahp-root://","clientId":"me","protocolVersions":["1.0.0"],"initialSubscriptions":["ahp-root://","copilot:/s1"]}}"#,
            false,
        );
        said(
            &mut words,
            r#"{"jsonrpc":"2.0","id":2,"method":"createSession","params":{"channel":"x-session:/2","workingDirectories":["agenthost:/w"]}}"#,
            false,
        );
        for spelled in ["copilot:/s1", "x-session:/2", "agenthost:/w"] {
            assert!(words.spelled(spelled), "{spelled}");
        }
        for not_spelled in ["ahp-root://", "agenthost:/root", "ahp-session:/2"] {
            assert!(!words.spelled(not_spelled), "{not_spelled}");
        }
    }

    #[test]
    fn an_invalid_dispatch_heard_of_from_another_connection_is_the_runners_words() {
        let mut words = ClientWords::default();
        said(
            &mut words,
            r#"{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-session:/s","clientSeq":1,"action":{"type":"session/titleChanged","title":1}}}"#,
            true,
        );
        assert_eq!(words.sent_invalid(1), Some("ahp-session:/s"));
        assert_eq!(words.sent_invalid(2), None);
        let mut sibling = ClientWords::default();
        let echo = r#"{"channel":"ahp-session:/s","serverSeq":4,"origin":{"clientId":"other","clientSeq":1},"action":{}}"#;
        assert_eq!(says(&sibling, echo), Says::Host);
        sibling.heard_invalid("other", 1, "ahp-session:/s");
        assert_eq!(
            says(&sibling, echo),
            Says::Echo {
                invalid: true,
                same_channel: true
            }
        );
        // Another clientSeq of that client, or another client, stays the host's.
        assert_eq!(
            says(
                &sibling,
                &echo.replace("\"clientSeq\":1", "\"clientSeq\":2")
            ),
            Says::Host
        );
        assert_eq!(says(&sibling, &echo.replace("other", "third")), Says::Host);
    }
}
