//! Whose words a host frame carries. A host frame may repeat what the client said: the
//! answer to a request, the echo of a dispatch (its action and, when it comes there, the
//! channel the client dispatched to), a URI the client spelled. What repeats a message the
//! client sent invalid is judged by the rule that message tests, once (the case that sent it
//! deliberately; behind a proxy, the client's problem), never again by an always-on rule; a
//! spelling the client chose is the client's. What the host adds of its own (an envelope's
//! `serverSeq` and origin, the form of a response) stays the host's and is judged.

use std::sync::{Arc, Mutex, PoisonError};

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

/// The dispatches that the connections of one runner (a case, a fuzzer's sequence, a
/// proxy, a capture's check) sent invalid, shared by all of them: clientId → clientSeq →
/// channel. The host broadcasts an accepted action to every subscriber, so the copy another
/// connection gets of one of them carries the runner's words as much as the sender's echo
/// does. Clones share one registry.
#[derive(Debug, Default, Clone)]
pub struct InvalidDispatches(Arc<Mutex<FastMap<String, FastMap<i64, String>>>>);

impl InvalidDispatches {
    /// Notes that client `client_id` sent its dispatch `seq` to `channel` invalid.
    pub fn record(&self, client_id: &str, seq: i64, channel: &str) {
        // A poisoned lock only means another connection's thread panicked mid-insert; the
        // map is still whole.
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(client_id.to_owned())
            .or_default()
            .insert(seq, channel.to_owned());
    }

    /// Whether client `client_id`'s dispatch `seq` was sent invalid; if so, whether it was
    /// sent to `channel`.
    fn sent_to(&self, client_id: &str, seq: i64, channel: Option<&str>) -> Option<bool> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let sent = map.get(client_id)?.get(&seq)?;
        Some(channel == Some(sent.as_str()))
    }
}

/// Every dispatch each client of one observed traffic (a proxy's clients, a capture's
/// connections) sent, on any of its connections: clientId → clientSeq → action. A client
/// that reconnects gets the echo of a dispatch it sent on its earlier connection whenever
/// the echo had not reached it before it left (the replay carries it), and a connection of
/// the harness's own carries its dispatches over (`StreamChecks::resuming`); an observed
/// one has only this to look them up in. Clones share one registry.
#[derive(Debug, Default, Clone)]
pub struct EarlierDispatches(Arc<Mutex<FastMap<String, FastMap<i64, serde_json::Value>>>>);

impl EarlierDispatches {
    /// Notes that client `client_id` dispatched `action` as `seq`.
    pub fn record(&self, client_id: &str, seq: i64, action: serde_json::Value) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.entry(client_id.to_owned())
            .or_default()
            .insert(seq, action);
    }

    /// The action client `client_id` dispatched as `seq` on any of its connections.
    pub fn get(&self, client_id: &str, seq: i64) -> Option<serde_json::Value> {
        let map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        map.get(client_id)?.get(&seq).cloned()
    }
}

/// What the client said on one connection that the host's frames may repeat.
#[derive(Debug, Default, Clone)]
pub struct ClientWords {
    /// clientSeq → the dispatch it numbered.
    dispatches: FastMap<i64, Dispatch>,
    /// Strings the client sent that are no 1.0.0 URI: legacy URIs anywhere in its frames,
    /// and channels it named in another scheme than `ahp-…`.
    spellings: FastSet<String>,
    /// The invalid dispatches of every connection of the same runner, this one's among
    /// them: their echoes, broadcast here too, carry the runner's words.
    runner: InvalidDispatches,
}

impl ClientWords {
    /// Takes in a frame client `client_id` sent; `invalid` when it was sent invalid
    /// (deliberately, or found so by the schemas).
    pub fn said(&mut self, message: Node<'_>, invalid: bool, client_id: &str) {
        let params = message.member("params");
        if message.member("method").as_str() == Some("dispatchAction") {
            if let (Some(seq), Some(channel)) = (
                params.member("clientSeq").as_i64(),
                params.member("channel").as_str(),
            ) {
                if invalid && !client_id.is_empty() {
                    self.runner.record(client_id, seq, channel);
                }
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

    /// Shares `runner`'s registry of invalid dispatches with the other connections of the
    /// same runner, from now on (before the connection sends anything).
    pub fn share(&mut self, runner: &InvalidDispatches) {
        self.runner = runner.clone();
    }

    /// The registry of invalid dispatches this connection shares.
    pub fn runner(&self) -> &InvalidDispatches {
        &self.runner
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

    /// An envelope naming another client: the echo of a dispatch another connection of
    /// the same runner sent invalid, or the host's own.
    fn heard_of(&self, envelope: Node<'_>, from: Option<&str>) -> Says {
        let (Some(from), Some(seq)) =
            (from, envelope.member("origin").member("clientSeq").as_i64())
        else {
            return Says::Host;
        };
        let channel = envelope.member("channel").as_str();
        match self.runner.sent_to(from, seq, channel) {
            Some(same_channel) => Says::Echo {
                invalid: true,
                same_channel,
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
        words.said(tape.parse(text).expect("JSON"), invalid, "me");
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
    fn an_invalid_dispatch_of_another_connection_of_the_runner_is_the_runners_words() {
        let runner = InvalidDispatches::default();
        let mut sender = ClientWords::default();
        sender.share(&runner);
        let mut sibling = ClientWords::default();
        let echo = r#"{"channel":"ahp-session:/s","serverSeq":4,"origin":{"clientId":"me","clientSeq":1},"action":{}}"#;
        let mut tape = Tape::default();
        let sibling_says = |words: &ClientWords, text: &str| {
            words.envelope(Tape::default().parse(text).expect("JSON"), "other")
        };
        sibling.share(&runner);
        assert_eq!(sibling_says(&sibling, echo), Says::Host);
        sender.said(
            tape.parse(r#"{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-session:/s","clientSeq":1,"action":{"type":"session/titleChanged","title":1}}}"#).expect("JSON"),
            true,
            "me",
        );
        assert_eq!(
            sibling_says(&sibling, echo),
            Says::Echo {
                invalid: true,
                same_channel: true
            }
        );
        assert_eq!(
            sibling_says(&sibling, &echo.replace("ahp-session:/s", "ahp-chat:/c")),
            Says::Echo {
                invalid: true,
                same_channel: false
            }
        );
        // Another clientSeq of that client, or another client, stays the host's; so does
        // the echo on a connection of another runner.
        assert_eq!(
            sibling_says(
                &sibling,
                &echo.replace("\"clientSeq\":1", "\"clientSeq\":2")
            ),
            Says::Host
        );
        assert_eq!(
            sibling_says(&sibling, &echo.replace("\"me\"", "\"third\"")),
            Says::Host
        );
        assert_eq!(sibling_says(&ClientWords::default(), echo), Says::Host);
        // A valid dispatch is not recorded, nor one of a connection whose client is not
        // known yet.
        sender.said(
            tape.parse(r#"{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-session:/s","clientSeq":2,"action":{"type":"session/titleChanged","title":"t"}}}"#).expect("JSON"),
            false,
            "me",
        );
        sender.said(
            tape.parse(r#"{"jsonrpc":"2.0","method":"dispatchAction","params":{"channel":"ahp-session:/s","clientSeq":3,"action":{}}}"#).expect("JSON"),
            true,
            "",
        );
        for seq in [2, 3] {
            let other = echo.replace("\"clientSeq\":1", &format!("\"clientSeq\":{seq}"));
            assert_eq!(sibling_says(&sibling, &other), Says::Host, "{seq}");
        }
    }
}
