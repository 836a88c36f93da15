"""The seam the engines see: events and static relations (events), value expressions (values),
the registry of base names (relations), may-set pruning (prune), the observable projection of
an outcome (observables), and the Builder that instruction families use to make events."""
