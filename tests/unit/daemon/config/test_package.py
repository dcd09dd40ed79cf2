"""daemon.config is a package of the foundation: its old names, and its imports."""

import ast
from pathlib import Path

import daemon.config
from tests import import_graph

PACKAGE = Path(daemon.config.__file__).parent

OLD_NAMES = (
    "AsrConfig AsrModelConfig AuthConfig COMPUTE_TYPES Config ConfigError DEVICE_HELP "
    "HttpConfig HttpsConfig LimitsConfig LlmConfig LogConfig MdnsConfig MetricsConfig "
    "RemoteAsrConfig RemoteLlmConfig RemoteTtsConfig SpeakersConfig TtsCacheConfig TtsConfig "
    "VadConfig VoicesConfig WakeConfig WakeModelConfig WebRtcConfig WillowConfig "
    "WyomingConfig exposure_warnings load_config parse_config"
).split()


def test_every_name_of_the_old_module_is_still_there():
    missing = [name for name in OLD_NAMES if not hasattr(daemon.config, name)]
    assert missing == []


def test_every_module_is_foundation():
    for path in PACKAGE.glob("*.py"):
        name = import_graph.module_name(path)
        assert import_graph.room_of(name) == "foundation", name


def test_the_package_imports_only_errors_and_itself():
    for path in PACKAGE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            else:
                continue
            for name in names:
                if name.split(".")[0] in ("daemon", "protocols"):
                    assert name == "daemon.errors" or name.startswith("daemon.config"), (
                        f"{path.name} imports {name}"
                    )


def test_the_checker_flags_a_config_module_that_imports_upward(tmp_path, monkeypatch):
    monkeypatch.setattr(import_graph, "ROOT", tmp_path)
    files = {
        "daemon/__init__.py": "",
        "daemon/errors.py": "",
        "daemon/ops/__init__.py": "",
        "daemon/config/__init__.py": "from daemon.config.load import x\n",
        "daemon/config/load.py": "from daemon import errors\nfrom daemon.ops import logs\n",
        "daemon/ops/logs.py": "",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    _, problems = import_graph.check()
    assert problems == [
        "daemon.config.load -> daemon.ops: upward (foundation -> ops)",
        "daemon.config.load -> daemon.ops.logs: upward (foundation -> ops)",
    ]
