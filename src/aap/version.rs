//! The published AAP versions (1, 2 and 3) and what differs between them on the wire.
//! Suites and checks speak version 3's endpoints (`POST /sessions`, `/sessions/:id/turns`,
//! `/sessions/:id/history?type=`); [`AapVersion::wire`] maps such a request to the
//! version under test just before it is sent, so one catalog serves every version and a
//! case only states which versions its rule holds in (`versions` in the suite file).
//! docs/aap-versions.md lists the differences.

use std::fmt;

/// A version of AAP the harness knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum AapVersion {
    /// `PUT /session` runs the first turn; history inline in `GET /session/:id?history=`;
    /// `GET /sessions` lists ids.
    V1,
    /// As 1, with `GET /session/:id/history?type=` and session objects in the listing.
    V2,
    /// `POST /sessions` (201, no turn), `POST /sessions/:id/turns`,
    /// `GET /sessions/:id/history?type=`.
    V3,
}

/// A version ahpspec has no catalog for.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown AAP protocol version {0:?} (known: 1, 2, 3)")]
pub struct UnknownAapVersion(pub String);

impl AapVersion {
    /// Every known version, oldest first.
    pub const ALL: [AapVersion; 3] = [AapVersion::V1, AapVersion::V2, AapVersion::V3];
    /// The newest version: the default of the built-in server.
    pub const LATEST: AapVersion = AapVersion::V3;

    pub const fn number(self) -> u64 {
        match self {
            AapVersion::V1 => 1,
            AapVersion::V2 => 2,
            AapVersion::V3 => 3,
        }
    }

    pub fn from_number(number: u64) -> Option<AapVersion> {
        AapVersion::ALL.into_iter().find(|v| v.number() == number)
    }

    /// The version a run speaks: the one asked for, else the one `GET /meta` said, else
    /// (no usable meta: AAP-META-001 judges that) the newest. `Err`: what the server said,
    /// a version ahpspec has no catalog for.
    pub fn choose(
        asked: Option<AapVersion>,
        said: Option<&serde_json::Value>,
    ) -> Result<AapVersion, String> {
        match (asked, said) {
            (Some(version), _) => Ok(version),
            (None, None) => Ok(AapVersion::LATEST),
            (None, Some(value)) => value
                .as_u64()
                .and_then(AapVersion::from_number)
                .ok_or_else(|| value.to_string()),
        }
    }

    /// Whether session creation runs the agent on the last seed message (versions 1 and
    /// 2: `PUT /session` answers the first turn, with `sessionId` in its body or in a
    /// `session_start` event).
    pub const fn creation_runs_turn(self) -> bool {
        !matches!(self, AapVersion::V3)
    }

    /// The wire form of a request written with version 3's endpoints: method and path
    /// (with its query). Paths that are no version-3 endpoint go as they are.
    pub fn wire(self, method: &str, path: &str) -> (String, String) {
        let keep = || (method.to_owned(), path.to_owned());
        if self == AapVersion::V3 {
            return keep();
        }
        let (query, parts) = split(path);
        let with_query = |p: String, q: Option<&str>| match q {
            Some(q) => format!("{p}?{q}"),
            None => p,
        };
        match (method, parts.as_slice()) {
            ("POST", ["sessions"]) => ("PUT".into(), with_query("/session".into(), query)),
            (_, ["sessions", id]) => (method.into(), with_query(format!("/session/{id}"), query)),
            ("POST", ["sessions", id, "turns"]) => {
                ("POST".into(), with_query(format!("/session/{id}"), query))
            }
            (_, ["sessions", id, "history"]) if self == AapVersion::V1 => {
                // Version 1 has no history endpoint: the session object carries it when
                // asked with `?history=`.
                let query = query.map(|q| {
                    q.split('&')
                        .map(|pair| match pair.strip_prefix("type=") {
                            Some(kind) => format!("history={kind}"),
                            None => pair.to_owned(),
                        })
                        .collect::<Vec<_>>()
                        .join("&")
                });
                (
                    method.into(),
                    with_query(format!("/session/{id}"), query.as_deref()),
                )
            }
            (_, ["sessions", id, rest @ ..]) => (
                method.into(),
                with_query(format!("/session/{id}/{}", rest.join("/")), query),
            ),
            _ => keep(),
        }
    }
}

impl AapVersion {
    /// The inverse of [`AapVersion::wire`]: a request as it went on the wire at this
    /// version, in version 3's terms (what the checks speak). Paths of no endpoint of this
    /// version go as they are.
    pub fn unwire(self, method: &str, path: &str) -> (String, String) {
        let keep = || (method.to_owned(), path.to_owned());
        if self == AapVersion::V3 {
            return keep();
        }
        let (query, parts) = split(path);
        let v3 = |p: String, q: Option<String>| match q {
            Some(q) => format!("{p}?{q}"),
            None => p,
        };
        let query_owned = query.map(str::to_owned);
        match (method, parts.as_slice()) {
            ("PUT", ["session"]) => ("POST".into(), v3("/sessions".into(), query_owned)),
            ("POST", ["session", id]) => (
                "POST".into(),
                v3(format!("/sessions/{id}/turns"), query_owned),
            ),
            ("GET", ["session", id]) if self == AapVersion::V1 && has_history(query) => {
                // Version 1's history: the session object asked with `?history=`.
                let query = query.map(|q| {
                    q.split('&')
                        .map(|pair| match pair.strip_prefix("history=") {
                            Some(kind) => format!("type={kind}"),
                            None => pair.to_owned(),
                        })
                        .collect::<Vec<_>>()
                        .join("&")
                });
                ("GET".into(), v3(format!("/sessions/{id}/history"), query))
            }
            (_, ["session", id, rest @ ..]) => {
                let tail = if rest.is_empty() {
                    String::new()
                } else {
                    format!("/{}", rest.join("/"))
                };
                (
                    method.into(),
                    v3(format!("/sessions/{id}{tail}"), query_owned),
                )
            }
            _ => keep(),
        }
    }
}

/// A path's query (when it has one) and its segments.
fn split(path: &str) -> (Option<&str>, Vec<&str>) {
    let (bare, query) = match path.split_once('?') {
        Some((bare, query)) => (bare, Some(query)),
        None => (path, None),
    };
    (query, bare.trim_start_matches('/').split('/').collect())
}

/// Whether a query asks for a history (`history=…`).
fn has_history(query: Option<&str>) -> bool {
    query.is_some_and(|q| q.split('&').any(|pair| pair.starts_with("history=")))
}

impl fmt::Display for AapVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.number())
    }
}

impl std::str::FromStr for AapVersion {
    type Err = UnknownAapVersion;

    fn from_str(text: &str) -> Result<AapVersion, UnknownAapVersion> {
        text.trim()
            .parse::<u64>()
            .ok()
            .and_then(AapVersion::from_number)
            .ok_or_else(|| UnknownAapVersion(text.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::AapVersion::{self, V1, V2, V3};

    fn wire(version: AapVersion, method: &str, path: &str) -> String {
        let (m, p) = version.wire(method, path);
        format!("{m} {p}")
    }

    #[test]
    fn version_three_requests_map_to_each_version() {
        assert_eq!(wire(V3, "POST", "/sessions"), "POST /sessions");
        assert_eq!(wire(V2, "POST", "/sessions"), "PUT /session");
        assert_eq!(
            wire(V1, "GET", "/sessions?after=x"),
            "GET /sessions?after=x"
        );
        assert_eq!(wire(V1, "DELETE", "/sessions/s1"), "DELETE /session/s1");
        assert_eq!(wire(V2, "POST", "/sessions/s1/turns"), "POST /session/s1");
        assert_eq!(
            wire(V2, "GET", "/sessions/s1/history?type=full"),
            "GET /session/s1/history?type=full"
        );
        assert_eq!(
            wire(V1, "GET", "/sessions/s1/history?type=full"),
            "GET /session/s1?history=full"
        );
        assert_eq!(wire(V1, "GET", "/sessions/s1/history"), "GET /session/s1");
        assert_eq!(wire(V1, "GET", "/meta"), "GET /meta");
        assert_eq!(wire(V1, "GET", "/nowhere/x"), "GET /nowhere/x");
    }

    #[test]
    fn wire_requests_map_back_to_version_three() {
        for version in [V1, V2, V3] {
            for (method, path) in [
                ("POST", "/sessions"),
                ("GET", "/sessions?after=x"),
                ("GET", "/sessions/s1"),
                ("DELETE", "/sessions/s1"),
                ("POST", "/sessions/s1/turns"),
                ("GET", "/sessions/s1/history?type=full"),
                ("GET", "/meta"),
                ("GET", "/nowhere/x"),
            ] {
                let (m, p) = version.wire(method, path);
                assert_eq!(
                    version.unwire(&m, &p),
                    (method.to_owned(), path.to_owned()),
                    "{version}: {method} {path} went as {m} {p}"
                );
            }
        }
        // Version 2's history endpoint, and a version 1 session read without history.
        assert_eq!(
            V2.unwire("GET", "/session/s1/history?type=compacted").1,
            "/sessions/s1/history?type=compacted"
        );
        assert_eq!(V1.unwire("GET", "/session/s1").1, "/sessions/s1");
    }

    /// The cases the fuzz capture's reader (`canonical`, merged into `unwire`) was tested
    /// on: version 1's history asked on the session object, its other parameters kept;
    /// an empty query stays on the path, as `wire` keeps it (the round trip is exact).
    #[test]
    fn version_one_history_reads_and_empty_queries_map_back() {
        assert_eq!(
            V1.unwire("GET", "/session/s1?history=compacted"),
            ("GET".into(), "/sessions/s1/history?type=compacted".into())
        );
        assert_eq!(
            V1.unwire("GET", "/session/s1?after=x&history=full").1,
            "/sessions/s1/history?after=x&type=full"
        );
        for version in [V1, V2] {
            let (m, p) = version.wire("GET", "/sessions?");
            assert_eq!(version.unwire(&m, &p), ("GET".into(), "/sessions?".into()));
        }
    }

    #[test]
    fn versions_parse_from_their_numbers_only() {
        assert_eq!("2".parse::<AapVersion>(), Ok(V2));
        assert!("4".parse::<AapVersion>().is_err());
        assert!("1.0.0".parse::<AapVersion>().is_err());
        assert_eq!(AapVersion::from_number(3), Some(V3));
        assert!(V1.creation_runs_turn() && !V3.creation_runs_turn());
        let said = serde_json::json!(2);
        assert_eq!(AapVersion::choose(None, Some(&said)), Ok(V2));
        assert_eq!(AapVersion::choose(Some(V1), Some(&said)), Ok(V1));
        assert_eq!(AapVersion::choose(None, None), Ok(V3));
        let odd = serde_json::json!("3");
        assert_eq!(
            AapVersion::choose(None, Some(&odd)),
            Err("\"3\"".to_owned())
        );
    }
}
