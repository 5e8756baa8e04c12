"""Plain exit with 1 000 records pending while the service answers slowly. The global default
(``loghose.EXIT_TIMEOUT``) is set to one second here; ``handler`` logs through a handler whose
``close_timeout`` is ``LOGHOSE_TEST_CLOSE_TIMEOUT``, which the exit must wait for instead;
``producer`` sends through a bare producer, which gets the default.

    python slow_exit.py <handler|producer>
"""

import os
import sys

import loghose
import sink

loghose.EXIT_TIMEOUT = 1.0
if sys.argv[1] == "handler":
    log = sink.logger("slow", close_timeout=float(os.environ["LOGHOSE_TEST_CLOSE_TIMEOUT"]))
    for i in range(1000):
        log.info("record %d", i)
else:
    producer = loghose.Producer(**sink.options())
    for i in range(1000):
        producer.send({"message": f"record {i}"})
