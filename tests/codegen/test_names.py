"""Any Python name survives the generated CUDA C++: kernels whose every parameter and variable
takes a C++ keyword, a CUDA builtin, a library function or a macro's name compile with NVRTC
(no GPU) and compute on the interpreter what the same kernel with plain names computes."""
import importlib.util
import keyword
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tileworkbench.codegen.names import RESERVED

from .test_compile import _nvrtc_missing, runtime

pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))

# Names a kernel must survive, stated here apart from the renaming lists: the reported ones, the
# macros the included CUDA headers define, and names that look like macros.
STATED = {"do", "new", "union", "this", "register", "signed", "int", "float", "half", "min", "max", "printf",
          "threadIdx", "blockIdx", "warpSize", "tw", "FLT_MAX", "INT_MIN", "M_PI", "CUDART_INF_F", "NAN",
          "assert", "sizeof", "uint32_t", "float4", "make_float4", "dim3", "__half", "_Tp", "__CUDA_ARCH__"}


def header_macros() -> set[str]:
    """Macro names defined by the CUDA headers the generated code includes."""
    names = set()
    for directory in runtime.cuda_include_dirs():
        for header in ("cuda_fp16.h", "cuda_fp16.hpp", "cuda_bf16.h", "cuda_bf16.hpp", "cuda_fp8.h", "cuda_fp8.hpp"):
            path = __import__("pathlib").Path(directory) / header
            if path.exists():
                names |= set(re.findall(r"^\s*#\s*define\s+([A-Za-z]\w*)", path.read_text(errors="replace"), re.M))
    return names


def python_names(names) -> list[str]:
    """Those that can be Python variable names, in a stable order."""
    return sorted(n for n in set(names) if n.isidentifier() and not keyword.iskeyword(n) and n != "ct")


NAMES = python_names(RESERVED | STATED | header_macros())


def kernel_source(kernel_name: str, params: list[str], locals_: list[str]) -> str:
    """A kernel: array parameters alternate with int scalars, locals chain through them, the last
    local is carried by a loop whose variable is the first local name."""
    arrays, scalars = params[0::2], params[1::2]
    signature = ", ".join([*params, "out_array"])
    lines = [f"def {kernel_name}({signature}):", "    acc_tile = ct.zeros((16,), ct.int32)"]
    lines += [f"    acc_tile = acc_tile + ct.load({a}, (0,), (16,))" for a in arrays]
    lines += [f"    acc_tile = acc_tile + {s}" for s in scalars]
    previous = "acc_tile"
    for name in locals_[1:]:
        lines.append(f"    {name} = {previous} + 1")
        previous = name
    if locals_:
        lines += [f"    for {locals_[0]} in range(2):", f"        {previous} = {previous} + {locals_[0]}"]
    lines.append(f"    ct.store(out_array, (0,), {previous})")
    return "import tileworkbench.tile as ct\n\n\n@ct.kernel\n" + "\n".join(lines) + "\n"


def load_kernel(tmp_path, source: str, name: str):
    path = tmp_path / f"names_{abs(hash(source))}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def check(tmp_path, kernel_name, params, locals_):
    """Compiles for sm_90 with NVRTC; the interpreter's result is the plain arithmetic."""
    kernel = load_kernel(tmp_path, kernel_source(kernel_name, params, locals_), kernel_name)
    arrays = [np.full(16, k + 1, np.int32) for k in range(len(params[0::2]))]
    scalars = [k + 1 for k in range(len(params[1::2]))]
    args = [arrays[k // 2] if k % 2 == 0 else scalars[k // 2] for k in range(len(params))]
    out = np.zeros(16, np.int32)
    import tileworkbench.tile as ct
    ct.launch(None, (1,), kernel, (*args, out))
    expected = sum(k + 1 for k in range(len(arrays))) + sum(scalars) + max(len(locals_) - 1, 0)
    expected += 1 if locals_ else 0  # the loop adds 0 then 1
    assert out.tolist() == [expected] * 16
    runtime.build(kernel.specialize((*args, out)), "sm_90")


BATCH = 64


@pytest.mark.parametrize("start", range(0, len(NAMES), BATCH))
def test_every_reserved_name_as_a_parameter_and_as_a_variable_compiles(start, tmp_path, monkeypatch):
    monkeypatch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path / "cache"))
    batch = NAMES[start:start + BATCH]
    check(tmp_path, "names_kernel", batch, [f"{n}_local" for n in batch[:1]] + batch)


def test_the_lists_hold_the_reported_names():
    assert {"do", "new", "union", "this", "register", "signed", "threadIdx", "warpSize"} <= set(NAMES)


@settings(max_examples=3, deadline=None)
@given(st.lists(st.sampled_from(NAMES), min_size=2, max_size=12, unique=True), st.sampled_from(NAMES),
       st.integers(0, 12))
def test_kernels_named_from_the_lists_compile(tmp_path_factory, names, kernel_name, split):
    tmp_path = tmp_path_factory.mktemp("names")
    params, locals_ = names[:split], names[split:]
    if kernel_name in names:
        kernel_name = kernel_name + "_kernel"
    check(tmp_path, kernel_name, params, locals_)
