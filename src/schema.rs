//! Runtime JSON Schema validation of AHP documents.
//!
//! A [`SchemaSet`] holds a set of draft 2020-12 schema documents (the generated 1.0.0 files
//! embedded in the binary, or a user's directory such as the official upstream schemas) and
//! validates instances against a named `$defs` entry. Validators are compiled lazily, once per
//! def name, and cached; all references resolve offline against the registered documents.
//!
//! Formats are asserted, the same way for `Value` and tape instances: `uri` is RFC 3986
//! (the `jsonschema` check), `date-time` is [`is_timestamp`].

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use jsonschema::json::Json;
use jsonschema::{Draft, Registry, Validator};
use serde_json::{json, Value};

use crate::fasthash::FastMap;
use crate::tape::TapeJson;

/// The generated AHP 1.0.0 schema files, embedded at compile time (file name, text).
pub const EMBEDDED_FILES: &[(&str, &str)] = &[
    (
        "actions.schema.json",
        include_str!("../schemas/ahp/1.0.0/actions.schema.json"),
    ),
    (
        "commands.schema.json",
        include_str!("../schemas/ahp/1.0.0/commands.schema.json"),
    ),
    (
        "common.schema.json",
        include_str!("../schemas/ahp/1.0.0/common.schema.json"),
    ),
    (
        "errors.schema.json",
        include_str!("../schemas/ahp/1.0.0/errors.schema.json"),
    ),
    (
        "messages.schema.json",
        include_str!("../schemas/ahp/1.0.0/messages.schema.json"),
    ),
    (
        "notifications.schema.json",
        include_str!("../schemas/ahp/1.0.0/notifications.schema.json"),
    ),
    (
        "state.schema.json",
        include_str!("../schemas/ahp/1.0.0/state.schema.json"),
    ),
];

/// The generated index (`index.json`) of the embedded schemas.
pub const EMBEDDED_INDEX: &str = include_str!("../schemas/ahp/1.0.0/index.json");

/// Base URI given to documents of a directory that carry no `$id`.
const LOCAL_BASE_URI: &str = "https://schemas.ahpspec.invalid/local/";

/// One reason an instance does not match a schema.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaViolation {
    /// JSON pointer into the instance (`""` = the whole instance).
    pub instance_path: String,
    /// JSON pointer of the failing keyword, relative to the validated def.
    pub schema_path: String,
    /// Human-readable message.
    pub message: String,
}

impl std::fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = if self.instance_path.is_empty() {
            "/"
        } else {
            &self.instance_path
        };
        write!(f, "at {at}: {} (schema {})", self.message, self.schema_path)
    }
}

/// Errors loading schemas or compiling a validator.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// Reading a schema file failed.
    #[error("reading {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A schema file is not valid JSON.
    #[error("parsing {name}: {source}")]
    Parse {
        name: String,
        #[source]
        source: serde_json::Error,
    },
    /// The directory holds no `*.json` schema document with `$defs`.
    #[error("no schema documents with `$defs` found in {0}")]
    NoSchemas(PathBuf),
    /// Two documents claim the same `$id`.
    #[error("documents {first} and {second} have the same $id {id}")]
    DuplicateId {
        id: String,
        first: String,
        second: String,
    },
    /// Registering the documents failed.
    #[error("registering schema documents: {0}")]
    Registry(String),
    /// No loaded document defines this `$defs` entry.
    #[error("unknown schema definition `{0}`")]
    UnknownDef(String),
    /// Compiling the validator for a def failed.
    #[error("compiling schema definition `{def}`: {message}")]
    Compile { def: String, message: String },
}

/// A set of schema documents with a per-def validator cache.
pub struct SchemaSet {
    registry: Registry<'static>,
    /// def name → URI of the document that defines it (first document in file-name order).
    defs: BTreeMap<String, String>,
    cache: RwLock<FastMap<String, Arc<Validator>>>,
    /// The same defs compiled for tape instances (the always-on checks validate frames in
    /// place, without a `Value`).
    tape_cache: RwLock<FastMap<String, Arc<Validator<TapeJson>>>>,
}

impl std::fmt::Debug for SchemaSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SchemaSet")
            .field("defs", &self.defs.len())
            .finish_non_exhaustive()
    }
}

impl SchemaSet {
    /// The generated AHP 1.0.0 schemas compiled into the binary.
    pub fn embedded() -> Result<SchemaSet, SchemaError> {
        let mut docs = Vec::new();
        for (name, text) in EMBEDDED_FILES {
            let value = serde_json::from_str(text).map_err(|source| SchemaError::Parse {
                name: (*name).to_string(),
                source,
            })?;
            docs.push(((*name).to_string(), value));
        }
        SchemaSet::from_documents(docs)
    }

    /// Every `*.json` document with a `$defs` object in `dir` (not recursive), e.g. a user's
    /// `--schemas DIR` holding the official upstream files. Other JSON files are ignored.
    pub fn from_dir(dir: &Path) -> Result<SchemaSet, SchemaError> {
        let io = |source| SchemaError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let mut names = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(io)? {
            let path = entry.map_err(io)?.path();
            if path.extension().and_then(|e| e.to_str()) == Some("json") && path.is_file() {
                names.push(path);
            }
        }
        names.sort();
        let mut docs = Vec::new();
        for path in names {
            let text = std::fs::read_to_string(&path).map_err(|source| SchemaError::Io {
                path: path.clone(),
                source,
            })?;
            let value: Value =
                serde_json::from_str(&text).map_err(|source| SchemaError::Parse {
                    name: path.display().to_string(),
                    source,
                })?;
            if value.get("$defs").is_some_and(Value::is_object) {
                let name = path
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                docs.push((name, value));
            }
        }
        if docs.is_empty() {
            return Err(SchemaError::NoSchemas(dir.to_path_buf()));
        }
        SchemaSet::from_documents(docs)
    }

    /// Builds a set from (file name, document) pairs. A document is registered under its
    /// `$id`, or under a local URI ending in its file name when it has none. When several
    /// documents define the same `$defs` name, the first (in the given order) wins.
    pub fn from_documents(
        docs: impl IntoIterator<Item = (String, Value)>,
    ) -> Result<SchemaSet, SchemaError> {
        let mut resources: Vec<(String, Value)> = Vec::new();
        let mut owner_of_id: HashMap<String, String> = HashMap::new();
        let mut defs = BTreeMap::new();
        for (name, doc) in docs {
            let uri = match doc.get("$id").and_then(Value::as_str) {
                Some(id) => id.trim_end_matches('#').to_string(),
                None => format!("{LOCAL_BASE_URI}{name}"),
            };
            if let Some(first) = owner_of_id.insert(uri.clone(), name.clone()) {
                return Err(SchemaError::DuplicateId {
                    id: uri,
                    first,
                    second: name,
                });
            }
            if let Some(map) = doc.get("$defs").and_then(Value::as_object) {
                for def in map.keys() {
                    defs.entry(def.clone()).or_insert_with(|| uri.clone());
                }
            }
            resources.push((uri, doc));
        }
        let registry = Registry::new()
            .draft(Draft::Draft202012)
            .extend(
                resources
                    .into_iter()
                    .map(|(uri, doc)| (uri, Draft::Draft202012.create_resource(doc))),
            )
            .and_then(|b| b.prepare())
            .map_err(|e| SchemaError::Registry(e.to_string()))?;
        Ok(SchemaSet {
            registry,
            defs,
            cache: RwLock::default(),
            tape_cache: RwLock::default(),
        })
    }

    /// Whether some document defines `def`.
    pub fn has_def(&self, def: &str) -> bool {
        self.defs.contains_key(def)
    }

    /// All def names, sorted.
    pub fn def_names(&self) -> impl Iterator<Item = &str> {
        self.defs.keys().map(String::as_str)
    }

    /// The compiled validator for `def` (compiled on first use, then cached).
    pub fn validator(&self, def: &str) -> Result<Arc<Validator>, SchemaError> {
        self.cached(&self.cache, def)
    }

    /// `def`'s validator for instances of representation `F`, from `cache` or compiled into it.
    fn cached<F: Json>(
        &self,
        cache: &RwLock<FastMap<String, Arc<Validator<F>>>>,
        def: &str,
    ) -> Result<Arc<Validator<F>>, SchemaError> {
        if let Ok(cache) = cache.read() {
            if let Some(v) = cache.get(def) {
                return Ok(Arc::clone(v));
            }
        }
        let doc = self
            .defs
            .get(def)
            .ok_or_else(|| SchemaError::UnknownDef(def.to_string()))?;
        let pointer = def.replace('~', "~0").replace('/', "~1");
        let wrapper = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "$ref": format!("{doc}#/$defs/{pointer}"),
        });
        let validator = jsonschema::options_for::<F>()
            .with_draft(Draft::Draft202012)
            .should_validate_formats(true)
            .with_format("date-time", is_timestamp)
            .with_registry(&self.registry)
            .build(&wrapper)
            .map_err(|e| SchemaError::Compile {
                def: def.to_string(),
                message: e.to_string(),
            })?;
        let validator = Arc::new(validator);
        if let Ok(mut cache) = cache.write() {
            cache
                .entry(def.to_string())
                .or_insert_with(|| Arc::clone(&validator));
        }
        Ok(validator)
    }

    /// `def`'s validator for tape instances (compiled on first use, then cached).
    pub fn tape_validator(&self, def: &str) -> Result<Arc<Validator<TapeJson>>, SchemaError> {
        self.cached(&self.tape_cache, def)
    }

    /// Validates `instance` against `def`; the outer error reports an unknown def or a schema
    /// that does not compile, the inner one the violations.
    pub fn try_validate(
        &self,
        def: &str,
        instance: &Value,
    ) -> Result<Result<(), Vec<SchemaViolation>>, SchemaError> {
        // A cached validator is used under the cache's read lock rather than through
        // `validator`'s `Arc` clone: this runs on every frame.
        if let Ok(cache) = self.cache.read() {
            if let Some(validator) = cache.get(def) {
                return Ok(check(validator, instance));
            }
        }
        let validator = self.validator(def)?;
        Ok(check(&validator, instance))
    }

    /// Validates `instance` against `def`. An unknown def or a def that does not compile is
    /// reported as a single violation at the instance root.
    pub fn validate(&self, def: &str, instance: &Value) -> Result<(), Vec<SchemaViolation>> {
        match self.try_validate(def, instance) {
            Ok(result) => result,
            Err(e) => Err(vec![unusable(def, &e)]),
        }
    }

    /// Whether `instance` is valid against `def` (`false` for an unknown or broken def).
    pub fn is_valid(&self, def: &str, instance: &Value) -> bool {
        self.validator(def)
            .map(|v| v.is_valid(instance))
            .unwrap_or(false)
    }
}

/// The `date-time` format as the harness asserts it: a date and a time of day with a UTC
/// offset, read as an instant the way the 1.0.0 reference reducer reads `startedAt` (jiff's
/// `Timestamp` parser). The protocol says "ISO 8601", not RFC 3339, so this accepts the ISO 8601
/// forms RFC 3339 rejects (basic format `20250310T184203Z`, `+0100` offsets, minutes without
/// seconds, a decimal comma) besides every RFC 3339 date-time; it rejects what is not an
/// instant (no offset: local time; a date alone; week or ordinal dates), which the reducer
/// cannot read and PROTOCOL §16.19 compares as instants.
pub fn is_timestamp(text: &str) -> bool {
    // jiff also reads a trailing RFC 9557 `[zone]` annotation; an ISO 8601 date starts
    // with its year digits (or an expanded-year sign).
    text.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '-')
        && !text.ends_with(']')
        && text.parse::<jiff::Timestamp>().is_ok()
}

/// The first of `members` (pointers into each element of the array at `array` in
/// `document`) that is not a timestamp ([`is_timestamp`]), as (its pointer, its value); the
/// array pointer itself when it names no array.
pub fn first_non_timestamp(
    document: &Value,
    array: &str,
    members: &[String],
) -> Option<(String, Value)> {
    let Some(items) = document.pointer(array).and_then(Value::as_array) else {
        return Some((
            array.to_owned(),
            document.pointer(array).cloned().unwrap_or(Value::Null),
        ));
    };
    items.iter().enumerate().find_map(|(index, item)| {
        members.iter().find_map(|member| {
            let value = item.pointer(member).unwrap_or(&Value::Null);
            let ok = value.as_str().is_some_and(is_timestamp);
            (!ok).then(|| (format!("{array}/{index}{member}"), value.clone()))
        })
    })
}

/// An unknown def or one that does not compile, as a single violation at the instance root.
pub fn unusable(def: &str, error: &SchemaError) -> SchemaViolation {
    SchemaViolation {
        instance_path: String::new(),
        schema_path: format!("#/$defs/{def}"),
        message: error.to_string(),
    }
}

/// The violations of `instance` against a compiled def.
pub fn check<'i, F: Json>(
    validator: &'i Validator<F>,
    instance: F::Node<'i>,
) -> Result<(), Vec<SchemaViolation>> {
    // Fast path: valid frames (the common case) skip error collection.
    if validator.is_valid(instance.clone()) {
        return Ok(());
    }
    let violations: Vec<SchemaViolation> = validator
        .iter_errors(instance)
        .map(|e| SchemaViolation {
            instance_path: e.instance_path().as_str().to_string(),
            schema_path: strip_wrapper(e.schema_path().as_str()),
            message: e.to_string(),
        })
        .collect();
    if violations.is_empty() {
        Ok(())
    } else {
        Err(violations)
    }
}

/// Drops the wrapper's leading `/$ref` so paths start at the def.
fn strip_wrapper(path: &str) -> String {
    path.strip_prefix("/$ref").unwrap_or(path).to_string()
}
