"""Fuzzing ptxmc: strategies (strategies.py), the invariant (props.py), the fuzz targets with
their CI budgets (targets.py), and the nightly campaign (campaign.py, not collected by pytest).
tests/cli/test_fuzz.py runs every target with its fixed, derandomized CI budget."""
