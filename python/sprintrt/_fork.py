"""The package's side of a fork (``os.fork``, a DataLoader worker): in the
child, the parent's pools and schedulers raise ``sprintrt.Error`` naming the
parent process (C++ abandoned the parent's runtime, see at_fork.hpp), and
``SprintInstancePool.get_global_instance`` makes new pools, with a runtime
of the child's. Importing this module registers the hook."""

from __future__ import annotations

import os
import sys
import threading

from . import _logging
from ._pool import SprintInstancePool


def _after_fork_in_child() -> None:
    """Renews the package's state in a forked child. C++ has already
    abandoned the parent's runtime (its ``pthread_atfork`` handler, see
    at_fork.hpp): the parent's binding objects raise ``sprintrt.Error``, and
    the next pool makes a runtime of this process. Here the pool registry
    forgets the parent's pools (so ``get_global_instance`` makes new ones),
    the locks that a thread of the parent may have held at the fork are made
    anew (no thread of the child could ever release them), and a thread of
    the child delivers its logs."""
    pool_class = SprintInstancePool
    for instance in pool_class.global_instances.values():
        # A caller that holds it (as RETURNN's do) then gets the pool's error.
        instance.lock = threading.RLock()
    pool_class.class_lock = threading.RLock()
    pool_class.global_instances = {}
    pool_class._instances_by_opts = {}
    _logging._renew_after_fork()
    # A child of multiprocessing's "fork" start method (a DataLoader worker)
    # ends with os._exit, without atexit: its own runtime would leave its
    # Sprint children behind. multiprocessing runs its finalizers first, but
    # clears those inherited from the parent once forked; an after-fork
    # function, run after that, registers ours.
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.register_after_fork(_after_fork_in_child, _shut_down_at_multiprocessing_exit)


def _shut_down_at_multiprocessing_exit(_: object) -> None:
    """Registers ``_at_exit`` with multiprocessing's exit of this process."""
    sys.modules["multiprocessing.util"].Finalize(None, _logging._at_exit, exitpriority=0)


os.register_at_fork(after_in_child=_after_fork_in_child)
