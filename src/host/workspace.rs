//! The directory on disk the host serves through the `resource*` commands: one it creates
//! (removed when the host goes away) or one given with `serve --workspace DIR`. A `file:`
//! URI names a path in it; a path outside it, also through `..` or a symbolic link, is
//! refused (the caller answers `-32009` naming the access it would need).

use std::fs;
use std::io;
use std::path::{Component, Path, PathBuf};

/// Largest file the host reads, writes or hashes whole (bigger ones are refused): every
/// answer stays bounded.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;
/// Most entries a listing or a recursive copy visits.
pub const MAX_ENTRIES: usize = 10_000;

/// The served directory.
#[derive(Debug)]
pub struct Workspace {
    /// Canonical (symbolic links resolved), so containment is a prefix test.
    root: PathBuf,
    /// The directory the host created, removed with it.
    _owned: Option<tempfile::TempDir>,
}

/// Why a URI names no path the host serves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// Not a `file:` URI with an absolute path.
    NotAFileUri,
    /// A path outside the workspace.
    Outside,
}

impl Workspace {
    /// A fresh empty directory under the system's temporary directory.
    pub fn create() -> io::Result<Workspace> {
        let dir = tempfile::Builder::new()
            .prefix("ahpspec-workspace-")
            .tempdir()?;
        let root = dir.path().canonicalize()?;
        Ok(Workspace {
            root,
            _owned: Some(dir),
        })
    }

    /// An existing directory, served as it is (never removed by the host).
    pub fn at(dir: &Path) -> io::Result<Workspace> {
        let root = dir.canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        Ok(Workspace { root, _owned: None })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The `file:` URI of the workspace directory.
    pub fn uri(&self) -> String {
        file_uri(self.root())
    }

    /// The path `uri` names, when it is inside the workspace: lexically (no `..` above the
    /// root) and physically (its nearest existing ancestor, links resolved, is inside).
    /// With `follow`, an existing final link is resolved too and must stay inside.
    pub fn path_of(&self, uri: &str, follow: bool) -> Result<PathBuf, Refusal> {
        let path = uri_path(uri).ok_or(Refusal::NotAFileUri)?;
        let mut normal = PathBuf::from("/");
        for component in path.components() {
            match component {
                Component::Normal(part) => normal.push(part),
                Component::ParentDir => {
                    if !normal.pop() {
                        return Err(Refusal::Outside);
                    }
                }
                Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
            }
        }
        if !normal.starts_with(&self.root) {
            return Err(Refusal::Outside);
        }
        let physical = if follow {
            nearest_existing(&normal).canonicalize()
        } else {
            match normal.parent() {
                Some(parent) => nearest_existing(parent).canonicalize(),
                None => Ok(normal.clone()),
            }
        };
        match physical {
            Ok(real) if real.starts_with(&self.root) => Ok(normal),
            Ok(_) => Err(Refusal::Outside),
            // A dangling link or an unreadable ancestor: let the operation say what it finds.
            Err(_) => Ok(normal),
        }
    }

    /// Whether `path` is the workspace directory itself (never deleted or moved).
    pub fn is_root(&self, path: &Path) -> bool {
        path == self.root
    }
}

/// `path`, or its nearest ancestor that exists.
fn nearest_existing(path: &Path) -> &Path {
    let mut at = path;
    while fs::symlink_metadata(at).is_err() {
        match at.parent() {
            Some(parent) => at = parent,
            None => break,
        }
    }
    at
}

/// The absolute path of a `file:` URI (`file:///p` or `file://localhost/p`), percent-decoded.
fn uri_path(uri: &str) -> Option<PathBuf> {
    let rest = uri.strip_prefix("file://")?;
    let rest = rest.strip_prefix("localhost").unwrap_or(rest);
    let rest = rest.split(['?', '#']).next().unwrap_or_default();
    if !rest.starts_with('/') {
        return None;
    }
    let decoded = percent_decode(rest)?;
    if decoded.contains('\0') {
        return None;
    }
    Some(PathBuf::from(decoded))
}

fn percent_decode(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            let hex = text.get(at + 1..at + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).ok()
}

/// The `file:` URI of an absolute path (bytes outside the unreserved set and `/` escaped).
pub fn file_uri(path: &Path) -> String {
    let mut uri = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~/".contains(&byte) {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

/// An opaque version of a file's content: FNV-1a over its bytes and length, so two
/// writes within one clock tick still give different tokens.
pub fn etag(content: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in content {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("\"{hash:016x}-{}\"", content.len())
}

/// A content type from the file name, else from whether the bytes are text.
pub fn content_type(path: &Path, content: &[u8]) -> &'static str {
    let extension = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match extension.as_deref() {
        Some("png") => "image/png",
        Some("jpg" | "jpeg") => "image/jpeg",
        Some("gif") => "image/gif",
        Some("json") => "application/json",
        Some("md") => "text/markdown",
        Some("html") => "text/html",
        Some("txt") => "text/plain",
        _ if std::str::from_utf8(content).is_ok() => "text/plain",
        _ => "application/octet-stream",
    }
}

/// A file's whole content, refused past [`MAX_FILE_BYTES`].
pub fn read_bounded(path: &Path) -> io::Result<Vec<u8>> {
    let size = fs::metadata(path)?.len();
    if size > MAX_FILE_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("larger than {MAX_FILE_BYTES} bytes"),
        ));
    }
    fs::read(path)
}

/// Copies a file or a directory tree (links copied as the files they name, at most
/// [`MAX_ENTRIES`] entries).
pub fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    let mut budget = MAX_ENTRIES;
    copy_within(from, to, &mut budget)
}

fn copy_within(from: &Path, to: &Path, budget: &mut usize) -> io::Result<()> {
    if *budget == 0 {
        return Err(io::Error::other("too many entries to copy"));
    }
    *budget -= 1;
    if fs::metadata(from)?.is_dir() {
        fs::create_dir(to)?;
        for entry in fs::read_dir(from)? {
            let entry = entry?;
            copy_within(&entry.path(), &to.join(entry.file_name()), budget)?;
        }
        Ok(())
    } else {
        fs::copy(from, to).map(drop)
    }
}

/// Removes a file, a link, or a directory tree.
pub fn remove_any(path: &Path) -> io::Result<()> {
    if fs::symlink_metadata(path)?.is_dir() {
        fs::remove_dir_all(path)
    } else {
        fs::remove_file(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_outside_the_workspace_are_refused() {
        let ws = Workspace::create().expect("temp dir");
        let inside = format!("{}/a/b.txt", ws.uri());
        assert_eq!(ws.path_of(&inside, true), Ok(ws.root().join("a/b.txt")));
        let escape = format!("{}/../x", ws.uri());
        assert_eq!(ws.path_of(&escape, true), Err(Refusal::Outside));
        assert_eq!(
            ws.path_of("file:///etc/passwd", true),
            Err(Refusal::Outside)
        );
        assert_eq!(ws.path_of("https://x/y", true), Err(Refusal::NotAFileUri));
        std::os::unix::fs::symlink("/etc", ws.root().join("out")).expect("link");
        let through = format!("{}/out/passwd", ws.uri());
        assert_eq!(ws.path_of(&through, true), Err(Refusal::Outside));
        let the_link = format!("{}/out", ws.uri());
        assert_eq!(ws.path_of(&the_link, false), Ok(ws.root().join("out")));
        assert_eq!(ws.path_of(&the_link, true), Err(Refusal::Outside));
    }

    #[test]
    fn uris_round_trip_through_escapes() {
        let path = Path::new("/tmp/a b/ü%.txt");
        assert_eq!(uri_path(&file_uri(path)).as_deref(), Some(path));
        assert_ne!(etag(b"ab"), etag(b"ba"));
    }
}
