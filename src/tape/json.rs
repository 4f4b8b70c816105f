//! The tape as a `jsonschema` instance representation, so schemas validate it directly.

use super::*;

/// A number of a tape.
#[derive(Debug, Clone, Copy)]
pub enum TapeNumber {
    Uint(u64),
    Int(i64),
    Float(f64),
}

impl TapeNumber {
    pub(super) fn to_serde(self) -> Number {
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
