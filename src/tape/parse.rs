//! The parser: JSON text into a tape, with serde_json's acceptance rules.

use super::*;

/// Parsing stopped: the reason is in [`Parser::failure`].
pub(super) struct Fail;

pub(super) struct Parser<'p> {
    pub(super) failure: Option<TapeError>,
    pub(super) bytes: &'p [u8],
    pub(super) text: &'p str,
    pub(super) at: usize,
    pub(super) tape: &'p mut Tape,
}

impl Parser<'_> {
    /// Records why parsing stopped; the parser's own results carry only [`Fail`], so that
    /// they stay a word or two and pass in registers.
    pub(super) fn error(&mut self, what: &'static str) -> Fail {
        self.failure = Some(TapeError { what, at: self.at });
        Fail
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    pub(super) fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    pub(super) fn value(&mut self, depth: usize) -> Result<(), Fail> {
        match self.peek() {
            None => Err(self.error("EOF while parsing a value")),
            Some(b'n') => self.literal(b"null", Entry::Null),
            Some(b't') => self.literal(b"true", Entry::Bool(true)),
            Some(b'f') => self.literal(b"false", Entry::Bool(false)),
            Some(b'"') => {
                let span = self.string()?;
                self.tape.entries.push(Entry::Str(span));
                Ok(())
            }
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b'[') => self.array(depth + 1),
            Some(b'{') => self.object(depth + 1),
            Some(_) => Err(self.error("expected value")),
        }
    }

    pub(super) fn literal(&mut self, word: &[u8], entry: Entry) -> Result<(), Fail> {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            self.tape.entries.push(entry);
            Ok(())
        } else {
            Err(self.error("expected ident"))
        }
    }

    pub(super) fn array(&mut self, depth: usize) -> Result<(), Fail> {
        if depth >= DEPTH_LIMIT {
            return Err(self.error("recursion limit exceeded"));
        }
        let slot = self.tape.entries.len();
        self.tape.entries.push(Entry::Null);
        self.at += 1;
        self.skip_space();
        let mut len = 0u32;
        if self.peek() == Some(b']') {
            self.at += 1;
        } else {
            loop {
                self.value(depth)?;
                len += 1;
                self.skip_space();
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        self.skip_space();
                    }
                    Some(b']') => {
                        self.at += 1;
                        break;
                    }
                    None => return Err(self.error("EOF while parsing a list")),
                    Some(_) => return Err(self.error("expected `,` or `]`")),
                }
            }
        }
        self.tape.entries[slot] = Entry::Array {
            len,
            end: self.tape.entries.len() as u32,
        };
        Ok(())
    }

    pub(super) fn object(&mut self, depth: usize) -> Result<(), Fail> {
        if depth >= DEPTH_LIMIT {
            return Err(self.error("recursion limit exceeded"));
        }
        let slot = self.tape.entries.len();
        self.tape.entries.push(Entry::Null);
        let mut members = 0usize;
        let mut sketch = NameSketch::default();
        self.at += 1;
        self.skip_space();
        if self.peek() == Some(b'}') {
            self.at += 1;
        } else {
            loop {
                match self.peek() {
                    Some(b'"') => {}
                    None => return Err(self.error("EOF while parsing an object")),
                    Some(_) => return Err(self.error("key must be a string")),
                }
                let name = self.string()?;
                let tag = name_tag(span_str(self.text, &self.tape.unescaped, name));
                sketch.add(name.len(), tag);
                let key = self.tape.entries.len() as u32;
                members += 1;
                self.tape.entries.push(Entry::Key {
                    name,
                    tag,
                    hidden: false,
                    value: key + 1,
                });
                self.skip_space();
                match self.peek() {
                    Some(b':') => self.at += 1,
                    None => return Err(self.error("EOF while parsing an object")),
                    Some(_) => return Err(self.error("expected `:`")),
                }
                self.skip_space();
                self.value(depth)?;
                self.skip_space();
                match self.peek() {
                    Some(b',') => {
                        self.at += 1;
                        self.skip_space();
                    }
                    Some(b'}') => {
                        self.at += 1;
                        break;
                    }
                    None => return Err(self.error("EOF while parsing an object")),
                    Some(_) => return Err(self.error("expected `,` or `}`")),
                }
            }
        }
        let hidden = if sketch.collision {
            self.merge_repeated_keys(slot)
        } else {
            0
        };
        self.tape.entries[slot] = Entry::Object {
            len: (members - hidden) as u32,
            end: self.tape.entries.len() as u32,
        };
        Ok(())
    }

    /// A name repeated in one object makes one member, as in a `Value` map: at the first
    /// occurrence's place, with the last occurrence's value. The later occurrences are hidden
    /// and the first is pointed at the last one's value. Returns how many were hidden.
    pub(super) fn merge_repeated_keys(&mut self, slot: usize) -> usize {
        // The object's key entries, found by skipping each member's value.
        self.tape.keys.clear();
        let mut key = slot + 1;
        while key + 1 < self.tape.entries.len() {
            self.tape.keys.push(key as u32);
            key = match self.tape.entries[key + 1] {
                Entry::Array { end, .. } | Entry::Object { end, .. } => end as usize,
                _ => key + 2,
            };
        }
        let keys = &self.tape.keys[..];
        let name = |index: u32| match self.tape.entries[index as usize] {
            Entry::Key { name, .. } => span_str(self.text, &self.tape.unescaped, name),
            _ => "",
        };
        // (first occurrence, last occurrence, every later one hidden)
        let mut merges: Vec<(u32, u32, Vec<u32>)> = Vec::new();
        if keys.len() <= PAIRWISE_KEYS {
            for (i, &first) in keys.iter().enumerate() {
                if keys[..i]
                    .iter()
                    .any(|&earlier| name(earlier) == name(first))
                {
                    continue;
                }
                let later: Vec<u32> = keys[i + 1..]
                    .iter()
                    .copied()
                    .filter(|&k| name(k) == name(first))
                    .collect();
                if let Some(&last) = later.last() {
                    merges.push((first, last, later));
                }
            }
        } else {
            let mut sorted: Vec<(&str, u32)> = keys.iter().map(|&k| (name(k), k)).collect();
            sorted.sort_unstable();
            for group in sorted.chunk_by(|a, b| a.0 == b.0) {
                if let [(_, first), later @ ..] = group {
                    if let Some(&(_, last)) = later.last() {
                        merges.push((*first, last, later.iter().map(|&(_, k)| k).collect()));
                    }
                }
            }
        }
        let mut hidden_count = 0;
        for (first, last, later) in merges {
            if let Entry::Key { value, .. } = &mut self.tape.entries[first as usize] {
                *value = last + 1;
            }
            for index in later {
                if let Entry::Key { hidden, .. } = &mut self.tape.entries[index as usize] {
                    *hidden = true;
                    hidden_count += 1;
                }
            }
        }
        hidden_count
    }

    /// Parses a string starting at its opening quote.
    pub(super) fn string(&mut self) -> Result<Span, Fail> {
        self.at += 1;
        let start = self.at;
        self.skip_plain();
        loop {
            let Some(&byte) = self.bytes.get(self.at) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match byte {
                b'"' => {
                    let span = Span::plain(start, self.at - start);
                    self.at += 1;
                    return Ok(span);
                }
                b'\\' => return self.escaped_string(start),
                0..=0x1f => {
                    return Err(self.error("control character (\\u0000-\\u001F) in a string"))
                }
                _ => self.at += 1,
            }
        }
    }

    /// Skips string bytes that need no attention (anything but `"`, `\\` and control
    /// characters) eight at a time.
    pub(super) fn skip_plain(&mut self) {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        let has_zero = |word: u64| word.wrapping_sub(ONES) & !word & HIGHS;
        while let Some(chunk) = self.bytes.get(self.at..self.at + 8) {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(chunk);
            let word = u64::from_le_bytes(bytes);
            let special = has_zero(word ^ (ONES * u64::from(b'"')))
                | has_zero(word ^ (ONES * u64::from(b'\\')))
                // bytes below 0x20 (a byte of 0x80 or more cannot pass for one: `& !word`)
                | (word.wrapping_sub(ONES * 0x20) & !word & HIGHS);
            if special != 0 {
                return;
            }
            self.at += 8;
        }
    }

    /// The rest of a string that has escapes, from `start` (its first byte), unescaped into
    /// the tape's buffer.
    pub(super) fn escaped_string(&mut self, start: usize) -> Result<Span, Fail> {
        let out_start = self.tape.unescaped.len();
        let mut run = start;
        loop {
            let Some(&byte) = self.bytes.get(self.at) else {
                return Err(self.error("EOF while parsing a string"));
            };
            match byte {
                b'"' => {
                    self.tape.unescaped.push_str(&self.text[run..self.at]);
                    self.at += 1;
                    return Ok(Span::unescaped(
                        out_start,
                        self.tape.unescaped.len() - out_start,
                    ));
                }
                b'\\' => {
                    self.tape.unescaped.push_str(&self.text[run..self.at]);
                    self.at += 1;
                    self.escape()?;
                    run = self.at;
                }
                0..=0x1f => {
                    return Err(self.error("control character (\\u0000-\\u001F) in a string"))
                }
                _ => self.at += 1,
            }
        }
    }

    /// One escape, after its backslash.
    pub(super) fn escape(&mut self) -> Result<(), Fail> {
        let Some(&byte) = self.bytes.get(self.at) else {
            return Err(self.error("EOF while parsing a string"));
        };
        self.at += 1;
        let simple = match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let unit = self.hex4()?;
                let code = match unit {
                    0xDC00..=0xDFFF => {
                        return Err(self.error("lone leading surrogate in hex escape"))
                    }
                    0xD800..=0xDBFF => {
                        if self.bytes.get(self.at..self.at + 2) != Some(b"\\u") {
                            return Err(self.error("unexpected end of hex escape"));
                        }
                        self.at += 2;
                        let low = self.hex4()?;
                        if !(0xDC00..=0xDFFF).contains(&low) {
                            return Err(self.error("lone leading surrogate in hex escape"));
                        }
                        0x10000 + ((u32::from(unit) - 0xD800) << 10) + (u32::from(low) - 0xDC00)
                    }
                    other => u32::from(other),
                };
                match char::from_u32(code) {
                    Some(c) => c,
                    None => return Err(self.error("invalid unicode code point")),
                }
            }
            _ => return Err(self.error("invalid escape")),
        };
        self.tape.unescaped.push(simple);
        Ok(())
    }

    pub(super) fn hex4(&mut self) -> Result<u16, Fail> {
        let Some(digits) = self.bytes.get(self.at..self.at + 4) else {
            self.at = self.bytes.len();
            return Err(self.error("EOF while parsing a string"));
        };
        let mut unit = 0u16;
        for &digit in digits {
            let value = match digit {
                b'0'..=b'9' => digit - b'0',
                b'a'..=b'f' => digit - b'a' + 10,
                b'A'..=b'F' => digit - b'A' + 10,
                _ => return Err(self.error("invalid escape")),
            };
            unit = unit * 16 + u16::from(value);
        }
        self.at += 4;
        Ok(unit)
    }

    pub(super) fn digits(&mut self) -> usize {
        let from = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - from
    }

    pub(super) fn number(&mut self) -> Result<(), Fail> {
        let from = self.at;
        let negative = self.peek() == Some(b'-');
        if negative {
            self.at += 1;
        }
        let int_from = self.at;
        match self.peek() {
            Some(b'0') => {
                self.at += 1;
                if let Some(b'0'..=b'9') = self.peek() {
                    return Err(self.error("invalid number"));
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return Err(self.error("invalid number")),
        }
        let int_to = self.at;
        let mut fractional = false;
        if self.peek() == Some(b'.') {
            self.at += 1;
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
            fractional = true;
        }
        if let Some(b'e' | b'E') = self.peek() {
            self.at += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.at += 1;
            }
            if self.digits() == 0 {
                return Err(self.error("invalid number"));
            }
            fractional = true;
        }
        let entry = if fractional {
            None
        } else {
            integer(&self.bytes[int_from..int_to], negative)
        };
        let entry = match entry {
            Some(entry) => entry,
            None => match self.text[from..self.at].parse::<f64>() {
                Ok(float) if float.is_finite() => Entry::Float(float),
                _ => return Err(self.error("number out of range")),
            },
        };
        self.tape.entries.push(entry);
        Ok(())
    }
}

/// An integer literal's entry, as serde_json reads it (`None`: it only fits a float).
pub(super) fn integer(digits: &[u8], negative: bool) -> Option<Entry> {
    let mut magnitude: u64 = 0;
    for &digit in digits {
        magnitude = magnitude
            .checked_mul(10)?
            .checked_add(u64::from(digit - b'0'))?;
    }
    if !negative {
        return Some(Entry::Uint(magnitude));
    }
    // serde_json: `-0` is the float -0.0; below i64::MIN is a float.
    let value = (magnitude as i64).wrapping_neg();
    if magnitude == 0 || value >= 0 {
        return None;
    }
    Some(Entry::Int(value))
}

/// A name's first and last byte: two names that differ nearly always differ here, which
/// spares a byte comparison for every member a lookup passes.
pub(super) fn name_tag(name: &str) -> u16 {
    let bytes = name.as_bytes();
    let first = bytes.first().copied().unwrap_or(0);
    let last = bytes.last().copied().unwrap_or(0);
    u16::from_le_bytes([first, last])
}

pub(super) fn span_str<'a>(text: &'a str, unescaped: &'a str, span: Span) -> &'a str {
    let start = span.start();
    let end = start + span.len();
    let source = if span.is_unescaped() { unescaped } else { text };
    source.get(start..end).unwrap_or_default()
}
