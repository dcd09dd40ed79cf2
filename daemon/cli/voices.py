"""``hearth voices ...``: import, list, show, change and remove voices; enroll; train."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from daemon.config import Config
from daemon.engines.tts.voices import DEFAULT_RANGES, VoiceStore
from daemon.errors import HearthError


def add_parser(sub: Any, add: Any) -> None:
    """The ``voices`` command and its subcommands."""
    voices = add("voices", "Manage voices: import, enroll your own, train.")
    vsub = voices.add_subparsers(dest="voices_command", required=True, metavar="ACTION")
    p = vsub.add_parser(
        "add", help="import a Piper voice (.onnx beside its .onnx.json, or .tar/.zip)"
    )
    p.add_argument("path", type=Path)
    p.add_argument("--name", help="voice name (default: the model's file name)")
    vsub.add_parser("list", help="every voice").add_argument("--json", action="store_true")
    vsub.add_parser("show", help="one voice's metadata").add_argument("name")
    vsub.add_parser("remove", help="delete a user voice").add_argument("name")
    p = vsub.add_parser("rename", help="rename a user voice")
    p.add_argument("name")
    p.add_argument("new_name")
    p = vsub.add_parser("set", help="set a user voice's display name and defaults")
    p.add_argument("name")
    p.add_argument("--display-name")
    p.add_argument("--speaker", help="default speaker ('' clears)")
    for key in DEFAULT_RANGES:
        p.add_argument(f"--{key.replace('_', '-')}", type=float)
    p = vsub.add_parser(
        "enroll",
        help="record prompts: list them, add takes from WAV files, show progress",
        description="Read the prompts aloud and record each take (any audio recorder), or "
        "use the /enroll page of the daemon's HTTPS port in a browser. Each take is checked "
        "(clipping, level, noise, words) and kept when good.",
    )
    p.add_argument("name")
    p.add_argument("--prompts", action="store_true", help="print the prompts, numbered")
    p.add_argument("--take", nargs=2, action="append", metavar=("INDEX", "FILE"), help="add a take")
    p.add_argument(
        "--dir", type=Path, help="add every NNNN.wav of a folder as the take of prompt NNNN"
    )
    p.add_argument("--redo", metavar="TAKE_ID", help="drop a take to record it again")
    p = vsub.add_parser("train", help="fine-tune a voice on the enrolled takes (background job)")
    p.add_argument("name")
    p.add_argument("--replace", action="store_true", help="replace a voice of that name")
    p.add_argument("--detach", action="store_true", help="start and return at once")
    vsub.add_parser("status", help="training progress").add_argument("name")
    vsub.add_parser("cancel", help="stop a training job").add_argument("name")


def run(config: Config, args: argparse.Namespace) -> int:
    """Run one ``voices`` action."""
    store = VoiceStore(config.voices_path)
    action = args.voices_command
    if action == "add":
        from daemon.voices.importer import import_path

        started = time.perf_counter()
        limit = config.voices.max_upload_mb * 1_000_000
        voice = import_path(store, args.name, args.path, limit)
        took = time.perf_counter() - started
        print(f"added voice {voice.name} ({voice.language}, checked in {took:.1f} s)")
    elif action == "list":
        voices = store.list()
        if args.json:
            print(json.dumps([v.describe() for v in voices], indent=2))
        for v in voices if not args.json else ():
            mark = "*" if v.name == config.tts.default_voice else " "
            print(f"{mark} {v.name:32} {v.language:8} {v.source:8} {v.display_name}")
    elif action == "show":
        print(json.dumps(store.get(args.name).describe(), indent=2))
    elif action == "remove":
        store.remove(args.name)
        print(f"removed voice {args.name}")
    elif action == "rename":
        store.rename(args.name, args.new_name)
        print(f"renamed voice {args.name} to {args.new_name}")
    elif action == "set":
        defaults: dict[str, Any] = {
            key: getattr(args, key) for key in DEFAULT_RANGES if getattr(args, key) is not None
        }
        if args.speaker is not None:
            defaults["default_speaker"] = args.speaker or None
        voice = store.update(args.name, args.display_name, defaults)
        print(json.dumps(voice.describe(), indent=2))
    elif action == "enroll":
        return asyncio.run(_enroll(config, args))
    elif action in ("train", "status", "cancel"):
        return _train(config, args)
    return 0


async def _enroll(config: Config, args: argparse.Namespace) -> int:
    from daemon.voices.enroll import Enrollment

    enrollment = Enrollment(config, args.name)
    if args.prompts:
        for i, text in enumerate(enrollment.prompts):
            print(f"{i:04d}  {text}")
        return 0
    if args.redo:
        enrollment.remove(args.redo)
    takes = [(int(i), Path(f)) for i, f in args.take or ()]
    if args.dir:
        takes += [(int(f.stem), f) for f in sorted(args.dir.glob("*.wav")) if f.stem.isdigit()]
    status = 0
    if takes:
        from daemon.engines.hardware import probe
        from daemon.runtime.loading import load_engines

        engines = await asyncio.to_thread(load_engines, config, probe(), tts=False, llm=False)
        try:
            for index, path in takes:
                try:
                    check = await enrollment.add_take(engines, path.read_bytes(), index)
                except (HearthError, OSError) as exc:
                    print(f"{path}: {exc}", file=sys.stderr)
                    status = 1
                    continue
                verdict = "accepted" if check.accepted else "refused: " + "; ".join(check.problems)
                print(f"{index:04d} {path.name}: {verdict}")
                status |= 0 if check.accepted else 1
        finally:
            engines.close()
    info = enrollment.status()
    print(
        f"{info['name']}: {info['takes']} takes, {info['seconds'] / 60:.1f} of "
        f"{info['target_seconds'] / 60:g} minutes ({info['progress']:.0%})"
        + (f"; next prompt {info['next_prompt']:04d}" if info["next_prompt"] is not None else "")
    )
    return status


def _train(config: Config, args: argparse.Namespace) -> int:
    from daemon.voices.training import ACTIVE, Training

    training = Training(config)
    if args.voices_command == "cancel":
        print(json.dumps(training.cancel(args.name), indent=2))
        return 0
    if args.voices_command == "train":
        training.start(args.name, replace=args.replace)
        if args.detach:
            print(f"training {args.name} in the background: hearth voices status {args.name}")
            return 0
    last = ""
    try:
        while True:
            status = training.status(args.name)
            line = _progress_line(status)
            if line != last:
                print(line, flush=True)
                last = line
            if args.voices_command == "status" or status["status"] not in ACTIVE:
                break
            time.sleep(2)
    except KeyboardInterrupt:
        print(f"\nstill training in the background: hearth voices status {args.name}")
        return 0
    if status["status"] == "failed":
        print("\n".join(status.get("log_tail") or []), file=sys.stderr)
        return 1
    return 0


def _progress_line(status: dict[str, Any]) -> str:
    progress = status.get("progress") or {}
    parts = [f"{status['name']}: {status['status']}"]
    if progress:
        parts.append(f"epoch {progress.get('epoch')}/{progress.get('max_epochs')}")
        parts.append(f"step {progress.get('step')}")
        if progress.get("loss") is not None:
            parts.append(f"loss {progress['loss']:.2f}")
        if progress.get("eta_s") is not None:
            parts.append(f"about {progress['eta_s'] / 60:.0f} min left")
    if status.get("error"):
        parts.append(str(status["error"]))
    return ", ".join(parts)
