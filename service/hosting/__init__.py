"""Serving the WSGI application: waitress (one process), gunicorn workers, TLS, addresses, and the
guards against slow clients and stop signals. The app embeds the service through `server`."""
