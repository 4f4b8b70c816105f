//! ahpspec — conformance test harness and protocol fuzzer for the Agent Host Protocol (AHP).
//!
//! Layers, from the wire up: [`host`] is the built-in reference AHP server (an independent
//! peer: it never imports the harness's checks).

pub mod host;
pub mod schema;
pub mod schemagen;
