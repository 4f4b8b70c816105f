//! Cases the built-in host is rightly not applicable to: a rule about agents without a
//! capability the built-in agent advertises, with the form of it that the host is checked
//! by instead. Every other case passes against the built-in host.

/// (case ID, why it does not apply to the built-in host).
pub const NOT_APPLICABLE_TO_BUILTIN: &[(&str, &str)] = &[(
    "CHAT-FORK-001",
    "the scripted agent advertises fork and side chats (issue 29); CHAT-FORK-001/unknown-kind checks the rule against it",
)];

/// Whether `case` is one of [`NOT_APPLICABLE_TO_BUILTIN`].
pub fn not_applicable_to_builtin(case: &str) -> bool {
    NOT_APPLICABLE_TO_BUILTIN.iter().any(|(id, _)| *id == case)
}
