"""The front end: litmus-test text -> validated AST (checker.ast). YAML files and matrices
(litmus), herd conditions (conditions), PTX instruction text (ptx), the safe YAML reader
(yamlsafe). Meaning is given later, by the instruction families (checker.isa)."""
