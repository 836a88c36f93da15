"""The unfolding stage: a loaded LitmusTest -> its straight-line variants (control paths x barrier
schedules), computed once per test, before lowering. No PTX semantics here beyond what deciding
a path or a barrier generation needs."""
