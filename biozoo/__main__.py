import sys

from biozoo.cli import main

sys.exit(main())
