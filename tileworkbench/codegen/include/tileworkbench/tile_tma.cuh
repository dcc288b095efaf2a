// Pipeline stages filled by the bulk tensor copy engine (TMA, sm_90) and guarded by mbarriers.
//
// One thread issues each stage's copies (cp.async.bulk.tensor) through a tensor map the host encoded
// for the array (cuTensorMapEncodeTiled, runtime/tensor_maps.py) and passed as a __grid_constant__
// kernel parameter. Each stage has two barriers: `full` completes when the copies' bytes have
// landed (the issuing thread arrives once, announcing the bytes), `empty` when every thread has
// finished reading the stage (each arrives once). A stage is reused STAGES iterations later, so the
// parity of its barriers' phases is (use / STAGES) % 2. The copies write the same swizzled layout
// as cp.async (tile_pipeline.cuh): a tensor map with the 128/64/32-byte swizzle and a box one panel
// wide. Elements outside the array arrive as zeros.
#pragma once

namespace tw {

// The host's CUtensorMap: 128 opaque bytes, 64-byte aligned.
struct alignas(64) tensor_map {
  uint64_t opaque[16];
};

// ---- mbarrier ----------------------------------------------------------------------------------

__device__ inline void mbarrier_init(uint64_t* bar, int arrivals) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_address(bar)), "r"(arrivals) : "memory");
}
__device__ inline void mbarrier_invalidate(uint64_t* bar) {
  asm volatile("mbarrier.inval.shared::cta.b64 [%0];" ::"r"(smem_address(bar)) : "memory");
}
// Arrive, and make the current phase also wait for `bytes` of asynchronous copies.
__device__ inline void mbarrier_arrive_expecting(uint64_t* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_address(bar)), "r"(bytes)
               : "memory");
}
__device__ inline void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_address(bar)) : "memory");
}
// Wait until the phase of parity `parity` has completed.
__device__ inline void mbarrier_wait(uint64_t* bar, int parity) {
  uint32_t done;
  do {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(smem_address(bar)), "r"(parity) : "memory");
  } while (!done);
}

// ---- the full/empty barriers of STAGES stages --------------------------------------------------

template <int STAGES>
struct stage_barriers {
  uint64_t* bar;  // full[STAGES], then empty[STAGES]; `use` counts the loop's iterations from 0

  __device__ uint64_t* full(int use) const { return bar + use % STAGES; }
  __device__ uint64_t* empty(int use) const { return bar + STAGES + use % STAGES; }

  // By one thread, then a barrier before any other thread uses them.
  __device__ void init() const {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init(bar + s, 1);
      mbarrier_init(bar + STAGES + s, TW_THREADS);
    }
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __device__ void invalidate() const {
    for (int s = 0; s < 2 * STAGES; ++s) mbarrier_invalidate(bar + s);
  }
  // The copying thread, before it fills the stage of `use` with `bytes`: the stage's previous use
  // has been released by every thread.
  __device__ void acquire(int use, int bytes) const {
    if (use >= STAGES) mbarrier_wait(empty(use), (use / STAGES - 1) & 1);
    mbarrier_arrive_expecting(full(use), bytes);
  }
  // Every thread: the stage of `use` has landed.
  __device__ void wait_full(int use) const { mbarrier_wait(full(use), use / STAGES & 1); }
  // Every thread: done reading the stage of `use` (wgmma groups that read it have completed).
  __device__ void release(int use) const { mbarrier_arrive(empty(use)); }
};

// ---- tensor copies ------------------------------------------------------------------------------

// Copy the box at `c` (element coordinates, innermost axis first) into `dst`, counted on `bar`.
template <int Rank>
__device__ void tma_copy(void* dst, const tensor_map& map, const int32_t (&c)[Rank], uint64_t* bar) {
  const uint64_t m = reinterpret_cast<uint64_t>(&map);
  const uint32_t d = smem_address(dst), b = smem_address(bar);
  static_assert(Rank >= 2 && Rank <= 5, "tensor maps have 2 to 5 axes here");
  if constexpr (Rank == 2)
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 ::"r"(d), "l"(m), "r"(c[0]), "r"(c[1]), "r"(b) : "memory");
  else if constexpr (Rank == 3)
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4}], [%5];"
                 ::"r"(d), "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(b) : "memory");
  else if constexpr (Rank == 4)
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5}], [%6];"
                 ::"r"(d), "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(b) : "memory");
  else
    asm volatile("cp.async.bulk.tensor.5d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3, %4, %5, %6}], [%7];"
                 ::"r"(d), "l"(m), "r"(c[0]), "r"(c[1]), "r"(c[2]), "r"(c[3]), "r"(c[4]), "r"(b) : "memory");
}

// The bytes one stage of an R x C operand receives (what its `full` barrier expects per operand).
template <class S> struct stage_copy_bytes;
template <class T, int R, int C> struct stage_copy_bytes<swizzled<T, R, C>> {
  static constexpr int value = R * C * int(sizeof(T));
};

// Start copying tile `index` (shape (1, ..., 1, R, C), in the array's axis order) into `dst`: one
// box per panel of P bytes, the map's box being (1, ..., 1, R, P / sizeof(T)).
template <class T, int R, int C, int Rank>
__device__ void load_tma(swizzled<T, R, C> dst, const tensor_map& map, const coords<Rank>& index, uint64_t* full) {
  constexpr int P = swizzled<T, R, C>::P, panel = P / int(sizeof(T));
  int32_t c[Rank];
  c[1] = index[Rank - 2] * R;
#pragma unroll
  for (int d = 0; d < Rank - 2; ++d) c[Rank - 1 - d] = index[d];
#pragma unroll
  for (int p = 0; p < C / panel; ++p) {
    c[0] = index[Rank - 1] * C + p * panel;
    tma_copy(dst.base + p * (R * P), map, c, full);
  }
}

}  // namespace tw
