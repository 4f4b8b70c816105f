//! The server under test, decided in one place for every command and both protocols: a
//! URL, or the built-in server of the protocol with faults injected (faults only for the
//! built-in server). The one file of the harness that starts servers ([`crate::host`],
//! [`crate::aaphost`]): a certifying run gets the URL of a built-in server started for it,
//! a fuzz campaign a fresh server per sequence ([`crate::server::Target`]), `serve` the
//! server it asks for. Runners only ever see a URL.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::aaphost::{self, AapFault, AapFaultSet, AapHostConfig, AapHostHandle};
use crate::faultset::{self, FaultSet as FaultSetOf};
use crate::host::{self, Fault, FaultSet, HostConfig, HostHandle};
use crate::server::{self, BoxFuture, FreshServers, Running};

/// The protocol a command speaks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Protocol {
    #[default]
    Ahp,
    Aap,
}

/// Decides the protocol from `--protocol` and the URL's scheme (`ws`/`wss` AHP,
/// `http`/`https` AAP; no URL and no `--protocol`: AHP). A contradiction is an error.
pub fn protocol_of(url: Option<&str>, named: Option<&str>) -> Result<Protocol, String> {
    let named = match named {
        None => None,
        Some("ahp") => Some(Protocol::Ahp),
        Some("aap") => Some(Protocol::Aap),
        Some(other) => return Err(format!("unknown protocol {other:?} (ahp or aap)")),
    };
    let by_scheme = match url {
        None => None,
        Some(u) if u.starts_with("ws://") || u.starts_with("wss://") => Some(Protocol::Ahp),
        Some(u) if u.starts_with("http://") || u.starts_with("https://") => Some(Protocol::Aap),
        Some(u) => {
            return Err(format!(
                "not a server URL: {u} (ws://… or wss://… for AHP, http://… or https://… for AAP)"
            ))
        }
    };
    match (named, by_scheme) {
        (Some(named), Some(scheme)) if named != scheme => Err(format!(
            "--protocol {} does not match the URL's scheme",
            if named == Protocol::Aap { "aap" } else { "ahp" }
        )),
        (named, scheme) => Ok(named.or(scheme).unwrap_or(Protocol::Ahp)),
    }
}

/// Faults for the built-in server (`--fault a,b`), by name: read against the fault catalog
/// of the protocol's server when the target is decided ([`decide`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Faults(Option<String>);

impl Faults {
    /// The faults named `a,b`; `None`: the correct server.
    pub fn named(names: Option<&str>) -> Faults {
        Faults(names.map(str::to_owned))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }
}

impl<F: faultset::Fault> From<FaultSetOf<F>> for Faults {
    fn from(set: FaultSetOf<F>) -> Faults {
        Faults(set.label())
    }
}

impl From<Fault> for Faults {
    fn from(fault: Fault) -> Faults {
        FaultSet::from(fault).into()
    }
}

impl From<AapFault> for Faults {
    fn from(fault: AapFault) -> Faults {
        AapFaultSet::from(fault).into()
    }
}

/// Why there is no target to work against.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("--fault applies to the built-in server only (omit the URL)")]
    FaultNeedsBuiltin,
    #[error("{0}")]
    UnknownFault(#[from] faultset::UnknownFault),
    #[error("cannot start the built-in {protocol} server: {source}")]
    Start {
        protocol: &'static str,
        #[source]
        source: io::Error,
    },
}

/// The API key the built-in AAP server is started with, so the authentication cases run.
pub const AAP_BUILTIN_TOKEN: &str = "ahpspec-builtin-key";

/// What a command works against, decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decided {
    /// A server somebody else runs.
    Url(String),
    /// The built-in AHP host with these faults.
    Host(FaultSet),
    /// The built-in AAP server with these faults.
    AapServer(AapFaultSet),
}

/// The target of a command: the URL's server, or (without a URL) the built-in server of
/// `protocol` with `faults`, which a URL does not take.
pub fn decide(
    protocol: Protocol,
    url: Option<&str>,
    faults: &Faults,
) -> Result<Decided, TargetError> {
    match (url, &faults.0) {
        (Some(_), Some(_)) => Err(TargetError::FaultNeedsBuiltin),
        (Some(url), None) => Ok(Decided::Url(url.to_owned())),
        (None, names) => {
            let names = names.as_deref();
            Ok(match protocol {
                Protocol::Ahp => {
                    Decided::Host(names.map(str::parse).transpose()?.unwrap_or_default())
                }
                Protocol::Aap => {
                    Decided::AapServer(names.map(str::parse).transpose()?.unwrap_or_default())
                }
            })
        }
    }
}

impl Decided {
    /// The URL of a server somebody else runs.
    pub fn url(&self) -> Option<&str> {
        match self {
            Decided::Url(url) => Some(url),
            _ => None,
        }
    }

    /// How reports name the target: the URL, or `builtin`.
    pub fn label(&self) -> String {
        self.url().unwrap_or("builtin").to_owned()
    }

    /// The faults of the built-in server (`a,b`), for reports and re-run commands.
    pub fn fault_label(&self) -> Option<String> {
        match self {
            Decided::Url(_) => None,
            Decided::Host(faults) => faults.label(),
            Decided::AapServer(faults) => faults.label(),
        }
    }

    /// The API key a run sends: the one given, or the built-in AAP server's.
    pub fn token(&self, given: Option<String>) -> Option<String> {
        match self {
            Decided::AapServer(_) => given.or_else(|| Some(AAP_BUILTIN_TOKEN.to_owned())),
            _ => given,
        }
    }

    /// For a certifying run: the server to run against, the built-in one started now
    /// (`token`: the key the built-in AAP server requires).
    pub async fn start_for_run(&self, token: Option<String>) -> Result<Running, TargetError> {
        match self {
            Decided::Url(url) => Ok(Server::Url(url.clone())),
            // A short grace period keeps RECONNECT-009 (removal after a disconnect) quick.
            Decided::Host(faults) => start_host(HostConfig {
                client_grace: Duration::from_millis(300),
                ..HostConfig::with_fault(faults.clone())
            })
            .await
            .map(Server::Host),
            Decided::AapServer(faults) => start_aap_server(AapHostConfig {
                faults: faults.clone(),
                token: self.token(token),
                ..AapHostConfig::default()
            })
            .await
            .map(Server::Aap),
        }
        .map(Server::running)
        .map_err(|source| self.start_error(source))
    }

    /// For an AAP run at `version` (1, 2 or 3): the URL, or the built-in AAP server started
    /// now speaking that version. Any other target starts as [`Decided::start_for_run`].
    pub async fn start_aap_for_run(
        &self,
        token: Option<String>,
        version: u64,
    ) -> Result<Running, TargetError> {
        let Decided::AapServer(faults) = self else {
            return self.start_for_run(token).await;
        };
        start_aap_server(AapHostConfig {
            faults: faults.clone(),
            token: self.token(token),
            version,
            ..AapHostConfig::default()
        })
        .await
        .map(Server::Aap)
        .map(Server::running)
        .map_err(|source| self.start_error(source))
    }

    /// For a fuzz campaign: where its sequences run, a fresh built-in server for each
    /// (`token`: the key the built-in AAP server requires, as [`Decided::token`] gives it).
    pub fn for_sequences(&self, token: Option<String>) -> server::Target {
        match self {
            Decided::Url(url) => server::Target::Url(url.clone()),
            built_in => server::Target::Fresh(Arc::new(BuiltIn {
                decided: built_in.clone(),
                token: self.token(token),
            })),
        }
    }

    fn start_error(&self, source: io::Error) -> TargetError {
        let protocol = match self {
            Decided::AapServer(_) => "AAP",
            _ => "AHP",
        };
        TargetError::Start { protocol, source }
    }
}

/// Fresh built-in servers, one per fuzz sequence.
#[derive(Debug)]
struct BuiltIn {
    decided: Decided,
    /// The key the AAP server requires.
    token: Option<String>,
}

impl FreshServers for BuiltIn {
    fn start(&self) -> BoxFuture<'_, io::Result<Running>> {
        Box::pin(async move {
            let server = match &self.decided {
                Decided::Url(url) => Server::Url(url.clone()),
                // Every sequence waits for its session to be ready anyway: no timer.
                Decided::Host(faults) => Server::Host(
                    start_host(HostConfig {
                        session_init: Duration::ZERO,
                        ..HostConfig::with_fault(faults.clone())
                    })
                    .await?,
                ),
                Decided::AapServer(faults) => Server::Aap(
                    start_aap_server(AapHostConfig {
                        faults: faults.clone(),
                        token: self.token.clone(),
                        ..AapHostConfig::default()
                    })
                    .await?,
                ),
            };
            Ok(server.running())
        })
    }

    fn serve_workspaces(&self) -> bool {
        matches!(self.decided, Decided::Host(_))
    }
}

/// A server composition started (or the URL of one it did not).
enum Server {
    Url(String),
    Host(HostHandle),
    Aap(AapHostHandle),
}

impl Server {
    fn running(self) -> Running {
        match self {
            Server::Url(url) => Running::at(url),
            Server::Host(host) => {
                let workspace = host.workspace_uri();
                let mut running =
                    Running::started(host.url().to_owned(), Box::pin(host.shutdown()));
                running.workspace = Some(workspace);
                running
            }
            Server::Aap(server) => Running::started(server.base_url(), Box::pin(server.shutdown())),
        }
    }
}

/// Starts the built-in AHP host as configured (`serve`, and every built-in target).
pub async fn start_host(config: HostConfig) -> io::Result<HostHandle> {
    host::spawn(config).await
}

/// Starts the built-in AAP server as configured (`serve --protocol aap`, and every
/// built-in AAP target).
pub async fn start_aap_server(config: AapHostConfig) -> io::Result<AapHostHandle> {
    aaphost::spawn(config).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheme_or_the_flag_picks_the_protocol() {
        assert_eq!(protocol_of(Some("http://h:1/v1"), None), Ok(Protocol::Aap));
        assert_eq!(protocol_of(Some("https://h"), None), Ok(Protocol::Aap));
        assert_eq!(protocol_of(Some("ws://h:1"), None), Ok(Protocol::Ahp));
        assert_eq!(protocol_of(None, None), Ok(Protocol::Ahp));
        assert_eq!(protocol_of(None, Some("aap")), Ok(Protocol::Aap));
        assert!(protocol_of(Some("ws://h"), Some("aap")).is_err());
        assert!(protocol_of(Some("ftp://h"), None).is_err());
        assert!(protocol_of(None, Some("xmpp")).is_err());
    }

    #[test]
    fn faults_are_for_the_built_in_server_of_the_protocol() {
        let faults = Faults::named(Some("queue-lifo"));
        assert!(matches!(
            decide(Protocol::Ahp, Some("ws://h"), &faults),
            Err(TargetError::FaultNeedsBuiltin)
        ));
        assert_eq!(
            decide(Protocol::Ahp, None, &faults)
                .map(|d| d.fault_label())
                .ok(),
            Some(Some("queue-lifo".to_owned()))
        );
        // An AHP fault is no fault of the AAP server.
        assert!(matches!(
            decide(Protocol::Aap, None, &faults),
            Err(TargetError::UnknownFault(_))
        ));
        assert_eq!(
            decide(Protocol::Aap, None, &Faults::default()).ok(),
            Some(Decided::AapServer(AapFaultSet::default()))
        );
    }
}
