//! ahpspec — conformance test harness and protocol fuzzer for the Agent Host Protocol (AHP).
//!
//! Layers, from the wire up: [`transport`] (WebSocket frames in and out, recorded into a
//! transcript), then the protocol driver, checks, runner and reporters. [`host`] is the
//! built-in reference AHP server: an independent peer that never imports the harness's
//! checks.

pub mod aap;
pub mod aaphost;
pub mod capture;
pub mod catalog;
pub mod certify;
pub mod checks;
pub mod client;
pub mod coverage;
pub mod embed;
pub mod engine;
pub mod fasthash;
pub mod faultset;
pub mod fuzz;
pub mod host;
pub mod merge;
pub mod proxy;
pub mod reach;
pub mod redact;
pub mod report;
pub mod rows;
pub mod schema;
pub mod schemagen;
#[doc(hidden)]
pub mod selfcheck;
pub mod server;
pub mod steps;
pub mod suite;
pub mod tape;
pub mod target;
pub mod traffic;
pub mod transport;
pub mod verdict;
