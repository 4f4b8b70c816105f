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

/// Builds schemas for one target file (references are relative to that file).
struct Builder<'t, 'a> {
    types: &'t Types<'a>,
    file: String,
}

impl Builder<'_, '_> {
    fn reference(&self, name: &str, path: &str) -> Result<Value> {
        let file = self
            .types
            .file_of(name)
            .ok_or_else(|| SchemaGenError::UnknownType {
                path: path.to_string(),
                name: name.to_string(),
            })?;
        if file == self.file {
            Ok(json!({ "$ref": format!("#/$defs/{name}") }))
        } else {
            Ok(json!({ "$ref": format!("{file}#/$defs/{name}") }))
        }
    }

    fn expr(&self, expr: &str, path: &str) -> Result<Value> {
        let parsed = TypeExpr::parse(expr).ok_or_else(|| SchemaGenError::BadTypeExpr {
            path: path.to_string(),
            expr: expr.to_string(),
        })?;
        self.type_expr(&parsed, path)
    }

    fn type_expr(&self, t: &TypeExpr, path: &str) -> Result<Value> {
        Ok(match t {
            TypeExpr::Primitive(p) => match p.as_str() {
                "string" => json!({"type": "string"}),
                "boolean" => json!({"type": "boolean"}),
                "float64" => json!({"type": "number"}),
                "object" => json!({"type": "object"}),
                "any" => json!({}),
                width => integer_schema(width).ok_or_else(|| SchemaGenError::BadTypeExpr {
                    path: path.to_string(),
                    expr: width.to_string(),
                })?,
            },
            TypeExpr::Named(n) => self.reference(n, path)?,
            TypeExpr::Array(inner) => {
                json!({"type": "array", "items": self.type_expr(inner, path)?})
            }
            TypeExpr::Map(inner) => {
                json!({"type": "object", "additionalProperties": self.type_expr(inner, path)?})
            }
        })
    }

    /// Object schema for a list of fields of type `owner`, optionally pinning a
    /// discriminator member.
    fn object(
        &self,
        owner: &str,
        fields: &[Value],
        discriminator: Option<(&str, Value)>,
        path: &str,
    ) -> Result<Value> {
        let mut properties = Map::new();
        let mut required = Vec::new();
        let mut disc = discriminator;
        // The discriminator goes first unless the struct declares the member itself.
        let declared = |key: &str| {
            fields
                .iter()
                .any(|f| f.get("name").and_then(Value::as_str) == Some(key))
        };
        if let Some((key, schema)) = &disc {
            if !declared(key) {
                properties.insert(key.to_string(), schema.clone());
                required.push(json!(key));
                disc = None;
            }
        }
        for (i, f) in fields.iter().enumerate() {
            let fpath = format!("{path}.fields[{i}]");
            let name = get_str(f, "name", &fpath)?;
            let ty = get_str(f, "type", &fpath)?;
            let optional = get_bool(f, "optional", &fpath)?;
            let mut schema = match &disc {
                // The member doubles as the discriminator: its value is pinned.
                Some((key, pinned)) if *key == name => pinned.clone(),
                _ if TIMESTAMP_MEMBERS.contains(&(owner, name)) => {
                    json!({"type": "string", "format": "date-time"})
                }
                _ if NOT_URI_MEMBERS.contains(&(owner, name)) => json!({"type": "string"}),
                _ => self.expr(ty, &format!("{fpath}.type"))?,
            };
            if optional {
                let admits_null = TypeExpr::parse(ty).is_some_and(|t| t.admits_null());
                if !admits_null {
                    schema = json!({"anyOf": [schema, {"type": "null"}]});
                }
            } else {
                required.push(json!(name));
            }
            properties.insert(name.to_string(), schema);
        }
        let mut out = Map::new();
        out.insert("type".into(), json!("object"));
        if !properties.is_empty() {
            out.insert("properties".into(), Value::Object(properties));
        }
        if !required.is_empty() {
            out.insert("required".into(), Value::Array(required));
        }
        Ok(Value::Object(out))
    }

    fn struct_def(&self, name: &str, body: &Value) -> Result<Value> {
        let path = format!("$.structs.{name}");
        let fields = get_arr(body, "fields", &path)?;
        let disc = match body.get("discriminator") {
            None => None,
            Some(d) => {
                let dpath = format!("{path}.discriminator");
                let key = get_str(d, "key", &dpath)?;
                let values = get_arr(d, "values", &dpath)?;
                if values.is_empty() || values.iter().any(|v| !v.is_string()) {
                    return Err(malformed(
                        format!("{dpath}.values"),
                        "non-empty string array",
                    ));
                }
                let schema = if values.len() == 1 {
                    json!({"const": values[0]})
                } else {
                    json!({"enum": values})
                };
                Some((key, schema))
            }
        };
        self.object(name, fields, disc, &path)
    }

    fn enum_def(&self, name: &str, body: &Value) -> Result<Value> {
        let path = format!("$.enums.{name}");
        let wire = get_str(body, "wireType", &path)?;
        let open = get_bool(body, "openEnum", &path)?;
        let bitset = body.get("bitset").and_then(Value::as_bool).unwrap_or(false);
        let values = get_arr(body, "values", &path)?;
        if wire == "string" {
            if values.iter().any(|v| !v.is_string()) {
                return Err(malformed(format!("{path}.values"), "strings"));
            }
            return Ok(if open {
                json!({"type": "string", "examples": values})
            } else {
                json!({"type": "string", "enum": values})
            });
        }
        let mut schema = integer_schema(wire).ok_or_else(|| SchemaGenError::BadTypeExpr {
            path: format!("{path}.wireType"),
            expr: wire.to_string(),
        })?;
        if let Value::Object(m) = &mut schema {
            if open || bitset {
                m.insert("examples".into(), Value::Array(values.clone()));
            } else {
                m.insert("enum".into(), Value::Array(values.clone()));
            }
        }
        Ok(schema)
    }

    fn tagged_def(&self, name: &str, body: &Value) -> Result<Value> {
        let path = format!("$.taggedUnions.{name}");
        let tag = get_str(body, "tag", &path)?;
        let open = get_bool(body, "unknownVariantPreserved", &path)?;
        let variants = get_obj(body, "variants", &path)?;
        let mut known = Vec::new();
        let mut branches = Vec::new();
        for (key, payload) in variants {
            let vpath = format!("{path}.variants.{key}");
            known.push(json!(key));
            let then = match payload {
                Value::String(s) => self.expr(s, &vpath)?,
                Value::Object(_) => {
                    let fields = get_arr(payload, "fields", &vpath)?;
                    self.object(name, fields, Some((tag, json!({"const": key}))), &vpath)?
                }
                _ => return Err(malformed(vpath, "type name or {fields}")),
            };
            branches.push(json!({
                "if": {"properties": {tag: {"const": key}}, "required": [tag]},
                "then": then,
            }));
        }
        let tag_schema = if open {
            json!({"type": "string", "examples": known})
        } else {
            json!({"type": "string", "enum": known})
        };
        Ok(json!({
            "type": "object",
            "properties": {tag: tag_schema},
            "required": [tag],
            "allOf": branches,
        }))
    }

    fn untagged_def(&self, name: &str, body: &Value) -> Result<Value> {
        let path = format!("$.untaggedUnions.{name}");
        let alts = body
            .as_array()
            .ok_or_else(|| malformed(path.clone(), "array"))?;
        let mut out = Vec::new();
        for (i, alt) in alts.iter().enumerate() {
            let apath = format!("{path}[{i}]");
            out.push(match alt {
                Value::String(s) => self.expr(s, &apath)?,
                Value::Object(_) => {
                    let fields = get_arr(alt, "fields", &apath)?;
                    self.object(name, fields, None, &apath)?
                }
                _ => return Err(malformed(apath, "type expression or {fields}")),
            });
        }
        Ok(json!({ "anyOf": out }))
    }

    fn alias_def(&self, name: &str, body: &Value) -> Result<Value> {
        let path = format!("$.typeAliases.{name}");
        let ty = get_str(body, "type", &path)?;
        let mut schema = self.expr(ty, &format!("{path}.type"))?;
        if let (Some((_, format)), Value::Object(m)) = (
            ALIAS_FORMATS.iter().find(|(alias, _)| *alias == name),
            &mut schema,
        ) {
            m.insert("format".into(), json!(format));
        }
        Ok(schema)
    }

    fn def(&self, name: &str, entry: &TypeEntry<'_>) -> Result<Value> {
        match entry.kind {
            Kind::Struct => self.struct_def(name, entry.body),
            Kind::Enum => self.enum_def(name, entry.body),
            Kind::Tagged => self.tagged_def(name, entry.body),
            Kind::Untagged => self.untagged_def(name, entry.body),
            Kind::Alias => self.alias_def(name, entry.body),
        }
    }
}

/// State def per channel kind (reducer name → def), where the inventory defines it.
const STATE_KINDS: &[(&str, &str)] = &[
    ("root", "RootState"),
    ("session", "SessionState"),
    ("chat", "ChatState"),
    ("terminal", "TerminalState"),
    ("changeset", "ChangesetState"),
    ("annotations", "AnnotationsState"),
    ("resourceWatch", "ResourceWatchState"),
    ("canvas", "CanvasState"),
    ("automation", "AutomationState"),
    ("automationRun", "AutomationRunState"),
];

/// Host→client notification methods and their params def.
const HOST_NOTIFICATIONS: &[(&str, &str)] = &[
    ("action", "ActionNotificationParams"),
    ("root/sessionAdded", "SessionAddedParams"),
    ("root/sessionRemoved", "SessionRemovedParams"),
    ("root/sessionSummaryChanged", "SessionSummaryChangedParams"),
    ("root/progress", "ProgressParams"),
    ("auth/required", "AuthRequiredParams"),
    ("otlp/exportLogs", "OtlpExportLogsParams"),
    ("otlp/exportTraces", "OtlpExportTracesParams"),
    ("otlp/exportMetrics", "OtlpExportMetricsParams"),
];

/// Command params types that are client→host notifications (no response).
const CLIENT_NOTIFICATIONS: &[&str] = &["dispatchAction", "unsubscribe"];

fn lower_first(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_ascii_lowercase().to_string() + c.as_str(),
        None => String::new(),
    }
}

fn build_index(inv: &Value, types: &Types<'_>) -> Result<Value> {
    let def_ref = |name: &str| -> Value {
        match types.file_of(name) {
            Some(file) => json!({"def": name, "file": file}),
            None => Value::Null,
        }
    };
    let mut defs = Map::new();
    for (name, e) in &types.by_name {
        defs.insert(name.clone(), json!(file_name(&e.module)));
    }

    // Actions: each action type → StateAction variant payload def.
    let state_action = types
        .by_name
        .get("StateAction")
        .ok_or_else(|| malformed("$.taggedUnions.StateAction", "object"))?;
    let variants = get_obj(state_action.body, "variants", "$.taggedUnions.StateAction")?;
    let actions_meta = get_obj(inv, "actions", "$")?;
    let mut actions = Map::new();
    for (ty, payload) in variants {
        let def = payload.as_str().ok_or_else(|| {
            malformed(
                format!("$.taggedUnions.StateAction.variants.{ty}"),
                "string",
            )
        })?;
        let meta = actions_meta
            .get(ty)
            .ok_or_else(|| SchemaGenError::ActionMismatch(ty.clone()))?;
        let mpath = format!("$.actions.{ty}");
        let mut entry = Map::new();
        entry.insert("def".into(), json!(def));
        entry.insert(
            "file".into(),
            json!(types
                .file_of(def)
                .ok_or_else(|| SchemaGenError::UnknownType {
                    path: format!("$.taggedUnions.StateAction.variants.{ty}"),
                    name: def.to_string(),
                })?),
        );
        entry.insert(
            "clientDispatchable".into(),
            json!(get_bool(meta, "clientDispatchable", &mpath)?),
        );
        entry.insert(
            "introducedIn".into(),
            json!(get_str(meta, "introducedIn", &mpath)?),
        );
        actions.insert(ty.clone(), Value::Object(entry));
    }
    for ty in actions_meta.keys() {
        if !variants.contains_key(ty) {
            return Err(SchemaGenError::ActionMismatch(ty.clone()));
        }
    }

    // Commands: every `…Params` struct of the commands module.
    let mut methods = Map::new();
    let mut client_notifications = Map::new();
    for (name, e) in &types.by_name {
        if e.module != "commands" || e.kind != Kind::Struct {
            continue;
        }
        let Some(stem) = name.strip_suffix("Params") else {
            continue;
        };
        let method = lower_first(stem);
        if CLIENT_NOTIFICATIONS.contains(&method.as_str()) {
            client_notifications.insert(method, json!({"params": def_ref(name)}));
        } else {
            methods.insert(
                method,
                json!({"params": def_ref(name), "result": def_ref(&format!("{stem}Result"))}),
            );
        }
    }
    let mut notifications = Map::new();
    for (method, params) in HOST_NOTIFICATIONS {
        notifications.insert(method.to_string(), json!({"params": def_ref(params)}));
    }
    let mut states = Map::new();
    for (kind, def) in STATE_KINDS {
        if types.by_name.contains_key(*def) {
            states.insert(kind.to_string(), def_ref(def));
        }
    }
    let protocol = inv.get("protocol").cloned().unwrap_or(Value::Null);
    Ok(json!({
        "$comment": "Generated by ahpspec-schemagen from the AHP 1.0.0 type inventory; do not edit.",
        "protocol": protocol,
        "baseUri": SCHEMA_BASE_URI,
        "notes": {
            "commands": "method -> params/result defs, derived from the commands module's XParams/XResult types; result null = the inventory has no result type for it",
            "states": "channel kind (reducer name) -> state def",
            "actions": "action type -> def validating that StateAction variant, with clientDispatchable and introducedIn from the inventory",
        },
        "files": Value::Array(Vec::new()),
        "entryPoints": {
            "StateAction": def_ref("StateAction"),
            "ActionEnvelope": def_ref("ActionEnvelope"),
            "Snapshot": def_ref("Snapshot"),
            "JsonRpcMessage": def_ref("JsonRpcMessage"),
        },
        "states": states,
        "actions": actions,
        "commands": methods,
        "clientNotifications": client_notifications,
        "hostNotifications": notifications,
        "defs": defs,
    }))
}

/// Checks that every member a format table names is a member of that type with the type
/// the table expects (a renamed member must not silently lose its format).
fn check_format_tables(types: &Types<'_>) -> Result<()> {
    let member_type = |owner: &str, member: &str| -> Option<&str> {
        let entry = types.by_name.get(owner)?;
        let fields = entry.body.get("fields")?.as_array()?;
        fields
            .iter()
            .find(|f| f.get("name").and_then(Value::as_str) == Some(member))?
            .get("type")?
            .as_str()
    };
    for (table, expected) in [(TIMESTAMP_MEMBERS, "string"), (NOT_URI_MEMBERS, "Uri")] {
        for (owner, member) in table {
            if member_type(owner, member) != Some(expected) {
                return Err(SchemaGenError::UnknownMember {
                    owner: (*owner).to_string(),
                    member: (*member).to_string(),
                    expected,
                });
            }
        }
    }
    for (alias, _) in ALIAS_FORMATS {
        if types.by_name.get(*alias).map(|e| e.kind) != Some(Kind::Alias) {
            return Err(SchemaGenError::UnknownType {
                path: "ALIAS_FORMATS".into(),
                name: (*alias).to_string(),
            });
        }
    }
    Ok(())
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
