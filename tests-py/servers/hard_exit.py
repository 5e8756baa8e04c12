"""Sends 10 000 records, held in the open batch (a 60 s linger), then ends with ``os._exit``,
which runs nothing: what the producer held is lost unless it has a spool
(``LOGHOSE_TEST_SPOOL``), from which the next producer on the directory sends it."""

import os

import loghose
import sink

producer = loghose.Producer(**sink.options(), linger_ms=60_000)
for i in range(10_000):
    producer.send({"message": f"record {i}"})
os._exit(0)
