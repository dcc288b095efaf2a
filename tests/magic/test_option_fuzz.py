"""A fuzzer of %%tilekernel's options: hostile values for every option, in random combinations, on
kernels that compute, do nothing, or are C++. Each cell either runs or stops with one message box:
never a Python traceback, never a path into tileworkbench's code, never an output that is not
strict JSON (Jupyter warns about NaN and infinity in outputs).

The default run takes a few seconds; TILEWORKBENCH_MAGIC_FUZZ_SECONDS=600 fuzzes for ten minutes
(new seeds until the time is up), TILEWORKBENCH_MAGIC_FUZZ_SEED picks the first seed."""
import json
import os
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
from hypothesis import HealthCheck, given, seed, settings
from hypothesis import strategies as st
from IPython.core.error import UsageError
from IPython.utils.capture import capture_output

from tileworkbench.magic.diagnostics import TileKernelCellError
from tileworkbench.runtime import device

from .conftest import ADD

SECONDS = float(os.environ.get("TILEWORKBENCH_MAGIC_FUZZ_SECONDS", "0"))
FIRST_SEED = int(os.environ.get("TILEWORKBENCH_MAGIC_FUZZ_SEED", "0"))
EXAMPLES = 12   # per seed: a few seconds in the default run

NOTHING = "def nothing(a, TILE: ct.Constant[int]):\n    pass\n"
CPP = "__global__ void fill(float* x, int n) { int i = threadIdx.x; if (i < n) x[i] = 1.0f; }\n"
BODIES = {"add": ADD, "nothing": NOTHING, "cpp": CPP}

# Python expressions a user may type for a grid, a block, an argument or an executor
EXPRESSIONS = ["1/0", "()", "(0,)", "(-1,)", "(2**40,)", "(2**24,)", "(1, 2, 3, 4)", "None", "'x'", "1.5", "(1.0,)",
               "(True,)", "float('nan')", "float('inf')", "[1]", "undefined_name", "(", "", "lambda: 0", "{}", "a",
               "ct", "10**400", "(1,) * 3", "(2, 2)", "(1,)", "3", "256", "(32, 8)", "(1025,)", "(1024, 2)",
               "shut", "pool", "x", "\u00e9t\u00e9", "1+" * 200 + "1", "print('hi')", "(1, 'x')", "2**63"]
ARGS = ["a, b, c, 4", "a, b", "a, b, c, x", "a, b, c, 1e400", "a, b, c, -4", "a, b, c, 4, 5", "a, b, c, 0",
        "a, b, c, 3", "a, b, c, 2**40", "a, b, c, TILE", "a[::2], b, c, 4", "np.zeros((2, 2)), b, c, 4",
        "a.astype(np.float64), b, c, 4", "None, None, None, None", "a, 4", "a, TILE", "a", "1/0", "",
        "a, b, c, 'x'", "a, b, c, float('nan')", "c, 10"]
SWEEPS = ["TILE=1e400", "NOPE=1,2", "TILE=", "=1", "TILE=1,,2", "TILE=abc", "TILE=(1,2)", "TILE=-4", "TILE=0",
          "TILE=3", "TILE=10**30", "TILE=100000000000000000000000000000", "TILE='x'", "TILE=nan", "TILE=2,4",
          "TILE=1 TILE=2", "TILE=4 OTHER=1", "\"unclosed", "TILE=1j", "TILE=[1]*3", "TILE=2,4 NOPE=1"]
OPTIONS = {
    "--grid": st.sampled_from(EXPRESSIONS),
    "--args": st.sampled_from(ARGS),
    "--sweep": st.sampled_from(SWEEPS) | st.text(max_size=12),
    "--block": st.sampled_from(EXPRESSIONS),
    "--smem": st.sampled_from(["0", "-1", "99999999999", "x", "48000"]),
    "--arch": st.sampled_from(["sm_90", "sm_80", "banana", "sm_", "sm_90a", "sm_1000000", "''"]),
    "--show": st.sampled_from(["ir", "cuda", "ptx", "resources", "log", "asm"]),
    "--workers": st.sampled_from(["1", "0", "-3", "x", "1"]),
    "--executor": st.sampled_from(["pool", "shut", "x", "None", "1/0", "client"]),
    "--lang": st.sampled_from(["python", "cpp", "rust"]),
}
FLAGS = ["--viz", "--bench", "--cpu", "--ncu"]


def quoted(value: str) -> str:
    return '"' + value.replace('"', "'") + '"'


@st.composite
def cells(draw):
    """(header line, body) of a %%tilekernel cell with a few hostile options."""
    body = draw(st.sampled_from(sorted(BODIES)))
    names = draw(st.lists(st.sampled_from(sorted(OPTIONS)), max_size=4, unique=True))
    if body == "cpp" and "--lang" not in names:
        names.append("--lang")
    words = [f"{n} {quoted(draw(OPTIONS[n]))}" if n != "--lang" or body != "cpp" else "--lang cpp" for n in names]
    words += draw(st.lists(st.sampled_from(FLAGS), max_size=2, unique=True))
    if draw(st.booleans()):   # the cases that reach a launch
        words += ['--grid "(3,)"', f'--args "{"a, b, c, 4" if body == "add" else "a, 4"}"']
    if draw(st.integers(0, 9)) == 0:
        words.insert(0, draw(st.sampled_from(["add", "nothing", "nope", "123", "fill<float>"])))
    return " ".join(draw(st.permutations(words))), BODIES[body]


class Client:   # a Dask-style client whose executor is shut down
    def __init__(self, pool):
        self.pool = pool

    def get_executor(self):
        return self.pool


@pytest.fixture
def fuzz_shell(shell, monkeypatch):
    monkeypatch.setattr(device, "unavailable_reason", lambda: "no CUDA device found")
    monkeypatch.setattr(device, "gpu_available", lambda: False)
    pool, shut = ThreadPoolExecutor(1), ThreadPoolExecutor(1)
    shut.shutdown()
    shell.user_ns.update(x=np.zeros((64, 64), np.float32), pool=pool, shut=shut, client=Client(shut))
    yield shell
    pool.shutdown()


def one_message_or_a_result(shell, line: str, body: str) -> None:
    with capture_output() as out:
        try:
            shell.run_cell_magic("tilekernel", line, body)
        except UsageError:   # IPython's own one-line message for an option argparse refuses
            pass
        except TileKernelCellError as error:
            box = "\n".join(error._render_traceback_())
            assert "Traceback" not in box and "tileworkbench/" not in box, f"%%tilekernel {line}\n{box}"
        except Exception as error:  # noqa: BLE001 - the fuzzer's finding
            raise AssertionError(f"%%tilekernel {line}\nraised {type(error).__name__}: {error}") from error
    printed = out.stdout + out.stderr
    assert "Traceback" not in printed, f"%%tilekernel {line}\n{printed}"
    for output in out.outputs:   # what Jupyter sends as JSON: NaN or infinity makes it warn
        json.dumps(output.data, allow_nan=False, default=str)


def fuzz_one_seed(shell, k: int) -> None:
    @seed(k)
    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=False,
              suppress_health_check=list(HealthCheck))
    @given(cells())
    def cell_gets_one_message(cell):
        one_message_or_a_result(shell, *cell)
    cell_gets_one_message()


def test_hostile_option_values_give_one_message_each(fuzz_shell):
    fuzz_one_seed(fuzz_shell, FIRST_SEED)
    start, k = time.monotonic(), FIRST_SEED + 1
    while time.monotonic() - start < SECONDS:
        fuzz_one_seed(fuzz_shell, k)
        k += 1
    if SECONDS:   # a long run says how much it covered (pytest -s shows it)
        print(f"magic options fuzzer: seeds {FIRST_SEED}-{k - 1}, up to {EXAMPLES} cells each, "
              f"{time.monotonic() - start:.0f} s: every cell ran or gave one message")


def test_the_fuzzer_notices_a_traceback_and_a_non_json_output(fuzz_shell, monkeypatch):
    from IPython.display import display

    from tileworkbench.magic import actions

    def broken(*args, **kwargs):
        raise RuntimeError("an internal error")
    monkeypatch.setattr(actions, "launch", broken)
    with pytest.raises(AssertionError, match="raised RuntimeError: an internal error"):
        one_message_or_a_result(fuzz_shell, '--grid "(3,)" --args "a, b, c, 4"', ADD)
    monkeypatch.setattr(actions, "launch", lambda *args, **kwargs: display({"text/plain": float("inf")}, raw=True))
    with pytest.raises(ValueError, match="Out of range float"):
        one_message_or_a_result(fuzz_shell, '--grid "(3,)" --args "a, b, c, 4"', ADD)
