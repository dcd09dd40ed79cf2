"""The ``hearth`` command: serve, check, transcribe, say, chat, install-service."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from pathlib import Path

from daemon import __version__
from daemon.cli import ownership
from daemon.config import Config, load_config
from daemon.config.addon import ADDON_CONFIG_FILE, read_options
from daemon.errors import EXIT_CONFIG, ConfigError, HearthError
from daemon.ops import memory
from daemon.ops.logs import setup_logging
from daemon.ops.supervisor import addon_context

_LOGGER = logging.getLogger("hearth")
WRITERS = ("check", "transcribe", "say", "chat", "voices", "speakers")
"""Commands that may write into the state (voices, speakers, joined models)."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hearth", description="Hearth voice daemon.")
    parser.add_argument("--version", action="version", version=f"hearth {__version__}")
    parser.add_argument(
        "--config",
        metavar="PATH",
        help=(
            "config file (default: $HEARTH_CONFIG, else a system install's "
            "/etc/hearth/config.yaml, else built-in defaults); "
            "HEARTH_SECTION__KEY variables override it"
        ),
    )
    parser.add_argument("--log-level", choices=["debug", "info", "warning", "error"])
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument(
            "--config",
            metavar="PATH",
            default=argparse.SUPPRESS,
            help="config file (default: $HEARTH_CONFIG)",
        )
        return p

    add("serve", "Run the daemon: HTTP API (and protocol listeners) on the configured ports.")

    check = add("check", "Validate config, show hardware, devices and models; load every engine.")
    check.add_argument("--no-load", action="store_true", help="plan only, do not load models")
    check.add_argument("--json", action="store_true", help="machine-readable output")

    tr = add("transcribe", "Transcribe audio files (any format PyAV reads).")
    tr.add_argument("files", nargs="+", metavar="FILE")
    tr.add_argument("--model", help="ASR model name from asr.models")
    tr.add_argument("--language", help="language code, or 'auto' to detect")
    tr.add_argument("--beam-size", type=int)
    tr.add_argument("--translate", action="store_true", help="translate to English")
    tr.add_argument("--prompt", help="initial prompt (names, vocabulary)")

    say = add("say", "Speak text into an audio file.")
    say.add_argument("text")
    say.add_argument("-o", "--output", required=True, help="output file (.wav, .flac or .pcm)")
    say.add_argument("--voice")
    say.add_argument("--speaker")
    say.add_argument("--speed", type=float, default=1.0)
    say.add_argument("--rate", type=int, help="output sample rate (Hz)")
    say.add_argument("--noise-scale", type=float, help="Piper generator noise (0-2)")
    say.add_argument("--noise-w", type=float, help="Piper phoneme width noise (0-2)")

    add("health", "Ask the running daemon whether it answers (Wyoming describe, /healthz).")

    chat = add("chat", "Ask the LLM; the reply streams to standard output.")
    chat.add_argument("prompt")

    from daemon.cli.voices import add_parser as add_voices

    add_voices(sub, add)

    from daemon.cli.speakers import add_parser as add_speakers

    add_speakers(sub, add)

    svc = sub.add_parser(
        "install-service",
        help="Install Hearth as a systemd service (as root).",
        description="Install (or upgrade) the venv in /opt/hearth, the hearth user, the "
        "systemd unit and /etc/hearth/config.yaml if absent; enable and start it.",
    )
    svc.add_argument("--uninstall", action="store_true", help="stop and remove unit and venv")
    svc.add_argument("--prefix", default="/opt/hearth", help="venv location (/opt/hearth)")
    svc.add_argument("--source", type=Path, help="Hearth source tree (default: this checkout)")
    svc.add_argument("--root", type=Path, default=Path("/"), help="stage into this folder")
    svc.add_argument("--no-venv", action="store_true", help="only the user, unit and config")
    svc.add_argument("--no-start", action="store_true", help="do not enable and start it")
    return parser


def load_settings(path: str | Path | None) -> Config:
    """The configuration every command runs on: the file at ``path`` (None:
    $HEARTH_CONFIG, else a system install's config and state, else none), with the
    ``HEARTH_*`` environment variables over it.

    Run as the Home Assistant add-on (``SUPERVISOR_TOKEN`` and its options file), the
    add-on options come between the two, and a config.yaml in the add-on's own config
    folder is the file when there is one.
    """
    context = addon_context()
    if context is None:
        if path is None:
            path = ownership.installed_config(os.environ)
            state = ownership.installed_state(os.environ, path)
            if state is not None:
                os.environ["STATE_DIRECTORY"] = state
        return load_config(path)
    if path is None and ADDON_CONFIG_FILE.is_file():
        path = ADDON_CONFIG_FILE
    return load_config(
        path,
        addon=read_options(context.options_path),
        addon_source=f"add-on options ({context.options_path.name})",
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hearth`` console script."""
    args = _parser().parse_args(argv)
    if args.command == "install-service":
        return _install_service(args)
    try:
        config = load_settings(args.config)
    except ConfigError as exc:
        print(f"hearth: {exc}", file=sys.stderr)
        return EXIT_CONFIG
    quiet = args.command in ("transcribe", "say", "chat", "voices", "speakers", "health")
    setup_logging(args.log_level or ("warning" if quiet else config.log.level))
    try:
        if args.command == "serve":
            return _serve(config)
        if args.command == "health":
            from daemon.cli.health import run_health

            return run_health(config)
        if args.command == "check":
            from daemon.cli.check import run_check

            return run_check(config, load=not args.no_load, as_json=args.json)
        if args.command == "voices":
            from daemon.cli.voices import run as run_voices

            return run_voices(config, args)
        if args.command == "speakers":
            from daemon.cli.speakers import run as run_speakers

            return run_speakers(config, args)
        return asyncio.run(_COMMANDS[args.command](config, args))
    except HearthError as exc:
        print(f"hearth: {exc.code}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    finally:
        if args.command in WRITERS:
            ownership.hand_to_owner(
                config.state_path, (config.state_path, config.voices_path, config.models_path)
            )


def _install_service(args: argparse.Namespace) -> int:
    from daemon.cli.install import InstallError, Layout, install, source_tree, uninstall

    layout = Layout(root=args.root, prefix=args.prefix)
    try:
        if args.uninstall:
            uninstall(layout)
            return 0
        source = args.source or source_tree()
        if source is None:
            raise InstallError("no source tree here: pass --source /path/to/hearth")
        install(layout, source, venv=not args.no_venv, start=not args.no_start)
    except (InstallError, OSError) as exc:
        print(f"hearth: install-service: {exc}", file=sys.stderr)
        return 1
    return 0


def _serve(config: Config) -> int:
    # Before the engines and their worker threads: each thread that contends for the
    # allocator would get an arena of its own, and each arena keeps its own holes.
    memory.limit_arenas(memory.ARENAS)
    from daemon.service import HearthService

    return asyncio.run(HearthService(config).run())


async def _transcribe(config: Config, args: argparse.Namespace) -> int:
    from daemon.audio.pcm import decode_file, pcm_to_float
    from daemon.engines.asr.base import TranscribeOptions
    from daemon.engines.hardware import probe
    from daemon.runtime.loading import load_engines

    options = TranscribeOptions(
        beam_size=args.beam_size,
        language=args.language,
        task="translate" if args.translate else "transcribe",
        initial_prompt=args.prompt,
    )
    engines = await asyncio.to_thread(load_engines, config, probe(), tts=False, llm=False)
    model = engines.asr_model(args.model)
    status = 0
    for name in args.files:
        try:
            samples = await asyncio.to_thread(decode_file, name, config.limits.max_file_audio_s)
            result = await engines.asr_pool.run(model.transcribe, pcm_to_float(samples), options)
        except HearthError as exc:
            print(f"hearth: {name}: {exc.code}: {exc}", file=sys.stderr)
            status = 1
            continue
        prefix = f"{name}: " if len(args.files) > 1 else ""
        print(f"{prefix}{result.text}", flush=True)
    engines.close()
    return status


async def _say(config: Config, args: argparse.Namespace) -> int:
    from daemon.engines.hardware import probe
    from daemon.engines.tts.base import SynthesisOptions
    from daemon.runtime.loading import load_engines

    fmt = Path(args.output).suffix.lstrip(".").lower() or "wav"
    options = SynthesisOptions(
        voice=args.voice,
        speaker=args.speaker,
        speed=args.speed,
        sample_rate=args.rate,
        noise_scale=args.noise_scale,
        noise_w_scale=args.noise_w,
    )
    engines = await asyncio.to_thread(load_engines, config, probe(), asr=False, llm=False)
    assert engines.tts is not None
    data = await engines.tts.synthesize(args.text, options, fmt, use_cache=False)
    Path(args.output).write_bytes(data)
    engines.close()
    print(f"wrote {args.output} ({len(data)} bytes)", file=sys.stderr)
    return 0


async def _chat(config: Config, args: argparse.Namespace) -> int:
    from daemon.engines.hardware import probe
    from daemon.runtime.loading import load_engines

    engines = await asyncio.to_thread(load_engines, config, probe(), asr=False, tts=False)
    assert engines.chat is not None
    async for piece in engines.chat.chat("", args.prompt):
        sys.stdout.write(piece)
        sys.stdout.flush()
    sys.stdout.write("\n")
    await engines.chat.llm.close()
    engines.close()
    return 0


_COMMANDS = {"transcribe": _transcribe, "say": _say, "chat": _chat}
