//! The repository stands alone: nothing in it reads, or points a reader at, a path beside
//! the checkout (the reference pack the project once kept next to it). Everything the tests,
//! the benches and the binary need is inside: the rule catalog in `docs/ahp/`, the upstream
//! data in `upstream/ahp/` (each folder with its licence and provenance).

use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Directories that hold no file of the repository: build output, git's own, installed
/// packages and virtual environments a packaging check may leave behind.
const NOT_OURS: &[&str] = &["target", ".git", "node_modules", ".venv", "dist"];

/// Every file of the repository below `dir`, recursively.
fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        std::fs::read_dir(dir).unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()));
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            if !NOT_OURS.iter().any(|n| name == *n) {
                files(&path, out);
            }
        } else if kind.is_file() {
            out.push(path);
        }
    }
}

/// The spellings of a path to the old reference pack beside the checkout, built so that
/// this file does not contain them itself.
fn outside_spellings() -> Vec<String> {
    let pack = ["shared", "/"].concat();
    vec![
        format!("../{pack}"),
        format!("{pack}ahp/"),
        format!("{pack}aap/"),
        format!("\"{}\"", "shared") + " / \"ahp\"",
    ]
}

/// Where `text` names one of `needles`: `line: text` per hit.
fn hits(text: &str, needles: &[String]) -> Vec<String> {
    text.lines()
        .enumerate()
        .filter(|(_, line)| needles.iter().any(|n| line.contains(n.as_str())))
        .map(|(at, line)| format!("{}: {}", at + 1, line.trim()))
        .collect()
}

#[test]
fn no_file_refers_to_a_path_beside_the_checkout() {
    let root = root();
    let mut all = Vec::new();
    files(&root, &mut all);
    assert!(
        all.len() > 200,
        "only {} files found under {}",
        all.len(),
        root.display()
    );
    let needles = outside_spellings();
    let mut found = Vec::new();
    for path in &all {
        // Binary files (none of ours names a path) are skipped, not misread.
        let Ok(text) = std::fs::read_to_string(path) else {
            continue;
        };
        for hit in hits(&text, &needles) {
            found.push(format!(
                "{}:{hit}",
                path.strip_prefix(&root).unwrap_or(path).display()
            ));
        }
    }
    assert!(
        found.is_empty(),
        "files refer to the reference pack beside the checkout; point them at docs/ahp/ or \
         upstream/ahp/ instead:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_check_sees_every_spelling() {
    // The scan above must be able to fail: each spelling is found in a line that holds it.
    let needles = outside_spellings();
    for needle in &needles {
        let line = format!("let dir = root.join({needle});");
        assert_eq!(hits(&line, &needles).len(), 1, "{needle}");
    }
    assert!(hits("upstream/ahp/1.0.0 and docs/ahp/RULES.md", &needles).is_empty());
}

#[test]
fn rust_sources_never_leave_the_crate_root() {
    let root = root();
    let mut all = Vec::new();
    for dir in ["src", "tests", "benches", "fuzz"] {
        files(&root.join(dir), &mut all);
    }
    let escape = ["join(\"", "..", "/"].concat();
    let found: Vec<String> = all
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .filter_map(|p| Some((p, std::fs::read_to_string(p).ok()?)))
        .flat_map(|(p, text)| {
            hits(&text, std::slice::from_ref(&escape))
                .into_iter()
                .map(move |hit| format!("{}:{hit}", p.display()))
        })
        .collect();
    assert!(
        found.is_empty(),
        "paths above the crate root:\n{}",
        found.join("\n")
    );
}

#[test]
fn upstream_data_carries_its_licence_and_source() {
    let root = root();
    let folders = [
        "upstream/ahp/0.8.0-dev",
        "upstream/ahp/1.0.0",
        "schemas/ahp/official-1.0.0",
    ];
    for folder in folders {
        let dir = root.join(folder);
        let licence = std::fs::read_to_string(dir.join("LICENSE"))
            .unwrap_or_else(|e| panic!("{folder}/LICENSE: {e}"));
        assert!(
            licence.contains("MIT License"),
            "{folder}/LICENSE is not MIT"
        );
        let source = std::fs::read_to_string(dir.join("SOURCE.md"))
            .unwrap_or_else(|e| panic!("{folder}/SOURCE.md: {e}"));
        assert!(
            source.contains("microsoft/agent-host-protocol"),
            "{folder}/SOURCE.md does not name the upstream repository"
        );
        assert!(
            source.contains("Commit") || source.contains("commit"),
            "{folder}/SOURCE.md does not name the version (commit)"
        );
    }
    // The rule catalog the project owns is inside too, and names the rules the suites prove.
    let rules = std::fs::read_to_string(root.join("docs/ahp/RULES.md")).expect("docs/ahp/RULES.md");
    assert!(rules.contains("| TRANSPORT-001 | MUST |"));
}
