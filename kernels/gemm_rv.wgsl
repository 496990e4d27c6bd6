// Register-block GEMM without workgroup memory (written by
// tools/gen_gemm_rv.py). Each invocation computes TM (1 to 16) rows by TV
// (1 to 4) vec4 column groups of C straight from memory, over the grid of
// the tiled kernel (x: column block of BN, y: row block of BM, z:
// batch*nslices + slice), with WX = BN / (4 TV) by WY = BM / TM invocations
// per workgroup; the prelude defines BM, BN, TM and TV, and the file before
// this one B4 and gemm_b4, BK and gemm_bk (gemm_rv_b4.wgsl: B's rows are
// contiguous runs of whole vec4s, read one vec4 per column group;
// gemm_rv_bk.wgsl: a typed B along k, four k of a column read at once;
// gemm_rv_b1.wgsl: B is read one element at a time, as the planner picks
// per launch), and the file before that A4 and gemm_a4 (gemm_rv_a4.wgsl:
// A's rows are aligned runs of vec4s along k, read four k at a time;
// gemm_rv_a1.wgsl: one float at a time). On CPU adapters
// workgroup memory is ordinary memory and every barrier is costly, so this
// form runs faster there; gemm_select.c picks the block per adapter and
// shape. An invocation's rows are consecutive; its column groups interleave
// with its neighbours' (group v at 4 * (lid.x + v * WX)), so the lanes of a
// SIMD batch, which are neighbouring invocations, read neighbouring
// elements. Every accumulator is its own variable, written out: nothing is
// indexed at run time (a private array spills to memory on CPU adapters),
// and the blocks not used vanish when the compiler folds their constant
// conditions. Rows and columns past the edge load clamped (valid) indices
// and are not stored. The block is stored through one call of gemm_out in a
// loop (the epilogue, inlined at every call, would otherwise compile 256
// times over).

const WX: u32 = BN / (4u * TV);
const WY: u32 = BM / TM;

// Element offsets in B of column group v, clamped into C.
fn gemm_bcols(col0: u32, v: u32, base: vec4<u32>) -> vec4<u32> {
  let c = col0 + v * 4u * WX;
  return min(vec4<u32>(c, c + 1u, c + 2u, c + 3u), vec4<u32>(P.n - 1u)) *
             P.cs_b + base;
}

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let col0 = wid.x * BN + lid.x * 4u;
  let row0 = wid.y * BM + lid.y * TM;
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
  var pb0 = gemm_bcols(col0, 0u, bbase);
  var qb0 = pb0.x >> 2u;
  var pb1 = gemm_bcols(col0, 1u, bbase);
  var qb1 = pb1.x >> 2u;
  var pb2 = gemm_bcols(col0, 2u, bbase);
  var qb2 = pb2.x >> 2u;
  var pb3 = gemm_bcols(col0, 3u, bbase);
  var qb3 = pb3.x >> 2u;
  var acc0_0 = vec4<f32>(0.0f);
  var acc0_1 = vec4<f32>(0.0f);
  var acc0_2 = vec4<f32>(0.0f);
  var acc0_3 = vec4<f32>(0.0f);
  var acc1_0 = vec4<f32>(0.0f);
  var acc1_1 = vec4<f32>(0.0f);
  var acc1_2 = vec4<f32>(0.0f);
  var acc1_3 = vec4<f32>(0.0f);
  var acc2_0 = vec4<f32>(0.0f);
  var acc2_1 = vec4<f32>(0.0f);
  var acc2_2 = vec4<f32>(0.0f);
  var acc2_3 = vec4<f32>(0.0f);
  var acc3_0 = vec4<f32>(0.0f);
  var acc3_1 = vec4<f32>(0.0f);
  var acc3_2 = vec4<f32>(0.0f);
  var acc3_3 = vec4<f32>(0.0f);
  var acc4_0 = vec4<f32>(0.0f);
  var acc4_1 = vec4<f32>(0.0f);
  var acc4_2 = vec4<f32>(0.0f);
  var acc4_3 = vec4<f32>(0.0f);
  var acc5_0 = vec4<f32>(0.0f);
  var acc5_1 = vec4<f32>(0.0f);
  var acc5_2 = vec4<f32>(0.0f);
  var acc5_3 = vec4<f32>(0.0f);
  var acc6_0 = vec4<f32>(0.0f);
  var acc6_1 = vec4<f32>(0.0f);
  var acc6_2 = vec4<f32>(0.0f);
  var acc6_3 = vec4<f32>(0.0f);
  var acc7_0 = vec4<f32>(0.0f);
  var acc7_1 = vec4<f32>(0.0f);
  var acc7_2 = vec4<f32>(0.0f);
  var acc7_3 = vec4<f32>(0.0f);
  var acc8_0 = vec4<f32>(0.0f);
  var acc8_1 = vec4<f32>(0.0f);
  var acc8_2 = vec4<f32>(0.0f);
  var acc8_3 = vec4<f32>(0.0f);
  var acc9_0 = vec4<f32>(0.0f);
  var acc9_1 = vec4<f32>(0.0f);
  var acc9_2 = vec4<f32>(0.0f);
  var acc9_3 = vec4<f32>(0.0f);
  var acc10_0 = vec4<f32>(0.0f);
  var acc10_1 = vec4<f32>(0.0f);
  var acc10_2 = vec4<f32>(0.0f);
  var acc10_3 = vec4<f32>(0.0f);
  var acc11_0 = vec4<f32>(0.0f);
  var acc11_1 = vec4<f32>(0.0f);
  var acc11_2 = vec4<f32>(0.0f);
  var acc11_3 = vec4<f32>(0.0f);
  var acc12_0 = vec4<f32>(0.0f);
  var acc12_1 = vec4<f32>(0.0f);
  var acc12_2 = vec4<f32>(0.0f);
  var acc12_3 = vec4<f32>(0.0f);
  var acc13_0 = vec4<f32>(0.0f);
  var acc13_1 = vec4<f32>(0.0f);
  var acc13_2 = vec4<f32>(0.0f);
  var acc13_3 = vec4<f32>(0.0f);
  var acc14_0 = vec4<f32>(0.0f);
  var acc14_1 = vec4<f32>(0.0f);
  var acc14_2 = vec4<f32>(0.0f);
  var acc14_3 = vec4<f32>(0.0f);
  var acc15_0 = vec4<f32>(0.0f);
  var acc15_1 = vec4<f32>(0.0f);
  var acc15_2 = vec4<f32>(0.0f);
  var acc15_3 = vec4<f32>(0.0f);
  var kk = kbeg;
  if (A4) {
    var qa0 = pa0 >> 2u;
    var qa1 = pa1 >> 2u;
    var qa2 = pa2 >> 2u;
    var qa3 = pa3 >> 2u;
    var qa4 = pa4 >> 2u;
    var qa5 = pa5 >> 2u;
    var qa6 = pa6 >> 2u;
    var qa7 = pa7 >> 2u;
    var qa8 = pa8 >> 2u;
    var qa9 = pa9 >> 2u;
    var qa10 = pa10 >> 2u;
    var qa11 = pa11 >> 2u;
    var qa12 = pa12 >> 2u;
    var qa13 = pa13 >> 2u;
    var qa14 = pa14 >> 2u;
    var qa15 = pa15 >> 2u;
    for (; kk + 4u <= kend; kk += 4u) {
      var b0_0 = vec4<f32>(0.0f);
      var b1_0 = vec4<f32>(0.0f);
      var b2_0 = vec4<f32>(0.0f);
      var b3_0 = vec4<f32>(0.0f);
      var b0_1 = vec4<f32>(0.0f);
      var b1_1 = vec4<f32>(0.0f);
      var b2_1 = vec4<f32>(0.0f);
      var b3_1 = vec4<f32>(0.0f);
      var b0_2 = vec4<f32>(0.0f);
      var b1_2 = vec4<f32>(0.0f);
      var b2_2 = vec4<f32>(0.0f);
      var b3_2 = vec4<f32>(0.0f);
      var b0_3 = vec4<f32>(0.0f);
      var b1_3 = vec4<f32>(0.0f);
      var b2_3 = vec4<f32>(0.0f);
      var b3_3 = vec4<f32>(0.0f);
      if (BK) {
        let c0_0 = gemm_bk(pb0.x);
        let c0_1 = gemm_bk(pb0.y);
        let c0_2 = gemm_bk(pb0.z);
        let c0_3 = gemm_bk(pb0.w);
        b0_0 = vec4<f32>(c0_0[0], c0_1[0], c0_2[0], c0_3[0]);
        b0_1 = vec4<f32>(c0_0[1], c0_1[1], c0_2[1], c0_3[1]);
        b0_2 = vec4<f32>(c0_0[2], c0_1[2], c0_2[2], c0_3[2]);
        b0_3 = vec4<f32>(c0_0[3], c0_1[3], c0_2[3], c0_3[3]);
        pb0 += vec4<u32>(4u * P.rs_b);
        if (TV > 1u) {
          let c1_0 = gemm_bk(pb1.x);
          let c1_1 = gemm_bk(pb1.y);
          let c1_2 = gemm_bk(pb1.z);
          let c1_3 = gemm_bk(pb1.w);
          b1_0 = vec4<f32>(c1_0[0], c1_1[0], c1_2[0], c1_3[0]);
          b1_1 = vec4<f32>(c1_0[1], c1_1[1], c1_2[1], c1_3[1]);
          b1_2 = vec4<f32>(c1_0[2], c1_1[2], c1_2[2], c1_3[2]);
          b1_3 = vec4<f32>(c1_0[3], c1_1[3], c1_2[3], c1_3[3]);
          pb1 += vec4<u32>(4u * P.rs_b);
        }
        if (TV > 2u) {
          let c2_0 = gemm_bk(pb2.x);
          let c2_1 = gemm_bk(pb2.y);
          let c2_2 = gemm_bk(pb2.z);
          let c2_3 = gemm_bk(pb2.w);
          b2_0 = vec4<f32>(c2_0[0], c2_1[0], c2_2[0], c2_3[0]);
          b2_1 = vec4<f32>(c2_0[1], c2_1[1], c2_2[1], c2_3[1]);
          b2_2 = vec4<f32>(c2_0[2], c2_1[2], c2_2[2], c2_3[2]);
          b2_3 = vec4<f32>(c2_0[3], c2_1[3], c2_2[3], c2_3[3]);
          pb2 += vec4<u32>(4u * P.rs_b);
        }
        if (TV > 3u) {
          let c3_0 = gemm_bk(pb3.x);
          let c3_1 = gemm_bk(pb3.y);
          let c3_2 = gemm_bk(pb3.z);
          let c3_3 = gemm_bk(pb3.w);
          b3_0 = vec4<f32>(c3_0[0], c3_1[0], c3_2[0], c3_3[0]);
          b3_1 = vec4<f32>(c3_0[1], c3_1[1], c3_2[1], c3_3[1]);
          b3_2 = vec4<f32>(c3_0[2], c3_1[2], c3_2[2], c3_3[2]);
          b3_3 = vec4<f32>(c3_0[3], c3_1[3], c3_2[3], c3_3[3]);
          pb3 += vec4<u32>(4u * P.rs_b);
        }
      } else {
        if (B4) {
          b0_0 = gemm_b4(qb0);
          qb0 += P.rs_b >> 2u;
        } else {
          b0_0 = vec4<f32>(b_ld(pb0.x), b_ld(pb0.y), b_ld(pb0.z), b_ld(pb0.w));
          pb0 += vec4<u32>(P.rs_b);
        }
        if (TV > 1u) {
          if (B4) {
            b1_0 = gemm_b4(qb1);
            qb1 += P.rs_b >> 2u;
          } else {
            b1_0 = vec4<f32>(b_ld(pb1.x), b_ld(pb1.y), b_ld(pb1.z), b_ld(pb1.w));
            pb1 += vec4<u32>(P.rs_b);
          }
        }
        if (TV > 2u) {
          if (B4) {
            b2_0 = gemm_b4(qb2);
            qb2 += P.rs_b >> 2u;
          } else {
            b2_0 = vec4<f32>(b_ld(pb2.x), b_ld(pb2.y), b_ld(pb2.z), b_ld(pb2.w));
            pb2 += vec4<u32>(P.rs_b);
          }
        }
        if (TV > 3u) {
          if (B4) {
            b3_0 = gemm_b4(qb3);
            qb3 += P.rs_b >> 2u;
          } else {
            b3_0 = vec4<f32>(b_ld(pb3.x), b_ld(pb3.y), b_ld(pb3.z), b_ld(pb3.w));
            pb3 += vec4<u32>(P.rs_b);
          }
        }
        if (B4) {
          b0_1 = gemm_b4(qb0);
          qb0 += P.rs_b >> 2u;
        } else {
          b0_1 = vec4<f32>(b_ld(pb0.x), b_ld(pb0.y), b_ld(pb0.z), b_ld(pb0.w));
          pb0 += vec4<u32>(P.rs_b);
        }
        if (TV > 1u) {
          if (B4) {
            b1_1 = gemm_b4(qb1);
            qb1 += P.rs_b >> 2u;
          } else {
            b1_1 = vec4<f32>(b_ld(pb1.x), b_ld(pb1.y), b_ld(pb1.z), b_ld(pb1.w));
            pb1 += vec4<u32>(P.rs_b);
          }
        }
        if (TV > 2u) {
          if (B4) {
            b2_1 = gemm_b4(qb2);
            qb2 += P.rs_b >> 2u;
          } else {
            b2_1 = vec4<f32>(b_ld(pb2.x), b_ld(pb2.y), b_ld(pb2.z), b_ld(pb2.w));
            pb2 += vec4<u32>(P.rs_b);
          }
        }
        if (TV > 3u) {
          if (B4) {
            b3_1 = gemm_b4(qb3);
            qb3 += P.rs_b >> 2u;
          } else {
            b3_1 = vec4<f32>(b_ld(pb3.x), b_ld(pb3.y), b_ld(pb3.z), b_ld(pb3.w));
            pb3 += vec4<u32>(P.rs_b);
          }
        }
        if (B4) {
          b0_2 = gemm_b4(qb0);
          qb0 += P.rs_b >> 2u;
        } else {
          b0_2 = vec4<f32>(b_ld(pb0.x), b_ld(pb0.y), b_ld(pb0.z), b_ld(pb0.w));
          pb0 += vec4<u32>(P.rs_b);
        }
        if (TV > 1u) {
          if (B4) {
            b1_2 = gemm_b4(qb1);
            qb1 += P.rs_b >> 2u;
          } else {
            b1_2 = vec4<f32>(b_ld(pb1.x), b_ld(pb1.y), b_ld(pb1.z), b_ld(pb1.w));
            pb1 += vec4<u32>(P.rs_b);
          }
        }
        if (TV > 2u) {
          if (B4) {
            b2_2 = gemm_b4(qb2);
            qb2 += P.rs_b >> 2u;
          } else {
            b2_2 = vec4<f32>(b_ld(pb2.x), b_ld(pb2.y), b_ld(pb2.z), b_ld(pb2.w));
            pb2 += vec4<u32>(P.rs_b);
          }
        }
        if (TV > 3u) {
          if (B4) {
            b3_2 = gemm_b4(qb3);
            qb3 += P.rs_b >> 2u;
          } else {
            b3_2 = vec4<f32>(b_ld(pb3.x), b_ld(pb3.y), b_ld(pb3.z), b_ld(pb3.w));
            pb3 += vec4<u32>(P.rs_b);
          }
        }
        if (B4) {
          b0_3 = gemm_b4(qb0);
          qb0 += P.rs_b >> 2u;
        } else {
          b0_3 = vec4<f32>(b_ld(pb0.x), b_ld(pb0.y), b_ld(pb0.z), b_ld(pb0.w));
          pb0 += vec4<u32>(P.rs_b);
        }
        if (TV > 1u) {
          if (B4) {
            b1_3 = gemm_b4(qb1);
            qb1 += P.rs_b >> 2u;
          } else {
            b1_3 = vec4<f32>(b_ld(pb1.x), b_ld(pb1.y), b_ld(pb1.z), b_ld(pb1.w));
            pb1 += vec4<u32>(P.rs_b);
          }
        }
        if (TV > 2u) {
          if (B4) {
            b2_3 = gemm_b4(qb2);
            qb2 += P.rs_b >> 2u;
          } else {
            b2_3 = vec4<f32>(b_ld(pb2.x), b_ld(pb2.y), b_ld(pb2.z), b_ld(pb2.w));
            pb2 += vec4<u32>(P.rs_b);
          }
        }
        if (TV > 3u) {
          if (B4) {
            b3_3 = gemm_b4(qb3);
            qb3 += P.rs_b >> 2u;
          } else {
            b3_3 = vec4<f32>(b_ld(pb3.x), b_ld(pb3.y), b_ld(pb3.z), b_ld(pb3.w));
            pb3 += vec4<u32>(P.rs_b);
          }
        }
      }
      let a0 = gemm_a4(qa0);
      acc0_0 = fma(vec4<f32>(a0[0]), b0_0, acc0_0);
      if (TV > 1u) {
        acc0_1 = fma(vec4<f32>(a0[0]), b1_0, acc0_1);
      }
      if (TV > 2u) {
        acc0_2 = fma(vec4<f32>(a0[0]), b2_0, acc0_2);
      }
      if (TV > 3u) {
        acc0_3 = fma(vec4<f32>(a0[0]), b3_0, acc0_3);
      }
      acc0_0 = fma(vec4<f32>(a0[1]), b0_1, acc0_0);
      if (TV > 1u) {
        acc0_1 = fma(vec4<f32>(a0[1]), b1_1, acc0_1);
      }
      if (TV > 2u) {
        acc0_2 = fma(vec4<f32>(a0[1]), b2_1, acc0_2);
      }
      if (TV > 3u) {
        acc0_3 = fma(vec4<f32>(a0[1]), b3_1, acc0_3);
      }
      acc0_0 = fma(vec4<f32>(a0[2]), b0_2, acc0_0);
      if (TV > 1u) {
        acc0_1 = fma(vec4<f32>(a0[2]), b1_2, acc0_1);
      }
      if (TV > 2u) {
        acc0_2 = fma(vec4<f32>(a0[2]), b2_2, acc0_2);
      }
      if (TV > 3u) {
        acc0_3 = fma(vec4<f32>(a0[2]), b3_2, acc0_3);
      }
      acc0_0 = fma(vec4<f32>(a0[3]), b0_3, acc0_0);
      if (TV > 1u) {
        acc0_1 = fma(vec4<f32>(a0[3]), b1_3, acc0_1);
      }
      if (TV > 2u) {
        acc0_2 = fma(vec4<f32>(a0[3]), b2_3, acc0_2);
      }
      if (TV > 3u) {
        acc0_3 = fma(vec4<f32>(a0[3]), b3_3, acc0_3);
      }
      qa0 += 1u;
      if (TM > 1u) {
        let a1 = gemm_a4(qa1);
        acc1_0 = fma(vec4<f32>(a1[0]), b0_0, acc1_0);
        if (TV > 1u) {
          acc1_1 = fma(vec4<f32>(a1[0]), b1_0, acc1_1);
        }
        if (TV > 2u) {
          acc1_2 = fma(vec4<f32>(a1[0]), b2_0, acc1_2);
        }
        if (TV > 3u) {
          acc1_3 = fma(vec4<f32>(a1[0]), b3_0, acc1_3);
        }
        acc1_0 = fma(vec4<f32>(a1[1]), b0_1, acc1_0);
        if (TV > 1u) {
          acc1_1 = fma(vec4<f32>(a1[1]), b1_1, acc1_1);
        }
        if (TV > 2u) {
          acc1_2 = fma(vec4<f32>(a1[1]), b2_1, acc1_2);
        }
        if (TV > 3u) {
          acc1_3 = fma(vec4<f32>(a1[1]), b3_1, acc1_3);
        }
        acc1_0 = fma(vec4<f32>(a1[2]), b0_2, acc1_0);
        if (TV > 1u) {
          acc1_1 = fma(vec4<f32>(a1[2]), b1_2, acc1_1);
        }
        if (TV > 2u) {
          acc1_2 = fma(vec4<f32>(a1[2]), b2_2, acc1_2);
        }
        if (TV > 3u) {
          acc1_3 = fma(vec4<f32>(a1[2]), b3_2, acc1_3);
        }
        acc1_0 = fma(vec4<f32>(a1[3]), b0_3, acc1_0);
        if (TV > 1u) {
          acc1_1 = fma(vec4<f32>(a1[3]), b1_3, acc1_1);
        }
        if (TV > 2u) {
          acc1_2 = fma(vec4<f32>(a1[3]), b2_3, acc1_2);
        }
        if (TV > 3u) {
          acc1_3 = fma(vec4<f32>(a1[3]), b3_3, acc1_3);
        }
        qa1 += 1u;
      }
      if (TM > 2u) {
        let a2 = gemm_a4(qa2);
        acc2_0 = fma(vec4<f32>(a2[0]), b0_0, acc2_0);
        if (TV > 1u) {
          acc2_1 = fma(vec4<f32>(a2[0]), b1_0, acc2_1);
        }
        if (TV > 2u) {
          acc2_2 = fma(vec4<f32>(a2[0]), b2_0, acc2_2);
        }
        if (TV > 3u) {
          acc2_3 = fma(vec4<f32>(a2[0]), b3_0, acc2_3);
        }
        acc2_0 = fma(vec4<f32>(a2[1]), b0_1, acc2_0);
        if (TV > 1u) {
          acc2_1 = fma(vec4<f32>(a2[1]), b1_1, acc2_1);
        }
        if (TV > 2u) {
          acc2_2 = fma(vec4<f32>(a2[1]), b2_1, acc2_2);
        }
        if (TV > 3u) {
          acc2_3 = fma(vec4<f32>(a2[1]), b3_1, acc2_3);
        }
        acc2_0 = fma(vec4<f32>(a2[2]), b0_2, acc2_0);
        if (TV > 1u) {
          acc2_1 = fma(vec4<f32>(a2[2]), b1_2, acc2_1);
        }
        if (TV > 2u) {
          acc2_2 = fma(vec4<f32>(a2[2]), b2_2, acc2_2);
        }
        if (TV > 3u) {
          acc2_3 = fma(vec4<f32>(a2[2]), b3_2, acc2_3);
        }
        acc2_0 = fma(vec4<f32>(a2[3]), b0_3, acc2_0);
        if (TV > 1u) {
          acc2_1 = fma(vec4<f32>(a2[3]), b1_3, acc2_1);
        }
        if (TV > 2u) {
          acc2_2 = fma(vec4<f32>(a2[3]), b2_3, acc2_2);
        }
        if (TV > 3u) {
          acc2_3 = fma(vec4<f32>(a2[3]), b3_3, acc2_3);
        }
        qa2 += 1u;
      }
      if (TM > 3u) {
        let a3 = gemm_a4(qa3);
        acc3_0 = fma(vec4<f32>(a3[0]), b0_0, acc3_0);
        if (TV > 1u) {
          acc3_1 = fma(vec4<f32>(a3[0]), b1_0, acc3_1);
        }
        if (TV > 2u) {
          acc3_2 = fma(vec4<f32>(a3[0]), b2_0, acc3_2);
        }
        if (TV > 3u) {
          acc3_3 = fma(vec4<f32>(a3[0]), b3_0, acc3_3);
        }
        acc3_0 = fma(vec4<f32>(a3[1]), b0_1, acc3_0);
        if (TV > 1u) {
          acc3_1 = fma(vec4<f32>(a3[1]), b1_1, acc3_1);
        }
        if (TV > 2u) {
          acc3_2 = fma(vec4<f32>(a3[1]), b2_1, acc3_2);
        }
        if (TV > 3u) {
          acc3_3 = fma(vec4<f32>(a3[1]), b3_1, acc3_3);
        }
        acc3_0 = fma(vec4<f32>(a3[2]), b0_2, acc3_0);
        if (TV > 1u) {
          acc3_1 = fma(vec4<f32>(a3[2]), b1_2, acc3_1);
        }
        if (TV > 2u) {
          acc3_2 = fma(vec4<f32>(a3[2]), b2_2, acc3_2);
        }
        if (TV > 3u) {
          acc3_3 = fma(vec4<f32>(a3[2]), b3_2, acc3_3);
        }
        acc3_0 = fma(vec4<f32>(a3[3]), b0_3, acc3_0);
        if (TV > 1u) {
          acc3_1 = fma(vec4<f32>(a3[3]), b1_3, acc3_1);
        }
        if (TV > 2u) {
          acc3_2 = fma(vec4<f32>(a3[3]), b2_3, acc3_2);
        }
        if (TV > 3u) {
          acc3_3 = fma(vec4<f32>(a3[3]), b3_3, acc3_3);
        }
        qa3 += 1u;
      }
      if (TM > 4u) {
        let a4 = gemm_a4(qa4);
        acc4_0 = fma(vec4<f32>(a4[0]), b0_0, acc4_0);
        if (TV > 1u) {
          acc4_1 = fma(vec4<f32>(a4[0]), b1_0, acc4_1);
        }
        if (TV > 2u) {
          acc4_2 = fma(vec4<f32>(a4[0]), b2_0, acc4_2);
        }
        if (TV > 3u) {
          acc4_3 = fma(vec4<f32>(a4[0]), b3_0, acc4_3);
        }
        acc4_0 = fma(vec4<f32>(a4[1]), b0_1, acc4_0);
        if (TV > 1u) {
          acc4_1 = fma(vec4<f32>(a4[1]), b1_1, acc4_1);
        }
        if (TV > 2u) {
          acc4_2 = fma(vec4<f32>(a4[1]), b2_1, acc4_2);
        }
        if (TV > 3u) {
          acc4_3 = fma(vec4<f32>(a4[1]), b3_1, acc4_3);
        }
        acc4_0 = fma(vec4<f32>(a4[2]), b0_2, acc4_0);
        if (TV > 1u) {
          acc4_1 = fma(vec4<f32>(a4[2]), b1_2, acc4_1);
        }
        if (TV > 2u) {
          acc4_2 = fma(vec4<f32>(a4[2]), b2_2, acc4_2);
        }
        if (TV > 3u) {
          acc4_3 = fma(vec4<f32>(a4[2]), b3_2, acc4_3);
        }
        acc4_0 = fma(vec4<f32>(a4[3]), b0_3, acc4_0);
        if (TV > 1u) {
          acc4_1 = fma(vec4<f32>(a4[3]), b1_3, acc4_1);
        }
        if (TV > 2u) {
          acc4_2 = fma(vec4<f32>(a4[3]), b2_3, acc4_2);
        }
        if (TV > 3u) {
          acc4_3 = fma(vec4<f32>(a4[3]), b3_3, acc4_3);
        }
        qa4 += 1u;
      }
      if (TM > 5u) {
        let a5 = gemm_a4(qa5);
        acc5_0 = fma(vec4<f32>(a5[0]), b0_0, acc5_0);
        if (TV > 1u) {
          acc5_1 = fma(vec4<f32>(a5[0]), b1_0, acc5_1);
        }
        if (TV > 2u) {
          acc5_2 = fma(vec4<f32>(a5[0]), b2_0, acc5_2);
        }
        if (TV > 3u) {
          acc5_3 = fma(vec4<f32>(a5[0]), b3_0, acc5_3);
        }
        acc5_0 = fma(vec4<f32>(a5[1]), b0_1, acc5_0);
        if (TV > 1u) {
          acc5_1 = fma(vec4<f32>(a5[1]), b1_1, acc5_1);
        }
        if (TV > 2u) {
          acc5_2 = fma(vec4<f32>(a5[1]), b2_1, acc5_2);
        }
        if (TV > 3u) {
          acc5_3 = fma(vec4<f32>(a5[1]), b3_1, acc5_3);
        }
        acc5_0 = fma(vec4<f32>(a5[2]), b0_2, acc5_0);
        if (TV > 1u) {
          acc5_1 = fma(vec4<f32>(a5[2]), b1_2, acc5_1);
        }
        if (TV > 2u) {
          acc5_2 = fma(vec4<f32>(a5[2]), b2_2, acc5_2);
        }
        if (TV > 3u) {
          acc5_3 = fma(vec4<f32>(a5[2]), b3_2, acc5_3);
        }
        acc5_0 = fma(vec4<f32>(a5[3]), b0_3, acc5_0);
        if (TV > 1u) {
          acc5_1 = fma(vec4<f32>(a5[3]), b1_3, acc5_1);
        }
        if (TV > 2u) {
          acc5_2 = fma(vec4<f32>(a5[3]), b2_3, acc5_2);
        }
        if (TV > 3u) {
          acc5_3 = fma(vec4<f32>(a5[3]), b3_3, acc5_3);
        }
        qa5 += 1u;
      }
      if (TM > 6u) {
        let a6 = gemm_a4(qa6);
        acc6_0 = fma(vec4<f32>(a6[0]), b0_0, acc6_0);
        if (TV > 1u) {
          acc6_1 = fma(vec4<f32>(a6[0]), b1_0, acc6_1);
        }
        if (TV > 2u) {
          acc6_2 = fma(vec4<f32>(a6[0]), b2_0, acc6_2);
        }
        if (TV > 3u) {
          acc6_3 = fma(vec4<f32>(a6[0]), b3_0, acc6_3);
        }
        acc6_0 = fma(vec4<f32>(a6[1]), b0_1, acc6_0);
        if (TV > 1u) {
          acc6_1 = fma(vec4<f32>(a6[1]), b1_1, acc6_1);
        }
        if (TV > 2u) {
          acc6_2 = fma(vec4<f32>(a6[1]), b2_1, acc6_2);
        }
        if (TV > 3u) {
          acc6_3 = fma(vec4<f32>(a6[1]), b3_1, acc6_3);
        }
        acc6_0 = fma(vec4<f32>(a6[2]), b0_2, acc6_0);
        if (TV > 1u) {
          acc6_1 = fma(vec4<f32>(a6[2]), b1_2, acc6_1);
        }
        if (TV > 2u) {
          acc6_2 = fma(vec4<f32>(a6[2]), b2_2, acc6_2);
        }
        if (TV > 3u) {
          acc6_3 = fma(vec4<f32>(a6[2]), b3_2, acc6_3);
        }
        acc6_0 = fma(vec4<f32>(a6[3]), b0_3, acc6_0);
        if (TV > 1u) {
          acc6_1 = fma(vec4<f32>(a6[3]), b1_3, acc6_1);
        }
        if (TV > 2u) {
          acc6_2 = fma(vec4<f32>(a6[3]), b2_3, acc6_2);
        }
        if (TV > 3u) {
          acc6_3 = fma(vec4<f32>(a6[3]), b3_3, acc6_3);
        }
        qa6 += 1u;
      }
      if (TM > 7u) {
        let a7 = gemm_a4(qa7);
        acc7_0 = fma(vec4<f32>(a7[0]), b0_0, acc7_0);
        if (TV > 1u) {
          acc7_1 = fma(vec4<f32>(a7[0]), b1_0, acc7_1);
        }
        if (TV > 2u) {
          acc7_2 = fma(vec4<f32>(a7[0]), b2_0, acc7_2);
        }
        if (TV > 3u) {
          acc7_3 = fma(vec4<f32>(a7[0]), b3_0, acc7_3);
        }
        acc7_0 = fma(vec4<f32>(a7[1]), b0_1, acc7_0);
        if (TV > 1u) {
          acc7_1 = fma(vec4<f32>(a7[1]), b1_1, acc7_1);
        }
        if (TV > 2u) {
          acc7_2 = fma(vec4<f32>(a7[1]), b2_1, acc7_2);
        }
        if (TV > 3u) {
          acc7_3 = fma(vec4<f32>(a7[1]), b3_1, acc7_3);
        }
        acc7_0 = fma(vec4<f32>(a7[2]), b0_2, acc7_0);
        if (TV > 1u) {
          acc7_1 = fma(vec4<f32>(a7[2]), b1_2, acc7_1);
        }
        if (TV > 2u) {
          acc7_2 = fma(vec4<f32>(a7[2]), b2_2, acc7_2);
        }
        if (TV > 3u) {
          acc7_3 = fma(vec4<f32>(a7[2]), b3_2, acc7_3);
        }
        acc7_0 = fma(vec4<f32>(a7[3]), b0_3, acc7_0);
        if (TV > 1u) {
          acc7_1 = fma(vec4<f32>(a7[3]), b1_3, acc7_1);
        }
        if (TV > 2u) {
          acc7_2 = fma(vec4<f32>(a7[3]), b2_3, acc7_2);
        }
        if (TV > 3u) {
          acc7_3 = fma(vec4<f32>(a7[3]), b3_3, acc7_3);
        }
        qa7 += 1u;
      }
      if (TM > 8u) {
        let a8 = gemm_a4(qa8);
        acc8_0 = fma(vec4<f32>(a8[0]), b0_0, acc8_0);
        if (TV > 1u) {
          acc8_1 = fma(vec4<f32>(a8[0]), b1_0, acc8_1);
        }
        if (TV > 2u) {
          acc8_2 = fma(vec4<f32>(a8[0]), b2_0, acc8_2);
        }
        if (TV > 3u) {
          acc8_3 = fma(vec4<f32>(a8[0]), b3_0, acc8_3);
        }
        acc8_0 = fma(vec4<f32>(a8[1]), b0_1, acc8_0);
        if (TV > 1u) {
          acc8_1 = fma(vec4<f32>(a8[1]), b1_1, acc8_1);
        }
        if (TV > 2u) {
          acc8_2 = fma(vec4<f32>(a8[1]), b2_1, acc8_2);
        }
        if (TV > 3u) {
          acc8_3 = fma(vec4<f32>(a8[1]), b3_1, acc8_3);
        }
        acc8_0 = fma(vec4<f32>(a8[2]), b0_2, acc8_0);
        if (TV > 1u) {
          acc8_1 = fma(vec4<f32>(a8[2]), b1_2, acc8_1);
        }
        if (TV > 2u) {
          acc8_2 = fma(vec4<f32>(a8[2]), b2_2, acc8_2);
        }
        if (TV > 3u) {
          acc8_3 = fma(vec4<f32>(a8[2]), b3_2, acc8_3);
        }
        acc8_0 = fma(vec4<f32>(a8[3]), b0_3, acc8_0);
        if (TV > 1u) {
          acc8_1 = fma(vec4<f32>(a8[3]), b1_3, acc8_1);
        }
        if (TV > 2u) {
          acc8_2 = fma(vec4<f32>(a8[3]), b2_3, acc8_2);
        }
        if (TV > 3u) {
          acc8_3 = fma(vec4<f32>(a8[3]), b3_3, acc8_3);
        }
        qa8 += 1u;
      }
      if (TM > 9u) {
        let a9 = gemm_a4(qa9);
        acc9_0 = fma(vec4<f32>(a9[0]), b0_0, acc9_0);
        if (TV > 1u) {
          acc9_1 = fma(vec4<f32>(a9[0]), b1_0, acc9_1);
        }
        if (TV > 2u) {
          acc9_2 = fma(vec4<f32>(a9[0]), b2_0, acc9_2);
        }
        if (TV > 3u) {
          acc9_3 = fma(vec4<f32>(a9[0]), b3_0, acc9_3);
        }
        acc9_0 = fma(vec4<f32>(a9[1]), b0_1, acc9_0);
        if (TV > 1u) {
          acc9_1 = fma(vec4<f32>(a9[1]), b1_1, acc9_1);
        }
        if (TV > 2u) {
          acc9_2 = fma(vec4<f32>(a9[1]), b2_1, acc9_2);
        }
        if (TV > 3u) {
          acc9_3 = fma(vec4<f32>(a9[1]), b3_1, acc9_3);
        }
        acc9_0 = fma(vec4<f32>(a9[2]), b0_2, acc9_0);
        if (TV > 1u) {
          acc9_1 = fma(vec4<f32>(a9[2]), b1_2, acc9_1);
        }
        if (TV > 2u) {
          acc9_2 = fma(vec4<f32>(a9[2]), b2_2, acc9_2);
        }
        if (TV > 3u) {
          acc9_3 = fma(vec4<f32>(a9[2]), b3_2, acc9_3);
        }
        acc9_0 = fma(vec4<f32>(a9[3]), b0_3, acc9_0);
        if (TV > 1u) {
          acc9_1 = fma(vec4<f32>(a9[3]), b1_3, acc9_1);
        }
        if (TV > 2u) {
          acc9_2 = fma(vec4<f32>(a9[3]), b2_3, acc9_2);
        }
        if (TV > 3u) {
          acc9_3 = fma(vec4<f32>(a9[3]), b3_3, acc9_3);
        }
        qa9 += 1u;
      }
      if (TM > 10u) {
        let a10 = gemm_a4(qa10);
        acc10_0 = fma(vec4<f32>(a10[0]), b0_0, acc10_0);
        if (TV > 1u) {
          acc10_1 = fma(vec4<f32>(a10[0]), b1_0, acc10_1);
        }
        if (TV > 2u) {
          acc10_2 = fma(vec4<f32>(a10[0]), b2_0, acc10_2);
        }
        if (TV > 3u) {
          acc10_3 = fma(vec4<f32>(a10[0]), b3_0, acc10_3);
        }
        acc10_0 = fma(vec4<f32>(a10[1]), b0_1, acc10_0);
        if (TV > 1u) {
          acc10_1 = fma(vec4<f32>(a10[1]), b1_1, acc10_1);
        }
        if (TV > 2u) {
          acc10_2 = fma(vec4<f32>(a10[1]), b2_1, acc10_2);
        }
        if (TV > 3u) {
          acc10_3 = fma(vec4<f32>(a10[1]), b3_1, acc10_3);
        }
        acc10_0 = fma(vec4<f32>(a10[2]), b0_2, acc10_0);
        if (TV > 1u) {
          acc10_1 = fma(vec4<f32>(a10[2]), b1_2, acc10_1);
        }
        if (TV > 2u) {
          acc10_2 = fma(vec4<f32>(a10[2]), b2_2, acc10_2);
        }
        if (TV > 3u) {
          acc10_3 = fma(vec4<f32>(a10[2]), b3_2, acc10_3);
        }
        acc10_0 = fma(vec4<f32>(a10[3]), b0_3, acc10_0);
        if (TV > 1u) {
          acc10_1 = fma(vec4<f32>(a10[3]), b1_3, acc10_1);
        }
        if (TV > 2u) {
          acc10_2 = fma(vec4<f32>(a10[3]), b2_3, acc10_2);
        }
        if (TV > 3u) {
          acc10_3 = fma(vec4<f32>(a10[3]), b3_3, acc10_3);
        }
        qa10 += 1u;
      }
      if (TM > 11u) {
        let a11 = gemm_a4(qa11);
        acc11_0 = fma(vec4<f32>(a11[0]), b0_0, acc11_0);
        if (TV > 1u) {
          acc11_1 = fma(vec4<f32>(a11[0]), b1_0, acc11_1);
        }
        if (TV > 2u) {
          acc11_2 = fma(vec4<f32>(a11[0]), b2_0, acc11_2);
        }
        if (TV > 3u) {
          acc11_3 = fma(vec4<f32>(a11[0]), b3_0, acc11_3);
        }
        acc11_0 = fma(vec4<f32>(a11[1]), b0_1, acc11_0);
        if (TV > 1u) {
          acc11_1 = fma(vec4<f32>(a11[1]), b1_1, acc11_1);
        }
        if (TV > 2u) {
          acc11_2 = fma(vec4<f32>(a11[1]), b2_1, acc11_2);
        }
        if (TV > 3u) {
          acc11_3 = fma(vec4<f32>(a11[1]), b3_1, acc11_3);
        }
        acc11_0 = fma(vec4<f32>(a11[2]), b0_2, acc11_0);
        if (TV > 1u) {
          acc11_1 = fma(vec4<f32>(a11[2]), b1_2, acc11_1);
        }
        if (TV > 2u) {
          acc11_2 = fma(vec4<f32>(a11[2]), b2_2, acc11_2);
        }
        if (TV > 3u) {
          acc11_3 = fma(vec4<f32>(a11[2]), b3_2, acc11_3);
        }
        acc11_0 = fma(vec4<f32>(a11[3]), b0_3, acc11_0);
        if (TV > 1u) {
          acc11_1 = fma(vec4<f32>(a11[3]), b1_3, acc11_1);
        }
        if (TV > 2u) {
          acc11_2 = fma(vec4<f32>(a11[3]), b2_3, acc11_2);
        }
        if (TV > 3u) {
          acc11_3 = fma(vec4<f32>(a11[3]), b3_3, acc11_3);
        }
        qa11 += 1u;
      }
      if (TM > 12u) {
        let a12 = gemm_a4(qa12);
        acc12_0 = fma(vec4<f32>(a12[0]), b0_0, acc12_0);
        if (TV > 1u) {
          acc12_1 = fma(vec4<f32>(a12[0]), b1_0, acc12_1);
        }
        if (TV > 2u) {
          acc12_2 = fma(vec4<f32>(a12[0]), b2_0, acc12_2);
        }
        if (TV > 3u) {
          acc12_3 = fma(vec4<f32>(a12[0]), b3_0, acc12_3);
        }
        acc12_0 = fma(vec4<f32>(a12[1]), b0_1, acc12_0);
        if (TV > 1u) {
          acc12_1 = fma(vec4<f32>(a12[1]), b1_1, acc12_1);
        }
        if (TV > 2u) {
          acc12_2 = fma(vec4<f32>(a12[1]), b2_1, acc12_2);
        }
        if (TV > 3u) {
          acc12_3 = fma(vec4<f32>(a12[1]), b3_1, acc12_3);
        }
        acc12_0 = fma(vec4<f32>(a12[2]), b0_2, acc12_0);
        if (TV > 1u) {
          acc12_1 = fma(vec4<f32>(a12[2]), b1_2, acc12_1);
        }
        if (TV > 2u) {
          acc12_2 = fma(vec4<f32>(a12[2]), b2_2, acc12_2);
        }
        if (TV > 3u) {
          acc12_3 = fma(vec4<f32>(a12[2]), b3_2, acc12_3);
        }
        acc12_0 = fma(vec4<f32>(a12[3]), b0_3, acc12_0);
        if (TV > 1u) {
          acc12_1 = fma(vec4<f32>(a12[3]), b1_3, acc12_1);
        }
        if (TV > 2u) {
          acc12_2 = fma(vec4<f32>(a12[3]), b2_3, acc12_2);
        }
        if (TV > 3u) {
          acc12_3 = fma(vec4<f32>(a12[3]), b3_3, acc12_3);
        }
        qa12 += 1u;
      }
      if (TM > 13u) {
        let a13 = gemm_a4(qa13);
        acc13_0 = fma(vec4<f32>(a13[0]), b0_0, acc13_0);
        if (TV > 1u) {
          acc13_1 = fma(vec4<f32>(a13[0]), b1_0, acc13_1);
        }
        if (TV > 2u) {
          acc13_2 = fma(vec4<f32>(a13[0]), b2_0, acc13_2);
        }
        if (TV > 3u) {
          acc13_3 = fma(vec4<f32>(a13[0]), b3_0, acc13_3);
        }
        acc13_0 = fma(vec4<f32>(a13[1]), b0_1, acc13_0);
        if (TV > 1u) {
          acc13_1 = fma(vec4<f32>(a13[1]), b1_1, acc13_1);
        }
        if (TV > 2u) {
          acc13_2 = fma(vec4<f32>(a13[1]), b2_1, acc13_2);
        }
        if (TV > 3u) {
          acc13_3 = fma(vec4<f32>(a13[1]), b3_1, acc13_3);
        }
        acc13_0 = fma(vec4<f32>(a13[2]), b0_2, acc13_0);
        if (TV > 1u) {
          acc13_1 = fma(vec4<f32>(a13[2]), b1_2, acc13_1);
        }
        if (TV > 2u) {
          acc13_2 = fma(vec4<f32>(a13[2]), b2_2, acc13_2);
        }
        if (TV > 3u) {
          acc13_3 = fma(vec4<f32>(a13[2]), b3_2, acc13_3);
        }
        acc13_0 = fma(vec4<f32>(a13[3]), b0_3, acc13_0);
        if (TV > 1u) {
          acc13_1 = fma(vec4<f32>(a13[3]), b1_3, acc13_1);
        }
        if (TV > 2u) {
          acc13_2 = fma(vec4<f32>(a13[3]), b2_3, acc13_2);
        }
        if (TV > 3u) {
          acc13_3 = fma(vec4<f32>(a13[3]), b3_3, acc13_3);
        }
        qa13 += 1u;
      }
      if (TM > 14u) {
        let a14 = gemm_a4(qa14);
        acc14_0 = fma(vec4<f32>(a14[0]), b0_0, acc14_0);
        if (TV > 1u) {
          acc14_1 = fma(vec4<f32>(a14[0]), b1_0, acc14_1);
        }
        if (TV > 2u) {
          acc14_2 = fma(vec4<f32>(a14[0]), b2_0, acc14_2);
        }
        if (TV > 3u) {
          acc14_3 = fma(vec4<f32>(a14[0]), b3_0, acc14_3);
        }
        acc14_0 = fma(vec4<f32>(a14[1]), b0_1, acc14_0);
        if (TV > 1u) {
          acc14_1 = fma(vec4<f32>(a14[1]), b1_1, acc14_1);
        }
        if (TV > 2u) {
          acc14_2 = fma(vec4<f32>(a14[1]), b2_1, acc14_2);
        }
        if (TV > 3u) {
          acc14_3 = fma(vec4<f32>(a14[1]), b3_1, acc14_3);
        }
        acc14_0 = fma(vec4<f32>(a14[2]), b0_2, acc14_0);
        if (TV > 1u) {
          acc14_1 = fma(vec4<f32>(a14[2]), b1_2, acc14_1);
        }
        if (TV > 2u) {
          acc14_2 = fma(vec4<f32>(a14[2]), b2_2, acc14_2);
        }
        if (TV > 3u) {
          acc14_3 = fma(vec4<f32>(a14[2]), b3_2, acc14_3);
        }
        acc14_0 = fma(vec4<f32>(a14[3]), b0_3, acc14_0);
        if (TV > 1u) {
          acc14_1 = fma(vec4<f32>(a14[3]), b1_3, acc14_1);
        }
        if (TV > 2u) {
          acc14_2 = fma(vec4<f32>(a14[3]), b2_3, acc14_2);
        }
        if (TV > 3u) {
          acc14_3 = fma(vec4<f32>(a14[3]), b3_3, acc14_3);
        }
        qa14 += 1u;
      }
      if (TM > 15u) {
        let a15 = gemm_a4(qa15);
        acc15_0 = fma(vec4<f32>(a15[0]), b0_0, acc15_0);
        if (TV > 1u) {
          acc15_1 = fma(vec4<f32>(a15[0]), b1_0, acc15_1);
        }
        if (TV > 2u) {
          acc15_2 = fma(vec4<f32>(a15[0]), b2_0, acc15_2);
        }
        if (TV > 3u) {
          acc15_3 = fma(vec4<f32>(a15[0]), b3_0, acc15_3);
        }
        acc15_0 = fma(vec4<f32>(a15[1]), b0_1, acc15_0);
        if (TV > 1u) {
          acc15_1 = fma(vec4<f32>(a15[1]), b1_1, acc15_1);
        }
        if (TV > 2u) {
          acc15_2 = fma(vec4<f32>(a15[1]), b2_1, acc15_2);
        }
        if (TV > 3u) {
          acc15_3 = fma(vec4<f32>(a15[1]), b3_1, acc15_3);
        }
        acc15_0 = fma(vec4<f32>(a15[2]), b0_2, acc15_0);
        if (TV > 1u) {
          acc15_1 = fma(vec4<f32>(a15[2]), b1_2, acc15_1);
        }
        if (TV > 2u) {
          acc15_2 = fma(vec4<f32>(a15[2]), b2_2, acc15_2);
        }
        if (TV > 3u) {
          acc15_3 = fma(vec4<f32>(a15[2]), b3_2, acc15_3);
        }
        acc15_0 = fma(vec4<f32>(a15[3]), b0_3, acc15_0);
        if (TV > 1u) {
          acc15_1 = fma(vec4<f32>(a15[3]), b1_3, acc15_1);
        }
        if (TV > 2u) {
          acc15_2 = fma(vec4<f32>(a15[3]), b2_3, acc15_2);
        }
        if (TV > 3u) {
          acc15_3 = fma(vec4<f32>(a15[3]), b3_3, acc15_3);
        }
        qa15 += 1u;
      }
    }
    pa0 = qa0 * 4u;
    if (TM > 1u) {
      pa1 = qa1 * 4u;
    }
    if (TM > 2u) {
      pa2 = qa2 * 4u;
    }
    if (TM > 3u) {
      pa3 = qa3 * 4u;
    }
    if (TM > 4u) {
      pa4 = qa4 * 4u;
    }
    if (TM > 5u) {
      pa5 = qa5 * 4u;
    }
    if (TM > 6u) {
      pa6 = qa6 * 4u;
    }
    if (TM > 7u) {
      pa7 = qa7 * 4u;
    }
    if (TM > 8u) {
      pa8 = qa8 * 4u;
    }
    if (TM > 9u) {
      pa9 = qa9 * 4u;
    }
    if (TM > 10u) {
      pa10 = qa10 * 4u;
    }
    if (TM > 11u) {
      pa11 = qa11 * 4u;
    }
    if (TM > 12u) {
      pa12 = qa12 * 4u;
    }
    if (TM > 13u) {
      pa13 = qa13 * 4u;
    }
    if (TM > 14u) {
      pa14 = qa14 * 4u;
    }
    if (TM > 15u) {
      pa15 = qa15 * 4u;
    }
  }
  for (; kk < kend; kk++) {
    var b0 = vec4<f32>(0.0f);
    if (B4) {
      b0 = gemm_b4(qb0);
      qb0 += P.rs_b >> 2u;
    } else {
      b0 = vec4<f32>(b_ld(pb0.x), b_ld(pb0.y), b_ld(pb0.z), b_ld(pb0.w));
      pb0 += vec4<u32>(P.rs_b);
    }
    var b1 = vec4<f32>(0.0f);
    if (TV > 1u) {
      if (B4) {
        b1 = gemm_b4(qb1);
        qb1 += P.rs_b >> 2u;
      } else {
        b1 = vec4<f32>(b_ld(pb1.x), b_ld(pb1.y), b_ld(pb1.z), b_ld(pb1.w));
        pb1 += vec4<u32>(P.rs_b);
      }
    }
    var b2 = vec4<f32>(0.0f);
    if (TV > 2u) {
      if (B4) {
        b2 = gemm_b4(qb2);
        qb2 += P.rs_b >> 2u;
      } else {
        b2 = vec4<f32>(b_ld(pb2.x), b_ld(pb2.y), b_ld(pb2.z), b_ld(pb2.w));
        pb2 += vec4<u32>(P.rs_b);
      }
    }
    var b3 = vec4<f32>(0.0f);
    if (TV > 3u) {
      if (B4) {
        b3 = gemm_b4(qb3);
        qb3 += P.rs_b >> 2u;
      } else {
        b3 = vec4<f32>(b_ld(pb3.x), b_ld(pb3.y), b_ld(pb3.z), b_ld(pb3.w));
        pb3 += vec4<u32>(P.rs_b);
      }
    }
    let a0 = vec4<f32>(a_ld(pa0));
    acc0_0 = fma(a0, b0, acc0_0);
    if (TV > 1u) {
      acc0_1 = fma(a0, b1, acc0_1);
    }
    if (TV > 2u) {
      acc0_2 = fma(a0, b2, acc0_2);
    }
    if (TV > 3u) {
      acc0_3 = fma(a0, b3, acc0_3);
    }
    pa0 += P.cs_a;
    if (TM > 1u) {
      let a1 = vec4<f32>(a_ld(pa1));
      acc1_0 = fma(a1, b0, acc1_0);
      if (TV > 1u) {
        acc1_1 = fma(a1, b1, acc1_1);
      }
      if (TV > 2u) {
        acc1_2 = fma(a1, b2, acc1_2);
      }
      if (TV > 3u) {
        acc1_3 = fma(a1, b3, acc1_3);
      }
      pa1 += P.cs_a;
    }
    if (TM > 2u) {
      let a2 = vec4<f32>(a_ld(pa2));
      acc2_0 = fma(a2, b0, acc2_0);
      if (TV > 1u) {
        acc2_1 = fma(a2, b1, acc2_1);
      }
      if (TV > 2u) {
        acc2_2 = fma(a2, b2, acc2_2);
      }
      if (TV > 3u) {
        acc2_3 = fma(a2, b3, acc2_3);
      }
      pa2 += P.cs_a;
    }
    if (TM > 3u) {
      let a3 = vec4<f32>(a_ld(pa3));
      acc3_0 = fma(a3, b0, acc3_0);
      if (TV > 1u) {
        acc3_1 = fma(a3, b1, acc3_1);
      }
      if (TV > 2u) {
        acc3_2 = fma(a3, b2, acc3_2);
      }
      if (TV > 3u) {
        acc3_3 = fma(a3, b3, acc3_3);
      }
      pa3 += P.cs_a;
    }
    if (TM > 4u) {
      let a4 = vec4<f32>(a_ld(pa4));
      acc4_0 = fma(a4, b0, acc4_0);
      if (TV > 1u) {
        acc4_1 = fma(a4, b1, acc4_1);
      }
      if (TV > 2u) {
        acc4_2 = fma(a4, b2, acc4_2);
      }
      if (TV > 3u) {
        acc4_3 = fma(a4, b3, acc4_3);
      }
      pa4 += P.cs_a;
    }
    if (TM > 5u) {
      let a5 = vec4<f32>(a_ld(pa5));
      acc5_0 = fma(a5, b0, acc5_0);
      if (TV > 1u) {
        acc5_1 = fma(a5, b1, acc5_1);
      }
      if (TV > 2u) {
        acc5_2 = fma(a5, b2, acc5_2);
      }
      if (TV > 3u) {
        acc5_3 = fma(a5, b3, acc5_3);
      }
      pa5 += P.cs_a;
    }
    if (TM > 6u) {
      let a6 = vec4<f32>(a_ld(pa6));
      acc6_0 = fma(a6, b0, acc6_0);
      if (TV > 1u) {
        acc6_1 = fma(a6, b1, acc6_1);
      }
      if (TV > 2u) {
        acc6_2 = fma(a6, b2, acc6_2);
      }
      if (TV > 3u) {
        acc6_3 = fma(a6, b3, acc6_3);
      }
      pa6 += P.cs_a;
    }
    if (TM > 7u) {
      let a7 = vec4<f32>(a_ld(pa7));
      acc7_0 = fma(a7, b0, acc7_0);
      if (TV > 1u) {
        acc7_1 = fma(a7, b1, acc7_1);
      }
      if (TV > 2u) {
        acc7_2 = fma(a7, b2, acc7_2);
      }
      if (TV > 3u) {
        acc7_3 = fma(a7, b3, acc7_3);
      }
      pa7 += P.cs_a;
    }
    if (TM > 8u) {
      let a8 = vec4<f32>(a_ld(pa8));
      acc8_0 = fma(a8, b0, acc8_0);
      if (TV > 1u) {
        acc8_1 = fma(a8, b1, acc8_1);
      }
      if (TV > 2u) {
        acc8_2 = fma(a8, b2, acc8_2);
      }
      if (TV > 3u) {
        acc8_3 = fma(a8, b3, acc8_3);
      }
      pa8 += P.cs_a;
    }
    if (TM > 9u) {
      let a9 = vec4<f32>(a_ld(pa9));
      acc9_0 = fma(a9, b0, acc9_0);
      if (TV > 1u) {
        acc9_1 = fma(a9, b1, acc9_1);
      }
      if (TV > 2u) {
        acc9_2 = fma(a9, b2, acc9_2);
      }
      if (TV > 3u) {
        acc9_3 = fma(a9, b3, acc9_3);
      }
      pa9 += P.cs_a;
    }
    if (TM > 10u) {
      let a10 = vec4<f32>(a_ld(pa10));
      acc10_0 = fma(a10, b0, acc10_0);
      if (TV > 1u) {
        acc10_1 = fma(a10, b1, acc10_1);
      }
      if (TV > 2u) {
        acc10_2 = fma(a10, b2, acc10_2);
      }
      if (TV > 3u) {
        acc10_3 = fma(a10, b3, acc10_3);
      }
      pa10 += P.cs_a;
    }
    if (TM > 11u) {
      let a11 = vec4<f32>(a_ld(pa11));
      acc11_0 = fma(a11, b0, acc11_0);
      if (TV > 1u) {
        acc11_1 = fma(a11, b1, acc11_1);
      }
      if (TV > 2u) {
        acc11_2 = fma(a11, b2, acc11_2);
      }
      if (TV > 3u) {
        acc11_3 = fma(a11, b3, acc11_3);
      }
      pa11 += P.cs_a;
    }
    if (TM > 12u) {
      let a12 = vec4<f32>(a_ld(pa12));
      acc12_0 = fma(a12, b0, acc12_0);
      if (TV > 1u) {
        acc12_1 = fma(a12, b1, acc12_1);
      }
      if (TV > 2u) {
        acc12_2 = fma(a12, b2, acc12_2);
      }
      if (TV > 3u) {
        acc12_3 = fma(a12, b3, acc12_3);
      }
      pa12 += P.cs_a;
    }
    if (TM > 13u) {
      let a13 = vec4<f32>(a_ld(pa13));
      acc13_0 = fma(a13, b0, acc13_0);
      if (TV > 1u) {
        acc13_1 = fma(a13, b1, acc13_1);
      }
      if (TV > 2u) {
        acc13_2 = fma(a13, b2, acc13_2);
      }
      if (TV > 3u) {
        acc13_3 = fma(a13, b3, acc13_3);
      }
      pa13 += P.cs_a;
    }
    if (TM > 14u) {
      let a14 = vec4<f32>(a_ld(pa14));
      acc14_0 = fma(a14, b0, acc14_0);
      if (TV > 1u) {
        acc14_1 = fma(a14, b1, acc14_1);
      }
      if (TV > 2u) {
        acc14_2 = fma(a14, b2, acc14_2);
      }
      if (TV > 3u) {
        acc14_3 = fma(a14, b3, acc14_3);
      }
      pa14 += P.cs_a;
    }
    if (TM > 15u) {
      let a15 = vec4<f32>(a_ld(pa15));
      acc15_0 = fma(a15, b0, acc15_0);
      if (TV > 1u) {
        acc15_1 = fma(a15, b1, acc15_1);
      }
      if (TV > 2u) {
        acc15_2 = fma(a15, b2, acc15_2);
      }
      if (TV > 3u) {
        acc15_3 = fma(a15, b3, acc15_3);
      }
      pa15 += P.cs_a;
    }
  }
  var o: array<vec4<f32>, TM * TV>;
  o[min(0u * TV + 0u, TM * TV - 1u)] = acc0_0;
  if (TV > 1u) {
    o[min(0u * TV + 1u, TM * TV - 1u)] = acc0_1;
  }
  if (TV > 2u) {
    o[min(0u * TV + 2u, TM * TV - 1u)] = acc0_2;
  }
  if (TV > 3u) {
    o[min(0u * TV + 3u, TM * TV - 1u)] = acc0_3;
  }
  if (TM > 1u) {
    o[min(1u * TV + 0u, TM * TV - 1u)] = acc1_0;
  }
  if (TM > 1u && TV > 1u) {
    o[min(1u * TV + 1u, TM * TV - 1u)] = acc1_1;
  }
  if (TM > 1u && TV > 2u) {
    o[min(1u * TV + 2u, TM * TV - 1u)] = acc1_2;
  }
  if (TM > 1u && TV > 3u) {
    o[min(1u * TV + 3u, TM * TV - 1u)] = acc1_3;
  }
  if (TM > 2u) {
    o[min(2u * TV + 0u, TM * TV - 1u)] = acc2_0;
  }
  if (TM > 2u && TV > 1u) {
    o[min(2u * TV + 1u, TM * TV - 1u)] = acc2_1;
  }
  if (TM > 2u && TV > 2u) {
    o[min(2u * TV + 2u, TM * TV - 1u)] = acc2_2;
  }
  if (TM > 2u && TV > 3u) {
    o[min(2u * TV + 3u, TM * TV - 1u)] = acc2_3;
  }
  if (TM > 3u) {
    o[min(3u * TV + 0u, TM * TV - 1u)] = acc3_0;
  }
  if (TM > 3u && TV > 1u) {
    o[min(3u * TV + 1u, TM * TV - 1u)] = acc3_1;
  }
  if (TM > 3u && TV > 2u) {
    o[min(3u * TV + 2u, TM * TV - 1u)] = acc3_2;
  }
  if (TM > 3u && TV > 3u) {
    o[min(3u * TV + 3u, TM * TV - 1u)] = acc3_3;
  }
  if (TM > 4u) {
    o[min(4u * TV + 0u, TM * TV - 1u)] = acc4_0;
  }
  if (TM > 4u && TV > 1u) {
    o[min(4u * TV + 1u, TM * TV - 1u)] = acc4_1;
  }
  if (TM > 4u && TV > 2u) {
    o[min(4u * TV + 2u, TM * TV - 1u)] = acc4_2;
  }
  if (TM > 4u && TV > 3u) {
    o[min(4u * TV + 3u, TM * TV - 1u)] = acc4_3;
  }
  if (TM > 5u) {
    o[min(5u * TV + 0u, TM * TV - 1u)] = acc5_0;
  }
  if (TM > 5u && TV > 1u) {
    o[min(5u * TV + 1u, TM * TV - 1u)] = acc5_1;
  }
  if (TM > 5u && TV > 2u) {
    o[min(5u * TV + 2u, TM * TV - 1u)] = acc5_2;
  }
  if (TM > 5u && TV > 3u) {
    o[min(5u * TV + 3u, TM * TV - 1u)] = acc5_3;
  }
  if (TM > 6u) {
    o[min(6u * TV + 0u, TM * TV - 1u)] = acc6_0;
  }
  if (TM > 6u && TV > 1u) {
    o[min(6u * TV + 1u, TM * TV - 1u)] = acc6_1;
  }
  if (TM > 6u && TV > 2u) {
    o[min(6u * TV + 2u, TM * TV - 1u)] = acc6_2;
  }
  if (TM > 6u && TV > 3u) {
    o[min(6u * TV + 3u, TM * TV - 1u)] = acc6_3;
  }
  if (TM > 7u) {
    o[min(7u * TV + 0u, TM * TV - 1u)] = acc7_0;
  }
  if (TM > 7u && TV > 1u) {
    o[min(7u * TV + 1u, TM * TV - 1u)] = acc7_1;
  }
  if (TM > 7u && TV > 2u) {
    o[min(7u * TV + 2u, TM * TV - 1u)] = acc7_2;
  }
  if (TM > 7u && TV > 3u) {
    o[min(7u * TV + 3u, TM * TV - 1u)] = acc7_3;
  }
  if (TM > 8u) {
    o[min(8u * TV + 0u, TM * TV - 1u)] = acc8_0;
  }
  if (TM > 8u && TV > 1u) {
    o[min(8u * TV + 1u, TM * TV - 1u)] = acc8_1;
  }
  if (TM > 8u && TV > 2u) {
    o[min(8u * TV + 2u, TM * TV - 1u)] = acc8_2;
  }
  if (TM > 8u && TV > 3u) {
    o[min(8u * TV + 3u, TM * TV - 1u)] = acc8_3;
  }
  if (TM > 9u) {
    o[min(9u * TV + 0u, TM * TV - 1u)] = acc9_0;
  }
  if (TM > 9u && TV > 1u) {
    o[min(9u * TV + 1u, TM * TV - 1u)] = acc9_1;
  }
  if (TM > 9u && TV > 2u) {
    o[min(9u * TV + 2u, TM * TV - 1u)] = acc9_2;
  }
  if (TM > 9u && TV > 3u) {
    o[min(9u * TV + 3u, TM * TV - 1u)] = acc9_3;
  }
  if (TM > 10u) {
    o[min(10u * TV + 0u, TM * TV - 1u)] = acc10_0;
  }
  if (TM > 10u && TV > 1u) {
    o[min(10u * TV + 1u, TM * TV - 1u)] = acc10_1;
  }
  if (TM > 10u && TV > 2u) {
    o[min(10u * TV + 2u, TM * TV - 1u)] = acc10_2;
  }
  if (TM > 10u && TV > 3u) {
    o[min(10u * TV + 3u, TM * TV - 1u)] = acc10_3;
  }
  if (TM > 11u) {
    o[min(11u * TV + 0u, TM * TV - 1u)] = acc11_0;
  }
  if (TM > 11u && TV > 1u) {
    o[min(11u * TV + 1u, TM * TV - 1u)] = acc11_1;
  }
  if (TM > 11u && TV > 2u) {
    o[min(11u * TV + 2u, TM * TV - 1u)] = acc11_2;
  }
  if (TM > 11u && TV > 3u) {
    o[min(11u * TV + 3u, TM * TV - 1u)] = acc11_3;
  }
  if (TM > 12u) {
    o[min(12u * TV + 0u, TM * TV - 1u)] = acc12_0;
  }
  if (TM > 12u && TV > 1u) {
    o[min(12u * TV + 1u, TM * TV - 1u)] = acc12_1;
  }
  if (TM > 12u && TV > 2u) {
    o[min(12u * TV + 2u, TM * TV - 1u)] = acc12_2;
  }
  if (TM > 12u && TV > 3u) {
    o[min(12u * TV + 3u, TM * TV - 1u)] = acc12_3;
  }
  if (TM > 13u) {
    o[min(13u * TV + 0u, TM * TV - 1u)] = acc13_0;
  }
  if (TM > 13u && TV > 1u) {
    o[min(13u * TV + 1u, TM * TV - 1u)] = acc13_1;
  }
  if (TM > 13u && TV > 2u) {
    o[min(13u * TV + 2u, TM * TV - 1u)] = acc13_2;
  }
  if (TM > 13u && TV > 3u) {
    o[min(13u * TV + 3u, TM * TV - 1u)] = acc13_3;
  }
  if (TM > 14u) {
    o[min(14u * TV + 0u, TM * TV - 1u)] = acc14_0;
  }
  if (TM > 14u && TV > 1u) {
    o[min(14u * TV + 1u, TM * TV - 1u)] = acc14_1;
  }
  if (TM > 14u && TV > 2u) {
    o[min(14u * TV + 2u, TM * TV - 1u)] = acc14_2;
  }
  if (TM > 14u && TV > 3u) {
    o[min(14u * TV + 3u, TM * TV - 1u)] = acc14_3;
  }
  if (TM > 15u) {
    o[min(15u * TV + 0u, TM * TV - 1u)] = acc15_0;
  }
  if (TM > 15u && TV > 1u) {
    o[min(15u * TV + 1u, TM * TV - 1u)] = acc15_1;
  }
  if (TM > 15u && TV > 2u) {
    o[min(15u * TV + 2u, TM * TV - 1u)] = acc15_2;
  }
  if (TM > 15u && TV > 3u) {
    o[min(15u * TV + 3u, TM * TV - 1u)] = acc15_3;
  }
  for (var e = 0u; e < TM * TV * 4u; e++) {
    let i = row0 + e / (TV * 4u);
    let j = col0 + (e / 4u % TV) * 4u * WX + e % 4u;
    if (i < P.m && j < P.n) {
      gemm_out(t, s, i, j, o[e / 4u][e % 4u]);
    }
  }
}
