// One wgmma.mma_async.m64nNk16 per tile width N and operand type: d (64 x N, f32) += a (64 x 16) @ b (16 x N).
// b is read from shared memory through a descriptor, stored N-major (TransB = 1: the K x N tile as
// loaded) or K-major (TransB = 0: its N x K transpose, as `k.T` operands are loaded); a comes from
// shared memory too (`ss`, a K-major descriptor) or from registers (`rs`: four registers per thread,
// mma.sync's A fragment of the thread's warp's 16 rows). Inline asm names each of the N / 2
// accumulator registers of a thread, so every width is spelled out; tiles are powers of two, so these
// six widths are all a pipelined mma can ask for (sm_90a only).
#pragma once

namespace tw {

template <int N, class T> struct wgmma_op;  // ::ss<TransB>(d, a_descriptor, b_descriptor), ::rs<TransB>(d, a, b_descriptor)

// the accumulators d[i] ... d[i + 7] as read-write asm operands
#define TW_WGMMA_D8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), \
                       "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])

// wgmma_op<N, T> for operand type T (PTX type KIND): REGS names the accumulator registers, SS and RS
// the operands after them in the two forms, D the accumulators
#define TW_WGMMA(N, T, KIND, REGS, SS, RS, ...)                                                               \
  template <> struct wgmma_op<N, T> {                                                                       \
    template <int TransB> __device__ static void ss(float* d, uint64_t a, uint64_t b) {                     \
      asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n" #N "k16.f32."   \
                   KIND "." KIND " {" REGS "}, " SS "; }"                                                    \
                   : __VA_ARGS__ : "l"(a), "l"(b), "n"(TransB));                                              \
    }                                                                                                       \
    template <int TransB> __device__ static void rs(float* d, const uint32_t* a, uint64_t b) {              \
      asm volatile("{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m64n" #N "k16.f32."   \
                   KIND "." KIND " {" REGS "}, " RS "; }"                                                    \
                   : __VA_ARGS__ : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b), "n"(TransB));           \
    }                                                                                                       \
  };

#define TW_WGMMA_REGS_8 "%0,%1,%2,%3"
TW_WGMMA(8, __half, "f16", TW_WGMMA_REGS_8, "%4, %5, p, 1, 1, 0, %6", "{%4, %5, %6, %7}, %8, p, 1, 1, %9", "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]))
TW_WGMMA(8, __nv_bfloat16, "bf16", TW_WGMMA_REGS_8, "%4, %5, p, 1, 1, 0, %6", "{%4, %5, %6, %7}, %8, p, 1, 1, %9", "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]))

#define TW_WGMMA_REGS_16 "%0,%1,%2,%3,%4,%5,%6,%7"
TW_WGMMA(16, __half, "f16", TW_WGMMA_REGS_16, "%8, %9, p, 1, 1, 0, %10", "{%8, %9, %10, %11}, %12, p, 1, 1, %13", TW_WGMMA_D8(0))
TW_WGMMA(16, __nv_bfloat16, "bf16", TW_WGMMA_REGS_16, "%8, %9, p, 1, 1, 0, %10", "{%8, %9, %10, %11}, %12, p, 1, 1, %13", TW_WGMMA_D8(0))

#define TW_WGMMA_REGS_32 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15"
TW_WGMMA(32, __half, "f16", TW_WGMMA_REGS_32, "%16, %17, p, 1, 1, 0, %18", "{%16, %17, %18, %19}, %20, p, 1, 1, %21", TW_WGMMA_D8(0), TW_WGMMA_D8(8))
TW_WGMMA(32, __nv_bfloat16, "bf16", TW_WGMMA_REGS_32, "%16, %17, p, 1, 1, 0, %18", "{%16, %17, %18, %19}, %20, p, 1, 1, %21", TW_WGMMA_D8(0), TW_WGMMA_D8(8))

#define TW_WGMMA_REGS_64 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15," \
  "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31"
TW_WGMMA(64, __half, "f16", TW_WGMMA_REGS_64, "%32, %33, p, 1, 1, 0, %34", "{%32, %33, %34, %35}, %36, p, 1, 1, %37", TW_WGMMA_D8(0), TW_WGMMA_D8(8), TW_WGMMA_D8(16), TW_WGMMA_D8(24))
TW_WGMMA(64, __nv_bfloat16, "bf16", TW_WGMMA_REGS_64, "%32, %33, p, 1, 1, 0, %34", "{%32, %33, %34, %35}, %36, p, 1, 1, %37", TW_WGMMA_D8(0), TW_WGMMA_D8(8), TW_WGMMA_D8(16), TW_WGMMA_D8(24))

#define TW_WGMMA_REGS_128 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15," \
  "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
  "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
  "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63"
TW_WGMMA(128, __half, "f16", TW_WGMMA_REGS_128, "%64, %65, p, 1, 1, 0, %66", "{%64, %65, %66, %67}, %68, p, 1, 1, %69", TW_WGMMA_D8(0), TW_WGMMA_D8(8), TW_WGMMA_D8(16), TW_WGMMA_D8(24), TW_WGMMA_D8(32), TW_WGMMA_D8(40), TW_WGMMA_D8(48), TW_WGMMA_D8(56))
TW_WGMMA(128, __nv_bfloat16, "bf16", TW_WGMMA_REGS_128, "%64, %65, p, 1, 1, 0, %66", "{%64, %65, %66, %67}, %68, p, 1, 1, %69", TW_WGMMA_D8(0), TW_WGMMA_D8(8), TW_WGMMA_D8(16), TW_WGMMA_D8(24), TW_WGMMA_D8(32), TW_WGMMA_D8(40), TW_WGMMA_D8(48), TW_WGMMA_D8(56))

#define TW_WGMMA_REGS_256 "%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15," \
  "%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31," \
  "%32,%33,%34,%35,%36,%37,%38,%39,%40,%41,%42,%43,%44,%45,%46,%47," \
  "%48,%49,%50,%51,%52,%53,%54,%55,%56,%57,%58,%59,%60,%61,%62,%63," \
  "%64,%65,%66,%67,%68,%69,%70,%71,%72,%73,%74,%75,%76,%77,%78,%79," \
  "%80,%81,%82,%83,%84,%85,%86,%87,%88,%89,%90,%91,%92,%93,%94,%95," \
  "%96,%97,%98,%99,%100,%101,%102,%103,%104,%105,%106,%107,%108,%109,%110,%111," \
  "%112,%113,%114,%115,%116,%117,%118,%119,%120,%121,%122,%123,%124,%125,%126,%127"
TW_WGMMA(256, __half, "f16", TW_WGMMA_REGS_256, "%128, %129, p, 1, 1, 0, %130", "{%128, %129, %130, %131}, %132, p, 1, 1, %133", TW_WGMMA_D8(0), TW_WGMMA_D8(8), TW_WGMMA_D8(16), TW_WGMMA_D8(24), TW_WGMMA_D8(32), TW_WGMMA_D8(40), TW_WGMMA_D8(48), TW_WGMMA_D8(56), TW_WGMMA_D8(64), TW_WGMMA_D8(72), TW_WGMMA_D8(80), TW_WGMMA_D8(88), TW_WGMMA_D8(96), TW_WGMMA_D8(104), TW_WGMMA_D8(112), TW_WGMMA_D8(120))
TW_WGMMA(256, __nv_bfloat16, "bf16", TW_WGMMA_REGS_256, "%128, %129, p, 1, 1, 0, %130", "{%128, %129, %130, %131}, %132, p, 1, 1, %133", TW_WGMMA_D8(0), TW_WGMMA_D8(8), TW_WGMMA_D8(16), TW_WGMMA_D8(24), TW_WGMMA_D8(32), TW_WGMMA_D8(40), TW_WGMMA_D8(48), TW_WGMMA_D8(56), TW_WGMMA_D8(64), TW_WGMMA_D8(72), TW_WGMMA_D8(80), TW_WGMMA_D8(88), TW_WGMMA_D8(96), TW_WGMMA_D8(104), TW_WGMMA_D8(112), TW_WGMMA_D8(120))

#undef TW_WGMMA
#undef TW_WGMMA_D8

}  // namespace tw
