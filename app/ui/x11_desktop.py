"""Ask an X11 window manager to leave "show desktop" and give a window back (for the kiosk).

Openbox (and other window managers) answer Super+D by unmapping every window without minimising
it. Qt then defers any activation until the window is mapped again, so ``activateWindow`` and
``raise_`` from the app cannot bring it back (measured under Xvfb with openbox: the kiosk stayed
unmapped). What a pager or task bar does works: EWMH client messages to the root window,
``_NET_SHOWING_DESKTOP`` = 0 and ``_NET_ACTIVE_WINDOW`` for the window, with the source marked as
a pager (2) so focus-stealing prevention lets it through. python-xlib speaks the X protocol itself
(no C library to find in a bundle); anywhere else (Wayland, Windows, macOS, no DISPLAY) this does
nothing and says so.
"""

from __future__ import annotations

import contextlib
import logging
import os

log = logging.getLogger(__name__)

_PAGER_SOURCE = 2
"""EWMH source indication of a pager: a request the user made, never refused as focus stealing."""


def bring_back(window_id: int) -> bool:
    """End show-desktop mode and activate ``window_id``; True when the messages were sent."""
    if not os.environ.get("DISPLAY"):
        return False
    try:
        from Xlib import X, display, error  # Linux only (pyproject: sys_platform == 'linux')
        from Xlib.protocol import event
    except ImportError:
        return False
    try:
        connection = display.Display()
    except (error.DisplayError, OSError) as problem:
        log.info("kiosk: no X display to ask (%s)", type(problem).__name__)
        return False
    try:
        root = connection.screen().root
        mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
        messages = (
            (root.id, "_NET_SHOWING_DESKTOP", [0, 0, 0, 0, 0]),
            (window_id, "_NET_ACTIVE_WINDOW", [_PAGER_SOURCE, X.CurrentTime, 0, 0, 0]),
        )
        for target, name, data in messages:
            message = event.ClientMessage(
                window=target,
                client_type=connection.intern_atom(name),
                data=(32, data),
            )
            root.send_event(message, event_mask=mask)
        connection.flush()
        return True
    except error.XError as problem:
        log.info("kiosk: the window manager was not asked (%s)", type(problem).__name__)
        return False
    finally:
        with contextlib.suppress(Exception):
            connection.close()
