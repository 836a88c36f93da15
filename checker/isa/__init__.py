"""The PTX instruction families, one module each, listed in one registry (registry.py): each
family's table rows carry the accepted syntax, its validation and its lowering to events."""
