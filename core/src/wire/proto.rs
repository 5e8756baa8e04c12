//! The protobuf messages of the PutLogs and PullLogs bodies (docs/protocol.md §6), proto2.
//!
//! Field numbers and wire types match the service exactly: `Log.Time` is a varint (tag
//! `0x08`), `Log.Time_ns` an optional `fixed32` (tag `0x25`), contents and tags are
//! key/value sub-messages. Used for decoding on the read side and for building test data;
//! the producer's hot path writes the same bytes by hand and the emulator validates them with
//! [`crate::wire::scan`] without decoding.

/// One key/value field of a log.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LogContent {
    /// Field name.
    #[prost(string, required, tag = "1")]
    pub key: String,
    /// Field value.
    #[prost(string, required, tag = "2")]
    pub value: String,
}

/// One log: a time and ordered key/value contents.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct Log {
    /// Unix time in seconds.
    #[prost(uint32, required, tag = "1")]
    pub time: u32,
    /// The fields, in the order they were added.
    #[prost(message, repeated, tag = "2")]
    pub contents: Vec<LogContent>,
    /// Nanosecond part of the time, 0..=999 999 999, when the writer sets it.
    #[prost(fixed32, optional, tag = "4")]
    pub time_ns: Option<u32>,
}

/// A tag shared by every log of a group, shown as `__tag__:<key>`.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LogTag {
    /// Tag name.
    #[prost(string, required, tag = "1")]
    pub key: String,
    /// Tag value.
    #[prost(string, required, tag = "2")]
    pub value: String,
}

/// The body of one PutLogs request: logs sharing a topic, a source and tags.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LogGroup {
    /// The logs.
    #[prost(message, repeated, tag = "1")]
    pub logs: Vec<Log>,
    /// Reserved by the service; never set by writers.
    #[prost(string, optional, tag = "2")]
    pub reserved: Option<String>,
    /// `__topic__`.
    #[prost(string, optional, tag = "3")]
    pub topic: Option<String>,
    /// `__source__`.
    #[prost(string, optional, tag = "4")]
    pub source: Option<String>,
    /// Set by some SDKs; carried through unchanged.
    #[prost(string, optional, tag = "5")]
    pub machine_uuid: Option<String>,
    /// Group tags.
    #[prost(message, repeated, tag = "6")]
    pub log_tags: Vec<LogTag>,
}

/// Several groups: the PullLogs response body, and PutLogs bodies in `batch_group` mode.
#[derive(Clone, PartialEq, Eq, prost::Message)]
pub struct LogGroupList {
    /// The groups.
    #[prost(message, repeated, tag = "1")]
    pub log_groups: Vec<LogGroup>,
}

impl Log {
    /// A log of text fields, in order: how tests, benches and examples build records.
    pub fn of_fields(time: u32, time_ns: Option<u32>, fields: &[(&str, &str)]) -> Log {
        Log {
            time,
            contents: fields
                .iter()
                .map(|(k, v)| LogContent {
                    key: (*k).into(),
                    value: (*v).into(),
                })
                .collect(),
            time_ns,
        }
    }
}

impl LogGroup {
    /// A group of `logs` with a topic, a source and tags, in order.
    pub fn of_logs(logs: Vec<Log>, topic: &str, source: &str, tags: &[(&str, &str)]) -> LogGroup {
        LogGroup {
            logs,
            topic: Some(topic.into()),
            source: Some(source.into()),
            log_tags: tags
                .iter()
                .map(|(k, v)| LogTag {
                    key: (*k).into(),
                    value: (*v).into(),
                })
                .collect(),
            ..Default::default()
        }
    }
}

/// Appends `value` as a protobuf base-128 varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends one length-delimited field (`tag`, length, bytes).
#[inline]
pub fn put_len_field(out: &mut Vec<u8>, tag: u8, bytes: &[u8]) {
    out.push(tag);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn log_group_encodes_with_the_service_field_numbers() {
        // The Go SDK's TestSignaturePost body (docs/protocol.md §3.1 V1-b): a LogGroupList with one
        // group of one log, an empty topic and source 10.230.201.117.
        let list = LogGroupList {
            log_groups: vec![LogGroup {
                logs: vec![Log {
                    time: 1_405_409_656,
                    contents: vec![LogContent {
                        key: "TestKey".into(),
                        value: "TestContent".into(),
                    }],
                    time_ns: None,
                }],
                topic: Some(String::new()),
                source: Some("10.230.201.117".into()),
                ..Default::default()
            }],
        };
        assert_eq!(
            hex::encode(list.encode_to_vec()),
            "0a320a1e08f8b2939e0512160a07546573744b6579120b54657374436f6e74656e741a00220e31302e3233302e3230312e313137"
        );
    }

    #[test]
    fn time_ns_is_a_fixed32_with_tag_0x25() {
        let log = Log {
            time: 1,
            contents: vec![],
            time_ns: Some(7),
        };
        assert_eq!(log.encode_to_vec(), vec![0x08, 0x01, 0x25, 7, 0, 0, 0]);
    }

    #[test]
    fn varints_match_prost() {
        for v in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u32::MAX as u64,
            u64::MAX,
        ] {
            let mut ours = Vec::new();
            put_varint(&mut ours, v);
            let mut theirs = Vec::new();
            prost::encoding::encode_varint(v, &mut theirs);
            assert_eq!(ours, theirs, "varint {v}");
        }
    }
}
