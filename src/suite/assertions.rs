//! The document assertions, declared once: what a `response`, `state` or `check` step may
//! assert of the JSON document it looks at (a response, a fresh snapshot's state, a stored
//! value). Each of those steps is an [`Asserting`] step: its own fields beside these, in one
//! flat TOML table.
//!
//! serde's `flatten` drops `deny_unknown_fields` (a flattened table takes any key), and a
//! misspelt assertion must stay a load error naming every field the step knows
//! (tests/formats.rs). So [`Asserting`] deserialises by hand: it splits the table by the
//! field names the two derived parts declare, and names the union when a key is in neither.

use std::collections::BTreeMap;
use std::ops::Deref;

use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// JSON pointer → expected value.
pub type Matches = BTreeMap<String, Value>;

/// What a step asserts of a JSON document; every member is optional and all must hold.
#[derive(Debug, Clone, PartialEq, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Assertions {
    /// Members that must be present (JSON pointers into the document).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub has: Vec<String>,
    /// Members that must be absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lacks: Vec<String>,
    /// Pointer → value equalities.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub equals: Matches,
    /// Pointer → allowed values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub one_of: BTreeMap<String, Vec<Value>>,
    /// Pointer to an array → an element it must contain (partial object match).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub contains: Matches,
    /// Pointer → text the member there must hold: a string's own characters, any other
    /// value's JSON (so a text spread over an array's parts is found in any one of them).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub text_contains: Matches,
    /// Pointer to an array → an element it must not contain (partial object match).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub excludes: Matches,
    /// Pointer → expected array length.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub len: BTreeMap<String, usize>,
    /// Pointer → bits that must all be set (integers, e.g. status flags).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bits_set: BTreeMap<String, u64>,
    /// Pointer → bits that must all be clear.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub bits_clear: BTreeMap<String, u64>,
    /// Pointer → upper bound (numbers).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub at_most: Matches,
    /// Pointer → a number the member there must exceed (e.g. a later `serverSeq`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub above: Matches,
    /// Pointer → a value the member there must differ from (e.g. an empty string).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub differs: Matches,
    /// Pointer to an array → member (a JSON pointer into each element) by which the array
    /// must be sorted in descending order; timestamps compare as instants.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub sorted_desc: BTreeMap<String, String>,
    /// Pointer to an array → members (pointers into each element) that must be ISO 8601
    /// timestamps with a UTC offset (`schema::is_timestamp`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub timestamps: BTreeMap<String, Vec<String>>,
    /// Pointer → [from, to]: the member there must be a timestamp from `from` to `to` seconds
    /// after the moment of the check (a host-computed next occurrence, say).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub instant_within_s: BTreeMap<String, [i64; 2]>,
    /// Pointer → a schedule: the member there must be the schedule's next occurrence, the
    /// first match of its expression in its time zone after the last few seconds
    /// (`checks::schedule`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub next_occurrence: BTreeMap<String, Schedule>,
    /// Pointer → JSON type of the member there, for members whose type the rule is about.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub types: BTreeMap<String, JsonType>,
    /// Pointer to an array → elements (partial object matches) it must hold in this order;
    /// other elements may stand between them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub in_order: BTreeMap<String, Vec<Value>>,
}

/// A five-field cron expression in an IANA time zone, as a schedule trigger holds them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    pub expression: String,
    pub time_zone: String,
}

impl Assertions {
    /// Whether nothing is asserted.
    pub fn is_empty(&self) -> bool {
        self == &Assertions::default()
    }
}

/// A JSON type, as JSON Schema names them (`integer` is a number without a fraction).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum JsonType {
    Null,
    Boolean,
    Integer,
    Number,
    String,
    Array,
    Object,
}

impl JsonType {
    /// Whether `value` is of this type.
    pub fn holds(self, value: &Value) -> bool {
        match self {
            JsonType::Null => value.is_null(),
            JsonType::Boolean => value.is_boolean(),
            JsonType::Integer => value.is_i64() || value.is_u64(),
            JsonType::Number => value.is_number(),
            JsonType::String => value.is_string(),
            JsonType::Array => value.is_array(),
            JsonType::Object => value.is_object(),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            JsonType::Null => "null",
            JsonType::Boolean => "boolean",
            JsonType::Integer => "integer",
            JsonType::Number => "number",
            JsonType::String => "string",
            JsonType::Array => "array",
            JsonType::Object => "object",
        }
    }
}

/// A step that asserts of a document: its own fields (`step`, reached through `Deref`) and
/// the [`Assertions`], side by side in one table.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Asserting<S> {
    #[serde(flatten)]
    pub step: S,
    #[serde(flatten)]
    pub assert: Assertions,
}

impl<S> Deref for Asserting<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.step
    }
}

impl<'de, S: DeserializeOwned> Deserialize<'de> for Asserting<S> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let table = Map::<String, Value>::deserialize(deserializer)?;
        let own_fields = fields_of::<S>();
        let assertion_fields = fields_of::<Assertions>();
        let (mut own, mut assertions) = (Map::new(), Map::new());
        for (key, value) in table {
            if assertion_fields.contains(&key.as_str()) {
                assertions.insert(key, value);
            } else if own_fields.contains(&key.as_str()) {
                own.insert(key, value);
            } else {
                // Leaked once, on the way to a load error that ends the run.
                let known: Vec<&'static str> =
                    own_fields.iter().chain(assertion_fields).copied().collect();
                return Err(de::Error::unknown_field(&key, Vec::leak(known)));
            }
        }
        let step = S::deserialize(Value::Object(own)).map_err(de::Error::custom)?;
        let assert =
            Assertions::deserialize(Value::Object(assertions)).map_err(de::Error::custom)?;
        Ok(Asserting { step, assert })
    }
}

/// The field names a derived `Deserialize` struct declares: the list its derived code hands
/// to `deserialize_struct`, caught by a deserializer that reads nothing.
fn fields_of<T: DeserializeOwned>() -> &'static [&'static str] {
    match T::deserialize(FieldNames) {
        Err(Caught::Fields(fields)) => fields,
        _ => &[],
    }
}

struct FieldNames;

#[derive(Debug)]
enum Caught {
    Fields(&'static [&'static str]),
    Other,
}

impl std::fmt::Display for Caught {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names caught")
    }
}

impl std::error::Error for Caught {}

impl de::Error for Caught {
    fn custom<T: std::fmt::Display>(_: T) -> Self {
        Caught::Other
    }
}

impl<'de> Deserializer<'de> for FieldNames {
    type Error = Caught;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Caught> {
        Err(Caught::Other)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        fields: &'static [&'static str],
        _: V,
    ) -> Result<V::Value, Caught> {
        Err(Caught::Fields(fields))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
        ignored_any
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Deserialize, Serialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Own {
        channel: String,
        #[serde(rename = "as")]
        name: Option<String>,
    }

    #[test]
    fn a_table_splits_into_the_steps_fields_and_its_assertions() {
        let step: Asserting<Own> = serde_json::from_value(serde_json::json!({
            "channel": "c", "as": "n", "has": ["/a"], "types": { "/b": "integer" }
        }))
        .expect("parses");
        assert_eq!(step.channel, "c");
        assert_eq!(step.name.as_deref(), Some("n"));
        assert_eq!(step.assert.has, ["/a"]);
        assert_eq!(step.assert.types["/b"], JsonType::Integer);
        let back = serde_json::to_value(&step).expect("serialises");
        assert_eq!(back["has"], serde_json::json!(["/a"]));
        assert!(back.get("lacks").is_none(), "empty assertions are left out");
    }

    #[test]
    fn an_unknown_key_names_every_field_and_a_missing_one_is_named() {
        let error = serde_json::from_value::<Asserting<Own>>(serde_json::json!({
            "channel": "c", "colour": 1
        }))
        .expect_err("unknown field")
        .to_string();
        assert!(error.contains("unknown field `colour`"), "{error}");
        for field in ["channel", "as", "has", "in_order", "bits_clear"] {
            assert!(error.contains(&format!("`{field}`")), "{field}: {error}");
        }
        let error = serde_json::from_value::<Asserting<Own>>(serde_json::json!({ "has": [] }))
            .expect_err("missing field")
            .to_string();
        assert!(error.contains("missing field `channel`"), "{error}");
    }
}
