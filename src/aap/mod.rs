//! The AAP harness: certifies an Agent Application Protocol (version 3) server over HTTP +
//! SSE with the same verdicts, rows, baseline and reports as the AHP runner.
//!
//! Layers, from the wire up: [`http`] and [`sse`] (requests and streams, recorded into the
//! case transcript), [`checks`] (always-on rules on every response and event), [`model`]
//! (what a conversation holds, mode-independent), [`suite`] (suites/aap/*.toml), [`agent`]
//! (the agent `GET /meta` describes), [`case`] (one case), and the two runners over them:
//! [`runner`] (the catalog, always-on rows, cross-mode comparison) and [`fuzz`].

pub mod agent;
pub mod case;
pub mod checks;
pub mod expect;
pub mod fuzz;
pub mod http;
pub mod model;
pub mod runner;
pub mod sse;
pub mod suite;
pub mod vars;
pub mod version;

pub use version::{AapVersion, UnknownAapVersion};

/// The newest AAP protocol version the harness certifies (it knows 1, 2 and 3:
/// [`AapVersion`]).
pub const AAP_VERSION: u64 = AapVersion::LATEST.number();

/// The scripted test agent's name (aap/SCRIPTED-AGENT.md).
pub const SCRIPTED_AGENT: &str = "ahpspec-scripted";
