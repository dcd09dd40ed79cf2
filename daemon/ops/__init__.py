"""Ops: running Hearth on a host.

Logs (journald priorities, request ids), Prometheus metrics, systemd's notify
and watchdog, mDNS announcements, the TLS certificate, in-flight request
tracking, a request's deadline (``deadline``), the asyncio plumbing long-lived
objects share (a bounded event ``stream``, the ``tasks`` an owner spawns), and the
file helpers every writer shares (atomic JSON writes, file locks). Nothing here
knows about speech. Ops may import ``daemon.errors``, ``daemon.config`` and the
package version, and nothing else of Hearth's: what it needs to read from the
engines (metrics) it takes as a structural type.
"""
