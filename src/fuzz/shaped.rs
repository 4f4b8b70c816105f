//! Structure-aware hostile input, built with `arbitrary` from raw entropy: JSON values with
//! boundary numbers, odd Unicode, oversized strings and deep nesting ([`hostile_value`]),
//! and well-formed JSON-RPC messages for the protocol's own methods whose params members
//! (named by the embedded AHP schemas, generated from the protocol's types) hold such values
//! ([`shaped_message`]). Frames mode sends these next to its byte mutations; the
//! `fuzz/` targets feed the same values to the harness's own parsers.

use std::sync::OnceLock;

use arbitrary::{Arbitrary, Unstructured};
use serde_json::{json, Map, Number, Value};

use crate::checks::frame::SchemaMap;
use crate::schema::EMBEDDED_FILES;

/// Strings that break naive handling: NUL, BOM, bidi overrides, combining marks, joiners,
/// the last code point, line and paragraph separators, escapes, URIs that are almost
/// channels.
pub const ODD_STRINGS: &[&str] = &[
    "",
    "\u{0}",
    "\u{FEFF}",
    "\u{202E}tlsf\u{202C}",
    "e\u{301}\u{301}\u{301}",
    "\u{1F469}\u{200D}\u{1F4BB}",
    "\u{10FFFF}",
    "\u{FFFD}\u{FFFE}\u{FFFF}",
    "\u{2028}\u{2029}",
    "\\\"\\u0000",
    "ahp-root://",
    "ahp-root://../../",
    "ahp-session:/\u{0}",
    "ahp-chat:/%00",
    "ahp-session:/",
    "__proto__",
    "\u{7f}\u{80}\u{9f}",
    "1.0.0",
    "-32700",
];

/// Numbers at the edges of the integer and float ranges a host (or the harness) may map
/// JSON numbers to.
fn boundary_number(u: &mut Unstructured<'_>) -> arbitrary::Result<Value> {
    const INTEGERS: &[i64] = &[
        0,
        1,
        -1,
        i64::MIN,
        i64::MAX,
        i32::MIN as i64,
        i32::MAX as i64 + 1,
        u32::MAX as i64 + 1,
        (1 << 53) + 1,
        -(1 << 53) - 1,
    ];
    const FLOATS: &[f64] = &[
        -0.0,
        0.5,
        1e-7,
        f64::MIN_POSITIVE,
        5e-324,
        f64::MAX,
        f64::MIN,
        9_007_199_254_740_993.0,
        1e21,
    ];
    Ok(match u.int_in_range(0..=3)? {
        0 => json!(*u.choose(INTEGERS)?),
        1 => json!(u64::MAX - u64::from(u.int_in_range(0u8..=2)?)),
        2 => Number::from_f64(*u.choose(FLOATS)?).map_or(Value::Null, Value::Number),
        _ => Number::from_f64(u.arbitrary::<f64>()?).map_or(Value::Null, Value::Number),
    })
}

/// How big [`hostile_value`] may make things.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Longest oversized string, in bytes.
    pub max_string: usize,
    /// Deepest nesting of arrays and objects.
    pub max_depth: usize,
    /// Most elements or members of one container.
    pub max_len: usize,
}

impl Limits {
    /// For in-process fuzz targets: small, so that millions of executions fit.
    pub const SMALL: Limits = Limits {
        max_string: 4096,
        max_depth: 140,
        max_len: 8,
    };
    /// For frames sent to a host: strings up to 1 MiB, nesting past common parser limits.
    pub const FRAMES: Limits = Limits {
        max_string: 1 << 20,
        max_depth: 600,
        max_len: 6,
    };
}

/// A string of `n` repeats of one (possibly multi-byte) odd unit, at most `max` bytes.
fn oversized(u: &mut Unstructured<'_>, max: usize) -> arbitrary::Result<String> {
    let unit = *u.choose(&["x", "\u{0}", "\u{10FFFF}", "e\u{301}", "\\", "\""])?;
    let n = u.int_in_range(1..=max.max(1))? / unit.len();
    Ok(unit.repeat(n.max(1)))
}

fn odd_string(u: &mut Unstructured<'_>, limits: Limits) -> arbitrary::Result<String> {
    Ok(match u.int_in_range(0..=2)? {
        0 => (*u.choose(ODD_STRINGS)?).to_owned(),
        1 => u.arbitrary::<String>()?,
        _ => oversized(u, limits.max_string)?,
    })
}

/// Any JSON value, skewed to what breaks parsers and decoders.
pub fn hostile_value(
    u: &mut Unstructured<'_>,
    limits: Limits,
    depth: usize,
) -> arbitrary::Result<Value> {
    let nested = depth < limits.max_depth;
    Ok(match u.int_in_range(0..=8)? {
        0 => Value::Null,
        1 => Value::Bool(u.arbitrary()?),
        2 | 3 => boundary_number(u)?,
        4 | 5 => Value::String(odd_string(u, limits)?),
        6 if nested => {
            let len = u.int_in_range(0..=limits.max_len)?;
            let mut items = Vec::with_capacity(len);
            for _ in 0..len {
                items.push(hostile_value(u, limits, depth + 1)?);
            }
            Value::Array(items)
        }
        7 if nested => {
            let len = u.int_in_range(0..=limits.max_len)?;
            let mut members = Map::new();
            for _ in 0..len {
                let key = match u.int_in_range(0..=1)? {
                    0 => (*u.choose(ODD_STRINGS)?).to_owned(),
                    _ => u.arbitrary::<String>()?,
                };
                members.insert(key, hostile_value(u, limits, depth + 1)?);
            }
            Value::Object(members)
        }
        8 if nested => {
            // A narrow tower: depth without width.
            let levels = u.int_in_range(1..=limits.max_depth - depth)?;
            let mut value = Value::Null;
            for _ in 0..levels {
                value = Value::Array(vec![value]);
            }
            value
        }
        _ => Value::Null,
    })
}

/// A JSON value built by [`hostile_value`] with [`Limits::SMALL`].
#[derive(Debug, Clone, PartialEq)]
pub struct AnyJson(pub Value);

impl<'a> Arbitrary<'a> for AnyJson {
    fn arbitrary(u: &mut Unstructured<'a>) -> arbitrary::Result<Self> {
        hostile_value(u, Limits::SMALL, 0).map(AnyJson)
    }
}

/// One client→host method of the protocol: its name, whether it is a request (has a
/// result) and the members its params definition names.
#[derive(Debug, Clone)]
pub struct MethodShape {
    pub method: String,
    pub request: bool,
    pub members: Vec<String>,
}

/// Methods that act outside the protocol's state on a real host (files, terminals,
/// automations, changesets): frames mode may run against a user's server, so hostile
/// params never go to these.
const OUTSIDE_EFFECTS: &[&str] = &[
    "resourceWrite",
    "resourceDelete",
    "resourceMove",
    "resourceCopy",
    "resourceMkdir",
    "createTerminal",
    "runAutomation",
    "invokeChangesetOperation",
];

/// Every method with a params definition in the embedded schemas but those of
/// [`OUTSIDE_EFFECTS`], sorted by name.
pub fn method_shapes() -> &'static [MethodShape] {
    static SHAPES: OnceLock<Vec<MethodShape>> = OnceLock::new();
    SHAPES.get_or_init(|| {
        let map = SchemaMap::embedded();
        let docs: Vec<Value> = EMBEDDED_FILES
            .iter()
            .filter_map(|(_, text)| serde_json::from_str(text).ok())
            .collect();
        let mut shapes: Vec<MethodShape> = map
            .params
            .iter()
            .filter(|(method, _)| !OUTSIDE_EFFECTS.contains(&method.as_str()))
            .map(|(method, def)| {
                let properties = docs
                    .iter()
                    .find_map(|doc| doc["$defs"][def.as_str()]["properties"].as_object());
                MethodShape {
                    method: method.clone(),
                    request: map.results.contains_key(method),
                    members: properties
                        .map(|p| p.keys().cloned().collect())
                        .unwrap_or_default(),
                }
            })
            .collect();
        shapes.sort_by(|a, b| a.method.cmp(&b.method));
        shapes
    })
}

/// A well-formed JSON-RPC message for one of the protocol's methods (a request with `id`
/// when the method has a result, else a notification) whose params carry the method's own
/// members, each either left out, a plausible value or a hostile one, plus sometimes an
/// unknown member.
pub fn shaped_message(
    u: &mut Unstructured<'_>,
    id: u64,
    limits: Limits,
) -> arbitrary::Result<Value> {
    let shape = u.choose(method_shapes())?;
    let mut params = Map::new();
    params.insert("channel".into(), json!("ahp-root://"));
    for member in &shape.members {
        match u.int_in_range(0..=2)? {
            0 => {
                params.remove(member);
            }
            1 => {}
            _ => {
                params.insert(member.clone(), hostile_value(u, limits, 1)?);
            }
        }
    }
    if u.ratio(1, 4)? {
        params.insert(odd_string(u, limits)?, hostile_value(u, limits, 1)?);
    }
    let mut message = json!({ "jsonrpc": "2.0", "method": shape.method, "params": params });
    if shape.request {
        message["id"] = json!(id);
    }
    Ok(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_protocol_methods_are_known_with_their_members() {
        let shapes = method_shapes();
        let list = shapes
            .iter()
            .find(|s| s.method == "listSessions")
            .expect("listSessions has params");
        assert!(list.request);
        assert!(list.members.iter().any(|m| m == "limit"), "{list:?}");
        assert!(shapes.iter().any(|s| !s.request), "some notifications");
        assert!(shapes.iter().all(|s| s.method != "resourceDelete"));
    }

    #[test]
    fn shaped_messages_are_json_rpc_objects_of_known_methods() {
        let entropy: Vec<u8> = (0..4096u32)
            .map(|i| i.wrapping_mul(2_654_435_761) as u8)
            .collect();
        let mut u = Unstructured::new(&entropy);
        for id in 0..20 {
            let message = shaped_message(&mut u, id, Limits::SMALL).expect("enough entropy");
            assert_eq!(message["jsonrpc"], "2.0");
            let method = message["method"].as_str().expect("a method");
            assert!(method_shapes().iter().any(|s| s.method == method));
            assert!(message["params"].is_object());
        }
    }
}
