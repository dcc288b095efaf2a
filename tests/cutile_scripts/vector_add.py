"""Vector addition as cuTile's samples write it: CUDA tensors, the current stream, a synchronize."""
import torch

import cuda.tile as ct


@ct.kernel
def vector_add(a, b, c, TILE: ct.Constant[int]):
    bid = ct.bid(0)
    ta = ct.load(a, index=(bid,), shape=(TILE,))
    tb = ct.load(b, index=(bid,), shape=(TILE,))
    ct.store(c, index=(bid,), tile=ta + tb)


def main():
    n, tile = 1000, 256
    a = torch.randn(n, device="cuda")
    b = torch.randn(n, device="cuda")
    c = torch.empty_like(a)
    assert a.is_cuda and torch.cuda.is_available()
    ct.launch(torch.cuda.current_stream(), (ct.cdiv(n, tile),), vector_add, (a, b, c, tile))
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a + b)
    print("vector_add: correctness check passed")


if __name__ == "__main__":
    main()
