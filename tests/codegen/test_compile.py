"""Every GPU test kernel compiles offline (no GPU) with NVRTC for sm_90, and for sm_80 where its code
differs by arch, and the generated code has the properties the backend promises."""
import linecache
import re

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.codegen import generate
from tileworkbench.codegen.cuda import GENERATED_LINES
from tileworkbench.kernels import vector_add
from tileworkbench.targets import arch_limits

from ..gpu.cases import CASES, LARGE_REDUCTIONS

runtime = pytest.importorskip("tileworkbench.runtime.launch")


def _nvrtc_missing() -> str | None:
    try:
        from tileworkbench.runtime.nvrtc import nvrtc_version
        nvrtc_version()
        runtime.cuda_include_dirs()
    except Exception as e:
        return f"needs NVRTC and the CUDA headers ({e}); pip install cuda-bindings nvidia-cuda-nvrtc nvidia-cuda-runtime"
    return None


pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None, reason=str(_nvrtc_missing()))


def _specializations():
    seen = {}
    for case in CASES:
        fn = case.kernel.specialize(case.args())
        seen.setdefault(fn.fingerprint(), (case.id, fn))
    return list(seen.values())


SPECIALIZATIONS = _specializations()


def _differs_by_arch(fn) -> bool:
    """Whether compiling `fn` for sm_80 checks anything its sm_90 compile does not: the generator wrote
    other code for it (tensor-core plans, pipeline stages, TMA, wgmma), or the code takes a path that
    depends on the arch it is compiled for (pipeline stages, the CUDA headers' 8-bit floats, which
    sm_89 and later convert in hardware)."""
    sm80, sm90 = (generate(fn, arch=arch).source for arch in ("sm_80", "sm_90"))
    return sm80 != sm90 or any(word in sm90 for word in ("cp_async", "stage", "__nv_fp8"))


# Each specialization compiles for sm_90, and for sm_80 too where that checks more (above).
COMPILES = [(case_id, fn, "sm_90") for case_id, fn in SPECIALIZATIONS] + \
    [(case_id, fn, "sm_80") for case_id, fn in SPECIALIZATIONS if _differs_by_arch(fn)]


@pytest.fixture(scope="module")
def fresh_cache(tmp_path_factory):
    """A kernel cache of this module's own, so every specialization below really compiles."""
    from tileworkbench.runtime import cache
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TILEWORKBENCH_CACHE_DIR", str(tmp_path_factory.mktemp("kernel-cache")))
        patch.setattr(cache, "_default", None)
        yield


# One test per specialization and architecture, so that parallel workers share the compiles out.
@pytest.mark.parametrize("case_id, fn, arch", COMPILES, ids=[f"{case_id}-{arch}" for case_id, _, arch in COMPILES])
def test_every_gpu_test_kernel_compiles(case_id, fn, arch, fresh_cache):
    compiled = runtime.build(fn, arch)
    resources = compiled.resources
    assert 0 < resources.registers <= 255
    assert resources.max_threads in (None, compiled.threads)


def test_a_gather_and_scatter_with_indices_affine_in_arange_move_16_byte_vectors():
    from ..gpu.cases import affine_gather_scatter
    x = np.zeros(4096, np.float32)
    compiled = runtime.build(affine_gather_scatter.specialize((x, x, 0, 1024)), "sm_90")
    assert re.search(r"ld\.global(\.nc)?\.v4\.(u32|b32|f32)", compiled.asm["ptx"])
    assert re.search(r"st\.global\.v4\.(u32|b32|f32)", compiled.asm["ptx"])


def test_vector_add_moves_16_byte_vectors_without_spills():
    x = np.zeros(4096, np.float32)
    compiled = runtime.build(vector_add.specialize((x, x, x, 1024)), "sm_90")
    assert re.search(r"ld\.global(\.nc)?\.v4\.(u32|b32|f32)", compiled.asm["ptx"])
    assert re.search(r"st\.global\.v4\.(u32|b32|f32)", compiled.asm["ptx"])
    resources = compiled.resources
    assert resources.local_bytes == 0 and not resources.spill_stores


def test_a_list_indexed_at_run_time_selects_its_array_in_registers():
    case = next(c for c in CASES if c.id == "list-sum-differing-lengths-float32")
    compiled = runtime.build(case.kernel.specialize(case.args()), "sm_90")
    assert "float* __restrict__ arrays_3_ptr" in compiled.asm["cuda"]
    assert "tw::list_item(k, arrays_0, arrays_1, arrays_2, arrays_3)" in compiled.asm["cuda"]
    assert compiled.resources.local_bytes == 0


@ct.kernel
def _first_of_list(arrays, out):
    ct.store(out, (0,), ct.load(arrays[0], (0,), (4,)))


def test_a_list_too_long_for_the_kernel_parameters_is_refused_naming_it():
    x = np.zeros(4, np.float32)
    generate(_first_of_list.specialize(([x] * 2000, x)))  # 32016 bytes: they fit
    with pytest.raises(ct.TileUnsupportedFeatureError, match=r"need 33616 bytes .* fewer arrays in `arrays`"):
        generate(_first_of_list.specialize(([x] * 2100, x)))


def test_generated_source_points_back_to_kernel_lines():
    x = np.zeros(4096, np.float32)
    source = generate(vector_add.specialize((x, x, x, 1024))).source
    line = vector_add._pyfunc.__code__.co_firstlineno + 4  # below the docstring
    assert f"// line {line}: ct.store(c, (i,), ct.load(a, (i,), (TILE,)) + ct.load(b, (i,), (TILE,)))" in source
    assert "const tw::tile<float, tw::shape<1024>>" in source


def test_line_directives_and_line_map_give_every_statement_its_kernel_line():
    x = np.zeros(4096, np.float32)
    generated = generate(vector_add.specialize((x, x, x, 1024)))
    file = vector_add._pyfunc.__code__.co_filename
    presumed, seen, named = None, [], []
    for text in generated.source.splitlines():  # replay the preprocessor's line numbering
        m = re.match(r'\s*#line (\d+)(?: "(.*)")?(?:  // line (\d+): .*)?$', text)
        if m:
            if m.group(3):   # the first statement of a kernel line: the directive shows the line
                assert m.group(1) == m.group(3)
                named.append(m.group(2))
            presumed = int(m.group(1))
            continue
        if presumed is not None:
            if text.strip().startswith(("const", "tw::")):
                seen.append((presumed, generated.line_map[(file, presumed)], text.strip()))
            presumed += 1
    first = vector_add._pyfunc.__code__.co_firstlineno
    # bid; then the loads, the add and the store, each numbered with its own kernel line
    assert [line - first for _, line, _ in seen] == [3, 4, 4, 4, 4]
    assert all(number == line for number, line, _ in seen)
    assert seen[-1][2].startswith("tw::store")
    assert named[0] == file and set(named[1:]) == {None}  # the file is named once
    assert f"#line {GENERATED_LINES}" in generated.source   # the signature and setup: numbered apart


def test_compile_errors_point_at_the_kernel_line(monkeypatch):
    from tileworkbench.codegen import cuda
    from tileworkbench.runtime.nvrtc import NvrtcError
    x = np.zeros(4096, np.float32)
    fn = vector_add.specialize((x, x, x, 1024))
    # a library call that does not exist, as a broken emission rule would write it
    monkeypatch.setitem(cuda.EMIT, "store", lambda e, op: e.emit("tw::no_such_store();"))
    with pytest.raises(NvrtcError) as caught:
        runtime.build(fn, "sm_90")
    error = caught.value
    assert error.loc.line == vector_add._pyfunc.__code__.co_firstlineno + 4
    assert error.loc.source_line.strip().startswith("ct.store(c, (i,)")
    assert '"no_such_store"' in str(error) and "kernel `vector_add`" in str(error)


@ct.kernel
def double(float, new, TILE: ct.Constant[int]):  # names Python allows and C++ reserves
    i = ct.bid(0)
    ct.store(new, (i,), ct.load(float, (i,), (TILE,)) * 2)


def test_names_that_cpp_reserves_are_renamed_in_the_generated_code():
    x = np.zeros(8, np.float32)
    compiled = runtime.build(double.specialize((x, x, 4)), "sm_90")
    assert compiled.name == "double_"
    assert "tw::load<tw::shape<4>>(float_," in compiled.asm["cuda"] and "tw::store<tw::shape<4>>(new_," in compiled.asm["cuda"]


def test_non_finite_constants_are_written_by_name():
    from tileworkbench.codegen.cuda import literal
    from tileworkbench.ir.types import float32, float64
    assert literal(float("nan"), float32) == "tw::quiet_nan_f()"
    assert literal(float("-inf"), float32) == "-tw::infinity_f()"
    assert literal(float("inf"), float64) == "tw::infinity_d()"
    negative_nan = np.array(0xFFC00000, np.uint32).view(np.float32).item()
    assert literal(negative_nan, float32).startswith("__int_as_float(")  # another payload keeps its bits


# the most dynamic shared memory a block may opt into
SHARED_MEMORY_LIMIT = {arch: arch_limits(arch).shared_per_block_optin for arch in ("sm_80", "sm_86", "sm_90")}


@pytest.mark.parametrize("case_id", LARGE_REDUCTIONS)
def test_reductions_of_tiles_larger_than_shared_memory_fit_every_arch(case_id):
    """A (512, 128) float32 tile is 256 KB; its reduction stages it in slices instead."""
    case = next(c for c in CASES if c.id == case_id)
    generated = generate(case.kernel.specialize(case.args()))
    assert generated.smem_bytes <= min(SHARED_MEMORY_LIMIT.values())


def _kernel_from_text(text: str, filename: str):
    """The kernel defined by `text`, as if it came from a file called `filename`."""
    linecache.cache[filename] = (len(text), None, text.splitlines(keepends=True), filename)
    scope = {"ct": ct}
    exec(compile(text, filename, "exec"), scope)
    return next(v for v in scope.values() if isinstance(v, ct.Kernel))


HOSTILE_KERNEL = '''\
@ct.kernel
def __half(a, b):  # a name the CUDA headers use
    NAN = ct.load(a, (0,), (128,))  # C:\\ \\
    α = NAN + 1  # the next line must not join this comment \\
    ct.store(b, (0,), α)  # ??/
'''


@pytest.mark.parametrize("filename", ['cell\n#define b a\n"', "C:\\ \\", "ünïcode ??/ \"quoted\".py",
                                      "<cell 1> (a, b) [x] {y} #z 'q' %s &|;!~*"])
def test_user_text_in_comments_names_and_file_names_cannot_change_the_generated_code(filename):
    kernel = _kernel_from_text(HOSTILE_KERNEL, filename)
    x = np.arange(128, dtype=np.float32)
    compiled = runtime.build(kernel.specialize((x, x)), "sm_80")
    assert not any(line.lstrip().startswith("#define b") for line in compiled.asm["cuda"].splitlines())
    assert re.search(r"st\.global(\.v4)?\.(f32|b32|u32)", compiled.asm["ptx"]), "the store vanished from the PTX"
    assert re.search(r"add\.(rn\.)?f32", compiled.asm["ptx"]), "the addition vanished from the PTX"
    out = np.zeros(128, np.float32)
    ct.launch(None, (1,), kernel, (x, out))
    np.testing.assert_array_equal(out, x + 1)


@ct.kernel
def wide_rows(x, y):
    ct.store(y, (0, 0), ct.load(x, (0, 0), (256, 512)) * 2)


def test_a_tile_too_big_for_a_gpu_block_is_refused_before_nvrtc_runs_but_runs_on_the_interpreter():
    from tileworkbench.errors import TileUnsupportedFeatureError
    x = np.ones((256, 512), np.float32)
    with pytest.raises(TileUnsupportedFeatureError, match=r"131072 elements\) is too big for a GPU block.*at most "
                                                          r"65536 elements") as info:
        generate(wide_rows.specialize((x, x)))
    assert info.value.loc.source_line.strip().startswith("ct.store(y")
    y = np.zeros_like(x)
    ct.launch(None, (1,), wide_rows, (x, y))
    assert (y == 2).all()
