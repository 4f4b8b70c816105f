//! The server under test: a URL, or the built-in reference host started for a certifying
//! run or for one fuzz sequence. The one place the harness composes with [`crate::host`]:
//! the runner ([`crate::engine`]) and the fuzzer ([`crate::fuzz`]) only ever see a URL.

use std::io;
use std::time::Duration;

use crate::host::{self, FaultSet, HostConfig, HostHandle};

/// What a built-in host is started for; each wants its own timings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// A whole certifying run over the catalog.
    Run,
    /// One fuzz sequence (every sequence gets a fresh host, so each starts clean).
    Sequence,
}

/// Starts the built-in host with `faults` for `purpose`.
pub async fn start_builtin(faults: FaultSet, purpose: Purpose) -> io::Result<HostHandle> {
    let config = match purpose {
        // A short grace period keeps RECONNECT-009 (removal after a disconnect) quick.
        Purpose::Run => HostConfig {
            client_grace: Duration::from_millis(300),
            ..HostConfig::with_fault(faults)
        },
        // Every sequence waits for its session to be ready anyway: no timer.
        Purpose::Sequence => HostConfig {
            session_init: Duration::ZERO,
            ..HostConfig::with_fault(faults)
        },
    };
    host::spawn(config).await
}

/// Where a fuzz sequence runs.
#[derive(Debug, Clone)]
pub struct Target {
    /// Server URL; `None`: a fresh built-in host per execution (so every run starts clean).
    pub url: Option<String>,
    /// Faults of the built-in host (with a URL: none).
    pub faults: FaultSet,
}

impl Target {
    /// The URL to connect to, and the fresh built-in host behind it when there is no URL
    /// (every execution gets its own, so each starts clean).
    pub async fn start(&self) -> io::Result<(String, Option<HostHandle>)> {
        match &self.url {
            Some(url) => Ok((url.clone(), None)),
            None => {
                let host = start_builtin(self.faults.clone(), Purpose::Sequence).await?;
                Ok((host.url().to_owned(), Some(host)))
            }
        }
    }
}
