//! Bad readers of a streamed answer (the malformed-request fuzz mode): the request goes out
//! as plain HTTP/1.1 bytes on its own connection, the response head is read, and then the
//! client misbehaves on purpose — leaves after the first event, reads one byte at a time,
//! or stops reading and holds the connection — before it disconnects. What such a client
//! read is never judged (it cut the answer off itself); the requests after it show
//! whether the server is still well.

use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::{Auth, Body, Client, HttpError, Request, Response};

/// How the client mistreats the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadReader {
    /// Reads up to the end of the first event, then disconnects.
    Drop,
    /// Reads one byte at a time, a few milliseconds apart, for a while, then disconnects.
    Slow,
    /// Reads nothing after the head for a while, then disconnects.
    Stall,
}

impl BadReader {
    pub fn parse(name: &str) -> Option<BadReader> {
        match name {
            "drop" => Some(BadReader::Drop),
            "slow" => Some(BadReader::Slow),
            "stall" => Some(BadReader::Stall),
            _ => None,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            BadReader::Drop => "the client left after the first event",
            BadReader::Slow => "the client read one byte at a time, then left",
            BadReader::Stall => "the client stopped reading, then left",
        }
    }
}

/// How long a slow or stalled reader keeps the connection.
const MISBEHAVE_FOR: Duration = Duration::from_millis(300);
/// A slow reader's pause between bytes.
const BYTE_PAUSE: Duration = Duration::from_millis(3);

impl Client {
    /// Sends `request` and reads its answer as `reader` does; the response's status and
    /// content type (its body is never read whole: `Body::Empty`).
    pub async fn send_reading_badly(
        &mut self,
        request: &Request,
        reader: BadReader,
    ) -> Result<Response, HttpError> {
        self.sending(request);
        let result = self.read_badly(request, reader).await;
        if let Some(recorder) = &self.recorder {
            recorder.take(super::recording::read_badly(request, &result));
        }
        match &result {
            Ok(response) => self.record(
                "received",
                format!(
                    "{} ({}) <{}>",
                    response.status,
                    response
                        .content_type
                        .as_deref()
                        .unwrap_or("no content type"),
                    reader.describe()
                ),
            ),
            Err(error) => self.record("received", format!("<no response: {error}>")),
        }
        result
    }

    async fn read_badly(
        &mut self,
        request: &Request,
        reader: BadReader,
    ) -> Result<Response, HttpError> {
        let mut io = super::connect(&self.target, self.timeout).await?;
        let wire = self.raw_request(request);
        let broken = |e: std::io::Error| HttpError::Exchange(e.to_string());
        tokio::time::timeout(self.timeout, io.write_all(&wire))
            .await
            .map_err(|_| HttpError::Timeout(self.timeout))?
            .map_err(broken)?;
        // The head, a byte at a time up to its blank line (the body stays unread).
        let mut head = Vec::new();
        let deadline = Instant::now() + self.timeout;
        while !head.ends_with(b"\r\n\r\n") {
            let left = deadline.saturating_duration_since(Instant::now());
            let mut byte = [0u8; 1];
            let n = tokio::time::timeout(left, io.read(&mut byte))
                .await
                .map_err(|_| HttpError::Timeout(self.timeout))?
                .map_err(broken)?;
            if n == 0 {
                return Err(HttpError::Exchange(
                    "the connection closed before the response head ended".into(),
                ));
            }
            head.push(byte[0]);
            if head.len() > 64 * 1024 {
                return Err(HttpError::Exchange("a response head over 64 KiB".into()));
            }
        }
        let response = parse_head(&String::from_utf8_lossy(&head))?;
        match reader {
            BadReader::Drop => {
                let mut seen = Vec::new();
                let mut chunk = [0u8; 256];
                while !seen.windows(2).any(|w| w == b"\n\n") && Instant::now() < deadline {
                    let left = deadline.saturating_duration_since(Instant::now());
                    match tokio::time::timeout(left, io.read(&mut chunk)).await {
                        Ok(Ok(n)) if n > 0 => seen.extend_from_slice(&chunk[..n]),
                        _ => break,
                    }
                }
            }
            BadReader::Slow => {
                let until = Instant::now() + MISBEHAVE_FOR;
                let mut byte = [0u8; 1];
                while Instant::now() < until {
                    match tokio::time::timeout(MISBEHAVE_FOR, io.read(&mut byte)).await {
                        Ok(Ok(1)) => tokio::time::sleep(BYTE_PAUSE).await,
                        _ => break,
                    }
                }
            }
            BadReader::Stall => tokio::time::sleep(MISBEHAVE_FOR).await,
        }
        // Dropping the connection here is the disconnect.
        drop(io);
        Ok(response)
    }

    /// `request` as HTTP/1.1 bytes (the same headers [`Client::send`] sends).
    fn raw_request(&self, request: &Request) -> Vec<u8> {
        let mut head = format!(
            "{} {}{} HTTP/1.1\r\nHost: {}\r\nAccept: text/event-stream\r\nConnection: close\r\n",
            request.method,
            self.target.base_path,
            request.path,
            self.target.authority()
        );
        let key = match request.auth {
            Auth::Configured => self.token.clone(),
            Auth::Omitted => None,
            Auth::Wrong => Some("ahpspec-wrong-key".to_owned()),
        };
        for (name, value) in crate::transport::headers::extra() {
            let authorization = name.eq_ignore_ascii_case("authorization");
            if !authorization || (request.auth == Auth::Configured && key.is_none()) {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
        }
        if let Some(key) = key {
            head.push_str(&format!("Authorization: Bearer {key}\r\n"));
        }
        let body = request.body.clone().unwrap_or_default();
        if request.body.is_some() {
            head.push_str(&format!("Content-Type: {}\r\n", content_type(request)));
        }
        head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
        let mut wire = head.into_bytes();
        wire.extend_from_slice(&body);
        wire
    }
}

fn content_type(request: &Request) -> String {
    request
        .content_type
        .clone()
        .unwrap_or_else(|| "application/json".to_owned())
}

/// The status and content type of a response head.
fn parse_head(head: &str) -> Result<Response, HttpError> {
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|code| code.parse::<u16>().ok())
        .ok_or_else(|| HttpError::Exchange(format!("not an HTTP response head: {head:?}")))?;
    let content_type = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("content-type"))
        .map(|(_, value)| value.trim().to_owned());
    Ok(Response {
        status,
        content_type,
        body: Body::Empty,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_give_status_and_content_type() {
        let response =
            parse_head("HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n").unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.content_type.as_deref(), Some("text/event-stream"));
        assert!(parse_head("garbage\r\n\r\n").is_err());
        assert_eq!(BadReader::parse("slow"), Some(BadReader::Slow));
        assert_eq!(BadReader::parse("fast"), None);
    }
}
