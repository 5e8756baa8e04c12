"""A function's freeze survived: a child process plays a serverless handler (it sends, returns,
and the platform freezes the instance: SIGSTOP), stays stopped longer than the request timeout
and than the clock skew the service allows (the emulator allows 2 s here), and is thawed
(SIGCONT) for its next invocation. Nothing may be lost, no request may be refused for its date
(every request is signed when it is sent, not when its batch was made), and none may be retried
(no burst after the thaw): every request the emulator saw is one it accepted.

Both ways a handler ends: with the end-of-invocation flush (the recipe for functions:
everything went before the freeze, and not one request is refused or sent twice), and with
records still held (no flush: they go after the thaw). Without the flush, a request may be in
flight when the freeze comes (the test freezes again a few milliseconds after a thaw, as the
sends the thaw started begin): the service answers it while the sender is stopped, and the
sender must read that answer at the thaw, not time out and send the batch again (the request
timeout counts active time only). A freeze falling between a request's signature and its
first byte on the wire makes the service refuse that one request for its date; it is signed
again and delivered at once: at most one such refusal per freeze, nothing stored twice."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import loghose
import pytest

pytestmark = [
    pytest.mark.timeout(120),
    pytest.mark.skipif(not hasattr(signal, "SIGSTOP"), reason="freezes with SIGSTOP"),
]

HANDLER = """
    import sys, loghose
    endpoint, key_id, secret, ending = sys.argv[1:5]
    producer = loghose.Producer(endpoint=endpoint, project="proj", logstore="frozen", access_key_id=key_id,
                                access_key_secret=secret, linger_ms=500, request_timeout_ms=1000)

    def handler(invocation):
        for i in range(100):
            producer.send({"invocation": str(invocation), "i": str(i)})
        if ending == "flush":
            assert producer.flush(10) == 0  # before the platform freezes the instance
        return "done"

    for invocation in range(2):
        sys.stdin.readline()          # the next invocation
        print(handler(invocation), flush=True)
    sys.stdin.readline()
    assert producer.close(10) == 0
    print("closed", flush=True)
"""


@pytest.mark.parametrize("ending", ["flush", "no flush"])
def test_a_frozen_handler_loses_nothing_and_nothing_is_sent_twice(ending):
    with loghose.Emulator(max_clock_skew_secs=2) as emu:
        child = subprocess.Popen(
            [sys.executable, "-c", textwrap.dedent(HANDLER), emu.endpoint, emu.access_key_id,
             emu.access_key_secret, ending],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            for _ in range(2):
                child.stdin.write("invoke\n")
                child.stdin.flush()
                assert child.stdout.readline().strip() == "done"
                # The platform freezes the instance once the handler returned: for longer than
                # the request timeout (1 s) and than the allowed skew (2 s).
                os.kill(child.pid, signal.SIGSTOP)
                time.sleep(4)
                stored_while_frozen = len(emu.logs("proj", "frozen"))
                os.kill(child.pid, signal.SIGCONT)
            child.stdin.write("stop\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "closed"
            assert child.wait(timeout=30) == 0
        finally:
            if child.poll() is None:
                os.kill(child.pid, signal.SIGCONT)
                child.kill()
                child.wait()
        logs = [dict(log["contents"]) for log in emu.logs("proj", "frozen")]
        counters = emu.counters()
    assert sorted((int(f["invocation"]), int(f["i"])) for f in logs) == [(n, i) for n in range(2) for i in range(100)]
    assert counters["duplicate_groups"] == 0, counters
    if ending == "flush":
        assert counters["rejected"] == {}, counters
        assert counters["requests"] == counters["accepted_requests"], counters
        # Each invocation's records went before its freeze.
        assert stored_while_frozen == 200
    else:
        refused = counters["rejected"].get("RequestTimeExpired", 0)
        assert set(counters["rejected"]) <= {"RequestTimeExpired"} and refused <= 2, counters
        assert counters["requests"] == counters["accepted_requests"] + refused, counters
