//! The per-connection always-on checks over arbitrary frame sequences, one frame per line
//! (`>` first: sent by the harness; else received). Never a panic; libFuzzer's `-timeout`
//! and `-rss_limit_mb` bound time and memory.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let frames = String::from_utf8_lossy(data);
    let _ = ahpspec::selfcheck::stream_checks_survive(&frames);
});
