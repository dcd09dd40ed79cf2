"""The rooms of daemon/: imports only go downward (tests/import_graph.py)."""

from tests import import_graph


def test_no_upward_import_and_no_stray_module():
    edges, problems = import_graph.check()
    assert problems == []
    assert edges, "the graph found no imports at all"


def test_the_checker_sees_an_upward_import(tmp_path, monkeypatch):
    # A module in engines/ that imports the runtime must be reported.
    assert import_graph.room_of("daemon.engines.asr.base") == "engines"
    assert import_graph.room_of("daemon.runtime.engines") == "runtime"
    assert import_graph.room_of("daemon.service") == "service"
    assert import_graph.room_of("protocols.wyoming.handler") == "protocols"
    assert import_graph.room_of("daemon.errors") == "foundation"
    assert import_graph.room_of("numpy") is None
    bad = tmp_path / "daemon" / "engines" / "bad.py"
    bad.parent.mkdir(parents=True)
    bad.write_text("from daemon.runtime.engines import Engines\nfrom daemon import service\n")
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    for name in ("runtime/engines.py", "service.py", "__init__.py", "engines/__init__.py"):
        (tmp_path / "daemon" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "daemon" / name).touch()
    (tmp_path / "daemon" / "stray.py").write_text("")
    _, problems = import_graph.check()
    assert any("daemon.engines.bad -> daemon.runtime.engines: upward" in p for p in problems)
    assert any("daemon.engines.bad -> daemon.service: upward" in p for p in problems)
    assert any(p.startswith("daemon.stray: a module directly in daemon/") for p in problems)


def test_protocol_rooms_and_the_core_api_door(tmp_path, monkeypatch):
    assert import_graph.protocol_room_of("protocols.http.willow") == "http"
    assert import_graph.protocol_room_of("protocols.listener") == "base"
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    files = {
        "daemon/__init__.py": "",
        "daemon/service.py": "",
        "daemon/runtime/__init__.py": "",
        "daemon/runtime/engines.py": "",
        "daemon/runtime/api.py": "",
        "daemon/engines/__init__.py": "",
        "daemon/engines/asr/__init__.py": "",
        "daemon/engines/asr/base.py": "",
        "daemon/engines/asr/whisper.py": "",
        "protocols/__init__.py": "",
        "protocols/listener.py": "",
        "protocols/patches/__init__.py": "",
        "protocols/patches/lib.py": "from protocols.http import errors\n",
        "protocols/http/__init__.py": "",
        "protocols/http/errors.py": "",
        "protocols/http/app.py": (
            "from protocols.webrtc import manager\nfrom protocols import listener\n"
            "from daemon.runtime.api import Services, Transcript\n"
            "from daemon.engines.asr.base import Transcript\n"
        ),
        "protocols/webrtc/__init__.py": "",
        "protocols/webrtc/manager.py": "from protocols.http import errors\n",
        "protocols/wyoming/__init__.py": "",
        "protocols/wyoming/handler.py": (
            "from daemon.runtime.engines import Engines\n"
            "from daemon.engines.asr.whisper import WhisperModel\n"
            "from protocols.webrtc import routes\n"
        ),
        "protocols/webrtc/routes.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    _, problems = import_graph.check()
    found = "\n".join(problems)
    assert "protocols.patches.lib -> protocols.http.errors: upward" in found
    assert "protocols.webrtc.manager -> protocols.http.errors: upward" in found
    assert "protocols.wyoming.handler -> protocols.webrtc.routes: " in found
    assert "siblings" in found
    assert "protocols.wyoming.handler -> daemon.runtime.engines: not a module adapters" in found
    assert "protocols.wyoming.handler -> daemon.engines.asr.whisper: not a module" in found
    # The vocabulary's value types come from the core's API, not from their own modules.
    assert "protocols.http.app -> daemon.engines.asr.base: not a module adapters" in found
    # Downward, and through the core's API: nothing else to say about the HTTP app.
    assert [p for p in problems if p.startswith("protocols.http.app ")] == [
        "protocols.http.app -> daemon.engines.asr.base: not a module adapters may import "
        "(ADAPTERS_MAY_IMPORT): go through daemon.runtime.api"
    ]
    assert len(problems) == 6, problems


def test_circles_are_found_and_named(tmp_path, monkeypatch):
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    files = {
        "daemon/__init__.py": "",
        "daemon/service.py": "",
        "daemon/speech/__init__.py": "",
        "daemon/speech/a.py": "from daemon.speech import b\n",
        "daemon/speech/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from daemon.speech.c import C\n",
        "daemon/speech/c.py": "def f():\n    from daemon.speech import a\n",
        "daemon/speech/d.py": "from daemon.speech import a\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    _, problems = import_graph.check()
    assert problems == ["circle: daemon.speech.a <-> daemon.speech.b <-> daemon.speech.c"]


def test_adapters_import_only_the_modules_listed_by_name():
    """What ``protocols/__init__.py`` promises, enforced: the core's API (its services,
    what they open, the vocabulary), the foundation, host plumbing, conversion at the edge
    and the voice workflows."""
    import ast
    from pathlib import Path

    doc = ast.get_docstring(ast.parse(Path("protocols/__init__.py").read_text())) or ""
    assert "ADAPTERS_MAY_IMPORT" in doc
    for forbidden in (
        "daemon.speech.session",
        "daemon.speakers.service",
        "daemon.runtime.engines",
        "daemon.speech.pipeline",
        "daemon.ops.deadline",
        "daemon.speech.transcribe",
        "daemon.runtime.services",
        "daemon.runtime.context",
        "daemon.speech.conversation",
        "daemon.engines.asr.base",
    ):
        assert forbidden not in import_graph.ADAPTERS_MAY_IMPORT
        why = import_graph.door_problem("protocols.http.app", forbidden)
        assert why is not None and "ADAPTERS_MAY_IMPORT" in why
