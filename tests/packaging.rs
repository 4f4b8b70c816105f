//! The ways ahpspec ships stay consistent with the crate: the npm packages, the wheel and the
//! crate carry one version (and the packaging check recorded in packaging/CHECK.md was run
//! at it), the npm launcher knows exactly the platform packages there are, the CI action is
//! well-formed with the inputs the README documents, and the published crate holds every
//! file the binary compiles in.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn json(path: &str) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn cargo_toml() -> toml::Table {
    toml::from_str(&read("Cargo.toml")).expect("Cargo.toml parses")
}

fn package_field(name: &str) -> String {
    cargo_toml()["package"][name]
        .as_str()
        .unwrap_or_else(|| panic!("Cargo.toml has no package.{name}"))
        .to_owned()
}

/// The platform packages: the directories of packaging/npm/platforms.
fn platforms() -> BTreeSet<String> {
    std::fs::read_dir(root().join("packaging/npm/platforms"))
        .expect("packaging/npm/platforms")
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn every_package_carries_the_crate_version() {
    let version = package_field("version");
    assert_eq!(version, env!("CARGO_PKG_VERSION"));
    let launcher = json("packaging/npm/ahpspec/package.json");
    assert_eq!(launcher["name"], "ahpspec");
    assert_eq!(launcher["version"], version.as_str(), "npm ahpspec");
    let optional = launcher["optionalDependencies"]
        .as_object()
        .expect("optionalDependencies");
    for (name, wanted) in optional {
        assert_eq!(wanted, version.as_str(), "ahpspec's dependency on {name}");
    }
    for platform in platforms() {
        let path = format!("packaging/npm/platforms/{platform}/package.json");
        let package = json(&path);
        assert_eq!(package["version"], version.as_str(), "{path}");
    }
    let pyproject: toml::Table =
        toml::from_str(&read("packaging/pypi/pyproject.toml")).expect("pyproject parses");
    assert_eq!(
        pyproject["project"]["version"].as_str(),
        Some(version.as_str()),
        "the wheel's version"
    );
    assert_eq!(pyproject["project"]["name"].as_str(), Some("ahpspec"));
    assert_eq!(
        pyproject["tool"]["maturin"]["bindings"].as_str(),
        Some("bin")
    );
    // The recorded packaging check built and installed exactly these artefacts.
    let check = read("packaging/CHECK.md");
    for artefact in [
        format!("ahpspec-{version}.tgz"),
        format!("ahpspec-linux-x64-{version}.tgz"),
        format!("ahpspec-{version}-py3-none-"),
    ] {
        assert!(
            check.contains(&artefact),
            "packaging/CHECK.md does not show {artefact}: run packaging/check.sh again"
        );
    }
    assert!(check.contains(&format!("for ahpspec {version} (")));
}

#[test]
fn the_launcher_knows_every_platform_package() {
    let platforms = platforms();
    assert!(platforms.contains("linux-x64"), "{platforms:?}");
    let launcher = json("packaging/npm/ahpspec/package.json");
    let optional: BTreeSet<String> = launcher["optionalDependencies"]
        .as_object()
        .expect("optionalDependencies")
        .keys()
        .cloned()
        .collect();
    let scoped: BTreeSet<String> = platforms.iter().map(|p| format!("@ahpspec/{p}")).collect();
    assert_eq!(
        optional, scoped,
        "optionalDependencies are the platform packages"
    );
    assert_eq!(launcher["bin"]["ahpspec"], "bin/ahpspec.js");
    let script = read("packaging/npm/ahpspec/bin/ahpspec.js");
    assert!(script.starts_with("#!/usr/bin/env node\n"));
    let named: BTreeSet<String> = script
        .split('"')
        .filter(|s| s.starts_with("@ahpspec/"))
        .map(str::to_owned)
        .collect();
    assert_eq!(named, scoped, "the launcher's platform table");
    for platform in &platforms {
        let package = json(&format!("packaging/npm/platforms/{platform}/package.json"));
        let (os, cpu) = platform.split_once('-').expect("os-cpu");
        assert_eq!(package["name"], format!("@ahpspec/{platform}"));
        assert_eq!(package["os"], serde_json::json!([os]), "{platform}");
        assert_eq!(package["cpu"], serde_json::json!([cpu]), "{platform}");
        let exe = if os == "win32" {
            "ahpspec.exe"
        } else {
            "ahpspec"
        };
        assert_eq!(package["files"], serde_json::json!([format!("bin/{exe}")]));
        assert!(script.contains(&format!("\"{platform}\": \"@ahpspec/{platform}\"")));
    }
}

#[test]
fn metadata_agrees_across_registries() {
    let repository = package_field("repository");
    for field in [
        "license",
        "readme",
        "description",
        "homepage",
        "documentation",
    ] {
        assert!(!package_field(field).is_empty(), "{field}");
    }
    let package = &cargo_toml()["package"];
    for list in ["keywords", "categories"] {
        let items = package[list].as_array().expect(list);
        assert!(
            !items.is_empty() && items.len() <= 5,
            "{list}: crates.io takes 1 to 5"
        );
    }
    assert_eq!(package_field("license"), "MIT");
    assert!(read("LICENSE").starts_with("MIT License"));
    let launcher = json("packaging/npm/ahpspec/package.json");
    assert_eq!(launcher["license"], "MIT");
    assert_eq!(
        launcher["repository"]["url"],
        format!("git+{repository}.git"),
        "npm repository"
    );
    let pyproject: toml::Table =
        toml::from_str(&read("packaging/pypi/pyproject.toml")).expect("pyproject parses");
    assert_eq!(
        pyproject["project"]["urls"]["Repository"].as_str(),
        Some(repository.as_str())
    );
}

// ---------------------------------------------------------------------------------------------
// The published crate
// ---------------------------------------------------------------------------------------------

/// Whether `path` (relative, `/`-separated) matches a Cargo `include` pattern (`/dir/**/*.rs`,
/// `/dir/*.toml`, `/file`): `**` is any number of directories, `*` any name part.
fn included(pattern: &str, path: &str) -> bool {
    fn segment(pattern: &str, name: &str) -> bool {
        match pattern.split_once('*') {
            None => pattern == name,
            Some((head, tail)) => {
                name.len() >= head.len() + tail.len()
                    && name.starts_with(head)
                    && name.ends_with(tail)
            }
        }
    }
    fn walk(pattern: &[&str], path: &[&str]) -> bool {
        match (pattern.first(), path.first()) {
            (None, None) => true,
            (Some(&"**"), _) => {
                walk(&pattern[1..], path) || (!path.is_empty() && walk(pattern, &path[1..]))
            }
            (Some(p), Some(n)) => segment(p, n) && walk(&pattern[1..], &path[1..]),
            _ => false,
        }
    }
    let pattern: Vec<&str> = pattern.trim_start_matches('/').split('/').collect();
    let path: Vec<&str> = path.split('/').collect();
    walk(&pattern, &path)
}

/// Every file under `dir` with extension `ext`.
fn files(dir: &Path, ext: &str, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("readable").flatten() {
        let path = entry.path();
        if path.is_dir() {
            files(&path, ext, out);
        } else if path.extension().is_some_and(|e| e == ext) {
            out.push(path);
        }
    }
}

/// The files the sources compile in (`include_str!`/`include_bytes!`), relative to the root.
fn compiled_in() -> BTreeSet<String> {
    let root = root();
    let mut sources = Vec::new();
    files(&root.join("src"), "rs", &mut sources);
    let mut found = BTreeSet::new();
    for source in sources {
        let text = std::fs::read_to_string(&source).expect("source");
        for macro_name in ["include_str!(\"", "include_bytes!(\""] {
            for part in text.split(macro_name).skip(1) {
                let relative = part.split('"').next().expect("path");
                let path = source.parent().expect("dir").join(relative);
                let path = path
                    .canonicalize()
                    .unwrap_or_else(|e| panic!("{} includes {relative}: {e}", source.display()));
                let relative = path.strip_prefix(&root).expect("inside the crate");
                found.insert(relative.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    found
}

#[test]
fn the_crate_holds_everything_the_binary_compiles_in() {
    let patterns: Vec<String> = cargo_toml()["package"]["include"]
        .as_array()
        .expect("package.include")
        .iter()
        .map(|p| p.as_str().expect("pattern").to_owned())
        .collect();
    let compiled = compiled_in();
    for wanted in [
        "suites/transport.toml",
        "schemas/ahp/1.0.0/index.json",
        "docs/ahp/RULES.md",
    ] {
        assert!(
            compiled.contains(wanted),
            "{wanted} is compiled in: {compiled:?}"
        );
    }
    let missing: Vec<&String> = compiled
        .iter()
        .filter(|path| !patterns.iter().any(|p| included(p, path)))
        .collect();
    assert!(
        missing.is_empty(),
        "compiled in but not packaged: {missing:?}"
    );
    for pattern in &patterns {
        let plain = pattern.trim_start_matches('/');
        if !plain.contains('*') {
            assert!(
                root().join(plain).is_file(),
                "include names {pattern}, which is missing"
            );
        }
    }
}

#[test]
fn include_patterns_match_as_cargo_does() {
    assert!(included("/src/**/*.rs", "src/report/scope.rs"));
    assert!(included("/src/**/*.rs", "src/lib.rs"));
    assert!(included("/suites/**/*.toml", "suites/aap/meta.toml"));
    assert!(included(
        "/profiles/*.toml",
        "profiles/ahpspec-scripted.toml"
    ));
    assert!(!included("/profiles/*.toml", "profiles/x/y.toml"));
    assert!(!included("/src/**/*.rs", "tests/scope.rs"));
    assert!(included("/README.md", "README.md"));
    assert!(!included("/README.md", "docs/README.md"));
}

// ---------------------------------------------------------------------------------------------
// The CI action
// ---------------------------------------------------------------------------------------------

/// One line of action.yml: its indentation and text, comments and blank lines left out.
fn yaml_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .map(|l| (l.len() - l.trim_start().len(), l.trim_start()))
        .collect()
}

/// The keys of the mapping under top-level `section` (one level down), with the text of
/// each entry's `description`.
fn section_keys(text: &str, section: &str) -> Vec<(String, String)> {
    let lines = yaml_lines(text);
    let start = lines
        .iter()
        .position(|(indent, l)| *indent == 0 && *l == format!("{section}:"))
        .unwrap_or_else(|| panic!("action.yml has no {section}:"));
    let mut keys: Vec<(String, String)> = Vec::new();
    for (indent, line) in lines[start + 1..].iter().take_while(|(i, _)| *i > 0) {
        match indent {
            2 => keys.push((line.trim_end_matches(':').to_owned(), String::new())),
            4 => {
                if let (Some(last), Some(text)) =
                    (keys.last_mut(), line.strip_prefix("description:"))
                {
                    last.1 = text.trim().to_owned();
                }
            }
            _ => {}
        }
    }
    keys
}

/// Every `${{ <prefix>NAME… }}` reference in the text: the NAMEs.
fn references(text: &str, prefix: &str) -> BTreeSet<String> {
    text.split("${{")
        .skip(1)
        .filter_map(|expr| expr.split("}}").next())
        .flat_map(|expr| {
            expr.split(prefix)
                .skip(1)
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .map(|rest| {
            rest.chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect()
        })
        .collect()
}

#[test]
fn the_action_is_well_formed_with_the_documented_inputs() {
    let text = read("action.yml");
    assert!(!text.contains('\t'), "YAML takes no tabs");
    for (indent, line) in yaml_lines(&text) {
        assert_eq!(indent % 2, 0, "odd indentation: {line}");
    }
    let top: Vec<&str> = yaml_lines(&text)
        .into_iter()
        .filter(|(indent, _)| *indent == 0)
        .map(|(_, l)| l.split(':').next().expect("key"))
        .collect();
    for key in ["name", "description", "inputs", "outputs", "runs"] {
        assert!(top.contains(&key), "action.yml lacks {key}");
    }
    assert!(text.contains("\nruns:\n  using: composite\n  steps:\n"));

    let inputs = section_keys(&text, "inputs");
    let names: BTreeSet<&str> = inputs.iter().map(|(k, _)| k.as_str()).collect();
    for wanted in ["url", "target-profile", "baseline", "strict", "shard"] {
        assert!(names.contains(wanted), "input {wanted}");
    }
    for (name, description) in &inputs {
        assert!(!description.is_empty(), "input {name} has no description");
    }
    // Every input the steps read is declared, and every declared one is read.
    let used = references(&text, "inputs.");
    assert_eq!(
        used,
        names.iter().map(|n| n.to_string()).collect(),
        "inputs used"
    );

    // Step outputs read are written by a step with that id.
    let ids: BTreeSet<String> = yaml_lines(&text)
        .into_iter()
        .filter_map(|(_, l)| l.strip_prefix("id: "))
        .map(str::to_owned)
        .collect();
    for step in references(&text, "steps.") {
        assert!(ids.contains(&step), "steps.{step} is no step id");
    }
    for output in ["exit-code", "badge"] {
        assert!(
            text.contains(&format!("echo \"{output}=")),
            "output {output} is written"
        );
    }
    assert!(
        text.contains(">> \"$GITHUB_STEP_SUMMARY\""),
        "summary.md goes to the job summary"
    );
    assert!(
        text.contains("uses: actions/upload-artifact@v"),
        "reports are uploaded"
    );
    assert!(
        text.contains("run: exit \"${CODE:-2}\""),
        "the run's exit code is the action's"
    );
    // GitHub runs composite bash steps with -e: a failing run must not stop the step before
    // its exit code is kept.
    assert!(
        text.contains("\"${argv[@]}\" || code=$?"),
        "the exit code survives bash -e"
    );

    // docs/running.md documents exactly these inputs, with a workflow that uses the action.
    let readme = read("docs/running.md");
    let section = readme
        .split("## The GitHub Action")
        .nth(1)
        .expect("docs/running.md has a section on the GitHub Action");
    let section = section.split("\n# ").next().expect("section");
    let section = section.split("\n## ").next().expect("section");
    let documented: BTreeSet<String> = section
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|word| names.contains(*word))
        .map(str::to_owned)
        .collect();
    assert_eq!(
        documented,
        names.iter().map(|n| n.to_string()).collect(),
        "inputs the README names"
    );
    let repository = package_field("repository");
    let slug = repository
        .strip_prefix("https://github.com/")
        .expect("a GitHub repository");
    assert!(
        section.contains(&format!("uses: {slug}@")),
        "a workflow that uses the action from {repository}"
    );
}
