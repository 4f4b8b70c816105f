//! Typed decoding straight from a tape (a reducer action, a snapshot state), with the
//! verdicts `serde_json::Value`'s own deserializer gives: no second pass over the text.

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

    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
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

    fn newtype_variant_seed<T: de::DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        seed.deserialize(self)
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
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
