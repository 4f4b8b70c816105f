use std::path::Path;

use ahpspec::host::catalog::{action_info, ACTIONS};
use serde_json::Value;

/// The host's action table must match the 1.0.0 type inventory it was derived from.
#[test]
fn action_catalog_matches_the_type_inventory() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("upstream/ahp/1.0.0/derived/types-1.0.0.json");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let inventory: Value = serde_json::from_str(&text).expect("inventory is JSON");
    let actions = inventory["actions"]
        .as_object()
        .expect("inventory lists actions");
    assert_eq!(actions.len(), ACTIONS.len());
    for (kind, facts) in actions {
        let info =
            action_info(kind).unwrap_or_else(|| panic!("{kind} missing from the host catalog"));
        assert_eq!(
            Some(info.client_dispatchable),
            facts["clientDispatchable"].as_bool(),
            "{kind}"
        );
        let introduced = facts["introducedIn"].as_str().unwrap_or_default();
        let (major, minor, patch) = info.introduced_in;
        assert_eq!(format!("{major}.{minor}.{patch}"), introduced, "{kind}");
    }
}
