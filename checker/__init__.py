"""ptxmc: a model checker for the NVIDIA PTX memory consistency model.

Data flows one way: YAML -> LitmusTest (checker.front) -> validated instructions (checker.isa)
-> EventStructure (checker.model) -> cat model (checker.cat) -> engine (checker.engines) ->
Session and Result (checker.verdict, checker.results) -> printers, reports, the CLI.

The Python API (docs/api.md) is checker.api, re-exported here: `load`, `load_test`, `check`,
`explain`, `outcomes`, `run`, `session`. They and the bundled folders (`ROOT`, `AXIOMS_DIR`,
`LITMUS_DIR`, checker.resources) are imported on first use (PEP 562), so `import checker` stays
cheap.
"""
from .version import __version__

_API = ("load", "load_test", "check", "explain", "outcomes", "run", "session")
_RESOURCES = ("AXIOMS_DIR", "LITMUS_DIR", "ROOT")

__all__ = ["__version__", *_API, *_RESOURCES]


def __getattr__(name: str):
    if name in _API:
        from . import api

        return getattr(api, name)
    if name in _RESOURCES:
        from . import resources

        return getattr(resources, name)
    raise AttributeError(f"module 'checker' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
