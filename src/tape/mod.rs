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

mod decode;
mod json;
mod node;
mod parse;
mod scan;

pub use json::*;
pub use node::*;
use parse::*;
pub use scan::{scan_id, ScannedId};

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
