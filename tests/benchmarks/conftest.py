"""Shared results documents for the tests of the peer benchmark's pure parts (benchmarks/peers.py): no GPU."""
import pytest

from benchmarks.peers import SCHEMA


def ok(impl, family, ms, **extra):
    return {"impl": impl, "family": family, "status": "ok", "ms": ms, "p10": ms * 0.9, "p90": ms * 1.1,
            "samples": 50, **extra}


def failed(impl, family, error):
    return {"impl": impl, "family": family, "status": "failed", "error": error}


def case(key, kind, results, nbytes=8 << 30, flops=0):
    return {"key": key, "title": key.replace("_", " "), "kind": kind, "params": {}, "bytes": nbytes, "flops": flops,
            "tolerance": 0, "gpu_state": {}, "seconds": 1.0, "results": results}


@pytest.fixture
def doc():
    """A run of three cases (copy 2 ms for 8 GiB; softmax; matmul) and two latency rows."""
    return {
        "schema": SCHEMA, "date": "2026-11-22T13:02:47+00:00", "command": "python3 -m benchmarks.peers", "quick": False,
        "settings": {"rounds": 5}, "gpu_state": {"before": {"clocks.sm": "345"}, "after": {"clocks.sm": "1980"}},
        "environment": {"device": "NVIDIA H100 80GB HBM3", "driver": "580.159.04", "cuda_driver": "13.0",
                        "torch": "2.11.0", "tileworkbench commit": "abc123"},
        "cases": [
            case("copy", "copy", [ok("CuPy copyto", "CuPy", 4.0), ok("torch copy_", "torch", 2.0)]),
            case("softmax_4096", "memory", [ok("tileworkbench", "tileworkbench", 2.5, config="N=4096"),
                                            ok("Triton", "Triton", 2.0),
                                            failed("cuTile", "cuTile", "ModuleNotFoundError: No module named 'cuda'")]),
            case("matmul_4096", "matmul", [ok("tileworkbench", "tileworkbench", 0.25), ok("torch.matmul (cuBLAS)", "torch", 0.2)],
                 nbytes=3 * 4096 * 4096 * 2, flops=2 * 4096 ** 3),
        ],
        "latency": [{"measure": "cold compile", "impl": "tileworkbench", "status": "ok", "ms": 450.0, "values": [450.0]},
                    {"measure": "cold compile", "impl": "cuTile", "status": "failed", "error": "RuntimeError: no tileiras"}],
    }
