"""The fence advisor (`ptxmc fix`): the least-cost synchronization that makes a test meet its
expectations, proven minimal (fix), and the converse, the synchronization it can do without
(prune). Candidate edits (candidates, edits, costs), the target (target), edited programs and
their executions (program, transfer), the searches (problem, cegis, exhaustive), explanations
(supplies), and the YAML diff (yamlpatch, output). docs/fix.md describes the whole."""
