"""What a server that captures signals before the application does (uvicorn's
``capture_signals``): SIGTERM is recorded, the application logs on, then the default is put
back and the signal raised again. 100 records before the signal and 100 after."""

import os
import signal

import sink

captured = []
signal.signal(signal.SIGTERM, lambda signum, frame: captured.append(signum))
log = sink.logger("captured", linger_ms=2000)
for i in range(100):
    log.info("before %d", i)
os.kill(os.getpid(), signal.SIGTERM)
for i in range(100):
    log.info("after %d", i)
signal.signal(signal.SIGTERM, signal.SIG_DFL)
for signum in captured:
    signal.raise_signal(signum)
