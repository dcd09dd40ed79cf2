"""Wake-word detection behind one streaming interface.

A :class:`WakeLibrary` holds the loaded wake models (microWakeWord and
openWakeWord, both run by the TFLite runtime their wheels carry, plus custom
models dropped into a folder); each listener gets its own :class:`WakeStream`.
"""

from __future__ import annotations

from daemon.engines.wake.base import WakeHit, WakeModelInfo, WakeStream
from daemon.engines.wake.library import WakeLibrary, WakeModelSettings

__all__ = ["WakeHit", "WakeLibrary", "WakeModelInfo", "WakeModelSettings", "WakeStream"]
