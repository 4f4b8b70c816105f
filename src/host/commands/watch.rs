//! `createResourceWatch` and the world's side of resource watches (`host::watches`): channels
//! made, file-system events reported on them, watches released.

use ahp_types::commands::CreateResourceWatchParams;
use serde_json::{json, Value};

use super::{parse, RpcError, INTERNAL_ERROR, NOT_FOUND};
use crate::host::faults::Fault;
use crate::host::watches::{
    changes, items, start_watcher, Filter, WatchEntry, MAX_WATCHES, WATCH_SCHEME,
};
use crate::host::workspace::{etag, file_uri};
use crate::host::world::{ConnId, World};
use crate::host::Shared;

impl World {
    /// `createResourceWatch`: a fresh channel watching a served path that exists.
    pub fn create_watch(&mut self, conn: ConnId, params: &Value) -> Result<Value, RpcError> {
        let p: CreateResourceWatchParams = parse(params)?;
        let root = self.served_path(&p.uri)?;
        if std::fs::symlink_metadata(&root).is_err() {
            return Err(RpcError::new(
                NOT_FOUND,
                format!("{} does not exist", p.uri),
            ));
        }
        if self.watches.len() >= MAX_WATCHES {
            return Err(RpcError::new(INTERNAL_ERROR, "too many resource watches"));
        }
        let recursive = p.recursive == Some(true);
        let filter = Filter {
            recursive,
            includes: items(&p.includes),
            excludes: items(&p.excludes),
        };
        let channel = if self.fault(Fault::WatchUriReused) {
            format!("{WATCH_SCHEME}{}", etag(p.uri.as_bytes()).trim_matches('"'))
        } else {
            format!("{WATCH_SCHEME}{}", self.fresh_id("w"))
        };
        let watched = channel.clone();
        let on_event = move |shared: &Shared, event: &notify::Event| {
            shared.lock().watch_event(&watched, event);
        };
        let watcher = start_watcher(self.shared.clone(), &root, recursive, on_event)
            .map_err(|e| RpcError::new(INTERNAL_ERROR, format!("cannot watch {}: {e}", p.uri)))?;
        let mut state = json!({ "root": p.uri, "recursive": recursive });
        if let Some(excludes) = &p.excludes {
            state["excludes"] = excludes.clone();
        }
        if let Some(includes) = &p.includes {
            state["includes"] = includes.clone();
        }
        self.watches.insert(
            channel.clone(),
            WatchEntry {
                state,
                root,
                filter,
                creator: conn,
                subscribed: false,
                watcher,
            },
        );
        Ok(json!({ "channel": channel }))
    }

    /// Reports one file-system event on a watch's channel (nothing when no change of it
    /// passes the filter: batches are never empty).
    pub(in crate::host) fn watch_event(&mut self, channel: &str, event: &notify::Event) {
        let ignore_excludes = self.fault(Fault::WatchIgnoresExcludes);
        let renames_deleted = self.fault(Fault::RenameTargetDeleted)
            && matches!(
                event.kind,
                notify::EventKind::Modify(notify::event::ModifyKind::Name(
                    notify::event::RenameMode::Both
                ))
            );
        let Some(entry) = self.watches.get(channel) else {
            return;
        };
        let items: Vec<Value> = changes(event)
            .into_iter()
            .filter(|(path, _)| {
                path.strip_prefix(&entry.root)
                    .is_ok_and(|rel| entry.filter.reports(rel, ignore_excludes))
            })
            .map(|(path, kind)| {
                let kind = if renames_deleted { "deleted" } else { kind };
                json!({ "uri": file_uri(path), "type": kind })
            })
            .collect();
        if items.is_empty() {
            return;
        }
        self.emit_logged(
            channel,
            json!({ "type": "resourceWatch/changed", "changes": { "items": items } }),
        );
    }

    /// Releases the watches nobody subscribes to any more (and those whose creator left
    /// without subscribing).
    pub fn release_watches(&mut self) {
        if self.fault(Fault::WatchNeverReleased) {
            return;
        }
        let conns = &self.conns;
        self.watches.retain(|channel, entry| {
            if conns.values().any(|c| c.subscriptions.contains(channel)) {
                return true;
            }
            !entry.subscribed && conns.contains_key(&entry.creator)
        });
    }
}
