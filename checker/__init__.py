"""ptxmc: a model checker for the NVIDIA PTX memory consistency model.

Data flows one way: YAML -> LitmusTest (checker.litmus) -> EventStructure (checker.events)
-> cat model (checker.cat) -> engine (checker.engine_z3 / checker.engine_brute) -> Result.
"""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
AXIOMS_DIR = ROOT / "axioms"
LITMUS_DIR = ROOT / "litmus"
