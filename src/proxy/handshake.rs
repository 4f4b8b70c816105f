//! The proxy's two handshakes: the client's HTTP upgrade request is read first, the same
//! request (path, query, subprotocols and the client's own headers) is made upstream, and
//! only then is the client answered — with the upstream's subprotocol, or with the
//! upstream's refusal (status and body) when it refused.

use std::io::Cursor;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::handshake::client::Request;
use tokio_tungstenite::tungstenite::http::{header, HeaderValue, Response, StatusCode};

use crate::transport::headers::HOP_HEADERS;

/// Longest HTTP request head the proxy reads.
const MAX_HEAD_BYTES: usize = 16 * 1024;
/// How long a client may take to send its request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a client's handshake could not be taken.
#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("the client sent no complete HTTP request head: {0}")]
    Head(String),
    #[error("bad upstream URL {url}: {why}")]
    Upstream { url: String, why: String },
}

/// The client's upgrade request, as read: its bytes (replayed to the WebSocket handshake),
/// its target (path and query) and headers.
#[derive(Debug)]
pub struct ClientHead {
    pub bytes: Vec<u8>,
    pub target: String,
    pub headers: Vec<(String, Vec<u8>)>,
}

/// Reads the client's request head (and whatever followed it in the same reads). The
/// credentials it carries — in its query or its headers — are learned as secrets: the
/// proxy forwards them, and nothing it writes shows them.
pub async fn read_head(
    stream: &mut (impl AsyncRead + Unpin),
) -> Result<ClientHead, HandshakeError> {
    let mut bytes = Vec::with_capacity(1024);
    let mut chunk = [0u8; 2048];
    loop {
        let n = stream
            .read(&mut chunk)
            .await
            .map_err(|e| HandshakeError::Head(e.to_string()))?;
        if n == 0 {
            return Err(HandshakeError::Head("the connection closed".to_owned()));
        }
        bytes.extend_from_slice(&chunk[..n]);
        let mut headers = [httparse::EMPTY_HEADER; 64];
        let mut request = httparse::Request::new(&mut headers);
        match request.parse(&bytes) {
            Ok(httparse::Status::Complete(_)) => {
                let target = request.path.unwrap_or("/").to_owned();
                let headers: Vec<(String, Vec<u8>)> = request
                    .headers
                    .iter()
                    .map(|h| (h.name.to_owned(), h.value.to_vec()))
                    .collect();
                crate::redact::learn_url(&target);
                for (name, value) in &headers {
                    crate::redact::learn_header(name, &String::from_utf8_lossy(value));
                }
                return Ok(ClientHead {
                    bytes,
                    target,
                    headers,
                });
            }
            Ok(httparse::Status::Partial) if bytes.len() < MAX_HEAD_BYTES => {}
            Ok(httparse::Status::Partial) => {
                return Err(HandshakeError::Head(format!(
                    "longer than {MAX_HEAD_BYTES} bytes"
                )))
            }
            Err(error) => return Err(HandshakeError::Head(error.to_string())),
        }
    }
}

/// The bytes already read, then the rest of the stream: what the WebSocket handshake reads.
pub fn replay<R: AsyncRead + Unpin>(
    head: Vec<u8>,
    rest: R,
) -> tokio::io::Chain<Cursor<Vec<u8>>, R> {
    Cursor::new(head).chain(rest)
}

/// The upstream request for a client's: the upstream URL, with the client's path and query
/// when the upstream URL names no path of its own, and the client's end-to-end headers
/// (subprotocols, authorization, cookies, origin…).
pub fn upstream_request(upstream: &str, head: &ClientHead) -> Result<Request, HandshakeError> {
    let bad = |why: String| HandshakeError::Upstream {
        url: crate::redact::url(upstream).into_owned(),
        why,
    };
    let (scheme_host, path) = split_url(upstream);
    let url = if path.is_empty() || path == "/" {
        format!("{scheme_host}{}", head.target)
    } else {
        upstream.to_owned()
    };
    let mut request = url.into_client_request().map_err(|e| bad(e.to_string()))?;
    for (name, value) in &head.headers {
        let lower = name.to_ascii_lowercase();
        if HOP_HEADERS.contains(&lower.as_str()) {
            continue;
        }
        let (Ok(name), Ok(value)) = (
            header::HeaderName::from_bytes(lower.as_bytes()),
            HeaderValue::from_bytes(value),
        ) else {
            continue;
        };
        request.headers_mut().append(name, value);
    }
    // The proxy's own `--header`s (a credential the upstream wants and clients lack).
    crate::transport::headers::apply(request.headers_mut());
    Ok(request)
}

/// `ws://host:port` and the path after it (empty when there is none).
fn split_url(url: &str) -> (&str, &str) {
    let after_scheme = url.find("://").map_or(0, |at| at + 3);
    match url[after_scheme..].find('/') {
        Some(at) => url.split_at(after_scheme + at),
        None => (url, ""),
    }
}

/// The answer to the client when the upstream refused or could not be reached: the
/// upstream's own status and body, or 502 with the reason.
pub fn refusal(
    status: Option<(StatusCode, Option<Vec<u8>>)>,
    why: &str,
) -> Response<Option<String>> {
    let (status, body) = match status {
        Some((status, body)) => (
            status,
            body.map(|b| String::from_utf8_lossy(&b).into_owned()),
        ),
        None => (
            StatusCode::BAD_GATEWAY,
            Some(format!("ahpspec proxy: {why}")),
        ),
    };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_head_is_read_and_forwarded_with_its_path_and_own_headers() {
        let raw = b"GET /ahp?x=1 HTTP/1.1\r\nHost: a\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: k\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: ahp.v1\r\nAuthorization: Bearer t\r\n\r\n";
        let mut source: &[u8] = raw;
        let head = read_head(&mut source).await.expect("head");
        assert_eq!(head.target, "/ahp?x=1");
        assert_eq!(head.bytes, raw.to_vec());
        let request = upstream_request("ws://127.0.0.1:9", &head).expect("request");
        assert_eq!(request.uri().to_string(), "ws://127.0.0.1:9/ahp?x=1");
        assert_eq!(request.headers()["sec-websocket-protocol"], "ahp.v1");
        assert_eq!(request.headers()["authorization"], "Bearer t");
        assert_ne!(request.headers()["sec-websocket-key"], "k");
        // An upstream URL with a path keeps it.
        let request = upstream_request("ws://127.0.0.1:9/fixed", &head).expect("request");
        assert_eq!(request.uri().path(), "/fixed");
        let mut garbage: &[u8] = b"\x00\x01 not http\r\n\r\n";
        assert!(read_head(&mut garbage).await.is_err());
    }
}
