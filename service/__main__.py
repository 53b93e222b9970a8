"""`python -m service`: the headless service's command line (see :mod:`service.cli.main`)."""

from service.cli.main import main

if __name__ == "__main__":
    raise SystemExit(main())
