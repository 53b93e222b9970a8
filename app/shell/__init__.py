"""The app's composition root (`context`: the desk's clients, the embedded or office service,
the local issuer) and what it needs to start them: the office network's TLS, the held port,
restarting the office service, the bundle's resources and the version. Qt-free: the GUI's own
start-up is :mod:`app.ui.start`, the commands' is :mod:`app.commands`."""
