//! The library's layering, read from its own source: every `use crate::…`, `super::…` and
//! inline `crate::…` path of `src/` (test modules left out) is resolved to the file it
//! names, and
//! - no two files import each other, directly or round a circle (a module and its own
//!   submodules are one piece: a parent re-exports its children, children use their
//!   parent's shared items);
//! - no file imports a file of a higher layer (the layers below, from the wire up);
//! - no runner imports another runner (they are peers over the same floors);
//! - the built-in servers import nothing of the harness, and only composition imports them
//!   (so only composition starts a server);
//! - nothing but `target.rs` and the servers' own folders calls a server's `spawn`
//!   (the command line's `serve` included).
//!
//! A failure names the files and the paths that break the rule.

// Reading the source is a file of its own (tests/layers/, not a test crate).
#[path = "layers/source.rs"]
mod source;

use std::collections::{BTreeMap, BTreeSet};

use source::{
    child_modules, code_only, module_path, paths, read, relative, resolve, rust_files, src_dir,
    strip_tests, test_module_files,
};

/// The layers from the bottom up: (name, the files and folders of `src/` in it). A folder
/// ends in `/`; the longest match decides.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "vocabulary",
        &[
            "lib.rs",
            "verdict.rs",
            "fasthash.rs",
            "redact.rs",
            "faultset.rs",
            "aap/mod.rs",
            "aap/version.rs",
        ],
    ),
    (
        "transport",
        &[
            "transport.rs",
            "transport/",
            "aap/http.rs",
            "aap/http/",
            "aap/sse.rs",
        ],
    ),
    ("tape", &["tape/", "schema.rs"]),
    (
        "checks",
        &["checks/", "aap/checks.rs", "aap/checks/", "aap/model.rs"],
    ),
    (
        "ground floor",
        &["rows/", "catalog/", "server.rs", "suite/", "aap/suite.rs"],
    ),
    (
        "client",
        &[
            "client/",
            "aap/agent.rs",
            "aap/case.rs",
            "aap/case/",
            "aap/expect.rs",
            "aap/vars.rs",
        ],
    ),
    // The one step interpreter: a case's typed steps on client connections, judged. Below
    // the runners that run steps (the suite engine, the fuzzer's probes).
    ("steps", &["steps.rs", "steps/"]),
    (
        "runners",
        &[
            "engine/",
            "fuzz/",
            "aap/runner.rs",
            "aap/fuzz/",
            "proxy/",
            "traffic.rs",
            "traffic/",
            "capture.rs",
            "capture/",
        ],
    ),
    // coverage.rs maps every rule to its cases, checks, faults (the servers' catalogs) and
    // fuzzer operations: it knows the servers as composition does. reach.rs runs a fuzz
    // campaign against each fault of the built-in host.
    (
        "composition",
        &["certify.rs", "target.rs", "coverage.rs", "reach.rs"],
    ),
    ("reports", &["report/", "merge.rs"]),
    ("front ends", &["embed.rs", "selfcheck.rs"]),
];

/// The runners: peers that never import each other.
const RUNNERS: &[(&str, &[&str])] = &[
    ("AHP runner", &["engine/"]),
    ("AHP fuzzer", &["fuzz/"]),
    ("AAP runner", &["aap/runner.rs"]),
    ("AAP fuzzer", &["aap/fuzz/"]),
    (
        "proxy and check",
        &["proxy/", "traffic.rs", "traffic/", "capture.rs", "capture/"],
    ),
];

/// Independent peers of the harness: the built-in servers (and the schema generator),
/// which import nothing of it but the vocabulary of faults.
const INDEPENDENT: &[(&str, &[&str])] = &[
    ("AHP host", &["host/"]),
    ("AAP server", &["aaphost/"]),
    ("schema generator", &["schemagen/"]),
];

/// What an independent peer may import besides its own files.
const INDEPENDENT_MAY_IMPORT: &[&str] = &["faultset.rs"];

/// The servers, and the layer that alone may import them.
const SERVERS: &[&str] = &["host/", "aaphost/"];
const COMPOSITION: &str = "composition";

#[test]
fn no_file_imports_a_file_that_imports_it_back() {
    let graph = Graph::read();
    let circles = graph.circles();
    assert!(
        circles.is_empty(),
        "circles of files (each imports the next, the last the first):\n{}",
        circles
            .iter()
            .map(|circle| format!("  {}", circle.join(" -> ")))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

#[test]
fn every_file_imports_only_its_own_layer_and_below() {
    let graph = Graph::read();
    let mut wrong = Vec::new();
    for (file, targets) in &graph.edges {
        let Some((from, from_rank)) = layer_of(file) else {
            continue;
        };
        for (target, path) in targets {
            if let Some((to, to_rank)) = layer_of(target) {
                if to_rank > from_rank {
                    wrong.push(format!(
                        "  {file} ({from}) imports {target} ({to}) by {path}"
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "imports of a higher layer:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn every_file_has_a_layer_or_is_an_independent_peer() {
    let graph = Graph::read();
    let homeless: Vec<&String> = graph
        .files
        .keys()
        .filter(|file| layer_of(file).is_none() && group_of(INDEPENDENT, file).is_none())
        .collect();
    assert!(
        homeless.is_empty(),
        "files of no layer (add them to LAYERS or INDEPENDENT): {homeless:?}"
    );
}

#[test]
fn no_runner_imports_another_runner() {
    let graph = Graph::read();
    let mut wrong = Vec::new();
    for (file, targets) in &graph.edges {
        let Some(from) = group_of(RUNNERS, file) else {
            continue;
        };
        for (target, path) in targets {
            match group_of(RUNNERS, target) {
                Some(to) if to != from => wrong.push(format!(
                    "  {file} ({from}) imports {target} ({to}) by {path}"
                )),
                _ => {}
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "runners importing each other:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn the_servers_stand_alone_and_only_composition_starts_them() {
    let graph = Graph::read();
    let mut wrong = Vec::new();
    for (file, targets) in &graph.edges {
        let peer = group_of(INDEPENDENT, file);
        for (target, path) in targets {
            let target_peer = group_of(INDEPENDENT, target);
            match (peer, target_peer) {
                (Some(from), to)
                    if to != Some(from) && !INDEPENDENT_MAY_IMPORT.contains(&target.as_str()) =>
                {
                    wrong.push(format!("  {file} ({from}) imports {target} by {path}"));
                }
                (None, Some(to)) => {
                    let server = SERVERS.iter().any(|s| target.starts_with(s));
                    let composing = layer_of(file).is_some_and(|(l, _)| l == COMPOSITION);
                    if server && !composing {
                        wrong.push(format!(
                            "  {file} imports the {to} ({target}) by {path}: only composition may"
                        ));
                    }
                }
                _ => {}
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn only_target_rs_calls_a_servers_spawn() {
    let src = src_dir();
    let mut wrong = Vec::new();
    for file in rust_files(&src) {
        let relative = relative(&src, &file);
        if SERVERS.iter().any(|s| relative.starts_with(s)) || relative == "target.rs" {
            continue;
        }
        let code = strip_tests(&code_only(&read(&file)));
        for call in ["host::spawn(", "aaphost::spawn("] {
            let called = code.match_indices(call).any(|(at, _)| {
                !code[..at]
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_alphanumeric() || c == '_')
            });
            if called {
                wrong.push(format!("  {relative} calls {call}…)"));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "servers started outside target.rs:\n{}",
        wrong.join("\n")
    );
}

/// Which of `groups` a file belongs to (the longest matching entry).
fn group_of(groups: &[(&'static str, &[&str])], file: &str) -> Option<&'static str> {
    groups
        .iter()
        .flat_map(|(name, entries)| entries.iter().map(move |entry| (name, entry)))
        .filter(|(_, entry)| matches(entry, file))
        .max_by_key(|(_, entry)| entry.len())
        .map(|(name, _)| *name)
}

/// A file's layer and its rank (0 = the bottom).
fn layer_of(file: &str) -> Option<(&'static str, usize)> {
    let name = group_of(LAYERS, file)?;
    let rank = LAYERS.iter().position(|(n, _)| *n == name)?;
    Some((name, rank))
}

fn matches(entry: &str, file: &str) -> bool {
    if entry.ends_with('/') {
        file.starts_with(entry)
    } else {
        file == entry
    }
}

/// The library's files and what each imports: file → (imported file → the first path that
/// names it).
struct Graph {
    /// File (relative to `src/`) → its module path.
    files: BTreeMap<String, Vec<String>>,
    edges: BTreeMap<String, BTreeMap<String, String>>,
}

impl Graph {
    fn read() -> Graph {
        let src = src_dir();
        let mut files = BTreeMap::new();
        let mut texts = BTreeMap::new();
        for file in rust_files(&src) {
            let relative = relative(&src, &file);
            // The command line is a crate of its own (`crate::` there is main.rs).
            if relative == "main.rs" || relative.starts_with("cli/") || relative.starts_with("bin/")
            {
                continue;
            }
            files.insert(relative.clone(), module_path(&relative));
            texts.insert(relative, read(&file));
        }
        let by_module: BTreeMap<Vec<String>, String> = files
            .iter()
            .map(|(file, module)| (module.clone(), file.clone()))
            .collect();
        // Files declared `#[cfg(test)] mod name;` are tests: left out like inline test modules.
        let mut tests_only = BTreeSet::new();
        for (file, text) in &texts {
            let code = code_only(text);
            for name in test_module_files(&code) {
                let mut module = files[file].clone();
                module.push(name);
                if let Some(test_file) = by_module.get(&module) {
                    tests_only.insert(test_file.clone());
                }
            }
        }
        let mut edges: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (file, text) in &texts {
            if tests_only.contains(file) {
                continue;
            }
            let module = &files[file];
            let code = strip_tests(&code_only(text));
            let children = child_modules(&code);
            let entry = edges.entry(file.clone()).or_default();
            for path in paths(&code) {
                let Some(target) = resolve(module, &children, &path, &by_module) else {
                    continue;
                };
                if &target != file && !tests_only.contains(&target) {
                    entry.entry(target).or_insert(path);
                }
            }
        }
        files.retain(|file, _| !tests_only.contains(file));
        Graph { files, edges }
    }

    /// Circles of files, each once (edges between a module and its own submodules left
    /// out), as the files round each one.
    fn circles(&self) -> Vec<Vec<String>> {
        let related = |a: &str, b: &str| {
            let (ma, mb) = (&self.files[a], &self.files[b]);
            ma.starts_with(mb) || mb.starts_with(ma)
        };
        let edges: BTreeMap<&str, Vec<&str>> = self
            .edges
            .iter()
            .map(|(file, targets)| {
                let kept = targets
                    .keys()
                    .filter(|target| self.files.contains_key(*target) && !related(file, target))
                    .map(String::as_str)
                    .collect();
                (file.as_str(), kept)
            })
            .collect();
        strongly_connected(&edges)
            .into_iter()
            .filter(|component| component.len() > 1)
            .map(|component| circle_through(&component, &edges))
            .collect()
    }
}

/// Tarjan's strongly connected components.
fn strongly_connected<'a>(edges: &BTreeMap<&'a str, Vec<&'a str>>) -> Vec<Vec<&'a str>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        next: usize,
        components: Vec<Vec<&'a str>>,
    }
    fn visit<'a>(node: &'a str, edges: &BTreeMap<&'a str, Vec<&'a str>>, s: &mut State<'a>) {
        s.index.insert(node, s.next);
        s.low.insert(node, s.next);
        s.next += 1;
        s.stack.push(node);
        s.on_stack.insert(node);
        for &next in edges.get(node).into_iter().flatten() {
            if !s.index.contains_key(next) {
                visit(next, edges, s);
                let low = s.low[node].min(s.low[next]);
                s.low.insert(node, low);
            } else if s.on_stack.contains(next) {
                let low = s.low[node].min(s.index[next]);
                s.low.insert(node, low);
            }
        }
        if s.low[node] == s.index[node] {
            let mut component = Vec::new();
            while let Some(top) = s.stack.pop() {
                s.on_stack.remove(top);
                component.push(top);
                if top == node {
                    break;
                }
            }
            s.components.push(component);
        }
    }
    let mut state = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        next: 0,
        components: Vec::new(),
    };
    for &node in edges.keys() {
        if !state.index.contains_key(node) {
            visit(node, edges, &mut state);
        }
    }
    state.components
}

/// One circle inside a strongly connected component, from its first file back to it.
fn circle_through(component: &[&str], edges: &BTreeMap<&str, Vec<&str>>) -> Vec<String> {
    let members: BTreeSet<&str> = component.iter().copied().collect();
    let start = *members.iter().next().expect("a component has a member");
    // Breadth-first from the start to any file that imports the start.
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = std::collections::VecDeque::from([start]);
    while let Some(node) = queue.pop_front() {
        for &next in edges.get(node).into_iter().flatten() {
            if !members.contains(next) {
                continue;
            }
            if next == start {
                let mut circle = vec![node.to_owned()];
                let mut at = node;
                while let Some(&before) = came_from.get(at) {
                    circle.push(before.to_owned());
                    at = before;
                }
                circle.reverse();
                circle.push(start.to_owned());
                return circle;
            }
            if next != start && !came_from.contains_key(next) {
                came_from.insert(next, node);
                queue.push_back(next);
            }
        }
    }
    component.iter().map(|f| f.to_string()).collect()
}
