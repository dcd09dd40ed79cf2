"""``hearth speakers ...``: enroll, list, rename and remove the people Hearth knows by voice.

Works beside a running daemon: it reads the store on every check, so a speaker enrolled
here is recognized by the next request.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime
import json
from pathlib import Path
from typing import Any

from daemon.config import Config
from daemon.errors import InvalidRequest
from daemon.speakers.store import SpeakerStore

MAX_RECORDING_S = 60.0
"""One enrollment recording at most (longer files are refused)."""


def add_parser(sub: Any, add: Any) -> None:
    """The ``speakers`` command and its subcommands."""
    speakers = add("speakers", "Manage the people Hearth knows by voice (speaker verification).")
    ssub = speakers.add_subparsers(dest="speakers_command", required=True, metavar="ACTION")
    p = ssub.add_parser(
        "enroll",
        help="enroll a person from a few recordings of their voice (enrolls again if known)",
        description="Three or more recordings of a few seconds each, in any format PyAV "
        "reads, spoken the way the person talks to the house.",
    )
    p.add_argument("name")
    p.add_argument("files", nargs="*", type=Path)
    p.add_argument(
        "--from-voice",
        metavar="VOICE",
        help="use the takes this person recorded for a custom voice (hearth voices enroll)",
    )
    ssub.add_parser("list", help="every enrolled speaker").add_argument(
        "--json", action="store_true"
    )
    ssub.add_parser("remove", help="forget a speaker (their embedding is deleted)").add_argument(
        "name"
    )
    p = ssub.add_parser("rename", help="rename a speaker")
    p.add_argument("name")
    p.add_argument("new_name")


def store_of(config: Config) -> SpeakerStore:
    """The state directory's speaker store."""
    return SpeakerStore(config.state_path / "speakers", config.speakers.max_speakers)


def run(config: Config, args: argparse.Namespace) -> int:
    """Run one ``speakers`` action."""
    store = store_of(config)
    action = args.speakers_command
    if action == "enroll":
        files = list(args.files)
        if args.from_voice:
            files += _voice_takes(config, args.from_voice)
        if not files:
            raise InvalidRequest("name recordings, or --from-voice with a voice's takes")
        speaker = asyncio.run(_enroll(config, store, args.name, files))
        print(f"enrolled speaker {speaker.name} from {speaker.takes} recording(s)")
    elif action == "list":
        speakers = store.list()
        if args.json:
            print(json.dumps([dataclasses.asdict(s) for s in speakers], indent=2))
        for s in speakers if not args.json else ():
            when = datetime.datetime.fromtimestamp(s.enrolled_at).strftime("%Y-%m-%d %H:%M")
            print(f"{s.name:32} {s.takes:3} recording(s)  enrolled {when}")
    elif action == "remove":
        store.remove(args.name)
        print(f"removed speaker {args.name}")
    elif action == "rename":
        store.rename(args.name, args.new_name)
        print(f"renamed speaker {args.name} to {args.new_name}")
    return 0


def _voice_takes(config: Config, voice: str) -> list[Path]:
    """The accepted takes of a custom voice's enrollment, at most ``speakers.max_takes``."""
    from daemon.voices.enroll import Enrollment

    return Enrollment(config, voice).recordings(config.speakers.max_takes)


async def _enroll(config: Config, store: SpeakerStore, name: str, files: list[Path]) -> Any:
    from daemon.audio.pcm import decode_file
    from daemon.engines.speaker import create_speaker_encoder
    from daemon.engines.workers import WorkerPool
    from daemon.speakers.service import SpeakerService

    if not config.speakers.enabled:
        raise InvalidRequest("speaker verification is off (speakers.enabled: false)")
    pool = WorkerPool("speaker", 1, 8)
    try:
        recordings = [await pool.run(decode_file, str(path), MAX_RECORDING_S) for path in files]
        encoder = await pool.run(create_speaker_encoder, config.speakers.model)
        service = SpeakerService(encoder, pool, store, config.speakers)
        return await service.enroll(name, recordings)
    finally:
        pool.close()
