import sys

from ._runner import main

sys.exit(main())
