"""The package stands on its own (issue 20, item 1): a wheel built with `python -m build` carries
the models (axioms/*.cat) and the bundled suites (litmus/), installed into a fresh virtual
environment it runs `ptxmc --version`, `ptxmc run` and `ptxmc check` on bundled tests named by
their relative path from an unrelated folder, and it finds them inside the installed package.

Offline and quick: the build uses this environment's setuptools (--no-isolation, the test extra
brings setuptools and wheel), the fresh environment gets no pip and no dependencies of its own
(pip installs the wheel with --no-deps --no-index, and a .pth line lends it this environment's
site-packages, whose own .pth files - an editable install of ptxmc among them - are not run)."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import venv
import zipfile
from pathlib import Path

import pytest

from checker.resources import LITMUS_DIR, ROOT, model_hash, resolve_model
from checker.version import __version__

SOURCES = ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "bin", "checker", "axioms", "litmus", "docs")
MP = "litmus/core/MP.yaml::MP+rel.gpu+acq.gpu+sameCluster"


def _run(argv, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=600, **kw)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """Build the sdist and, from it, the wheel, from a copy of the sources (the checkout gets no
    build/ or *.egg-info)."""
    pytest.importorskip("build")
    base = tmp_path_factory.mktemp("build")
    src = base / "src"
    src.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    for name in SOURCES:
        p = ROOT / name
        if p.is_dir():
            shutil.copytree(p, src / name, ignore=ignore)
        elif p.exists():
            shutil.copy2(p, src / name)
    out = base / "dist"
    r = _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(src)])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    wheels = list(out.glob("ptxmc-*.whl"))
    assert len(wheels) == 1 and list(out.glob("ptxmc-*.tar.gz"))
    return wheels[0]


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict:
    """A fresh virtual environment with the wheel installed; returns its paths and an env."""
    home = tmp_path_factory.mktemp("venv")
    env_dir = home / "env"
    venv.EnvBuilder(with_pip=False).create(env_dir)
    bindir = env_dir / ("Scripts" if os.name == "nt" else "bin")
    python = bindir / ("python.exe" if os.name == "nt" else "python")
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    ours = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    Path(purelib, "zz-ptxmc-test-deps.pth").write_text("".join(f"{p}\n" for p in sorted(ours)))
    # (--ignore-installed: under a non-editable install of ptxmc, the lent site-packages already hold
    # a ptxmc, which pip would take as satisfying the wheel and install nothing)
    r = _run([sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "--no-index",
              "--ignore-installed", "--disable-pip-version-check", "--quiet", str(wheel)])
    assert r.returncode == 0, r.stdout + r.stderr
    elsewhere = home / "elsewhere"          # an unrelated folder: no litmus/ or axioms/ here
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PTXMC_DEBUG", "VIRTUAL_ENV")}
    env["PTXMC_CACHE_DIR"] = str(home / "cache")
    env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
    return {"python": str(python), "ptxmc": str(bindir / "ptxmc"), "purelib": purelib, "cwd": str(elsewhere),
            "env": env}


def test_wheel_carries_models_and_suites(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert "checker/axioms/ptx.cat" in names and "checker/axioms/sc.cat" in names
    bundled = sorted(n[len("checker/"):] for n in names if n.startswith("checker/litmus/") and n.endswith(".yaml"))
    here = sorted(p.relative_to(ROOT).as_posix() for p in LITMUS_DIR.rglob("*.yaml"))
    assert bundled == here
    assert "checker/cat/grammar.lark" in names
    assert not [n for n in names if n.startswith(("tests/", "axioms/", "litmus/"))]


def test_installed_package_finds_its_files_inside_itself(installed):
    r = _run([installed["python"], "-c", "import checker, checker.resources as r; "
              "print(checker.__file__); print(r.ROOT); print((r.AXIOMS_DIR / 'ptx.cat').is_file())"],
             cwd=installed["cwd"], env=installed["env"])
    assert r.returncode == 0, r.stderr
    module, root, found = r.stdout.splitlines()
    pkg = Path(installed["purelib"]).resolve() / "checker"
    assert Path(module).resolve().parent == pkg and Path(root).resolve() == pkg and found == "True"


def test_version_names_the_default_model_hash(installed):
    r = _run([installed["ptxmc"], "--version"], cwd=installed["cwd"], env=installed["env"])
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"ptxmc {__version__} (model ptx {model_hash(resolve_model(None))})\n"
    assert re.fullmatch(r"ptxmc \S+ \(model ptx [0-9a-f]{16}\)\n", r.stdout)


def test_run_a_bundled_file_from_elsewhere(installed):
    r = _run([installed["ptxmc"], "run", "litmus/core/CoWW.yaml", "--no-timing"], cwd=installed["cwd"],
             env=installed["env"])
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    count = len([t for t in lines if t.startswith("PASS")])
    assert count > 1 and lines[-1] == f"ptxmc: {count} tests: {count} pass"
    assert str(Path(installed["purelib"]) / "checker" / "litmus" / "core" / "CoWW.yaml") in r.stdout


def test_check_a_bundled_test_from_elsewhere(installed):
    r = _run([installed["ptxmc"], "check", MP, "P1:r0=1 /\\ P1:r1=0"], cwd=installed["cwd"], env=installed["env"])
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("Test MP+rel.gpu+acq.gpu+sameCluster  (model ")
    assert lines[0].endswith("checker/axioms/ptx.cat)")
    assert lines[2:4] == ["Forbidden", "  ruled out by: Causality"]
    r = _run([installed["ptxmc"], "check", "litmus/core/NoSuch.yaml::X", "true"], cwd=installed["cwd"],
             env=installed["env"])
    assert r.returncode == 4 and r.stderr == "ptxmc: litmus/core/NoSuch.yaml::X: no such file: litmus/core/NoSuch.yaml\n"


def test_python_api_from_the_installed_package(installed):
    code = ("import checker; x = checker.check('" + MP + "', 'P1:r0=1 /\\\\ P1:r1=0'); print(x.status)")
    r = _run([installed["python"], "-c", code], cwd=installed["cwd"], env=installed["env"])
    assert r.returncode == 0 and r.stdout == "forbidden\n", r.stderr


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the warm server is Linux-only")
def test_the_installed_ptxmc_is_the_script_and_a_warm_server_serves_it(installed, tmp_path):
    """The installed `ptxmc` is bin/ptxmc under the environment's interpreter (not pip's
    console-script launcher, whose `import re` cost every command ~6 ms), and with PTXMC_WARM=1 a
    warm server of the installed package serves it, writing what the one-shot command writes."""
    text = Path(installed["ptxmc"]).read_text()
    assert text.splitlines()[0] == f"#!{installed['python']}" or text.startswith("#!" + str(Path(installed["python"]).parent))
    assert text.split("\n", 1)[1] == (ROOT / "bin" / "ptxmc").read_text().split("\n", 1)[1]
    folder = tmp_path / "warm"
    env = {**installed["env"], "PTXMC_WARM_DIR": str(folder)}
    log = tmp_path / "log.jsonl"
    r = _run([installed["python"], "-m", "checker.warm.server", "--detach", "--log", str(log)], cwd=installed["cwd"],
             env=env)
    assert r.returncode == 0, r.stderr
    try:
        argv = [installed["ptxmc"], "outcomes", MP]
        one_shot = _run(argv, cwd=installed["cwd"], env=env)
        served = _run(argv, cwd=installed["cwd"], env={**env, "PTXMC_WARM": "1"})
        assert (served.returncode, served.stdout, served.stderr) == (one_shot.returncode, one_shot.stdout, one_shot.stderr)
        assert one_shot.returncode == 0 and "States " in one_shot.stdout
        assert ['"served"' in line for line in log.read_text().splitlines()].count(True) == 1
    finally:
        _run([installed["python"], "-m", "checker.warm.server", "--stop"], cwd=installed["cwd"], env=env)
