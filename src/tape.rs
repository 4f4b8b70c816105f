//! A parsed JSON document as a flat tape of entries that borrow from the text.
//!
//! The always-on checks look at every frame of every connection. Parsing each frame into a
//! `serde_json::Value` allocates every string, array and object (and hashes every key, with
//! `preserve_order`); on the offline re-check that was half the time. A [`Tape`] is parsed
//! into a buffer that is reused frame after frame: strings without escapes point into the
//! text, and containers record where they end (so a member lookup skips whole subtrees).
//! Schema validation runs on the tape directly ([`TapeJson`] is a `jsonschema` instance
//! representation), and so does typed decoding (a [`Node`] is a serde `Deserializer`).
//!
//! The parser accepts exactly what `serde_json::from_str::<Value>` accepts (same nesting
//! limit, same rules on surrogates, control characters and numbers) and a tape converts to
//! the same `Value` (a repeated key keeps the last value, as a `Value` map does);
//! `tests/tape.rs` checks both against serde_json on generated and mutated documents.

use std::borrow::Cow;

use jsonschema::json::{Array, Json, JsonNumber, Node as JsonNode, NodeIdentity, Object};
use jsonschema::JsonType;
use serde_json::{Map, Number, Value};

/// serde_json's nesting limit: the 128th nested container is an error.
const DEPTH_LIMIT: usize = 128;

/// Objects up to this many members are checked for repeated keys pairwise; larger ones by
/// sorting their keys.
const PAIRWISE_KEYS: usize = 16;

/// Where a string's bytes are: in the document text, or (after unescaping) in the tape's own
/// buffer. One word (start in the low half, length in the high half, its top bit saying
/// "unescaped"): the parser returns one per string, and a word comes back in a register
/// where a struct of two halves would go through memory (profiles showed that stall).
#[derive(Debug, Clone, Copy)]
struct Span(u64);

impl Span {
    const UNESCAPED: u32 = 1 << 31;

    fn new(start: usize, len: u32) -> Span {
        Span(u64::from(start as u32) | (u64::from(len) << 32))
    }

    fn plain(start: usize, len: usize) -> Span {
        Span::new(start, len as u32)
    }

    fn unescaped(start: usize, len: usize) -> Span {
        Span::new(start, len as u32 | Span::UNESCAPED)
    }

    fn start(self) -> usize {
        (self.0 as u32) as usize
    }

    fn len(self) -> usize {
        ((self.0 >> 32) as u32 & !Span::UNESCAPED) as usize
    }

    fn is_unescaped(self) -> bool {
        (self.0 >> 32) as u32 & Span::UNESCAPED != 0
    }
}

#[derive(Debug, Clone, Copy)]
enum Entry {
    Null,
    Bool(bool),
    Uint(u64),
    Int(i64),
    Float(f64),
    Str(Span),
    /// An object member's name; its value is the entry at `value` (the next one, unless a
    /// later member repeats the name: see [`Parser::merge_repeated_keys`]). `hidden` when an
    /// earlier member has the same name.
    Key {
        name: Span,
        /// [`name_tag`] of the name: compared before the bytes.
        tag: u16,
        hidden: bool,
        value: u32,
    },
    /// `end`: index of the entry after the container's last one.
    Array {
        len: u32,
        end: u32,
    },
    /// `len` counts visible members.
    Object {
        len: u32,
        end: u32,
    },
}

/// Why a text is not one JSON value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} at byte {at}")]
pub struct TapeError {
    pub what: &'static str,
    pub at: usize,
}

/// A reusable parse buffer. [`Tape::parse`] fills it from a text and returns the document's
/// root; the next parse reuses the allocations.
#[derive(Debug, Default, Clone)]
pub struct Tape {
    entries: Vec<Entry>,
    unescaped: String,
    /// Key entry indices of an object whose names are being compared.
    keys: Vec<u32>,
}

impl Tape {
    /// Parses `text` (one JSON value, surrounded by optional whitespace).
    pub fn parse<'t>(&'t mut self, text: &'t str) -> Result<Node<'t>, TapeError> {
        self.entries.clear();
        self.unescaped.clear();
        self.keys.clear();
        // Offsets are 31 bits (see `Span`).
        if text.len() >= Span::UNESCAPED as usize {
            return Err(TapeError {
                what: "document of 2 GiB or more",
                at: 0,
            });
        }
        let mut parser = Parser {
            failure: None,
            bytes: text.as_bytes(),
            text,
            at: 0,
            tape: self,
        };
        let failed = |parser: Parser<'_>| {
            Err(parser.failure.unwrap_or(TapeError {
                what: "invalid JSON",
                at: 0,
            }))
        };
        parser.skip_space();
        if parser.value(0).is_err() {
            return failed(parser);
        }
        parser.skip_space();
        if parser.at != parser.bytes.len() {
            parser.error("trailing characters");
            return failed(parser);
        }
        Ok(Node {
            tape: self,
            text,
            index: 0,
        })
    }

    /// A one-entry tape holding `text` as a string (what `propertyNames` validates).
    fn single_string(&mut self, len: usize) {
        self.entries.clear();
        self.unescaped.clear();
        self.entries.push(Entry::Str(Span::plain(
            0,
            len.min(Span::UNESCAPED as usize - 1),
        )));
    }
}

/// Nearly every object has distinct member names: a 64-bit sketch of (length, first and
/// last byte) of the names proves that without comparing them; only a collision makes the
/// parser compare names ([`Parser::merge_repeated_keys`]).
#[derive(Default)]
struct NameSketch {
    bits: u64,
    collision: bool,
}

impl NameSketch {
    fn add(&mut self, len: usize, tag: u16) {
        let mix =
            len ^ usize::from(tag & 0xff).wrapping_mul(7) ^ usize::from(tag >> 8).wrapping_mul(31);
        let bit = 1u64 << (mix % 64);
        self.collision |= self.bits & bit != 0;
        self.bits |= bit;
    }
}

/// Parsing stopped: the reason is in [`Parser::failure`].
struct Fail;

struct Parser<'p> {
    failure: Option<TapeError>,
    bytes: &'p [u8],
    text: &'p str,
    at: usize,
    tape: &'p mut Tape,
}

impl Parser<'_> {
    /// Records why parsing stopped; the parser's own results carry only [`Fail`], so that
    /// they stay a word or two and pass in registers.
    fn error(&mut self, what: &'static str) -> Fail {
        self.failure = Some(TapeError { what, at: self.at });
        Fail
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.at).copied()
    }

    fn skip_space(&mut self) {
        while let Some(b' ' | b'\n' | b'\t' | b'\r') = self.peek() {
            self.at += 1;
        }
    }

    fn value(&mut self, depth: usize) -> Result<(), Fail> {
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

    fn literal(&mut self, word: &[u8], entry: Entry) -> Result<(), Fail> {
        if self.bytes[self.at..].starts_with(word) {
            self.at += word.len();
            self.tape.entries.push(entry);
            Ok(())
        } else {
            Err(self.error("expected ident"))
        }
    }

    fn array(&mut self, depth: usize) -> Result<(), Fail> {
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

    fn object(&mut self, depth: usize) -> Result<(), Fail> {
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
    fn merge_repeated_keys(&mut self, slot: usize) -> usize {
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
    fn string(&mut self) -> Result<Span, Fail> {
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
    fn skip_plain(&mut self) {
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
    fn escaped_string(&mut self, start: usize) -> Result<Span, Fail> {
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
    fn escape(&mut self) -> Result<(), Fail> {
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

    fn hex4(&mut self) -> Result<u16, Fail> {
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

    fn digits(&mut self) -> usize {
        let from = self.at;
        while let Some(b'0'..=b'9') = self.peek() {
            self.at += 1;
        }
        self.at - from
    }

    fn number(&mut self) -> Result<(), Fail> {
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
fn integer(digits: &[u8], negative: bool) -> Option<Entry> {
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
fn name_tag(name: &str) -> u16 {
    let bytes = name.as_bytes();
    let first = bytes.first().copied().unwrap_or(0);
    let last = bytes.last().copied().unwrap_or(0);
    u16::from_le_bytes([first, last])
}

fn span_str<'a>(text: &'a str, unescaped: &'a str, span: Span) -> &'a str {
    let start = span.start();
    let end = start + span.len();
    let source = if span.is_unescaped() { unescaped } else { text };
    source.get(start..end).unwrap_or_default()
}

/// One value of a parsed document: a cheap copyable handle. The absent member
/// ([`Node::member`] of a missing name) behaves as `null` the way indexing a `Value` does.
#[derive(Clone, Copy)]
pub struct Node<'t> {
    tape: &'t Tape,
    text: &'t str,
    index: u32,
}

impl std::fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_value())
    }
}

/// Index of the absent node.
const ABSENT: u32 = u32::MAX;

impl<'t> Node<'t> {
    fn entry(&self) -> Option<Entry> {
        self.tape.entries.get(self.index as usize).copied()
    }

    fn at(&self, index: u32) -> Node<'t> {
        Node { index, ..*self }
    }

    fn absent(&self) -> Node<'t> {
        self.at(ABSENT)
    }

    fn span_str(&self, span: Span) -> &'t str {
        span_str(self.text, &self.tape.unescaped, span)
    }

    /// Index of the entry after this value's last one.
    fn end(&self) -> u32 {
        match self.entry() {
            Some(Entry::Array { end, .. } | Entry::Object { end, .. }) => end,
            _ => self.index + 1,
        }
    }

    /// Whether this is a member that exists (not [`Node::member`] of a missing name).
    pub fn exists(&self) -> bool {
        self.index != ABSENT
    }

    pub fn is_null(&self) -> bool {
        matches!(self.entry(), None | Some(Entry::Null))
    }

    pub fn is_object(&self) -> bool {
        matches!(self.entry(), Some(Entry::Object { .. }))
    }

    pub fn is_array(&self) -> bool {
        matches!(self.entry(), Some(Entry::Array { .. }))
    }

    pub fn is_string(&self) -> bool {
        matches!(self.entry(), Some(Entry::Str(_)))
    }

    pub fn as_str(&self) -> Option<&'t str> {
        match self.entry() {
            Some(Entry::Str(span)) => Some(self.span_str(span)),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self.entry() {
            Some(Entry::Bool(b)) => Some(b),
            _ => None,
        }
    }

    pub fn as_u64(&self) -> Option<u64> {
        match self.entry() {
            Some(Entry::Uint(n)) => Some(n),
            _ => None,
        }
    }

    /// Like `Value::as_i64`: integers that fit.
    pub fn as_i64(&self) -> Option<i64> {
        match self.entry() {
            Some(Entry::Uint(n)) => i64::try_from(n).ok(),
            Some(Entry::Int(n)) => Some(n),
            _ => None,
        }
    }

    pub fn is_i64(&self) -> bool {
        self.as_i64().is_some()
    }

    /// The member `name` of an object (the absent node when there is none, or when this is
    /// not an object). Names are compared by length before their bytes: this runs a dozen
    /// times per frame.
    pub fn member(&self, name: &str) -> Node<'t> {
        let entries = &self.tape.entries;
        let Some(&Entry::Object { end, .. }) = entries.get(self.index as usize) else {
            return self.absent();
        };
        let wanted = name_tag(name);
        let end = (end as usize).min(entries.len());
        let mut key = self.index as usize + 1;
        while key + 1 < end {
            let after_value = match entries[key + 1] {
                Entry::Array { end, .. } | Entry::Object { end, .. } => end as usize,
                _ => key + 2,
            };
            if let Entry::Key {
                name: span,
                tag,
                hidden: false,
                value,
            } = entries[key]
            {
                if tag == wanted && span.len() == name.len() && self.span_str(span) == name {
                    return self.at(value);
                }
            }
            key = after_value;
        }
        self.absent()
    }

    /// The visible members of an object, in document order (nothing for other values).
    pub fn members(&self) -> Members<'t> {
        let (next, end) = match self.entry() {
            Some(Entry::Object { end, .. }) => (self.index + 1, end),
            _ => (0, 0),
        };
        Members {
            node: *self,
            next,
            end,
        }
    }

    /// The elements of an array (nothing for other values).
    pub fn elements(&self) -> Elements<'t> {
        let (next, left) = match self.entry() {
            Some(Entry::Array { len, .. }) => (self.index + 1, len),
            _ => (0, 0),
        };
        Elements {
            node: *self,
            next,
            left,
        }
    }

    /// The number of members or elements (0 for other values).
    pub fn len(&self) -> usize {
        match self.entry() {
            Some(Entry::Array { len, .. } | Entry::Object { len, .. }) => len as usize,
            _ => 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value as a `serde_json::Value` (for the paths that keep one: reports, snapshots,
    /// violations).
    pub fn to_value(&self) -> Value {
        match self.entry() {
            None | Some(Entry::Null) | Some(Entry::Key { .. }) => Value::Null,
            Some(Entry::Bool(b)) => Value::Bool(b),
            Some(Entry::Uint(n)) => Value::from(n),
            Some(Entry::Int(n)) => Value::from(n),
            Some(Entry::Float(f)) => Number::from_f64(f).map_or(Value::Null, Value::Number),
            Some(Entry::Str(span)) => Value::String(self.span_str(span).to_owned()),
            Some(Entry::Array { .. }) => {
                Value::Array(self.elements().map(|e| e.to_value()).collect())
            }
            Some(Entry::Object { .. }) => {
                let mut map = Map::with_capacity(self.len());
                for (key, value) in self.members() {
                    map.insert(key.to_owned(), value.to_value());
                }
                Value::Object(map)
            }
        }
    }

    /// JSON equality with `value`, numbers compared by value (`1` equals `1.0`).
    pub fn equals(&self, value: &Value) -> bool {
        match (self.entry(), value) {
            (None | Some(Entry::Null), Value::Null) => true,
            (Some(Entry::Bool(a)), Value::Bool(b)) => a == *b,
            (Some(Entry::Str(span)), Value::String(s)) => self.span_str(span) == s,
            (Some(Entry::Uint(_) | Entry::Int(_) | Entry::Float(_)), Value::Number(n)) => {
                self.number().is_some_and(|m| m.as_f64() == n.as_f64())
            }
            (Some(Entry::Array { .. }), Value::Array(items)) => {
                self.len() == items.len() && self.elements().zip(items).all(|(a, b)| a.equals(b))
            }
            (Some(Entry::Object { .. }), Value::Object(map)) => {
                self.len() == map.len()
                    && self
                        .members()
                        .all(|(key, a)| map.get(key).is_some_and(|b| a.equals(b)))
            }
            _ => false,
        }
    }

    fn number(&self) -> Option<TapeNumber> {
        match self.entry() {
            Some(Entry::Uint(n)) => Some(TapeNumber::Uint(n)),
            Some(Entry::Int(n)) => Some(TapeNumber::Int(n)),
            Some(Entry::Float(f)) => Some(TapeNumber::Float(f)),
            _ => None,
        }
    }

    /// Every string in the value and every member named `name`, in document order, in one
    /// pass over the entries (no recursion): what the checks that look at everything scan.
    /// Hidden repeats of a member are included. Names are matched by tag and length before
    /// their bytes, as in [`Node::member`]: this visits every entry of every frame.
    pub fn scan(&self, name: &'t str) -> impl Iterator<Item = Scanned<'t>> + 't {
        let node = *self;
        let wanted = name_tag(name);
        (self.index..self.end()).filter_map(move |index| match node.tape.entries[index as usize] {
            Entry::Str(span) => Some(Scanned::String {
                index,
                text: node.span_str(span),
            }),
            Entry::Key {
                name: span, tag, ..
            } if tag == wanted && span.len() == name.len() && node.span_str(span) == name => {
                Some(Scanned::Member {
                    value: node.at(index + 1),
                })
            }
            _ => None,
        })
    }

    /// The JSON pointer from this value to the value at entry `target` (inside it).
    pub fn pointer_to(&self, target: u32) -> String {
        let mut pointer = String::new();
        let mut current = *self;
        while current.index != target {
            let inside = |n: &Node<'_>| n.index <= target && target < n.end();
            if current.is_object() {
                let Some((key, value)) = current.members().find(|(_, v)| inside(v)) else {
                    break;
                };
                pointer.push('/');
                pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                current = value;
            } else if current.is_array() {
                let Some((i, element)) = current.elements().enumerate().find(|(_, e)| inside(e))
                else {
                    break;
                };
                pointer.push_str(&format!("/{i}"));
                current = element;
            } else {
                break;
            }
        }
        pointer
    }

    /// The tape index of this value (what [`Scanned::String`] reports, for [`Node::pointer_to`]).
    pub fn index(&self) -> u32 {
        self.index
    }
}

/// What [`Node::scan`] passes.
#[derive(Debug, Clone, Copy)]
pub enum Scanned<'t> {
    /// A string value; `index` locates it for [`Node::pointer_to`].
    String { index: u32, text: &'t str },
    /// The value of a member with the name scanned for.
    Member { value: Node<'t> },
}

/// Members of an object: (name, value).
#[derive(Clone)]
pub struct Members<'t> {
    node: Node<'t>,
    next: u32,
    end: u32,
}

impl<'t> Iterator for Members<'t> {
    type Item = (&'t str, Node<'t>);

    fn next(&mut self) -> Option<Self::Item> {
        while self.next < self.end {
            let key = self.next;
            self.next = self.node.at(key + 1).end();
            if let Some(Entry::Key {
                name,
                hidden: false,
                value,
                ..
            }) = self.node.at(key).entry()
            {
                return Some((self.node.span_str(name), self.node.at(value)));
            }
        }
        None
    }
}

/// Elements of an array.
#[derive(Clone)]
pub struct Elements<'t> {
    node: Node<'t>,
    next: u32,
    left: u32,
}

impl<'t> Iterator for Elements<'t> {
    type Item = Node<'t>;

    fn next(&mut self) -> Option<Node<'t>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let element = self.node.at(self.next);
        self.next = element.end();
        Some(element)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left as usize, Some(self.left as usize))
    }
}

/// A number of a tape.
#[derive(Debug, Clone, Copy)]
pub enum TapeNumber {
    Uint(u64),
    Int(i64),
    Float(f64),
}

impl TapeNumber {
    fn to_serde(self) -> Number {
        match self {
            TapeNumber::Uint(n) => Number::from(n),
            TapeNumber::Int(n) => Number::from(n),
            TapeNumber::Float(f) => Number::from_f64(f).unwrap_or_else(|| Number::from(0)),
        }
    }
}

impl JsonNumber for TapeNumber {
    fn as_u64(&self) -> Option<u64> {
        match *self {
            TapeNumber::Uint(n) => Some(n),
            _ => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match *self {
            TapeNumber::Uint(n) => i64::try_from(n).ok(),
            TapeNumber::Int(n) => Some(n),
            TapeNumber::Float(_) => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        Some(match *self {
            TapeNumber::Uint(n) => n as f64,
            TapeNumber::Int(n) => n as f64,
            TapeNumber::Float(f) => f,
        })
    }

    fn as_str(&self) -> Cow<'_, str> {
        Cow::Owned(self.to_serde().to_string())
    }

    fn to_number(&self) -> Cow<'_, Number> {
        Cow::Owned(self.to_serde())
    }

    fn is_integer(&self) -> bool {
        match *self {
            TapeNumber::Uint(_) | TapeNumber::Int(_) => true,
            TapeNumber::Float(f) => f.fract() == 0.0,
        }
    }

    fn is_written_as_integer(&self) -> bool {
        !matches!(self, TapeNumber::Float(_))
    }
}

/// The `jsonschema` representation of tape nodes.
pub struct TapeJson;

impl Json for TapeJson {
    type Node<'a> = Node<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = Tape;

    // A lookup is a scan of the members (no hashing), so a members pass pays off early.
    const KEYS_PER_LOOKUP: usize = 4;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>(buffer: &mut Tape, string: &str, f: impl FnOnce(Node<'_>) -> T) -> T {
        buffer.single_string(string.len());
        f(Node {
            tape: buffer,
            text: string,
            index: 0,
        })
    }
}

impl<'a> JsonNode<'a, TapeJson> for Node<'a> {
    type Object = Node<'a>;
    type Array = Node<'a>;
    type Number = TapeNumber;

    fn as_object(&self) -> Option<Node<'a>> {
        self.is_object().then_some(*self)
    }

    fn as_array(&self) -> Option<Node<'a>> {
        self.is_array().then_some(*self)
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        Node::as_str(self).map(Cow::Borrowed)
    }

    fn as_number(&self) -> Option<TapeNumber> {
        self.number()
    }

    fn as_boolean(&self) -> Option<bool> {
        self.as_bool()
    }

    fn is_null(&self) -> bool {
        Node::is_null(self)
    }

    fn json_type(&self) -> JsonType {
        match self.entry() {
            None | Some(Entry::Null) | Some(Entry::Key { .. }) => JsonType::Null,
            Some(Entry::Bool(_)) => JsonType::Boolean,
            Some(Entry::Uint(_) | Entry::Int(_) | Entry::Float(_)) => JsonType::Number,
            Some(Entry::Str(_)) => JsonType::String,
            Some(Entry::Array { .. }) => JsonType::Array,
            Some(Entry::Object { .. }) => JsonType::Object,
        }
    }

    fn equals_value(&self, expected: &Value) -> bool {
        match self.entry() {
            // `const` / `enum` on strings: no `Value` built.
            Some(Entry::Str(span)) => expected.as_str() == Some(self.span_str(span)),
            _ => jsonschema::json::cmp::equal(&self.to_value(), expected),
        }
    }

    fn to_value(&self) -> Cow<'a, Value> {
        Cow::Owned(Node::to_value(self))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::tagged(
            std::ptr::from_ref::<Tape>(self.tape) as usize,
            self.index,
        ))
    }
}

impl<'a> Object<'a, TapeJson> for Node<'a> {
    type Node = Node<'a>;
    type MemberName = &'a str;
    type MembersIter = Members<'a>;

    fn len(&self) -> usize {
        Node::len(self)
    }

    fn get(&self, key: &Box<str>) -> Option<Node<'a>> {
        Some(self.member(key)).filter(Node::exists)
    }

    fn members(&self) -> Members<'a> {
        Node::members(self)
    }
}

impl<'a> Array<'a, TapeJson> for Node<'a> {
    type Node = Node<'a>;
    type ElementsIter = Elements<'a>;

    fn len(&self) -> usize {
        Node::len(self)
    }

    fn elements(&self) -> Elements<'a> {
        Node::elements(self)
    }
}

/// Typed decoding straight from a tape (a reducer action, a snapshot state), with the
/// verdicts `serde_json::Value`'s own deserializer gives: no second pass over the text.
mod decode {
    use serde::de::{self, IntoDeserializer, Visitor};
    use serde_json::Error;

    use super::{Elements, Entry, Members, Node};

    /// Number methods: a number goes to the visitor as it is (the visitor converts or
    /// refuses), anything else is a type error, as for a `Value`.
    macro_rules! numbers {
        ($($method:ident)*) => {
            $(
                fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
                    match self.entry() {
                        Some(Entry::Uint(n)) => visitor.visit_u64(n),
                        Some(Entry::Int(n)) => visitor.visit_i64(n),
                        Some(Entry::Float(f)) => visitor.visit_f64(f),
                        _ => Err(self.invalid_type(&visitor)),
                    }
                }
            )*
        };
    }

    impl<'de> de::Deserializer<'de> for Node<'de> {
        type Error = Error;

        fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.entry() {
                None | Some(Entry::Null) | Some(Entry::Key { .. }) => visitor.visit_unit(),
                Some(Entry::Bool(b)) => visitor.visit_bool(b),
                Some(Entry::Uint(n)) => visitor.visit_u64(n),
                Some(Entry::Int(n)) => visitor.visit_i64(n),
                Some(Entry::Float(f)) => visitor.visit_f64(f),
                Some(Entry::Str(span)) => visitor.visit_borrowed_str(self.span_str(span)),
                Some(Entry::Array { len, .. }) => {
                    let mut elements = self.elements();
                    let value = visitor.visit_seq(Seq(&mut elements))?;
                    match elements.left {
                        0 => Ok(value),
                        _ => Err(de::Error::invalid_length(
                            len as usize,
                            &"fewer elements in array",
                        )),
                    }
                }
                Some(Entry::Object { len, .. }) => {
                    let mut map = Map {
                        members: self.members(),
                        value: None,
                    };
                    let value = visitor.visit_map(&mut map)?;
                    match map.members.next() {
                        None => Ok(value),
                        Some(_) => Err(de::Error::invalid_length(
                            len as usize,
                            &"fewer elements in map",
                        )),
                    }
                }
            }
        }

        fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if self.is_null() {
                visitor.visit_none()
            } else {
                visitor.visit_some(self)
            }
        }

        fn deserialize_newtype_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            visitor.visit_newtype_struct(self)
        }

        fn deserialize_enum<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _variants: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            if let Some(variant) = self.as_str() {
                return visitor.visit_enum(IntoDeserializer::<Error>::into_deserializer(variant));
            }
            if self.is_object() {
                let mut members = self.members();
                if let (Some((variant, value)), None) = (members.next(), members.next()) {
                    return visitor.visit_enum(Variant { variant, value });
                }
                return Err(de::Error::invalid_value(
                    de::Unexpected::Map,
                    &"map with a single key",
                ));
            }
            Err(de::Error::invalid_type(
                de::Unexpected::Other("a non-string, non-object value"),
                &"string or map",
            ))
        }

        fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.entry() {
                Some(Entry::Bool(b)) => visitor.visit_bool(b),
                _ => Err(self.invalid_type(&visitor)),
            }
        }

        fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.as_str() {
                Some(text) => visitor.visit_borrowed_str(text),
                None => Err(self.invalid_type(&visitor)),
            }
        }

        fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_str(visitor)
        }

        fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_str(visitor)
        }

        fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_str(visitor)
        }

        fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.entry() {
                Some(Entry::Str(_) | Entry::Array { .. }) => self.deserialize_any(visitor),
                _ => Err(self.invalid_type(&visitor)),
            }
        }

        fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.deserialize_bytes(visitor)
        }

        fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.entry() {
                None | Some(Entry::Null) => visitor.visit_unit(),
                _ => Err(self.invalid_type(&visitor)),
            }
        }

        fn deserialize_unit_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            visitor: V,
        ) -> Result<V::Value, Error> {
            self.deserialize_unit(visitor)
        }

        fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.entry() {
                Some(Entry::Array { .. }) => self.deserialize_any(visitor),
                _ => Err(self.invalid_type(&visitor)),
            }
        }

        fn deserialize_tuple<V: Visitor<'de>>(
            self,
            _len: usize,
            visitor: V,
        ) -> Result<V::Value, Error> {
            self.deserialize_seq(visitor)
        }

        fn deserialize_tuple_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _len: usize,
            visitor: V,
        ) -> Result<V::Value, Error> {
            self.deserialize_seq(visitor)
        }

        fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.entry() {
                Some(Entry::Object { .. }) => self.deserialize_any(visitor),
                _ => Err(self.invalid_type(&visitor)),
            }
        }

        fn deserialize_struct<V: Visitor<'de>>(
            self,
            _name: &'static str,
            _fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            match self.entry() {
                Some(Entry::Object { .. } | Entry::Array { .. }) => self.deserialize_any(visitor),
                _ => Err(self.invalid_type(&visitor)),
            }
        }

        fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            visitor.visit_unit()
        }

        numbers! {
            deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_u8
            deserialize_u16 deserialize_u32 deserialize_u64 deserialize_f32 deserialize_f64
        }

        serde::forward_to_deserialize_any! { i128 u128 }
    }

    impl Node<'_> {
        /// What a `Value` of this node reports in a type error.
        fn invalid_type(&self, expected: &dyn de::Expected) -> Error {
            let unexpected = match self.entry() {
                None | Some(Entry::Null) | Some(Entry::Key { .. }) => de::Unexpected::Unit,
                Some(Entry::Bool(b)) => de::Unexpected::Bool(b),
                Some(Entry::Uint(n)) => de::Unexpected::Unsigned(n),
                Some(Entry::Int(n)) => de::Unexpected::Signed(n),
                Some(Entry::Float(f)) => de::Unexpected::Float(f),
                Some(Entry::Str(span)) => de::Unexpected::Str(self.span_str(span)),
                Some(Entry::Array { .. }) => de::Unexpected::Seq,
                Some(Entry::Object { .. }) => de::Unexpected::Map,
            };
            de::Error::invalid_type(unexpected, expected)
        }
    }

    struct Seq<'a, 'de>(&'a mut Elements<'de>);

    impl<'de> de::SeqAccess<'de> for Seq<'_, 'de> {
        type Error = Error;

        fn next_element_seed<T: de::DeserializeSeed<'de>>(
            &mut self,
            seed: T,
        ) -> Result<Option<T::Value>, Error> {
            self.0
                .next()
                .map(|element| seed.deserialize(element))
                .transpose()
        }

        fn size_hint(&self) -> Option<usize> {
            Some(self.0.left as usize)
        }
    }

    struct Map<'de> {
        members: Members<'de>,
        value: Option<Node<'de>>,
    }

    impl<'de> de::MapAccess<'de> for &mut Map<'de> {
        type Error = Error;

        fn next_key_seed<K: de::DeserializeSeed<'de>>(
            &mut self,
            seed: K,
        ) -> Result<Option<K::Value>, Error> {
            let Some((name, value)) = self.members.next() else {
                return Ok(None);
            };
            self.value = Some(value);
            seed.deserialize(de::value::BorrowedStrDeserializer::<Error>::new(name))
                .map(Some)
        }

        fn next_value_seed<V: de::DeserializeSeed<'de>>(
            &mut self,
            seed: V,
        ) -> Result<V::Value, Error> {
            match self.value.take() {
                Some(value) => seed.deserialize(value),
                None => Err(de::Error::custom("value is missing")),
            }
        }
    }

    struct Variant<'de> {
        variant: &'de str,
        value: Node<'de>,
    }

    impl<'de> de::EnumAccess<'de> for Variant<'de> {
        type Error = Error;
        type Variant = Node<'de>;

        fn variant_seed<V: de::DeserializeSeed<'de>>(
            self,
            seed: V,
        ) -> Result<(V::Value, Node<'de>), Error> {
            let variant = seed.deserialize(de::value::BorrowedStrDeserializer::<Error>::new(
                self.variant,
            ))?;
            Ok((variant, self.value))
        }
    }

    impl<'de> de::VariantAccess<'de> for Node<'de> {
        type Error = Error;

        fn unit_variant(self) -> Result<(), Error> {
            de::Deserialize::deserialize(self)
        }

        fn newtype_variant_seed<T: de::DeserializeSeed<'de>>(
            self,
            seed: T,
        ) -> Result<T::Value, Error> {
            seed.deserialize(self)
        }

        fn tuple_variant<V: Visitor<'de>>(
            self,
            _len: usize,
            visitor: V,
        ) -> Result<V::Value, Error> {
            de::Deserializer::deserialize_seq(self, visitor)
        }

        fn struct_variant<V: Visitor<'de>>(
            self,
            _fields: &'static [&'static str],
            visitor: V,
        ) -> Result<V::Value, Error> {
            de::Deserializer::deserialize_map(self, visitor)
        }
    }
}
