"""Where `ApiClient` used to live; kept so existing imports keep working.

The client is now the package `app.api` (token auth, retry policy, the wire exchange and the
operations in separate modules); import from there in new code. This module re-exports exactly
`app.api.__all__`, so the two can never drift apart.
"""

from app.api import *  # noqa: F403 - the re-export is the point of this module
from app.api import __all__ as __all__
