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
