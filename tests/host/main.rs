//! Integration tests of the built-in reference host over real loopback WebSockets.

mod support;

mod bad_input;
mod catalog;
mod cli;
mod connection;
mod sessions;
mod sync;
mod turns;
