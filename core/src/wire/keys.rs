//! The service's rules for field keys, applied by the producer at `add` and by the emulator to
//! every PutLogs body, so both ends refuse exactly the same keys. Pure functions, any thread;
//! `check_key` runs once per field on the add path, so the common case (printable ASCII) is
//! checked eight bytes at a time.

use crate::wire::limits::{MAX_KEY_BYTES, RESERVED_KEYS};

/// Which key names are accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyPolicy {
    /// What the service accepts in practice: 1–128 bytes of UTF-8 without control characters,
    /// not a reserved name. Keys such as `Search/Analytics` or `http.method` pass (the vendor's
    /// own benchmark sends the former).
    #[default]
    Service,
    /// The documented data-model rule on top of that: `[A-Za-z_][A-Za-z0-9_]*`.
    Strict,
}

/// Why a key is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyProblem {
    /// Zero bytes.
    Empty,
    /// More than [`MAX_KEY_BYTES`].
    TooLong,
    /// Not UTF-8.
    NotUtf8,
    /// Contains a control character (such as a newline or tab).
    ControlCharacter,
    /// One of the names the service reserves (`__time__`, `__topic__`, …).
    Reserved,
    /// Not `[A-Za-z_][A-Za-z0-9_]*` under [`KeyPolicy::Strict`].
    NotAnIdentifier,
}

impl std::fmt::Display for KeyProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyProblem::Empty => "is empty",
            KeyProblem::TooLong => return write!(f, "is longer than {MAX_KEY_BYTES} bytes"),
            KeyProblem::NotUtf8 => "is not valid UTF-8",
            KeyProblem::ControlCharacter => "contains a control character",
            KeyProblem::Reserved => "is reserved by the service",
            KeyProblem::NotAnIdentifier => "must match [A-Za-z_][A-Za-z0-9_]*",
        })
    }
}

/// How many characters of a key an error message shows.
pub const SHOWN_KEY_CHARS: usize = 160;

/// A key as error messages show it: its first [`SHOWN_KEY_CHARS`] characters, bytes that are
/// not UTF-8 replaced.
pub fn shown_key(key: &[u8]) -> String {
    String::from_utf8_lossy(key)
        .chars()
        .take(SHOWN_KEY_CHARS)
        .collect()
}

/// Checks one field key against `policy`.
#[inline(always)]
pub fn check_key(key: &[u8], policy: KeyPolicy) -> Result<(), KeyProblem> {
    if key.is_empty() {
        return Err(KeyProblem::Empty);
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(KeyProblem::TooLong);
    }
    match policy {
        KeyPolicy::Strict => {
            let first_ok = key[0].is_ascii_alphabetic() || key[0] == b'_';
            if !first_ok || !key.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') {
                return Err(KeyProblem::NotAnIdentifier);
            }
        }
        KeyPolicy::Service => {
            // One pass for the common case, printable ASCII; the rest only when needed.
            if !printable_ascii(key) {
                if key.iter().any(|b| *b < 0x20 || *b == 0x7f) {
                    return Err(KeyProblem::ControlCharacter);
                }
                if std::str::from_utf8(key).is_err() {
                    return Err(KeyProblem::NotUtf8);
                }
            }
        }
    }
    if key[0] == b'_' && is_reserved(key) {
        return Err(KeyProblem::Reserved);
    }
    Ok(())
}

#[cold]
#[inline(never)]
fn is_reserved(key: &[u8]) -> bool {
    RESERVED_KEYS.iter().any(|r| r.as_bytes() == key)
}

/// Whether every byte is printable ASCII (0x20..=0x7e), eight bytes per step: keys are
/// checked on every add, and a byte loop was the largest part of encoding a field.
#[inline]
pub fn printable_ascii(bytes: &[u8]) -> bool {
    let n = bytes.len();
    if n < 8 {
        return bytes.iter().all(|b| (0x20..0x7f).contains(b));
    }
    let word_at = |at: usize| {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        u64::from_le_bytes(word)
    };
    let mut at = 0;
    while at + 8 < n {
        if !printable_word(word_at(at)) {
            return false;
        }
        at += 8;
    }
    // The last eight bytes, overlapping what was checked: no partial word to assemble.
    printable_word(word_at(n - 8))
}

#[inline]
pub(crate) fn printable_word(x: u64) -> bool {
    unprintable_bits(x) == 0
}

/// Zero exactly when every byte of `x` is printable ASCII (two words are checked at once by
/// OR-ing their answers).
#[inline]
pub(crate) fn unprintable_bits(x: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // A byte has its high bit set in `x` when it is >= 0x80, in `x - 0x20` when it is below
    // 0x20, in `x + 1` when it is 0x7f. A borrow or carry between bytes starts only at a byte
    // that is itself flagged, so the answer is exact for the word as a whole; and it is three
    // operations a word, which the encoder pays for every key.
    (x | x.wrapping_sub(0x20 * ONES) | x.wrapping_add(ONES)) & HIGH
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printable_ascii_matches_a_byte_loop() {
        let naive = |b: &[u8]| b.iter().all(|c| (0x20..0x7f).contains(c));
        for len in 0..=24usize {
            for pos in 0..len {
                for byte in 0..=255u8 {
                    let mut key = vec![b'k'; len];
                    key[pos] = byte;
                    assert_eq!(
                        printable_ascii(&key),
                        naive(&key),
                        "len {len} pos {pos} byte {byte:#x}"
                    );
                }
            }
            assert!(printable_ascii(&vec![b'~'; len]));
            assert!(printable_ascii(&vec![b' '; len]));
        }
    }

    #[test]
    fn a_word_with_two_bytes_set_is_judged_as_a_byte_loop_would() {
        // Two bytes at once, next to each other and apart: what a borrow or a carry between
        // bytes could get wrong.
        for (i, j) in [(0, 1), (3, 4), (2, 7), (6, 7)] {
            for a in 0..=255u8 {
                for b in 0..=255u8 {
                    let mut word = [b'k'; 8];
                    (word[i], word[j]) = (a, b);
                    let naive = word.iter().all(|c| (0x20..0x7f).contains(c));
                    let x = u64::from_le_bytes(word);
                    assert_eq!(printable_word(x), naive, "bytes {a:#x} {b:#x} at {i} {j}");
                }
            }
        }
    }

    #[test]
    fn each_rule_names_its_problem() {
        let long = "k".repeat(MAX_KEY_BYTES + 1);
        let cases: [(&[u8], KeyPolicy, Result<(), KeyProblem>); 9] = [
            (b"level", KeyPolicy::Service, Ok(())),
            (b"Search/Analytics", KeyPolicy::Service, Ok(())),
            (
                b"Search/Analytics",
                KeyPolicy::Strict,
                Err(KeyProblem::NotAnIdentifier),
            ),
            (b"", KeyPolicy::Service, Err(KeyProblem::Empty)),
            (
                long.as_bytes(),
                KeyPolicy::Service,
                Err(KeyProblem::TooLong),
            ),
            (
                b"a\nb",
                KeyPolicy::Service,
                Err(KeyProblem::ControlCharacter),
            ),
            (b"\xff\xfe", KeyPolicy::Service, Err(KeyProblem::NotUtf8)),
            (b"__topic__", KeyPolicy::Service, Err(KeyProblem::Reserved)),
            (b"1abc", KeyPolicy::Strict, Err(KeyProblem::NotAnIdentifier)),
        ];
        for (key, policy, expected) in cases {
            assert_eq!(check_key(key, policy), expected, "{key:?} {policy:?}");
        }
    }
}
