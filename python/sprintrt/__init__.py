"""sprintrt for Python: RETURNN's Sprint worker pool, on sprintrt.

``SprintInstancePool`` has the class method and the methods RETURNN's
callers use (``returnn.sprint.error_signals``): one pool per equal
``sprint_opts``, ``get_batch_loss_and_error_signal``,
``get_automata_for_batch`` and ``lock``. ``SeqTrainScheduler`` is the
sequence-training scheduler over such a pool, with the operations of the C++
facade ``seqtrain_client``. Errors raise ``sprintrt.Error`` (its ``code`` is
the C++ error code's name, its text the C++ message); bad arguments raise
``TypeError`` or ``ValueError`` naming the argument.

Arrays are handed to C++ as they are when they are aligned C-contiguous
float32, converted otherwise. ``get_batch_loss_and_error_signal`` reads such
an array in place: do not change it from another thread until the call
returns (after a failed batch, a segment that timed out may still be read a
little later; the array is kept alive until then).

sprintrt's logs go through Python's ``logging``: the ``sprintrt`` logger,
the Sprint children's output lines under ``sprintrt.child`` (see
``set_log_level``).

In a forked child (``os.fork``, a DataLoader worker), the parent's pools and
schedulers raise ``sprintrt.Error`` naming the parent process, and
``SprintInstancePool.get_global_instance`` makes new pools there, with a
runtime of the child's (``_fork``).
"""

from . import _fork  # noqa: F401 (importing it registers the after-fork hook)
from ._executables import executable_path
from ._logging import set_log_level
from ._pool import PartialBatch, SprintInstancePool
from ._scheduler import SeqTrainScheduler
# The binding's names that are sprintrt's too (Pool, Scheduler, canonical_options and
# shutdown are not in __all__, but were always importable from here).
from ._sprintrt import (Error, Pool, Scheduler, SeqTrainBatch, SeqTrainPart,  # noqa: F401
                        canonical_options, seqtrain_error_signal, shutdown, version)
from .options import Options

#: sprintrt's version, "major.minor.patch" (semantic versioning; while 0.x, a
#: breaking change bumps the minor version): the C++ library's, which the
#: extension was built from.
__version__: str = version

__all__ = ["Error", "Options", "PartialBatch", "SeqTrainBatch", "SeqTrainPart",
           "SeqTrainScheduler", "SprintInstancePool", "executable_path", "seqtrain_error_signal",
           "set_log_level", "version"]
