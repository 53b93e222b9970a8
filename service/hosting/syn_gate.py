"""Stop a listening socket taking new connections without closing it, so that closing it later
resets nobody (Linux; elsewhere nothing changes).

Why: while clients keep connecting, a listener's last close resets every connection the kernel
completed in between, and those clients have usually sent their request by then: a POST that
may or may not have happened, which a client cannot safely retry. `serve --workers` met this in
about 1 stop in 25 under load (`test_sigterm_under_load_fails_no_accepted_request`: one
`ReadError` or "server disconnected" among the refusals), however short the window between a
worker's last look at its accept queue and its close.

How: a classic BPF socket filter that drops bare SYNs (SYN without ACK). The kernel then ignores
new connection attempts; their clients resend the SYN about a second later, find nothing
listening and are refused, which clients and balancers retry elsewhere. Handshakes already under
way (their final ACK) and established connections pass, so what is queued can still be accepted
and answered. A filter belongs to the socket, not to a process: the gunicorn master, which holds
the listener every worker shares, closes the gate for all of them at once when the whole server
stops (and only then: a worker recycled after `max_requests` or replaced on a reload leaves the
socket to the others, open).
"""

from __future__ import annotations

import ctypes
import select
import socket
import struct
import sys
from typing import Any

SO_ATTACH_FILTER = 26
"""Linux's SO_ATTACH_FILTER (also SO_GET_FILTER); Python's socket module does not name it."""

_LOAD_BYTE = 0x30  # BPF_LD | BPF_B | BPF_ABS
_JUMP_IF_SET = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_FLAGS = 13  # the TCP header's flags byte (a TCP socket's filter sees the segment from there)
_ACK = 0x10
_SYN = 0x02

_DROP_BARE_SYN = (
    (_LOAD_BYTE, 0, 0, _FLAGS),
    (_JUMP_IF_SET, 2, 0, _ACK),  # ACK set (handshake's end, any established segment): keep
    (_JUMP_IF_SET, 0, 1, _SYN),  # SYN without ACK: a new connection, dropped
    (_RETURN, 0, 0, 0),
    (_RETURN, 0, 0, 0xFFFFFFFF),
)


def close_gate(sock: socket.socket) -> bool:
    """Make `sock` (listening) ignore new connection attempts; False where that cannot be done
    (not Linux, or the socket is gone): the caller then closes as before."""
    if not _is_linux():
        return False
    code = b"".join(struct.pack("HBBI", *instruction) for instruction in _DROP_BARE_SYN)
    program = ctypes.create_string_buffer(code, len(code))  # the kernel copies it
    header = struct.pack("HP", len(_DROP_BARE_SYN), ctypes.addressof(program))  # sock_fprog
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, header)
    except OSError:
        return False
    return True


def gate_closed(sock: Any) -> bool:
    """Whether `sock` has a filter attached (closed by `close_gate`: this service attaches no
    other). A worker then waits a moment for handshakes under way before it closes.

    Asked through libc with a zero length: SO_GET_FILTER then answers the filter's length in
    instructions and copies nothing (Python's getsockopt would hand the kernel a buffer it
    counts in instructions, 8 bytes each, which a longer filter than expected would overrun)."""
    if _LIBC is None:
        return False
    length = ctypes.c_uint32(0)
    try:
        done = _LIBC.getsockopt(
            sock.fileno(), socket.SOL_SOCKET, SO_ATTACH_FILTER, None, ctypes.byref(length)
        )
    except (OSError, ValueError, AttributeError):
        return False
    return done == 0 and length.value > 0


SETTLE = 0.1
"""How long a stopping server waits for another connection behind a closed gate: handshakes
already under way complete within a round trip."""


def connection_waiting(listener: Any, wait: float = 0.0) -> bool:
    """Whether a listening socket has a completed connection waiting to be accepted (waiting up
    to `wait` seconds for one)."""
    try:
        if not hasattr(select, "poll"):  # Windows (the desktop app's server): select() has
            readable, _, _ = select.select([listener], [], [], wait)  # no descriptor limit there
            return bool(readable)
        poll = select.poll()  # not select(): a worker's descriptors may pass FD_SETSIZE
        poll.register(listener, select.POLLIN)
        return any(events & select.POLLIN for _, events in poll.poll(int(wait * 1000)))
    except (OSError, ValueError, TypeError):
        return False


_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
"""The C library (Linux only: the gate is a Linux socket filter)."""


def _is_linux() -> bool:
    return sys.platform.startswith("linux")
