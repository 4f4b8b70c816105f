//! The tape parser against serde_json on raw bytes (see `ahpspec::selfcheck`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Err(difference) = ahpspec::selfcheck::tape_matches_serde(text) {
            panic!("{difference}");
        }
    }
});
