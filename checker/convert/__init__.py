"""Importers and an exporter between ptxmc's YAML suites and other tools' PTX litmus formats.

    ptxmc import FILE|DIR --from herd|dat3m|mixedproxy -o DIR
    ptxmc export FILE|DIR --to herd -o DIR

Modules: driver (files, naming, validation with ptxmc's own loader, the report), herd / dat3m /
mixedproxy (one importer each; their docstrings list the accepted subset and the mapping),
herdfile + herdcommon (herd's file layout, placement, initial state, conditions), conditions
(source conditions -> ptxmc conditions), controlflow (the one place that decides what labels and
branches become), emit (IR -> YAML), export (ptxmc -> herd), cli (the two subcommands).

Python use: `import_paths(paths, fmt)` / `import_text(text, fmt, path)` return the converted
YAML and the skipped tests with their reasons without writing anything; `export_paths(paths)`
likewise. The user documentation is docs/import-export.md.
"""

FORMATS = ("herd", "dat3m", "mixedproxy")

__all__ = ["FORMATS", "ImportRun", "ExportRun", "import_paths", "import_text", "export_paths"]


def __getattr__(name: str):
    """The names above, imported on first use (PEP 562): `ptxmc --help` imports this package."""
    if name in ("ImportRun", "import_paths", "import_text"):
        from . import driver

        return getattr(driver, name)
    if name in ("ExportRun", "export_paths"):
        from . import export

        return getattr(export, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
