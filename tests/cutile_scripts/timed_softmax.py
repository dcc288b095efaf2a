"""A row softmax timed with CUDA events, as benchmark scripts do, checked with assert_close."""
import torch

import cuda.tile as ct


@ct.kernel
def softmax(x, y, TN: ct.Constant[int]):
    row = ct.bid(0)
    t = ct.load(x, index=(row, 0), shape=(1, TN))
    e = ct.exp(t - ct.max(t, axis=1, keepdims=True))
    ct.store(y, index=(row, 0), tile=e / ct.sum(e, axis=1, keepdims=True))


def main():
    rows, cols = 16, 64
    x = torch.rand((rows, cols), dtype=torch.float32, device="cuda")
    y = torch.empty_like(x)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    ct.launch(torch.cuda.current_stream(), (rows,), softmax, (x, y, cols))
    end.record()
    torch.cuda.synchronize()
    torch.testing.assert_close(y, torch.softmax(x, dim=1))
    print(f"softmax: correctness check passed in {start.elapsed_time(end):.3f} ms")


if __name__ == "__main__":
    main()
