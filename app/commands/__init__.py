"""The app's command-line front ends, one module per command (`python -m app verify`,
`receipt check`, `issue-run`), over the same Qt-free features the screens use; :mod:`.run`
tells the commands from the GUI's options. Never imports Qt."""
