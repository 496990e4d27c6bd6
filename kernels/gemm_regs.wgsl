// Register-tiled GEMM without workgroup memory: each invocation computes a
// TM x TN (16 x 8) block of C straight from memory, over the same grid as
// the tiled kernel (x: column block, y: row block, z: batch*nslices +
// slice). On CPU adapters workgroup memory is ordinary memory and every
// barrier is costly (SwiftShader switches coroutines at each one), so this
// form runs faster there. A 16 x 8 block loads 24 elements per 128
// multiply-adds (a 4 x 4 block: 8 per 16); on lavapipe and SwiftShader it
// ran 1.2 to 2 times as fast as 4 x 4 at 256 to 1024 square. Each
// accumulator is its own variable, written out, so that nothing is indexed
// at run time. Rows and columns past the edge load clamped (valid) indices
// and are not stored. The prelude defines BM (a multiple of 16) and BN (of
// 8).

const WX: u32 = BN / 8u;
const WY: u32 = BM / 16u;

// Four outputs of row i from column j on, those inside C.
fn gemm_out4(t: u32, s: u32, i: u32, j: u32, v: vec4<f32>) {
  if (i < P.m) {
    if (j + 0u < P.n) {
      gemm_out(t, s, i, j + 0u, v.x);
    }
    if (j + 1u < P.n) {
      gemm_out(t, s, i, j + 1u, v.y);
    }
    if (j + 2u < P.n) {
      gemm_out(t, s, i, j + 2u, v.z);
    }
    if (j + 3u < P.n) {
      gemm_out(t, s, i, j + 3u, v.w);
    }
  }
}

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let col0 = wid.x * BN + lid.x * 8u;
  let row0 = wid.y * BM + lid.y * 16u;
  if (row0 >= P.m || col0 >= P.n) {
    return; // no barrier follows: leaving early is fine
  }
  let t = wid.z / P.nslices;
  let s = wid.z % P.nslices;
  let kbeg = s * P.kslice;
  let kend = min(P.k, kbeg + P.kslice);
  let abase = t * P.ba + kbeg * P.cs_a;
  let bbase = vec4<u32>(t * P.bb + kbeg * P.rs_b);
  var pa0 = min(row0 + 0u, P.m - 1u) * P.rs_a + abase;
  var pa1 = min(row0 + 1u, P.m - 1u) * P.rs_a + abase;
  var pa2 = min(row0 + 2u, P.m - 1u) * P.rs_a + abase;
  var pa3 = min(row0 + 3u, P.m - 1u) * P.rs_a + abase;
  var pa4 = min(row0 + 4u, P.m - 1u) * P.rs_a + abase;
  var pa5 = min(row0 + 5u, P.m - 1u) * P.rs_a + abase;
  var pa6 = min(row0 + 6u, P.m - 1u) * P.rs_a + abase;
  var pa7 = min(row0 + 7u, P.m - 1u) * P.rs_a + abase;
  var pa8 = min(row0 + 8u, P.m - 1u) * P.rs_a + abase;
  var pa9 = min(row0 + 9u, P.m - 1u) * P.rs_a + abase;
  var pa10 = min(row0 + 10u, P.m - 1u) * P.rs_a + abase;
  var pa11 = min(row0 + 11u, P.m - 1u) * P.rs_a + abase;
  var pa12 = min(row0 + 12u, P.m - 1u) * P.rs_a + abase;
  var pa13 = min(row0 + 13u, P.m - 1u) * P.rs_a + abase;
  var pa14 = min(row0 + 14u, P.m - 1u) * P.rs_a + abase;
  var pa15 = min(row0 + 15u, P.m - 1u) * P.rs_a + abase;
  var pb0 = vec4<u32>(min(col0 + 0u, P.n - 1u), min(col0 + 1u, P.n - 1u), min(col0 + 2u, P.n - 1u), min(col0 + 3u, P.n - 1u)) *
              P.cs_b +
          bbase;
  var pb1 = vec4<u32>(min(col0 + 4u, P.n - 1u), min(col0 + 5u, P.n - 1u), min(col0 + 6u, P.n - 1u), min(col0 + 7u, P.n - 1u)) *
              P.cs_b +
          bbase;
  var acc0_0 = vec4<f32>(0.0f);
  var acc0_1 = vec4<f32>(0.0f);
  var acc1_0 = vec4<f32>(0.0f);
  var acc1_1 = vec4<f32>(0.0f);
  var acc2_0 = vec4<f32>(0.0f);
  var acc2_1 = vec4<f32>(0.0f);
  var acc3_0 = vec4<f32>(0.0f);
  var acc3_1 = vec4<f32>(0.0f);
  var acc4_0 = vec4<f32>(0.0f);
  var acc4_1 = vec4<f32>(0.0f);
  var acc5_0 = vec4<f32>(0.0f);
  var acc5_1 = vec4<f32>(0.0f);
  var acc6_0 = vec4<f32>(0.0f);
  var acc6_1 = vec4<f32>(0.0f);
  var acc7_0 = vec4<f32>(0.0f);
  var acc7_1 = vec4<f32>(0.0f);
  var acc8_0 = vec4<f32>(0.0f);
  var acc8_1 = vec4<f32>(0.0f);
  var acc9_0 = vec4<f32>(0.0f);
  var acc9_1 = vec4<f32>(0.0f);
  var acc10_0 = vec4<f32>(0.0f);
  var acc10_1 = vec4<f32>(0.0f);
  var acc11_0 = vec4<f32>(0.0f);
  var acc11_1 = vec4<f32>(0.0f);
  var acc12_0 = vec4<f32>(0.0f);
  var acc12_1 = vec4<f32>(0.0f);
  var acc13_0 = vec4<f32>(0.0f);
  var acc13_1 = vec4<f32>(0.0f);
  var acc14_0 = vec4<f32>(0.0f);
  var acc14_1 = vec4<f32>(0.0f);
  var acc15_0 = vec4<f32>(0.0f);
  var acc15_1 = vec4<f32>(0.0f);
  for (var kk = kbeg; kk < kend; kk++) {
    let b0 = vec4<f32>(b_ld(pb0.x), b_ld(pb0.y), b_ld(pb0.z), b_ld(pb0.w));
    let b1 = vec4<f32>(b_ld(pb1.x), b_ld(pb1.y), b_ld(pb1.z), b_ld(pb1.w));
    let a0 = vec4<f32>(a_ld(pa0));
    acc0_0 = fma(a0, b0, acc0_0);
    acc0_1 = fma(a0, b1, acc0_1);
    let a1 = vec4<f32>(a_ld(pa1));
    acc1_0 = fma(a1, b0, acc1_0);
    acc1_1 = fma(a1, b1, acc1_1);
    let a2 = vec4<f32>(a_ld(pa2));
    acc2_0 = fma(a2, b0, acc2_0);
    acc2_1 = fma(a2, b1, acc2_1);
    let a3 = vec4<f32>(a_ld(pa3));
    acc3_0 = fma(a3, b0, acc3_0);
    acc3_1 = fma(a3, b1, acc3_1);
    let a4 = vec4<f32>(a_ld(pa4));
    acc4_0 = fma(a4, b0, acc4_0);
    acc4_1 = fma(a4, b1, acc4_1);
    let a5 = vec4<f32>(a_ld(pa5));
    acc5_0 = fma(a5, b0, acc5_0);
    acc5_1 = fma(a5, b1, acc5_1);
    let a6 = vec4<f32>(a_ld(pa6));
    acc6_0 = fma(a6, b0, acc6_0);
    acc6_1 = fma(a6, b1, acc6_1);
    let a7 = vec4<f32>(a_ld(pa7));
    acc7_0 = fma(a7, b0, acc7_0);
    acc7_1 = fma(a7, b1, acc7_1);
    let a8 = vec4<f32>(a_ld(pa8));
    acc8_0 = fma(a8, b0, acc8_0);
    acc8_1 = fma(a8, b1, acc8_1);
    let a9 = vec4<f32>(a_ld(pa9));
    acc9_0 = fma(a9, b0, acc9_0);
    acc9_1 = fma(a9, b1, acc9_1);
    let a10 = vec4<f32>(a_ld(pa10));
    acc10_0 = fma(a10, b0, acc10_0);
    acc10_1 = fma(a10, b1, acc10_1);
    let a11 = vec4<f32>(a_ld(pa11));
    acc11_0 = fma(a11, b0, acc11_0);
    acc11_1 = fma(a11, b1, acc11_1);
    let a12 = vec4<f32>(a_ld(pa12));
    acc12_0 = fma(a12, b0, acc12_0);
    acc12_1 = fma(a12, b1, acc12_1);
    let a13 = vec4<f32>(a_ld(pa13));
    acc13_0 = fma(a13, b0, acc13_0);
    acc13_1 = fma(a13, b1, acc13_1);
    let a14 = vec4<f32>(a_ld(pa14));
    acc14_0 = fma(a14, b0, acc14_0);
    acc14_1 = fma(a14, b1, acc14_1);
    let a15 = vec4<f32>(a_ld(pa15));
    acc15_0 = fma(a15, b0, acc15_0);
    acc15_1 = fma(a15, b1, acc15_1);
    pa0 += P.cs_a;
    pa1 += P.cs_a;
    pa2 += P.cs_a;
    pa3 += P.cs_a;
    pa4 += P.cs_a;
    pa5 += P.cs_a;
    pa6 += P.cs_a;
    pa7 += P.cs_a;
    pa8 += P.cs_a;
    pa9 += P.cs_a;
    pa10 += P.cs_a;
    pa11 += P.cs_a;
    pa12 += P.cs_a;
    pa13 += P.cs_a;
    pa14 += P.cs_a;
    pa15 += P.cs_a;
    pb0 += vec4<u32>(P.rs_b);
    pb1 += vec4<u32>(P.rs_b);
  }
  gemm_out4(t, s, row0 + 0u, col0 + 0u, acc0_0);
  gemm_out4(t, s, row0 + 0u, col0 + 4u, acc0_1);
  gemm_out4(t, s, row0 + 1u, col0 + 0u, acc1_0);
  gemm_out4(t, s, row0 + 1u, col0 + 4u, acc1_1);
  gemm_out4(t, s, row0 + 2u, col0 + 0u, acc2_0);
  gemm_out4(t, s, row0 + 2u, col0 + 4u, acc2_1);
  gemm_out4(t, s, row0 + 3u, col0 + 0u, acc3_0);
  gemm_out4(t, s, row0 + 3u, col0 + 4u, acc3_1);
  gemm_out4(t, s, row0 + 4u, col0 + 0u, acc4_0);
  gemm_out4(t, s, row0 + 4u, col0 + 4u, acc4_1);
  gemm_out4(t, s, row0 + 5u, col0 + 0u, acc5_0);
  gemm_out4(t, s, row0 + 5u, col0 + 4u, acc5_1);
  gemm_out4(t, s, row0 + 6u, col0 + 0u, acc6_0);
  gemm_out4(t, s, row0 + 6u, col0 + 4u, acc6_1);
  gemm_out4(t, s, row0 + 7u, col0 + 0u, acc7_0);
  gemm_out4(t, s, row0 + 7u, col0 + 4u, acc7_1);
  gemm_out4(t, s, row0 + 8u, col0 + 0u, acc8_0);
  gemm_out4(t, s, row0 + 8u, col0 + 4u, acc8_1);
  gemm_out4(t, s, row0 + 9u, col0 + 0u, acc9_0);
  gemm_out4(t, s, row0 + 9u, col0 + 4u, acc9_1);
  gemm_out4(t, s, row0 + 10u, col0 + 0u, acc10_0);
  gemm_out4(t, s, row0 + 10u, col0 + 4u, acc10_1);
  gemm_out4(t, s, row0 + 11u, col0 + 0u, acc11_0);
  gemm_out4(t, s, row0 + 11u, col0 + 4u, acc11_1);
  gemm_out4(t, s, row0 + 12u, col0 + 0u, acc12_0);
  gemm_out4(t, s, row0 + 12u, col0 + 4u, acc12_1);
  gemm_out4(t, s, row0 + 13u, col0 + 0u, acc13_0);
  gemm_out4(t, s, row0 + 13u, col0 + 4u, acc13_1);
  gemm_out4(t, s, row0 + 14u, col0 + 0u, acc14_0);
  gemm_out4(t, s, row0 + 14u, col0 + 4u, acc14_1);
  gemm_out4(t, s, row0 + 15u, col0 + 0u, acc15_0);
  gemm_out4(t, s, row0 + 15u, col0 + 4u, acc15_1);
}
