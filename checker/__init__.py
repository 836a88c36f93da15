"""ptxmc: a model checker for the NVIDIA PTX memory consistency model.

Data flows one way: YAML -> LitmusTest (checker.front) -> validated instructions (checker.isa)
-> EventStructure (checker.model) -> cat model (checker.cat) -> engine (checker.engines) ->
Session and Result (checker.verdict, checker.results) -> printers, reports, the CLI.
"""
from .resources import AXIOMS_DIR, LITMUS_DIR, ROOT

__all__ = ["AXIOMS_DIR", "LITMUS_DIR", "ROOT"]
