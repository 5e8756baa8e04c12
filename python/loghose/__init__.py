"""loghose: a fast, lossless log producer for Alibaba Cloud Log Service (SLS).

The engine is native (``loghose._native``); this package is its thin Python front. For now it
exposes the engine version; the producer, the asyncio front and the embedded emulator follow.
"""

from ._native import engine_version

__all__ = ["engine_version"]
