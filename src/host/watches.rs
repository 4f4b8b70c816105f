//! Resource watches: `createResourceWatch` gives a fresh `ahp-resource-watch:/…` channel fed
//! by real file-system events of the workspace (the `notify` crate), filtered by
//! `recursive`, `includes` and `excludes` (globs relative to the watched URI: `*` and `?`
//! within a name, `**` across names). A watch is released when its last subscriber leaves,
//! or when its creator disconnects without ever subscribing.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Weak;

use notify::event::{ModifyKind, RenameMode};
use notify::{EventKind, RecursiveMode, Watcher};
use serde_json::Value;

use super::Shared;

/// Most watches a host keeps at once (each holds an OS watcher).
pub const MAX_WATCHES: usize = 256;
/// The channel scheme of resource watches.
pub const WATCH_SCHEME: &str = "ahp-resource-watch:/";

/// One live watch.
pub struct WatchEntry {
    /// The channel state (`ResourceWatchState`) as JSON.
    pub state: Value,
    pub root: PathBuf,
    pub filter: Filter,
    /// The connection (its id) that created it: the watch goes with it if never subscribed.
    pub creator: u64,
    pub subscribed: bool,
    /// Kept only to be dropped with the entry, which stops the OS watcher.
    #[allow(dead_code)]
    pub watcher: notify::RecommendedWatcher,
}

impl fmt::Debug for WatchEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchEntry")
            .field("state", &self.state)
            .field("creator", &self.creator)
            .finish_non_exhaustive()
    }
}

/// The watches by channel URI.
pub type Watches = HashMap<String, WatchEntry>;

/// Which changes a watch reports.
#[derive(Debug, Clone)]
pub struct Filter {
    pub recursive: bool,
    pub includes: Vec<String>,
    pub excludes: Vec<String>,
}

impl Filter {
    /// Whether a change at `rel` (relative to the watched root) is reported.
    pub fn reports(&self, rel: &Path, ignore_excludes: bool) -> bool {
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if !self.recursive && parts.len() > 1 {
            return false;
        }
        // A pattern naming a directory covers what is under it.
        let hit = |patterns: &[String]| {
            patterns
                .iter()
                .any(|p| (1..=parts.len()).any(|n| glob(&segments(p), &parts[..n])))
        };
        if !ignore_excludes && hit(&self.excludes) {
            return false;
        }
        self.includes.is_empty() || hit(&self.includes)
    }
}

fn segments(pattern: &str) -> Vec<&str> {
    pattern
        .trim_start_matches("./")
        .split('/')
        .filter(|s| !s.is_empty())
        .collect()
}

/// Whether the names `parts` match the pattern segments (`**` spans any number of names).
fn glob(pattern: &[&str], parts: &[String]) -> bool {
    match pattern.split_first() {
        None => parts.is_empty(),
        Some((&"**", rest)) => (0..=parts.len()).any(|skip| glob(rest, &parts[skip..])),
        Some((first, rest)) => parts.split_first().is_some_and(|(name, tail)| {
            name_matches(first.as_bytes(), name.as_bytes()) && glob(rest, tail)
        }),
    }
}

fn name_matches(pattern: &[u8], name: &[u8]) -> bool {
    match pattern.split_first() {
        None => name.is_empty(),
        Some((b'*', rest)) => (0..=name.len()).any(|skip| name_matches(rest, &name[skip..])),
        Some((b'?', rest)) => !name.is_empty() && name_matches(rest, &name[1..]),
        Some((c, rest)) => name.first() == Some(c) && name_matches(rest, &name[1..]),
    }
}

/// The strings of a `{items: [...]}` wrapper (or a bare array).
pub fn items(value: &Option<Value>) -> Vec<String> {
    let list = match value {
        Some(Value::Object(o)) => o.get("items"),
        Some(other) => Some(other),
        None => None,
    };
    list.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// The change items one file-system event makes.
pub fn changes(event: &notify::Event) -> Vec<(&Path, &'static str)> {
    let kinds: Vec<&'static str> = match event.kind {
        EventKind::Create(_) => vec!["added"],
        EventKind::Remove(_) => vec!["deleted"],
        EventKind::Modify(ModifyKind::Name(RenameMode::From)) => vec!["deleted"],
        EventKind::Modify(ModifyKind::Name(RenameMode::To)) => vec!["added"],
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => vec!["deleted", "added"],
        EventKind::Modify(ModifyKind::Metadata(_)) | EventKind::Access(_) => vec![],
        EventKind::Modify(_) | EventKind::Any | EventKind::Other => vec!["updated"],
    };
    event
        .paths
        .iter()
        .enumerate()
        .filter_map(|(at, path)| {
            let kind = if kinds.len() == event.paths.len() {
                kinds.get(at)
            } else {
                kinds.first()
            };
            kind.map(|k| (path.as_path(), *k))
        })
        .collect()
}

/// How often a recursive watch's walk of the tree is tried before the watch fails.
const WALKS: usize = 8;

/// An OS watcher whose events reach the world, each handed to `on_event` with the host's
/// shared state (through a weak handle: a host that went away drops them).
pub fn start_watcher(
    shared: Weak<Shared>,
    root: &Path,
    recursive: bool,
    mut on_event: impl FnMut(&Shared, &notify::Event) + Send + 'static,
) -> notify::Result<notify::RecommendedWatcher> {
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        let (Ok(event), Some(shared)) = (event, shared.upgrade()) else {
            return;
        };
        on_event(&shared, &event);
    })?;
    let mode = if recursive {
        RecursiveMode::Recursive
    } else {
        RecursiveMode::NonRecursive
    };
    // A recursive watch walks the tree and gives up on a directory removed meanwhile
    // (clients may be removing some right now): the walk is tried again.
    let mut walked = watcher.watch(root, mode);
    for _ in 1..WALKS {
        if walked.is_ok() || !recursive {
            break;
        }
        walked = watcher.watch(root, mode);
    }
    walked.map(|()| watcher)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_match_names_and_trees() {
        let f = Filter {
            recursive: true,
            includes: vec![],
            excludes: vec!["*.log".into(), "build".into()],
        };
        assert!(f.reports(Path::new("a.txt"), false));
        assert!(!f.reports(Path::new("a.log"), false));
        assert!(!f.reports(Path::new("build/x/y.txt"), false));
        assert!(f.reports(Path::new("src/build.rs"), false));
        let only = Filter {
            recursive: true,
            includes: vec!["src/**/*.rs".into()],
            excludes: vec![],
        };
        assert!(only.reports(Path::new("src/a/b.rs"), false));
        assert!(only.reports(Path::new("src/b.rs"), false));
        assert!(!only.reports(Path::new("docs/b.rs"), false));
        let flat = Filter {
            recursive: false,
            includes: vec![],
            excludes: vec![],
        };
        assert!(flat.reports(Path::new("a.txt"), false));
        assert!(!flat.reports(Path::new("sub/a.txt"), false));
    }
}
