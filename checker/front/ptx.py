"""Moved: one instruction's text <-> Instr is checker.isa.syntax (issue 33: parsing and rendering
an instruction sits below the front end, so that checker.isa no longer imports checker.front).
This module stays only so that code written against the old name keeps working; import
checker.isa.syntax."""
import sys

from ..isa import syntax

sys.modules[__name__] = syntax
