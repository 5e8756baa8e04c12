//! PutLogs against the in-process emulator over real HTTP: every path form, codec and auth
//! mode is accepted and stored exactly; every malformed request is refused with the service's
//! status and errorCode, and nothing of it is stored.

mod common;

use std::time::{Duration, SystemTime};

use common::*;
use loghose::emulator::{Emulator, EmulatorConfig, StsKey};
use loghose::wire::compress::{self, Compression};
use loghose::wire::proto::{LogGroup, LogGroupList};
use loghose::wire::request::{self, Auth, PutLogsTarget, SignedRequest};
use loghose::wire::sign::Credentials;
use prost::Message;

const HOST: &str = "proj.127.0.0.1";

fn assert_stored_exactly(emu: &Emulator, project: &str, logstore: &str, sent: &[LogGroup]) {
    let mut stored = emu.logs(project, logstore);
    let mut expected = Vec::new();
    for g in sent {
        let tags: Vec<(String, String)> = g
            .log_tags
            .iter()
            .map(|t| (t.key.clone(), t.value.clone()))
            .collect();
        for l in &g.logs {
            expected.push((
                l.time,
                l.time_ns,
                g.topic.clone(),
                g.source.clone(),
                tags.clone(),
                l.contents
                    .iter()
                    .map(|c| (c.key.clone(), c.value.clone()))
                    .collect::<Vec<_>>(),
            ));
        }
    }
    let mut got: Vec<_> = stored
        .drain(..)
        .map(|s| (s.time, s.time_ns, s.topic, s.source, s.tags, s.contents))
        .collect();
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
}

#[tokio::test]
async fn every_codec_and_path_form_is_accepted_and_stored_exactly() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    let auth = v1(&emu);
    let mut sent = Vec::new();
    for codec in [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Deflate,
    ] {
        for form in ["lb", "bare", "route", "header"] {
            let g = sample_group(3);
            let raw = g.encode_to_vec();
            let mut req = put_request(HOST, "app-logs", &raw, codec, &auth);
            match form {
                "bare" => {
                    req.path = "/logstores/app-logs".into();
                    resign(&mut req, &auth);
                }
                "route" => {
                    let target = PutLogsTarget {
                        host: HOST,
                        logstore: "app-logs",
                        hash_key: Some("ff000000000000000000000000000000"),
                    };
                    req = request::put_logs(target, &raw, codec, &auth, SystemTime::now()).unwrap();
                }
                "header" => {
                    req.headers.push(("x-log-hashkey".into(), "00".into()));
                    resign(&mut req, &auth);
                }
                _ => {}
            }
            let reply = send(&client, &emu, &req).await;
            assert_eq!(
                reply.status,
                200,
                "{codec:?} {form}: {}",
                String::from_utf8_lossy(&reply.body)
            );
            let id = reply.request_id();
            assert!(
                id.len() == 24
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_lowercase()),
                "request id {id}"
            );
            sent.push(g);
        }
    }
    assert_stored_exactly(&emu, "proj", "app-logs", &sent);
    let c = emu.counters();
    assert_eq!((c.accepted_requests, c.logs, c.log_groups), (16, 48, 16));
    // Hash keys routed: ff… to the last shard, 00 to the first.
    let shards: Vec<u32> = emu
        .logs("proj", "app-logs")
        .iter()
        .map(|l| l.shard)
        .collect();
    assert!(shards.contains(&0) && shards.contains(&1));
}

#[tokio::test]
async fn compressed_bodies_are_held_compressed_and_read_back_whole() {
    // One shard with room for 64 KiB: eight groups of about 40 KiB each fit only compressed.
    let emu = Emulator::start(EmulatorConfig {
        shard_count: 1,
        retention_bytes: 64 << 10,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let client = client();
    let auth = v1(&emu);
    let mut sent = Vec::new();
    for codec in [Compression::Lz4, Compression::Zstd, Compression::Deflate] {
        for _ in 0..8 {
            let g = sample_group(1000);
            let raw = g.encode_to_vec();
            assert!(raw.len() > 32 << 10);
            let reply = send(
                &client,
                &emu,
                &put_request(HOST, codec.name(), &raw, codec, &auth),
            )
            .await;
            assert_eq!(
                reply.status,
                200,
                "{}",
                String::from_utf8_lossy(&reply.body)
            );
            sent.push(g);
        }
        let totals = emu.totals("proj", codec.name()).unwrap();
        assert_eq!((totals.groups, totals.retained_groups), (8, 8), "{codec:?}");
        assert_stored_exactly(&emu, "proj", codec.name(), &sent[sent.len() - 8..]);
    }
    // Uncompressed, the same budget holds one group and a bit.
    for _ in 0..8 {
        let raw = sample_group(1000).encode_to_vec();
        let req = put_request(HOST, "plain", &raw, Compression::None, &auth);
        assert_eq!(send(&client, &emu, &req).await.status, 200);
    }
    let totals = emu.totals("proj", "plain").unwrap();
    assert_eq!(totals.groups, 8);
    assert!(totals.retained_groups <= 2, "{totals:?}");
}

#[tokio::test]
async fn project_comes_from_the_host_or_the_default() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    let g = sample_group(1);
    assert_eq!(
        put(
            &client,
            &emu,
            "alpha.cn-hangzhou.log.aliyuncs.com",
            "app-logs",
            &g,
            Compression::Lz4
        )
        .await
        .status,
        200
    );
    assert_eq!(
        put(
            &client,
            &emu,
            &emu.addr().to_string(),
            "app-logs",
            &g,
            Compression::Lz4
        )
        .await
        .status,
        200
    );
    assert_eq!(
        put(&client, &emu, "localhost", "app-logs", &g, Compression::Lz4)
            .await
            .status,
        200
    );
    assert_eq!(emu.totals("alpha", "app-logs").unwrap().logs, 1);
    assert_eq!(emu.totals("loghose", "app-logs").unwrap().logs, 2);
}

#[tokio::test]
async fn v4_sts_and_bearer_requests_are_accepted() {
    let config = EmulatorConfig {
        sts_keys: vec![StsKey {
            id: "STS.tmp".into(),
            secret: "tmp-secret".into(),
            token: "tok-1".into(),
        }],
        api_keys: vec!["api-key-1".into()],
        ..EmulatorConfig::default()
    };
    let emu = Emulator::start(config).unwrap();
    let client = client();
    let raw = sample_group(2).encode_to_vec();
    let auths = [
        Auth::V4 {
            credentials: creds(&emu),
            region: "cn-hangzhou".into(),
        },
        Auth::V1(Credentials::sts("STS.tmp", "tmp-secret", "tok-1")),
        Auth::V4 {
            credentials: Credentials::sts("STS.tmp", "tmp-secret", "tok-1"),
            region: "cn-shanghai".into(),
        },
        Auth::Bearer("api-key-1".into()),
    ];
    for auth in &auths {
        let reply = send(
            &client,
            &emu,
            &put_request(HOST, "app-logs", &raw, Compression::Lz4, auth),
        )
        .await;
        assert_eq!(
            reply.status,
            200,
            "{auth:?}: {}",
            String::from_utf8_lossy(&reply.body)
        );
    }
    assert_eq!(emu.totals("proj", "app-logs").unwrap().logs, 8);
}

#[tokio::test]
async fn batch_group_mode_stores_every_group() {
    let emu = Emulator::start_default().unwrap();
    let groups = vec![sample_group(2), sample_group(3)];
    let raw = LogGroupList {
        log_groups: groups.clone(),
    }
    .encode_to_vec();
    let mut req = put_request(HOST, "app-logs", &raw, Compression::Lz4, &v1(&emu));
    req.headers.retain(|(k, _)| {
        k != "Authorization" && k != "x-log-signaturemethod" && k != "Date" && k != "Content-MD5"
    });
    req.headers
        .push(("x-log-mode".into(), "batch_group".into()));
    request::authorize(&mut req, &v1(&emu), SystemTime::now());
    let reply = send(&client(), &emu, &req).await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert_stored_exactly(&emu, "proj", "app-logs", &groups);
    assert_eq!(emu.counters().log_groups, 2);
}

/// Rebuilds the Authorization of a request after its headers or body were tampered with.
fn resign(req: &mut SignedRequest, auth: &Auth) {
    req.headers.retain(|(k, _)| {
        k != "Authorization"
            && k != "x-log-signaturemethod"
            && k != "Date"
            && k != "Content-MD5"
            && k != "x-acs-security-token"
    });
    request::authorize(req, auth, SystemTime::now());
}

fn set_header(req: &mut SignedRequest, name: &str, value: &str) {
    req.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
    req.headers.push((name.into(), value.into()));
}

#[tokio::test]
async fn malformed_requests_get_the_services_status_and_code_and_store_nothing() {
    let config = EmulatorConfig {
        sts_keys: vec![StsKey {
            id: "STS.tmp".into(),
            secret: "tmp-secret".into(),
            token: "tok-1".into(),
        }],
        ..EmulatorConfig::default()
    };
    let emu = Emulator::start(config).unwrap();
    let client = client();
    let auth = v1(&emu);
    let raw = sample_group(2).encode_to_vec();
    let good = || put_request(HOST, "app-logs", &raw, Compression::Lz4, &auth);

    let mut cases: Vec<(&str, SignedRequest, u16, &str)> = Vec::new();
    cases.push((
        "unknown key",
        put_request(
            HOST,
            "app-logs",
            &raw,
            Compression::Lz4,
            &Auth::V1(Credentials::new("nobody", "x")),
        ),
        401,
        "Unauthorized",
    ));
    cases.push((
        "wrong secret",
        put_request(
            HOST,
            "app-logs",
            &raw,
            Compression::Lz4,
            &Auth::V1(Credentials::new("loghose-emulator", "wrong")),
        ),
        401,
        "SignatureNotMatch",
    ));
    let mut r = good();
    set_header(&mut r, "x-log-bodyrawsize", &(raw.len() + 1).to_string());
    cases.push(("header changed after signing", r, 401, "SignatureNotMatch"));
    let stale = request::put_logs(
        PutLogsTarget {
            host: HOST,
            logstore: "app-logs",
            hash_key: None,
        },
        &raw,
        Compression::Lz4,
        &auth,
        SystemTime::now() - Duration::from_secs(16 * 60),
    )
    .unwrap();
    cases.push(("stale date", stale, 400, "RequestTimeExpired"));
    let mut r = good();
    set_header(&mut r, "Date", "yesterday-ish");
    cases.push(("unparsable date", r, 400, "InvalidDateFormat"));
    let mut r = good();
    let mut changed = r.body.to_vec();
    changed[0] ^= 0xff;
    r.body = changed.into();
    cases.push(("body changed after signing", r, 400, "InvalidContentMD5"));
    let mut r = good();
    r.body = vec![0xf0, 0xff, 0xff, 0xff, 1, 2, 3].into();
    resign(&mut r, &auth);
    cases.push(("corrupt lz4", r, 400, "PostBodyUncompressError"));
    let mut r = good();
    set_header(&mut r, "x-log-bodyrawsize", &(raw.len() + 7).to_string());
    resign(&mut r, &auth);
    cases.push(("rawsize lies", r, 400, "PostBodyUncompressError"));
    let mut r = good();
    set_header(&mut r, "x-log-bodyrawsize", "lots");
    resign(&mut r, &auth);
    cases.push(("rawsize not a number", r, 400, "InvalidBodyRawSize"));
    let mut r = good();
    set_header(&mut r, "x-log-bodyrawsize", &format!("+{}", raw.len()));
    resign(&mut r, &auth);
    cases.push(("rawsize with a sign", r, 400, "InvalidBodyRawSize"));
    let mut r = good();
    set_header(&mut r, "x-log-bodyrawsize", "20000000");
    resign(&mut r, &auth);
    cases.push(("rawsize over the limit", r, 400, "PostBodyTooLarge"));
    let mut r = good();
    set_header(&mut r, "x-log-compresstype", "gzip");
    resign(&mut r, &auth);
    cases.push(("unknown compression", r, 400, "InvalidCompressType"));
    let mut r = good();
    r.headers.retain(|(k, _)| k != "x-log-apiversion");
    resign(&mut r, &auth);
    cases.push(("no api version", r, 400, "MissingAPIVersion"));
    let mut r = good();
    r.headers.retain(|(k, _)| k != "Authorization");
    cases.push(("no authorization", r, 401, "Unauthorized"));
    let mut bad_key = sample_group(1);
    bad_key.logs[0].contents[0].key = "__topic__".into();
    cases.push((
        "reserved key",
        put_request(
            HOST,
            "app-logs",
            &bad_key.encode_to_vec(),
            Compression::Lz4,
            &auth,
        ),
        400,
        "InvalidKey",
    ));
    let mut bad_key = sample_group(1);
    bad_key.logs[0].contents[0].key = "bad\nkey".into();
    cases.push((
        "control character in key",
        put_request(
            HOST,
            "app-logs",
            &bad_key.encode_to_vec(),
            Compression::None,
            &auth,
        ),
        400,
        "InvalidKey",
    ));
    cases.push((
        "sts without token",
        put_request(
            HOST,
            "app-logs",
            &raw,
            Compression::Lz4,
            &Auth::V1(Credentials::new("STS.tmp", "tmp-secret")),
        ),
        401,
        "Unauthorized",
    ));
    cases.push((
        "sts with wrong token",
        put_request(
            HOST,
            "app-logs",
            &raw,
            Compression::Lz4,
            &Auth::V1(Credentials::sts("STS.tmp", "tmp-secret", "tok-2")),
        ),
        401,
        "Unauthorized",
    ));
    cases.push((
        "bearer unknown",
        put_request(
            HOST,
            "app-logs",
            &raw,
            Compression::Lz4,
            &Auth::Bearer("nope".into()),
        ),
        401,
        "Unauthorized",
    ));
    cases.push((
        "v4 wrong secret",
        put_request(
            HOST,
            "app-logs",
            &raw,
            Compression::Lz4,
            &Auth::V4 {
                credentials: Credentials::new("loghose-emulator", "wrong"),
                region: "r".into(),
            },
        ),
        401,
        "SignatureNotMatch",
    ));
    let mut r = good();
    r.path = "/logstores/app-logs/shards/route".into();
    r.query = vec![("key".into(), "not-hex".into())];
    resign(&mut r, &auth);
    cases.push(("bad hash key", r, 400, "ParameterInvalid"));
    let mut r = good();
    set_header(&mut r, "Content-Type", "application/json");
    resign(&mut r, &auth);
    cases.push(("wrong content type", r, 400, "InvalidContentType"));

    let total = cases.len() as u64;
    for (name, req, status, code) in &cases {
        let reply = send(&client, &emu, req).await;
        assert_eq!(
            (reply.status, reply.error_code().as_str()),
            (*status, *code),
            "{name}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        assert_eq!(reply.request_id().len(), 24, "{name}");
    }
    assert_eq!(emu.totals("proj", "app-logs").map_or(0, |t| t.logs), 0);
    let c = emu.counters();
    assert_eq!(c.rejected.values().sum::<u64>(), total);
    assert_eq!(c.rejected.get("SignatureNotMatch"), Some(&3));
    assert_eq!(c.accepted_requests, 0);
    // And a good request still goes through afterwards.
    assert_eq!(send(&client, &emu, &good()).await.status, 200);
}

#[tokio::test]
async fn without_auto_create_unknown_projects_and_logstores_are_404() {
    let emu = Emulator::start(EmulatorConfig {
        auto_create: false,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let client = client();
    let g = sample_group(1);
    let reply = put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4).await;
    assert_eq!(
        (reply.status, reply.error_code().as_str()),
        (404, "ProjectNotExist")
    );
    emu.create_logstore("proj", "other", None).unwrap();
    let reply = put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4).await;
    assert_eq!(
        (reply.status, reply.error_code().as_str()),
        (404, "LogStoreNotExist")
    );
    emu.create_logstore("proj", "app-logs", Some(4)).unwrap();
    assert_eq!(
        put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4)
            .await
            .status,
        200
    );
}

#[tokio::test]
async fn a_body_above_the_size_limit_is_refused_with_413() {
    let emu = Emulator::start_default().unwrap();
    let raw = vec![0u8; loghose::wire::limits::MAX_SENT_BODY_BYTES + 1];
    let req = put_request(HOST, "app-logs", &raw, Compression::None, &v1(&emu));
    let reply = send(&client(), &emu, &req).await;
    assert_eq!(
        (reply.status, reply.error_code().as_str()),
        (413, "PostBodyTooLarge")
    );
}

#[test]
fn the_service_handles_prebuilt_requests_without_the_network() {
    let emu = Emulator::start_default().unwrap();
    let raw = sample_group(5).encode_to_vec();
    let req = put_request(HOST, "app-logs", &raw, Compression::Lz4, &v1(&emu));
    let mut builder = hyper::http::Request::builder()
        .method("POST")
        .uri(req.path_and_query());
    for (k, v) in &req.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    let resp = emu
        .service()
        .handle(builder.body(req.body.clone()).unwrap());
    assert_eq!(resp.status(), 200);
    assert_eq!(emu.totals("proj", "app-logs").unwrap().logs, 5);
    let decoded = compress::decompress(Compression::Lz4, &req.body, raw.len()).unwrap();
    assert_eq!(decoded, raw);
}
