//! The resource tree routine (issue 25): in a fresh directory of the workspace, resourceMkdir
//! makes missing parents (RES-004); resourceResolve gives a file's type and size and a
//! directory's type (RES-010) and -32008 for a missing path (RES-001); a write whose ifMatch
//! is an etag the file no longer has fails with -32011 and writes nothing (RES-003); and
//! resourceDelete of a non-empty directory without recursive fails and deletes nothing
//! (RES-005). A host that refuses the fresh directory or its file leaves nothing to judge;
//! one that gives no etags, or the same etag for two contents, leaves RES-003 unjudged.

use serde_json::{json, Value};

use super::{ask, finding, refused, Finding};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::ROOT;
use crate::fuzz::exec::Run;

/// `Err(Some(…))` a finding, `Err(None)` nothing (more) to judge.
type Judged = Result<(), Option<Finding>>;

fn code(answer: &Value) -> Option<i64> {
    answer.pointer("/error/code").and_then(Value::as_i64)
}

fn etag(answer: &Value) -> Option<&str> {
    answer.pointer("/result/etag").and_then(Value::as_str)
}

fn write(uri: &str, data: &str) -> Value {
    json!({ "channel": ROOT, "uri": uri, "data": data, "encoding": "utf-8" })
}

fn at(uri: &str) -> Value {
    json!({ "channel": ROOT, "uri": uri })
}

impl Run<'_> {
    /// The routine in a fresh directory of the workspace, deleted at the end.
    pub(super) async fn tree(&mut self, index: usize, client: usize) -> Option<Finding> {
        let dir = self.scratch_dir("tree", index)?;
        let found = self.tree_in(client, &dir).await.err().flatten();
        self.remove_tree(client, &dir).await;
        found
    }

    /// Sends `method` with `params` on the routine's client, counting the operation.
    async fn tree_ask(
        &mut self,
        client: usize,
        method: &str,
        params: Value,
    ) -> Result<Value, Option<Finding>> {
        self.exec.operations += 1;
        let timeout = self.cfg.timeout;
        ask(&mut self.conns[client], method, params, timeout).await
    }

    async fn tree_in(&mut self, client: usize, dir: &str) -> Judged {
        if refused(&self.tree_ask(client, "resourceMkdir", at(dir)).await?) {
            return Err(None);
        }
        let (deep, file) = (format!("{dir}/a/b"), format!("{dir}/a/b/f.txt"));
        let made = self.tree_ask(client, "resourceMkdir", at(&deep)).await?;
        if refused(&made) {
            return Err(finding(
                Rule::Res004,
                "resourceMkdir of a directory two levels below an existing one makes the missing parent",
                clip(&made.to_string()),
            ));
        }
        if refused(
            &self
                .tree_ask(client, "resourceWrite", write(&file, "12345"))
                .await?,
        ) {
            return Err(None);
        }
        self.resolved(client, dir, &file).await?;
        self.stale_write(client, &file).await?;
        let plain = json!({ "channel": ROOT, "uri": format!("{dir}/a") });
        let deleted = self.tree_ask(client, "resourceDelete", plain).await?;
        let kept = self.tree_ask(client, "resourceResolve", at(&file)).await?;
        if !refused(&deleted) || refused(&kept) {
            return Err(finding(
                Rule::Res005,
                "an error to resourceDelete of a non-empty directory without recursive, its file still there",
                format!("{} then {}", clip(&deleted.to_string()), clip(&kept.to_string())),
            ));
        }
        Ok(())
    }

    /// resourceResolve of the 5-byte file, its directory and a missing path.
    async fn resolved(&mut self, client: usize, dir: &str, file: &str) -> Judged {
        let of_file = self.tree_ask(client, "resourceResolve", at(file)).await?;
        let of_dir = self
            .tree_ask(client, "resourceResolve", at(&format!("{dir}/a")))
            .await?;
        let file_ok = of_file.pointer("/result/type") == Some(&json!("file"))
            && of_file.pointer("/result/size") == Some(&json!(5));
        if !file_ok || of_dir.pointer("/result/type") != Some(&json!("directory")) {
            return Err(finding(
                Rule::Res010,
                "resourceResolve gives a 5-byte file type file and size 5, and a directory type directory",
                format!("{} and {}", clip(&of_file.to_string()), clip(&of_dir.to_string())),
            ));
        }
        let missing = self
            .tree_ask(client, "resourceResolve", at(&format!("{dir}/missing")))
            .await?;
        if code(&missing) != Some(-32008) {
            return Err(finding(
                Rule::Res001,
                "error -32008 to resourceResolve of a missing path",
                clip(&missing.to_string()),
            ));
        }
        Ok(())
    }

    /// The file rewritten, then written with the etag it had before: refused with -32011,
    /// the file unchanged.
    async fn stale_write(&mut self, client: usize, file: &str) -> Judged {
        let before = self.tree_ask(client, "resourceResolve", at(file)).await?;
        let Some(stale) = etag(&before).map(str::to_owned) else {
            return Ok(());
        };
        if refused(
            &self
                .tree_ask(client, "resourceWrite", write(file, "123456"))
                .await?,
        ) {
            return Err(None);
        }
        let after = self.tree_ask(client, "resourceResolve", at(file)).await?;
        if etag(&after).is_none_or(|now| now == stale) {
            return Ok(());
        }
        let mut guarded = write(file, "x");
        guarded["ifMatch"] = json!(stale);
        let written = self.tree_ask(client, "resourceWrite", guarded).await?;
        let read = json!({ "channel": ROOT, "uri": file, "encoding": "utf-8" });
        let back = self.tree_ask(client, "resourceRead", read).await?;
        let data = back.pointer("/result/data").and_then(Value::as_str);
        if code(&written) != Some(-32011) || data.is_some_and(|data| data != "123456") {
            return Err(finding(
                Rule::Res003,
                "error -32011 to resourceWrite with an ifMatch the file no longer has, the file unchanged",
                format!("{} then {}", clip(&written.to_string()), clip(&back.to_string())),
            ));
        }
        Ok(())
    }
}
