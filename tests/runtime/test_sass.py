"""SASS per kernel source line, from cubins NVRTC compiles here (no GPU): memory instruction widths,
shared-memory traffic of layout changes, tensor-core instructions and spills land on the lines
that cause them; the program-order listing keeps the cubin's order, labels and loops."""
import re

import numpy as np
import pytest

import tileworkbench.tile as ct
from tileworkbench.kernels import matmul, running_sum, transpose, vector_add
from tileworkbench.runtime import sass
from tileworkbench.runtime.launch import build
from tileworkbench.runtime.sass import (
    MEMORY,
    TENSOR,
    Samples,
    SassUnavailableError,
    back_edges,
    disassemble,
    listing,
    listing_text,
    parse_listing,
    sass_by_line,
)

from ..codegen.test_compile import _nvrtc_missing
from ..gpu.cases import BF16, CASES, accumulator_row_extremes, attention_rows

pytestmark = pytest.mark.skipif(_nvrtc_missing() is not None or sass.find_nvdisasm() is None,
                                reason="needs NVRTC and nvdisasm (pip install 'tileworkbench[nvrtc]')")


def _line(lines, text):
    (found,) = [g for g in lines if text in g.source]
    return found


def test_vector_add_moves_16_byte_vectors_on_its_store_line():
    a = np.zeros(1024, np.float32)
    lines = sass_by_line(vector_add.specialize((a, a, a, 1024)), arch="sm_90")
    body = _line(lines, "ct.store(c")
    # 128 threads x 2 float4 chunks per tile. Per chunk and input, one 128-bit load where aligned and two
    # where the chunk is off a 16-byte boundary (shifted into place): 2 x 2 x 3. Per chunk, one 128-bit
    # store where aligned, and off a boundary one of the aligned block its next lane completes: 2 x 2.
    assert body.global_load_bits[128] == 12 and body.global_store_bits[128] == 4
    assert body.spills == 0 and body.mma == 0 and body.shared == 0
    assert _line(lines, "ct.bid(0)").counts["S2R"] == 1
    assert lines[-1].line is None and lines[-1].source == "(setup)"


def test_every_instruction_is_on_a_line_or_in_the_setup():
    a = np.zeros(1024, np.float32)
    fn = vector_add.specialize((a, a, a, 1024))
    compiled = build(fn, "sm_90")
    listed = compiled.instructions
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


def test_row_max_and_min_of_an_accumulator_fold_with_fmnmx_in_registers():
    case = next(c for c in CASES if c.id == "max-min-of-accumulator-rows-with-nans")
    lines = sass_by_line(accumulator_row_extremes.specialize(case.args()), arch="sm_90")
    for text in ("row_max = ct.max(acc", "row_min = ct.min(acc"):
        line = _line(lines, text)
        # 32 elements per thread in 2 rows: one FMNMX each, less the 8 that start the folds, plus the
        # merges; a select per row keeps the first NaN of a row of NaNs only
        assert line.counts["FMNMX"] >= 32 and line.counts["FSEL"] <= 2 and line.counts["SHFL"] <= 6


def test_attention_loop_takes_row_maxima_without_branches():
    args = (np.zeros((256, 64), np.float16), np.zeros((64, 200), np.float16), np.zeros((200, 64), np.float16),
            np.zeros((256, 64), np.float16), 200, 128, 128, 64, 0)
    line = _line(sass_by_line(attention_rows.specialize(args), arch="sm_90"), "m_ij = ct.maximum(m_i, ct.max(s")
    assert line.counts["FMNMX"] >= 64 and line.counts["BRA"] == 0 and line.counts["BSSY"] == 0


def test_register_pressure_shows_as_local_memory_spills():
    a = np.zeros(1 << 16, np.float32)   # 3 x 64 registers of tile data per thread, capped at 64 by 1024 threads
    lines = sass_by_line(vector_add.specialize((a, a, a, 1 << 16)), arch="sm_90", threads=1024)
    assert _line(lines, "ct.store(c").spills > 0


def test_missing_disassembler_says_what_to_install(monkeypatch):
    monkeypatch.setattr(sass, "find_nvdisasm", lambda: None)
    with pytest.raises(SassUnavailableError, match="pip install nvidia-cuda-nvdisasm"):
        disassemble(b"")


@pytest.fixture(scope="module")
def loop_kernel():
    """running_sum compiled for sm_90: (fn, compiled.generated, instructions, nvdisasm's listing, kernel lines of the
    load, the loop and the store)."""
    x = np.zeros(1024, np.float32)
    fn = running_sum.specialize((x, x, 128))
    compiled = build(fn, "sm_90")
    text = disassemble(compiled.cubin)
    lines = {name: next(op.loc.line for op in fn.walk() if op.loc and fragment in op.loc.source_line)
             for name, fragment in (("load", "ct.load("), ("loop", "for k"), ("store", "ct.store("))}
    return fn, compiled.generated, parse_listing(text)[compiled.name], text, lines


def _chains(text: str) -> dict[int, list[tuple[str, int]]]:
    """Each instruction's locations (file, line), innermost first, read straight off nvdisasm's comments."""
    chains, current, fresh = {}, [], True
    for row in text.splitlines():
        if m := re.match(r'\s*//## File "([^"]*)", line (\d+)', row):
            current = [] if fresh else current
            fresh = False
            current.append((m.group(1), int(m.group(2))))
        elif m := re.match(r"\s+/\*([0-9a-f]+)\*/", row):
            chains[int(m.group(1), 16)] = current
            fresh = True
    return chains


def _instruction_rows(rows):
    return [r for r in rows if r.kind == "instruction"]


def test_program_order_lists_every_instruction_once_in_cubin_order(loop_kernel):
    fn, generated, instructions, _, _ = loop_kernel
    rows = listing(fn, generated, instructions, "program")
    assert [r.offset for r in _instruction_rows(rows)] == [i.offset for i in instructions]
    by_line = _instruction_rows(listing(fn, generated, instructions, "line"))
    assert sorted(r.offset for r in by_line) == [i.offset for i in instructions]
    assert [r.line for r in by_line] == sorted((r.line for r in by_line), key=lambda n: (n is None, n or 0))


def test_each_run_is_headed_by_a_kernel_line_nvdisasm_names_for_its_instructions(loop_kernel):
    fn, generated, instructions, text, lines = loop_kernel
    chains = _chains(text)
    rows = listing(fn, generated, instructions, "program")
    heading = None
    for row in rows:
        if row.kind == "line":
            heading = row
            assert row.text.startswith(f"// line {row.line}: " if row.line is not None else "// generated code")
        elif row.kind == "instruction":
            assert row.line == heading.line
            chain = chains[row.offset]
            if row.line is not None:   # named by the kernel's file, or by the number of the kernel function's frame
                assert (fn.filename, row.line) in chain or chain[-1][1] == row.line
            else:
                assert not {n for file, n in chain if file == fn.filename} & {op.loc.line for op in fn.walk() if op.loc}
    # consecutive headings name different lines: a run ends where the line changes
    kinds = [(r.kind, r.line) for r in rows if r.kind != "label"]
    assert all(a != b for a, b in zip(kinds, kinds[1:]) if a[0] == b[0] == "line")


def test_the_loop_body_holds_the_loads_and_its_back_edge_is_marked(loop_kernel):
    fn, generated, instructions, _, lines = loop_kernel
    at = {i.offset: i for i in instructions}
    loads = [r.offset for r in _instruction_rows(listing(fn, generated, instructions, "program"))
             if at[r.offset].base == "LDG"]
    assert loads and all(r.line == lines["load"] for r in listing(fn, generated, instructions) if r.offset in loads)
    edges = back_edges(instructions)
    head = {label: i.offset for i in instructions for label in i.labels}
    assert edges   # the tile loop, in each version the compiler made of it, loads inside its body
    assert all(any(head[label] <= o <= max(offsets) for o in loads) for label, offsets in edges.items())
    rows = listing(fn, generated, instructions, "program")
    for label, offsets in edges.items():
        (label_row,) = [r for r in rows if r.kind == "label" and r.text.startswith(label + ":")]
        assert "loop head" in label_row.text
        assert all(r.loop == label and f"loop: back to {label}" in r.text for r in rows if r.offset in offsets)
    trap = [i for i in instructions if i.target and i.target in i.labels]   # the BRA-to-itself after EXIT
    assert trap and not any(trap[0].offset in offsets for offsets in edges.values())


def test_line_summary_counts_instructions_by_class(loop_kernel):
    fn, generated, instructions, _, lines = loop_kernel
    groups = {g.line: g for g in sass.group_by_line(fn, generated, instructions)}
    load = groups[lines["load"]]
    assert sum(load.classes.values()) == len(load.instructions)
    assert load.classes[MEMORY] == sum(i.base in ("LDG", "STG", "LDS", "STS") for i in load.instructions) > 0
    assert load.classes[TENSOR] == 0
    headings = [r.text for r in listing(fn, generated, instructions, "program") if r.line == load.line
                and r.kind == "line"]
    assert len(headings) > 1   # the compiler interleaves the loop's lines: several runs, one summary
    assert all(t.endswith(f"[{len(load.instructions)} instructions: {load.classes[MEMORY]} memory, 0 tensor, "
                          f"{load.classes['other']} other]") for t in headings)


@pytest.mark.parametrize(("arch", "opcode"), [("sm_80", "HMMA"), ("sm_90", "HGMMA")])
def test_tensor_core_instructions_count_as_tensor(arch, opcode):
    a, c = np.zeros((256, 256), BF16), np.zeros((256, 256), np.float32)
    (mma,) = [g for g in sass_by_line(matmul.specialize((a, a, c, 128, 128, 64)), arch=arch) if "ct.mma(" in g.source]
    assert mma.classes[TENSOR] == mma.counts[opcode] > 0


def test_measured_samples_go_next_to_their_instructions_and_sum_on_the_line(loop_kernel):
    fn, generated, instructions, _, lines = loop_kernel
    loads = [i for i in instructions if i.base == "LDG"]
    samples = {i.offset: Samples(0.0, {}, i.text) for i in instructions}
    samples |= {i.offset: Samples(10.0 * (k + 1), {"long_scoreboard": 8.0 * (k + 1), "wait": 1.0}, i.text)
                for k, i in enumerate(loads)}
    rows = listing(fn, generated, instructions, "line", samples)
    (heading,) = [r for r in rows if r.kind == "line" and r.line == lines["load"]]
    assert heading.samples == sum(10.0 * (k + 1) for k in range(len(loads)))
    assert heading.text.endswith(f"; {heading.samples:g} samples]")
    hottest = next(r for r in rows if r.offset == loads[-1].offset)
    assert hottest.samples == 10.0 * len(loads) and hottest.stalls["long_scoreboard"] == 8.0 * len(loads)
    assert hottest.text.endswith(f"[{10 * len(loads)} samples: long_scoreboard {8 * len(loads)}, wait 1]")
    assert listing_text(listing(fn, generated, instructions, "line")) != listing_text(rows)


def test_samples_of_another_compile_are_refused(loop_kernel):
    fn, generated, instructions, _, _ = loop_kernel
    wrong = {i.offset: Samples(1.0, {}, "HMMA.16816.F32 R0, R2, R4, R0") for i in instructions}
    with pytest.raises(ValueError, match="another compile of this kernel.*HMMA"):
        listing(fn, generated, instructions, "program", wrong)
    with pytest.raises(ValueError, match="order must be one of"):
        listing(fn, generated, instructions, "cubin")
