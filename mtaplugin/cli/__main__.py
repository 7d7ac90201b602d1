"""``python -m mtaplugin.cli``: the same as the ``mtaplugin`` command."""

import sys

from mtaplugin.cli import main

sys.exit(main())
