//! Schema validation of a tape against validation of the equal `Value`: same verdict, same
//! number of errors. The instance is either a hostile value against any definition, or the
//! params of a well-formed message for one of the protocol's methods against that method's
//! params definition (so most instances get past the top-level `type`).
#![no_main]

use ahpspec::fuzz::shaped::{hostile_value, shaped_message, Limits};
use ahpspec::selfcheck::{embedded_schemas, tape_schema_matches_value};
use arbitrary::Unstructured;
use libfuzzer_sys::fuzz_target;

fn judge(def: &str, value: &serde_json::Value) {
    let text = value.to_string();
    if let Err(difference) = tape_schema_matches_value(def, &text) {
        panic!("{text}: {difference}");
    }
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let schemas = embedded_schemas();
    if u.ratio(1, 2).unwrap_or(false) {
        let Ok(message) = shaped_message(&mut u, 1, Limits::SMALL) else {
            return;
        };
        let method = message["method"].as_str().unwrap_or_default();
        if let Some(def) = schemas.map.params.get(method) {
            judge(def, &message["params"]);
        }
    } else {
        let defs: Vec<&str> = schemas.set.def_names().collect();
        let (Ok(def), Ok(value)) = (u.choose(&defs), hostile_value(&mut u, Limits::SMALL, 0))
        else {
            return;
        };
        judge(def, &value);
    }
});
