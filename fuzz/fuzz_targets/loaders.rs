//! The suite, target profile, baseline and fuzz trace loaders on arbitrary bytes: the first
//! byte picks the loader, the rest is the file's content (read as the CLI reads it: UTF-8
//! or an error before the loader runs).
#![no_main]

use ahpspec::selfcheck::{loader_survives, Loader};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let loader = Loader::ALL[usize::from(pick) % Loader::ALL.len()];
    if let Ok(text) = std::str::from_utf8(rest) {
        if let Err(finding) = loader_survives(loader, text) {
            panic!("{loader:?}: {finding}");
        }
    }
});
