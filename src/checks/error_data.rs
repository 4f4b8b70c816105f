//! ERR-002 and ERR-003: the `data` of every `-32007` (AuthRequired) and `-32009`
//! (PermissionDenied) error the host answers with has the shape the protocol gives it.
//! Pure functions over the error's `data` member; the caller validates a `-32009`
//! `data.request` against the schema of `resourceRequest` params.

use crate::tape::Node;

/// AuthRequired.
pub const AUTH_REQUIRED: i64 = -32007;
/// PermissionDenied.
pub const PERMISSION_DENIED: i64 = -32009;

/// ERR-002: `data.resources` is an array of protected-resource metadata objects, each with
/// a string `resource`, every key snake_case.
pub fn auth_required(data: Node<'_>) -> Result<(), String> {
    let resources = data.member("resources");
    if !resources.is_array() {
        return Err(format!(
            "data {} has no resources array",
            super::frame::clip(&data.to_value().to_string())
        ));
    }
    for (index, resource) in resources.elements().enumerate() {
        if !resource.member("resource").is_string() {
            return Err(format!("data.resources[{index}] has no string resource"));
        }
        let camel = resource.members().map(|(key, _)| key).find(|key| {
            !key.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        });
        if let Some(key) = camel {
            return Err(format!(
                "data.resources[{index}] has key {key:?}, not snake_case"
            ));
        }
    }
    Ok(())
}

/// ERR-003: `data`, when present, is an object whose `request`, when present, is valid
/// `resourceRequest` params (judged by `valid_request`).
pub fn permission_denied(
    data: Node<'_>,
    valid_request: impl FnOnce(Node<'_>) -> Result<(), String>,
) -> Result<(), String> {
    if data.is_null() {
        return Ok(());
    }
    if !data.is_object() {
        return Err(format!(
            "data {} is not an object",
            super::frame::clip(&data.to_value().to_string())
        ));
    }
    let request = data.member("request");
    if request.is_null() {
        return Ok(());
    }
    if !request.is_object() {
        return Err(format!(
            "data.request {} is not resourceRequest params",
            super::frame::clip(&request.to_value().to_string())
        ));
    }
    valid_request(request)
}
