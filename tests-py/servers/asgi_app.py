"""A bare ASGI application for uvicorn: the handler is added at import (after uvicorn has
captured the signals); each request logs when it starts and, a second later, when it ends;
the lifespan logs once at startup and 100 times at shutdown."""

import asyncio
import os

import sink

log = sink.logger("asgi", close_timeout=20)


async def app(scope, receive, send):
    if scope["type"] == "lifespan":
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                log.info("startup %d", os.getpid())
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                for i in range(100):
                    log.info("shutdown %d %d", os.getpid(), i)
                await send({"type": "lifespan.shutdown.complete"})
                return
    log.info("request start")
    await asyncio.sleep(1.0)
    log.info("request end")
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"ok"})
