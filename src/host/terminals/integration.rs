//! Shell integration: the OSC 633 (VS Code) and OSC 133 (FinalTerm) sequences a shell
//! prints around its prompt and commands, read out of a terminal's output stream. The host
//! strips them from `terminal/data` (TERM-002) and turns them into the terminal channel's
//! command actions; a window title (OSC 0 / OSC 2) stays in the data, as any VT sequence
//! does, and is reported as a title change too.

/// Longest OSC sequence kept while waiting for its terminator; a longer one is passed on as
/// data (it cannot be one the host understands).
const LONGEST_SEQUENCE: usize = 4096;

/// What the output stream said, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// Output for `terminal/data`.
    Data(String),
    /// The first shell-integration sequence: command detection works from now on.
    IntegrationSeen,
    /// The command line of the command about to run (633;E).
    CommandLine(String),
    /// A command started executing (633;C / 133;C).
    CommandStarted,
    /// The running command finished, with its exit code when the shell gave one.
    CommandFinished(Option<i64>),
    /// The shell's working directory (633;P;Cwd=…).
    Cwd(String),
    /// The process set its window title (OSC 0 / OSC 2).
    Title(String),
}

/// What the scanner does with a shell-integration sequence it reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stripping {
    /// Takes it out of the data whole (TERM-002).
    Whole,
    /// Passes it on as data (the fault that leaks them).
    Nothing,
    /// Takes out all but its body's last character and its terminator (the fault that
    /// leaves a remnant).
    AllButTail,
}

/// A streaming reader of a terminal's output: feed it chunks as they come.
#[derive(Debug, Default)]
pub struct Scanner {
    /// The start of an OSC sequence whose terminator has not arrived yet.
    pending: String,
    seen_integration: bool,
}

impl Scanner {
    /// The events of `chunk` (after what earlier chunks left pending), its shell-integration
    /// sequences taken out of the data as `stripping` says.
    pub fn feed(&mut self, chunk: &str, stripping: Stripping) -> Vec<Event> {
        let mut text = std::mem::take(&mut self.pending);
        text.push_str(chunk);
        let mut events = Vec::new();
        let mut data = String::new();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("\u{1b}]") {
            data.push_str(&rest[..at]);
            let sequence = &rest[at..];
            let Some((body, len)) = osc_body(sequence) else {
                if sequence.len() > LONGEST_SEQUENCE {
                    // Not a sequence anyone waits for: hand it on as it is.
                    data.push_str(sequence);
                } else {
                    self.pending = sequence.to_owned();
                }
                rest = "";
                break;
            };
            let whole = &sequence[..len];
            match self.interpret(body) {
                Some(found) => {
                    match stripping {
                        Stripping::Whole => {}
                        Stripping::Nothing => data.push_str(whole),
                        Stripping::AllButTail => {
                            let last = body.chars().next_back().map_or(0, char::len_utf8);
                            data.push_str(&whole[2 + body.len() - last..]);
                        }
                    }
                    flush(&mut data, &mut events);
                    events.extend(found);
                }
                None => {
                    data.push_str(whole);
                    if let Some(title) = window_title(body) {
                        flush(&mut data, &mut events);
                        events.push(Event::Title(title));
                    }
                }
            }
            rest = &sequence[len..];
        }
        data.push_str(rest);
        flush(&mut data, &mut events);
        events
    }

    /// The events of one shell-integration sequence's body (`633;C`), or `None` when the
    /// body is no shell-integration sequence.
    fn interpret(&mut self, body: &str) -> Option<Vec<Event>> {
        let rest = body
            .strip_prefix("633;")
            .or_else(|| body.strip_prefix("133;"))?;
        let mut events = Vec::new();
        if !self.seen_integration {
            self.seen_integration = true;
            events.push(Event::IntegrationSeen);
        }
        let (code, argument) = rest.split_once(';').unwrap_or((rest, ""));
        match code {
            "C" => events.push(Event::CommandStarted),
            "D" => events.push(Event::CommandFinished(argument.parse().ok())),
            "E" => events.push(Event::CommandLine(argument.trim().to_owned())),
            "P" => {
                if let Some(cwd) = argument.strip_prefix("Cwd=") {
                    events.push(Event::Cwd(cwd.to_owned()));
                }
            }
            // Prompt and input boundaries (A, B) and anything newer mark nothing the
            // terminal channel reports.
            _ => {}
        }
        Some(events)
    }
}

fn flush(data: &mut String, events: &mut Vec<Event>) {
    if !data.is_empty() {
        events.push(Event::Data(std::mem::take(data)));
    }
}

/// The body of the OSC sequence `sequence` starts with (after `ESC ]`, before its BEL or
/// `ESC \` terminator) and the sequence's whole length; `None` while unterminated.
fn osc_body(sequence: &str) -> Option<(&str, usize)> {
    let after = &sequence[2..];
    let bell = after.find('\u{7}');
    let st = after.find("\u{1b}\\");
    let (end, terminator) = match (bell, st) {
        (Some(b), Some(s)) if s < b => (s, 2),
        (Some(b), _) => (b, 1),
        (None, Some(s)) => (s, 2),
        (None, None) => return None,
    };
    Some((&after[..end], 2 + end + terminator))
}

/// The title an `OSC 0` or `OSC 2` body sets.
fn window_title(body: &str) -> Option<String> {
    body.strip_prefix("0;")
        .or_else(|| body.strip_prefix("2;"))
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `data` holds a shell-integration sequence (what TERM-002 forbids in
    /// `terminal/data`).
    fn has_integration_sequence(data: &str) -> bool {
        data.contains("\u{1b}]633;") || data.contains("\u{1b}]133;")
    }

    /// The data `events` carry, joined.
    fn data_of(events: &[Event]) -> String {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Data(d) => Some(d.as_str()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_command_between_prompts_becomes_events_and_its_sequences_leave_the_data() {
        let mut scanner = Scanner::default();
        let out = "\u{1b}]633;D;0\u{7}\u{1b}]633;P;Cwd=/tmp\u{7}$ echo hi\r\n\u{1b}]633;E;\t echo hi\u{7}\u{1b}]633;C\u{7}hi\r\n\u{1b}]633;D;0\u{7}$ ";
        let events = scanner.feed(out, Stripping::Whole);
        assert_eq!(
            events,
            vec![
                Event::IntegrationSeen,
                Event::CommandFinished(Some(0)),
                Event::Cwd("/tmp".into()),
                Event::Data("$ echo hi\r\n".into()),
                Event::CommandLine("echo hi".into()),
                Event::CommandStarted,
                Event::Data("hi\r\n".into()),
                Event::CommandFinished(Some(0)),
                Event::Data("$ ".into()),
            ]
        );
        let data = data_of(&events);
        assert!(!has_integration_sequence(&data));
    }

    #[test]
    fn a_sequence_split_across_chunks_waits_for_its_end() {
        let mut scanner = Scanner::default();
        assert_eq!(
            scanner.feed("a\u{1b}]633;", Stripping::Whole),
            vec![Event::Data("a".into())]
        );
        assert_eq!(
            scanner.feed("C\u{1b}\\b", Stripping::Whole),
            vec![
                Event::IntegrationSeen,
                Event::CommandStarted,
                Event::Data("b".into())
            ]
        );
    }

    #[test]
    fn titles_stay_in_the_data_and_leaking_keeps_the_integration_there_too() {
        let mut scanner = Scanner::default();
        let events = scanner.feed("\u{1b}]0;build\u{7}x", Stripping::Whole);
        assert_eq!(
            events,
            vec![
                Event::Data("\u{1b}]0;build\u{7}".into()),
                Event::Title("build".into()),
                Event::Data("x".into()),
            ]
        );
        let leaked = scanner.feed("\u{1b}]633;C\u{7}", Stripping::Nothing);
        assert!(matches!(&leaked[0], Event::Data(d) if has_integration_sequence(d)));
    }

    #[test]
    fn the_remnant_fault_leaves_the_tail_of_each_integration_sequence() {
        let mut scanner = Scanner::default();
        let events = scanner.feed(
            "x\u{1b}]633;A\u{7}y\u{1b}]133;B\u{1b}\\z",
            Stripping::AllButTail,
        );
        let data = data_of(&events);
        assert_eq!(data, "xA\u{7}yB\u{1b}\\z");
    }
}
