"""Loading a published script's definitions without running the script (benchmarks/published.py)."""
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import tileworkbench.tile
from benchmarks.published import extract, load

TUTORIAL = textwrap.dedent('''
    """A tutorial: a kernel, its wrapper, and a test and benchmark that run when the script runs."""
    import math
    import os
    import json

    try:
        from math import tau as TURN
        HAS_TAU = True
    except ImportError:
        HAS_TAU = False

    SCALE = 2 * TURN

    def helper(x):
        return x * SCALE

    def wrapper(x, n=4):
        return [helper(x) for _ in range(n)]

    class Function:
        @staticmethod
        def forward(x):
            return wrapper(x) + [math.pi]

    apply = Function.forward
    x = os.environ["NO_SUCH_VARIABLE"]     # the tutorial's test: needs what this machine lacks
    result = wrapper(x)
    print(json.dumps(result))
    raise SystemExit("the benchmark ran")
''')


def test_only_what_the_names_need_is_kept_in_file_order():
    kept = extract(TUTORIAL, ["wrapper"])
    assert "def helper" in kept and "SCALE = 2 * TURN" in kept and "from math import tau as TURN" in kept
    assert "import math\n" not in kept and "import os" not in kept and "json" not in kept
    assert "result" not in kept and "raise SystemExit" not in kept and "print" not in kept
    assert kept.index("TURN") < kept.index("SCALE") < kept.index("def helper") < kept.index("def wrapper")


def test_a_functions_own_variable_does_not_pull_in_a_top_level_one_of_that_name():
    assert "NO_SUCH_VARIABLE" not in extract(TUTORIAL, ["apply"])  # `x` of the functions is not the global x


def test_a_class_and_an_alias_of_its_method_bring_what_the_methods_use(tmp_path):
    path = tmp_path / "tutorial.py"
    path.write_text(TUTORIAL)
    module = load(path, ["apply"])
    assert module.apply(1.0)[0] == pytest.approx(4 * 3.141592653589793) and module.apply(1.0)[-1] == 3.141592653589793


def test_a_name_the_script_does_not_define_is_refused():
    with pytest.raises(LookupError, match="not defined at the top level: softmax"):
        extract(TUTORIAL, ["softmax", "wrapper"])


def test_cuda_tile_can_be_bound_to_tileworkbench_for_one_module(tmp_path):
    path = tmp_path / "Sample.py"
    path.write_text(textwrap.dedent('''
        import cuda.tile as ct
        from cuda.tile import PaddingMode
        ConstInt = ct.Constant[int]

        @ct.kernel
        def scale(x, y, TILE: ConstInt):
            i = ct.bid(0)
            ct.store(y, (i,), ct.load(x, (i,), (TILE,), padding_mode=PaddingMode.ZERO) * 2)

        if __name__ == "__main__":
            raise SystemExit("the sample's main ran")
    '''))
    before = sys.modules.get("cuda.tile")
    module = load(path, ["scale"], cuda_tile="tileworkbench")
    assert module.ct is tileworkbench.tile and module.PaddingMode is tileworkbench.tile.PaddingMode
    assert sys.modules.get("cuda.tile") is before  # nothing else sees the binding
    import numpy as np
    x, y = np.arange(8, dtype=np.float32), np.zeros(8, np.float32)
    tileworkbench.tile.launch(None, (2,), module.scale, (x, y, 4))
    assert y.tolist() == (2 * x).tolist()


def test_an_internal_cutile_module_names_itself_when_bound_to_tileworkbench(tmp_path):
    path = tmp_path / "Internal.py"
    path.write_text("from cuda.tile._compile import compile_tile\n\ndef f():\n    return compile_tile\n")
    with pytest.raises(ModuleNotFoundError, match="cuda.tile._compile is one of cuTile's internals"):
        load(path, ["f"], cuda_tile="tileworkbench")


def test_the_tutorials_script_takes_the_four_files_from_a_git_checkout(tmp_path):
    repo = tmp_path / "triton"
    (repo / "python" / "tutorials").mkdir(parents=True)
    files = ["02-fused-softmax.py", "03-matrix-multiplication.py", "05-layer-norm.py", "06-fused-attention.py"]
    for name in files:
        (repo / "python" / "tutorials" / name).write_text(f"NAME = {name!r}\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "tutorials"], ["tag", "v3.6.0"]):
        subprocess.run(git + command, check=True)
    work = tmp_path / "work"  # a repository holding only the script
    (work / "benchmarks").mkdir(parents=True)
    shutil.copy(Path(__file__).parents[2] / "benchmarks" / "prepare_triton_tutorials.sh", work / "benchmarks")
    subprocess.run(["git", "-C", str(work), "init", "-q"], check=True)
    done = subprocess.run(["bash", "benchmarks/prepare_triton_tutorials.sh", str(repo)], cwd=work,
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    folder = work / ".triton_tutorials"
    assert sorted(p.name for p in folder.iterdir()) == sorted(files + ["SOURCE"])
    assert "v3.6.0" in (folder / "SOURCE").read_text()
    assert (folder / "06-fused-attention.py").read_text() == "NAME = '06-fused-attention.py'\n"
