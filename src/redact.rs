//! Secrets kept out of everything the harness writes: captures, the four reports and the
//! terminal's failure blocks, transcripts and log lines. One piece for AHP and AAP alike.
//!
//! What counts as a secret:
//! - the `token` of an AHP `authenticate` request (PROTOCOL §authenticate);
//! - in a URL (a connection's, an upstream's, any URL-looking text): the value of a query
//!   parameter whose name looks like a credential ([`name_is_secret`]: `token`,
//!   `access_token`, `key`, `secret`, `password`, `auth`…, plus any name a target profile's
//!   `secrets` or `--redact` adds) or whose value does ([`value_looks_secret`]: a JWT, a
//!   `Bearer …`, a well-known API-key prefix), and a URL's `user:password@`;
//! - the value of a credential header (`Authorization`, `Cookie`, `X-Api-Key`…): `--header`,
//!   `--token`, and the headers clients send through the proxy;
//! - every value learned from those anywhere it turns up later (a server echoing the key in
//!   an error message, a log line quoting the URL): see [`learn_value`]. Values shorter than
//!   [`MIN_LEARNED`] characters are redacted where they stand but not searched for
//!   elsewhere (that would blank out every `1` of a report).
//!
//! The checks always see the real traffic; only what is written or shown is redacted. A
//! redacted frame stays valid JSON (a secret is replaced inside its string).

use std::borrow::Cow;
use std::sync::RwLock;

use crate::verdict::{CaseResult, Finding, ReportedFrame, RunReport};

/// What replaces a secret in transcripts, reports, captures and log lines.
pub const REDACTED: &str = "<redacted>";

/// Shortest learned value that is searched for in all text.
pub const MIN_LEARNED: usize = 6;

/// Most values learned in one process (a long proxy session of many clients): beyond it,
/// new values are still redacted where they stand.
const MAX_LEARNED: usize = 4096;

/// Parts of parameter and header names that mark a credential (lowercase).
const SECRET_NAME_PARTS: &[&str] = &[
    "token",
    "secret",
    "passw",
    "passphrase",
    "credential",
    "apikey",
    "api_key",
    "api-key",
    "auth",
    "cookie",
    "signature",
    "jwt",
    "bearer",
    "session_key",
    "private_key",
];

/// Whole names that mark a credential (lowercase).
const SECRET_NAMES: &[&str] = &["key", "pwd", "pass", "sig", "code_verifier"];

/// Well-known API-key prefixes.
const KEY_PREFIXES: &[&str] = &[
    "sk-",
    "sk_live_",
    "sk_test_",
    "rk_live_",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "AKIA",
];

/// Names and values learned in this process.
#[derive(Default)]
struct Learned {
    names: Vec<String>,
    /// Longest first, so a value that contains another is replaced whole.
    values: Vec<String>,
}

static LEARNED: RwLock<Learned> = RwLock::new(Learned {
    names: Vec::new(),
    values: Vec::new(),
});

fn learned<T>(f: impl FnOnce(&Learned) -> T) -> T {
    f(&LEARNED.read().unwrap_or_else(|e| e.into_inner()))
}

/// From now on, query parameters and headers called `name` (any case) are secrets too.
pub fn learn_name(name: &str) {
    let name = name.trim().to_ascii_lowercase();
    if name.is_empty() || name_is_secret(&name) {
        return;
    }
    let mut learned = LEARNED.write().unwrap_or_else(|e| e.into_inner());
    if !learned.names.contains(&name) {
        learned.names.push(name);
    }
}

/// From now on, `value` is redacted wherever it appears (when at least [`MIN_LEARNED`]
/// characters long), as given and percent-decoded.
pub fn learn_value(value: &str) {
    let decoded = percent_decode(value);
    let mut learned = LEARNED.write().unwrap_or_else(|e| e.into_inner());
    for value in [value, decoded.as_ref()] {
        let value = value.trim();
        if value.chars().count() < MIN_LEARNED
            || value == REDACTED
            || learned.values.iter().any(|v| v == value)
            || learned.values.len() >= MAX_LEARNED
        {
            continue;
        }
        let at = learned
            .values
            .iter()
            .position(|v| v.len() < value.len())
            .unwrap_or(learned.values.len());
        learned.values.insert(at, value.to_owned());
    }
}

/// Learns the secrets of a URL (or a request target `/path?query`): the values of its
/// credential query parameters and its userinfo password.
pub fn learn_url(url: &str) {
    let mut secrets = Vec::new();
    scan_url_secrets(url, |value| secrets.push(value.to_owned()));
    for secret in secrets {
        learn_value(&secret);
    }
}

/// Learns a header's value when the header carries a credential (`Bearer KEY` learns both
/// the whole value and the key).
pub fn learn_header(name: &str, value: &str) {
    if !header_is_secret(name, value) {
        return;
    }
    learn_value(value);
    if let Some((_, credential)) = value.trim().split_once(' ') {
        learn_value(credential.trim());
    }
}

/// Whether a query parameter or header called `name` carries a credential.
pub fn name_is_secret(name: &str) -> bool {
    let name = percent_decode(name).trim().to_ascii_lowercase();
    // `author`, `authority`: not credentials; `authorization`, `auth_token`: credentials.
    let author = name.starts_with("author") && !name.starts_with("authoriz");
    // The WebSocket handshake's nonce, not a credential.
    if name.starts_with("sec-websocket-") {
        return false;
    }
    (!author && SECRET_NAME_PARTS.iter().any(|part| name.contains(part)))
        || SECRET_NAMES.contains(&name.as_str())
        || name.ends_with("key")
        || learned(|l| l.names.contains(&name))
}

/// Whether a value looks like a credential whatever it is called: a learned secret, a JWT,
/// an `Authorization` value (`Bearer …`, `Basic …`) or a well-known API-key prefix.
pub fn value_looks_secret(value: &str) -> bool {
    let value = percent_decode(value);
    let value = value.trim();
    if value.is_empty() || value == REDACTED {
        return false;
    }
    let lower = value.to_ascii_lowercase();
    is_jwt(value)
        || ((lower.starts_with("bearer ") || lower.starts_with("basic ")) && value.len() > 10)
        || (value.len() >= 16 && KEY_PREFIXES.iter().any(|p| value.starts_with(p)))
        || learned(|l| l.values.iter().any(|v| v == value))
}

/// Whether a header carries a credential (by its name or its value).
pub fn header_is_secret(name: &str, value: &str) -> bool {
    name_is_secret(name) || value_looks_secret(value)
}

/// A URL, or a request target, with its secrets replaced (and any learned value).
pub fn url(url: &str) -> Cow<'_, str> {
    text(url)
}

/// Any text (a log line, a summary, a report's transcript frame, an error message): learned
/// values, secrets in the URLs it holds, and an `authenticate` request's token replaced.
/// Text without any comes back unchanged and uncopied.
pub fn text(text: &str) -> Cow<'_, str> {
    let framed = frame(text);
    match redact_urls(&framed) {
        Cow::Owned(changed) => Cow::Owned(changed),
        Cow::Borrowed(_) => framed,
    }
}

/// A frame for a capture or a transcript: the `token` of an `authenticate` request and
/// learned values replaced; the frame stays the same JSON otherwise (URLs inside it are
/// the server's business and a re-check must see them as sent). Other frames come back
/// unchanged and uncopied.
pub fn frame(text: &str) -> Cow<'_, str> {
    let authenticated = authenticate_token(text);
    match replace_learned(&authenticated) {
        Cow::Owned(changed) => Cow::Owned(changed),
        Cow::Borrowed(_) => authenticated,
    }
}

/// Every string of a report that came from a server, a URL or a command line, redacted.
pub fn report(report: &mut RunReport) {
    redact_in_place(&mut report.target);
    for case in &mut report.cases {
        case_result(case);
    }
}

/// One row's summary, findings, transcript and re-run command, redacted.
pub fn case_result(case: &mut CaseResult) {
    redact_in_place(&mut case.summary);
    redact_in_place(&mut case.rerun);
    for finding in &mut case.findings {
        redact_finding(finding);
    }
    for frame in &mut case.transcript {
        redact_frame(frame);
    }
}

fn redact_finding(finding: &mut Finding) {
    redact_in_place(&mut finding.expected);
    redact_in_place(&mut finding.actual);
    for frame in &mut finding.context {
        redact_frame(frame);
    }
}

fn redact_frame(frame: &mut ReportedFrame) {
    redact_in_place(&mut frame.text);
}

fn redact_in_place(value: &mut String) {
    if let Cow::Owned(changed) = text(value) {
        *value = changed;
    }
}

/// The `token` of an `authenticate` request replaced (the one member of the protocol that
/// carries a credential).
fn authenticate_token(text: &str) -> Cow<'_, str> {
    if !text.contains("authenticate") || !text.contains("token") {
        return Cow::Borrowed(text);
    }
    let Ok(mut message) = serde_json::from_str::<serde_json::Value>(text) else {
        return Cow::Borrowed(text);
    };
    if message.get("method").and_then(serde_json::Value::as_str) != Some("authenticate") {
        return Cow::Borrowed(text);
    }
    match message.pointer_mut("/params/token") {
        Some(token) if token.as_str() != Some(REDACTED) => {
            *token = serde_json::Value::String(REDACTED.to_owned());
            Cow::Owned(message.to_string())
        }
        _ => Cow::Borrowed(text),
    }
}

/// Every learned value replaced.
fn replace_learned(text: &str) -> Cow<'_, str> {
    learned(|l| {
        let mut out = Cow::Borrowed(text);
        for value in &l.values {
            if out.contains(value.as_str()) {
                out = Cow::Owned(out.replace(value.as_str(), REDACTED));
            }
        }
        match out {
            Cow::Owned(changed) => Cow::Owned(changed),
            Cow::Borrowed(_) => Cow::Borrowed(text),
        }
    })
}

/// Characters that end a query value (or a URL's authority) inside free text.
fn ends_value(c: char) -> bool {
    c.is_whitespace()
        || matches!(
            c,
            '&' | '#' | '"' | '\'' | '<' | '>' | '`' | '\\' | ',' | ';'
        )
}

/// The secrets of the URLs in `text`, each passed to `found` (used both to learn them and,
/// through [`redact_urls`], to replace them).
fn scan_url_secrets(text: &str, mut found: impl FnMut(&str)) {
    for range in secret_ranges(text) {
        found(&text[range]);
    }
}

/// Secrets in the URLs of `text`, replaced.
fn redact_urls(text: &str) -> Cow<'_, str> {
    let ranges = secret_ranges(text);
    if ranges.is_empty() {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for range in ranges {
        out.push_str(&text[at..range.start]);
        out.push_str(REDACTED);
        at = range.end;
    }
    out.push_str(&text[at..]);
    Cow::Owned(out)
}

/// Byte ranges of the secrets in the URLs of `text`, in order, not overlapping: query values
/// of credential parameters (or credential-looking values) and userinfo passwords.
fn secret_ranges(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut ranges = Vec::new();
    if !text.contains(['?', '@']) {
        return ranges;
    }
    userinfo_passwords(text, &mut ranges);
    query_values(text, &mut ranges);
    ranges.sort_by_key(|r| r.start);
    ranges.dedup_by(|later, earlier| later.start < earlier.end);
    ranges
}

/// `scheme://user:password@host`: the password.
fn userinfo_passwords(text: &str, ranges: &mut Vec<std::ops::Range<usize>>) {
    let mut from = 0;
    while let Some(found) = text[from..].find("://") {
        let start = from + found + 3;
        let authority_end = text[start..]
            .find(|c: char| ends_value(c) || matches!(c, '/' | '?'))
            .map_or(text.len(), |n| start + n);
        let authority = &text[start..authority_end];
        if let Some(at) = authority.rfind('@') {
            if let Some(colon) = authority[..at].find(':') {
                if colon + 1 < at {
                    ranges.push(start + colon + 1..start + at);
                }
            }
        }
        from = start;
    }
}

/// `?name=value&…`: each value whose name or self looks like a credential.
fn query_values(text: &str, ranges: &mut Vec<std::ops::Range<usize>>) {
    let mut from = 0;
    while let Some(found) = text[from..].find('?') {
        let mut at = from + found + 1;
        loop {
            let end = text[at..]
                .find(|c: char| ends_value(c) && c != '&')
                .map_or(text.len(), |n| at + n);
            let pair_end = text[at..end].find('&').map_or(end, |n| at + n);
            let pair = &text[at..pair_end];
            if let Some((name, value)) = pair.split_once('=') {
                let value_start = at + name.len() + 1;
                if !value.is_empty() && (name_is_secret(name) || value_looks_secret(value)) {
                    ranges.push(value_start..pair_end);
                }
            }
            if pair_end < end {
                at = pair_end + 1;
            } else {
                from = end;
                break;
            }
        }
        if from >= text.len() {
            break;
        }
    }
}

/// Three base64url segments, the first a JSON object's (`eyJ`).
fn is_jwt(value: &str) -> bool {
    let parts: Vec<&str> = value.split('.').collect();
    parts.len() == 3
        && value.starts_with("eyJ")
        && value.len() >= 20
        && parts.iter().all(|p| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '=')
        })
}

/// `%XX` sequences decoded (bytes that are not UTF-8 shown lossily; bad escapes kept).
fn percent_decode(text: &str) -> Cow<'_, str> {
    if !text.contains('%') && !text.contains('+') {
        return Cow::Borrowed(text);
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(byte) => {
                        out.push(byte);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            byte => {
                out.push(byte);
                i += 1;
            }
        }
    }
    Cow::Owned(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_query_values_are_redacted_and_the_rest_kept() {
        let redacted = url("ws://h:1/ahp?access_token=abc&x=1&Key=k2&author=me&api%5Fkey=zz#f");
        assert_eq!(
            redacted,
            "ws://h:1/ahp?access_token=<redacted>&x=1&Key=<redacted>&author=me&api%5Fkey=<redacted>#f"
        );
        assert_eq!(url("/?token=SUPERSECRET123"), "/?token=<redacted>");
        assert!(matches!(url("ws://h:1/ahp?x=1"), Cow::Borrowed(_)));
        assert!(matches!(url("no url here"), Cow::Borrowed(_)));
    }

    #[test]
    fn credential_looking_values_are_redacted_whatever_their_name() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJlLXZhbHVl";
        let given = format!("wss://h/?t={jwt}&u=ghp_0123456789abcdefXYZ");
        let redacted = url(&given);
        assert_eq!(redacted, "wss://h/?t=<redacted>&u=<redacted>");
    }

    #[test]
    fn userinfo_passwords_are_redacted_in_free_text() {
        let line = "cannot connect to ws://alice:hunter2@h:1/x: refused";
        assert_eq!(
            text(line),
            "cannot connect to ws://alice:<redacted>@h:1/x: refused"
        );
        assert_eq!(
            text("see \"ws://h/?password=p4ss\" there"),
            "see \"ws://h/?password=<redacted>\" there"
        );
    }

    #[test]
    fn learned_values_are_redacted_everywhere_they_turn_up() {
        learn_url("/?access_token=LEARNED-SECRET-42");
        learn_header("Authorization", "Bearer LEARNED-BEARER-7");
        learn_header("X-Tenant", "LEARNED-NOT-SECRET");
        let echoed =
            r#"{"error":"bad key LEARNED-SECRET-42 / LEARNED-BEARER-7 / LEARNED-NOT-SECRET"}"#;
        let redacted = frame(echoed);
        assert_eq!(
            redacted,
            r#"{"error":"bad key <redacted> / <redacted> / LEARNED-NOT-SECRET"}"#
        );
        // Too short to search for: redacted only where it stands.
        learn_value("abc");
        assert_eq!(text("abc"), "abc");
    }

    #[test]
    fn learned_names_mark_their_parameters() {
        assert_eq!(url("/?tenant_pin=1234"), "/?tenant_pin=1234");
        learn_name("Tenant_Pin");
        assert_eq!(url("/?tenant_pin=1234"), "/?tenant_pin=<redacted>");
    }
}
