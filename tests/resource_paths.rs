//! One catalog run against the built-in host takes every resource command of AHP 1.0.0 to
//! a successful answer, every error path the brief names for them, every write mode and
//! both read encodings, and sees the resource-watch channel's action type (issue 25, part
//! 1: resources and watches). Counted from the run's own frames; a missing one fails.

use std::collections::{BTreeSet, HashMap};

use ahpspec::certify::{certify, Options};
use ahpspec::rows::Quiet;
use serde_json::Value;

/// What one request got: (method, what it sent, the answer).
type Exchange = (String, Value, Value);

async fn exchanges() -> (Vec<Exchange>, BTreeSet<String>) {
    let (_tx, rx) = tokio::sync::watch::channel(false);
    let report = certify(&Options::default(), &mut Quiet, rx)
        .await
        .expect("harness starts");
    let mut exchanges = Vec::new();
    let mut action_types = BTreeSet::new();
    for case in &report.cases {
        let mut asked: HashMap<(String, String), (String, Value)> = HashMap::new();
        for frame in &case.transcript {
            let Ok(message) = serde_json::from_str::<Value>(&frame.text) else {
                continue;
            };
            let key = (frame.conn.clone(), message["id"].to_string());
            match (frame.direction.as_str(), message["method"].as_str()) {
                ("sent", Some(method)) if !message["id"].is_null() => {
                    asked.insert(key, (method.to_owned(), message["params"].clone()));
                }
                ("received", Some("action")) => {
                    if let Some(kind) = message["params"]["action"]["type"].as_str() {
                        action_types.insert(kind.to_owned());
                    }
                }
                ("received", None) => {
                    if let Some((method, params)) = asked.remove(&key) {
                        exchanges.push((method, params, message));
                    }
                }
                _ => {}
            }
        }
    }
    (exchanges, action_types)
}

#[tokio::test]
async fn the_catalog_takes_every_resource_command_and_error_path() {
    let (exchanges, action_types) = exchanges().await;
    let succeeded =
        |method: &str, params: &dyn Fn(&Value) -> bool, result: &dyn Fn(&Value) -> bool| {
            exchanges.iter().any(|(m, p, answer)| {
                m == method && params(p) && answer.get("result").is_some_and(result)
            })
        };
    let failed = |method: &str, code: Option<i64>| {
        exchanges.iter().any(|(m, _, answer)| {
            m == method
                && answer.get("error").is_some()
                && code.is_none_or(|c| answer["error"]["code"] == c)
        })
    };
    let any = |_: &Value| true;
    let mut missing = Vec::new();
    // The bidirectional resource commands are exactly the part's commands.
    for method in ahpspec::checks::rpc::HOST_REQUEST_METHODS.iter().copied() {
        if !succeeded(method, &any, &any) {
            missing.push(format!("{method} answered successfully"));
        }
    }
    for mode in ["truncate", "append", "insert"] {
        if !succeeded("resourceWrite", &|p| p["mode"] == mode, &any) {
            missing.push(format!("resourceWrite mode {mode}"));
        }
    }
    if !succeeded("resourceWrite", &|p| p["createOnly"] == true, &any) {
        missing.push("resourceWrite createOnly creating a file".into());
    }
    if !succeeded("resourceWrite", &|p| p.get("ifMatch").is_some(), &any) {
        missing.push("resourceWrite with a current ifMatch".into());
    }
    if !succeeded("resourceDelete", &|p| p["recursive"] == true, &any) {
        missing.push("resourceDelete recursive".into());
    }
    for encoding in ["base64", "utf-8"] {
        if !succeeded("resourceRead", &any, &|r| r["encoding"] == encoding) {
            missing.push(format!("resourceRead answered in {encoding}"));
        }
    }
    if !succeeded("resourceRead", &|p| p["encoding"] == "utf-8", &|r| {
        r["encoding"] == "base64"
    }) {
        missing.push("resourceRead falling back to base64".into());
    }
    for (kind, pick) in [("file", "file"), ("directory", "directory")] {
        if !succeeded("resourceResolve", &any, &|r| r["type"] == pick) {
            missing.push(format!("resourceResolve of a {kind}"));
        }
    }
    for (method, code, what) in [
        (
            "resourceWrite",
            Some(-32010),
            "createOnly on an existing file",
        ),
        ("resourceWrite", Some(-32011), "a stale ifMatch"),
        ("resourceMkdir", Some(-32010), "mkdir on a file"),
        ("resourceResolve", Some(-32008), "a missing path"),
        ("resourceRequest", Some(-32009), "a denied request"),
        ("resourceRead", Some(-32009), "a path outside the workspace"),
        ("resourceList", None, "listing a file or a missing path"),
        (
            "resourceDelete",
            None,
            "a non-empty directory without recursive",
        ),
        (
            "resourceCopy",
            Some(-32010),
            "copy onto an existing file with failIfExists",
        ),
        (
            "resourceMove",
            Some(-32010),
            "move onto an existing file with failIfExists",
        ),
    ] {
        if !failed(method, code) {
            missing.push(format!("{method} refusing {what} ({code:?})"));
        }
    }
    if !action_types.contains("resourceWatch/changed") {
        missing.push("a resourceWatch/changed action".into());
    }
    assert!(
        missing.is_empty(),
        "the catalog run never took: {missing:#?}"
    );
}
