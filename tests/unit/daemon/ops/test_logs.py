"""Log lines: level and logger, request ids, journald priorities, one line per event."""

import io
import logging

from daemon.ops.logs import EventFormatter, request_id, stream_is_journal, under_systemd


def record(level: int, message: str, exc: bool = False) -> logging.LogRecord:
    info = None
    if exc:
        try:
            raise ValueError("boom")
        except ValueError:
            import sys

            info = sys.exc_info()
    return logging.LogRecord("daemon.x", level, __file__, 1, message, (), info)


def test_plain_lines_carry_level_logger_and_request_id():
    formatter = EventFormatter(timestamps=False, journal=False)
    assert formatter.format(record(logging.INFO, "hello")) == "INFO daemon.x: hello"
    token = request_id.set("abc123")
    try:
        assert formatter.format(record(logging.INFO, "hi")) == "INFO daemon.x: [abc123] hi"
    finally:
        request_id.reset(token)


def test_journald_lines_have_a_priority_and_one_line_per_event():
    formatter = EventFormatter(timestamps=False, journal=True)
    assert formatter.format(record(logging.ERROR, "bad")) == "<3>ERROR daemon.x: bad"
    assert formatter.format(record(logging.WARNING, "w")).startswith("<4>")
    folded = formatter.format(record(logging.ERROR, "failed", exc=True))
    assert "\n" not in folded and "ValueError: boom" in folded


def test_systemd_detection(tmp_path):
    assert under_systemd({"INVOCATION_ID": "x"}) and not under_systemd({})
    with open(tmp_path / "f", "w") as f:
        import os

        st = os.fstat(f.fileno())
        assert stream_is_journal(f, {"JOURNAL_STREAM": f"{st.st_dev}:{st.st_ino}"})
        assert not stream_is_journal(f, {"JOURNAL_STREAM": "1:2"})
        assert not stream_is_journal(io.StringIO(), {"JOURNAL_STREAM": "1:2"})
