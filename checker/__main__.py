"""`python -m checker` = `ptxmc`."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main(fast_exit=True))
