"""The default credential chain from Python: a producer given no keys finds them the way the
vendor's SDKs do (here: an OIDC role through the emulator's STS, the ECS metadata service, the
profile file), keeps sending while short-lived keys are replaced, and with no source at all
fails in its constructor naming each one. The engine reads the real process environment, which
monkeypatch changes."""

from __future__ import annotations

import socket
import time

import loghose
import pytest

pytestmark = pytest.mark.timeout(120)

CHAIN_VARS = (
    "ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN",
    "ALIBABA_CLOUD_ROLE_ARN", "ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "ALIBABA_CLOUD_OIDC_TOKEN_FILE",
    "ALIBABA_CLOUD_ROLE_SESSION_NAME", "ALIBABA_CLOUD_PROFILE", "ALIBABA_CLOUD_CREDENTIALS_FILE",
    "ALIBABA_CLOUD_CLI_PROFILE_DISABLED", "ALIBABA_CLOUD_ECS_METADATA", "ALIBABA_CLOUD_ECS_METADATA_DISABLED",
    "ALIBABA_CLOUD_IMDSV1_DISABLED", "ALIBABA_CLOUD_CREDENTIALS_URI", "LOGHOSE_STS_ENDPOINT",
    "LOGHOSE_ECS_METADATA_ENDPOINT",
)


@pytest.fixture()
def env(monkeypatch, tmp_path):
    """No chain variable from outside, and a home of the test's own."""
    for name in CHAIN_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return monkeypatch


def place(emu, logstore="chain"):
    return {"endpoint": emu.endpoint, "project": "loghose", "logstore": logstore, "linger_ms": 20}


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_oidc_role_from_the_environment_signs_the_sends(env, tmp_path):
    token = tmp_path / "token"
    token.write_text("eyJhbGciOiJSUzI1NiJ9.payload.signature")
    with loghose.Emulator() as emu:
        env.setenv("ALIBABA_CLOUD_ROLE_ARN", "acs:ram::1234:role/logger")
        env.setenv("ALIBABA_CLOUD_OIDC_PROVIDER_ARN", "acs:ram::1234:oidc-provider/ack-rrsa")
        env.setenv("ALIBABA_CLOUD_OIDC_TOKEN_FILE", str(token))
        env.setenv("LOGHOSE_STS_ENDPOINT", emu.endpoint)
        with loghose.Producer(**place(emu)) as p:
            assert p.send_future({"via": "oidc"}).result(timeout=30).delivered
        assert [dict(log["contents"]) for log in emu.logs("loghose", "chain")] == [{"via": "oidc"}]
        assert emu.counters()["credentials_issued"] == 1


def test_the_metadata_service_role_keeps_sending_while_its_keys_expire(env):
    with loghose.Emulator(credentials_lifetime_secs=6) as emu:
        env.setenv("LOGHOSE_ECS_METADATA_ENDPOINT", emu.endpoint)
        sent = 0
        with loghose.Producer(**place(emu)) as p:
            assert emu.counters()["credentials_issued"] == 1, "asked in the constructor"
            deadline = time.monotonic() + 14
            while time.monotonic() < deadline:
                p.send({"n": str(sent)})
                sent += 1
                time.sleep(0.02)
        counters = emu.counters()
        assert counters["logs"] == sent and counters["rejected"] == {}, counters
        assert counters["credentials_issued"] >= 4, counters


def test_the_profile_file_gives_keys(env, tmp_path):
    with loghose.Emulator() as emu:
        (tmp_path / ".alibabacloud").mkdir()
        (tmp_path / ".alibabacloud" / "credentials.ini").write_text(
            f"[default]\ntype = access_key\naccess_key_id = {emu.access_key_id}\n"
            f"access_key_secret = {emu.access_key_secret}\n")
        with loghose.Producer(**place(emu)) as p:
            assert p.send_future({"via": "ini"}).result(timeout=30).delivered
        assert emu.counters()["credentials_issued"] == 0


def test_no_source_at_all_is_a_config_error_naming_each(env, tmp_path):
    env.setenv("LOGHOSE_ECS_METADATA_ENDPOINT", f"http://127.0.0.1:{closed_port()}")
    with loghose.Emulator() as emu, pytest.raises(loghose.ConfigError) as error:
        loghose.Producer(**place(emu))
    message = str(error.value)
    for needle in ("ALIBABA_CLOUD_ACCESS_KEY_ID", "OIDC role", f"{tmp_path}/.aliyun/config.json does not exist",
                   "credentials.ini does not exist", "ECS instance role: the ECS metadata service",
                   "ALIBABA_CLOUD_CREDENTIALS_URI is not set"):
        assert needle in message, message
