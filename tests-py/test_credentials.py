"""Credentials from Python: the standard environment variables, and providers (a callable, the
official SDK's `get_credentials()` objects, alibabacloud-credentials' `get_credential()`)
asked before every attempt, so an STS token rotated while a batch is retried is picked up."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import loghose
import pytest

pytestmark = pytest.mark.timeout(120)

OLD = {"id": "STS.old", "secret": "old-secret", "token": "old-token"}
NEW = {"id": "STS.new", "secret": "new-secret", "token": "new-token"}
ENV = ("ALIBABA_CLOUD_ACCESS_KEY_ID", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALIBABA_CLOUD_SECURITY_TOKEN")


@pytest.fixture()
def emu():
    with loghose.Emulator(sts_keys=[OLD]) as emulator:
        yield emulator


def place(emu, logstore="logs"):
    return {"endpoint": emu.endpoint, "project": "loghose", "logstore": logstore, "linger_ms": 10}


def stored(emu, logstore="logs"):
    return [dict(log["contents"]) for log in emu.logs("loghose", logstore)]


@pytest.fixture()
def clean_env(monkeypatch):
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


def test_the_environment_supplies_permanent_keys_when_none_are_given(emu, clean_env):
    clean_env.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", emu.access_key_id)
    clean_env.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", emu.access_key_secret)
    with loghose.Producer(**place(emu)) as p:
        assert p.send_future({"via": "env"}).result(timeout=30).delivered
    assert stored(emu) == [{"via": "env"}]


def test_the_environment_supplies_an_sts_key_with_its_token(emu, clean_env):
    for name, value in zip(ENV, (OLD["id"], OLD["secret"], OLD["token"]), strict=True):
        clean_env.setenv(name, value)
    with loghose.Producer(**place(emu)) as p:
        assert p.send_future({"via": "env-sts"}).result(timeout=30).delivered


def test_keys_given_win_over_the_environment(emu, clean_env):
    clean_env.setenv("ALIBABA_CLOUD_ACCESS_KEY_ID", "wrong")
    clean_env.setenv("ALIBABA_CLOUD_ACCESS_KEY_SECRET", "wrong")
    with loghose.Producer(**emu.producer_options(), linger_ms=10) as p:
        assert p.send_future({"via": "given"}).result(timeout=30).delivered


class SdkStyleProvider:
    """The shape of aliyun-log-python-sdk's providers: get_credentials() returning an object
    with get_access_key_id() / get_access_key_secret() / get_security_token()."""

    def __init__(self, key):
        self.key = key
        self.calls = 0
        self.rotate_at = None  # (call number, key): from that call on, hand out the new key
        self.lock = threading.Lock()

    def get_credentials(self):
        with self.lock:
            self.calls += 1
            if self.rotate_at is not None and self.calls >= self.rotate_at[0]:
                self.key = self.rotate_at[1]
            key = self.key
        return SimpleNamespace(get_access_key_id=lambda: key["id"], get_access_key_secret=lambda: key["secret"],
                               get_security_token=lambda: key["token"])


@pytest.mark.parametrize("shape", ["callable-tuple", "callable-dict", "get_credential-model", "sdk-provider"])
def test_each_provider_shape_signs_requests(emu, shape):
    providers = {
        "callable-tuple": lambda: (OLD["id"], OLD["secret"], OLD["token"]),
        "callable-dict": lambda: {"AccessKeyId": OLD["id"], "AccessKeySecret": OLD["secret"],
                                  "SecurityToken": OLD["token"]},
        "get_credential-model": SimpleNamespace(get_credential=lambda: SimpleNamespace(
            access_key_id=OLD["id"], access_key_secret=OLD["secret"], security_token=OLD["token"])),
        "sdk-provider": SdkStyleProvider(OLD),
    }
    with loghose.Producer(**place(emu), credentials_provider=providers[shape]) as p:
        assert p.send_future({"shape": shape}).result(timeout=30).delivered
    assert stored(emu) == [{"shape": shape}]


def test_a_token_rotated_while_a_batch_is_retried_is_picked_up(emu):
    provider = SdkStyleProvider(OLD)
    with loghose.Producer(**place(emu), credentials_provider=provider, backoff_base_ms=20) as p:
        assert p.send_future({"n": "before"}).result(timeout=30).attempts == 1
        # The service expires the old token; the provider still hands it out for one more
        # attempt (refused with 401), then the new one, which the retry must use.
        emu.replace_sts_keys([NEW])
        calls = provider.calls
        provider.rotate_at = (calls + 2, NEW)
        report = p.send_future({"n": "after"}).result(timeout=30)
        assert report.delivered
        assert report.attempts == 2
        assert provider.calls == calls + 2
    assert sorted(log["n"] for log in stored(emu)) == ["after", "before"]
    assert emu.counters()["rejected"].get("Unauthorized", 0) >= 1


def test_a_provider_that_raises_fails_the_batch_naming_its_error(emu):
    def broken():
        raise OSError("metadata service unreachable")

    with loghose.Producer(**place(emu), credentials_provider=broken, unauthorized_attempts=1,
                          backoff_base_ms=10) as p:
        with pytest.raises(loghose.DeliveryError) as raised:
            p.send_future({"n": "1"}).result(timeout=30)
    error = raised.value
    assert error.code == "CredentialsUnavailable"
    assert "metadata service unreachable" in error.message
    assert stored(emu) == []


@pytest.mark.parametrize("answer", [("only-id",), {"AccessKeyId": "id"}, 42, ("", "secret")])
def test_a_provider_answer_without_keys_fails_the_batch(emu, answer):
    with loghose.Producer(**place(emu), credentials_provider=lambda: answer, unauthorized_attempts=0,
                          backoff_base_ms=10) as p:
        with pytest.raises(loghose.DeliveryError, match="CredentialsUnavailable|provider"):
            p.send_future({"n": "1"}).result(timeout=30)


def test_something_that_is_no_provider_is_refused_at_once(emu):
    with pytest.raises(TypeError, match="credentials_provider must be a callable"):
        loghose.Producer(**place(emu), credentials_provider="not-a-provider")


def test_the_official_sdks_own_provider_class_is_accepted(emu):
    credentials = pytest.importorskip("aliyun.log.credentials")
    provider = credentials.StaticCredentialsProvider(OLD["id"], OLD["secret"], OLD["token"])
    with loghose.Producer(**place(emu), credentials_provider=provider) as p:
        assert p.send_future({"via": "sdk"}).result(timeout=30).delivered
    assert stored(emu) == [{"via": "sdk"}]
