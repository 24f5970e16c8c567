"""`python3 -m labkit` (with tools/ on the path) is `tools/lab`."""
import sys

from labkit.cli import main

sys.exit(main())
