//! The tape parser against serde_json on structured JSON built with `arbitrary`: hostile
//! values (boundary numbers, odd Unicode, long strings, deep nesting) spelled with odd
//! whitespace and `\u` escapes, so that most inputs get past the syntax.
#![no_main]

use ahpspec::fuzz::shaped::AnyJson;
use ahpspec_fuzz::Spelling;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (AnyJson, Spelling)| {
    let (AnyJson(value), spelling) = input;
    let text = spelling.spell(&value);
    if let Err(difference) = ahpspec::selfcheck::tape_matches_serde(&text) {
        panic!("{text:?}: {difference}");
    }
});
