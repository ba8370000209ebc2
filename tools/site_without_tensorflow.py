"""Make a site-packages folder of this venv without TensorFlow (symbolic links to the rest), for `make
test`'s JAX run: `python -S` with PYTHONPATH=FOLDER:. runs as on a machine where TensorFlow and
tensorflow-text are not installed.

    python tools/site_without_tensorflow.py FOLDER
"""

import shutil
import sys

from biozoo.testing import TENSORFLOW_DISTRIBUTIONS, site_without

if __name__ == "__main__":
    shutil.rmtree(sys.argv[1], ignore_errors=True)  # a fresh view of what is installed now
    print(site_without(sys.argv[1], TENSORFLOW_DISTRIBUTIONS))
