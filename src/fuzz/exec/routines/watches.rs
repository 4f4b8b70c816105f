//! The resource watch routine (issue 25): two watches of one fresh directory of the
//! workspace get distinct channels (RES-007); one, subscribed by a new connection while a
//! client of the run writes an excluded file and then an ordinary one, reports the ordinary
//! file in a batch that is never empty and never names the excluded file (RES-007,
//! RES-013). A host that advertises no workspace, refuses the directory or the watch, or
//! reports nothing within the timeout leaves nothing to judge here: creating and reporting
//! watches at all is the catalog's matter (suites/resources.toml), where waiting for
//! file-system events is bounded per case rather than per operation.

use serde_json::{json, Value};

use super::{ask, finding, ok, Finding};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::{Conn, DEFAULT_OFFER, ROOT};
use crate::fuzz::exec::Run;
use crate::transport::Incoming;

/// The file the watch excludes, and the pattern that excludes it.
const EXCLUDED: (&str, &str) = ("a.log", "*.log");
/// The file the watch must report.
const REPORTED: &str = "top.txt";

/// The channel of a createResourceWatch answer, when it has one.
fn watch_channel(answer: &Value) -> Option<String> {
    answer
        .pointer("/result/channel")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The change items of a `resourceWatch/changed` message on `channel`, when it is one.
fn changes<'a>(message: &'a Value, channel: &str) -> Option<&'a [Value]> {
    let params = &message["params"];
    if message["method"] != "action"
        || params["channel"] != channel
        || params["action"]["type"] != "resourceWatch/changed"
    {
        return None;
    }
    Some(
        params["action"]["changes"]["items"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default(),
    )
}

fn names(items: &[Value], uri: &str) -> bool {
    items.iter().any(|item| item["uri"] == uri)
}

impl Run<'_> {
    /// The routine in a fresh directory of the workspace, deleted at the end.
    pub(super) async fn watch(&mut self, index: usize, client: usize) -> Option<Finding> {
        let dir = self.scratch_dir("watch", index)?;
        let found = self.watch_in(client, &dir).await.err().flatten();
        self.remove_tree(client, &dir).await;
        found
    }

    /// `Err(Some(…))` a finding, `Err(None)` nothing to judge.
    async fn watch_in(&mut self, client: usize, dir: &str) -> Result<(), Option<Finding>> {
        let timeout = self.cfg.timeout;
        let conn = &mut self.conns[client];
        self.exec.operations += 3;
        let mkdir = json!({ "channel": ROOT, "uri": dir });
        if !ok(&Ok(ask(conn, "resourceMkdir", mkdir, timeout).await?)) {
            return Err(None);
        }
        let params = json!({
            "channel": ROOT, "uri": dir, "recursive": false,
            "excludes": { "items": [EXCLUDED.1] },
        });
        let first = ask(conn, "createResourceWatch", params.clone(), timeout).await?;
        let second = ask(conn, "createResourceWatch", params, timeout).await?;
        let (Some(channel), Some(other)) = (watch_channel(&first), watch_channel(&second)) else {
            return Err(None);
        };
        if channel == other {
            return Err(finding(
                Rule::Res007,
                "a fresh ahp-resource-watch:/ channel for each createResourceWatch",
                format!("both calls answered {channel}"),
            ));
        }
        let mut link = self.side(DEFAULT_OFFER).await.map_err(Some)?;
        let judged = self.watch_reports(client, dir, &channel, &mut link).await;
        link.close().await;
        judged
    }

    /// `link` subscribes to `channel`; the run's client writes the excluded file, then the
    /// reported one; the batches up to the one naming the reported file are judged.
    async fn watch_reports(
        &mut self,
        client: usize,
        dir: &str,
        channel: &str,
        link: &mut Conn,
    ) -> Result<(), Option<Finding>> {
        let timeout = self.cfg.timeout;
        if !ok(&link.subscribe_immediate(channel, timeout).await) {
            return Err(None);
        }
        let conn = &mut self.conns[client];
        let (excluded, reported) = (format!("{dir}/{}", EXCLUDED.0), format!("{dir}/{REPORTED}"));
        for uri in [&excluded, &reported] {
            self.exec.operations += 1;
            let write = json!({ "channel": ROOT, "uri": uri, "data": "w", "encoding": "utf-8" });
            if !ok(&Ok(ask(conn, "resourceWrite", write, timeout).await?)) {
                return Err(None);
            }
        }
        let came = link
            .wait_keeping(timeout, |item| {
                matches!(item, Incoming::Message(m)
                    if changes(m, channel).is_some_and(|items| names(items, &reported)))
            })
            .await;
        if came.is_err() {
            return Err(None);
        }
        // Whatever else the host sent by now (its batches need not be one).
        link.drain(std::time::Duration::from_millis(20)).await;
        for message in link.received_since(0) {
            let Some(items) = changes(&message, channel) else {
                continue;
            };
            if items.is_empty() {
                return Err(finding(
                    Rule::Res007,
                    "resourceWatch/changed batches that are never empty",
                    clip(&message.to_string()),
                ));
            }
            if names(items, &excluded) {
                return Err(finding(
                    Rule::Res013,
                    &format!("no change reported for {excluded}, which the watch excludes"),
                    clip(&message.to_string()),
                ));
            }
        }
        Ok(())
    }
}
