//! Reading a tape: nodes, member lookup, iteration, and conversion to `Value`.

use super::*;

/// One value of a parsed document: a cheap copyable handle. The absent member
/// ([`Node::member`] of a missing name) behaves as `null` the way indexing a `Value` does.
#[derive(Clone, Copy)]
pub struct Node<'t> {
    pub(super) tape: &'t Tape,
    pub(super) text: &'t str,
    pub(super) index: u32,
}

impl std::fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.to_value())
    }
}

/// Index of the absent node.
pub(super) const ABSENT: u32 = u32::MAX;

impl<'t> Node<'t> {
    pub(super) fn entry(&self) -> Option<Entry> {
        self.tape.entries.get(self.index as usize).copied()
    }

    pub(super) fn at(&self, index: u32) -> Node<'t> {
        Node { index, ..*self }
    }

    pub(super) fn absent(&self) -> Node<'t> {
        self.at(ABSENT)
    }

    pub(super) fn span_str(&self, span: Span) -> &'t str {
        span_str(self.text, &self.tape.unescaped, span)
    }

    /// Index of the entry after this value's last one.
    pub(super) fn end(&self) -> u32 {
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

    pub(super) fn number(&self) -> Option<TapeNumber> {
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
    pub(super) node: Node<'t>,
    pub(super) next: u32,
    pub(super) end: u32,
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
    pub(super) node: Node<'t>,
    pub(super) next: u32,
    pub(super) left: u32,
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
