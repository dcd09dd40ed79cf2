"""``hearth check``: every start-up decision, shown before the daemon makes it."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import sys
from typing import Any

from daemon.config import Config, exposure_warnings, settings_of
from daemon.config.provenance import HIDDEN
from daemon.engines.cpu import select_llama
from daemon.engines.hardware import plan, probe
from daemon.engines.hub.names import whisper_repo
from daemon.engines.models import find_whisper, resolve_gguf, resolve_whisper, size_mb
from daemon.errors import HearthError
from daemon.house.service import probe as probe_house
from daemon.ops.storage import unwritable
from daemon.runtime.loading import engine_requests, load_engines
from daemon.runtime.remote import check_engine_voice, probe_remotes


def _collect(config: Config, load: bool) -> tuple[dict[str, Any], list[str]]:
    problems: list[str] = []
    report = probe()
    out: dict[str, Any] = {
        "config": config.source,
        "state_dir": str(config.state_path),
        "settings": [dataclasses.asdict(s) for s in settings_of(config)],
        "hardware": {
            "cpu_count": report.cpu_count,
            "cuda_devices": [g.__dict__ for g in report.gpus],
            "ctranslate2_cuda_devices": report.ctranslate2_cuda,
            "onnxruntime_cuda": report.onnx_cuda,
            "llama_gpu_offload": report.llama_gpu,
            "nvidia_driver": report.driver_version,
            "nvcc": report.nvcc,
            "cuda_libraries": [
                lib.__dict__ | {"users": list(lib.users)} for lib in report.cuda_libraries or ()
            ],
            "notes": list(report.notes),
        },
    }
    models: dict[str, Any] = {}
    remote = probe_remotes(config)
    for entry in remote.values():
        if "problem" in entry:
            problems.append(str(entry["problem"]))
    for name, m in config.asr.models.items():
        if m.backend == "remote":
            models[f"asr:{name}"] = remote[f"asr:{name}"]
            continue
        try:
            on_disk = find_whisper(m.path, config.models_path)
            if on_disk is None and config.asr.allow_download and whisper_repo(m.path):
                models[f"asr:{name}"] = {
                    "fetch": f"{m.path} is fetched from the hub when the daemon starts "
                    "(the embedded tiny.en serves meanwhile)"
                }
                continue
            path = resolve_whisper(m.path, config.models_path, allow_download=False)
            models[f"asr:{name}"] = {"path": str(path), "size_mb": round(size_mb(path), 1)}
        except HearthError as exc:
            models[f"asr:{name}"] = {"error": str(exc)}
            if not config.asr.allow_download:
                problems.append(str(exc))
    if config.llm.backend == "local":
        try:
            path = resolve_gguf(config.llm.model, config.models_path, allow_download=False)
            models["llm"] = {"path": str(path), "size_mb": round(size_mb(path), 1)}
        except HearthError as exc:
            models["llm"] = {"error": str(exc)}
        llama = select_llama()  # the llama.cpp build this CPU runs, or why none can
        models["llm"]["llama"] = llama.reason
        if llama.build is None:
            models["llm"]["off"] = llama.reason
    else:
        models["llm"] = remote["llm"]
    remote_voices = {name for r in config.tts.remote for name in r.local_names()}
    try:
        from daemon.engines.hub.names import piper_name
        from daemon.engines.tts.registry import tts_backend
        from daemon.engines.tts.voices import VoiceStore

        default = config.tts.default_voice
        backend = tts_backend(config.tts.backend)
        store = VoiceStore(config.voices_path)
        store.use_engine(backend.voices(), backend.voice_files)
        if not backend.voice_files and default not in remote_voices:
            check_engine_voice(store, backend, default)
            models["tts"] = {"backend": backend.name, "path": str(backend.source or "")}
        elif default in remote_voices:
            models["tts"] = {"remote": f"default voice {default} is remote"}
        elif (found := store.find(default)) is None and config.hub.voices and piper_name(default):
            models["tts"] = {
                "fetch": f"default voice {default} is fetched from the Piper catalogue when "
                "the daemon starts (the bundled voice speaks meanwhile)"
            }
        else:
            voice = found or store.get(default)
            models["tts"] = {
                "path": str(voice.model_path),
                "size_mb": round(size_mb(voice.model_path), 1),
            }
    except HearthError as exc:
        models["tts"] = {"error": str(exc)}
        problems.append(str(exc))
    for group in config.tts.remote:
        models[f"tts:{group.name}"] = remote[f"tts:{group.name}"]
    out["models"] = models
    # Home Assistant's names: read once now (counts and time only, never a name).
    out["homeassistant"] = asyncio.run(probe_house(config.homeassistant))
    if "error" in out["homeassistant"]:
        problems.append(f"homeassistant: {out['homeassistant']['error']}")
    if config.https.enabled:
        from daemon.ops.tls import certificate_files, fingerprint

        try:
            # The certificate the daemon will serve (a self-signed one is made now if
            # none exists yet, so the fingerprint can be checked before first use).
            cert, _ = certificate_files(config)
            out["https"] = {
                "url": f"https://<this host>:{config.https.port}",
                "certificate": str(cert),
                "sha256": fingerprint(cert),
            }
        except (HearthError, OSError, ValueError) as exc:
            out["https"] = {"error": str(exc)}
            problems.append(f"https: {exc}")
    out["plan"] = [
        {
            "engine": p.name,
            "device": p.label,
            "compute_type": p.compute_type,
            "reasons": p.reasons,
            "fix": p.fix,
        }
        for p in plan(engine_requests(config), report)
    ]
    # A fallback is a warning, not a problem: the engine still runs, on the CPU.
    out["warnings"] = [
        f"{p['engine']} runs on the CPU; to put it on the GPU: {p['fix']}"
        for p in out["plan"]
        if p["fix"]
    ] + exposure_warnings(config)
    # The daemon serves speech from a read-only state dir, but every write fails
    # (voices, enrollment, training, TLS, the cache): say so before a user finds out.
    folders = [config.state_path, config.tts_cache_path]
    if config.llm.backend == "local" and config.llm.prompt_cache:
        folders.append(config.llm_cache_path)
    for folder in dict.fromkeys(folders):
        why = unwritable(folder)
        if why is not None:
            problems.append(f"storage-unwritable: cannot write in {folder} ({why})")
    if load:
        try:
            engines = load_engines(config, report)
            out["loaded"] = engines.describe()
            engines.close()
        except HearthError as exc:
            problems.append(f"{exc.code}: {exc}")
        except Exception as exc:  # noqa: BLE001 - check reports, never crashes
            problems.append(f"{type(exc).__name__}: {exc}")
    out["problems"] = problems
    return out, problems


SHOWN_CHARS = 48
"""A setting's value is cut to this many characters in the text report."""


def _print_settings(settings: list[dict[str, Any]]) -> None:
    """Every key set by the file, the add-on options or the environment, with where."""
    if not settings:
        print("\nsettings    all built-in defaults")
        return
    print(f"\nsettings    {len(settings)} set as below; everything else is the default")
    rows = [(s["key"], _shown(s["value"]), s["origin"]) for s in settings]
    key_width = min(max(len(key) for key, _, _ in rows), 40)
    value_width = max(len(value) for _, value, _ in rows)
    for key, value, origin in rows:
        print(f"  {key:<{key_width}}  {value:<{value_width}}  {origin}")


def _shown(value: Any) -> str:
    """A setting's value on one line: YAML-like JSON, ``(set)`` for a hidden secret."""
    text = value if value == HIDDEN else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 3] + "..."


def _print_house(house: dict[str, Any]) -> None:
    """Where the household's names come from, how many there are and when they were read."""
    if house.get("state") == "off":
        print("\nhomeassistant  off (homeassistant.url not set, not inside the add-on)")
    elif "error" in house:
        print(f"\nhomeassistant  {house['url']}: {house['error']}")
    else:
        print(
            f"\nhomeassistant  {house['names']} names ({house['entity']} entities, "
            f"{house['alias']} aliases, {house['area']} areas, {house['floor']} floors), "
            f"read {house['refreshed_at']} from {house['url']}"
        )


def run_check(config: Config, load: bool = True, as_json: bool = False) -> int:
    """Print the report; exit code 1 when anything is wrong."""
    out, problems = _collect(config, load)
    if as_json:
        print(json.dumps(out, indent=2, default=str))
        return 1 if problems else 0
    hw = out["hardware"]
    print(f"config      {out['config']}")
    print(f"state dir   {out['state_dir']}")
    print(f"CPU         {hw['cpu_count']} cores")
    if hw["cuda_devices"]:
        for g in hw["cuda_devices"]:
            cap = ".".join(map(str, g["capability"]))
            print(
                f"CUDA        cuda:{g['index']} {g['name']} cc {cap}, "
                f"{g['free_mb']}/{g['total_mb']} MB free"
            )
    else:
        print(f"CUDA        none (CTranslate2 sees {hw['ctranslate2_cuda_devices']} devices)")
    if hw["nvidia_driver"]:
        print(f"driver      NVIDIA {hw['nvidia_driver']}; nvcc: {hw['nvcc'] or 'not installed'}")
    for lib in hw["cuda_libraries"]:
        where = lib["path"] or "NOT FOUND (make install GPU=cuda)"
        print(f"  {lib['soname']:<18} for {'+'.join(lib['users']):<8} {where}")
    print(
        f"onnxruntime CUDA provider: {'yes' if hw['onnxruntime_cuda'] else 'no'}; "
        f"llama.cpp GPU offload: {'yes' if hw['llama_gpu_offload'] else 'no'}"
    )
    for note in hw["notes"]:
        print(f"note        {note}")
    if "https" in out:
        https = out["https"]
        if "sha256" in https:
            print(f"HTTPS       {https['url']}, certificate {https['certificate']}")
            print(f"            SHA-256 {https['sha256']}")
        else:
            print(f"HTTPS       {https['error']}")
    _print_settings(out["settings"])
    print("\nmodels")
    for name, info in out["models"].items():
        detail = (
            info.get("off")
            or info.get("error")
            or info.get("remote")
            or f"{info['path']} ({info['size_mb']} MB)"
        )
        print(f"  {name:<14} {detail}")
    _print_house(out["homeassistant"])
    print("\nplan")
    for p in out["plan"]:
        print(
            f"  {p['engine']:<14} {p['device']:<7} {p['compute_type']:<9} {'; '.join(p['reasons'])}"
        )
        if p["fix"]:
            print(f"  {'':<14} to fix: {p['fix']}")
    if "loaded" in out:
        print("\nloaded")
        for e in out["loaded"]:
            batch = f", batches of up to {e['max_batch']}" if e.get("max_batch", 1) > 1 else ""
            print(
                f"  {e['name']:<14} {e['device']:<7} {e['compute_type']:<9} {e['load_s']} s{batch}"
            )
            for lib in e.get("cuda_libraries", ()):
                state = "loaded" if lib["loaded"] else "not loaded"
                print(f"  {'':<14} {lib['soname']}: {lib['path'] or 'not found'} ({state})")
            if e.get("fix"):
                print(f"  {'':<14} to fix: {e['fix']}")
    for warning in out["warnings"]:
        print(f"\nwarning     {warning}")
    if problems:
        print("\nproblems", file=sys.stderr)
        for problem in problems:
            print(f"  {problem}", file=sys.stderr)
        return 1
    print("\nok")
    return 0
