//! S1 request building shared by the benches.
#![allow(dead_code)]

use std::time::SystemTime;

use loghose::wire::compress::Compression;
use loghose::wire::proto::{Log, LogContent, LogGroup, LogTag};
use loghose::wire::request::{self, Auth, PutLogsTarget, SignedRequest};
use loghose::wire::sign::Credentials;
use loghose_lab::{s1_log, S1_TAGS, S1_TOPIC};
use prost::Message;

/// Logs per S1 batch (the batch seals at 4096 logs long before 4 MiB).
pub(crate) const S1_BATCH_LOGS: usize = 4096;

/// One S1 batch of `logs` logs starting at log number `first`, as an encoded LogGroup.
pub(crate) fn s1_group(first: u64, logs: usize) -> Vec<u8> {
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as u32;
    let mut tags: Vec<LogTag> = S1_TAGS
        .iter()
        .map(|(k, v)| LogTag {
            key: (*k).into(),
            value: (*v).into(),
        })
        .collect();
    tags.push(LogTag {
        key: "__pack_id__".into(),
        value: format!("0123456789ABCDEF-{first:X}"),
    });
    LogGroup {
        logs: (first..first + logs as u64)
            .map(|n| Log {
                time: now,
                contents: s1_log(n)
                    .into_iter()
                    .map(|(key, value)| LogContent { key, value })
                    .collect(),
                time_ns: None,
            })
            .collect(),
        topic: Some(S1_TOPIC.into()),
        source: Some("127.0.0.1".into()),
        log_tags: tags,
        ..Default::default()
    }
    .encode_to_vec()
}

pub(crate) fn s1_request(
    raw: &[u8],
    codec: Compression,
    credentials: Credentials,
) -> SignedRequest {
    let target = PutLogsTarget {
        host: "bench.127.0.0.1",
        logstore: "bench-s1",
        hash_key: None,
    };
    request::put_logs(
        target,
        raw,
        codec,
        &Auth::V1(credentials),
        SystemTime::now(),
    )
    .unwrap()
}

pub(crate) fn to_http(req: &SignedRequest) -> hyper::http::Request<bytes::Bytes> {
    let mut builder = hyper::http::Request::builder()
        .method(req.method)
        .uri(req.path_and_query());
    for (k, v) in &req.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    builder.body(req.body.clone()).unwrap()
}
