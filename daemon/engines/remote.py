"""Remote OpenAI-compatible endpoints: choice, health, stickiness and failure.

One :class:`EndpointSet` serves one remote model (an ASR model, a group of voices,
the LLM) that may be reachable at several base URLs. Requests go to the healthy
endpoint with the fewest requests in flight; a conversation stays on the endpoint
it started on while that one is healthy, so the server's prefix cache keeps its
history. An endpoint that fails is taken out of the choice at once, and a health
check thread probes it every ``retry_s`` until it answers again; requests never
wait for those probes. The set counts requests, failures and fallbacks for
/metrics; the engines that use it decide what a failure falls back to.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import threading
import time
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from typing import TypeVar

import httpx

_LOGGER = logging.getLogger(__name__)
T = TypeVar("T")

PROBE_TIMEOUT_S = 2.0
"""Longest wait for one health check (s): a hung server must not hold its checker."""
MAX_STICKY = 4096
"""Conversations remembered for stickiness (least recently used forgotten first)."""
MAX_PROBE_BYTES = 1 << 20
"""Largest model list read from a health check (bytes)."""


class RemoteFailure(Exception):
    """One endpoint failed one request; ``reason`` is a stable kebab-case label."""

    def __init__(self, reason: str, detail: str, endpoint_down: bool = True) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail
        self.endpoint_down = endpoint_down
        """False when the server answered sanely but refused this request (a 4xx)."""


class AllEndpointsFailed(Exception):
    """Every endpoint of a set failed (or none was healthy) for one request."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(detail)
        self.reason = reason
        self.detail = detail


@dataclass
class RemoteEndpoint:
    """One base URL of a remote model, with its live state."""

    url: str
    outstanding: int = 0
    """Requests in flight now."""
    healthy: bool = True
    requests: int = 0
    failures: int = 0
    last_error: str = ""
    down_since: float = 0.0
    """time.monotonic() of the failure that took it out (0: healthy)."""
    picked: int = 0
    """Times chosen: breaks ties between equally loaded endpoints (round robin)."""


@dataclass(frozen=True)
class EndpointStats:
    """One endpoint's counters, for a metrics scrape."""

    kind: str
    model: str
    url: str
    healthy: bool
    outstanding: int
    requests: int
    failures: int


def base_urls(base_url: str, more: list[str]) -> list[str]:
    """The configured base URLs in order, without trailing '/' or repeats."""
    urls: list[str] = []
    for url in [base_url, *more]:
        url = url.strip().rstrip("/")
        if url and url not in urls:
            urls.append(url)
    return urls


def classify(exc: httpx.HTTPError) -> RemoteFailure:
    """A transport error as an endpoint failure with a stable reason."""
    if isinstance(exc, httpx.TimeoutException):
        reason = "timeout"
    elif isinstance(exc, httpx.ConnectError):
        reason = "connect"
    else:
        reason = "network"
    return RemoteFailure(reason, f"{type(exc).__name__}: {exc}")


def status_failure(status: int, body: bytes) -> RemoteFailure:
    """An HTTP error status as a failure: 5xx, 408 and 429 take the endpoint out."""
    detail = f"answered {status}: {body[:300].decode('utf-8', 'replace')}"
    down = status >= 500 or status in (408, 429)
    return RemoteFailure("status" if down else "refused", detail, endpoint_down=down)


def read_capped(chunks: Iterator[bytes], limit: int, deadline: float) -> bytes:
    """Join a response body of at most ``limit`` bytes, read before ``deadline``."""
    data = bytearray()
    for chunk in chunks:
        data += chunk
        if len(data) > limit:
            raise RemoteFailure("oversized", f"sent more than {limit} bytes")
        if time.monotonic() > deadline:
            raise RemoteFailure("timeout", "did not finish its answer in time")
    return bytes(data)


def probe(
    url: str, api_key: str = "", timeout_s: float = PROBE_TIMEOUT_S
) -> tuple[bool, list[str], str]:
    """Health-check one endpoint with ``GET {url}/models`` (blocking).

    Returns:
        (alive, the model ids it lists, a note): any answer below 500 means alive,
        as some servers (whisper servers) list no models.
    """
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    deadline = time.monotonic() + timeout_s
    try:
        with httpx.Client(timeout=httpx.Timeout(timeout_s), headers=headers) as client:
            with client.stream("GET", f"{url}/models") as resp:
                body = read_capped(resp.iter_bytes(), MAX_PROBE_BYTES, deadline)
                status = resp.status_code
    except httpx.HTTPError as exc:
        return False, [], classify(exc).detail
    except RemoteFailure as exc:
        return False, [], exc.detail
    if status >= 500:
        return False, [], f"answered {status}"
    if status != 200:
        return True, [], f"no model list (answered {status})"
    try:
        listed = json.loads(body).get("data") or []
        ids = [str(m["id"]) for m in listed if isinstance(m, dict) and "id" in m][:100]
    except (ValueError, AttributeError, TypeError):
        return True, [], "model list unreadable"
    return True, ids, "ok"


@dataclass
class EndpointSet:
    """The endpoints of one remote model; thread-safe (ASR and TTS call from workers)."""

    kind: str
    """"asr", "tts" or "llm" (metrics label)."""
    model: str
    urls: list[str]
    api_key: str = ""
    retry_s: float = 5.0
    """Seconds between health checks of an endpoint that failed."""
    endpoints: list[RemoteEndpoint] = field(init=False)
    fallbacks: collections.Counter[str] = field(init=False)
    """Requests served by the fallback, by reason."""

    def __post_init__(self) -> None:
        if not self.urls:
            raise ValueError("an endpoint set needs at least one URL")
        self.endpoints = [RemoteEndpoint(url) for url in self.urls]
        self.fallbacks = collections.Counter()
        self._lock = threading.Lock()
        self._sticky: collections.OrderedDict[str, RemoteEndpoint] = collections.OrderedDict()
        self._closed = threading.Event()
        self.probe: Callable[[str], bool] = lambda url: probe(url, self.api_key)[0]
        """The health check (tests may replace it)."""

    # ------------------------------------------------------------- choosing

    def acquire(self, key: str | None, tried: set[str], allow_down: bool) -> RemoteEndpoint | None:
        """The endpoint for the next attempt (counted as in flight), or None.

        Args:
            key: a conversation id to keep on one endpoint while it is healthy.
            tried: URLs already tried for this request.
            allow_down: with nothing healthy left, try an endpoint that failed before
                (a request with no fallback has nothing to lose).
        """
        with self._lock:
            ep = self._sticky.get(key) if key else None
            if ep is None or not ep.healthy or ep.url in tried:
                ready = [e for e in self.endpoints if e.healthy and e.url not in tried]
                if not ready and allow_down:
                    ready = [e for e in self.endpoints if e.url not in tried]
                if not ready:
                    return None
                ep = min(ready, key=lambda e: (e.outstanding, e.picked))
            if key:
                self._sticky[key] = ep
                self._sticky.move_to_end(key)
                while len(self._sticky) > MAX_STICKY:
                    self._sticky.popitem(last=False)
            ep.outstanding += 1
            ep.picked += 1
            ep.requests += 1
            return ep

    def release(self, ep: RemoteEndpoint, failure: RemoteFailure | None = None) -> None:
        """The attempt on ``ep`` ended; a failure that is the endpoint's takes it out."""
        with self._lock:
            ep.outstanding -= 1
            if failure is None:
                if not ep.healthy:
                    self._mark_up(ep)
                return
            ep.failures += 1
            ep.last_error = failure.detail
            if not failure.endpoint_down or not ep.healthy:
                return
            ep.healthy = False
            ep.down_since = time.monotonic()
        _LOGGER.warning(
            "Remote %s '%s' at %s failed (%s: %s); health-checking it every %.1f s",
            self.kind,
            self.model,
            ep.url,
            failure.reason,
            failure.detail,
            self.retry_s,
        )
        threading.Thread(
            target=self._check_until_up, args=(ep,), name=f"health {ep.url}", daemon=True
        ).start()

    def _mark_up(self, ep: RemoteEndpoint) -> None:
        ep.healthy = True
        ep.down_since = 0.0
        _LOGGER.info("Remote %s '%s' at %s is back", self.kind, self.model, ep.url)

    def _check_until_up(self, ep: RemoteEndpoint) -> None:
        """Probe a failed endpoint every ``retry_s`` until it answers (or the set closes)."""
        while not self._closed.wait(self.retry_s):
            with self._lock:
                if ep.healthy:
                    return  # a request found it working first
            if self.probe(ep.url):
                with self._lock:
                    if not ep.healthy:
                        self._mark_up(ep)
                return

    # ------------------------------------------------------------- running

    def run(
        self,
        call: Callable[[RemoteEndpoint, float], T],
        timeout_s: float,
        *,
        allow_down: bool,
        key: str | None = None,
    ) -> T:
        """``call(endpoint, seconds left)`` on endpoints in turn until one succeeds (blocking).

        Raises:
            AllEndpointsFailed: every endpoint failed, none was healthy, or the
                deadline passed; its reason is the last failure's.
        """
        walk = Attempts(self, key, allow_down, timeout_s)
        while (ep := walk.next()) is not None:
            try:
                result = call(ep, walk.deadline - time.monotonic())
            except RemoteFailure as exc:
                self.release(ep, exc)
                walk.failed(ep, exc)
                continue
            except BaseException:
                self.release(ep)
                raise
            self.release(ep)
            return result
        raise walk.exhausted()

    def count_fallback(self, reason: str) -> None:
        """Count one request served by the fallback."""
        with self._lock:
            self.fallbacks[reason] += 1

    def stats(self) -> list[EndpointStats]:
        """Each endpoint's counters."""
        with self._lock:
            return [
                EndpointStats(
                    self.kind, self.model, e.url, e.healthy, e.outstanding, e.requests, e.failures
                )
                for e in self.endpoints
            ]

    def close(self) -> None:
        """Stop the health checks; safe to call more than once."""
        self._closed.set()


class Attempts:
    """One request's walk over a set's endpoints: the next to try, and why each failed."""

    def __init__(
        self, endpoints: EndpointSet, key: str | None, allow_down: bool, timeout_s: float
    ) -> None:
        self.endpoints = endpoints
        self.key = key
        self.allow_down = allow_down
        self.deadline = time.monotonic() + timeout_s
        """On the monotonic clock (the event loop's too)."""
        self.tried: set[str] = set()
        self.reason = "down"
        self.details: list[str] = []
        self.timed_out = False

    def next(self) -> RemoteEndpoint | None:
        """The next endpoint to try (acquired), or None: none left or no time left."""
        if time.monotonic() >= self.deadline:
            self.timed_out = True
            return None
        ep = self.endpoints.acquire(self.key, self.tried, self.allow_down)
        if ep is not None:
            self.tried.add(ep.url)
        return ep

    def failed(self, ep: RemoteEndpoint, failure: RemoteFailure) -> None:
        """Note that ``ep`` failed this request."""
        self.reason = failure.reason
        self.details.append(f"{ep.url} {failure.detail}")

    def exhausted(self) -> AllEndpointsFailed:
        """The error once every endpoint was tried (or none was left to try)."""
        details = self.details or [
            "no time left" if self.timed_out and self.tried
            else "no endpoint is healthy (health checks continue)"
        ]  # fmt: skip
        reason = "timeout" if self.timed_out and not self.details else self.reason
        return AllEndpointsFailed(reason, "; ".join(details))


async def stream_failover(
    endpoints: EndpointSet,
    attempt: Callable[[RemoteEndpoint, float], AsyncIterator[T]],
    timeout_s: float,
    *,
    allow_down: bool,
    broke_off: Callable[[RemoteEndpoint, RemoteFailure], Exception],
    key: str | None = None,
) -> AsyncGenerator[T, None]:
    """One endpoint's stream, the endpoints tried in turn until one streams to its end.

    ``attempt(endpoint, deadline)`` streams from one endpoint and raises RemoteFailure
    when it fails. A failure before its first item tries the next endpoint; one after
    it is ``broke_off(endpoint, failure)`` (what was sent cannot be taken back).

    Raises:
        AllEndpointsFailed: every endpoint failed before streaming, none was healthy,
            or the deadline passed.
    """
    walk = Attempts(endpoints, key, allow_down, timeout_s)
    while (ep := walk.next()) is not None:
        started = False
        failure: RemoteFailure | None = None
        try:
            async with contextlib.aclosing(attempt(ep, walk.deadline)) as items:  # type: ignore[type-var]
                async for item in items:
                    started = True
                    yield item
        except RemoteFailure as exc:
            failure = exc
            if started:
                raise broke_off(ep, exc) from None
            walk.failed(ep, exc)
        finally:
            endpoints.release(ep, failure)
        if failure is None:
            return
    raise walk.exhausted()
