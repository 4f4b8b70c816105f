//! Always-on checks of every `GET /meta` body beyond its schema: unique agent names,
//! semantic versions, consistent options.

use std::collections::HashSet;

use serde_json::Value;

use super::Observer;
use crate::checks::Rule;

/// `MAJOR.MINOR.PATCH` with optional `-pre` and `+build` parts (semver.org § 2, 9, 10).
pub fn is_semver(text: &str) -> bool {
    let (core, _build) = text.split_once('+').unwrap_or((text, ""));
    let (core, pre) = match core.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (core, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    let numeric = |n: &&str| {
        !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
            && (n.len() == 1 || !n.starts_with('0'))
    };
    numbers.len() == 3
        && numbers.iter().all(numeric)
        && pre.is_none_or(|p| !p.is_empty() && p.split('.').all(|part| !part.is_empty()))
}

pub fn check_meta(observer: &mut Observer, body: &Value) {
    let agents: Vec<&Value> = body
        .get("agents")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    observer.count(Rule::AapMeta003);
    let mut names = HashSet::new();
    for agent in &agents {
        let name = agent
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !names.insert(name) {
            observer.violate(
                Rule::AapMeta003,
                "unique agent names",
                format!("{name:?} twice"),
            );
        }
    }
    for agent in agents {
        let name = agent
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        observer.count(Rule::AapMeta004);
        let version = agent
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !is_semver(version) {
            observer.violate(
                Rule::AapMeta004,
                format!("agent {name}: a semantic version"),
                format!("{version:?}"),
            );
        }
        observer.count(Rule::AapMeta005);
        check_options(observer, name, agent.get("options"));
    }
}

fn check_options(observer: &mut Observer, agent: &str, options: Option<&Value>) {
    let mut names = HashSet::new();
    for option in options.and_then(Value::as_array).into_iter().flatten() {
        let name = option
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !names.insert(name.to_owned()) {
            observer.violate(
                Rule::AapMeta005,
                format!("agent {agent}: unique option names"),
                format!("{name:?} twice"),
            );
        }
        if option.get("type").and_then(Value::as_str) != Some("select") {
            continue;
        }
        let allowed: Vec<&str> = option
            .get("options")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let default = option
            .get("default")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !allowed.contains(&default) {
            observer.violate(
                Rule::AapMeta005,
                format!("agent {agent}: option {name}'s default among {allowed:?}"),
                format!("{default:?}"),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::is_semver;

    #[test]
    fn semantic_versions() {
        for good in [
            "1.0.0",
            "0.1.2",
            "10.20.30",
            "1.0.0-alpha.1",
            "1.0.0+build.5",
            "1.0.0-rc.1+b",
        ] {
            assert!(is_semver(good), "{good}");
        }
        for bad in [
            "1.0",
            "1",
            "01.0.0",
            "1.0.0-",
            "v1.0.0",
            "",
            "1.0.x",
            "1.0.0-a..b",
        ] {
            assert!(!is_semver(bad), "{bad}");
        }
    }
}
