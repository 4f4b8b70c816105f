//! The `echo-order-swapped` fault: a client's session title change is parked for a moment;
//! when the same connection's next dispatch is another title change of the same session,
//! the host applies (and echoes) that one first, then the parked one. Everything else that
//! could observe the parked change applies it first: a later dispatch or request of the same
//! connection, any message naming its channel, or a short timer when nothing comes.

use std::collections::HashMap;
use std::time::Duration;

use serde_json::Value;

use super::{ConnId, World};

/// How long a parked dispatch waits for its successor before it is applied anyway.
const PARK_FOR: Duration = Duration::from_millis(100);

/// Dispatches held back by the fault, per connection.
#[derive(Debug, Default)]
pub struct ParkedDispatches {
    /// connection → (parking number, `dispatchAction` params).
    by_conn: HashMap<ConnId, (u64, Value)>,
    parked: u64,
}

fn parks(params: &Value) -> bool {
    params["action"]["type"] == "session/titleChanged"
}

impl World {
    /// `dispatchAction` under the fault.
    pub fn dispatch_swapped(&mut self, conn: ConnId, params: &Value) {
        let channel = params["channel"].clone();
        let previous = self.parked.by_conn.remove(&conn);
        self.apply_parked_naming(&channel);
        match previous {
            Some((_, first)) if parks(params) && first["channel"] == channel => {
                self.apply_dispatch(conn, params);
                self.apply_dispatch(conn, &first);
            }
            Some((_, first)) => {
                self.apply_dispatch(conn, &first);
                self.park_or_apply(conn, params);
            }
            None => self.park_or_apply(conn, params),
        }
    }

    /// Before a request: applies what the requesting connection parked and whatever is
    /// parked on a channel the request names (`channel`, `subscriptions`).
    pub fn apply_parked_before_request(&mut self, conn: ConnId, params: &Value) {
        if self.parked.by_conn.is_empty() {
            return;
        }
        if let Some((_, parked)) = self.parked.by_conn.remove(&conn) {
            self.apply_dispatch(conn, &parked);
        }
        self.apply_parked_naming(&params["channel"]);
        for channel in params["subscriptions"].as_array().into_iter().flatten() {
            self.apply_parked_naming(channel);
        }
    }

    fn apply_parked_naming(&mut self, channel: &Value) {
        let waiting: Vec<ConnId> = self
            .parked
            .by_conn
            .iter()
            .filter(|(_, (_, parked))| &parked["channel"] == channel)
            .map(|(conn, _)| *conn)
            .collect();
        for conn in waiting {
            if let Some((_, parked)) = self.parked.by_conn.remove(&conn) {
                self.apply_dispatch(conn, &parked);
            }
        }
    }

    fn park_or_apply(&mut self, conn: ConnId, params: &Value) {
        let Some(shared) = self.shared.upgrade().filter(|_| parks(params)) else {
            self.apply_dispatch(conn, params);
            return;
        };
        self.parked.parked += 1;
        let number = self.parked.parked;
        self.parked.by_conn.insert(conn, (number, params.clone()));
        tokio::spawn(async move {
            tokio::time::sleep(PARK_FOR).await;
            let mut world = shared.lock();
            if world
                .parked
                .by_conn
                .get(&conn)
                .is_some_and(|(n, _)| *n == number)
            {
                if let Some((_, parked)) = world.parked.by_conn.remove(&conn) {
                    world.apply_dispatch(conn, &parked);
                }
            }
        });
    }
}
