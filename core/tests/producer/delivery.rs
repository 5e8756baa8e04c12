//! Delivery through faults: server errors, quota, resets and hangs retried; final errors
//! reported once; attempts and the deadline; rotated credentials; clock skew; the server gone
//! and back; v4 and bearer signing; HTTPS with an extra CA; a fixed remote address.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use loghose::emulator::{Emulator, EmulatorConfig, Fault, FaultAction, StsKey};
use loghose::producer::{
    CredentialsProvider, DeliveryReport, Outcome, Producer, ProducerConfig, ProducerError,
    SendOptions, SignatureVersion,
};
use loghose::wire::sign::Credentials;

use super::common::producer::{config, ids, WAIT};

fn deliver_one(emu: &Emulator, cfg: ProducerConfig) -> Arc<DeliveryReport> {
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        ..cfg
    })
    .unwrap();
    p.send_with_completion(&[("id", "x")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap_or_else(|e| panic!("{e}; stats {:?} counters {:?}", p.stats(), emu.counters()))
}

#[test]
fn server_errors_and_quota_are_retried_until_delivered() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::error(503, "ServerBusy", 2));
    emu.inject(Fault::error(500, "InternalServerError", 1));
    emu.inject(Fault::error(403, "WriteQuotaExceed", 2));
    let report = deliver_one(&emu, config(&emu));
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(report.attempts, 6);
    assert_eq!(emu.totals("proj", "store").unwrap().logs, 1);
}

#[test]
fn resets_and_hangs_past_the_request_timeout_are_retried() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::times(FaultAction::Reset, 2));
    emu.inject(Fault::times(FaultAction::Hang { ms: Some(10_000) }, 1));
    let started = Instant::now();
    let report = deliver_one(
        &emu,
        ProducerConfig {
            request_timeout_ms: 1000,
            ..config(&emu)
        },
    );
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(report.attempts, 4);
    assert!(started.elapsed() < Duration::from_secs(8));
}

#[test]
fn final_errors_are_reported_once_and_not_retried() {
    let emu = Emulator::start(EmulatorConfig {
        auto_create: false,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let report = deliver_one(&emu, config(&emu));
    assert_eq!(
        (report.error_code(), report.attempts),
        (Some("ProjectNotExist"), 1)
    );
    assert!(matches!(
        report.outcome,
        Outcome::Failed {
            http_status: Some(404),
            ..
        }
    ));
    emu.create_logstore("proj", "store", None).unwrap();
    emu.inject(Fault::error(400, "ParameterInvalid", 1));
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        ..config(&emu)
    })
    .unwrap();
    let report = p
        .send_with_completion(&[("id", "x")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert_eq!(
        (report.error_code(), report.attempts),
        (Some("ParameterInvalid"), 1)
    );
    let stats = p.stats();
    assert_eq!((stats.failed, stats.retried), (1, 0));
    assert_eq!(stats.failures_by_code.get("ParameterInvalid"), Some(&1));
    assert_eq!(
        emu.counters().put_requests,
        2,
        "each final error was one request"
    );
}

#[test]
fn attempts_and_the_delivery_deadline_bound_retries() {
    let emu = Emulator::start_default().unwrap();
    emu.inject(Fault::during(
        FaultAction::Error {
            status: 503,
            code: "ServerBusy".into(),
            message: None,
        },
        Duration::from_secs(30),
    ));
    let report = deliver_one(
        &emu,
        ProducerConfig {
            max_attempts: 3,
            ..config(&emu)
        },
    );
    assert_eq!(
        (report.error_code(), report.attempts),
        (Some("ServerBusy"), 3)
    );
    let started = Instant::now();
    let report = deliver_one(
        &emu,
        ProducerConfig {
            delivery_timeout_ms: 300,
            max_attempts: 1000,
            ..config(&emu)
        },
    );
    assert_eq!(report.error_code(), Some("DeliveryTimeout"));
    assert!(started.elapsed() < Duration::from_secs(3));
}

struct Rotating {
    calls: AtomicU32,
    good_after: u32,
    good: Credentials,
}

impl CredentialsProvider for Rotating {
    fn credentials(&self) -> Result<Credentials, String> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        if n < self.good_after {
            Ok(Credentials::sts("STS.old", "expired-secret", "old-token"))
        } else {
            Ok(self.good.clone())
        }
    }
}

#[test]
fn unauthorized_is_retried_briefly_with_rotated_credentials() {
    let emu = Emulator::start(EmulatorConfig {
        sts_keys: vec![StsKey {
            id: "STS.new".into(),
            secret: "new-secret".into(),
            token: "new-token".into(),
        }],
        ..EmulatorConfig::default()
    })
    .unwrap();
    let provider = Arc::new(Rotating {
        calls: AtomicU32::new(0),
        good_after: 2,
        good: Credentials::sts("STS.new", "new-secret", "new-token"),
    });
    let cfg = ProducerConfig {
        access_key_id: String::new(),
        access_key_secret: String::new(),
        linger_ms: 0,
        ..config(&emu)
    };
    let p = Producer::with_credentials_provider(cfg.clone(), provider.clone()).unwrap();
    // The configuration is kept as given: no keys stand in for the provider's.
    assert_eq!(
        (
            p.config().access_key_id.as_str(),
            p.config().access_key_secret.as_str()
        ),
        ("", "")
    );
    let report = p
        .send_with_completion(&[("id", "1")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(report.attempts, 3);
    assert_eq!(
        provider.calls.load(Ordering::SeqCst),
        3,
        "credentials are read before every attempt"
    );

    // Never rotating: gives up after unauthorized_attempts extra tries.
    let stuck = Arc::new(Rotating {
        calls: AtomicU32::new(0),
        good_after: u32::MAX,
        good: Credentials::new("x", "y"),
    });
    let p = Producer::with_credentials_provider(
        ProducerConfig {
            unauthorized_attempts: 2,
            ..cfg
        },
        stuck,
    )
    .unwrap();
    let report = p
        .send_with_completion(&[("id", "2")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert_eq!(
        (report.error_code(), report.attempts),
        (Some("Unauthorized"), 3)
    );
}

#[test]
fn request_time_expired_is_resigned_with_the_servers_clock() {
    // The server's clock runs an hour ahead of ours.
    let emu = Emulator::start(EmulatorConfig {
        clock_offset_secs: 3600,
        ..EmulatorConfig::default()
    })
    .unwrap();
    let p = Producer::new(ProducerConfig {
        linger_ms: 0,
        ..config(&emu)
    })
    .unwrap();
    let report = p
        .send_with_completion(&[("id", "1")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(report.attempts, 2);
    let report = p
        .send_with_completion(&[("id", "2")], &SendOptions::default())
        .unwrap()
        .wait(WAIT)
        .unwrap();
    assert_eq!(report.attempts, 1, "the corrected offset is kept");
    assert_eq!(emu.counters().rejected.get("RequestTimeExpired"), Some(&1));
}

#[test]
fn the_server_gone_for_seconds_and_back_loses_nothing() {
    let first = Emulator::start_default().unwrap();
    let port = first.addr().port();
    let cfg = ProducerConfig {
        linger_ms: 20,
        backoff_max_ms: 500,
        connect_timeout_ms: 500,
        max_attempts: 1000,
        ..config(&first)
    };
    first.shutdown();
    let p = Producer::new(cfg).unwrap();
    for i in 0..500 {
        p.send(&[("id", i.to_string())], &SendOptions::default())
            .unwrap();
    }
    std::thread::sleep(Duration::from_secs(5));
    assert_eq!(p.stats().delivered, 0);
    assert!(p.stats().retried > 0);
    let back = Emulator::start(EmulatorConfig {
        port,
        ..EmulatorConfig::default()
    })
    .unwrap();
    assert_eq!(p.flush(WAIT), 0);
    assert_eq!(p.stats().failed, 0);
    let mut got = ids(&back, "store");
    got.sort_unstable();
    assert_eq!(got, (0..500).collect::<Vec<u64>>());
}

#[test]
fn v4_and_bearer_producers_deliver() {
    let emu = Emulator::start(EmulatorConfig {
        api_keys: vec!["key-1".into()],
        ..EmulatorConfig::default()
    })
    .unwrap();
    let v4 = deliver_one(
        &emu,
        ProducerConfig {
            signature_version: SignatureVersion::V4,
            region: Some("cn-hangzhou".into()),
            ..config(&emu)
        },
    );
    assert!(v4.is_delivered(), "{v4:?}");
    let bearer = deliver_one(
        &emu,
        ProducerConfig {
            api_key: Some("key-1".into()),
            access_key_id: String::new(),
            access_key_secret: String::new(),
            ..config(&emu)
        },
    );
    assert!(bearer.is_delivered(), "{bearer:?}");
    for codec in ["zstd", "deflate", "none"] {
        let c = loghose::wire::compress::Compression::from_name(codec).unwrap();
        assert!(
            deliver_one(
                &emu,
                ProducerConfig {
                    compression: c,
                    ..config(&emu)
                }
            )
            .is_delivered(),
            "{codec}"
        );
    }
    assert_eq!(emu.totals("proj", "store").unwrap().logs, 5);
}

#[test]
fn https_works_with_the_extra_ca_and_is_refused_without_it() {
    use loghose::emulator::EmulatorTls;
    // A CA and a server certificate for 127.0.0.1, made for this test.
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "loghose test CA");
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_params =
        rcgen::CertificateParams::new(vec!["127.0.0.1".to_string(), "localhost".to_string()])
            .unwrap();
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = server_params.signed_by(&server_key, &ca, &ca_key).unwrap();
    let tls = EmulatorTls {
        cert_pem: server.pem(),
        key_pem: server_key.serialize_pem(),
    };
    let emu = Emulator::start(EmulatorConfig {
        tls: Some(tls),
        ..EmulatorConfig::default()
    })
    .unwrap();
    assert!(emu.endpoint().starts_with("https://127.0.0.1:"));
    let dir = std::env::temp_dir().join(format!("loghose-ca-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ca_file = dir.join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();

    let trusted = deliver_one(
        &emu,
        ProducerConfig {
            ca_file: Some(ca_file.to_string_lossy().into()),
            ..config(&emu)
        },
    );
    assert!(trusted.is_delivered(), "{trusted:?}");
    assert_eq!(emu.totals("proj", "store").unwrap().logs, 1);

    let untrusted = deliver_one(
        &emu,
        ProducerConfig {
            max_attempts: 2,
            ..config(&emu)
        },
    );
    assert_eq!(
        untrusted.error_code(),
        Some("RequestError"),
        "{untrusted:?}"
    );
    assert_eq!(
        emu.totals("proj", "store").unwrap().logs,
        1,
        "nothing went through without the CA"
    );
    assert!(matches!(
        Producer::new(ProducerConfig {
            ca_file: Some("/nonexistent/ca.pem".into()),
            ..config(&emu)
        }),
        Err(ProducerError::CaFile { .. })
    ));
    // A file with no certificate, or a certificate that is not one, is the constructor's
    // error even though the client is otherwise built at the first send.
    let empty = dir.join("empty.pem");
    std::fs::write(&empty, "not a certificate\n").unwrap();
    let garbage = dir.join("garbage.pem");
    std::fs::write(
        &garbage,
        "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n",
    )
    .unwrap();
    for bad in [&empty, &garbage] {
        let err = Producer::new(ProducerConfig {
            ca_file: Some(bad.to_string_lossy().into()),
            ..config(&emu)
        })
        .err()
        .unwrap_or_else(|| panic!("{} was accepted", bad.display()));
        assert!(matches!(err, ProducerError::Tls(_)), "{err:?}");
    }
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn remote_address_connects_to_a_fixed_ip_under_the_real_host_name() {
    let emu = Emulator::start_default().unwrap();
    let port = emu.addr().port();
    let cfg = ProducerConfig {
        endpoint: format!("http://cn-nowhere.log.example.invalid:{port}"),
        remote_address: Some(emu.addr()),
        ..config(&emu)
    };
    let report = deliver_one(&emu, cfg);
    assert!(report.is_delivered(), "{report:?}");
    assert_eq!(
        emu.totals("proj", "store").unwrap().logs,
        1,
        "the project came from the Host name"
    );
}
