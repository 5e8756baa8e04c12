//! Helpers shared by the integration tests: building groups and sending signed requests to an
//! emulator over real HTTP, and (in [`producer`]) a producer configured for an emulator.
#![allow(dead_code)]

use std::time::{Duration, SystemTime};

use loghose::emulator::Emulator;
use loghose::wire::compress::Compression;
use loghose::wire::proto::{Log, LogGroup};
use loghose::wire::request::{self, Auth, PutLogsTarget, SignedRequest};
use loghose::wire::sign::Credentials;
use prost::Message;

pub(crate) struct Reply {
    pub status: u16,
    pub headers: reqwest::header::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub(crate) fn error_code(&self) -> String {
        let v: serde_json::Value = serde_json::from_slice(&self.body).unwrap_or_else(|e| {
            panic!(
                "error body is not JSON ({e}): {:?}",
                String::from_utf8_lossy(&self.body)
            )
        });
        assert!(v["errorMessage"].is_string(), "errorMessage missing in {v}");
        v["errorCode"].as_str().expect("errorCode").to_owned()
    }

    pub(crate) fn request_id(&self) -> String {
        self.headers
            .get("x-log-requestid")
            .expect("x-log-requestid")
            .to_str()
            .unwrap()
            .to_owned()
    }
}

pub(crate) fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()
        .unwrap()
}

pub(crate) fn creds(emu: &Emulator) -> Credentials {
    emu.credentials().unwrap()
}

pub(crate) fn v1(emu: &Emulator) -> Auth {
    Auth::V1(creds(emu))
}

pub(crate) fn log(time: u32, pairs: &[(&str, &str)]) -> Log {
    Log::of_fields(time, Some(123_456_789), pairs)
}

pub(crate) fn group(logs: Vec<Log>) -> LogGroup {
    LogGroup::of_logs(
        logs,
        "test_topic",
        "10.0.0.1",
        &[("tag_1", "val_1"), ("__pack_id__", "0123456789ABCDEF-0")],
    )
}

pub(crate) fn now_secs() -> u32 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs() as u32
}

pub(crate) fn sample_group(n: usize) -> LogGroup {
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

pub(crate) fn put_request(
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

pub(crate) async fn send(client: &reqwest::Client, emu: &Emulator, req: &SignedRequest) -> Reply {
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

pub(crate) async fn put(
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

/// Helpers of the producer tests.
pub(crate) mod producer {
    use std::time::{Duration, Instant};

    use loghose::emulator::Emulator;
    use loghose::producer::ProducerConfig;

    /// The bound of a wait for an outcome: long enough for 32-bit ARM under qemu on a busy
    /// machine (the 2 000-batch linger test took over 20 s there), still bounded.
    pub(crate) const WAIT: Duration = Duration::from_secs(60);

    pub(crate) fn config(emu: &Emulator) -> ProducerConfig {
        let creds = emu.credentials().unwrap();
        ProducerConfig {
            access_key_id: creds.access_key_id,
            access_key_secret: creds.access_key_secret,
            topic: "t1".into(),
            source: Some("10.0.0.9".into()),
            tags: vec![("tag_1".into(), "val_1".into())],
            linger_ms: 50,
            backoff_base_ms: 10,
            backoff_max_ms: 100,
            ..ProducerConfig::new(emu.endpoint(), "proj", "store")
        }
    }

    pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
        let deadline = Instant::now() + WAIT;
        while !done() {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// `len` letters that lz4 cannot shorten (a xorshift sequence from `state`, which it
    /// advances): a batch of them keeps its whole reservation after compression, so what
    /// fills a budget or a spool stays full until a batch settles.
    pub(crate) fn incompressible(state: &mut u64, len: usize) -> String {
        (0..len)
            .map(|_| {
                *state ^= *state << 13;
                *state ^= *state >> 7;
                *state ^= *state << 17;
                char::from(b'a' + (*state % 26) as u8)
            })
            .collect()
    }

    pub(crate) fn ids(emu: &Emulator, logstore: &str) -> Vec<u64> {
        emu.logs("proj", logstore)
            .iter()
            .map(|l| l.get("id").unwrap().parse().unwrap())
            .collect()
    }
}
