"""The wake models a daemon offers: built-in ones from the wheels, and custom files.

Custom models live in one folder (``wake.dir``, default ``<state>/wake``): a
``NAME.json`` beside its ``.tflite``, in microWakeWord's published format
(``{"type": "micro", "wake_word", "model", "trained_languages", "micro":
{"probability_cutoff", "sliding_window_size"}}``) or the same with ``"type":
"openwakeword"``. The folder is looked at again before each ``describe`` and each
detection run, so a model dropped there appears without a restart; a file that is
not a model is refused with the reason (kept in :attr:`WakeLibrary.refused`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from daemon.engines.wake.backends import (
    MicroDetector,
    OpenWakeWordDetector,
    check_tflite,
    probe_tflite,
    silence_check,
    tflite_library,
)
from daemon.engines.wake.base import Detector, WakeModelInfo, WakeStream
from daemon.errors import Busy, UnknownModel

_LOGGER = logging.getLogger(__name__)

MICRO_BUILTIN = ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa")
OWW_BUILTIN = ("okay_nabu", "hey_jarvis", "hey_mycroft", "alexa", "hey_rhasspy")
OWW_DEFAULT_CUTOFF = 0.5
MAX_CUSTOM_MODELS = 64
"""Custom model files looked at in the folder; more are refused."""
MAX_MODEL_BYTES = 32 * 1024 * 1024
MAX_JSON_BYTES = 64 * 1024
MAX_STREAM_MODELS = 16
"""Models one stream may run at once (``detect`` without names runs them all)."""


@dataclass(frozen=True)
class WakeModelSettings:
    """What the config says about one wake model (0: the model's own default)."""

    library: str = "auto"
    probability_cutoff: float = 0.0
    sliding_window: int = 0


@dataclass(frozen=True)
class _Loaded:
    info: WakeModelInfo
    make: Callable[[], Detector]
    stamp: object = None
    """The files' (mtime, size) when loaded (custom models)."""


class WakeLibrary:
    """Loaded wake models; :meth:`stream` gives each listener its own detectors."""

    def __init__(
        self,
        configured: dict[str, WakeModelSettings],
        custom_dir: Path,
        refractory_s: float,
        max_streams: int = 64,
    ) -> None:
        self.custom_dir = custom_dir
        self.max_streams = max_streams
        self.open_streams = 0
        """Streams not yet closed (bounded by ``max_streams``)."""
        self.refractory_s = refractory_s
        self._configured = configured
        self._micro_lib = tflite_library("pymicro_wakeword")
        self._oww_lib = tflite_library("pyopen_wakeword")
        self._micro_dir = self._micro_lib.parent.parent / "models"
        self._oww_dir = self._oww_lib.parent.parent / "models"
        self._builtin: dict[str, _Loaded] = {}
        self._custom: dict[str, _Loaded] = {}
        self._seen: dict[str, tuple[float, int]] = {}
        self.refused: dict[str, str] = {}
        """Custom model name → why its files were refused."""
        self._lock = threading.Lock()
        for name, settings in configured.items():
            loaded = self._load_builtin(name, settings)
            if loaded is not None:
                self._builtin[name] = loaded
        self.refresh()
        missing = [n for n in configured if n not in self._builtin and n not in self._custom]
        if missing:
            raise UnknownModel(
                f"wake.models names {', '.join(missing)}: neither a built-in model "
                f"({', '.join(sorted(set(OWW_BUILTIN)))}) nor a custom one in {custom_dir}"
                + "".join(f"; {n}: {self.refused[n]}" for n in missing if n in self.refused)
            )

    # ------------------------------------------------------------------ models

    @property
    def models(self) -> dict[str, WakeModelInfo]:
        """Every model a client may name now (built-in first, then custom)."""
        loaded = {**self._custom, **self._builtin}
        return {name: m.info for name, m in loaded.items()}

    def stream(self, names: list[str] | None) -> WakeStream:
        """Fresh detectors for ``names`` (None: every model), blocking (a worker call)."""
        loaded = {**self._custom, **self._builtin}
        wanted = list(dict.fromkeys(names)) if names else list(loaded)
        if len(wanted) > MAX_STREAM_MODELS:
            raise UnknownModel(f"at most {MAX_STREAM_MODELS} wake models per stream")
        unknown = [n for n in wanted if n not in loaded]
        if unknown:
            reasons = "".join(f" ({self.refused[n]})" for n in unknown if n in self.refused)
            raise UnknownModel(
                f"unknown wake model '{', '.join(unknown)}'{reasons} "
                f"(models: {', '.join(loaded) or 'none loaded'})"
            )
        with self._lock:
            if self.open_streams >= self.max_streams:
                raise Busy(f"wake detection is busy ({self.open_streams} streams open)")
            self.open_streams += 1
        try:
            detectors = [loaded[n].make() for n in wanted]
        except BaseException:
            self._closed()
            raise
        return WakeStream(detectors, self.refractory_s, self._closed)

    def _closed(self) -> None:
        with self._lock:
            self.open_streams -= 1

    def check_names(self, names: list[str] | None) -> None:
        """Raise UnknownModel for a name no loaded model has (cheap, no I/O)."""
        loaded = {**self._custom, **self._builtin}
        unknown = [n for n in names or () if n not in loaded]
        if unknown:
            reasons = "".join(f" ({self.refused[n]})" for n in unknown if n in self.refused)
            raise UnknownModel(
                f"unknown wake model '{', '.join(unknown)}'{reasons} "
                f"(models: {', '.join(loaded) or 'none loaded'})"
            )

    # ------------------------------------------------------------------ built-in

    def _load_builtin(self, name: str, settings: WakeModelSettings) -> _Loaded | None:
        library = settings.library
        if library == "auto":
            library = "micro" if name in MICRO_BUILTIN else "openwakeword"
        if library == "micro" and name in MICRO_BUILTIN:
            return self._micro(name, self._micro_dir / f"{name}.json", "builtin", settings)
        if library == "openwakeword" and name in OWW_BUILTIN:
            phrase = name.replace("_", " ").title()
            return self._oww(
                name, self._oww_dir / f"{name}.tflite", phrase, ["en"], "builtin", settings, {}
            )
        return None  # a custom model of that name, or a mistake reported by the caller

    def _micro(
        self, name: str, config_path: Path, source: str, settings: WakeModelSettings
    ) -> _Loaded:
        meta = _read_json(config_path)
        if meta.get("type", "micro") != "micro" or not isinstance(meta.get("micro"), dict):
            raise ValueError(f"{config_path.name} is not a microWakeWord model description")
        micro = meta["micro"]
        model_path = config_path.parent / _str(meta, "model")
        cutoff = settings.probability_cutoff or _num(micro, "probability_cutoff", 0.0, 1.0)
        window = settings.sliding_window or int(_num(micro, "sliding_window_size", 1, 100))
        self._check_file(model_path, self._micro_lib)
        lib = self._micro_lib

        def make() -> Detector:
            return MicroDetector(name, model_path, cutoff, window, lib)

        silence_check(make())
        info = WakeModelInfo(
            name=name,
            phrase=_str(meta, "wake_word"),
            languages=tuple(_langs(meta)),
            library="micro",
            source=source,
            probability_cutoff=cutoff,
            sliding_window=window,
        )
        return _Loaded(info, make)

    def _oww(
        self,
        name: str,
        model_path: Path,
        phrase: str,
        languages: list[str],
        source: str,
        settings: WakeModelSettings,
        meta: dict[str, Any],
    ) -> _Loaded:
        cutoff = settings.probability_cutoff or (
            _num(meta, "probability_cutoff", 0.0, 1.0)
            if "probability_cutoff" in meta
            else OWW_DEFAULT_CUTOFF
        )
        window = settings.sliding_window or 1
        self._check_file(model_path, self._oww_lib)
        lib, features = self._oww_lib, self._oww_dir

        def make() -> Detector:
            return OpenWakeWordDetector(name, model_path, cutoff, window, lib, features)

        silence_check(make())
        info = WakeModelInfo(
            name=name,
            phrase=phrase,
            languages=tuple(languages),
            library="openwakeword",
            source=source,
            probability_cutoff=cutoff,
            sliding_window=window,
        )
        return _Loaded(info, make)

    @staticmethod
    def _check_file(model_path: Path, lib: Path) -> None:
        problem = check_tflite(model_path, MAX_MODEL_BYTES) or probe_tflite(lib, model_path)
        if problem:
            raise ValueError(problem)

    # ------------------------------------------------------------------ custom

    def refresh(self) -> None:
        """Look at the custom folder again (blocking: call in a worker); cheap when
        nothing changed (one stat per file)."""
        with self._lock:
            try:
                files = sorted(self.custom_dir.glob("*.json"))[: MAX_CUSTOM_MODELS + 1]
            except OSError:
                files = []
            seen: dict[str, tuple[float, int]] = {}
            for path in files:
                try:
                    st = path.stat()
                    seen[str(path)] = (st.st_mtime, st.st_size)
                    model = path.with_suffix(".tflite")
                    if model.exists():
                        mst = model.stat()
                        seen[str(model)] = (mst.st_mtime, mst.st_size)
                except OSError:
                    continue
            if seen == self._seen:
                return
            self._seen = seen
            custom: dict[str, _Loaded] = {}
            refused: dict[str, str] = {}
            for i, path in enumerate(files):
                name = path.stem
                if i >= MAX_CUSTOM_MODELS:
                    refused[name] = f"more than {MAX_CUSTOM_MODELS} custom models"
                    continue
                old = self._custom.get(name)
                stamp = (seen.get(str(path)), seen.get(str(path.with_suffix(".tflite"))))
                if old is not None and old.stamp == stamp:
                    custom[name] = old
                    continue
                try:
                    loaded = self._load_custom(path)
                except (ValueError, OSError, RuntimeError) as exc:
                    refused[name] = str(exc)
                    _LOGGER.warning("Wake model %s refused: %s", path, exc)
                    continue
                custom[name] = dataclasses.replace(loaded, stamp=stamp)
                if old is None:
                    _LOGGER.info("Wake model %s added from %s", name, path)
            self._custom, self.refused = custom, refused

    def _load_custom(self, path: Path) -> _Loaded:
        if path.stem in self._builtin:
            raise ValueError(f"'{path.stem}' is already a built-in model")
        meta = _read_json(path)
        settings = self._configured.get(path.stem, WakeModelSettings())
        kind = meta.get("type", "micro")
        if kind == "micro":
            return self._micro(path.stem, path, str(path), settings)
        if kind == "openwakeword":
            model_path = path.parent / _str(meta, "model")
            return self._oww(
                path.stem,
                model_path,
                _str(meta, "wake_word"),
                _langs(meta),
                str(path),
                settings,
                meta,
            )
        raise ValueError(f"{path.name}: 'type' must be micro or openwakeword, got {kind!r}")


def _read_json(path: Path) -> dict[str, Any]:
    try:
        if path.stat().st_size > MAX_JSON_BYTES:
            raise ValueError(f"{path.name} is over {MAX_JSON_BYTES} bytes")
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path.name} is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path.name} must hold a JSON object")
    return data


def _str(meta: dict[str, Any], key: str) -> str:
    value = meta.get(key)
    if not isinstance(value, str) or not value or len(value) > 200 or "/" in value:
        raise ValueError(f"'{key}' must be a short string without '/', got {value!r}")
    return value


def _num(meta: dict[str, Any], key: str, lo: float, hi: float) -> float:
    value = meta.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not lo <= value <= hi:
        raise ValueError(f"'{key}' must be a number between {lo:g} and {hi:g}, got {value!r}")
    return float(value)


def _langs(meta: dict[str, Any]) -> list[str]:
    langs = meta.get("trained_languages") or ["en"]
    if not isinstance(langs, list) or not all(isinstance(x, str) for x in langs):
        raise ValueError("'trained_languages' must be a list of language codes")
    return [x[:16] for x in langs[:32]]
