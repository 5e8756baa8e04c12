//! The stored forms of what the emulator accepted, shared by the store, the term index and
//! search: a group as it arrived ([`StoredGroup`]), one log as the read API returns it
//! ([`StoredLog`]), a group's logs decoded one at a time ([`GroupLogs`]), and a retained group
//! with its place in its shard ([`ViewGroup`]). Plain data and decoding; imports nothing else of
//! the emulator. Any thread.

use bytes::Bytes;
use prost::Message;

use crate::wire::compress::{self, CodecError, Compression};

/// One accepted group.
#[derive(Clone, Debug)]
pub struct StoredGroup {
    /// The `LogGroup` bytes exactly as sent, compressed with `codec`.
    pub body: Bytes,
    /// How `body` is compressed (`None`: it is the `LogGroup` itself).
    pub codec: Compression,
    /// The `LogGroup`'s size uncompressed.
    pub raw_size: usize,
    /// Server receive time, unix seconds.
    pub received: u32,
    /// Number of logs in it.
    pub logs: u32,
}

impl StoredGroup {
    /// The uncompressed `LogGroup` bytes.
    pub fn raw(&self) -> Result<Bytes, CodecError> {
        match self.codec {
            Compression::None => Ok(self.body.clone()),
            codec => compress::decompress(codec, &self.body, self.raw_size).map(Bytes::from),
        }
    }
}

/// One decoded log with its group's metadata, as the read API returns it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct StoredLog {
    /// Shard it was stored in.
    pub shard: u32,
    /// Unix seconds.
    pub time: u32,
    /// Nanosecond part, when sent.
    pub time_ns: Option<u32>,
    /// Group topic (`None` when the field was absent).
    pub topic: Option<String>,
    /// Group source.
    pub source: Option<String>,
    /// Group tags, in order.
    pub tags: Vec<(String, String)>,
    /// Fields, in order.
    pub contents: Vec<(String, String)>,
}

impl StoredLog {
    /// The value of the first field named `key`.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.contents
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// The value of the first tag named `key`.
    pub fn tag(&self, key: &str) -> Option<&str> {
        self.tags
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// A stored `LogGroup` with its logs left as bytes: what is read of a group of which a search
/// wants a few logs (the group is decompressed once, each log decoded only when asked for, and
/// an index build reads each log's fields without copying them).
#[derive(Clone, PartialEq, Message)]
struct SkimmedGroup {
    #[prost(bytes = "bytes", repeated, tag = "1")]
    logs: Vec<Bytes>,
    #[prost(string, optional, tag = "3")]
    topic: Option<String>,
    #[prost(string, optional, tag = "4")]
    source: Option<String>,
    #[prost(message, repeated, tag = "6")]
    log_tags: Vec<crate::wire::proto::LogTag>,
}

/// One log's fields as slices of its group's bytes (see [`GroupLogs::fields`]).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct LogFields {
    #[prost(uint32, required, tag = "1")]
    pub(crate) time: u32,
    #[prost(message, repeated, tag = "2")]
    pub(crate) contents: Vec<FieldBytes>,
    #[prost(fixed32, optional, tag = "4")]
    pub(crate) time_ns: Option<u32>,
}

/// A key and value as bytes (valid UTF-8: the emulator checked them when they arrived).
#[derive(Clone, PartialEq, Message)]
pub(crate) struct FieldBytes {
    #[prost(bytes = "bytes", tag = "1")]
    pub(crate) key: Bytes,
    #[prost(bytes = "bytes", tag = "2")]
    pub(crate) value: Bytes,
}

/// The logs of one stored group, decoded one at a time.
pub(crate) struct GroupLogs {
    shard: u32,
    group: SkimmedGroup,
}

impl GroupLogs {
    /// The group decompressed (no logs, when it cannot be: it was checked when it arrived).
    pub(crate) fn read(shard: u32, stored: &StoredGroup) -> GroupLogs {
        let group = stored
            .raw()
            .ok()
            .and_then(|raw| SkimmedGroup::decode(raw).ok())
            .unwrap_or_default();
        GroupLogs { shard, group }
    }

    pub(crate) fn len(&self) -> usize {
        self.group.logs.len()
    }

    /// Log `at` of the group, whole.
    pub(crate) fn get(&self, at: usize) -> Option<StoredLog> {
        let log = crate::wire::proto::Log::decode(self.group.logs.get(at)?.clone()).ok()?;
        Some(StoredLog {
            shard: self.shard,
            time: log.time,
            time_ns: log.time_ns,
            topic: self.group.topic.clone(),
            source: self.group.source.clone(),
            tags: self
                .group
                .log_tags
                .iter()
                .map(|t| (t.key.clone(), t.value.clone()))
                .collect(),
            contents: log.contents.into_iter().map(|c| (c.key, c.value)).collect(),
        })
    }

    /// Log `at`'s time and fields, without copying them.
    pub(crate) fn fields(&self, at: usize) -> Option<LogFields> {
        LogFields::decode(self.group.logs.get(at)?.clone()).ok()
    }
}

/// One retained group a search may read, with its place in its shard.
#[derive(Clone)]
pub(crate) struct ViewGroup {
    pub(crate) shard: u32,
    pub(crate) seq: u64,
    pub(crate) group: StoredGroup,
}
