"""The paper's experiments on the host runtime: virtual-worker training
(``train``), the control-plane pilots (``pilots``) and the multi-hop study.

``single_thread_env`` gives a process one XLA and BLAS thread, so that
experiments run ``--jobs`` processes side by side, one per core, and a
rerun gives the same figures."""

import os

__all__ = ["single_thread_env"]


def single_thread_env():
    """Set the environment for one XLA / BLAS thread (read when the JAX
    backend starts, so call it before the first computation)."""
    os.environ["XLA_FLAGS"] = " ".join(filter(None, [
        os.environ.get("XLA_FLAGS", ""),
        "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"]))
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
