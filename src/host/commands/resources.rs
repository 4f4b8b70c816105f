//! The `resource*` commands over the host's workspace: a real directory on disk
//! ([`Workspace`]). Paths outside it are refused with `-32009`, whose `data.request` names
//! the access a `resourceRequest` would ask for (and this host would deny).

use std::fs;
use std::io;
use std::path::PathBuf;

use ahp_types::commands::{
    ContentEncoding, ResourceCopyParams, ResourceDeleteParams, ResourceListParams,
    ResourceMkdirParams, ResourceMoveParams, ResourceReadParams, ResourceRequestParams,
    ResourceResolveParams, ResourceWriteMode, ResourceWriteParams,
};
use base64::Engine;
use serde_json::{json, Value};

use super::{
    parse, plain_uri, RpcError, ALREADY_EXISTS, CONFLICT, INTERNAL_ERROR, INVALID_PARAMS,
    NOT_FOUND, PERMISSION_DENIED,
};
use crate::host::faults::Fault;
use crate::host::workspace::{self, Refusal, Workspace, MAX_ENTRIES, MAX_FILE_BYTES};
use crate::host::world::{World, ROOT};

/// The access a command needs to a URI.
#[derive(Clone, Copy)]
enum Access {
    Read,
    Write,
}

const BASE64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

impl World {
    /// Answers one `resource*` command (`createResourceWatch` aside).
    pub(super) fn resource_command(
        &mut self,
        method: &str,
        params: &Value,
    ) -> Result<Value, RpcError> {
        let ws = self.workspace.clone();
        match method {
            "resourceRead" => self.resource_read(&ws, parse(params)?),
            "resourceWrite" => self.resource_write(&ws, parse(params)?),
            "resourceList" => self.resource_list(&ws, parse(params)?),
            "resourceCopy" => {
                let p: ResourceCopyParams = parse(params)?;
                self.resource_copy(&ws, &p.source, &p.destination, p.fail_if_exists, false)
            }
            "resourceMove" => {
                let p: ResourceMoveParams = parse(params)?;
                self.resource_copy(&ws, &p.source, &p.destination, p.fail_if_exists, true)
            }
            "resourceDelete" => self.resource_delete(&ws, parse(params)?),
            "resourceResolve" => self.resource_resolve(&ws, parse(params)?),
            "resourceMkdir" => self.resource_mkdir(&ws, parse(params)?),
            "resourceRequest" => self.resource_request(&ws, params),
            _ => Err(RpcError::new(INTERNAL_ERROR, "not a resource command")),
        }
    }

    /// The path `uri` names in the workspace for reading, or the refusal to answer with.
    pub(in crate::host) fn served_path(&self, uri: &str) -> Result<PathBuf, RpcError> {
        let ws = self.workspace.clone();
        self.served(&ws, uri, Access::Read, true)
    }

    /// The path `uri` names in the workspace, or the refusal to answer with.
    fn served(
        &self,
        ws: &Workspace,
        uri: &str,
        access: Access,
        follow: bool,
    ) -> Result<PathBuf, RpcError> {
        match ws.path_of(uri, follow) {
            Ok(path) => Ok(path),
            Err(Refusal::NotAFileUri) => Err(RpcError::new(
                INVALID_PARAMS,
                format!("{uri} is not a file: URI with an absolute path"),
            )),
            Err(Refusal::Outside) => {
                let mut request = json!({ "channel": ROOT, "uri": uri });
                match access {
                    Access::Read => request["read"] = json!(true),
                    Access::Write => request["write"] = json!(true),
                }
                Err(self.denied(
                    request,
                    format!("{uri} is outside the served workspace {}", ws.uri()),
                ))
            }
        }
    }

    /// A `-32009` naming the request that would unlock the call.
    fn denied(&self, request: Value, message: String) -> RpcError {
        let mut error = RpcError::new(PERMISSION_DENIED, message);
        if !self.fault(Fault::DeniedWithoutRequest) {
            error.data = Some(json!({ "request": request }));
        }
        error
    }

    /// `resourceRequest`: access inside the workspace is granted; anything else is denied
    /// with the request itself as `data.request`.
    fn resource_request(&self, ws: &Workspace, params: &Value) -> Result<Value, RpcError> {
        let p: ResourceRequestParams = parse(params)?;
        let checked = !self.fault(Fault::NonUriRequestDecided);
        let escape_refused = self.fault(Fault::EscapedUriRefused) && p.uri.contains('%');
        if escape_refused || (checked && !(plain_uri(&p.channel) && plain_uri(&p.uri))) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "channel and uri must be URIs",
            ));
        }
        match ws.path_of(&p.uri, true) {
            Ok(_) => Ok(json!({})),
            Err(_) if self.fault(Fault::RequestDeniedInternal) => Err(RpcError::new(
                INTERNAL_ERROR,
                "access outside the workspace is not granted",
            )),
            Err(_) => {
                let request = if self.fault(Fault::PermissionDeniedBadData) {
                    params["uri"].clone()
                } else {
                    params.clone()
                };
                let mut error = RpcError::new(
                    PERMISSION_DENIED,
                    format!(
                        "this host grants access only inside its workspace {}",
                        ws.uri()
                    ),
                );
                error.data = Some(json!({ "request": request }));
                Err(error)
            }
        }
    }

    fn resource_read(&self, ws: &Workspace, p: ResourceReadParams) -> Result<Value, RpcError> {
        let path = self.served(ws, &p.uri, Access::Read, true)?;
        if fs::metadata(&path)
            .map_err(|e| io_error(&p.uri, e))?
            .is_dir()
        {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("{} is a directory", p.uri),
            ));
        }
        let content = workspace::read_bounded(&path).map_err(|e| io_error(&p.uri, e))?;
        let text = std::str::from_utf8(&content).ok();
        let (data, encoding) = match (text, p.encoding) {
            (Some(text), Some(ContentEncoding::Utf8) | None) => (text.to_owned(), "utf-8"),
            // Binary content is base64, whatever was asked.
            (None, _) if self.fault(Fault::BinaryAsUtf8) => {
                (String::from_utf8_lossy(&content).into_owned(), "utf-8")
            }
            _ => (BASE64.encode(&content), "base64"),
        };
        Ok(json!({
            "data": data,
            "encoding": encoding,
            "contentType": workspace::content_type(&path, &content),
        }))
    }

    fn resource_write(&self, ws: &Workspace, p: ResourceWriteParams) -> Result<Value, RpcError> {
        let path = self.served(ws, &p.uri, Access::Write, true)?;
        let data = match p.encoding {
            ContentEncoding::Base64 => BASE64
                .decode(p.data.as_bytes())
                .map_err(|e| RpcError::new(INVALID_PARAMS, format!("data is not base64: {e}")))?,
            _ => p.data.into_bytes(),
        };
        let existing = match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => {
                return Err(RpcError::new(
                    ALREADY_EXISTS,
                    format!("{} is a directory", p.uri),
                ))
            }
            Ok(_) => Some(workspace::read_bounded(&path).map_err(|e| io_error(&p.uri, e))?),
            Err(e) if e.kind() == io::ErrorKind::NotFound => None,
            Err(e) => return Err(io_error(&p.uri, e)),
        };
        if p.create_only == Some(true) && existing.is_some() {
            return Err(RpcError::new(
                ALREADY_EXISTS,
                format!("{} exists (createOnly)", p.uri),
            ));
        }
        if let Some(expected) = &p.if_match {
            let current = existing.as_deref().map(workspace::etag);
            if current.as_ref() != Some(expected) && !self.fault(Fault::StaleIfMatchWrites) {
                return Err(RpcError::new(
                    CONFLICT,
                    format!("{} changed: its etag is no longer {expected}", p.uri),
                ));
            }
        }
        let old = existing.unwrap_or_default();
        let position = usize::try_from(p.position.unwrap_or(0))
            .map_err(|_| RpcError::new(INVALID_PARAMS, "position must not be negative"))?;
        let mode = match p.mode {
            Some(ResourceWriteMode::Append) if self.fault(Fault::AppendTruncates) => {
                ResourceWriteMode::Truncate
            }
            mode => mode.unwrap_or(ResourceWriteMode::Truncate),
        };
        let at = match mode {
            ResourceWriteMode::Append => old.len().checked_sub(position),
            ResourceWriteMode::Truncate | ResourceWriteMode::Insert => {
                (position <= old.len()).then_some(position)
            }
        }
        .ok_or_else(|| {
            RpcError::new(
                INVALID_PARAMS,
                format!("position {position} is past the file's {} bytes", old.len()),
            )
        })?;
        let tail: &[u8] = match mode {
            ResourceWriteMode::Truncate => &[],
            ResourceWriteMode::Append | ResourceWriteMode::Insert => &old[at..],
        };
        let mut content = Vec::with_capacity(at + data.len() + tail.len());
        content.extend_from_slice(&old[..at]);
        content.extend_from_slice(&data);
        content.extend_from_slice(tail);
        if content.len() as u64 > MAX_FILE_BYTES {
            return Err(RpcError::new(
                INVALID_PARAMS,
                "the file would exceed the host's size limit",
            ));
        }
        let written = if p.create_only == Some(true) {
            fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(&path)
                .and_then(|mut file| io::Write::write_all(&mut file, &content))
        } else {
            fs::write(&path, &content)
        };
        written.map_err(|e| io_error(&p.uri, e))?;
        Ok(json!({}))
    }

    fn resource_list(&self, ws: &Workspace, p: ResourceListParams) -> Result<Value, RpcError> {
        let path = self.served(ws, &p.uri, Access::Read, true)?;
        let meta = fs::metadata(&path).map_err(|e| io_error(&p.uri, e))?;
        if !meta.is_dir() {
            if self.fault(Fault::ListFileOk) {
                return Ok(json!({ "entries": [] }));
            }
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("{} is not a directory", p.uri),
            ));
        }
        let mut entries = Vec::new();
        for entry in fs::read_dir(&path)
            .map_err(|e| io_error(&p.uri, e))?
            .take(MAX_ENTRIES)
        {
            let entry = entry.map_err(|e| io_error(&p.uri, e))?;
            let is_dir = fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
            entries.push(json!({
                "name": entry.file_name().to_string_lossy(),
                "type": if is_dir { "directory" } else { "file" },
            }));
        }
        entries.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
        Ok(json!({ "entries": entries }))
    }

    fn resource_copy(
        &self,
        ws: &Workspace,
        source: &str,
        destination: &str,
        fail_if_exists: Option<bool>,
        remove_source: bool,
    ) -> Result<Value, RpcError> {
        let access = if remove_source {
            Access::Write
        } else {
            Access::Read
        };
        let from = self.served(ws, source, access, !remove_source)?;
        let to = self.served(ws, destination, Access::Write, false)?;
        if remove_source && ws.is_root(&from) {
            return Err(self.denied(
                json!({ "channel": ROOT, "uri": source, "write": true }),
                "the workspace itself cannot be moved".into(),
            ));
        }
        fs::symlink_metadata(&from).map_err(|e| io_error(source, e))?;
        if from == to {
            return Ok(json!({}));
        }
        if to.starts_with(&from) {
            return Err(RpcError::new(
                INVALID_PARAMS,
                format!("{destination} is inside {source}"),
            ));
        }
        if fs::symlink_metadata(&to).is_ok() {
            let refused_anyway = to.is_dir() && self.fault(Fault::DirectoryNotOverwritten);
            if (fail_if_exists == Some(true) && !self.fault(Fault::CopyOverwritesAnyway))
                || refused_anyway
            {
                return Err(RpcError::new(
                    ALREADY_EXISTS,
                    format!("{destination} exists (failIfExists)"),
                ));
            }
            workspace::remove_any(&to).map_err(|e| io_error(destination, e))?;
        }
        if remove_source {
            fs::rename(&from, &to).map_err(|e| io_error(destination, e))?;
        } else {
            workspace::copy_tree(&from, &to).map_err(|e| io_error(destination, e))?;
        }
        Ok(json!({}))
    }

    fn resource_delete(&self, ws: &Workspace, p: ResourceDeleteParams) -> Result<Value, RpcError> {
        let path = self.served(ws, &p.uri, Access::Write, false)?;
        if ws.is_root(&path) {
            return Err(self.denied(
                json!({ "channel": ROOT, "uri": p.uri, "write": true }),
                "the workspace itself cannot be deleted".into(),
            ));
        }
        let meta = fs::symlink_metadata(&path).map_err(|e| io_error(&p.uri, e))?;
        let removed = if !meta.is_dir() {
            fs::remove_file(&path)
        } else if p.recursive == Some(true) || self.fault(Fault::DeleteNonEmptyOk) {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_dir(&path)
        };
        removed.map_err(|e| match e.kind() {
            io::ErrorKind::DirectoryNotEmpty => RpcError::new(
                INVALID_PARAMS,
                format!(
                    "{} is a directory that is not empty (recursive: true deletes it)",
                    p.uri
                ),
            ),
            _ => io_error(&p.uri, e),
        })?;
        Ok(json!({}))
    }

    fn resource_resolve(
        &self,
        ws: &Workspace,
        p: ResourceResolveParams,
    ) -> Result<Value, RpcError> {
        let follow = p.follow_symlinks != Some(false);
        let path = self.served(ws, &p.uri, Access::Read, follow)?;
        if self.fault(Fault::ResolveMissingWrongCode) && fs::symlink_metadata(&path).is_err() {
            return Err(RpcError::new(INVALID_PARAMS, "no such resource"));
        }
        let (meta, uri) = if follow {
            let meta = fs::metadata(&path).map_err(|e| io_error(&p.uri, e))?;
            let real = path.canonicalize().map_err(|e| io_error(&p.uri, e))?;
            let uri = if real == path {
                p.uri.clone()
            } else {
                workspace::file_uri(&real)
            };
            (meta, uri)
        } else {
            (
                fs::symlink_metadata(&path).map_err(|e| io_error(&p.uri, e))?,
                p.uri.clone(),
            )
        };
        let kind = if meta.is_symlink() {
            "symlink"
        } else if meta.is_dir() && !self.fault(Fault::ResolveDirAsFile) {
            "directory"
        } else {
            "file"
        };
        let mut result = json!({ "uri": uri, "type": kind });
        if let Some(mtime) = meta.modified().ok().and_then(iso) {
            result["mtime"] = json!(mtime);
        }
        if let Some(ctime) = meta.created().ok().and_then(iso) {
            result["ctime"] = json!(ctime);
        }
        if meta.is_file() {
            result["size"] = json!(meta.len());
            if let Ok(content) = workspace::read_bounded(&path) {
                result["etag"] = json!(workspace::etag(&content));
                result["contentType"] = json!(workspace::content_type(&path, &content));
            }
        } else if meta.is_symlink() {
            result["size"] = json!(meta.len());
        }
        Ok(result)
    }

    fn resource_mkdir(&self, ws: &Workspace, p: ResourceMkdirParams) -> Result<Value, RpcError> {
        let path = self.served(ws, &p.uri, Access::Write, true)?;
        match fs::metadata(&path) {
            Ok(meta) if meta.is_dir() => return Ok(json!({})),
            Ok(_) => {
                return Err(RpcError::new(
                    ALREADY_EXISTS,
                    format!("{} exists and is not a directory", p.uri),
                ))
            }
            Err(_) => {}
        }
        let made = if self.fault(Fault::MkdirNoParents) {
            fs::create_dir(&path)
        } else {
            fs::create_dir_all(&path)
        };
        made.map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists | io::ErrorKind::NotADirectory => RpcError::new(
                ALREADY_EXISTS,
                format!("a file stands where {} needs a directory", p.uri),
            ),
            _ => io_error(&p.uri, e),
        })?;
        Ok(json!({}))
    }
}

/// The JSON-RPC error for a failed file-system call on `uri`.
fn io_error(uri: &str, error: io::Error) -> RpcError {
    let code = match error.kind() {
        io::ErrorKind::NotFound => NOT_FOUND,
        io::ErrorKind::AlreadyExists => ALREADY_EXISTS,
        io::ErrorKind::PermissionDenied => PERMISSION_DENIED,
        io::ErrorKind::NotADirectory
        | io::ErrorKind::IsADirectory
        | io::ErrorKind::FileTooLarge => INVALID_PARAMS,
        _ => INTERNAL_ERROR,
    };
    RpcError::new(code, format!("{uri}: {error}"))
}

/// A file time as an ISO 8601 UTC timestamp.
fn iso(time: std::time::SystemTime) -> Option<String> {
    let ts = jiff::Timestamp::try_from(time).ok()?;
    Some(ts.to_string())
}
