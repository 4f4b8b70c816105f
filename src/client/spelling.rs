//! Channel URIs compared modulo spelling. AHP URIs are opaque strings, so a host that answers
//! with another spelling of the client's URI (`ahp-session://x` for `ahp-session:/x`, an
//! upper-case scheme, percent-encoding, or a scheme of its own: `pi:/x` for `ahp-session:/x`)
//! breaks the rules that pin the URI — the snapshot's `resource` (SUB-001), a new session's
//! summary (ROOT-005), the envelope's channel (ENV-004), the 1.0.0 schemes (SUB-012) — and
//! those say so exactly. Everywhere else a case *searches* (a `where`, a `contains`, an
//! `excludes`, a channel filter, a silence) it finds the channel in any spelling, so the one
//! deviation is not charged again to every rule that happens to look for that channel, and a
//! negative check cannot pass vacuously because the host spells the URI its own way.

use serde_json::Value;

/// The spelling-free form of a URI: lower-case scheme, the rest percent-decoded without
/// leading or trailing slashes. `None` for a string that is no URI (no scheme).
fn canonical(uri: &str) -> Option<(String, String)> {
    let (scheme, rest) = uri.split_once(':')?;
    let plausible = !scheme.is_empty()
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    if !plausible {
        return None;
    }
    Some((
        scheme.to_ascii_lowercase(),
        percent_decode(rest.trim_matches('/')),
    ))
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

/// Whether two strings name the same channel: equal; or URIs that differ only in spelling —
/// both `ahp-…:` with the same scheme, or one `ahp-…:` and one of another scheme the host uses
/// for it, with the same non-empty id (`pi:/x` for `ahp-session:/x`; the ids the harness
/// chooses are unique per run, so a foreign scheme with the same id is that channel). Two
/// different `ahp-` kinds never match, nor do two foreign schemes.
pub fn same_channel(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let (Some((sa, ia)), Some((sb, ib))) = (canonical(a), canonical(b)) else {
        return false;
    };
    let ahp = |scheme: &str| scheme.starts_with("ahp-");
    match (ahp(&sa), ahp(&sb)) {
        (true, true) => sa == sb && ia == ib,
        (true, false) | (false, true) => !ia.is_empty() && ia == ib,
        (false, false) => false,
    }
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
            "two foreign schemes stay exact"
        );
        assert!(
            same_channel("pi:/abc-1-S", "ahp-session:/abc-1-S"),
            "a host's own scheme"
        );
        assert!(!same_channel("pi:/", "ahp-root://"), "no id, no match");
        assert!(!same_channel("title", "Title"));
        assert!(!same_channel(
            "a title: with a colon",
            "ahp-session:/ with a colon"
        ));
    }
}
