//! The configuration routine (issue 25), each half only where the target profile names what
//! it needs: `sessionConfigCompletions` for the profile's dynamic property offers items, the
//! first of which `resolveSessionConfig` keeps (CONFIG-003); and a `root/configChanged`
//! merge of the profile's root property changes that property only (ROOT-012), after which a
//! second merge puts the old value back. A host whose root state has no configuration, or
//! that refuses the resolve or the dispatch, leaves that half unjudged (CONFIG-001's and
//! DISPATCH-001's matters).

use serde_json::{json, Value};

use super::{ask, echo_before_ping, finding, refused, rejected, Finding};
use crate::checks::frame::clip;
use crate::checks::Rule;
use crate::client::{Conn, DEFAULT_OFFER, ROOT};
use crate::fuzz::exec::Run;

impl Run<'_> {
    pub(super) async fn config(&mut self) -> Option<Finding> {
        if let Some(found) = self.config_completions().await {
            return Some(found);
        }
        self.root_config().await
    }

    /// CONFIG-003 on a connection of its own.
    async fn config_completions(&mut self) -> Option<Finding> {
        let needs = self.cfg.profile.session_config.clone()?;
        let timeout = self.cfg.timeout;
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        let property = needs.dynamic_property;
        let params = json!({ "channel": ROOT, "property": property, "query": needs.query });
        self.exec.operations += 1;
        let found = match ask(&mut link, "sessionConfigCompletions", params, timeout).await {
            Err(found) => found,
            Ok(offered) => match offered.pointer("/result/items/0") {
                Some(item) if item["value"].is_string() && item["label"].is_string() => {
                    self.exec.operations += 1;
                    let value = item["value"].clone();
                    let pick = json!({ "channel": ROOT, "config": { property.as_str(): value } });
                    match ask(&mut link, "resolveSessionConfig", pick, timeout).await {
                        Err(found) => found,
                        Ok(picked) if refused(&picked) => None,
                        Ok(picked) if picked["result"]["values"][&property] != value => finding(
                            Rule::Config003,
                            &format!("resolveSessionConfig keeps {property} = {value}, the value sessionConfigCompletions offered"),
                            clip(&picked.to_string()),
                        ),
                        Ok(_) => None,
                    }
                }
                _ => finding(
                    Rule::Config003,
                    &format!("sessionConfigCompletions for {property} offers an item with a value and a label"),
                    clip(&offered.to_string()),
                ),
            },
        };
        link.close().await;
        found
    }

    /// ROOT-012's merge on a connection of its own; the values read by another.
    async fn root_config(&mut self) -> Option<Finding> {
        let needs = self.cfg.profile.root_config.clone()?;
        let mut link = match self.side(DEFAULT_OFFER).await {
            Ok(link) => link,
            Err(found) => return Some(found),
        };
        // The echo of a dispatch reaches the root channel's subscribers.
        let timeout = self.cfg.timeout;
        let found = match ask(&mut link, "subscribe", json!({ "channel": ROOT }), timeout).await {
            Ok(answer) if !refused(&answer) => {
                self.merge_root_config(&mut link, &needs.property, &needs.value)
                    .await
            }
            Ok(_) => None,
            Err(found) => found,
        };
        link.close().await;
        found
    }

    async fn merge_root_config(
        &mut self,
        link: &mut Conn,
        property: &str,
        value: &Value,
    ) -> Option<Finding> {
        let before = self.root_values().await.ok()??;
        let old = before.get(property)?.clone();
        if &old == value {
            return None;
        }
        let timeout = self.cfg.timeout;
        let merge = |v: &Value| json!({ "type": "root/configChanged", "config": { property: v } });
        self.exec.operations += 1;
        match echo_before_ping(link, ROOT, &merge(value), timeout).await {
            Some(echo) if !rejected(&echo) => {}
            _ => return None,
        }
        let after = match self.root_values().await {
            Ok(after) => after,
            Err(found) => return Some(found),
        };
        let mut expected = before.clone();
        expected.insert(property.to_owned(), value.clone());
        self.exec.operations += 1;
        let _ = echo_before_ping(link, ROOT, &merge(&old), timeout).await;
        if after.as_ref() != Some(&expected) {
            return finding(
                Rule::Root012,
                &format!("root/configChanged merging {property} = {value} into {} leaves the others as they were", Value::Object(before)),
                after.map_or("no configuration values".to_owned(), |a| Value::Object(a).to_string()),
            );
        }
        None
    }

    /// The root configuration's values in a fresh snapshot on a new connection: `Ok(None)`
    /// when the root state has none.
    async fn root_values(&mut self) -> Result<Option<serde_json::Map<String, Value>>, Finding> {
        let timeout = self.cfg.timeout;
        let mut reader = self.side(DEFAULT_OFFER).await?;
        let answer = ask(
            &mut reader,
            "subscribe",
            json!({ "channel": ROOT }),
            timeout,
        )
        .await;
        reader.close().await;
        let answer = answer.map_err(|found| {
            found.unwrap_or((
                Rule::Fuzz001,
                "the connection stays open".to_owned(),
                "closed".to_owned(),
            ))
        })?;
        Ok(answer
            .pointer("/result/snapshot/state/config/values")
            .and_then(Value::as_object)
            .cloned())
    }
}
