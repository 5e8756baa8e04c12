//! The SLS read APIs official clients use: ListShards, GetCursor and PullLogs, signed like
//! any request. Cursors are opaque to clients: base64 of a group's sequence in its shard.

use base64::Engine as _;
use bytes::Bytes;
use hyper::http::{HeaderValue, Response, StatusCode};

use super::{json_response, missing, unix_now, Head, Service};
use crate::emulator::error::ApiError;
use crate::wire::compress::{self, Compression};
use crate::wire::hashkey;
use crate::wire::limits::MAX_RAW_BODY_BYTES;
use crate::wire::proto::put_varint;

/// Cursors are base64 of the group's sequence number in its shard, like the service's
/// opaque numeric cursors.
fn encode_cursor(seq: u64) -> String {
    base64::engine::general_purpose::STANDARD.encode(seq.to_string())
}

fn decode_cursor(cursor: &str) -> Result<u64, ApiError> {
    base64::engine::general_purpose::STANDARD
        .decode(cursor.trim())
        .ok()
        .and_then(|b| String::from_utf8(b).ok())
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| {
            ApiError::bad_request("InvalidCursor", format!("cursor {cursor:?} is not valid"))
        })
}

impl Service {
    pub(super) fn read_target(&self, head: &Head<'_>, logstore: &str) -> Result<String, ApiError> {
        Self::check_api_version(head)?;
        let _body_signed = self.authenticate(head, &[])?;
        let project = self.project_of(head.header("host"));
        self.store
            .ensure(&project, logstore, unix_now())
            .map_err(|m| missing(m, &project, logstore))?;
        Ok(project)
    }

    pub(super) fn list_shards(
        &self,
        head: &Head<'_>,
        logstore: &str,
    ) -> Result<Response<Bytes>, ApiError> {
        let project = self.read_target(head, logstore)?;
        let shards = self
            .store
            .with_logstore(&project, logstore, |ls| {
                let n = ls.shards.len() as u32;
                (0..n)
                    .map(|i| {
                        let (begin, end) = hashkey::shard_range(i, n);
                        serde_json::json!({
                            "shardID": i,
                            "status": "readwrite",
                            "inclusiveBeginKey": hashkey::format(begin),
                            "exclusiveEndKey": hashkey::format(end),
                            "createTime": ls.created,
                        })
                    })
                    .collect::<Vec<_>>()
            })
            .map_err(|m| missing(m, &project, logstore))?;
        Ok(json_response(&shards))
    }

    pub(super) fn shard_bounds(
        &self,
        project: &str,
        logstore: &str,
        shard: u32,
        from_time: Option<u32>,
    ) -> Result<(u64, u64, Option<u64>), ApiError> {
        self.store
            .with_logstore(project, logstore, |ls| {
                ls.shards.get(shard as usize).map(|s| {
                    let at_time = from_time.map(|t| {
                        s.groups
                            .iter()
                            .position(|g| g.received >= t)
                            .map_or(s.end_seq(), |i| s.first_seq + i as u64)
                    });
                    (s.first_seq, s.end_seq(), at_time)
                })
            })
            .map_err(|m| missing(m, project, logstore))?
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "ShardNotExist",
                    format!("shard {shard} does not exist"),
                )
            })
    }

    pub(super) fn get_cursor(
        &self,
        head: &Head<'_>,
        logstore: &str,
        shard: u32,
    ) -> Result<Response<Bytes>, ApiError> {
        let project = self.read_target(head, logstore)?;
        let from = head
            .param("from")
            .ok_or_else(|| ApiError::bad_request("ParameterInvalid", "from is missing"))?;
        let from_time = match from {
            "begin" | "end" => None,
            t => Some(t.parse::<u32>().map_err(|_| {
                ApiError::bad_request(
                    "ParameterInvalid",
                    format!("from {t:?} is not begin, end or a unix time"),
                )
            })?),
        };
        let (first, end, at_time) = self.shard_bounds(&project, logstore, shard, from_time)?;
        let seq = match from {
            "begin" => first,
            "end" => end,
            _ => at_time.unwrap_or(end),
        };
        Ok(json_response(
            &serde_json::json!({ "cursor": encode_cursor(seq) }),
        ))
    }

    pub(super) fn pull_logs(
        &self,
        head: &Head<'_>,
        logstore: &str,
        shard: u32,
    ) -> Result<Response<Bytes>, ApiError> {
        let project = self.read_target(head, logstore)?;
        let cursor = decode_cursor(
            head.param("cursor")
                .ok_or_else(|| ApiError::bad_request("ParameterInvalid", "cursor is missing"))?,
        )?;
        let count: u64 = match head.param("count") {
            None => 1000,
            Some(c) => c
                .parse()
                .ok()
                .filter(|c| (1..=1000).contains(c))
                .ok_or_else(|| {
                    ApiError::bad_request(
                        "ParameterInvalid",
                        format!("count {c:?} is not 1 to 1000"),
                    )
                })?,
        };
        let end_cursor = head.param("end_cursor").map(decode_cursor).transpose()?;
        let (chosen, next) = self
            .store
            .with_logstore(&project, logstore, |ls| {
                let s = ls.shards.get(shard as usize)?;
                let start = cursor.clamp(s.first_seq, s.end_seq());
                let limit = (start + count)
                    .min(s.end_seq())
                    .min(end_cursor.unwrap_or(u64::MAX))
                    .max(start);
                // Like the service, answer with fewer groups rather than an oversized body:
                // at most 10 MiB raw, but always at least one group.
                let mut chosen = Vec::new();
                let mut raw_len = 0usize;
                let range = (start - s.first_seq) as usize..(limit - s.first_seq) as usize;
                for g in s.groups.range(range) {
                    if !chosen.is_empty() && raw_len + g.raw_size + 10 > MAX_RAW_BODY_BYTES {
                        break;
                    }
                    // The group's field tag, its length varint, the group.
                    raw_len +=
                        1 + prost::encoding::encoded_len_varint(g.raw_size as u64) + g.raw_size;
                    chosen.push(g.clone());
                }
                let next = start + chosen.len() as u64;
                Some((chosen, next))
            })
            .map_err(|m| missing(m, &project, logstore))?
            .ok_or_else(|| {
                ApiError::new(
                    StatusCode::NOT_FOUND,
                    "ShardNotExist",
                    format!("shard {shard} does not exist"),
                )
            })?;
        // Decompressed outside the store's lock.
        let groups = chosen.len() as u64;
        let mut raw = Vec::new();
        for g in &chosen {
            let group = g.raw().map_err(|e| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalServerError",
                    e.to_string(),
                )
            })?;
            raw.push(0x0a);
            put_varint(&mut raw, group.len() as u64);
            raw.extend_from_slice(&group);
        }
        let codec = match head.header("accept-encoding").map(str::trim) {
            Some(e) if e.eq_ignore_ascii_case("lz4") => Compression::Lz4,
            Some(e) if e.eq_ignore_ascii_case("zstd") => Compression::Zstd,
            Some(e) if e.eq_ignore_ascii_case("deflate") => Compression::Deflate,
            _ => Compression::None,
        };
        let body = if raw.is_empty() {
            Vec::new()
        } else {
            compress::compress(codec, &raw).map_err(|e| {
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "InternalServerError",
                    e.to_string(),
                )
            })?
        };
        let mut resp = Response::new(Bytes::from(body));
        let h = resp.headers_mut();
        h.insert(
            "content-type",
            HeaderValue::from_static("application/x-protobuf"),
        );
        let mut put = |name: &'static str, value: String| {
            if let Ok(v) = HeaderValue::from_str(&value) {
                h.insert(name, v);
            }
        };
        put("x-log-cursor", encode_cursor(next));
        put("x-log-count", groups.to_string());
        put("x-log-bodyrawsize", raw.len().to_string());
        if let (false, Some(value)) = (raw.is_empty(), codec.header_value()) {
            put("x-log-compresstype", value.to_owned());
        }
        Ok(resp)
    }
}
