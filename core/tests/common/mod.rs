//! Helpers shared by the integration tests: building groups and sending signed requests to an
//! emulator over real HTTP.
#![allow(dead_code)]

use std::time::{Duration, SystemTime};

use loghose::emulator::Emulator;
use loghose::wire::compress::Compression;
use loghose::wire::proto::{Log, LogContent, LogGroup, LogTag};
use loghose::wire::request::{self, Auth, PutLogsTarget, SignedRequest};
use loghose::wire::sign::Credentials;
use prost::Message;

pub struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn error_code(&self) -> String {
        let v: serde_json::Value = serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "error body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        });
        assert!(v["errorMessage"].is_string(), "errorMessage missing in {v}");
        v["errorCode"].as_str().expect("errorCode").to_owned()
    }

    pub fn request_id(&self) -> String {
        self.headers
            .get("x-log-requestid")
            .expect("x-log-requestid")
            .to_str()
            .unwrap()
            .to_owned()
    }
}

pub fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

pub fn creds(emu: &Emulator) -> Credentials {
    emu.credentials().unwrap()
}

pub fn v1(emu: &Emulator) -> Auth {
    Auth::V1(creds(emu))
}

pub fn log(time: u32, pairs: &[(&str, &str)]) -> Log {
    Log {
        time,
        contents: pairs
            .iter()
            .map(|(k, v)| LogContent {
                key: (*k).into(),
                value: (*v).into(),
            })
            .collect(),
        time_ns: Some(123_456_789),
    }
}

pub fn group(logs: Vec<Log>) -> LogGroup {
    LogGroup {
        logs,
        topic: Some("test_topic".into()),
        source: Some("10.0.0.1".into()),
        log_tags: vec![
            LogTag {
                key: "tag_1".into(),
                value: "val_1".into(),
            },
            LogTag {
                key: "__pack_id__".into(),
                value: "0123456789ABCDEF-0".into(),
            },
        ],
        ..Default::default()
    }
}

pub fn now_secs() -> u32 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as u32
}

pub fn sample_group(n: usize) -> LogGroup {
    let t = now_secs();
    group(
        (0..n)
            .map(|i| {
                log(
                    t,
                    &[
                        ("index", &i.to_string()),
                        ("msg", "hello world"),
                        ("Search/Analytics", "q"),
                    ],
                )
            })
            .collect(),
    )
}

pub fn put_request(
    host: &str,
    logstore: &str,
    raw: &[u8],
    codec: Compression,
    auth: &Auth,
) -> SignedRequest {
    request::put_logs(
        PutLogsTarget {
            host,
            logstore,
            hash_key: None,
        },
        raw,
        codec,
        auth,
        SystemTime::now(),
    )
    .unwrap()
}

pub async fn send(client: &reqwest::Client, emu: &Emulator, req: &SignedRequest) -> Reply {
    let url = format!("{}{}", emu.endpoint(), req.path_and_query());
    let method = reqwest::Method::from_bytes(req.method.as_bytes()).unwrap();
    let mut builder = client.request(method, url);
    for (k, v) in &req.headers {
        if !k.eq_ignore_ascii_case("content-length") {
            builder = builder.header(k.as_str(), v.as_str());
        }
    }
    let resp = builder
        .body(req.body.clone())
        .send()
        .await
        .expect("request reaches the emulator");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.bytes().await.unwrap().to_vec();
    Reply {
        status,
        headers,
        body,
    }
}

pub async fn put(
    client: &reqwest::Client,
    emu: &Emulator,
    host: &str,
    logstore: &str,
    group: &LogGroup,
    codec: Compression,
) -> Reply {
    let req = put_request(host, logstore, &group.encode_to_vec(), codec, &v1(emu));
    send(client, emu, &req).await
}
