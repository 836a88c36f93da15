"""Verdicts: one Session per test x model x options answers every question about the test
(outcomes, verdicts, witnesses, blame, violations, mutants); check judges expectations into a
Result; explain, blame, cycle and mutate say why."""
