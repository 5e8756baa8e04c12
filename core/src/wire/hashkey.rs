//! Shard hash keys: 128-bit values written as 32 lowercase hex digits; shard `i` of `n` owns
//! the range `[i·w, (i+1)·w)` with `w = 2^128 / n`, the last one ending at `ff…f`
//! (docs/protocol.md §1). Pure functions, any thread.

/// Parses a hash key: 1 to 32 hex digits, read as the leading digits of a 128-bit value
/// (`"8"` is `80000000000000000000000000000000`). `None` for anything else.
pub fn parse(key: &str) -> Option<u128> {
    if key.is_empty() || key.len() > 32 || !key.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let value = u128::from_str_radix(key, 16).ok()?;
    Some(value << (4 * (32 - key.len())))
}

/// Formats a 128-bit key as 32 lowercase hex digits.
pub fn format(key: u128) -> String {
    format!("{key:032x}")
}

fn width(shard_count: u32) -> Option<u128> {
    (shard_count > 1).then(|| u128::MAX / u128::from(shard_count) + 1)
}

/// The shard (0-based) whose range holds `key`, among `shard_count` equal ranges.
pub fn shard_of(key: u128, shard_count: u32) -> u32 {
    match width(shard_count) {
        None => 0,
        Some(w) => ((key / w) as u32).min(shard_count - 1),
    }
}

/// `(inclusiveBeginKey, exclusiveEndKey)` of shard `index` among `shard_count`.
pub fn shard_range(index: u32, shard_count: u32) -> (u128, u128) {
    match width(shard_count) {
        None => (0, u128::MAX),
        Some(w) => {
            let begin = w * u128::from(index);
            let end = if index + 1 >= shard_count {
                u128::MAX
            } else {
                w * u128::from(index + 1)
            };
            (begin, end)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_parse_as_leading_digits() {
        assert_eq!(parse("8"), Some(1u128 << 127));
        assert_eq!(
            parse("5f3c0b8a4e1d2c6b7a8f9e0d1c2b3a49"),
            Some(0x5f3c0b8a4e1d2c6b7a8f9e0d1c2b3a49)
        );
        assert_eq!(parse("FF"), Some(0xffu128 << 120));
        for bad in ["", "g", "0x12", "123456789012345678901234567890123", " 1"] {
            assert_eq!(parse(bad), None, "{bad:?}");
        }
        assert_eq!(format(1), "00000000000000000000000000000001");
    }

    #[test]
    fn every_key_routes_into_its_shards_range() {
        for n in [1u32, 2, 3, 4, 7, 64] {
            let mut rng = fastrand::Rng::with_seed(u64::from(n));
            for _ in 0..1000 {
                let key = rng.u128(..);
                let shard = shard_of(key, n);
                let (begin, end) = shard_range(shard, n);
                assert!(
                    key >= begin && (key < end || end == u128::MAX),
                    "n={n} key={key:x} shard={shard}"
                );
            }
            assert_eq!(shard_of(0, n), 0);
            assert_eq!(shard_of(u128::MAX, n), n - 1);
            for i in 1..n {
                assert_eq!(
                    shard_range(i - 1, n).1,
                    shard_range(i, n).0,
                    "ranges of {n} shards are contiguous"
                );
            }
        }
        assert_eq!(shard_range(1, 2), (1u128 << 127, u128::MAX));
    }
}
