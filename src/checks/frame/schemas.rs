//! Which schema def validates which frame part ([`SchemaMap`], [`Schemas`]) and the
//! INV-SCHEMA-1 validation a connection's checker runs with its own validators.

use std::sync::{Arc, OnceLock};

use jsonschema::Validator;
use serde_json::Value;

use super::scan::pointer_or_root;
use super::FrameChecker;
use crate::checks::{FastMap, Rule, Violation};
use crate::schema::{check, unusable, SchemaSet, SchemaViolation};
use crate::tape::{Node, TapeJson};

/// Which schema definition validates what, from the schema index.
#[derive(Debug, Clone, Default)]
pub struct SchemaMap {
    /// method → def of its result.
    pub results: FastMap<String, String>,
    /// host notification method → def of its params.
    pub notifications: FastMap<String, String>,
    /// method → def of its params (requests and client notifications).
    pub params: FastMap<String, String>,
    /// action type → whether a client may dispatch it.
    pub client_dispatchable: FastMap<String, bool>,
    /// action type → def of that action.
    pub actions: FastMap<String, String>,
    /// action type → the protocol version that introduced it.
    pub introduced_in: FastMap<String, Version>,
}

/// A protocol version, `MAJOR.MINOR.PATCH`, ordered.
pub type Version = (u64, u64, u64);

/// Reads a strict `MAJOR.MINOR.PATCH` version: three decimal numbers without leading zeros,
/// no pre-release or build suffix.
pub fn parse_version(text: &str) -> Option<Version> {
    let number = |part: &str| {
        let digits = !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        let canonical = part.len() == 1 || !part.starts_with('0');
        (digits && canonical)
            .then(|| part.parse::<u64>().ok())
            .flatten()
    };
    let mut parts = text.split('.').map(number);
    let version = (parts.next()??, parts.next()??, parts.next()??);
    parts.next().is_none().then_some(version)
}

impl SchemaMap {
    /// Reads `index.json` as written by `ahpspec-schemagen`.
    pub fn from_index(index: &Value) -> SchemaMap {
        let def = |entry: &Value| entry.get("def").and_then(Value::as_str).map(str::to_owned);
        let mut map = SchemaMap::default();
        for (method, entry) in index["commands"].as_object().into_iter().flatten() {
            if let Some(result) = def(&entry["result"]) {
                map.results.insert(method.clone(), result);
            }
            if let Some(params) = def(&entry["params"]) {
                map.params.insert(method.clone(), params);
            }
        }
        for (method, entry) in index["clientNotifications"]
            .as_object()
            .into_iter()
            .flatten()
        {
            if let Some(params) = def(&entry["params"]) {
                map.params.insert(method.clone(), params);
            }
        }
        for (method, entry) in index["hostNotifications"].as_object().into_iter().flatten() {
            if let Some(params) = def(&entry["params"]) {
                map.notifications.insert(method.clone(), params);
            }
        }
        for (kind, entry) in index["actions"].as_object().into_iter().flatten() {
            let dispatchable = entry["clientDispatchable"].as_bool().unwrap_or(false);
            map.client_dispatchable.insert(kind.clone(), dispatchable);
            if let Some(action) = def(entry) {
                map.actions.insert(kind.clone(), action);
            }
            if let Some(version) = entry["introducedIn"].as_str().and_then(parse_version) {
                map.introduced_in.insert(kind.clone(), version);
            }
        }
        map
    }

    /// The embedded 1.0.0 index.
    pub fn embedded() -> SchemaMap {
        serde_json::from_str(crate::schema::EMBEDDED_INDEX)
            .map(|index: Value| SchemaMap::from_index(&index))
            .unwrap_or_default()
    }
}

/// Schemas plus the map of which def applies where.
#[derive(Clone)]
pub struct Schemas {
    pub set: Arc<SchemaSet>,
    pub map: Arc<SchemaMap>,
}

impl Schemas {
    /// The schemas in `dir` (a `--schemas` directory), or the built-in ones.
    pub fn load(dir: Option<&std::path::Path>) -> Result<Schemas, crate::schema::SchemaError> {
        match dir {
            Some(dir) => Ok(Self::of(SchemaSet::from_dir(dir)?)),
            None => Self::embedded(),
        }
    }

    /// The built-in schemas, loaded once per process and shared with the validators compiled
    /// from them: a process that runs the catalog many times compiles each def once.
    fn embedded() -> Result<Schemas, crate::schema::SchemaError> {
        static EMBEDDED: OnceLock<Schemas> = OnceLock::new();
        if let Some(schemas) = EMBEDDED.get() {
            return Ok(schemas.clone());
        }
        let schemas = Self::of(SchemaSet::embedded()?);
        Ok(EMBEDDED.get_or_init(|| schemas).clone())
    }

    fn of(set: SchemaSet) -> Schemas {
        Schemas {
            set: Arc::new(set),
            map: Arc::new(SchemaMap::embedded()),
        }
    }
}

impl std::fmt::Debug for Schemas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Schemas")
    }
}

/// Tape validators by def name, fetched from the shared set once per checker (a lookup
/// there takes a lock and walks a tree of def names). `None`: no such def; an error: the
/// def does not compile.
#[derive(Default)]
pub(super) struct Validators(FastMap<String, Option<Fetched>>);

/// A def's tape validator, or why it cannot validate.
type Fetched = Result<Arc<Validator<TapeJson>>, SchemaViolation>;

impl std::fmt::Debug for Validators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} validators", self.0.len())
    }
}

impl FrameChecker {
    /// Validates `instance` against `def` with this checker's validators (fetched from the
    /// shared set on first use); `None` when no schema document defines `def`.
    pub fn validate_node(
        &mut self,
        schemas: &Schemas,
        def: &str,
        instance: Node<'_>,
    ) -> Option<Result<(), Vec<SchemaViolation>>> {
        let validator = match self.validators.0.get(def) {
            Some(known) => known,
            None => {
                let fetched = schemas.set.has_def(def).then(|| {
                    schemas
                        .set
                        .tape_validator(def)
                        .map_err(|e| unusable(def, &e))
                });
                self.validators.0.entry(def.to_owned()).or_insert(fetched)
            }
        };
        Some(match validator.as_ref()? {
            Ok(validator) => check(validator, instance),
            Err(unusable) => Err(vec![unusable.clone()]),
        })
    }
}

/// Validates `instance` against `def`; `what` names it in a violation (formatted only
/// then: this runs on every envelope).
pub(super) fn validate(
    schemas: &Schemas,
    def: &str,
    instance: Node<'_>,
    what: std::fmt::Arguments<'_>,
    found: &mut Vec<Violation>,
    checker: &mut FrameChecker,
) {
    checker.tally.bump(Rule::InvSchema1);
    let Some(outcome) = checker.validate_node(schemas, def, instance) else {
        return;
    };
    if let Err(errors) = outcome {
        let listed: Vec<String> = errors
            .iter()
            .take(3)
            .map(|e| format!("{}: {}", pointer_or_root(&e.instance_path), e.message))
            .collect();
        found.push(Violation::new(
            Rule::InvSchema1,
            format!("{what} valid against {def}"),
            listed.join("; "),
        ));
    }
}
