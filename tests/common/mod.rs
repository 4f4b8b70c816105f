//! Pieces shared by several test binaries.

use serde_json::{json, Value};

/// A value of each JSON kind (null, number, string, array, object): a member replaced by
/// each in turn gives the broken copies a decoder must judge as the derived one does.
pub fn wrong_typed() -> [Value; 5] {
    [
        json!(null),
        json!(7),
        json!("x"),
        json!([1]),
        json!({"a": 1}),
    ]
}
