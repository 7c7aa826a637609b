"""`python -m app.cli` runs the chronicle command."""

import sys

from app.cli import main

sys.exit(main())
