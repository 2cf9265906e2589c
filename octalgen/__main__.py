"""``python -m octalgen`` is the ``octalgen`` command."""

import sys

from .cli import main

sys.exit(main())
