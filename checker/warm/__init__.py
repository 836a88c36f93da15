"""A warm `ptxmc` for one-shot commands (off unless asked for): a resident process that has
imported the checker once, and runs each `ptxmc check` / `ptxmc outcomes` in a fresh fork of
itself on the caller's own stdin, stdout and stderr - the same code writing the same bytes as
the one-shot command, without Python importing ~200 modules per command.

    python -m checker.warm.server --detach       # start it (prints its socket); --stop ends it
    PTXMC_WARM=1 ptxmc outcomes test.yaml        # served warm when a current server runs

`client` is the `ptxmc` executable's entry: without PTXMC_WARM, or for any other command, or when
no server answers, it runs the one-shot command itself. `key` says which server may serve which
caller, and what makes a server stale; `server` is the resident process. docs/cli.md describes
the contract (what is keyed, what is refused).
"""
