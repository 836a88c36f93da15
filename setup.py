"""Build hook (the metadata is in pyproject.toml): ship the repository's top-level `axioms/`
(the cat models) and `litmus/` (the bundled suites) inside the package, as `checker/axioms/`
and `checker/litmus/`, where checker.resources finds them once installed. The source tree keeps
them at the top; an editable install (`pip install -e .`) reads them from there."""
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
DATA = {"axioms": ("*.cat",), "litmus": ("*.yaml", "*.md")}


class build_py_with_data(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        for folder, patterns in DATA.items():
            for pattern in patterns:
                for src in sorted((HERE / folder).rglob(pattern)):
                    rel = src.relative_to(HERE)
                    if any(part.startswith(".") for part in rel.parts):
                        continue
                    dst = Path(self.build_lib, "checker", rel)
                    self.mkpath(str(dst.parent))
                    self.copy_file(str(src), str(dst), preserve_mode=False)


setup(cmdclass={"build_py": build_py_with_data})
