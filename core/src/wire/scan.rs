//! A zero-copy validator for `LogGroup` bodies: walks the protobuf wire format once, checks
//! everything the service checks (structure, UTF-8, key names, value, topic and source sizes,
//! log times, the group's size, logs per group and fields per log), and counts logs, without
//! decoding into owned strings. It allocates nothing but the list of a `LogGroupList`'s groups.
//!
//! The emulator runs it on every PutLogs body and stores the validated bytes as they are,
//! decoding them only when a test reads them back; this keeps ingest at millions of logs per
//! second per core. Field keys follow the rules of [`crate::wire::keys`], which the producer
//! applies at `add`.
//! Pure functions, any thread; the input is never modified.

use crate::wire::keys::{check_key, shown_key, KeyPolicy, KeyProblem};
use crate::wire::limits::{
    MAX_FIELDS_PER_LOG, MAX_KEY_BYTES, MAX_LOGS_PER_GROUP_ACCEPTED, MAX_LOG_GROUP_BYTES,
    MAX_SOURCE_BYTES, MAX_TOPIC_BYTES, MAX_VALUE_BYTES,
};

/// A body the service would refuse, with what and where.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScanError {
    /// Not a well-formed protobuf message of the expected shape.
    #[error("malformed LogGroup at byte {offset}: {what}")]
    Malformed {
        /// Byte offset in the uncompressed body.
        offset: usize,
        /// What was wrong.
        what: &'static str,
    },
    /// A log without its required `Time`.
    #[error("log {log} has no time")]
    MissingTime {
        /// Index of the log in its group.
        log: usize,
    },
    /// A field key the service refuses.
    #[error("log {log}: key {key:?} {problem}")]
    InvalidKey {
        /// Index of the log in its group.
        log: usize,
        /// The key, lossily decoded and cut to 160 characters.
        key: String,
        /// Why.
        problem: KeyProblem,
    },
    /// A field value above [`MAX_VALUE_BYTES`].
    #[error("log {log}: value of key {key:?} is {len} bytes, above the limit of {limit}")]
    ValueTooLarge {
        /// Index of the log in its group.
        log: usize,
        /// The key whose value is too large.
        key: String,
        /// The value's size.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A string field that is not UTF-8.
    #[error("{field} is not valid UTF-8{}", log.map(|l| format!(" (log {l})")).unwrap_or_default())]
    NotUtf8 {
        /// Which field.
        field: &'static str,
        /// Index of the log, when the field belongs to one.
        log: Option<usize>,
    },
    /// Topic or source longer than 128 bytes.
    #[error("{field} is {len} bytes, above the limit of {limit}")]
    FieldTooLong {
        /// `topic` or `source`.
        field: &'static str,
        /// Its size.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// A `LogGroup` above [`MAX_LOG_GROUP_BYTES`] uncompressed.
    #[error("log group is {len} bytes, above the limit of {limit}")]
    GroupTooLarge {
        /// Its size.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// More logs in one group than [`MAX_LOGS_PER_GROUP_ACCEPTED`].
    #[error("log group has more than {limit} logs")]
    TooManyLogs {
        /// The limit.
        limit: usize,
    },
    /// More fields in one log than [`MAX_FIELDS_PER_LOG`].
    #[error("log {log} has more than {limit} fields")]
    TooManyFields {
        /// Index of the log in its group.
        log: usize,
        /// The limit.
        limit: usize,
    },
    /// A `Time_ns` outside 0..=999 999 999.
    #[error("log {log}: Time_ns {value} is not below 1e9")]
    InvalidTimeNs {
        /// Index of the log in its group.
        log: usize,
        /// The value sent.
        value: u32,
    },
}

/// What a valid group holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GroupSummary {
    /// Number of logs.
    pub logs: u32,
    /// Where the value of the group's `__pack_id__` tag lies in the scanned bytes, if it has
    /// one (the first).
    pub pack_id: Option<(usize, usize)>,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8], base: usize) -> Self {
        Reader { buf, pos: 0, base }
    }

    fn malformed(&self, what: &'static str) -> ScanError {
        ScanError::Malformed {
            offset: self.base + self.pos,
            what,
        }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    #[inline]
    fn varint(&mut self) -> Result<u64, ScanError> {
        let mut value = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(&byte) = self.buf.get(self.pos) else {
                return Err(self.malformed("truncated varint"));
            };
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(self.malformed("varint overflows 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
        }
        Err(self.malformed("varint longer than 10 bytes"))
    }

    #[inline]
    fn bytes(&mut self) -> Result<(&'a [u8], usize), ScanError> {
        let len = self.varint()?;
        let start = self.pos;
        let end = usize::try_from(len)
            .ok()
            .and_then(|l| start.checked_add(l))
            .filter(|e| *e <= self.buf.len());
        let Some(end) = end else {
            return Err(self.malformed("length runs past the end"));
        };
        self.pos = end;
        Ok((&self.buf[start..end], self.base + start))
    }

    fn fixed32(&mut self) -> Result<u32, ScanError> {
        let Some(b) = self.buf.get(self.pos..self.pos + 4) else {
            return Err(self.malformed("truncated fixed32"));
        };
        self.pos += 4;
        Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// Skips a field of an unknown number, by wire type.
    fn skip(&mut self, wire_type: u64) -> Result<(), ScanError> {
        match wire_type {
            0 => self.varint().map(drop),
            1 => {
                if self.pos + 8 > self.buf.len() {
                    return Err(self.malformed("truncated fixed64"));
                }
                self.pos += 8;
                Ok(())
            }
            2 => self.bytes().map(drop),
            5 => self.fixed32().map(drop),
            _ => Err(self.malformed("unsupported wire type")),
        }
    }

    /// Reads the next tag as (field number, wire type).
    #[inline]
    fn tag(&mut self) -> Result<(u64, u64), ScanError> {
        let tag = self.varint()?;
        let field = tag >> 3;
        if field == 0 {
            return Err(self.malformed("field number 0"));
        }
        Ok((field, tag & 7))
    }
}

fn utf8(bytes: &[u8], field: &'static str, log: Option<usize>) -> Result<(), ScanError> {
    if bytes.is_ascii() || std::str::from_utf8(bytes).is_ok() {
        Ok(())
    } else {
        Err(ScanError::NotUtf8 { field, log })
    }
}

/// Reads a `{1: key, 2: value}` pair message; both are required.
#[inline]
fn pair<'a>(
    buf: &'a [u8],
    base: usize,
    what: &'static str,
) -> Result<(&'a [u8], &'a [u8]), ScanError> {
    let mut r = Reader::new(buf, base);
    let (mut key, mut value) = (None, None);
    while !r.done() {
        match r.tag()? {
            (1, 2) => key = Some(r.bytes()?.0),
            (2, 2) => value = Some(r.bytes()?.0),
            (_, wt) => r.skip(wt)?,
        }
    }
    match (key, value) {
        (Some(k), Some(v)) => Ok((k, v)),
        _ => Err(ScanError::Malformed { offset: base, what }),
    }
}

fn scan_log(buf: &[u8], base: usize, index: usize, policy: KeyPolicy) -> Result<(), ScanError> {
    let mut r = Reader::new(buf, base);
    let mut has_time = false;
    let mut fields = 0usize;
    while !r.done() {
        match r.tag()? {
            (1, 0) => {
                let time = r.varint()?;
                if time > u64::from(u32::MAX) {
                    return Err(r.malformed("Time does not fit in uint32"));
                }
                has_time = true;
            }
            (2, 2) => {
                fields += 1;
                if fields > MAX_FIELDS_PER_LOG {
                    return Err(ScanError::TooManyFields {
                        log: index,
                        limit: MAX_FIELDS_PER_LOG,
                    });
                }
                let (content, at) = r.bytes()?;
                let (key, value) = pair(content, at, "log content without key or value")?;
                if let Err(problem) = check_key(key, policy) {
                    return Err(ScanError::InvalidKey {
                        log: index,
                        key: shown_key(key),
                        problem,
                    });
                }
                if value.len() > MAX_VALUE_BYTES {
                    return Err(ScanError::ValueTooLarge {
                        log: index,
                        key: shown_key(key),
                        len: value.len(),
                        limit: MAX_VALUE_BYTES,
                    });
                }
                utf8(value, "value", Some(index))?;
            }
            (4, 5) => {
                let ns = r.fixed32()?;
                if ns >= 1_000_000_000 {
                    return Err(ScanError::InvalidTimeNs {
                        log: index,
                        value: ns,
                    });
                }
            }
            (1 | 2 | 4, _) => return Err(r.malformed("Log field with the wrong wire type")),
            (_, wt) => r.skip(wt)?,
        }
    }
    if has_time {
        Ok(())
    } else {
        Err(ScanError::MissingTime { log: index })
    }
}

fn short_field(bytes: &[u8], field: &'static str, limit: usize) -> Result<(), ScanError> {
    if bytes.len() > limit {
        return Err(ScanError::FieldTooLong {
            field,
            len: bytes.len(),
            limit,
        });
    }
    utf8(bytes, field, None)
}

fn scan_group_at(buf: &[u8], base: usize, policy: KeyPolicy) -> Result<GroupSummary, ScanError> {
    if buf.len() > MAX_LOG_GROUP_BYTES {
        return Err(ScanError::GroupTooLarge {
            len: buf.len(),
            limit: MAX_LOG_GROUP_BYTES,
        });
    }
    let mut r = Reader::new(buf, base);
    let mut logs = 0usize;
    let mut pack_id = None;
    while !r.done() {
        match r.tag()? {
            (1, 2) => {
                if logs == MAX_LOGS_PER_GROUP_ACCEPTED {
                    return Err(ScanError::TooManyLogs {
                        limit: MAX_LOGS_PER_GROUP_ACCEPTED,
                    });
                }
                let (log, at) = r.bytes()?;
                scan_log(log, at, logs, policy)?;
                logs += 1;
            }
            (2 | 5, 2) => {
                let (text, _) = r.bytes()?;
                utf8(text, "reserved field", None)?;
            }
            (3, 2) => short_field(r.bytes()?.0, "topic", MAX_TOPIC_BYTES)?,
            (4, 2) => short_field(r.bytes()?.0, "source", MAX_SOURCE_BYTES)?,
            (6, 2) => {
                let (tag, at) = r.bytes()?;
                let (key, value) = pair(tag, at, "log tag without key or value")?;
                if key.is_empty() || key.len() > MAX_KEY_BYTES {
                    return Err(ScanError::Malformed {
                        offset: at,
                        what: "tag key must be 1 to 128 bytes",
                    });
                }
                utf8(key, "tag key", None)?;
                utf8(value, "tag value", None)?;
                if pack_id.is_none() && key == b"__pack_id__" {
                    // `pair` returns sub-slices of `tag`, which starts at `at`.
                    let start = at + (value.as_ptr() as usize - tag.as_ptr() as usize);
                    pack_id = Some((start, start + value.len()));
                }
            }
            (1..=6, _) => return Err(r.malformed("LogGroup field with the wrong wire type")),
            (_, wt) => r.skip(wt)?,
        }
    }
    Ok(GroupSummary {
        logs: logs as u32,
        pack_id,
    })
}

/// Validates one `LogGroup` body.
pub fn scan_log_group(body: &[u8], policy: KeyPolicy) -> Result<GroupSummary, ScanError> {
    scan_group_at(body, 0, policy)
}

/// Validates a `LogGroupList` body (PutLogs in `batch_group` mode) and returns each group's
/// byte range within `body` with its summary.
pub fn scan_log_group_list(
    body: &[u8],
    policy: KeyPolicy,
) -> Result<Vec<(std::ops::Range<usize>, GroupSummary)>, ScanError> {
    let mut r = Reader::new(body, 0);
    let mut groups = Vec::new();
    while !r.done() {
        match r.tag()? {
            (1, 2) => {
                let (group, at) = r.bytes()?;
                let summary = scan_group_at(group, at, policy)?;
                groups.push((at..at + group.len(), summary));
            }
            (1, _) => return Err(r.malformed("LogGroupList field with the wrong wire type")),
            (_, wt) => r.skip(wt)?,
        }
    }
    Ok(groups)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::wire::proto::{Log, LogGroup, LogGroupList};
    use prost::Message;

    fn log(pairs: &[(&str, &str)]) -> Log {
        Log::of_fields(1_704_067_200, Some(5), pairs)
    }

    fn group(logs: Vec<Log>) -> LogGroup {
        LogGroup::of_logs(logs, "t", "127.0.0.1", &[("__pack_id__", "ABC-0")])
    }

    #[test]
    fn a_valid_group_is_counted() {
        let body = group(vec![
            log(&[("a", "1"), ("Search/Analytics", "q")]),
            log(&[("b", "")]),
        ])
        .encode_to_vec();
        let summary = scan_log_group(&body, KeyPolicy::Service).unwrap();
        assert_eq!(summary.logs, 2);
        let (start, end) = summary.pack_id.unwrap();
        assert_eq!(&body[start..end], b"ABC-0");
        assert_eq!(
            scan_log_group(&[], KeyPolicy::Service),
            Ok(GroupSummary::default())
        );
    }

    #[test]
    fn groups_over_the_per_request_limits_are_refused() {
        let many_logs = LogGroup::of_logs(
            vec![Log::of_fields(1, None, &[]); MAX_LOGS_PER_GROUP_ACCEPTED + 1],
            "",
            "",
            &[],
        )
        .encode_to_vec();
        assert_eq!(
            scan_log_group(&many_logs, KeyPolicy::Service),
            Err(ScanError::TooManyLogs {
                limit: MAX_LOGS_PER_GROUP_ACCEPTED
            })
        );
        let keys: Vec<String> = (0..=MAX_FIELDS_PER_LOG).map(|i| format!("k{i}")).collect();
        let fields: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "")).collect();
        let wide = group(vec![log(&[("a", "1")]), log(&fields)]).encode_to_vec();
        assert_eq!(
            scan_log_group(&wide, KeyPolicy::Service),
            Err(ScanError::TooManyFields {
                log: 1,
                limit: MAX_FIELDS_PER_LOG
            })
        );
        let value = "v".repeat(MAX_VALUE_BYTES);
        let big = group((0..6).map(|_| log(&[("a", value.as_str())])).collect()).encode_to_vec();
        assert!(matches!(
            scan_log_group(&big, KeyPolicy::Service),
            Err(ScanError::GroupTooLarge {
                limit: MAX_LOG_GROUP_BYTES,
                ..
            })
        ));
        // Within every limit, the same shapes pass.
        let fine = group((0..4).map(|_| log(&[("a", value.as_str())])).collect()).encode_to_vec();
        assert_eq!(scan_log_group(&fine, KeyPolicy::Service).unwrap().logs, 4);
    }

    #[test]
    fn bad_keys_are_named() {
        for (key, problem) in [
            ("", KeyProblem::Empty),
            ("__time__", KeyProblem::Reserved),
            ("a\nb", KeyProblem::ControlCharacter),
            (&"k".repeat(129), KeyProblem::TooLong),
        ] {
            let body = group(vec![log(&[("ok", "1")]), log(&[(key, "v")])]).encode_to_vec();
            match scan_log_group(&body, KeyPolicy::Service) {
                Err(ScanError::InvalidKey {
                    log: 1, problem: p, ..
                }) => assert_eq!(p, problem, "{key:?}"),
                other => panic!("{key:?}: {other:?}"),
            }
        }
        let body = group(vec![log(&[("Search/Analytics", "v")])]).encode_to_vec();
        assert!(matches!(
            scan_log_group(&body, KeyPolicy::Strict),
            Err(ScanError::InvalidKey {
                problem: KeyProblem::NotAnIdentifier,
                ..
            })
        ));
        assert_eq!(check_key(b"_ok_9", KeyPolicy::Strict), Ok(()));
        assert_eq!(
            check_key(b"9a", KeyPolicy::Strict),
            Err(KeyProblem::NotAnIdentifier)
        );
        assert_eq!(
            check_key(b"\xff\xfe", KeyPolicy::Service),
            Err(KeyProblem::NotUtf8)
        );
    }

    #[test]
    fn oversized_values_topics_and_sources_are_refused() {
        let big = "x".repeat(MAX_VALUE_BYTES + 1);
        let body = group(vec![log(&[("k", &big)])]).encode_to_vec();
        assert!(
            matches!(scan_log_group(&body, KeyPolicy::Service), Err(ScanError::ValueTooLarge { len, .. }) if len == MAX_VALUE_BYTES + 1)
        );
        let exact = "x".repeat(MAX_VALUE_BYTES);
        assert!(scan_log_group(
            &group(vec![log(&[("k", &exact)])]).encode_to_vec(),
            KeyPolicy::Service
        )
        .is_ok());
        let mut g = group(vec![]);
        g.topic = Some("t".repeat(129));
        assert!(matches!(
            scan_log_group(&g.encode_to_vec(), KeyPolicy::Service),
            Err(ScanError::FieldTooLong { field: "topic", .. })
        ));
        let mut g = group(vec![]);
        g.source = Some("s".repeat(129));
        assert!(matches!(
            scan_log_group(&g.encode_to_vec(), KeyPolicy::Service),
            Err(ScanError::FieldTooLong {
                field: "source",
                ..
            })
        ));
    }

    #[test]
    fn invalid_utf8_and_missing_time_are_refused() {
        // A log whose value bytes are FF FE, built by hand since prost strings are UTF-8.
        let mut content = Vec::new();
        crate::wire::proto::put_len_field(&mut content, 0x0a, b"k");
        crate::wire::proto::put_len_field(&mut content, 0x12, b"\xff\xfe");
        let mut l = vec![0x08, 0x01];
        crate::wire::proto::put_len_field(&mut l, 0x12, &content);
        let mut body = Vec::new();
        crate::wire::proto::put_len_field(&mut body, 0x0a, &l);
        assert_eq!(
            scan_log_group(&body, KeyPolicy::Service),
            Err(ScanError::NotUtf8 {
                field: "value",
                log: Some(0)
            })
        );

        let mut no_time = Vec::new();
        crate::wire::proto::put_len_field(&mut no_time, 0x12, &content[..0]);
        let mut body = Vec::new();
        crate::wire::proto::put_len_field(&mut body, 0x0a, &[]);
        assert_eq!(
            scan_log_group(&body, KeyPolicy::Service),
            Err(ScanError::MissingTime { log: 0 })
        );
    }

    #[test]
    fn every_truncation_of_a_valid_body_is_refused_or_shorter() {
        let body =
            group(vec![log(&[("a", "1"), ("b", "22")]), log(&[("c", "333")])]).encode_to_vec();
        for cut in 1..body.len() {
            // A prefix is either malformed or a valid shorter message; it never panics.
            if let Ok(summary) = scan_log_group(&body[..cut], KeyPolicy::Service) {
                assert!(summary.logs <= 2);
            }
        }
        let mut rng = fastrand::Rng::with_seed(1);
        for _ in 0..20_000 {
            let len = rng.usize(0..64);
            let junk: Vec<u8> = (0..len).map(|_| rng.u8(..)).collect();
            let _ = scan_log_group(&junk, KeyPolicy::Service);
            let _ = scan_log_group_list(&junk, KeyPolicy::Service);
        }
    }

    #[test]
    fn scan_agrees_with_prost_on_what_it_accepts() {
        let g = group(vec![log(&[("a", "1")]), log(&[("b", "2"), ("c", "3")])]);
        let body = g.encode_to_vec();
        let summary = scan_log_group(&body, KeyPolicy::Service).unwrap();
        assert_eq!(
            summary.logs as usize,
            LogGroup::decode(body.as_slice()).unwrap().logs.len()
        );
    }

    #[test]
    fn group_lists_report_each_groups_range() {
        let a = group(vec![log(&[("a", "1")])]);
        let b = group(vec![log(&[("b", "1")]), log(&[("c", "1")])]);
        let body = LogGroupList {
            log_groups: vec![a.clone(), b.clone()],
        }
        .encode_to_vec();
        let groups = scan_log_group_list(&body, KeyPolicy::Service).unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(LogGroup::decode(&body[groups[0].0.clone()]).unwrap(), a);
        assert_eq!(LogGroup::decode(&body[groups[1].0.clone()]).unwrap(), b);
        assert_eq!(groups[1].1.logs, 2);
    }
}
