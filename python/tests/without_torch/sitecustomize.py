"""A machine without PyTorch, for the tests: with this directory first on
PYTHONPATH, Python imports this module at start-up, and every `import torch`
in this interpreter, and in every Python it starts with the same environment,
fails with ImportError, whether PyTorch is installed or not (the ctest
python_tests_without_torch)."""

import sys

sys.modules["torch"] = None
