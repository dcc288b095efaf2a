"""SASS per kernel source line, from cubins NVRTC compiles here (no GPU): memory instruction widths,
shared-memory traffic of layout changes, tensor-core instructions and spills land on the lines
that cause them."""
import numpy as np
import pytest

from tileworkbench.kernels import matmul, transpose, vector_add
from tileworkbench.runtime import sass
from tileworkbench.runtime.launch import build
from tileworkbench.runtime.sass import SassUnavailableError, disassemble, parse_listing, sass_by_line

from ..codegen.test_compile import _nvrtc_missing
from ..gpu.cases import BF16

pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None or sass.find_nvdisasm() is None,
                                reason="needs NVRTC and nvdisasm (pip install 'tileworkbench[nvrtc]')")


def _line(lines, text):
    (found,) = [g for g in lines if text in g.source]
    return found


def test_vector_add_moves_16_byte_vectors_on_its_store_line():
    a = np.zeros(1024, np.float32)
    lines = sass_by_line(vector_add.specialize((a, a, a, 1024)), arch="sm_90")
    body = _line(lines, "ct.store(c")
    # 128 threads x 2 float4 chunks per tile: two 128-bit loads per input, two 128-bit stores
    assert body.global_load_bits[128] == 4 and body.global_store_bits[128] == 2
    assert body.spills == 0 and body.mma == 0 and body.shared == 0
    assert _line(lines, "ct.bid(0)").counts["S2R"] == 1
    assert lines[-1].line is None and lines[-1].source == "(setup)"


def test_every_instruction_is_on_a_line_or_in_the_setup():
    a = np.zeros(1024, np.float32)
    fn = vector_add.specialize((a, a, a, 1024))
    generated, module = build(fn, "sm_90")
    listed = parse_listing(disassemble(module.cubin))[generated.name]
    assert sum(len(g.instructions) for g in sass_by_line(fn, arch="sm_90")) == len(listed)
    assert {i.offset for i in listed} == set(range(0, 16 * len(listed), 16))


def test_transpose_load_goes_through_shared_memory_on_its_line():
    x = np.zeros((64, 64), np.float32)
    body = _line(sass_by_line(transpose.specialize((x, x, 32)), arch="sm_80"), "ct.store(y")
    assert body.counts["STS"] > 0 and body.counts["LDS"] > 0 and body.counts["BAR"] > 0


@pytest.mark.parametrize(("arch", "opcode"), [("sm_80", "HMMA"), ("sm_90", "HGMMA")])
def test_bf16_matmul_runs_on_tensor_cores_on_the_mma_line(arch, opcode):
    a, c = np.zeros((256, 256), BF16), np.zeros((256, 256), np.float32)
    lines = sass_by_line(matmul.specialize((a, a, c, 128, 128, 64)), arch=arch)
    assert _line(lines, "ct.mma(").counts[opcode] > 0
    assert sum(g.counts[opcode] for g in lines if "ct.mma(" not in g.source and "ct.store(" not in g.source) == 0


def test_register_pressure_shows_as_local_memory_spills():
    a = np.zeros(1 << 16, np.float32)   # 3 x 64 registers of tile data per thread, capped at 64 by 1024 threads
    lines = sass_by_line(vector_add.specialize((a, a, a, 1 << 16)), arch="sm_90", threads=1024)
    assert _line(lines, "ct.store(c").spills > 0


def test_missing_disassembler_says_what_to_install(monkeypatch):
    monkeypatch.setattr(sass, "find_nvdisasm", lambda: None)
    with pytest.raises(SassUnavailableError, match="pip install nvidia-cuda-nvdisasm"):
        disassemble(b"")
