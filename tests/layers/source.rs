//! Reading the library's source for `tests/layers.rs`: its files and module paths, its code
//! without comments, literals and test modules, and the paths that code names, resolved to
//! the files they name.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut pending = vec![dir.to_owned()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("directory entry").path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

pub fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn relative(src: &Path, file: &Path) -> String {
    file.strip_prefix(src)
        .expect("below src")
        .to_string_lossy()
        .replace('\\', "/")
}

/// `aap/case.rs` → `[aap, case]`; `aap/mod.rs` → `[aap]`; `lib.rs` → `[]`.
pub fn module_path(relative: &str) -> Vec<String> {
    let mut parts: Vec<String> = relative
        .trim_end_matches(".rs")
        .split('/')
        .map(str::to_owned)
        .collect();
    if parts.last().is_some_and(|p| p == "mod") || parts == ["lib"] {
        parts.pop();
    }
    parts
}

/// The source with comments, string and character literals blanked (so that braces and
/// paths in them count for nothing).
pub fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&chars, i) {
            // A raw string: r"…" or r#…"…"#….
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= chars.len() {
                    break;
                }
                if chars[j] == '"' && (0..hashes).all(|h| chars.get(j + 1 + h) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.push_str("\"\"");
            i = j;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{1F600}'), or a lifetime ('a), kept.
            let close = if next == Some('\\') {
                (i + 2..chars.len().min(i + 12)).find(|&j| chars[j] == '\'')
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match close {
                Some(end) => {
                    out.push_str("' '");
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// The code without `#[cfg(test)]` items that have a body (`mod tests { … }`, test helpers).
pub fn strip_tests(code: &str) -> String {
    let mut out = code.to_owned();
    while let Some(start) = out.find("#[cfg(test)]") {
        let after = start + "#[cfg(test)]".len();
        let rest = &out[after..];
        // The item ends at its first `;` (a declaration) or its body's closing brace.
        let brace = rest.find('{');
        let semicolon = rest.find(';');
        let end = match (brace, semicolon) {
            (Some(b), Some(s)) if s < b => after + s + 1,
            (Some(b), _) => {
                let mut depth = 0;
                let mut end = out.len();
                for (offset, ch) in out[after + b..].char_indices() {
                    match ch {
                        '{' => depth += 1,
                        '}' => {
                            depth -= 1;
                            if depth == 0 {
                                end = after + b + offset + 1;
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                end
            }
            (None, Some(s)) => after + s + 1,
            (None, None) => out.len(),
        };
        out.replace_range(start..end, "");
    }
    out
}

/// Names of the submodule files declared under `#[cfg(test)]` (`#[cfg(test)] mod tests;`).
pub fn test_module_files(code: &str) -> Vec<String> {
    code.match_indices("#[cfg(test)]")
        .filter_map(|(at, attribute)| declared_module(&code[at + attribute.len()..]))
        .collect()
}

/// Submodules this file declares (`mod x;`, `pub mod x;`, `pub(crate) mod x;`).
pub fn child_modules(code: &str) -> BTreeSet<String> {
    code.lines().filter_map(declared_module).collect()
}

/// The module an item declares, when it starts with `[pub[(…)]] mod name;`.
fn declared_module(item: &str) -> Option<String> {
    let item = item.trim_start();
    let item = match item.strip_prefix("pub") {
        Some(rest) if rest.starts_with('(') => rest.split_once(')').map_or(rest, |(_, r)| r),
        Some(rest) => rest,
        None => item,
    };
    let decl = item.trim_start().strip_prefix("mod ")?;
    let name: String = decl
        .chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect();
    decl[name.len()..]
        .trim_start()
        .starts_with(';')
        .then_some(name)
}

/// Every path the code names: the expanded trees of its `use` items, and the `crate::`,
/// `super::` and `self::` paths written inline.
pub fn paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest_of_code = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = find_word(rest, "use") {
        rest_of_code.push_str(&rest[..at]);
        let after = &rest[at + 3..];
        let Some(end) = after.find(';') else {
            break;
        };
        let spaced: Vec<&str> = after[..end].split_whitespace().collect();
        let tree: String = spaced
            .iter()
            .map(|word| if *word == "as" { "@" } else { word })
            .collect();
        found.extend(expand(&tree));
        rest = &after[end + 1..];
    }
    rest_of_code.push_str(rest);
    for start in ["crate::", "super::", "self::"] {
        let mut from = 0;
        while let Some(at) = rest_of_code[from..].find(start) {
            let begin = from + at;
            from = begin + start.len();
            let before = rest_of_code[..begin].chars().last();
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                // `$crate::` counts as `crate::`; `foo::crate` is nothing.
                if before != Some('$') {
                    continue;
                }
            }
            let path: String = rest_of_code[begin..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            found.push(path.trim_end_matches(':').to_owned());
        }
    }
    // Inline paths through a child module (`meta::check(…)`): `resolve` keeps those.
    found.extend(inline_child_paths(&rest_of_code));
    found
}

/// Paths of the form `name::…` not preceded by `::` (a child module, an external crate or
/// a type: `resolve` keeps only what names a file).
fn inline_child_paths(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = (bytes[i].is_ascii_lowercase() || bytes[i] == b'_')
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'))
            && !(i >= 1 && bytes[i - 1] == b':');
        if !starts_word {
            i += 1;
            continue;
        }
        let mut j = i;
        while j < bytes.len()
            && (bytes[j].is_ascii_alphanumeric() || bytes[j] == b'_' || bytes[j] == b':')
        {
            j += 1;
        }
        let word = &code[i..j];
        if word.contains("::") && !word.starts_with("crate::") && !word.starts_with("super::") {
            found.push(word.trim_end_matches(':').to_owned());
        }
        i = j.max(i + 1);
    }
    found
}

/// Where `word` stands as a whole word in `code`.
fn find_word(code: &str, word: &str) -> Option<usize> {
    let bytes = code.as_bytes();
    let mut from = 0;
    while let Some(at) = code[from..].find(word) {
        let begin = from + at;
        let end = begin + word.len();
        let before_ok =
            begin == 0 || !(bytes[begin - 1].is_ascii_alphanumeric() || bytes[begin - 1] == b'_');
        let after_ok = end < bytes.len() && bytes[end].is_ascii_whitespace();
        if before_ok && after_ok {
            return Some(begin);
        }
        from = end;
    }
    None
}

/// A `use` tree (whitespace removed, ` as ` written `@`) as the paths it imports.
fn expand(tree: &str) -> Vec<String> {
    let tree = tree.trim_start_matches("::");
    let Some(open) = tree.find('{') else {
        let path = tree.split('@').next().unwrap_or(tree);
        return vec![path.trim_end_matches('*').trim_end_matches("::").to_owned()];
    };
    let prefix = &tree[..open];
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let mut parts = Vec::new();
    let (mut depth, mut current) = (0, String::new());
    for ch in inner.chars() {
        match ch {
            '{' => depth += 1,
            '}' => depth -= 1,
            _ => {}
        }
        if ch == ',' && depth == 0 {
            parts.push(std::mem::take(&mut current));
        } else {
            current.push(ch);
        }
    }
    parts.push(current);
    parts
        .into_iter()
        .filter(|part| !part.is_empty())
        .flat_map(|part| {
            if part == "self" || part.starts_with("self@") {
                vec![prefix.trim_end_matches("::").to_owned()]
            } else {
                expand(&format!("{prefix}{part}"))
            }
        })
        .collect()
}

/// The file a path names: the longest prefix of its module path that is a file.
pub fn resolve(
    module: &[String],
    children: &BTreeSet<String>,
    path: &str,
    by_module: &BTreeMap<Vec<String>, String>,
) -> Option<String> {
    let segments: Vec<&str> = path.split("::").filter(|s| !s.is_empty()).collect();
    let (mut base, rest): (Vec<String>, &[&str]) = match segments.first()? {
        &"crate" | &"$crate" => (Vec::new(), &segments[1..]),
        &"super" => {
            let mut base = module.to_vec();
            let mut at = 0;
            while segments.get(at) == Some(&"super") {
                base.pop();
                at += 1;
            }
            (base, &segments[at..])
        }
        &"self" => (module.to_vec(), &segments[1..]),
        first if children.contains(*first) => (module.to_vec(), &segments[..]),
        _ => return None,
    };
    let mut best = by_module.get(&base).cloned();
    for segment in rest {
        base.push((*segment).to_owned());
        match by_module.get(&base) {
            Some(file) => best = Some(file.clone()),
            None => break,
        }
    }
    best
}
