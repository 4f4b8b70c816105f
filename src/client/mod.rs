//! The AHP client layer, between the transport and both runners (the case runner in
//! [`crate::engine`] and the fuzzer in [`crate::fuzz`], peers over it): a connection whose
//! every frame is recorded and run through the always-on checks ([`Conn`]), and
//! checkpoints that hold its reducer mirrors against fresh snapshots ([`checkpoint`]).

pub mod checkpoint;
mod conn;

pub use conn::{json_equal, Conn, Located};
