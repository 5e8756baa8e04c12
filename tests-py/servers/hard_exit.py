"""Sends 10 000 records, held in the open batch (a 60 s linger), then ends with ``os._exit``,
which runs nothing: what the producer held is lost unless it has a spool
(``LOGHOSE_TEST_SPOOL``), from which the next producer on the directory sends it."""

import os
import time

import loghose
import sink

producer = loghose.Producer(**sink.options(), linger_ms=60_000)
for i in range(10_000):
    producer.send({"message": f"record {i}"})
# The full batches go as they fill; one delivered (within a bound, for a loaded machine) before
# the exit, so that what the exit loses is the open batch and what was still on its way.
deadline = time.monotonic() + 30
while producer.stats()["batches_delivered"] == 0 and time.monotonic() < deadline:
    time.sleep(0.01)
os._exit(0)
