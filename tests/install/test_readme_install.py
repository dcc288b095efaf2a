"""A newcomer's path: a fresh environment, the README's product command, then Run All on every
tutorial. Every tutorial must run without an error output (cells tagged `raises-exception` fail on
purpose) and without anything on stderr.

The install command is read out of README.md, so the README and this test cannot drift apart. The
JupyterLab extension is the one part not rebuilt when it is already built in the tree: its build
(node, rspack) is what the `pip install -e .` of the test command did moments ago, and skipping it
changes nothing that gets installed.
"""
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).parents[2]
NOTEBOOKS = ROOT / "notebooks"
KERNEL = "tileworkbench-fresh-install"
# What the README says of the product: Notebook 7 beside JupyterLab, and NVRTC and the tile compiler
# (CUDA Tile C++ cells) compiling without a GPU
PRODUCT_PROMISES = """
import jupyterlab, notebook
from tileworkbench.runtime import nvrtc, tile_cpp
print(nvrtc.unavailable_reason() or tile_cpp.unavailable_reason())
"""


def setup_commands() -> list[str]:
    """The README's set-up commands: the indented command lines of its "Set up and go" section."""
    section = (ROOT / "README.md").read_text().split("## Set up and go")[1].split("\n## ")[0]
    return [line.strip() for line in section.splitlines() if line.startswith("    ") and line.strip()]


def product_install_command() -> list[str]:
    """The install half of the README's command that opens JupyterLab."""
    commands = setup_commands()
    assert len(commands) == 2, f"the README should have two set-up commands (product, tests), found {commands}"
    (product,) = [c for c in commands if "jupyterlab" in c.split("&&")[-1]]
    install = shlex.split(product.split("&&")[0])
    assert install[:4] == ["python3", "-m", "pip", "install"], install
    return install


def test_the_readme_has_the_product_command_and_the_test_command():
    assert product_install_command()[4:] == ["-e", ".[lab]"]
    assert any(c.startswith("python3 -m pip install -e '.[test]' && python3 -m pytest") for c in setup_commands())


def fresh_install(env_dir: Path) -> Path:
    """A new virtual environment with the README's product install in it; its python."""
    subprocess.run([sys.executable, "-m", "venv", str(env_dir)], check=True, timeout=120)
    python = env_dir / "bin" / "python"
    env = outside_this_environment()
    if (ROOT / "tileworkbench" / "labextension" / "package.json").is_file():
        env["SKIP_JUPYTER_BUILDER"] = "1"
    command = [str(python), *product_install_command()[1:], "--quiet", "--disable-pip-version-check"]
    done = subprocess.run(command, check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return python


def outside_this_environment() -> dict:
    """The environment variables for a process of the fresh environment: no path into this one."""
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    return env


def kernel_in(python: Path, kernels_dir: Path) -> str:
    """A Jupyter kernel spec that starts `python`'s ipykernel (found through JUPYTER_PATH)."""
    spec = kernels_dir / "kernels" / KERNEL
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "fresh install", "language": "python"}))
    return KERNEL


def run_all(nb, kernel: str):
    """Run All as in JupyterLab, but keep going past an error so that every error is reported."""
    NotebookClient(nb, timeout=600, kernel_name=kernel, allow_errors=True,
                   resources={"metadata": {"path": str(NOTEBOOKS)}}).execute()
    return nb


def error_outputs(nb) -> list[str]:
    """Each error or stderr output of a cell not tagged `raises-exception`, as "cell N: text"
    (tracebacks without their colours)."""
    found = []
    for number, cell in enumerate(nb.cells):
        if cell.cell_type != "code" or "raises-exception" in cell.metadata.get("tags", []):
            continue
        for out in cell.outputs:
            if out.output_type == "error":
                traceback = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(out.traceback[-6:]))
                found.append(f"cell {number}: {out.ename}: {out.evalue}\n{traceback}")
            elif out.output_type == "stream" and out.name == "stderr":
                found.append(f"cell {number}: stderr: {out.text}")
    return found


@pytest.mark.slow
def test_every_tutorial_runs_without_an_error_after_the_readmes_product_install(tmp_path, monkeypatch):
    python = fresh_install(tmp_path / "venv")
    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "compile-cache"))  # a fresh machine compiles
    kernel = kernel_in(python, tmp_path / "jupyter")

    promised = subprocess.run([str(python), "-c", PRODUCT_PROMISES], check=False, capture_output=True, text=True,
                              timeout=120)
    assert promised.stdout.strip() == "None", promised.stdout + promised.stderr

    probe = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import sys, tileworkbench; print(sys.prefix, tileworkbench.__file__)")])
    outputs = run_all(probe, kernel).cells[0].outputs
    assert [o.get("text", "").split() for o in outputs] == [[str(tmp_path / "venv"), str(ROOT / "tileworkbench" /
                                                                                        "__init__.py")]], outputs

    failures = {}
    for path in sorted(NOTEBOOKS.glob("*.ipynb")):
        errors = error_outputs(run_all(nbformat.read(path, as_version=4), kernel))
        if errors:
            failures[path.name] = errors
    assert not failures, "\n\n".join(f"{name}:\n" + "\n".join(errors) for name, errors in failures.items())
