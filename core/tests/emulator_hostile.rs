//! The emulator under hostile or careless input: names the service refuses, too many
//! logstores, oversized groups, bodies no signature covers, the admin API's token, paged
//! reads, and the store-then-fail faults that make duplicates. After every bad input a valid
//! PutLogs is still served promptly. Every test is bounded in time and count.

mod common;

use std::time::{Duration, Instant};

use common::*;
use loghose::emulator::{Emulator, EmulatorConfig, EmulatorError, Fault, FaultAction};
use loghose::producer::{Producer, ProducerConfig, SendOptions};
use loghose::wire::compress::Compression;
use loghose::wire::limits::{MAX_FIELDS_PER_LOG, MAX_LOGS_PER_GROUP_ACCEPTED, MAX_VALUE_BYTES};
use loghose::wire::proto::{Log, LogGroup};
use prost::Message;

const HOST: &str = "proj.127.0.0.1";

/// A valid signed PutLogs is answered 200 within a second.
async fn still_served(emu: &Emulator) {
    let started = Instant::now();
    let reply = put(
        &client(),
        emu,
        HOST,
        "app-logs",
        &sample_group(1),
        Compression::Lz4,
    )
    .await;
    assert_eq!(
        reply.status,
        200,
        "{}",
        String::from_utf8_lossy(&reply.body)
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

async fn admin_post(
    emu: &Emulator,
    path: &str,
    body: serde_json::Value,
) -> (u16, serde_json::Value) {
    let resp = client()
        .post(format!("{}/_emulator/{path}", emu.endpoint()))
        .body(body.to_string())
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or_default())
}

#[tokio::test]
async fn names_the_service_refuses_are_never_created() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    let group = sample_group(1);
    let long = "x".repeat(5000);
    // As a logstore in the path (percent-encoded as a client would send it).
    for logstore in [
        "..",
        "%2e%2e%2f..%2fetc",
        long.as_str(),
        "%E6%97%A5%E5%BF%97",
        "a%20b",
        "x%00y",
        "UPPER",
        "ab",
    ] {
        let reply = put(&client, &emu, HOST, logstore, &group, Compression::Lz4).await;
        // Dot segments are resolved by the client's URL parser, so those reach another path.
        assert_ne!(reply.status, 200, "{logstore}");
        let code = reply.error_code();
        assert!(
            reply.status == 404 && (code == "LogStoreNotExist" || code == "NotFound"),
            "{logstore}: {}",
            String::from_utf8_lossy(&reply.body)
        );
        assert!(
            reply.body.len() < 400,
            "the answer quotes a long name whole"
        );
    }
    // As a project in the Host (host names are case-insensitive, so `UPPER.` would be `upper`).
    for project in ["under_score", "ab", "-abc", "x%00y"] {
        let host = format!("{project}.127.0.0.1");
        let reply = put(&client, &emu, &host, "app-logs", &group, Compression::Lz4).await;
        assert_eq!(
            (reply.status, reply.error_code().as_str()),
            (404, "ProjectNotExist"),
            "{project}"
        );
    }
    // Through the admin API and in process: a 400 naming the rule.
    for (project, logstore) in [
        ("proj", ".."),
        ("proj", ""),
        ("proj", long.as_str()),
        ("日志", "app-logs"),
        ("Proj", "app-logs"),
    ] {
        let (status, error) = admin_post(
            &emu,
            "logstores",
            serde_json::json!({"project": project, "logstore": logstore}),
        )
        .await;
        assert_eq!(
            (status, error["errorCode"].as_str()),
            (400, Some("ParameterInvalid")),
            "{error}"
        );
        assert!(
            error["errorMessage"].as_str().unwrap().contains("3 to 63"),
            "{error}"
        );
        let refused = emu.create_logstore(project, logstore, None).unwrap_err();
        assert_eq!(refused.code, "ParameterInvalid");
    }
    assert_eq!(emu.counters().accepted_requests, 0);
    still_served(&emu).await;
    // Only the one valid logstore exists.
    assert!(emu.totals("proj", "app-logs").is_some());
    assert!(emu.totals("proj", "..").is_none());
}

#[tokio::test]
async fn auto_create_stops_at_max_logstores() {
    let emu = Emulator::start(EmulatorConfig {
        max_logstores: 3,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let client = client();
    let group = sample_group(1);
    for logstore in ["app-logs", "second", "third"] {
        assert_eq!(
            put(&client, &emu, HOST, logstore, &group, Compression::Lz4)
                .await
                .status,
            200
        );
    }
    let reply = put(&client, &emu, HOST, "fourth", &group, Compression::Lz4).await;
    assert_eq!(
        (reply.status, reply.error_code().as_str()),
        (404, "LogStoreNotExist")
    );
    assert!(String::from_utf8_lossy(&reply.body).contains("max_logstores"));
    let (status, error) = admin_post(
        &emu,
        "logstores",
        serde_json::json!({"project": "other", "logstore": "fourth"}),
    )
    .await;
    assert_eq!(
        (status, error["errorCode"].as_str()),
        (403, Some("ExceedQuota"))
    );
    still_served(&emu).await;
    // A reset empties the emulator, and with it the count.
    emu.reset();
    assert_eq!(
        put(&client, &emu, HOST, "fourth", &group, Compression::Lz4)
            .await
            .status,
        200
    );
}

/// Signs `req` again as it now stands (v1), without adding any header.
fn resign(emu: &Emulator, req: &mut loghose::wire::request::SignedRequest) {
    req.headers
        .retain(|(k, _)| !k.eq_ignore_ascii_case("authorization"));
    let headers: Vec<(&str, &str)> = req
        .headers
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let query: Vec<(&str, &str)> = req
        .query
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let value =
        loghose::wire::sign::v1_authorization(&creds(emu), req.method, &req.path, &query, &headers);
    req.headers.push(("Authorization".into(), value));
}

/// The raw group's answer, as the emulator gives it.
async fn put_raw(emu: &Emulator, raw: &[u8]) -> (u16, String) {
    let req = put_request(HOST, "app-logs", raw, Compression::Lz4, &v1(emu));
    let reply = send(&client(), emu, &req).await;
    let code = if reply.status == 200 {
        String::new()
    } else {
        reply.error_code()
    };
    (reply.status, code)
}

#[tokio::test]
async fn per_request_limits_are_applied_with_their_codes() {
    let emu = Emulator::start_default().unwrap();
    let t = now_secs();
    let many_logs = LogGroup::of_logs(
        vec![Log::of_fields(t, None, &[]); MAX_LOGS_PER_GROUP_ACCEPTED + 1],
        "",
        "",
        &[],
    );
    assert_eq!(
        put_raw(&emu, &many_logs.encode_to_vec()).await,
        (400, "PostBodyInvalid".into())
    );

    let keys: Vec<String> = (0..=MAX_FIELDS_PER_LOG).map(|i| format!("k{i}")).collect();
    let fields: Vec<(&str, &str)> = keys.iter().map(|k| (k.as_str(), "v")).collect();
    let wide = group(vec![log(t, &fields)]);
    assert_eq!(
        put_raw(&emu, &wide.encode_to_vec()).await,
        (400, "PostBodyInvalid".into())
    );

    let value = "v".repeat(MAX_VALUE_BYTES);
    let six_mib = group((0..6).map(|_| log(t, &[("a", value.as_str())])).collect());
    assert_eq!(
        put_raw(&emu, &six_mib.encode_to_vec()).await,
        (400, "PostBodyTooLarge".into())
    );

    let over_value = group(vec![log(t, &[("a", &"v".repeat(MAX_VALUE_BYTES + 1))])]);
    assert_eq!(
        put_raw(&emu, &over_value.encode_to_vec()).await,
        (400, "PostBodyInvalid".into())
    );
    let long_topic = LogGroup::of_logs(vec![log(t, &[("a", "1")])], &"t".repeat(129), "", &[]);
    assert_eq!(
        put_raw(&emu, &long_topic.encode_to_vec()).await,
        (400, "PostBodyInvalid".into())
    );
    let long_key = group(vec![log(t, &[(&"k".repeat(129), "1")])]);
    assert_eq!(
        put_raw(&emu, &long_key.encode_to_vec()).await,
        (400, "InvalidKey".into())
    );

    // A signed raw size with a sign is not a number.
    let mut req = put_request(
        HOST,
        "app-logs",
        &sample_group(1).encode_to_vec(),
        Compression::None,
        &v1(&emu),
    );
    for (k, v) in req.headers.iter_mut() {
        if k == "x-log-bodyrawsize" {
            *v = format!("+{v}");
        }
    }
    resign(&emu, &mut req);
    let reply = send(&client(), &emu, &req).await;
    assert_eq!(
        (reply.status, reply.error_code().as_str()),
        (400, "InvalidBodyRawSize")
    );

    assert_eq!(emu.counters().accepted_requests, 0);
    // Just within every limit, the same shapes pass.
    let fine = group((0..4).map(|_| log(t, &[("a", value.as_str())])).collect());
    assert_eq!(
        put_raw(&emu, &fine.encode_to_vec()).await,
        (200, String::new())
    );
    still_served(&emu).await;
}

#[tokio::test]
async fn a_body_no_signature_covers_is_refused() {
    let emu = Emulator::start_default().unwrap();
    let signed = put_request(
        HOST,
        "app-logs",
        &sample_group(2).encode_to_vec(),
        Compression::None,
        &v1(&emu),
    );
    // The same request with another body of the same length and no Content-MD5: the v1
    // signature alone does not cover the body, so the emulator must not take it.
    let mut swapped = signed.clone();
    swapped
        .headers
        .retain(|(k, _)| !k.eq_ignore_ascii_case("content-md5"));
    resign(&emu, &mut swapped);
    let mut other = sample_group(2);
    other.logs[0].contents[1].value = "HELLO WORLD".into();
    swapped.body = other.encode_to_vec().into();
    assert_eq!(swapped.body.len(), signed.body.len());
    let reply = send(&client(), &emu, &swapped).await;
    assert_eq!(
        (reply.status, reply.error_code().as_str()),
        (400, "MissingContentMD5")
    );
    // With Content-MD5 kept, a swapped body breaks it.
    let mut tampered = signed.clone();
    tampered.body = other.encode_to_vec().into();
    let reply = send(&client(), &emu, &tampered).await;
    assert_eq!(
        (reply.status, reply.error_code().as_str()),
        (400, "InvalidContentMD5")
    );
    assert_eq!(emu.counters().accepted_requests, 0);
    assert_eq!(send(&client(), &emu, &signed).await.status, 200);
}

#[tokio::test]
async fn the_admin_api_takes_a_token_and_is_kept_off_the_network_without_one() {
    let refused = Emulator::start(EmulatorConfig {
        host: "0.0.0.0".parse().unwrap(),
        ..EmulatorConfig::default()
    })
    .unwrap_err();
    match refused {
        EmulatorError::Config { key, reason } => {
            assert_eq!(key, "admin_token");
            assert!(
                reason.contains("--admin-token") && reason.contains("127.0.0.1"),
                "{reason}"
            );
        }
        other => panic!("{other}"),
    }
    let emu = Emulator::start(EmulatorConfig {
        admin_token: Some("s3cret".into()),
        ..EmulatorConfig::default()
    })
    .unwrap();
    let client = client();
    let url = format!("{}/_emulator/counters", emu.endpoint());
    for auth in [
        None,
        Some("Bearer wrong"),
        Some("Bearer s3cre"),
        Some("s3cret"),
    ] {
        let mut req = client.get(&url);
        if let Some(auth) = auth {
            req = req.header("authorization", auth);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 401, "{auth:?}");
    }
    let ok = client
        .get(&url)
        .header("authorization", "Bearer s3cret")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status(), 200);
    let reset = client
        .post(format!("{}/_emulator/reset", emu.endpoint()))
        .send()
        .await
        .unwrap();
    assert_eq!(reset.status(), 401);
    still_served(&emu).await;
    assert_eq!(
        emu.counters().accepted_requests,
        1,
        "admin requests are never counted"
    );
}

#[tokio::test]
async fn stored_logs_are_read_a_page_at_a_time() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    for _ in 0..5 {
        assert_eq!(
            put(
                &client,
                &emu,
                HOST,
                "app-logs",
                &sample_group(7),
                Compression::Lz4
            )
            .await
            .status,
            200
        );
    }
    let page = |offset: usize, limit: usize| {
        let client = client.clone();
        let url = format!(
            "{}/_emulator/logs?project=proj&logstore=app-logs&offset={offset}&limit={limit}",
            emu.endpoint()
        );
        async move {
            client
                .get(url)
                .send()
                .await
                .unwrap()
                .json::<serde_json::Value>()
                .await
                .unwrap()
        }
    };
    let mut offset = Some(0usize);
    let mut seen = 0;
    let mut pages = 0;
    while let Some(at) = offset {
        let body = page(at, 10).await;
        let logs = body["logs"].as_array().unwrap().len();
        assert!(logs <= 10);
        seen += logs;
        pages += 1;
        offset = body["next_offset"].as_u64().map(|n| n as usize);
    }
    assert_eq!((seen, pages), (35, 4));
    assert_eq!(page(0, 1000).await["logs"].as_array().unwrap().len(), 35);
    // The default page is bounded, and so is the largest one asked for.
    let too_big = client
        .get(format!(
            "{}/_emulator/logs?project=proj&logstore=app-logs&limit=10001",
            emu.endpoint()
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(too_big.status(), 400);
    still_served(&emu).await;
}

fn deliver_through(emu: &Emulator, fault: FaultAction) -> u32 {
    emu.inject(Fault::times(fault, 1));
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        ..common::producer::config(emu)
    })
    .unwrap();
    let report = p
        .send_with_completion(&[("id", "1")], &SendOptions::default())
        .unwrap()
        .wait(common::producer::WAIT)
        .unwrap();
    assert!(report.is_delivered(), "{report:?}");
    report.attempts
}

#[test]
fn store_then_fail_faults_make_duplicates_the_counters_show() {
    let emu = Emulator::start_default().unwrap();
    let attempts = deliver_through(
        &emu,
        FaultAction::StoreThenError {
            status: 500,
            code: "InternalServerError".into(),
        },
    );
    assert_eq!(attempts, 2);
    let c = emu.counters();
    assert_eq!(
        (c.accepted_requests, c.duplicate_groups, c.faults_injected),
        (2, 1, 1)
    );
    assert_eq!(c.rejected.get("InternalServerError"), Some(&1));
    // The retried batch kept its pack id: both copies carry the same one.
    let logs = emu.logs("proj", "store");
    assert_eq!(logs.len(), 2);
    assert_eq!(logs[0].tag("__pack_id__"), logs[1].tag("__pack_id__"));

    emu.reset();
    assert_eq!(deliver_through(&emu, FaultAction::StoreThenReset), 2);
    let c = emu.counters();
    assert_eq!((c.accepted_requests, c.duplicate_groups), (2, 1));
    assert_eq!(emu.logs("proj", "store").len(), 2);

    // Without a fault, nothing is duplicated.
    emu.reset();
    assert_eq!(deliver_through(&emu, FaultAction::Latency { ms: 1 }), 1);
    assert_eq!(emu.counters().duplicate_groups, 0);
}

#[tokio::test]
async fn a_store_then_fail_fault_does_not_turn_a_refusal_into_a_store() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::times(
        FaultAction::StoreThenError {
            status: 500,
            code: "InternalServerError".into(),
        },
        1,
    ));
    // A refused request keeps its own answer; nothing was stored.
    let bad = group(vec![log(now_secs(), &[("__time__", "1")])]);
    assert_eq!(
        put_raw(&emu, &bad.encode_to_vec()).await,
        (400, "InvalidKey".into())
    );
    assert_eq!(emu.counters().accepted_requests, 0);
    still_served(&emu).await;
}

#[tokio::test]
async fn request_bodies_buffered_at_once_are_bounded() {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let emu = Emulator::start(EmulatorConfig {
        max_body_buffer_bytes: 20 << 20,
        body_idle_timeout_ms: 5_000,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let head = b"POST /logstores/app-logs/shards/lb HTTP/1.1\r\nHost: proj.127.0.0.1\r\nContent-Type: application/x-protobuf\r\nContent-Length: 10000000\r\n\r\n";
    // The first large body fits and is being read (stalled after a little of it).
    let mut first = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
    first.write_all(head).await.unwrap();
    first.write_all(&[0u8; 1000]).await.unwrap();
    tokio::time::sleep(Duration::from_millis(200)).await;
    // A second one would leave less than the small requests' part: refused at once.
    let mut second = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
    second.write_all(head).await.unwrap();
    let mut answer = Vec::new();
    tokio::time::timeout(Duration::from_secs(5), second.read_to_end(&mut answer))
        .await
        .expect("answered at once")
        .unwrap();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
    assert!(answer.contains("max_body_buffer_bytes"), "{answer}");
    // Small requests are still served meanwhile.
    still_served(&emu).await;
    // Once the first is gone, its part of the budget is back.
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut again = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
        again.write_all(head).await.unwrap();
        let mut got = [0u8; 12];
        let quick =
            tokio::time::timeout(Duration::from_millis(300), again.read_exact(&mut got)).await;
        if quick.is_err() {
            break; // reading the body: it was admitted
        }
        assert!(Instant::now() < deadline, "the budget never came back");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(Emulator::start(EmulatorConfig {
        max_body_buffer_bytes: 1 << 20,
        ..EmulatorConfig::default()
    })
    .is_err());
}

#[test]
fn the_command_line_server_refuses_what_it_cannot_serve_safely() {
    let run = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_loghose-emulator"))
            .args(args)
            .env_remove("LOGHOSE_EMULATOR_ADMIN_TOKEN")
            .stdin(std::process::Stdio::null())
            .output()
            .unwrap()
    };
    for (args, named) in [
        (&["--host", "0.0.0.0"][..], "--admin-token"),
        (&["--shards", "4294967295"][..], "shard_count"),
        (&["--threads", "100000"][..], "worker_threads"),
        (&["--default-project", "Not_Valid"][..], "default_project"),
        (&["--max-body-buffer-mib", "1"][..], "max_body_buffer_bytes"),
        (&["--port", "99999"][..], "99999"),
    ] {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} started");
        assert!(out.stdout.is_empty(), "{args:?} printed an endpoint");
        assert!(stderr.contains(named), "{args:?}: {stderr}");
    }
}
