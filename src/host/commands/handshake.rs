//! `initialize` and `reconnect`: version negotiation, initial subscriptions, replay.

use std::collections::HashSet;

use ahp_types::commands::{InitializeParams, ReconnectParams};
use ahp_types::negotiate_protocol_version;
use serde_json::{json, Value};

use super::{
    parse, parse_version, AfterReply, Reply, RpcError, INTERNAL_ERROR, INVALID_PARAMS,
    INVALID_REQUEST, SUPPORTED_RANGES, UNSUPPORTED_PROTOCOL_VERSION,
};
use crate::host::faults::Fault;
use crate::host::world::{notification, ConnId, Outbound, Version, World, ROOT};

impl World {
    pub(super) fn initialize(&mut self, conn: ConnId, params: &Value) -> Reply {
        let params: InitializeParams = match parse(params) {
            Ok(params) => params,
            Err(error) => return Reply::of(Err(error)),
        };
        if params.protocol_versions.is_empty() && self.fault(Fault::EmptyOfferInvalidParams) {
            return Reply::of(Err(RpcError::new(
                INVALID_PARAMS,
                "protocolVersions must not be empty",
            )));
        }
        let (chosen, version) = match self.negotiate(&params.protocol_versions) {
            Ok(Some(pair)) => pair,
            Ok(None) => {
                let code = if self.refuses_old_offer_as_invalid(&params.protocol_versions) {
                    INVALID_REQUEST
                } else {
                    UNSUPPORTED_PROTOCOL_VERSION
                };
                let mut error =
                    RpcError::new(code, "none of the offered protocol versions is supported");
                if !self.fault(Fault::NoSupportedVersions) {
                    error.data = Some(json!({ "supportedVersions": SUPPORTED_RANGES }));
                }
                return Reply {
                    result: Err(error),
                    close_after: !self.fault(Fault::NoCloseAfterVersionError),
                    after: None,
                };
            }
            Err(message) => return Reply::of(Err(RpcError::new(INVALID_PARAMS, message))),
        };
        if self.fault(Fault::InitializeError) && params.protocol_versions == ["1.0.0"] {
            return Reply::of(Err(RpcError::new(
                INTERNAL_ERROR,
                "initialization failed (injected fault)",
            )));
        }
        let unasked = params
            .initial_subscriptions
            .as_ref()
            .is_none_or(Vec::is_empty)
            && self.fault(Fault::RootSnapshotUnasked);
        let root = [ROOT.to_owned()];
        let asked = if unasked {
            Some(&root[..])
        } else {
            params.initial_subscriptions.as_deref()
        };
        let snapshots: Vec<Value> = asked
            .iter()
            .copied()
            .flatten()
            .filter_map(|uri| {
                if crate::host::telemetry::is_stateless(uri) {
                    self.subscribe_conn(conn, uri);
                    return None;
                }
                let snapshot = self.snapshot(uri, None)?;
                self.subscribe_conn(conn, uri);
                Some(snapshot)
            })
            .collect();
        let declared = params
            .capabilities
            .as_ref()
            .is_some_and(|c| c.mcp_apps.is_some());
        if declared {
            self.client_mcp_apps.insert(params.client_id.clone());
        } else {
            self.client_mcp_apps.remove(&params.client_id);
        }
        let shows_mcp_apps = self.shows_mcp_apps(&params.client_id);
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.client_id = Some(params.client_id.clone());
            entry.version = Some(version);
            entry.shows_mcp_apps = shows_mcp_apps;
        }
        self.client_versions.insert(params.client_id, version);
        let mut result = json!({
            "protocolVersion": chosen,
            "serverSeq": self.seq,
            "snapshots": snapshots,
            "serverInfo": { "name": "ahpspec-reference-host", "version": env!("CARGO_PKG_VERSION") },
            "telemetry": crate::host::telemetry::capabilities(),
            "automations": crate::host::automations::capabilities(),
        });
        if self.fault(Fault::LegacyUri) {
            result["defaultDirectory"] = json!("agenthost:/workspace");
        }
        self.break_initialize_result(&mut result);
        let binary = self.fault(Fault::BinaryFrame);
        let no_channel = self.fault(Fault::NotificationWithoutChannel);
        let after: Option<AfterReply> = (binary || no_channel).then(|| {
            Box::new(move |world: &mut World| {
                if let Some(entry) = world.conns.get(&conn) {
                    if binary {
                        let _ = entry.tx.send(Outbound::Binary(vec![0, 1, 2, 3]));
                    }
                    if no_channel {
                        entry.send_json(&notification("ahpspec/heartbeat", json!({})));
                    }
                }
            }) as AfterReply
        });
        Reply {
            result: Ok(result),
            close_after: false,
            after,
        }
    }

    /// Picks the version: (the string answered, the version the connection then speaks).
    /// Faults bend the choice.
    pub(super) fn negotiate(
        &self,
        offered: &[String],
    ) -> Result<Option<(String, Version)>, String> {
        if let Some(lenient) = self.lenient_two_part_version(offered) {
            return Ok(Some(lenient));
        }
        let offered = &self.considered_offers(offered);
        let Some(best) = negotiate_protocol_version(offered)?.map(str::to_owned) else {
            return Ok(None);
        };
        let speaks = parse_version(&best).unwrap_or((1, 0, 0));
        let own = ahp_types::PROTOCOL_VERSION.to_owned();
        if self.fault(Fault::VersionNotOffered) && !offered.contains(&own) {
            return Ok(Some((own, speaks)));
        }
        if self.fault(Fault::LowestVersion) {
            let lowest = offered
                .iter()
                .filter(|v| {
                    negotiate_protocol_version(std::slice::from_ref(*v))
                        .ok()
                        .flatten()
                        .is_some()
                })
                .min_by_key(|v| parse_version(v))
                .cloned()
                .unwrap_or(best);
            let speaks = parse_version(&lowest).unwrap_or(speaks);
            return Ok(Some((lowest, speaks)));
        }
        Ok(Some((best, speaks)))
    }

    pub(super) fn reconnect(&mut self, conn: ConnId, params: &Value) -> Reply {
        let params: ReconnectParams = match parse(params) {
            Ok(params) => params,
            Err(error) => return Reply::of(Err(error)),
        };
        let version = self
            .client_versions
            .get(&params.client_id)
            .copied()
            .unwrap_or((1, 0, 0));
        let shows_mcp_apps = self.shows_mcp_apps(&params.client_id);
        if let Some(entry) = self.conns.get_mut(&conn) {
            entry.client_id = Some(params.client_id.clone());
            entry.version = Some(version);
            entry.shows_mcp_apps = shows_mcp_apps;
        }
        let (present, missing): (Vec<String>, Vec<String>) = params
            .subscriptions
            .iter()
            .cloned()
            .partition(|uri| self.channel_kind(uri).is_some());
        for uri in &present {
            self.subscribe_conn(conn, uri);
        }
        let last_seen = u64::try_from(params.last_seen_server_seq).unwrap_or(0);
        // A client that has seen nothing (0) gets snapshots: cheaper than the whole history.
        let replayable = params.last_seen_server_seq > 0
            && last_seen >= self.replay_floor
            && last_seen <= self.seq;
        let (result, held_back) = if replayable {
            self.replay_result(last_seen, version, &present, missing)
        } else {
            let mut snapshots: Vec<Value> = present
                .iter()
                .filter_map(|uri| self.snapshot(uri, None))
                .collect();
            if self.fault(Fault::ReconnectSnapshotShort) {
                snapshots.pop();
            }
            (json!({ "type": "snapshot", "snapshots": snapshots }), None)
        };
        let client_id = params.client_id;
        let kept: HashSet<String> = present.into_iter().collect();
        let after: AfterReply = Box::new(move |world: &mut World| {
            if let Some(envelope) = held_back {
                world.send_to(conn, &notification("action", envelope));
            }
            if !world.fault(Fault::ReconnectKeepsActiveClient) {
                world.drop_active_client_outside(&client_id, &kept);
            }
            if world.fault(Fault::ReplayNotifications) {
                let summaries: Vec<Value> = world
                    .sessions
                    .keys()
                    .filter_map(|uri| world.session_summary(uri))
                    .collect();
                for summary in summaries {
                    world.send_to(
                        conn,
                        &notification(
                            "root/sessionAdded",
                            json!({ "channel": ROOT, "summary": summary }),
                        ),
                    );
                }
            }
        });
        Reply {
            result: Ok(result),
            close_after: false,
            after: Some(after),
        }
    }

    /// A reconnect answered by replay: the envelopes after `last_seen` on the `present`
    /// channels the client's `version` knows, and the `missing` channels. Also the envelope
    /// a replay fault holds back to send after the answer.
    fn replay_result(
        &mut self,
        last_seen: u64,
        version: (u64, u64, u64),
        present: &[String],
        missing: Vec<String>,
    ) -> (Value, Option<Value>) {
        let from = if self.fault(Fault::ReplayWrongRange) {
            last_seen
        } else {
            last_seen + 1
        };
        let mut actions: Vec<Value> = self
            .replay
            .iter()
            .filter(|r| r.seq >= from && present.contains(&r.channel) && r.introduced_in <= version)
            .map(|r| r.envelope.clone())
            .collect();
        let held_back = self.break_replay(&mut actions);
        let missing = if self.fault(Fault::MissingNotListed) {
            Vec::new()
        } else {
            missing
        };
        let kind = self.replay_kind(&actions, &missing);
        (
            json!({ "type": kind, "actions": actions, "missing": missing }),
            held_back,
        )
    }

    /// Removes `client_id` from `activeClients` of every session not in `kept`.
    pub fn drop_active_client_outside(&mut self, client_id: &str, kept: &HashSet<String>) {
        let sessions: Vec<String> = self
            .sessions
            .iter()
            .filter(|(uri, entry)| {
                !kept.contains(*uri)
                    && entry
                        .state
                        .active_clients
                        .iter()
                        .any(|c| c.client_id == client_id)
            })
            .map(|(uri, _)| uri.clone())
            .collect();
        for session in sessions {
            self.emit_logged(
                &session,
                json!({ "type": "session/activeClientRemoved", "clientId": client_id }),
            );
        }
    }
}
