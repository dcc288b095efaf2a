"""A float16 matmul with float32 accumulation, checked against torch's at cuTile's tolerance."""
import torch

import cuda.tile as ct


@ct.kernel
def matmul(a, b, c, TM: ct.Constant[int], TN: ct.Constant[int], TK: ct.Constant[int]):
    bm, bn = ct.bid(0), ct.bid(1)
    acc = ct.full((TM, TN), 0, dtype=ct.float32)
    for k in range(ct.num_tiles(a, axis=1, shape=(TM, TK))):
        ta = ct.load(a, index=(bm, k), shape=(TM, TK))
        tb = ct.load(b, index=(k, bn), shape=(TK, TN))
        acc = ct.mma(ta, tb, acc)
    ct.store(c, index=(bm, bn), tile=ct.astype(acc, c.dtype))


def main():
    m, n, k, tm, tn, tk = 64, 96, 128, 32, 32, 32
    a = torch.randn(m, k, dtype=torch.float16).cuda()
    b = torch.randn(k, n, dtype=torch.float16).to("cuda")
    c = torch.zeros(m, n, dtype=torch.float16, device=torch.device("cuda"))
    grid = (ct.cdiv(m, tm), ct.cdiv(n, tn), 1)
    ct.launch(torch.cuda.current_stream(), grid, matmul, (a, b, c, tm, tn, tk))
    torch.cuda.synchronize()
    torch.testing.assert_close(c, a @ b, atol=1e-2, rtol=1e-2)
    print("matmul: correctness check passed")


if __name__ == "__main__":
    main()
