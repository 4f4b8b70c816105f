//! What the host keeps of its automations (issue 29, i29c): the catalogue as the reducer
//! folds it, the run channels, and the bookkeeping of requests, history pages and linked
//! sessions. Apart from the world, which holds it, so that the world needs nothing else of
//! the automations module.

use std::collections::{BTreeMap, HashMap, HashSet};

use ahp_types::state::{AutomationRunState, AutomationState};
use serde_json::Value;

/// The host's automations.
#[derive(Debug)]
pub struct Automations {
    /// The catalogue channel's state.
    pub catalogue: AutomationState,
    /// Run channels by URI.
    pub runs: BTreeMap<String, RunEntry>,
    /// (automation, requestId) → the run that request started (AUTOMATION-001).
    pub(in crate::host) requests: HashMap<(String, String), String>,
    /// Every run of each automation, newest first.
    pub(in crate::host) history: HashMap<String, Vec<String>>,
    /// How many pages of its run history each automation shows (one until fetched).
    pub(in crate::host) pages: HashMap<String, usize>,
    /// The run each automation-created session belongs to.
    pub(in crate::host) by_session: HashMap<String, String>,
    /// The workspace watcher of event triggers, once an enabled automation had one.
    pub(in crate::host) event_watcher: Option<notify::RecommendedWatcher>,
    /// The (automation, trigger) pairs whose event window is open (`events`).
    pub(in crate::host) pending_events: HashSet<(String, String)>,
}

impl Default for Automations {
    fn default() -> Self {
        Automations {
            catalogue: AutomationState {
                entries: Vec::new(),
                meta: None,
            },
            runs: BTreeMap::new(),
            requests: HashMap::new(),
            history: HashMap::new(),
            pages: HashMap::new(),
            by_session: HashMap::new(),
            event_watcher: None,
            pending_events: HashSet::new(),
        }
    }
}

/// One run channel.
#[derive(Debug)]
pub struct RunEntry {
    pub state: AutomationRunState,
    /// The message the run sends and the session template it starts its session from, as
    /// the definition held them when the run was requested.
    pub message: Value,
    pub template: Value,
    /// (chat, turn id) of the turn the message started, once it did.
    pub turn: Option<(String, String)>,
}
