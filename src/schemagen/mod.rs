//! JSON Schema generator: turns the AHP 1.0.0 type inventory (`types-1.0.0.json`) into
//! draft 2020-12 schema documents, one file per inventory module, one `$defs` entry per type.
//!
//! Conventions (chosen so that every 1.0.0-valid document validates):
//! * objects are open (no `additionalProperties` on structs);
//! * optional members also accept `null`;
//! * integer widths become `integer` with the bounds of the width, `float64` is `number`;
//! * open enums accept any string (known values are listed under `examples`); closed enums are
//!   `enum`s; the `SessionStatus` bitset accepts any `uint32`;
//! * tagged unions are objects that must carry their tag; each known tag value is checked
//!   strictly against its variant (`if`/`then`), unknown tag values are accepted only when the
//!   union has a catch-all (`unknownVariantPreserved`);
//! * a struct that is the payload of tagged-union variants always carries its discriminator;
//! * untagged unions use `anyOf`;
//! * the members the protocol documents as ISO 8601 timestamps ([`TIMESTAMP_MEMBERS`]) carry
//!   `"format": "date-time"`, and the `Uri` alias carries `"format": "uri"` except on the
//!   members that may hold an RFC 6570 template instead ([`NOT_URI_MEMBERS`]). The type
//!   inventory carries no formats, so they are named here once; the generator refuses a
//!   table entry the inventory does not define.
//!
//! Cross-file references are relative (`state.schema.json#/$defs/X`) and resolve against
//! [`SCHEMA_BASE_URI`], which every document uses as the base of its `$id`.
//!
//! Besides the schema files the generator writes [`INDEX_FILE`], a machine-readable index: the
//! file of every def, the def validating each action type, per-method params/result defs and
//! the state def of every channel kind.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{json, Map, Value};

mod builder;
mod index;

use builder::Builder;
use index::{build_index, check_format_tables};

/// Base URI shared by all generated documents (`$id` = base + file name).
pub const SCHEMA_BASE_URI: &str = "https://schemas.ahpspec.invalid/ahp/1.0.0/";
/// Name of the generated index file.
pub const INDEX_FILE: &str = "index.json";
/// Draft 2020-12 meta-schema URI.
pub const DRAFT_2020_12: &str = "https://json-schema.org/draft/2020-12/schema";

/// Errors raised while turning an inventory into schemas.
#[derive(Debug, thiserror::Error)]
pub enum SchemaGenError {
    /// A required key is missing or has the wrong JSON type.
    #[error("inventory: `{path}` is missing or malformed ({expected})")]
    Malformed {
        path: String,
        expected: &'static str,
    },
    /// A type expression does not parse.
    #[error("inventory: bad type expression `{expr}` at `{path}`")]
    BadTypeExpr { path: String, expr: String },
    /// A type expression names a type the inventory does not define.
    #[error("inventory: unknown type `{name}` referenced at `{path}`")]
    UnknownType { path: String, name: String },
    /// The same type name is defined twice.
    #[error("inventory: type `{0}` is defined more than once")]
    Duplicate(String),
    /// A member named by a format table is not in the inventory (or has another type).
    #[error("format table: `{owner}.{member}` is not a {expected} member of the inventory")]
    UnknownMember {
        owner: String,
        member: String,
        expected: &'static str,
    },
    /// An entry of `actions` has no `StateAction` variant (or vice versa).
    #[error("inventory: action type `{0}` is not consistent between `actions` and `StateAction`")]
    ActionMismatch(String),
    /// Serialising the output failed.
    #[error("serialising schema: {0}")]
    Json(#[from] serde_json::Error),
}

type Result<T> = std::result::Result<T, SchemaGenError>;

/// Which inventory section a type comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Struct,
    Enum,
    Tagged,
    Untagged,
    Alias,
}

/// One named type of the inventory.
#[derive(Debug, Clone)]
struct TypeEntry<'a> {
    kind: Kind,
    module: String,
    body: &'a Value,
}

/// Index of all named types.
struct Types<'a> {
    by_name: BTreeMap<String, TypeEntry<'a>>,
}

fn malformed(path: impl Into<String>, expected: &'static str) -> SchemaGenError {
    SchemaGenError::Malformed {
        path: path.into(),
        expected,
    }
}

fn get_obj<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a Map<String, Value>> {
    v.get(key)
        .and_then(Value::as_object)
        .ok_or_else(|| malformed(format!("{path}.{key}"), "object"))
}

fn get_str<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a str> {
    v.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| malformed(format!("{path}.{key}"), "string"))
}

fn get_bool(v: &Value, key: &str, path: &str) -> Result<bool> {
    v.get(key)
        .and_then(Value::as_bool)
        .ok_or_else(|| malformed(format!("{path}.{key}"), "boolean"))
}

fn get_arr<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a Vec<Value>> {
    v.get(key)
        .and_then(Value::as_array)
        .ok_or_else(|| malformed(format!("{path}.{key}"), "array"))
}

/// The members (owner type, member) whose string values are ISO 8601 timestamps, as the
/// 1.0.0 crate documents them (`ahp-types`: "ISO 8601" on each of these fields; PROTOCOL.md
/// §2, §10.3, §12). They get `"format": "date-time"`; the harness checks that format as "an
/// instant the reference reducer can read" (see `schema::is_timestamp`), not as strict RFC 3339.
pub const TIMESTAMP_MEMBERS: &[(&str, &str)] = &[
    ("ActiveTurn", "startedAt"),
    ("AutomationAfterDateCondition", "date"),
    ("AutomationCancelledRunLifecycle", "completedAt"),
    ("AutomationCancelledRunLifecycle", "createdAt"),
    ("AutomationCancelledRunLifecycle", "startedAt"),
    ("AutomationCompletedRunLifecycle", "completedAt"),
    ("AutomationCompletedRunLifecycle", "createdAt"),
    ("AutomationCompletedRunLifecycle", "startedAt"),
    ("AutomationEntry", "createdAt"),
    ("AutomationEntry", "modifiedAt"),
    ("AutomationEntry", "nextRunAt"),
    ("AutomationFailedRunLifecycle", "completedAt"),
    ("AutomationFailedRunLifecycle", "createdAt"),
    ("AutomationFailedRunLifecycle", "startedAt"),
    ("AutomationPendingRunLifecycle", "createdAt"),
    ("AutomationRunningRunLifecycle", "createdAt"),
    ("AutomationRunningRunLifecycle", "startedAt"),
    ("AutomationTriggeredRunOrigin", "scheduledFor"),
    ("BackgroundShellWork", "startedAt"),
    ("BackgroundSubagentWork", "startedAt"),
    ("ChatState", "modifiedAt"),
    ("ChatSummary", "modifiedAt"),
    ("ChatTurnStartedAction", "startedAt"),
    ("PartialChatSummary", "modifiedAt"),
    ("PartialSessionSummary", "createdAt"),
    ("PartialSessionSummary", "modifiedAt"),
    ("ResourceResolveResult", "ctime"),
    ("ResourceResolveResult", "mtime"),
    ("SessionSummary", "createdAt"),
    ("SessionSummary", "modifiedAt"),
    ("Turn", "startedAt"),
];

/// Type aliases whose values have a format: every `Uri` is an RFC 3986 URI (`ahp-root://`,
/// `ahp-session:/x`, `file:///w` all are).
const ALIAS_FORMATS: &[(&str, &str)] = &[("Uri", "uri")];

/// Members typed `Uri` that may legitimately hold something that is not a URI: the
/// telemetry channels may be RFC 6570 templates (`…{level}`), whose braces RFC 3986 does not
/// allow (`ahp-types` `TelemetryCapabilities`; PROTOCOL.md §2.1). They stay plain strings.
pub const NOT_URI_MEMBERS: &[(&str, &str)] = &[
    ("TelemetryCapabilities", "logs"),
    ("TelemetryCapabilities", "metrics"),
    ("TelemetryCapabilities", "traces"),
];

/// Parsed wire type expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeExpr {
    /// `string`, `boolean`, `float64`, `object`, `any`, or an integer width.
    Primitive(String),
    /// A named inventory type.
    Named(String),
    /// `array<T>`.
    Array(Box<TypeExpr>),
    /// `map<T>`.
    Map(Box<TypeExpr>),
}

const PRIMITIVES: &[&str] = &[
    "string", "boolean", "int32", "int64", "uint32", "uint64", "float64", "object", "any",
];

impl TypeExpr {
    /// Parses a type expression as written in the inventory.
    pub fn parse(expr: &str) -> Option<TypeExpr> {
        let expr = expr.trim();
        if let Some(inner) = expr
            .strip_prefix("array<")
            .and_then(|s| s.strip_suffix('>'))
        {
            return TypeExpr::parse(inner).map(|t| TypeExpr::Array(Box::new(t)));
        }
        if let Some(inner) = expr.strip_prefix("map<").and_then(|s| s.strip_suffix('>')) {
            return TypeExpr::parse(inner).map(|t| TypeExpr::Map(Box::new(t)));
        }
        if PRIMITIVES.contains(&expr) {
            return Some(TypeExpr::Primitive(expr.to_string()));
        }
        let ident = !expr.is_empty()
            && expr.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            && expr.chars().next().is_some_and(|c| c.is_ascii_uppercase());
        ident.then(|| TypeExpr::Named(expr.to_string()))
    }

    /// Whether this expression admits JSON `null` by itself (`any` / `AnyValue`).
    fn admits_null(&self) -> bool {
        match self {
            TypeExpr::Primitive(p) => p == "any",
            TypeExpr::Named(n) => n == "AnyValue",
            _ => false,
        }
    }
}

/// Inclusive bounds of an integer width, as JSON numbers.
pub fn integer_bounds(width: &str) -> Option<(Value, Value)> {
    Some(match width {
        "int32" => (json!(i32::MIN), json!(i32::MAX)),
        "int64" => (json!(i64::MIN), json!(i64::MAX)),
        "uint32" => (json!(0), json!(u32::MAX)),
        "uint64" => (json!(0), json!(u64::MAX)),
        _ => return None,
    })
}

fn integer_schema(width: &str) -> Option<Value> {
    integer_bounds(width)
        .map(|(min, max)| json!({"type": "integer", "minimum": min, "maximum": max}))
}

impl<'a> Types<'a> {
    fn collect(inv: &'a Value) -> Result<Types<'a>> {
        let mut by_name = BTreeMap::new();
        fn add<'a>(
            by_name: &mut BTreeMap<String, TypeEntry<'a>>,
            name: &str,
            entry: TypeEntry<'a>,
        ) -> Result<()> {
            if by_name.insert(name.to_string(), entry).is_some() {
                return Err(SchemaGenError::Duplicate(name.to_string()));
            }
            Ok(())
        }
        for (section, kind) in [
            ("structs", Kind::Struct),
            ("enums", Kind::Enum),
            ("taggedUnions", Kind::Tagged),
            ("typeAliases", Kind::Alias),
        ] {
            for (name, body) in get_obj(inv, section, "$")? {
                let module = get_str(body, "module", &format!("$.{section}.{name}"))?;
                add(
                    &mut by_name,
                    name,
                    TypeEntry {
                        kind,
                        module: module.to_string(),
                        body,
                    },
                )?;
            }
        }
        // Untagged unions carry no module; derive it below once the others are known.
        let untagged = get_obj(inv, "untaggedUnions", "$")?;
        let mut pending = Vec::new();
        for (name, body) in untagged {
            pending.push((name.clone(), body));
        }
        for (name, body) in pending {
            let alts = body
                .as_array()
                .ok_or_else(|| malformed(format!("$.untaggedUnions.{name}"), "array"))?;
            let module = alts
                .iter()
                .filter_map(Value::as_str)
                .filter_map(|s| match TypeExpr::parse(s) {
                    Some(TypeExpr::Named(n)) => by_name.get(&n).map(|e| e.module.clone()),
                    _ => None,
                })
                .next()
                .unwrap_or_else(|| "common".to_string());
            add(
                &mut by_name,
                &name,
                TypeEntry {
                    kind: Kind::Untagged,
                    module,
                    body,
                },
            )?;
        }
        Ok(Types { by_name })
    }

    fn file_of(&self, name: &str) -> Option<String> {
        self.by_name.get(name).map(|e| file_name(&e.module))
    }
}

/// File name of an inventory module.
pub fn file_name(module: &str) -> String {
    format!("{module}.schema.json")
}

/// Generates the schema documents as JSON values (file name → document), including the index.
pub fn generate_documents(inventory: &Value) -> Result<BTreeMap<String, Value>> {
    let types = Types::collect(inventory)?;
    check_format_tables(&types)?;
    let mut per_file: BTreeMap<String, Map<String, Value>> = BTreeMap::new();
    for (name, entry) in &types.by_name {
        let file = file_name(&entry.module);
        let builder = Builder {
            types: &types,
            file: file.clone(),
        };
        let def = builder.def(name, entry)?;
        per_file.entry(file).or_default().insert(name.clone(), def);
    }
    let mut out = BTreeMap::new();
    let files: Vec<String> = per_file.keys().cloned().collect();
    for (file, defs) in per_file {
        let module = file.trim_end_matches(".schema.json");
        let doc = json!({
            "$schema": DRAFT_2020_12,
            "$id": format!("{SCHEMA_BASE_URI}{file}"),
            "title": format!("AHP 1.0.0 {module} types"),
            "$comment": "Generated by ahpspec-schemagen from the AHP 1.0.0 type inventory; do not edit.",
            "$defs": Value::Object(defs),
        });
        out.insert(file, doc);
    }
    let mut index = build_index(inventory, &types)?;
    if let Some(slot) = index.get_mut("files") {
        *slot = json!(files);
    }
    out.insert(INDEX_FILE.to_string(), index);
    Ok(out)
}

/// Generates the schema files: file name → pretty JSON text with a trailing newline.
pub fn generate(inventory: &Value) -> Result<BTreeMap<String, String>> {
    generate_documents(inventory)?
        .into_iter()
        .map(|(file, doc)| {
            let mut text = serde_json::to_string_pretty(&doc)?;
            text.push('\n');
            Ok((file, text))
        })
        .collect()
}

/// Names of all types defined by the inventory (the `$defs` the generator emits).
pub fn type_names(inventory: &Value) -> Result<BTreeSet<String>> {
    Ok(Types::collect(inventory)?.by_name.into_keys().collect())
}
