//! Extra request headers (`--header 'Name: value'`) that every connection of this process
//! sends: AHP's WebSocket upgrade requests (runs, fuzz campaigns, checkpoints, the proxy's
//! upstream requests) and AAP's HTTP requests. Process-wide, like the TLS trust of
//! `--ca-cert`. Credential headers are learned by [`crate::redact`], so their values never
//! reach a report, a capture or a log line.

use std::sync::RwLock;

use tokio_tungstenite::tungstenite::http;

/// Headers that belong to one hop of a request (each connection makes its own): a
/// `--header` cannot set them, and the proxy does not forward a client's.
pub const HOP_HEADERS: &[&str] = &[
    "host",
    "connection",
    "upgrade",
    "sec-websocket-key",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "sec-websocket-accept",
    "content-length",
    "transfer-encoding",
];

static EXTRA: RwLock<Vec<(String, String)>> = RwLock::new(Vec::new());

/// A `--header` that cannot be sent. The message never quotes the value (it may be a
/// credential).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HeaderError {
    #[error("invalid --header: expected 'Name: value'")]
    Shape,
    #[error("invalid --header {0:?}: not a valid header name")]
    Name(String),
    #[error("invalid --header {0:?}: the value holds characters a header cannot carry")]
    Value(String),
    #[error("--header {0:?}: the harness sets this header itself")]
    Own(String),
}

/// `Name: value` parsed and checked (a valid HTTP header name and value).
pub fn parse(text: &str) -> Result<(String, String), HeaderError> {
    let (name, value) = text.split_once(':').ok_or(HeaderError::Shape)?;
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty() {
        return Err(HeaderError::Shape);
    }
    let name = http::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| HeaderError::Name(name.to_owned()))?;
    if HOP_HEADERS.contains(&name.as_str()) {
        return Err(HeaderError::Own(name.to_string()));
    }
    http::HeaderValue::from_str(value).map_err(|_| HeaderError::Value(name.to_string()))?;
    Ok((name.to_string(), value.to_owned()))
}

/// Sets the headers every later connection sends; credential ones are learned as secrets.
pub fn set(headers: Vec<(String, String)>) {
    for (name, value) in &headers {
        crate::redact::learn_header(name, value);
    }
    *EXTRA.write().unwrap_or_else(|e| e.into_inner()) = headers;
}

/// The headers set, in the order given (names lowercase).
pub fn extra() -> Vec<(String, String)> {
    EXTRA.read().unwrap_or_else(|e| e.into_inner()).clone()
}

/// Adds the extra headers to a request's header map (replacing any of the same name).
pub fn apply(map: &mut http::HeaderMap) {
    for (name, value) in extra() {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            http::HeaderValue::from_str(&value),
        ) {
            map.insert(name, value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headers_parse_and_bad_ones_never_quote_the_value() {
        assert_eq!(
            parse("Authorization: Bearer abc"),
            Ok(("authorization".to_owned(), "Bearer abc".to_owned()))
        );
        assert_eq!(
            parse("X-Tenant:acme"),
            Ok(("x-tenant".into(), "acme".into()))
        );
        assert_eq!(parse("no colon"), Err(HeaderError::Shape));
        assert_eq!(parse(": v"), Err(HeaderError::Shape));
        assert!(matches!(parse("Bad Name: v"), Err(HeaderError::Name(_))));
        assert_eq!(parse("Host: x"), Err(HeaderError::Own("host".into())));
        let error = parse("X-Key: sec\u{7}ret").expect_err("control byte");
        assert!(!error.to_string().contains("sec"), "{error}");
    }
}
