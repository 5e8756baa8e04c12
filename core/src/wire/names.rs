//! The service's rules for project and logstore names, one implementation for the producer
//! (checked when a producer is configured and on every per-send destination) and the emulator
//! (checked before a logstore is created or looked up). Pure functions, any thread.
//!
//! The rules, as the service documents them: 3 to 63 bytes; lowercase ASCII letters, digits
//! and hyphens, plus underscores in logstore names; the first and last characters a letter
//! or a digit. A name outside them can never exist on the service, so both ends refuse it
//! before anything is sent or stored.

use crate::wire::limits::{MAX_NAME_BYTES, MIN_NAME_BYTES};

/// Which kind of name is checked (the two differ only in the underscore).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameKind {
    /// A project: `[a-z0-9-]`.
    Project,
    /// A logstore: `[a-z0-9_-]`.
    Logstore,
}

impl NameKind {
    /// The rule in words, as error messages state it.
    pub fn rule(self) -> &'static str {
        match self {
            NameKind::Project => {
                "must be 3 to 63 of [a-z0-9-], beginning and ending with a letter or digit"
            }
            NameKind::Logstore => {
                "must be 3 to 63 of [a-z0-9_-], beginning and ending with a letter or digit"
            }
        }
    }
}

/// Whether `name` is a valid name of `kind`.
pub fn is_valid_name(kind: NameKind, name: &str) -> bool {
    let bytes = name.as_bytes();
    let edge_ok = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    let inner_ok = |b: u8| edge_ok(b) || b == b'-' || (b == b'_' && kind == NameKind::Logstore);
    (MIN_NAME_BYTES..=MAX_NAME_BYTES).contains(&bytes.len())
        && bytes.first().copied().is_some_and(edge_ok)
        && bytes.last().copied().is_some_and(edge_ok)
        && bytes.iter().copied().all(inner_ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_services_examples_pass() {
        for name in ["access_log", "app-logs", "abc", "a1b", &"x".repeat(63)] {
            assert!(is_valid_name(NameKind::Logstore, name), "{name}");
        }
        for name in ["my-project", "loghose", "k8s-log-c0ffee", "abc"] {
            assert!(is_valid_name(NameKind::Project, name), "{name}");
        }
    }

    #[test]
    fn what_the_service_refuses_is_refused() {
        let bad = [
            "",
            "ab",
            "..",
            "%2e%2e%2f..%2fetc",
            "日志",
            "a%20b",
            "x\0yz",
            "Upper",
            "-abc",
            "abc-",
            "_abc",
            "abc_",
            "a b c",
            "a.b.c",
        ];
        for name in bad
            .iter()
            .copied()
            .chain([&*"x".repeat(64), &*"x".repeat(5000)])
        {
            assert!(!is_valid_name(NameKind::Logstore, name), "{name:?}");
            assert!(!is_valid_name(NameKind::Project, name), "{name:?}");
        }
        assert!(is_valid_name(NameKind::Logstore, "a_b"));
        assert!(!is_valid_name(NameKind::Project, "a_b"));
    }
}
