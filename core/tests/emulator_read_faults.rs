//! The emulator's read side (SLS ListShards / GetCursor / PullLogs and its own JSON API), its
//! fault injection, its robustness against garbage, restarts on the same port, and the
//! command-line server.

mod common;

use std::io::BufRead as _;
use std::time::{Duration, Instant, SystemTime};

use common::*;
use loghose::emulator::{Emulator, EmulatorConfig, Fault, FaultAction};
use loghose::wire::compress::{self, Compression};
use loghose::wire::proto::{LogGroup, LogGroupList};
use loghose::wire::request;
use prost::Message;

const HOST: &str = "proj.127.0.0.1";

async fn signed_get(
    emu: &Emulator,
    path: &str,
    query: &[(&str, &str)],
    extra: &[(&str, &str)],
) -> Reply {
    let req = request::get(HOST, path, query, extra, &v1(emu), SystemTime::now());
    send(&client(), emu, &req).await
}

#[tokio::test]
async fn official_read_apis_return_what_was_written() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    let sent: Vec<LogGroup> = (0..5).map(|i| sample_group(i + 1)).collect();
    for g in &sent {
        assert_eq!(
            put(&client, &emu, HOST, "app-logs", g, Compression::Lz4)
                .await
                .status,
            200
        );
    }
    let shards = signed_get(&emu, "/logstores/app-logs/shards", &[], &[]).await;
    assert_eq!(shards.status, 200);
    let shards: serde_json::Value = serde_json::from_slice(&shards.body).unwrap();
    let shards = shards.as_array().unwrap();
    assert_eq!(shards.len(), 2);
    assert_eq!(
        shards[0]["inclusiveBeginKey"],
        "00000000000000000000000000000000"
    );
    assert_eq!(
        shards[1]["exclusiveEndKey"],
        "ffffffffffffffffffffffffffffffff"
    );
    assert_eq!(shards[0]["exclusiveEndKey"], shards[1]["inclusiveBeginKey"]);

    let mut received = Vec::new();
    for shard in 0..2 {
        let path = format!("/logstores/app-logs/shards/{shard}");
        for accept in ["lz4", "zstd", ""] {
            let cursor =
                signed_get(&emu, &path, &[("type", "cursor"), ("from", "begin")], &[]).await;
            let cursor: serde_json::Value = serde_json::from_slice(&cursor.body).unwrap();
            let mut cursor = cursor["cursor"].as_str().unwrap().to_owned();
            let mut groups = Vec::new();
            loop {
                // count=2 forces several pages.
                let reply = signed_get(
                    &emu,
                    &path,
                    &[("type", "log"), ("cursor", &cursor), ("count", "2")],
                    &[
                        ("Accept-Encoding", accept),
                        ("Accept", "application/x-protobuf"),
                    ],
                )
                .await;
                assert_eq!(reply.status, 200);
                let h = |n: &str| reply.headers.get(n).map(|v| v.to_str().unwrap().to_owned());
                let raw_size: usize = h("x-log-bodyrawsize").unwrap().parse().unwrap();
                let count: usize = h("x-log-count").unwrap().parse().unwrap();
                if count == 0 {
                    assert_eq!(raw_size, 0);
                    break;
                }
                let codec = Compression::from_header(h("x-log-compresstype").as_deref()).unwrap();
                assert_eq!(codec.header_value().unwrap_or(""), accept);
                let raw = compress::decompress(codec, &reply.body, raw_size).unwrap();
                let list = LogGroupList::decode(raw.as_slice()).unwrap();
                assert_eq!(list.log_groups.len(), count);
                groups.extend(list.log_groups);
                cursor = h("x-log-cursor").unwrap();
            }
            if accept == "lz4" {
                received.extend(groups);
            }
        }
        let end = signed_get(&emu, &path, &[("type", "cursor"), ("from", "end")], &[]).await;
        assert_eq!(end.status, 200);
    }
    let key = |g: &LogGroup| g.logs.len();
    let mut a: Vec<_> = received.clone();
    let mut b: Vec<_> = sent.clone();
    a.sort_by_key(key);
    b.sort_by_key(key);
    assert_eq!(
        a, b,
        "PullLogs returns exactly the groups written, every field"
    );

    let missing_shard = signed_get(
        &emu,
        "/logstores/app-logs/shards/9",
        &[("type", "cursor"), ("from", "begin")],
        &[],
    )
    .await;
    assert_eq!(
        (missing_shard.status, missing_shard.error_code().as_str()),
        (404, "ShardNotExist")
    );
    let bad_cursor = signed_get(
        &emu,
        "/logstores/app-logs/shards/0",
        &[("type", "log"), ("cursor", "@@"), ("count", "1")],
        &[],
    )
    .await;
    assert_eq!(
        (bad_cursor.status, bad_cursor.error_code().as_str()),
        (400, "InvalidCursor")
    );
}

#[tokio::test]
async fn the_json_api_serves_logs_counters_faults_and_reset() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    let g = sample_group(3);
    assert_eq!(
        put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4)
            .await
            .status,
        200
    );
    let base = emu.endpoint();
    let logs: serde_json::Value = client
        .get(format!(
            "{base}/_emulator/logs?project=proj&logstore=app-logs"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(logs["totals"]["logs"], 3);
    let first = &logs["logs"][0];
    assert_eq!(first["topic"], "test_topic");
    assert_eq!(first["source"], "10.0.0.1");
    assert_eq!(
        first["tags"][1],
        serde_json::json!(["__pack_id__", "0123456789ABCDEF-0"])
    );
    assert_eq!(
        first["contents"][1],
        serde_json::json!(["msg", "hello world"])
    );
    assert_eq!(first["time_ns"], 123_456_789);

    let fault =
        serde_json::json!({"kind": "error", "status": 403, "code": "WriteQuotaExceed", "count": 2});
    assert_eq!(
        client
            .post(format!("{base}/_emulator/faults"))
            .body(fault.to_string())
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    for _ in 0..2 {
        let r = put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4).await;
        assert_eq!(
            (r.status, r.error_code().as_str()),
            (403, "WriteQuotaExceed")
        );
    }
    assert_eq!(
        put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4)
            .await
            .status,
        200
    );
    let bad = client
        .post(format!("{base}/_emulator/faults"))
        .body("{\"kind\":\"explode\"}")
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);

    let counters: serde_json::Value = client
        .get(format!("{base}/_emulator/counters"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(counters["logs"], 6);
    assert_eq!(counters["rejected"]["WriteQuotaExceed"], 2);
    assert_eq!(counters["faults_injected"], 2);

    assert_eq!(
        client
            .post(format!("{base}/_emulator/reset"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(emu.counters().logs, 0);
    assert!(emu.totals("proj", "app-logs").is_none());
}

#[tokio::test]
async fn faults_apply_for_a_count_or_a_window_then_stop() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    let g = sample_group(1);
    emu.inject(Fault::error(503, "ServerBusy", 2));
    emu.inject(Fault::error(500, "InternalServerError", 1));
    let codes: Vec<u16> = futures_status(&client, &emu, &g, 4).await;
    assert_eq!(codes, vec![503, 503, 500, 200]);

    emu.inject(Fault::during(
        FaultAction::Error {
            status: 401,
            code: "Unauthorized".into(),
            message: None,
        },
        Duration::from_millis(1000),
    ));
    assert_eq!(
        put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4)
            .await
            .status,
        401
    );
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4)
            .await
            .status,
        200
    );

    emu.inject(Fault::times(FaultAction::Latency { ms: 300 }, 1));
    let started = Instant::now();
    assert_eq!(
        put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4)
            .await
            .status,
        200
    );
    assert!(started.elapsed() >= Duration::from_millis(300));

    // Faults filtered to another logstore leave this one alone.
    let mut other = Fault::error(503, "ServerBusy", 1);
    other.logstore = Some("other".into());
    emu.inject(other);
    assert_eq!(
        put(&client, &emu, HOST, "app-logs", &g, Compression::Lz4)
            .await
            .status,
        200
    );
    assert_eq!(
        put(&client, &emu, HOST, "other", &g, Compression::Lz4)
            .await
            .status,
        503
    );
    assert_eq!(emu.totals("proj", "app-logs").unwrap().logs, 4);
}

async fn futures_status(
    client: &reqwest::Client,
    emu: &Emulator,
    g: &LogGroup,
    n: usize,
) -> Vec<u16> {
    let mut out = Vec::new();
    for _ in 0..n {
        out.push(
            put(client, emu, HOST, "app-logs", g, Compression::Lz4)
                .await
                .status,
        );
    }
    out
}

#[tokio::test]
async fn resets_drop_the_connection_and_hangs_outlast_the_client_timeout() {
    let emu = Emulator::start_default().unwrap();
    let g = sample_group(1);
    let req = put_request(
        HOST,
        "app-logs",
        &g.encode_to_vec(),
        Compression::Lz4,
        &v1(&emu),
    );
    let url = format!("{}{}", emu.endpoint(), req.path_and_query());
    let quick = reqwest::Client::builder()
        .timeout(Duration::from_millis(1500))
        .build()
        .unwrap();
    let send_raw = |client: &reqwest::Client| {
        let mut b = client.post(&url);
        for (k, v) in &req.headers {
            if k != "Content-Length" {
                b = b.header(k.as_str(), v.as_str());
            }
        }
        b.body(req.body.clone()).send()
    };
    emu.inject(Fault::times(FaultAction::Reset, 1));
    let err = send_raw(&quick).await.expect_err("a reset gets no answer");
    assert!(!err.is_timeout(), "{err}");
    emu.inject(Fault::times(FaultAction::Hang { ms: Some(5_000) }, 1));
    let started = Instant::now();
    let err = send_raw(&quick)
        .await
        .expect_err("a hang outlasts the client");
    assert!(err.is_timeout(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(4));
    assert_eq!(send_raw(&quick).await.unwrap().status(), 200);
    assert_eq!(emu.totals("proj", "app-logs").unwrap().logs, 1);
}

#[tokio::test]
async fn garbage_gets_4xx_json_and_never_stops_the_server() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    let auth = v1(&emu);
    let good = sample_group(4).encode_to_vec();
    let mut rng = fastrand::Rng::with_seed(0x5eed);
    let header_names = [
        "x-log-bodyrawsize",
        "x-log-compresstype",
        "Content-MD5",
        "Date",
        "Authorization",
        "x-log-apiversion",
        "x-log-hashkey",
        "x-log-mode",
        "Content-Type",
        "x-acs-security-token",
    ];
    for round in 0..400 {
        let codec = [
            Compression::None,
            Compression::Lz4,
            Compression::Zstd,
            Compression::Deflate,
        ][round % 4];
        let raw: Vec<u8> = match round % 5 {
            0 => good[..rng.usize(0..good.len())].to_vec(),
            1 => (0..rng.usize(0..512)).map(|_| rng.u8(..)).collect(),
            2 => {
                let mut g = good.clone();
                for _ in 0..rng.usize(1..6) {
                    let i = rng.usize(0..g.len());
                    g[i] = rng.u8(..);
                }
                g
            }
            3 => {
                let mut g = good.clone();
                g.extend((0..rng.usize(1..64)).map(|_| rng.u8(..)));
                g
            }
            _ => good.clone(),
        };
        let mut req = put_request(HOST, "app-logs", &raw, codec, &auth);
        if round % 3 == 0 {
            // Corrupt the compressed body too, then sign it so the body itself is judged.
            if !req.body.is_empty() {
                let i = rng.usize(0..req.body.len());
                let mut body = req.body.to_vec();
                body[i] ^= rng.u8(1..);
                req.body = body.into();
            }
            req.headers.retain(|(k, _)| {
                k != "Authorization"
                    && k != "x-log-signaturemethod"
                    && k != "Date"
                    && k != "Content-MD5"
            });
            request::authorize(&mut req, &auth, SystemTime::now());
        }
        if round % 7 == 0 {
            let name = header_names[rng.usize(0..header_names.len())];
            let value: String = (0..rng.usize(0..40)).map(|_| rng.alphanumeric()).collect();
            req.headers.retain(|(k, _)| !k.eq_ignore_ascii_case(name));
            if rng.bool() {
                req.headers.push((name.into(), value));
            }
        }
        let reply = send(&client, &emu, &req).await;
        match reply.status {
            200 => {}
            400..=499 => {
                reply.error_code();
                reply.request_id();
            }
            other => panic!(
                "round {round}: status {other}: {}",
                String::from_utf8_lossy(&reply.body)
            ),
        }
    }
    // Random request lines and paths.
    for _ in 0..100 {
        let path: String = (0..rng.usize(1..30))
            .map(|_| ['/', 'a', 'l', 's', '%', '?', '=', '&', '0'][rng.usize(0..9)])
            .collect();
        let url = format!("{}/{}", emu.endpoint(), path);
        let method = if rng.bool() {
            reqwest::Method::GET
        } else {
            reqwest::Method::POST
        };
        // An unsigned GET of `/` (whatever its query) is a browser asking for the console.
        let console = method == reqwest::Method::GET
            && reqwest::Url::parse(&url).is_ok_and(|u| u.path() == "/");
        if let Ok(resp) = client
            .request(method, url.clone())
            .body(vec![1u8; rng.usize(0..100)])
            .send()
            .await
        {
            let status = resp.status().as_u16();
            if console {
                assert_eq!(status, 200, "{url}: the console");
            } else {
                assert!((400..500).contains(&status), "{url}: status {status}");
            }
        }
    }
    // Raw TCP garbage and half-sent requests.
    for i in 0..50 {
        use tokio::io::AsyncWriteExt;
        let mut s = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
        let junk: Vec<u8> = match i % 3 {
            0 => (0..rng.usize(1..200)).map(|_| rng.u8(..)).collect(),
            1 => b"POST /logstores/app-logs/shards/lb HTTP/1.1\r\nHost: p.x\r\nContent-Length: 100000\r\n\r\nabc".to_vec(),
            _ => b"GET / HTTP/1.1\r\nHost: ".to_vec(),
        };
        let _ = s.write_all(&junk).await;
        drop(s);
    }
    let health = client
        .get(format!("{}/_emulator/health", emu.endpoint()))
        .send()
        .await
        .unwrap();
    assert_eq!(health.status(), 200);
    assert_eq!(
        put(
            &client,
            &emu,
            HOST,
            "app-logs",
            &sample_group(1),
            Compression::Lz4
        )
        .await
        .status,
        200
    );
}

#[tokio::test]
async fn an_emulator_can_be_restarted_on_the_same_port() {
    let first = Emulator::start_default().unwrap();
    let port = first.addr().port();
    first.shutdown();
    assert!(client()
        .get(format!("http://127.0.0.1:{port}/_emulator/health"))
        .send()
        .await
        .is_err());
    let second = Emulator::start(EmulatorConfig {
        port,
        ..EmulatorConfig::default()
    })
    .unwrap();
    assert_eq!(second.addr().port(), port);
    assert_eq!(
        put(
            &client(),
            &second,
            HOST,
            "app-logs",
            &sample_group(1),
            Compression::Lz4
        )
        .await
        .status,
        200
    );
}

#[test]
fn the_command_line_server_prints_its_endpoint_and_stops_on_sigterm() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_loghose-emulator"))
        .args([
            "--port",
            "0",
            "--access-key-id",
            "cli-id",
            "--access-key-secret",
            "cli-secret",
        ])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let endpoint = line.trim().to_owned();
    assert!(endpoint.starts_with("http://127.0.0.1:"), "{endpoint:?}");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let health = rt.block_on(async {
        client()
            .get(format!("{endpoint}/_emulator/health"))
            .send()
            .await
            .unwrap()
            .status()
    });
    assert_eq!(health, 200);
    // Signal the child as an init system would.
    let status = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        if let Some(code) = child.try_wait().unwrap() {
            assert!(code.success(), "{code:?}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the emulator did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_loghose-emulator"))
        .args(["--sts-key", "nocolons"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("ID:SECRET:TOKEN"));
}

#[tokio::test]
async fn response_headers_are_lowercase_on_the_wire() {
    // The C producer matches "x-log-" case-sensitively; a capitalised header would make it
    // treat every refusal as a server error and retry forever.
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let emu = Emulator::start_default().unwrap();
    for request in [
        "GET /_emulator/health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".to_owned(),
        "POST /logstores/app-logs/shards/lb HTTP/1.1\r\nHost: p.x\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_owned(),
    ] {
        let mut s = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).await.unwrap();
        assert!(text.contains("\r\nx-log-requestid: "), "{text}");
        assert!(!text.contains("X-Log-"), "{text}");
    }
}

#[tokio::test]
async fn pull_logs_answers_with_fewer_groups_rather_than_an_oversized_body() {
    let emu = Emulator::start(EmulatorConfig {
        shard_count: 1,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let client = client();
    let big = "v".repeat(1_000_000);
    let t = now_secs();
    for _ in 0..7 {
        let g = group(vec![log(t, &[("a", &big)]), log(t, &[("b", &big)])]);
        assert_eq!(
            put(&client, &emu, HOST, "big", &g, Compression::Lz4)
                .await
                .status,
            200
        );
    }
    let path = "/logstores/big/shards/0";
    let cursor = signed_get(&emu, path, &[("type", "cursor"), ("from", "begin")], &[]).await;
    let mut cursor = serde_json::from_slice::<serde_json::Value>(&cursor.body).unwrap()["cursor"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut pages = Vec::new();
    loop {
        let reply = signed_get(
            &emu,
            path,
            &[("type", "log"), ("cursor", &cursor), ("count", "1000")],
            &[],
        )
        .await;
        let h = |n: &str| reply.headers.get(n).unwrap().to_str().unwrap().to_owned();
        let count: usize = h("x-log-count").parse().unwrap();
        if count == 0 {
            break;
        }
        let raw_size: usize = h("x-log-bodyrawsize").parse().unwrap();
        assert!(
            raw_size <= loghose::wire::limits::MAX_RAW_BODY_BYTES,
            "{raw_size}"
        );
        assert_eq!(
            reply.body.len(),
            raw_size,
            "uncompressed without Accept-Encoding"
        );
        pages.push(count);
        cursor = h("x-log-cursor");
    }
    assert!(pages.len() >= 2, "{pages:?}");
    assert_eq!(pages.iter().sum::<usize>(), 7);
}

#[tokio::test]
async fn admin_inputs_are_bounded_and_admin_reads_leave_the_counters_alone() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    let base = emu.endpoint();
    // A shard count the service refuses is a 400 in the service's shape, with nothing
    // allocated; the server goes on answering.
    for shards in [0u64, 101, 100_000_000, 4_294_967_295] {
        let body = serde_json::json!({"project": "proj", "logstore": "huge", "shards": shards});
        let resp = client
            .post(format!("{base}/_emulator/logstores"))
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 400, "{shards}");
        let error: serde_json::Value = resp.json().await.unwrap();
        assert_eq!(error["errorCode"], "ParameterInvalid");
        assert!(
            error["errorMessage"].as_str().unwrap().contains("1 to 100"),
            "{error}"
        );
    }
    assert!(emu.totals("proj", "huge").is_none());
    assert!(emu.create_logstore("proj", "huge", Some(u32::MAX)).is_err());
    emu.create_logstore("proj", "hundred", Some(100)).unwrap();
    assert_eq!(
        put(
            &client,
            &emu,
            HOST,
            "app-logs",
            &sample_group(2),
            Compression::Lz4
        )
        .await
        .status,
        200
    );
    let before = emu.counters();
    // Admin reads, found or not, are not the service's traffic.
    for path in [
        "logs?project=proj&logstore=missing",
        "totals?project=proj",
        "counters",
        "health",
        "nothing-here",
    ] {
        client
            .get(format!("{base}/_emulator/{path}"))
            .send()
            .await
            .unwrap();
    }
    assert_eq!(emu.counters(), before);
}

/// Reads until the server closes the connection (or `limit` passes); what it sent.
async fn read_until_closed(stream: &mut tokio::net::TcpStream, limit: Duration) -> Option<String> {
    use tokio::io::AsyncReadExt as _;
    let mut got = Vec::new();
    let read = tokio::time::timeout(limit, stream.read_to_end(&mut got)).await;
    read.ok()
        .map(|_| String::from_utf8_lossy(&got).into_owned())
}

#[tokio::test]
async fn stalled_oversized_and_surplus_connections_are_bounded() {
    use tokio::io::AsyncWriteExt as _;
    let emu = Emulator::start(EmulatorConfig {
        header_read_timeout_ms: 300,
        body_idle_timeout_ms: 300,
        max_connections: 4,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let client = client();
    let group = sample_group(1);
    let valid = || put(&client, &emu, HOST, "app-logs", &group, Compression::Lz4);

    // Half a request head: closed once the header timeout passes.
    let mut half = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
    half.write_all(b"POST /logstores/app-logs/shards/lb HTTP/1.1\r\nHost: proj.127")
        .await
        .unwrap();
    assert_eq!(
        valid().await.status,
        200,
        "served while a head is half sent"
    );
    assert!(
        read_until_closed(&mut half, Duration::from_secs(5))
            .await
            .is_some(),
        "a half-sent head is closed"
    );

    // A declared body over the limit: 413 before a byte of it is sent.
    let mut huge = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
    huge.write_all(
        b"POST /logstores/app-logs/shards/lb HTTP/1.1\r\nHost: proj.127.0.0.1\r\nContent-Length: 99999999999\r\n\r\n",
    )
    .await
    .unwrap();
    let answer = read_until_closed(&mut huge, Duration::from_secs(5))
        .await
        .expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("PostBodyTooLarge"), "{answer}");

    // A body that stops arriving: dropped once the idle timeout passes.
    let mut stalled = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
    stalled
        .write_all(
            b"POST /logstores/app-logs/shards/lb HTTP/1.1\r\nHost: proj.127.0.0.1\r\nContent-Length: 1000\r\n\r\n0123456789",
        )
        .await
        .unwrap();
    assert!(read_until_closed(&mut stalled, Duration::from_secs(5))
        .await
        .is_some());

    // More connections than the limit: the surplus one is refused at once, the rest served.
    let mut held = Vec::new();
    for _ in 0..4 {
        let mut c = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
        c.write_all(b"GET /_emulator/health HTTP/1.1\r\nHost: x\r\n\r\n")
            .await
            .unwrap();
        held.push(c);
    }
    let mut surplus = tokio::net::TcpStream::connect(emu.addr()).await.unwrap();
    let refused = read_until_closed(&mut surplus, Duration::from_secs(5))
        .await
        .expect("refused and closed");
    assert!(refused.starts_with("HTTP/1.1 503"), "{refused}");
    assert!(refused.contains("ServerBusy"), "{refused}");
    drop(held);
    // Their slots come back: a valid request is served again.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let reply = valid().await;
        if reply.status == 200 {
            break;
        }
        assert!(Instant::now() < deadline, "still refused: {}", reply.status);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn the_console_page_and_its_api_list_search_and_leave_the_counters_alone() {
    let emu = Emulator::start_default().unwrap();
    let client = client();
    let base = emu.endpoint();
    assert_eq!(
        put(
            &client,
            &emu,
            HOST,
            "app-logs",
            &sample_group(3),
            Compression::Lz4
        )
        .await
        .status,
        200
    );
    let requests = emu.counters().requests;
    // The page: unsigned GET / from a browser; not a service request.
    let page = client.get(format!("{base}/")).send().await.unwrap();
    assert_eq!(page.status(), 200);
    assert!(page.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/html"));
    let html = page.text().await.unwrap();
    assert!(html.contains("<title>loghose emulator</title>"));
    assert!(
        !html.contains("http://") && !html.contains("https://"),
        "the page loads nothing from the network"
    );
    let json = |path: String| {
        let client = client.clone();
        async move {
            let resp = client.get(path).send().await.unwrap();
            let status = resp.status().as_u16();
            (status, resp.json::<serde_json::Value>().await.unwrap())
        }
    };
    let (_, overview) = json(format!("{base}/_emulator/overview")).await;
    assert_eq!(overview["projects"][0]["name"], "proj");
    let ls = &overview["projects"][0]["logstores"][0];
    assert_eq!(
        (
            &ls["name"],
            &ls["logs"],
            &ls["indexed"],
            &ls["term_index_logs"]
        ),
        (
            &serde_json::json!("app-logs"),
            &serde_json::json!(3),
            &serde_json::json!(false),
            &serde_json::json!(0)
        )
    );
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let window = format!("from={}&to={}", now - 600, now + 60);
    let query = |q: &str| {
        format!(
            "{base}/_emulator/query?project=proj&logstore=app-logs&{window}&query={}",
            q.replace(' ', "%20")
        )
    };
    let (status, refused) = json(query("hello")).await;
    assert_eq!(
        (status, refused["errorCode"].as_str()),
        (400, Some("IndexConfigNotExist"))
    );
    let made = client
        .post(format!(
            "{base}/_emulator/index?project=proj&logstore=app-logs"
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(made.status(), 200);
    // Nothing is indexed until a search asks (ingest never does the index's work).
    let (_, overview) = json(format!("{base}/_emulator/overview")).await;
    assert_eq!(
        overview["projects"][0]["logstores"][0]["term_index_logs"],
        0
    );
    let (_, found) = json(query("hello and not nothing")).await;
    assert_eq!(
        (found["matched"].as_u64(), found["read"].as_u64()),
        (Some(3), Some(3))
    );
    assert_eq!(found["logs"][0]["msg"], "hello world");
    let (status, refused) = json(query("index: 1")).await;
    assert_eq!(
        (status, refused["errorCode"].as_str()),
        (400, Some("ParameterInvalid"))
    );
    let (_, overview) = json(format!("{base}/_emulator/overview")).await;
    let ls = &overview["projects"][0]["logstores"][0];
    assert_eq!(ls["indexed"], true);
    // The searches built the term index: its logs and its size are reported.
    assert_eq!(ls["term_index_logs"], 3);
    let bytes = ls["term_index_bytes"].as_u64().unwrap();
    assert!(bytes > 0 && bytes < 1 << 20, "{bytes}");
    assert_eq!(
        emu.counters().requests,
        requests,
        "the console is not the service's traffic"
    );
}
