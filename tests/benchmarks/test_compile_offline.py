"""The Triton and cuTile kernels of the benchmark compile for the H100 (sm_90) without a GPU, where
those libraries are installed (cuTile: Python 3.12 with `source .cutile/setup.sh`); skipped elsewhere.
The cuTile matmul configurations must not spill: the compiler's default for 128x256 tiles does."""
import io
import shutil

import pytest

import benchmarks.peers as peers


def _cutile():
    ct = pytest.importorskip("cuda.tile")
    if shutil.which("tileiras") is None:
        pytest.skip("needs tileiras on PATH (source .cutile/setup.sh)")
    return ct


def _cutile_signature(ct, *params):
    """KernelSignature of C-contiguous, 16-byte aligned arrays, given as (dtype, ndim), and constants."""
    from cuda.tile.compilation import ArrayConstraint, CallingConvention, KernelSignature

    def array(dtype, ndim):
        elements_16b = 16 // (dtype.bitwidth // 8)
        return ArrayConstraint(dtype, ndim, index_dtype=ct.int32, stride_lower_bound_incl=0, alias_groups=(),
                               may_alias_internally=False, stride_constant=(None,) * (ndim - 1) + (1,),
                               stride_divisible_by=(elements_16b,) * (ndim - 1) + (1,), shape_divisible_by=16,
                               base_addr_divisible_by=16)
    return KernelSignature([array(*p) if isinstance(p, tuple) else p for p in params],
                           CallingConvention.cutile_python_v1())


def _cutile_jobs(ct):
    f32, bf16, i32 = (ct.float32, 2), (ct.bfloat16, 2), (ct.int32, 1)
    jobs = [("add", {}, ((ct.float32, 1),) * 3 + (4096,)), ("row_load", {}, (f32, i32, f32, 256)),
            ("rows_gather", {}, (f32, i32, f32, 8, 256)), ("rows_indexed", {}, (f32, i32, f32, 8, 256)),
            ("layernorm", {"occupancy": 4}, (bf16, (ct.bfloat16, 1), (ct.bfloat16, 1), bf16, 4096))]
    jobs += [("transpose", {}, (d, d, 64)) for d in (f32, bf16)]
    jobs += [(name, {"occupancy": o}, (f32, f32, cols)) for cols in (1024, 4096, 16384)
             for name in ("softmax", "softmax_persistent") for o in peers._occupancies(cols)]
    jobs += [("matmul", hints, (bf16, bf16, bf16, tm, tn, tk, 8)) for tm, tn, tk, hints in peers.CUTILE_MATMUL_CONFIGS]
    return jobs


def test_cutile_kernels_compile_for_sm_90_and_matmul_does_not_spill():
    ct = _cutile()
    from cuda.tile.compilation import export_kernel

    from tileworkbench.runtime.cubin import read_resources
    for name, hints, params in _cutile_jobs(ct):
        cubin = io.BytesIO()
        kernel = peers.cutile_hinted(name, tuple(sorted(hints.items())))
        export_kernel(kernel, [_cutile_signature(ct, *params)], cubin, gpu_code="sm_90", output_format="cubin")
        [resources] = read_resources(cubin.getvalue()).values()
        if name == "matmul":
            assert resources.local_bytes == 0, (name, hints, params)


def test_triton_kernels_compile_for_sm_90():
    triton = pytest.importorskip("triton")
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    k = peers.triton_kernels()
    jobs = [(k.add, "*fp32 *fp32 *fp32 i32", {"BLOCK": 4096}, 4),
            (k.transpose, "*bf16 *bf16 i32 i32", {"B": 64}, 4),
            (k.gather, "*fp32 *i32 *fp32", {"D": 256}, 4),
            (k.softmax, "*fp32 *fp32 i32", {"BLOCK": 16384}, 16),
            (k.layernorm, "*bf16 *bf16 *bf16 *bf16 i32 fp32", {"BLOCK": 4096}, 8),
            (k.matmul.fn, "*bf16 *bf16 *bf16 i32 i32 i32", {"BM": 128, "BN": 256, "BK": 64, "GROUP": 8}, 8)]
    for fn, types, constants, warps in jobs:
        signature = dict(zip(fn.arg_names, types.split()))
        signature.update({name: "constexpr" for name in constants})
        source = ASTSource(fn=fn, signature=signature,
                           constexprs={(fn.arg_names.index(n),): v for n, v in constants.items()})
        compiled = triton.compile(source, target=GPUTarget("cuda", 90, 32), options={"num_warps": warps})
        assert compiled.asm["cubin"], fn.__name__
    assert "wgmma" in compiled.asm["ptx"]  # the matmul uses Hopper's tensor-core instructions
