"""`--executor local|dask [--scheduler ADDR]`: the options and their checks. Light (no worker
pool, no Dask imported) so that building the command line stays fast."""
from __future__ import annotations

from dataclasses import dataclass

from ..errors import CheckerError

KINDS = ("local", "dask")


@dataclass(frozen=True)
class Executor:
    kind: str = "local"
    scheduler: str | None = None        # dask: a scheduler address; None: a LocalCluster here


LOCAL = Executor()


def add_executor_options(p) -> None:
    p.add_argument("--executor", choices=KINDS, default="local",
                   help="where tests run: local worker processes (default) or a Dask distributed cluster "
                        "(pip install 'ptxmc[dist]')")
    p.add_argument("--scheduler", metavar="ADDR",
                   help="--executor dask: the scheduler's address (tcp://HOST:PORT); without it a "
                        "LocalCluster of --jobs workers is started here")


def executor_of(args) -> Executor:
    """The executor the options name, checked before any work (dask importable, a scheduler only
    with --executor dask)."""
    kind, scheduler = getattr(args, "executor", "local"), getattr(args, "scheduler", None)
    if scheduler is not None and kind != "dask":
        raise CheckerError("--scheduler needs --executor dask")
    if kind == "dask":
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise CheckerError("--executor dask needs Dask distributed: pip install 'ptxmc[dist]'") from None
        return Executor("dask", scheduler)
    return LOCAL
