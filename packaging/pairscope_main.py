"""The bundled app's entry script (packaging/build-app.sh): the ``pairscope`` command.

Without arguments it opens the window on the last project, else the bundled demo; every
``pairscope`` command works too (``pairscope demo PATH``, ``pairscope stats`` …).
"""

import sys

from pairscope.app.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
