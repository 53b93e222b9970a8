"""The app's shell: its composition root (`context`), settings and secrets, start-up of the GUI,
resources, the self-test and the version."""
