//! The tokens connections pushed with `authenticate` (issue 25, authentication; the auth
//! module answers the commands and runs the expiry).

use std::collections::HashMap;

/// A connection's id (the world's `ConnId`, spelled here so this file imports no world).
type ConnId = u64;

/// Tokens pushed per connection: resource → the grant's generation (a later push or a
/// revocation makes an earlier expiry timer a no-op).
#[derive(Debug, Default)]
pub struct Grants {
    by_conn: HashMap<ConnId, HashMap<String, u64>>,
    next: u64,
}

impl Grants {
    pub(super) fn holds(&self, conn: ConnId, resource: &str) -> bool {
        self.by_conn
            .get(&conn)
            .is_some_and(|grants| grants.contains_key(resource))
    }

    pub(super) fn grant(&mut self, conn: ConnId, resource: &str) -> u64 {
        self.next += 1;
        self.by_conn
            .entry(conn)
            .or_default()
            .insert(resource.to_owned(), self.next);
        self.next
    }

    pub(super) fn revoke(&mut self, conn: ConnId, resource: &str) {
        if let Some(grants) = self.by_conn.get_mut(&conn) {
            grants.remove(resource);
        }
    }

    /// Whether the grant of `generation` still stands; removes it when it does.
    pub(super) fn expire(&mut self, conn: ConnId, resource: &str, generation: u64) -> bool {
        let Some(grants) = self.by_conn.get_mut(&conn) else {
            return false;
        };
        if grants.get(resource) != Some(&generation) {
            return false;
        }
        grants.remove(resource);
        true
    }

    /// Drops a closed connection's tokens.
    pub fn forget(&mut self, conn: ConnId) {
        self.by_conn.remove(&conn);
    }
}
