"""The front end: litmus-test text -> validated AST (checker.ast). YAML files and matrices
(litmus), herd conditions (conditions), a thread's PTX text cut into statements (ptx_text; one
instruction's text is parsed by checker.isa.syntax), the safe YAML reader (yamlsafe). Meaning
is given later, by the instruction families (checker.isa)."""
