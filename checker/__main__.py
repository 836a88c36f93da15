"""`python -m checker` = `ptxmc`."""
import sys

from .cli import console

if __name__ == "__main__":
    sys.exit(console())
