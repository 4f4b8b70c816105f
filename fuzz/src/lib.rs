//! What the fuzz targets share: spelling a JSON value as text in the many ways JSON allows.

use arbitrary::Arbitrary;
use serde_json::Value;

/// How to spell a value: whitespace between tokens and escapes in strings, each picked by
/// cycling through the bytes (an empty list: compact and unescaped, as serde_json writes).
#[derive(Debug, Clone, Arbitrary)]
pub struct Spelling {
    spaces: Vec<u8>,
    escapes: Vec<u8>,
}

struct Writer<'s> {
    spelling: &'s Spelling,
    out: String,
    space: usize,
    escape: usize,
}

impl Writer<'_> {
    fn gap(&mut self) {
        let spaces = &self.spelling.spaces;
        if spaces.is_empty() {
            return;
        }
        let pick = spaces[self.space % spaces.len()];
        self.space += 1;
        self.out
            .push_str(["", " ", "\n", "\t", "\r", "  \n\t"][usize::from(pick) % 6]);
    }

    fn string(&mut self, text: &str) {
        self.out.push('"');
        for c in text.chars() {
            let escapes = &self.spelling.escapes;
            let pick = if escapes.is_empty() {
                0
            } else {
                self.escape += 1;
                escapes[(self.escape - 1) % escapes.len()] % 3
            };
            match (c, pick) {
                ('"', _) => self.out.push_str("\\\""),
                ('\\', _) => self.out.push_str("\\\\"),
                (c, 0) if u32::from(c) >= 0x20 => self.out.push(c),
                ('\n', 1) => self.out.push_str("\\n"),
                ('/', 1) => self.out.push_str("\\/"),
                (c, _) => {
                    let mut units = [0u16; 2];
                    for unit in c.encode_utf16(&mut units) {
                        self.out.push_str(&format!("\\u{unit:04X}"));
                    }
                }
            }
        }
        self.out.push('"');
    }

    fn value(&mut self, value: &Value) {
        self.gap();
        match value {
            Value::String(text) => self.string(text),
            Value::Array(items) => {
                self.out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.value(item);
                }
                self.gap();
                self.out.push(']');
            }
            Value::Object(members) => {
                self.out.push('{');
                for (i, (key, item)) in members.iter().enumerate() {
                    if i > 0 {
                        self.out.push(',');
                    }
                    self.gap();
                    self.string(key);
                    self.gap();
                    self.out.push(':');
                    self.value(item);
                }
                self.gap();
                self.out.push('}');
            }
            scalar => self.out.push_str(&scalar.to_string()),
        }
        self.gap();
    }
}

impl Spelling {
    /// `value` as JSON text spelled this way; it parses back to `value`.
    pub fn spell(&self, value: &Value) -> String {
        let mut writer = Writer {
            spelling: self,
            out: String::new(),
            space: 0,
            escape: 0,
        };
        writer.value(value);
        writer.out
    }
}
