//! Reading one member of a frame without parsing it: the id of a request nested deeper than
//! the parser goes (or cut off), which a host with another parser may still read and answer.

/// What [`scan_id`] found.
#[derive(Debug, Clone, PartialEq)]
pub enum ScannedId {
    /// The `id` member's value.
    Found(serde_json::Value),
    /// Not an object, or a whole object without `id`.
    Absent,
    /// The text ends (or goes wrong) before an `id` could be read.
    Unreadable,
}

/// The `id` member of a top-level JSON object, read without parsing the rest: the
/// object's members are skipped by their strings and brackets (at any depth, nothing
/// checked), and the first `id` member's value parsed when it is whole. For frames a strict
/// parser refuses (too deep, cut off) whose id a host may still read.
pub fn scan_id(text: &str) -> ScannedId {
    let mut scan = Scan {
        bytes: text.as_bytes(),
        at: 0,
    };
    if scan.next_token() != Some(b'{') {
        return ScannedId::Absent;
    }
    scan.at += 1;
    loop {
        match scan.next_token() {
            Some(b'}') => return ScannedId::Absent,
            Some(b'"') => {}
            _ => return ScannedId::Unreadable,
        }
        let Some(key) = scan.string() else {
            return ScannedId::Unreadable;
        };
        if scan.next_token() != Some(b':') {
            return ScannedId::Unreadable;
        }
        scan.at += 1;
        scan.next_token();
        let start = scan.at;
        if !scan.skip_value() {
            return ScannedId::Unreadable;
        }
        if serde_json::from_str::<String>(key).is_ok_and(|key| key == "id") {
            let value = serde_json::from_str::<serde_json::Value>(&text[start..scan.at]);
            return value.map_or(ScannedId::Unreadable, ScannedId::Found);
        }
        match scan.next_token() {
            Some(b',') => scan.at += 1,
            Some(b'}') => return ScannedId::Absent,
            _ => return ScannedId::Unreadable,
        }
    }
}

/// A cursor over a frame's bytes for [`scan_id`].
struct Scan<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Scan<'a> {
    /// Skips whitespace; the byte there, if any.
    fn next_token(&mut self) -> Option<u8> {
        while self.bytes.get(self.at).is_some_and(u8::is_ascii_whitespace) {
            self.at += 1;
        }
        self.bytes.get(self.at).copied()
    }

    /// The string token starting here (quotes included); `None` when it is cut off.
    fn string(&mut self) -> Option<&'a str> {
        let start = self.at;
        self.at += 1;
        loop {
            match self.bytes.get(self.at)? {
                b'\\' => self.at += 2,
                b'"' => {
                    self.at += 1;
                    let bytes: &'a [u8] = self.bytes;
                    return std::str::from_utf8(&bytes[start..self.at]).ok();
                }
                _ => self.at += 1,
            }
        }
    }

    /// Skips one value (strings and brackets counted, not checked); whether it was whole.
    fn skip_value(&mut self) -> bool {
        let mut depth = 0usize;
        loop {
            let Some(byte) = self.bytes.get(self.at).copied() else {
                return false;
            };
            match byte {
                b'"' => {
                    if self.string().is_none() {
                        return false;
                    }
                    if depth == 0 {
                        return true;
                    }
                    continue;
                }
                b'[' | b'{' => depth += 1,
                b']' | b'}' if depth > 0 => {
                    depth -= 1;
                    if depth == 0 {
                        self.at += 1;
                        return true;
                    }
                }
                b',' | b']' | b'}' if depth == 0 => return true,
                byte if depth == 0 && byte.is_ascii_whitespace() => return true,
                _ => {}
            }
            self.at += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_of_frames_too_deep_or_cut_off_are_read_without_parsing_them() {
        let deep = |depth: usize| {
            format!(
                r#"{{"jsonrpc":"2.0","id":7000000,"method":"listSessions","params":{}{}}}"#,
                "[".repeat(depth),
                "]".repeat(depth)
            )
        };
        assert_eq!(scan_id(&deep(5000)), ScannedId::Found(json!(7000000)));
        let after = format!(
            r#"{{"params":{}{},"id":"s-1"}}"#,
            "[".repeat(300),
            "]".repeat(300)
        );
        assert_eq!(scan_id(&after), ScannedId::Found(json!("s-1")));
        let tricky = r#"{"x":"a \" , } ] \\","id" : -4, "method":"ping"}"#;
        assert_eq!(scan_id(tricky), ScannedId::Found(json!(-4)));
        assert_eq!(scan_id(r#"{"id":7.5}"#), ScannedId::Found(json!(7.5)));
        assert_eq!(
            scan_id(r#"{"jsonrpc":"2.0","id":70"#),
            ScannedId::Unreadable
        );
        assert_eq!(scan_id(r#"{"jsonrpc":"2.0","#), ScannedId::Unreadable);
        assert_eq!(
            scan_id(r#"{"jsonrpc":"2.0","id":null}"#),
            ScannedId::Found(json!(null))
        );
        assert_eq!(scan_id(r#"{"method":"x"}"#), ScannedId::Absent);
        assert_eq!(scan_id("<binary 12 bytes>"), ScannedId::Absent);
        assert_eq!(scan_id("[1,2"), ScannedId::Absent);
    }
}
