//! Channel URIs compared modulo spelling. AHP URIs are opaque strings, so a host that answers
//! with another spelling of the client's URI (`ahp-session://x` for `ahp-session:/x`, an
//! upper-case scheme, percent-encoding) breaks the rules that pin the URI — the snapshot's
//! `resource` (SUB-001), a new session's summary (ROOT-005), the envelope's channel (ENV-004) —
//! and those say so exactly. Everywhere else a case *searches* (a `where`, a `contains`, an
//! `excludes`, a channel filter, a silence) it finds the channel in any spelling, so the one
//! deviation is not charged again to every rule that happens to look for that channel, and a
//! negative check cannot pass vacuously because the host spells the URI its own way.

use serde_json::Value;

/// The spelling-free form of an `ahp-…:` URI: lower-case scheme, the rest percent-decoded
/// without leading or trailing slashes. `None` for anything else (other schemes stay exact).
fn canonical(uri: &str) -> Option<(String, String)> {
    let (scheme, rest) = uri.split_once(':')?;
    let scheme = scheme.to_ascii_lowercase();
    if !scheme.starts_with("ahp-") {
        return None;
    }
    Some((scheme, percent_decode(rest.trim_matches('/'))))
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[at], bytes.get(at + 1), bytes.get(at + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                at += 3;
            }
            (byte, _, _) => {
                out.push(byte);
                at += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Whether two strings name the same channel: equal, or both `ahp-…:` URIs that differ only
/// in spelling.
pub fn same_channel(a: &str, b: &str) -> bool {
    a == b || canonical(a).is_some_and(|ca| canonical(b).is_some_and(|cb| ca == cb))
}

/// Whether a JSON value is the channel URI `uri` in some spelling.
pub fn is_channel(value: &Value, uri: &str) -> bool {
    value.as_str().is_some_and(|v| same_channel(v, uri))
}

/// `json_equal`, with strings compared as channels (`same_channel`): for searches.
pub fn json_finds(a: &Value, b: &Value) -> bool {
    super::conn::json_equal_with(a, b, &same_channel)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_of_one_channel_are_the_same_channel() {
        assert!(same_channel("ahp-session:/abc", "ahp-session://abc"));
        assert!(same_channel("ahp-session:/abc", "AHP-Session:///abc/"));
        assert!(same_channel("ahp-chat:/a%20b", "ahp-chat:/a b"));
        assert!(same_channel("ahp-root://", "ahp-root:"));
        assert!(!same_channel("ahp-session:/abc", "ahp-session:/abd"));
        assert!(!same_channel("ahp-session:/abc", "ahp-chat:/abc"));
        assert!(
            !same_channel("copilot:/abc", "copilot://abc"),
            "other schemes stay exact"
        );
        assert!(!same_channel("title", "Title"));
    }
}
