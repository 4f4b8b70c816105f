//! Reading a `text/event-stream` body into events. The line protocol (fields, multi-line
//! `data:`, comments, CRLF/LF/CR, events split across chunks) is the `eventsource-stream`
//! crate's; this module adds what a conformance check needs on top: a deadline between
//! chunks, how the stream ended, and whether it stopped in the middle of an event (which
//! the SSE rules make the reader drop).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use eventsource_stream::EventStream;
use futures_util::{Stream, StreamExt};

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field (`message` when the server sent none).
    pub name: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
}

/// How a stream ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StreamEnd {
    /// The body ended (the server finished the response).
    Closed,
    /// Nothing arrived for the deadline: the server kept the response open.
    TimedOut(Duration),
    /// The body broke off (connection reset, bad chunking) or was not UTF-8.
    Broken(String),
}

/// Everything read from one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseRead {
    pub events: Vec<SseEvent>,
    pub end: StreamEnd,
    /// The body ended with bytes after the last blank line: an event cut off before its
    /// terminating blank line (dropped, as the SSE rules require).
    pub unterminated: bool,
}

/// Reads `chunks` to their end (or until `idle` passes without a chunk), calling
/// `on_event` for every event as it is dispatched.
pub async fn read<S, E>(chunks: S, idle: Duration, mut on_event: impl FnMut(&SseEvent)) -> SseRead
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: std::fmt::Display,
{
    let tail = Arc::new(Mutex::new(Vec::<u8>::new()));
    let seen = Arc::clone(&tail);
    let recorded = chunks.inspect(move |chunk| {
        if let Ok(bytes) = chunk {
            let mut tail = seen.lock().unwrap_or_else(|p| p.into_inner());
            tail.extend_from_slice(bytes);
            // Only the last few bytes matter for "ended on a blank line".
            let keep = tail.len().saturating_sub(4);
            tail.drain(..keep);
        }
    });
    let mut events = EventStream::new(recorded);
    let mut read = Vec::new();
    let end = loop {
        match tokio::time::timeout(idle, events.next()).await {
            Err(_) => break StreamEnd::TimedOut(idle),
            Ok(None) => break StreamEnd::Closed,
            Ok(Some(Err(error))) => break StreamEnd::Broken(error.to_string()),
            Ok(Some(Ok(event))) => {
                let event = SseEvent {
                    name: if event.event.is_empty() {
                        "message".to_owned()
                    } else {
                        event.event
                    },
                    data: event.data,
                };
                on_event(&event);
                read.push(event);
            }
        }
    };
    let tail = tail.lock().unwrap_or_else(|p| p.into_inner()).clone();
    let unterminated = end == StreamEnd::Closed && !tail.is_empty() && !ends_on_blank_line(&tail);
    SseRead {
        events: read,
        end,
        unterminated,
    }
}

/// Parses a whole body already read (a proxy's copy, a capture's record) that ended as
/// `end`: the same events and cut-off verdict [`read`] gives for the same bytes.
pub fn parse(body: &[u8], end: StreamEnd) -> SseRead {
    use futures_util::FutureExt;
    let chunk = Ok::<_, std::convert::Infallible>(Bytes::copy_from_slice(body));
    let mut events = EventStream::new(futures_util::stream::iter([chunk]));
    let mut read = Vec::new();
    let mut end = end;
    // A stream of one ready chunk never waits: every poll resolves at once.
    while let Some(Some(next)) = events.next().now_or_never() {
        match next {
            Ok(event) => read.push(SseEvent {
                name: if event.event.is_empty() {
                    "message".to_owned()
                } else {
                    event.event
                },
                data: event.data,
            }),
            Err(error) => {
                end = StreamEnd::Broken(error.to_string());
                break;
            }
        }
    }
    let unterminated = end == StreamEnd::Closed && !body.is_empty() && !ends_on_blank_line(body);
    SseRead {
        events: read,
        end,
        unterminated,
    }
}

/// Whether the bytes end with an empty line (LF LF, CR CR, or CRLF CRLF).
fn ends_on_blank_line(tail: &[u8]) -> bool {
    tail.ends_with(b"\n\n") || tail.ends_with(b"\r\r") || tail.ends_with(b"\r\n\r\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parse(chunks: &[&str]) -> SseRead {
        let owned: Vec<Result<Bytes, std::convert::Infallible>> = chunks
            .iter()
            .map(|c| Ok(Bytes::from(c.as_bytes().to_vec())))
            .collect();
        read(
            futures_util::stream::iter(owned),
            Duration::from_secs(5),
            |_| {},
        )
        .await
    }

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent {
            name: name.to_owned(),
            data: data.to_owned(),
        }
    }

    #[tokio::test]
    async fn named_events_with_lf() {
        let read = parse(&["event: turn_start\ndata: {}\n\nevent: turn_stop\ndata: {\"stopReason\":\"end_turn\"}\n\n"]).await;
        assert_eq!(
            read.events,
            vec![
                event("turn_start", "{}"),
                event("turn_stop", "{\"stopReason\":\"end_turn\"}")
            ]
        );
        assert_eq!(read.end, StreamEnd::Closed);
        assert!(!read.unterminated);
    }

    #[tokio::test]
    async fn crlf_line_ends() {
        let read = parse(&["event: text\r\ndata: {\"text\":\"a\"}\r\n\r\n"]).await;
        assert_eq!(read.events, vec![event("text", "{\"text\":\"a\"}")]);
        assert!(!read.unterminated);
    }

    #[tokio::test]
    async fn multi_line_data_is_joined_with_newlines() {
        let read = parse(&["event: text\ndata: {\"text\":\ndata: \"a\"}\n\n"]).await;
        assert_eq!(read.events, vec![event("text", "{\"text\":\n\"a\"}")]);
    }

    #[tokio::test]
    async fn comments_are_skipped() {
        let read = parse(&[": keep-alive\n\nevent: turn_start\n: note\ndata: {}\n\n"]).await;
        assert_eq!(read.events, vec![event("turn_start", "{}")]);
    }

    #[tokio::test]
    async fn an_event_split_across_chunks_is_one_event() {
        let read = parse(&[
            "ev",
            "ent: text_de",
            "lta\nda",
            "ta: {\"delta\":\"x\"}\n",
            "\n",
        ])
        .await;
        assert_eq!(read.events, vec![event("text_delta", "{\"delta\":\"x\"}")]);
        assert!(!read.unterminated);
    }

    #[tokio::test]
    async fn crlf_split_between_chunks() {
        let read = parse(&["event: turn_start\r", "\ndata: {}\r\n\r", "\n"]).await;
        assert_eq!(read.events, vec![event("turn_start", "{}")]);
    }

    #[tokio::test]
    async fn an_event_without_its_blank_line_is_dropped_and_reported() {
        let read = parse(&["event: turn_start\ndata: {}\n\nevent: turn_stop\ndata: {}\n"]).await;
        assert_eq!(read.events, vec![event("turn_start", "{}")]);
        assert!(read.unterminated);
    }

    #[tokio::test]
    async fn unnamed_events_are_messages() {
        let read = parse(&["data: {}\n\n"]).await;
        assert_eq!(read.events, vec![event("message", "{}")]);
    }

    #[tokio::test]
    async fn a_whole_body_parses_as_its_chunks_read() {
        let chunks = [
            "event: turn_start\r",
            "\ndata: {}\r\n\r",
            "\n: c\n\ndata: x\n",
        ];
        let read = parse(&chunks).await;
        let whole = super::parse(chunks.concat().as_bytes(), StreamEnd::Closed);
        assert_eq!(whole, read);
        assert!(whole.unterminated);
        let broken = super::parse(b"data: \xff\n\n", StreamEnd::Closed);
        assert!(matches!(broken.end, StreamEnd::Broken(_)), "{broken:?}");
    }

    #[tokio::test]
    async fn a_stream_that_stays_open_times_out() {
        let open = futures_util::stream::iter(vec![Ok::<_, std::convert::Infallible>(
            Bytes::from_static(b"event: turn_start\ndata: {}\n\n"),
        )])
        .chain(futures_util::stream::pending());
        let read = read(Box::pin(open), Duration::from_millis(20), |_| {}).await;
        assert_eq!(read.events.len(), 1);
        assert_eq!(read.end, StreamEnd::TimedOut(Duration::from_millis(20)));
    }
}
