"""Start a job of N ranks on 127.0.0.1, each a fresh Python process, with a
bound on its time: for tests and benchmarks (training uses ``torchrun``).

The parent hosts the job's key-value store (``torch.distributed.TCPStore`` on
127.0.0.1), as torchrun's agent does; every child joins a gloo process
group through it, runs ``target(rank, world, store, **kwargs)`` and writes
what it returns (pickled) to a file the parent reads.  A child that raises
returns the exception's type name and message instead.

``target`` is ``"package.module:function"`` or ``"/path/to/file.py:function"``
(:func:`load_file`, which the tests also use for their helpers).
"""

import argparse
import datetime
import importlib
import importlib.util
import os
import pickle
import subprocess
import sys
import tempfile
import time
import traceback

__all__ = ["spawn", "RankResult", "child_env", "init_from_env", "load_file"]


class RankResult:
    """What one rank returned (``value``) or raised (``error``: type name and
    message), and its exit code (None when it was killed at the deadline)."""

    def __init__(self, rank, value=None, error=None, returncode=None, stderr=""):
        self.rank = rank
        self.value = value
        self.error = error
        self.returncode = returncode
        self.stderr = stderr

    @property
    def ok(self):
        return self.error is None and self.returncode == 0

    def __repr__(self):
        return f"RankResult(rank={self.rank}, ok={self.ok}, error={self.error!r})"


def child_env(threads=1):
    """The environment of a rank: one thread each for torch's pools, loopback only."""
    env = dict(os.environ)
    env.update(OMP_NUM_THREADS=str(threads), MKL_NUM_THREADS=str(threads),
               GLOO_SOCKET_IFNAME="lo", MASTER_ADDR="127.0.0.1")
    return env


def spawn(target, world, kwargs=None, *, timeout_s=120.0, pg_timeout_s=30.0, grace_s=10.0):
    """Run ``target`` on ``world`` ranks; return one :class:`RankResult` per rank.

    Every child is killed ``timeout_s`` seconds after the start if it has
    not exited (its result then has ``returncode`` None).  ``pg_timeout_s``
    is the process group's timeout.
    """
    import torch.distributed as dist  # deferred: torch (torch extra)
    store = dist.TCPStore("127.0.0.1", 0, world + 1, is_master=True, wait_for_workers=False,
                          timeout=datetime.timedelta(seconds=timeout_s))
    with tempfile.TemporaryDirectory(prefix="nf-ddp-") as tmp:
        args = os.path.join(tmp, "args.pkl")
        with open(args, "wb") as f:
            pickle.dump(kwargs or {}, f)
        procs = []
        for rank in range(world):
            cmd = [sys.executable, "-m", "neuron_fabric.host.ddp.launch", "--target", target,
                   "--rank", str(rank), "--world", str(world), "--port", str(store.port),
                   "--args", args, "--out", os.path.join(tmp, f"rank{rank}.pkl"),
                   "--pg-timeout", str(pg_timeout_s)]
            procs.append(subprocess.Popen(cmd, env=child_env(), stdout=subprocess.DEVNULL,
                                          stderr=open(os.path.join(tmp, f"rank{rank}.err"), "w")))
        deadline = time.monotonic() + timeout_s
        for p in procs:
            try:
                p.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=grace_s)
        results = []
        for rank, p in enumerate(procs):
            out = os.path.join(tmp, f"rank{rank}.pkl")
            with open(os.path.join(tmp, f"rank{rank}.err")) as f:
                err_text = f.read()[-4000:]
            value = error = None
            if os.path.exists(out):
                with open(out, "rb") as f:
                    value, error = pickle.load(f)
            code = p.returncode if p.returncode is not None and p.returncode >= 0 else None
            results.append(RankResult(rank, value, error, code, err_text))
    return results


def load_file(path):
    """The Python file ``path`` as a module, loaded by its path (``sys.path``
    untouched), once per process: a second call returns the same module."""
    path = os.path.abspath(path)
    name = f"_nf_file_{abs(hash(path))}"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            del sys.modules[name]
            raise
    return sys.modules[name]


def _load(target):
    where, name = target.rsplit(":", 1)
    module = load_file(where) if where.endswith(".py") else importlib.import_module(where)
    return getattr(module, name)


def init_from_env(timeout_s):
    """Join the job torchrun started (``MASTER_ADDR``, ``MASTER_PORT``, ``RANK``,
    ``WORLD_SIZE``) with gloo; return ``(rank, world, store)``, ``store`` being
    a client of the job's store (torchrun's agent hosts it; without torchrun,
    rank 0 does)."""
    import torch.distributed as dist  # deferred: torch (torch extra)
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    host, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    agent = os.environ.get("TORCHELASTIC_USE_AGENT_STORE", "").lower() == "true"
    timeout = datetime.timedelta(seconds=timeout_s)
    store = dist.TCPStore(host, port, world, is_master=(rank == 0 and not agent),
                          timeout=timeout, wait_for_workers=False)
    run = os.environ.get("TORCHELASTIC_RUN_ID", "job")
    dist.init_process_group("gloo", store=dist.PrefixStore(f"nf/{run}/pg", store), rank=rank,
                            world_size=world, timeout=timeout)
    return rank, world, dist.PrefixStore(f"nf/{run}/fabric", store)


def _child(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--target", required=True)
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--args", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pg-timeout", type=float, default=30.0)
    a = ap.parse_args(argv)
    import torch  # deferred: torch (torch extra)
    import torch.distributed as dist  # deferred: torch (torch extra)
    torch.set_num_threads(1)
    timeout = datetime.timedelta(seconds=a.pg_timeout)
    value = error = None
    try:
        store = dist.TCPStore("127.0.0.1", a.port, a.world + 1, is_master=False, timeout=timeout)
        dist.init_process_group("gloo", store=dist.PrefixStore("pg", store), rank=a.rank,
                                world_size=a.world, timeout=timeout)
        with open(a.args, "rb") as f:
            kwargs = pickle.load(f)
        value = _load(a.target)(a.rank, a.world, dist.PrefixStore("fabric", store), **kwargs)
    except BaseException as err:       # reported to the parent, whatever it is
        error = (type(err).__name__, str(err), traceback.format_exc()[-3000:])
    with open(a.out + ".tmp", "wb") as f:
        pickle.dump((value, error), f)
    os.replace(a.out + ".tmp", a.out)
    sys.stdout.flush()
    sys.stderr.flush()
    # Skip interpreter teardown: a process group whose peer vanished can block in it.
    os._exit(0 if error is None else 1)


if __name__ == "__main__":
    _child()
