//! The schema of one type, built for one target file (its references are relative to it).

use serde_json::{json, Map, Value};

use super::*;

/// Builds schemas for one target file (references are relative to that file).
pub(super) struct Builder<'t, 'a> {
    pub(super) types: &'t Types<'a>,
    pub(super) file: String,
}

impl Builder<'_, '_> {
    pub(super) fn reference(&self, name: &str, path: &str) -> Result<Value> {
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

    pub(super) fn expr(&self, expr: &str, path: &str) -> Result<Value> {
        let parsed = TypeExpr::parse(expr).ok_or_else(|| SchemaGenError::BadTypeExpr {
            path: path.to_string(),
            expr: expr.to_string(),
        })?;
        self.type_expr(&parsed, path)
    }

    pub(super) fn type_expr(&self, t: &TypeExpr, path: &str) -> Result<Value> {
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
    pub(super) fn object(
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

    pub(super) fn struct_def(&self, name: &str, body: &Value) -> Result<Value> {
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

    pub(super) fn enum_def(&self, name: &str, body: &Value) -> Result<Value> {
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

    pub(super) fn tagged_def(&self, name: &str, body: &Value) -> Result<Value> {
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

    pub(super) fn untagged_def(&self, name: &str, body: &Value) -> Result<Value> {
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

    pub(super) fn alias_def(&self, name: &str, body: &Value) -> Result<Value> {
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

    pub(super) fn def(&self, name: &str, entry: &TypeEntry<'_>) -> Result<Value> {
        match entry.kind {
            Kind::Struct => self.struct_def(name, entry.body),
            Kind::Enum => self.enum_def(name, entry.body),
            Kind::Tagged => self.tagged_def(name, entry.body),
            Kind::Untagged => self.untagged_def(name, entry.body),
            Kind::Alias => self.alias_def(name, entry.body),
        }
    }
}
