//! The default credential chain end to end: the `loghose` command, run with no keys and a clean
//! environment of its own, finds them in each source of the chain in turn (an OIDC role through
//! the emulator's STS, the CLI's config.json, the profile file, the ECS metadata service, a
//! credentials URI), keeps sending with 0 lost while short-lived keys expire and are replaced,
//! and fails in its constructor, naming every source, when there are none.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use loghose::emulator::{Emulator, EmulatorConfig, ECS_ROLE_NAME};

const BIN: &str = env!("CARGO_BIN_EXE_loghose");

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "loghose-chain-{name}-{}-{}",
        std::process::id(),
        fastrand::u32(..)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `loghose <command>` toward `emu` without keys, with only HOME and PATH from outside.
fn loghose(home: &Path, emu: &Emulator, command: &str, logstore: &str) -> Command {
    let mut cmd = Command::new(BIN);
    cmd.env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .args([
            command,
            "--endpoint",
            &emu.endpoint(),
            "--project",
            "proj",
            "--logstore",
            logstore,
        ]);
    cmd
}

fn bounded(mut child: Child, limit: Duration) -> Output {
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if started.elapsed() > limit {
            let _ = child.kill();
            panic!("the command did not end within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn run(mut cmd: Command) -> Output {
    let child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    bounded(child, Duration::from_secs(60))
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Sends one record by `cmd` (a `send` command) and checks it arrived.
fn sends(emu: &Emulator, mut cmd: Command, logstore: &str, via: &str) {
    cmd.arg(format!("via={via}"));
    let out = run(cmd);
    assert!(out.status.success(), "{via}: {}", stderr(&out));
    let logs = emu.logs("proj", logstore);
    assert!(
        logs.iter().any(|l| l.get("via") == Some(via)),
        "{via}: not stored"
    );
}

fn oidc_env(cmd: &mut Command, emu: &Emulator, token_file: &Path) {
    cmd.env("ALIBABA_CLOUD_ROLE_ARN", "acs:ram::1234:role/logger")
        .env(
            "ALIBABA_CLOUD_OIDC_PROVIDER_ARN",
            "acs:ram::1234:oidc-provider/ack-rrsa",
        )
        .env("ALIBABA_CLOUD_OIDC_TOKEN_FILE", token_file)
        .env("LOGHOSE_STS_ENDPOINT", emu.endpoint());
}

#[test]
fn an_oidc_role_is_assumed_through_sts_and_its_keys_sign_the_sends() {
    let emu = Emulator::start_default().unwrap();
    let home = temp_dir("oidc");
    let token = home.join("token");
    std::fs::write(&token, "eyJhbGciOiJSUzI1NiJ9.payload.signature\n").unwrap();
    let mut cmd = loghose(&home, &emu, "send", "oidc");
    oidc_env(&mut cmd, &emu, &token);
    sends(&emu, cmd, "oidc", "oidc");
    let counters = emu.counters();
    assert_eq!(counters.credentials_issued, 1);
    assert_eq!(
        counters.put_requests, 1,
        "STS is not counted as the Log Service"
    );

    // An empty token file is named in the error, with every other source.
    std::fs::write(&token, "").unwrap();
    let mut cmd = loghose(&home, &emu, "send", "oidc");
    oidc_env(&mut cmd, &emu, &token);
    cmd.args(["--option", "delivery_timeout_ms=2000", "k=v"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("OIDC role") && err.contains("is empty"),
        "{err}"
    );

    // STS unreachable: the error names it, and never the token (sent in the query string).
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_endpoint = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    std::fs::write(&token, "secret-oidc-token-text").unwrap();
    let mut cmd = loghose(&home, &emu, "send", "oidc");
    oidc_env(&mut cmd, &emu, &token);
    cmd.env("LOGHOSE_STS_ENDPOINT", &closed_endpoint).args([
        "--option",
        "delivery_timeout_ms=2000",
        "k=v",
    ]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains(&format!("STS at {closed_endpoint}")), "{err}");
    assert!(
        !err.contains("secret-oidc-token-text"),
        "the token in an error: {err}"
    );
}

#[test]
fn the_cli_profile_and_the_profile_file_are_read_by_mode_and_type() {
    let emu = Emulator::start_default().unwrap();
    let key = emu.credentials().unwrap();
    let home = temp_dir("profiles");
    let token = home.join("token");
    std::fs::write(&token, "oidc-token").unwrap();
    std::fs::create_dir_all(home.join(".aliyun")).unwrap();
    let config = serde_json::json!({
        "current": "ak",
        "profiles": [
            {"name": "ak", "mode": "AK", "access_key_id": key.access_key_id,
             "access_key_secret": key.access_key_secret},
            {"name": "oidc", "mode": "OIDC", "ram_role_arn": "acs:ram::1:role/r",
             "oidc_provider_arn": "acs:ram::1:oidc-provider/p",
             "oidc_token_file": token.display().to_string()},
            {"name": "sso", "mode": "CloudSSO"},
            {"name": "ram", "mode": "RamRoleArn", "access_key_id": key.access_key_id,
             "access_key_secret": key.access_key_secret, "ram_role_arn": "acs:ram::1:role/r",
             "ram_session_name": "deploy", "expired_seconds": 900},
            {"name": "ram-wrong", "mode": "RamRoleArn", "access_key_id": key.access_key_id,
             "access_key_secret": "not-the-secret", "ram_role_arn": "acs:ram::1:role/r"},
        ]
    });
    let config_path = home.join(".aliyun/config.json");
    std::fs::write(&config_path, config.to_string()).unwrap();
    sends(&emu, loghose(&home, &emu, "send", "cli"), "cli", "cli-ak");
    let mut cmd = loghose(&home, &emu, "send", "cli");
    cmd.env("ALIBABA_CLOUD_PROFILE", "oidc")
        .env("LOGHOSE_STS_ENDPOINT", emu.endpoint());
    sends(&emu, cmd, "cli", "cli-oidc");
    assert_eq!(emu.counters().credentials_issued, 1);
    // A RAM role taken with the profile's key: AssumeRole, signed with it.
    let mut cmd = loghose(&home, &emu, "send", "cli");
    cmd.env("ALIBABA_CLOUD_PROFILE", "ram")
        .env("LOGHOSE_STS_ENDPOINT", emu.endpoint());
    sends(&emu, cmd, "cli", "cli-ram");
    assert_eq!(emu.counters().credentials_issued, 2);
    let mut cmd = loghose(&home, &emu, "send", "cli");
    cmd.env("ALIBABA_CLOUD_PROFILE", "ram-wrong")
        .env("LOGHOSE_STS_ENDPOINT", emu.endpoint())
        .env("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
        .args(["--option", "delivery_timeout_ms=1500", "k=v"]);
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("CLI profile: STS at") && err.contains("SignatureDoesNotMatch"),
        "{err}"
    );
    assert!(
        !err.contains("not-the-secret"),
        "a secret in an error: {err}"
    );

    // The CLI's file turned off (or its profile unusable), the profile file is next.
    std::fs::create_dir_all(home.join(".alibabacloud")).unwrap();
    std::fs::write(
        home.join(".alibabacloud/credentials.ini"),
        format!(
            "[default]\ntype = access_key\naccess_key_id = {}\naccess_key_secret = {}\n\n\
             [sso]\ntype = ecs_ram_role\nrole_name = {ECS_ROLE_NAME}\n",
            key.access_key_id, key.access_key_secret
        ),
    )
    .unwrap();
    let mut cmd = loghose(&home, &emu, "send", "ini");
    cmd.env("ALIBABA_CLOUD_CLI_PROFILE_DISABLED", "true");
    sends(&emu, cmd, "ini", "ini-ak");
    // Profile "sso" is CloudSSO in config.json (not supported: skipped, said why) and an ECS
    // role in the ini file, served by the emulator's metadata service.
    let mut cmd = loghose(&home, &emu, "send", "ini");
    cmd.env("ALIBABA_CLOUD_PROFILE", "sso")
        .env("LOGHOSE_ECS_METADATA_ENDPOINT", emu.endpoint());
    sends(&emu, cmd, "ini", "ini-ecs");
    assert_eq!(emu.counters().credentials_issued, 3);
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn the_ecs_metadata_service_and_a_credentials_uri_give_keys() {
    let emu = Emulator::start_default().unwrap();
    let home = temp_dir("ecs");
    let mut cmd = loghose(&home, &emu, "send", "ecs");
    cmd.env("LOGHOSE_ECS_METADATA_ENDPOINT", emu.endpoint())
        .env("ALIBABA_CLOUD_IMDSV1_DISABLED", "true");
    sends(&emu, cmd, "ecs", "ecs");
    let mut cmd = loghose(&home, &emu, "send", "ecs");
    cmd.env("LOGHOSE_ECS_METADATA_ENDPOINT", emu.endpoint())
        .env("ALIBABA_CLOUD_ECS_METADATA", ECS_ROLE_NAME);
    sends(&emu, cmd, "ecs", "ecs-named-role");
    let mut cmd = loghose(&home, &emu, "send", "ecs");
    cmd.env("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true").env(
        "ALIBABA_CLOUD_CREDENTIALS_URI",
        format!(
            "{}/latest/meta-data/ram/security-credentials/{ECS_ROLE_NAME}",
            emu.endpoint()
        ),
    );
    sends(&emu, cmd, "ecs", "uri");
    assert_eq!(emu.counters().credentials_issued, 3);
    assert_eq!(emu.counters().requests, 3);
    std::fs::remove_dir_all(&home).unwrap();
}

#[test]
fn no_source_giving_keys_fails_the_constructor_naming_each_source() {
    let emu = Emulator::start_default().unwrap();
    let home = temp_dir("none");
    // The metadata service is the only hope, and nothing listens where it is said to be.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let closed_port = closed.local_addr().unwrap().port();
    drop(closed);
    let mut cmd = loghose(&home, &emu, "send", "none");
    cmd.env(
        "LOGHOSE_ECS_METADATA_ENDPOINT",
        format!("http://127.0.0.1:{closed_port}"),
    )
    .arg("k=v");
    let started = Instant::now();
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    for needle in [
        "ALIBABA_CLOUD_ACCESS_KEY_ID",
        "OIDC role: ALIBABA_CLOUD_ROLE_ARN",
        "CLI profile: ",
        ".aliyun/config.json does not exist",
        ".alibabacloud/credentials.ini does not exist",
        "ECS instance role: the ECS metadata service at http://127.0.0.1:",
        "credentials URI: ALIBABA_CLOUD_CREDENTIALS_URI is not set",
    ] {
        assert!(err.contains(needle), "{needle:?} in {err}");
    }
    assert!(started.elapsed() < Duration::from_secs(10));
    // In the chain's order.
    let at = |name: &str| err.find(name).unwrap_or(usize::MAX);
    let order = [
        "environment: ",
        "OIDC role: ",
        "CLI profile: ",
        "profile file: ",
        "ECS instance role: ",
        "credentials URI: ",
    ]
    .map(at);
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?} in {err}");

    // Nothing possible at all: said at once, without asking anything.
    let mut cmd = loghose(&home, &emu, "send", "none");
    cmd.env("ALIBABA_CLOUD_ECS_METADATA_DISABLED", "true")
        .env("ALIBABA_CLOUD_CLI_PROFILE_DISABLED", "true")
        .env("ALIBABA_CLOUD_CREDENTIALS_FILE", home.join("missing.ini"))
        .arg("k=v");
    let out = run(cmd);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(
        err.contains("ALIBABA_CLOUD_ECS_METADATA_DISABLED is true")
            && err.contains("missing.ini does not exist"),
        "{err}"
    );
    assert_eq!(emu.counters().requests, 0);
    std::fs::remove_dir_all(&home).unwrap();
}

/// Keys that live 12 s (refreshed from 6 s, not used after 10.8 s) over a 26 s stream of
/// records: every record arrives, none is refused for an expired token, and the keys were
/// replaced at least twice without a send waiting for it.
#[test]
fn keys_expiring_in_the_middle_of_a_stream_are_replaced_with_nothing_lost() {
    let emu = Emulator::start(EmulatorConfig {
        credentials_lifetime_secs: 12,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let home = temp_dir("expiry");
    let token = home.join("token");
    std::fs::write(&token, "oidc-token").unwrap();
    let mut cmd = loghose(&home, &emu, "pipe", "stream");
    oidc_env(&mut cmd, &emu, &token);
    cmd.args(["--option", "linger_ms=100"]);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let count = 520;
    for i in 0..count {
        writeln!(stdin, "line {i}").unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let out = bounded(child, Duration::from_secs(60));
    assert!(out.status.success(), "{}", stderr(&out));
    let logs = emu.logs("proj", "stream");
    let mut lines: Vec<_> = logs.iter().filter_map(|l| l.get("content")).collect();
    lines.sort_unstable();
    lines.dedup();
    assert_eq!(lines.len(), count, "records lost");
    let counters = emu.counters();
    assert!(
        counters.credentials_issued >= 3,
        "{} keys issued over 26 s of 12 s keys",
        counters.credentials_issued
    );
    assert!(
        counters.rejected.is_empty(),
        "refused: {:?}",
        counters.rejected
    );
    std::fs::remove_dir_all(&home).unwrap();
}

/// STS failing when the keys are due for a refresh: the keys in hand go on signing, the
/// refresh is tried again before they run out, and nothing is refused or lost.
#[test]
fn sts_failing_at_refresh_time_is_retried_while_the_keys_in_hand_last() {
    let emu = Emulator::start(EmulatorConfig {
        credentials_lifetime_secs: 12,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let home = temp_dir("sts-down");
    let token = home.join("token");
    std::fs::write(&token, "oidc-token").unwrap();
    let mut cmd = loghose(&home, &emu, "pipe", "sts-down");
    oidc_env(&mut cmd, &emu, &token);
    cmd.args(["--option", "linger_ms=100"]);
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let started = Instant::now();
    let mut injected = false;
    let mut count = 0;
    while started.elapsed() < Duration::from_secs(14) {
        if !injected && started.elapsed() > Duration::from_secs(5) {
            // From 5 s to 7.5 s: the refresh due at 6 s fails; keys last to 10.8 s.
            emu.inject(loghose::emulator::Fault {
                credentials: true,
                ..loghose::emulator::Fault::during(
                    loghose::emulator::FaultAction::Error {
                        status: 503,
                        code: "ServiceUnavailable".into(),
                        message: None,
                    },
                    Duration::from_millis(2500),
                )
            });
            injected = true;
        }
        writeln!(stdin, "line {count}").unwrap();
        count += 1;
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let out = bounded(child, Duration::from_secs(60));
    assert!(out.status.success(), "{}", stderr(&out));
    let counters = emu.counters();
    assert_eq!(counters.logs, count, "{counters:?}");
    assert!(
        counters.faults_injected >= 1,
        "the refresh met the failing STS"
    );
    assert!(counters.credentials_issued >= 2, "{counters:?}");
    assert!(
        !counters.rejected.contains_key("Unauthorized"),
        "{counters:?}"
    );
    std::fs::remove_dir_all(&home).unwrap();
}
