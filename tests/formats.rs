//! The file formats have schemas that agree with the parsers: `schemas/suite.schema.json`
//! (suite TOML files, parsed by `ahpspec::suite`) and `schemas/agent-script.schema.json`
//! (the scripted-agent contract, parsed by `ahpspec::host::script::plan_for_message`).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use ahpspec::host::script::{plan_for_message, SCRIPT_PREFIX};
use ahpspec::suite::{Catalog, EMBEDDED};
use serde_json::{json, Map, Value};

fn crate_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read_text(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

fn validator(file: &str) -> jsonschema::Validator {
    let path = crate_root().join("schemas").join(file);
    let schema: Value = serde_json::from_str(&read_text(&path))
        .unwrap_or_else(|e| panic!("{} is not JSON: {e}", path.display()));
    jsonschema::draft202012::new(&schema)
        .unwrap_or_else(|e| panic!("{} does not compile: {e}", path.display()))
}

fn errors(validator: &jsonschema::Validator, instance: &Value) -> Vec<String> {
    validator
        .iter_errors(instance)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

fn suite_files() -> Vec<PathBuf> {
    let dir = crate_root().join("suites");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|entry| entry.expect("directory entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "toml"))
        .collect();
    files.sort();
    files
}

fn toml_value(text: &str) -> Value {
    toml::from_str(text).unwrap_or_else(|e| panic!("not TOML: {e}\n{text}"))
}

fn schema_value(file: &str) -> Value {
    let path = crate_root().join("schemas").join(file);
    serde_json::from_str(&read_text(&path)).expect("schema is JSON")
}

/// `node`, with a local `$ref` followed.
fn resolve<'a>(schema: &'a Value, node: &'a Value) -> &'a Value {
    match node.get("$ref").and_then(Value::as_str) {
        Some(reference) => {
            let name = reference
                .strip_prefix("#/$defs/")
                .unwrap_or_else(|| panic!("non-local $ref {reference}"));
            resolve(schema, &schema["$defs"][name])
        }
        None => node,
    }
}

/// A value `node` accepts (objects get their required members).
fn sample(schema: &Value, node: &Value) -> Value {
    let node = resolve(schema, node);
    if let Some(values) = node.get("enum") {
        return values[0].clone();
    }
    // A value with a format of its own (a pattern) names an example.
    if let Some(examples) = node.get("examples") {
        return examples[0].clone();
    }
    if let Some(any) = node.get("anyOf") {
        return sample(schema, &any[0]);
    }
    let kind = match &node["type"] {
        Value::String(kind) => kind.as_str(),
        Value::Array(kinds) => kinds[0].as_str().unwrap_or_default(),
        _ => "",
    };
    match kind {
        "string" => json!("x"),
        "boolean" => json!(true),
        "integer" => json!(1),
        "array" => json!([]),
        "object" => Value::Object(members(schema, node, &required(node), None)),
        _ => json!(1),
    }
}

/// The parts an object node is made of: itself and what its `allOf` refers to (the shared
/// document assertions of `response`, `state` and `check`).
fn parts<'a>(schema: &'a Value, node: &'a Value) -> Vec<&'a Value> {
    let mut parts = vec![node];
    if let Some(all) = node["allOf"].as_array() {
        parts.extend(all.iter().map(|part| resolve(schema, part)));
    }
    parts
}

fn properties(schema: &Value, node: &Value) -> BTreeSet<String> {
    parts(schema, node)
        .into_iter()
        .filter_map(|part| part["properties"].as_object())
        .flat_map(|p| p.keys().cloned())
        .collect()
}

/// The schema of member `name` of object `node`.
fn property<'a>(schema: &'a Value, node: &'a Value, name: &str) -> &'a Value {
    parts(schema, node)
        .into_iter()
        .map(|part| &part["properties"][name])
        .find(|member| !member.is_null())
        .unwrap_or(&Value::Null)
}

fn required(node: &Value) -> BTreeSet<String> {
    node["required"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Sample values for `names` of object `node`, leaving out `without`.
fn members(
    schema: &Value,
    node: &Value,
    names: &BTreeSet<String>,
    without: Option<&str>,
) -> Map<String, Value> {
    names
        .iter()
        .filter(|name| Some(name.as_str()) != without)
        .map(|name| (name.clone(), sample(schema, property(schema, node, name))))
        .collect()
}

/// The names serde lists after "expected" in an unknown field / variant error.
fn expected_names(error: &str) -> BTreeSet<String> {
    let tail = error.split_once("expected").map_or("", |(_, tail)| tail);
    let tail = tail.split(" at line").next().unwrap_or_default();
    tail.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

/// Checks one closed object of a schema against its parser: the fields serde knows are the
/// schema's properties, a member missing is an error exactly when the schema requires it,
/// and samples of the required / all members are accepted by both.
fn check_object(
    what: &str,
    schema: &Value,
    validator: &jsonschema::Validator,
    node: &Value,
    parse: &dyn Fn(Value) -> (Value, Result<(), String>),
) {
    let node = resolve(schema, node);
    // Closed by itself, or (composed of parts) over every part's members.
    let closed = if node.get("allOf").is_some() {
        &node["unevaluatedProperties"]
    } else {
        &node["additionalProperties"]
    };
    assert_eq!(closed, &json!(false), "{what}: not closed");
    let names = properties(schema, node);
    let needed = required(node);
    let mut probe = members(schema, node, &needed, None);
    probe.insert("zzz_unknown".to_owned(), json!(1));
    let (instance, result) = parse(Value::Object(probe));
    let error = result.expect_err(&format!("{what}: unknown field accepted"));
    let mut known = expected_names(&error);
    if what == "case" {
        // The case header's parser is shared with AAP suites: `versions` is theirs, and an
        // AHP suite naming it is refused (suite_cases_refuse_aap_versions).
        known.remove("versions");
    }
    assert_eq!(known, names, "{what}: fields ({error})");
    assert!(
        !validator.is_valid(&instance),
        "{what}: schema accepts unknown field"
    );
    for field in &needed {
        let (instance, result) = parse(Value::Object(members(schema, node, &needed, Some(field))));
        let error = result.expect_err(&format!("{what}: {field} is not required"));
        assert!(
            error.contains(&format!("missing field `{field}`")),
            "{what}: {error}"
        );
        assert!(
            !validator.is_valid(&instance),
            "{what}: schema lets {field} out"
        );
    }
    for set in [&needed, &names] {
        let (instance, result) = parse(Value::Object(members(schema, node, set, None)));
        result.unwrap_or_else(|e| panic!("{what}: {e}"));
        assert_eq!(errors(validator, &instance), Vec::<String>::new(), "{what}");
    }
}

// ---------------------------------------------------------------------------------------------
// Suites
// ---------------------------------------------------------------------------------------------

#[test]
fn every_suite_file_matches_the_schema() {
    let validator = validator("suite.schema.json");
    let files = suite_files();
    assert!(!files.is_empty(), "no suites/*.toml");
    for path in &files {
        let instance = toml_value(&read_text(path));
        assert_eq!(
            errors(&validator, &instance),
            Vec::<String>::new(),
            "{} does not match schemas/suite.schema.json",
            path.display()
        );
    }
    let mut on_disk: Vec<String> = files
        .iter()
        .map(|p| {
            p.file_name()
                .expect("file name")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    let mut embedded: Vec<String> = EMBEDDED.iter().map(|(name, _)| name.to_string()).collect();
    on_disk.sort();
    embedded.sort();
    assert_eq!(
        on_disk, embedded,
        "suites on disk and embedded suites differ"
    );
}

#[test]
fn embedded_suites_parse() {
    let catalog = Catalog::embedded().unwrap_or_else(|e| panic!("embedded suites: {e}"));
    assert!(!catalog.cases.is_empty());
    for case in &catalog.cases {
        assert!(
            case.probe.is_some() || !case.steps.is_empty(),
            "{}",
            case.info.id
        );
    }
}

#[test]
fn unknown_step_field_is_reported_with_file_and_line() {
    // The unknown field `colour` is on line 10.
    let text = r#"page = "docs/specification/lifecycle.md"

[[case]]
id = "X-001"
level = "MUST"
spec = "§ Anything"
requirement = "r"
does = "d"
steps = [
  { connect = { colour = "red" } },
]
"#;
    assert!(text.lines().nth(9).is_some_and(|l| l.contains("colour")));
    let dir = std::env::temp_dir().join(format!("ahpspec-formats-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create temp dir");
    std::fs::write(dir.join("file.toml"), text).expect("write suite");
    let result = Catalog::from_dir(&dir);
    std::fs::remove_dir_all(&dir).expect("remove temp dir");
    let error = result.expect_err("unknown field must fail").to_string();
    assert!(error.contains("file.toml:10"), "{error}");
    assert!(error.contains("colour"), "{error}");
    let validator = validator("suite.schema.json");
    assert!(!validator.is_valid(&toml_value(text)));
}

/// A minimal valid suite with `steps` as the only step list.
fn suite_with(steps: &str) -> String {
    format!(
        "page = \"p.md\"\n[[case]]\nid = \"X-1\"\nlevel = \"MUST\"\nspec = \"s\"\nrequirement = \"r\"\ndoes = \"d\"\nsteps = [\n  {steps},\n]\n"
    )
}

#[test]
fn suite_schema_and_parser_agree() {
    let validator = validator("suite.schema.json");
    let valid = [
        suite_with("{ initialize = {} }"),
        suite_with("{ initialize = { capabilities = { mcpApps = {} } } }"),
        suite_with("{ connect = {} }, { checkpoint = { channels = [\"ahp-root://\"] } }"),
        suite_with(
            "{ request = { method = \"m\", params = [1, \"a\", { b = true }], as = \"r\", intent = \"i\" } }",
        ),
        suite_with(
            "{ response = { to = \"r\", id = 3, ok = false, codes = [-32600], has = [\"/a\"], one_of = { \"/a\" = [1, 2] }, at_most = { \"/b\" = 3 }, or_close = true, level = \"SHOULD\" } }",
        ),
        suite_with(
            "{ state = { channel = \"c\", len = { \"/a\" = 2 }, bits_set = { \"/s\" = 4 }, within_ms = 100 } }",
        ),
        suite_with(
            "{ action = { channel = \"c\", type = \"t\", where = { \"/x\" = { y = 1 } }, next = true } }",
        ),
        suite_with("{ silence = { for_ms = 0, type = \"t\", fresh = true } }"),
        suite_with("{ reconnect = { subscriptions = [], as = \"R\", last_seen = 5 } }"),
        suite_with(
            "{ any_of = { alternatives = [[{ check = { value = \"${r}\", len = { \"/a\" = 3 } } }, { not_applicable = { why = \"w\" } }], [{ check = { value = \"${r/x}\", has = [\"/c\"] } }]] } }",
        ),
        suite_with("{ progress = { token = \"t-${run}\", after_ms = 50, level = \"SHOULD\" } }"),
        suite_with(
            "{ raw = { text = \"[@X@]\", intent = \"i\", grow = [{ marker = \"@X@\", unit = \"0,\", times = 3 }] } }",
        ),
        "page = \"p.md\"\n".to_owned(),
        "area = \"a\"\npage = \"p.md\"\n[[case]]\nid = \"X\"\nlevel = \"MUST*\"\nspec = \"s\"\nrequirement = \"r\"\ndoes = \"d\"\nprobe = \"p\"\nneeds = [\"echo\"]\ncapabilities = [\"multipleChats\"]\n".to_owned(),
    ];
    for text in &valid {
        let instance = toml_value(text);
        assert_eq!(
            errors(&validator, &instance),
            Vec::<String>::new(),
            "{text}"
        );
        Catalog::parse_suite("valid.toml", text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    }
    let invalid = [
        // Unknown step field.
        suite_with("{ turn = { chat = \"c\", colour = \"red\" } }"),
        // Unknown step kind.
        suite_with("{ teleport = {} }"),
        // Two step kinds in one step.
        suite_with("{ connect = {}, initialize = {} }"),
        // A step that is not a table.
        suite_with("\"connect\""),
        // Missing required field.
        suite_with("{ raw = { text = \"x\" } }"),
        // Wrong types.
        suite_with("{ sleep = { ms = \"1\" } }"),
        suite_with("{ sleep = { ms = -1 } }"),
        suite_with("{ echo = { of = \"x\", accepted = \"yes\" } }"),
        suite_with("{ state = { channel = \"c\", len = { \"/a\" = \"2\" } } }"),
        suite_with("{ response = { codes = [\"x\"] } }"),
        // An alternative that is not a list of steps.
        suite_with("{ any_of = { alternatives = [{ connect = {} }] } }"),
        // Unknown case field, unknown top-level field, bad level, missing page.
        suite_with("{ connect = {} }").replace("does = ", "colour = \"red\"\ndoes = "),
        format!("colour = \"red\"\n{}", suite_with("{ connect = {} }")),
        suite_with("{ connect = {} }").replace("\"MUST\"", "\"MUST NOT\""),
        suite_with("{ connect = {} }").replace("page = \"p.md\"\n", ""),
        // Neither steps nor a probe.
        suite_with("{ connect = {} }").replace("steps = [\n  { connect = {} },\n]\n", ""),
        suite_with("{ connect = {} }").replace("\n  { connect = {} },\n", ""),
    ];
    for text in &invalid {
        assert!(
            !validator.is_valid(&toml_value(text)),
            "schema accepts:\n{text}"
        );
        assert!(
            Catalog::parse_suite("invalid.toml", text).is_err(),
            "parser accepts:\n{text}"
        );
    }
}

fn parse_suite_value(document: &Value) -> Result<(), String> {
    let text = toml::to_string(document).map_err(|e| format!("cannot write TOML: {e}"))?;
    Catalog::parse_suite("probe.toml", &text)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn suite_around(step: Value) -> Value {
    json!({"page": "p.md", "case": [{
        "id": "X-1", "level": "MUST", "spec": "s", "requirement": "r", "does": "d",
        "steps": [step],
    }]})
}

#[test]
fn suite_cases_refuse_aap_versions() {
    let mut document = suite_around(json!({"connect": {}}));
    document["case"][0]["versions"] = json!([1]);
    let error = parse_suite_value(&document).expect_err("versions accepted in an AHP suite");
    assert!(error.contains("take `since`, not `versions`"), "{error}");
}

#[test]
fn suite_schema_fields_are_the_parser_fields() {
    let schema = schema_value("suite.schema.json");
    let validator = validator("suite.schema.json");
    check_object("suite file", &schema, &validator, &schema, &|file| {
        let mut file = file;
        file["case"] = suite_around(json!({"connect": {}}))["case"].clone();
        let result = parse_suite_value(&file);
        (file, result)
    });
    let case_node = &schema["$defs"]["case"];
    check_object("case", &schema, &validator, case_node, &|case| {
        let mut case = case;
        case["steps"] = json!([{"connect": {}}]);
        let document = json!({"page": "p.md", "case": [case]});
        let result = parse_suite_value(&document);
        (document, result)
    });
    let kinds = properties(&schema, &schema["$defs"]["step"]);
    let document = suite_around(json!({"zzz_unknown": {}}));
    let error = parse_suite_value(&document).expect_err("unknown step kind accepted");
    assert_eq!(expected_names(&error), kinds, "step kinds ({error})");
    for kind in &kinds {
        let node = &schema["$defs"]["step"]["properties"][kind];
        check_object(kind, &schema, &validator, node, &|value| {
            let document = suite_around(json!({ kind.as_str(): value }));
            let result = parse_suite_value(&document);
            (document, result)
        });
    }
}

// ---------------------------------------------------------------------------------------------
// Agent scripts
// ---------------------------------------------------------------------------------------------

/// Parses the JSON document of an `ahpspec-script:` message.
fn script_document(message: &str) -> Value {
    let document = message
        .trim_start()
        .strip_prefix(SCRIPT_PREFIX)
        .unwrap_or_else(|| panic!("not a script: {message}"));
    serde_json::from_str(document).unwrap_or_else(|e| panic!("not JSON ({e}): {message}"))
}

#[test]
fn profile_scripts_match_schema_and_parse() {
    for profile in ["ahpspec-scripted.toml", "ahpspec-random-ids.toml"] {
        profile_scripts_are_valid(profile);
    }
}

fn profile_scripts_are_valid(file: &str) {
    let validator = validator("agent-script.schema.json");
    let path = crate_root().join("profiles").join(file);
    let profile: toml::Table =
        toml::from_str(&read_text(&path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let behaviours = profile["behaviours"]
        .as_table()
        .expect("[behaviours] table");
    let mut scripts = 0;
    for (name, behaviour) in behaviours {
        let message = behaviour
            .as_str()
            .or_else(|| behaviour.get("message").and_then(toml::Value::as_str));
        let Some(message) = message else {
            panic!("{file}: behaviour {name} is neither a message nor a table with one");
        };
        if !message.starts_with(SCRIPT_PREFIX) {
            continue;
        }
        scripts += 1;
        assert_eq!(
            errors(&validator, &script_document(message)),
            Vec::<String>::new(),
            "{file}: behaviour {name}"
        );
        let plan =
            plan_for_message(message).unwrap_or_else(|e| panic!("{file}: behaviour {name}: {e}"));
        assert!(!plan.is_empty(), "{file}: behaviour {name}");
    }
    assert!(
        scripts >= 10,
        "{file}: only {scripts} scripted behaviours found"
    );
}

fn parse_script_value(document: &Value) -> Result<(), String> {
    plan_for_message(&format!("{SCRIPT_PREFIX}{document}"))
        .map(drop)
        .map_err(|e| e.to_string())
}

#[test]
fn script_schema_fields_are_the_parser_fields() {
    let schema = schema_value("agent-script.schema.json");
    let validator = validator("agent-script.schema.json");
    check_object("script", &schema, &validator, &schema, &|document| {
        let result = parse_script_value(&document);
        (document, result)
    });
    let kinds = properties(&schema, &schema["$defs"]["step"]);
    let document = json!({"steps": [{"zzz_unknown": {}}]});
    let error = parse_script_value(&document).expect_err("unknown step kind accepted");
    assert_eq!(expected_names(&error), kinds, "step kinds ({error})");
    for kind in &kinds {
        let node = &schema["$defs"]["step"]["properties"][kind];
        check_object(kind, &schema, &validator, node, &|value| {
            let document = json!({"steps": [{ kind.as_str(): value }]});
            let result = parse_script_value(&document);
            (document, result)
        });
    }
    let result_node = &schema["$defs"]["toolResult"];
    check_object(
        "toolCall.result",
        &schema,
        &validator,
        result_node,
        &|value| {
            let document = json!({"steps": [{"toolCall": {"name": "t", "result": value}}]});
            let result = parse_script_value(&document);
            (document, result)
        },
    );
}

fn script(steps: &str) -> String {
    format!("{SCRIPT_PREFIX}{{\"steps\":[{steps}]}}")
}

#[test]
fn script_schema_and_parser_agree() {
    let validator = validator("agent-script.schema.json");
    let valid = [
        script(""),
        script(r#"{"markdown":{"text":"a","chunks":0}},{"reasoning":{"text":"b","chunks":null}}"#),
        script(r#"{"wait":{"ms":600000}},{"waitForCancel":{}},{"canvases":{}},{"complete":{}}"#),
        script(
            r#"{"toolCall":{"id":null,"name":"t","displayName":"T","input":"{}","inputChunks":2,"confirmation":"ask","options":[{"id":"a"}],"editable":false,"reconfirm":true,"client":false,"clientId":"c","contentUpdates":3,"result":{"success":true,"message":null,"text":"x"},"resultConfirmation":true}}"#,
        ),
        script(r#"{"toolCall":{"name":"t","result":null}}"#),
        script(
            r#"{"inputRequest":{}},{"inputRequest":{"id":"r","message":"m","url":"u","questions":[]}}"#,
        ),
        script(
            r#"{"usage":{"inputTokens":-1,"outputTokens":null,"model":"m"}},{"error":{"message":"e","errorType":"E","resumable":true}}"#,
        ),
    ];
    for message in &valid {
        assert_eq!(
            errors(&validator, &script_document(message)),
            Vec::<String>::new(),
            "{message}"
        );
        plan_for_message(message).unwrap_or_else(|e| panic!("{e}: {message}"));
    }
    let invalid = [
        // Unknown step.
        script(r#"{"dance":{}}"#),
        // Unknown field in a step.
        script(r#"{"markdown":{"text":"a","colour":"red"}}"#),
        script(r#"{"toolCall":{"name":"t","result":{"success":true,"extra":1}}}"#),
        script(r#"{"complete":{"now":true}}"#),
        // Wrong types.
        script(r#"{"markdown":{"text":5}}"#),
        script(r#"{"wait":{"ms":"100"}}"#),
        script(r#"{"markdown":{"text":"a","chunks":-1}}"#),
        script(r#"{"toolCall":{"name":"t","reconfirm":null}}"#),
        script(r#"{"toolCall":{"name":"t","confirmation":"never"}}"#),
        // Wait over the limit.
        script(r#"{"wait":{"ms":600001}}"#),
        // Missing required fields.
        script(r#"{"toolCall":{}}"#),
        script(r#"{"error":{}}"#),
        script(r#"{"wait":{}}"#),
        // Not exactly one step kind per step; not an object.
        script(r#"{"markdown":{"text":"a"},"complete":{}}"#),
        script(r#"{}"#),
        script(r#""complete""#),
        // Unknown top-level member; missing steps.
        format!("{SCRIPT_PREFIX}{{\"steps\":[],\"version\":1}}"),
        format!("{SCRIPT_PREFIX}{{}}"),
    ];
    for message in &invalid {
        assert!(
            !validator.is_valid(&script_document(message)),
            "schema accepts {message}"
        );
        assert!(
            plan_for_message(message).is_err(),
            "plan_for_message accepts {message}"
        );
    }
}

/// A raw step's `grow` makes hostile sizes from a short text, and refuses what it cannot do.
#[test]
fn raw_frames_grow_by_their_markers() {
    use ahpspec::suite::{Grow, Raw, GROWN_FRAME_LIMIT};
    let grow = |marker: &str, unit: &str, times| Grow {
        marker: marker.into(),
        unit: unit.into(),
        times,
    };
    let raw = Raw {
        text: "{\"deep\":@O@@C@}".into(),
        intent: "i".into(),
        grow: vec![grow("@O@", "[", 3), grow("@C@", "]", 3)],
        ..Raw::default()
    };
    assert_eq!(
        raw.grown(raw.text.clone()).as_deref(),
        Ok("{\"deep\":[[[]]]}")
    );
    // Twins: a marker the text lacks, and a frame past the limit, are errors.
    let missing = Raw {
        grow: vec![grow("@X@", "a", 1)],
        ..raw.clone()
    };
    assert!(missing.grown(missing.text.clone()).is_err());
    let huge = Raw {
        grow: vec![grow("@O@", "ab", GROWN_FRAME_LIMIT / 2)],
        ..raw.clone()
    };
    assert!(huge.grown(huge.text.clone()).is_err());
}
