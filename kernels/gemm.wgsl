// Tiled GEMM: a workgroup computes a BM x BN block of C for one batch and
// one k slice (workgroup x: column block, y: row block, z: batch*nslices +
// slice), each invocation a TM x TN sub-block held in registers (TM, TN
// multiples of 4). A and B are staged through workgroup memory BK values of
// k at a time, k-major and padded by one vec4 per row against bank
// conflicts. The prelude defines BM, BN, BK, TM, TN and A_KC (A is
// contiguous along k: threads then walk k when loading A) and B_NC (B is
// contiguous along n). Output goes through gemm_out (gemm_out_c or
// gemm_out_part).

const WX: u32 = BN / TN;
const WY: u32 = BM / TM;
const NT: u32 = WX * WY;
const AS: u32 = BM / 4u + 1u; // vec4s per k row of As
const BS: u32 = BN / 4u + 1u;
const TM4: u32 = TM / 4u;
const TN4: u32 = TN / 4u;

var<workgroup> As: array<vec4<f32>, BK * AS>;
var<workgroup> Bs: array<vec4<f32>, BK * BS>;

// Element idx of a staging pass over a BK x len tile as (position along
// len, kk): when the operand is contiguous along k (k_major), consecutive
// invocations walk k, so their loads coalesce.
fn stage_at(idx: u32, len: u32, k_major: bool) -> vec2<u32> {
  if (k_major) {
    return vec2<u32>(idx / BK, idx % BK);
  }
  return vec2<u32>(idx % len, idx / len);
}

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let col0 = wid.x * BN;
  let row0 = wid.y * BM;
  let t = wid.z / P.nslices;
  let s = wid.z % P.nslices;
  let kbeg = s * P.kslice;
  let kend = min(P.k, kbeg + P.kslice);
  let abase = t * P.ba;
  let bbase = t * P.bb;
  let full_m = row0 + BM <= P.m;
  let full_n = col0 + BN <= P.n;

  var acc: array<array<vec4<f32>, TN4>, TM>;
  for (var i = 0u; i < TM; i++) {
    for (var q = 0u; q < TN4; q++) {
      acc[i][q] = vec4<f32>(0.0f);
    }
  }

  for (var k0 = kbeg; k0 < kend; k0 += BK) {
    let full_k = k0 + BK <= kend;
    // Stage A[row0.., k0..] as As[kk][mm].
    for (var r = 0u; r < BM * BK / NT; r++) {
      let at = stage_at(li + r * NT, BM, A_KC);
      let mm = at.x;
      let kk = at.y;
      let gi = row0 + mm;
      let gk = k0 + kk;
      var v = 0.0f;
      if ((full_m && full_k) || (gi < P.m && gk < kend)) {
        v = a_ld(abase + gi * P.rs_a + gk * P.cs_a);
      }
      As[kk * AS + mm / 4u][mm % 4u] = v;
    }
    // Stage B[k0.., col0..] as Bs[kk][nn].
    for (var r = 0u; r < BN * BK / NT; r++) {
      let at = stage_at(li + r * NT, BN, !B_NC);
      let nn = at.x;
      let kk = at.y;
      let gj = col0 + nn;
      let gk = k0 + kk;
      var v = 0.0f;
      if ((full_n && full_k) || (gj < P.n && gk < kend)) {
        v = b_ld(bbase + gk * P.rs_b + gj * P.cs_b);
      }
      Bs[kk * BS + nn / 4u][nn % 4u] = v;
    }
    workgroupBarrier();
    for (var kk = 0u; kk < BK; kk++) {
      var bv: array<vec4<f32>, TN4>;
      for (var q = 0u; q < TN4; q++) {
        bv[q] = Bs[kk * BS + lid.x * TN4 + q];
      }
      for (var p = 0u; p < TM4; p++) {
        let av = As[kk * AS + lid.y * TM4 + p];
        for (var q = 0u; q < TN4; q++) {
          acc[4u * p][q] = fma(vec4<f32>(av.x), bv[q], acc[4u * p][q]);
          acc[4u * p + 1u][q] = fma(vec4<f32>(av.y), bv[q], acc[4u * p + 1u][q]);
          acc[4u * p + 2u][q] = fma(vec4<f32>(av.z), bv[q], acc[4u * p + 2u][q]);
          acc[4u * p + 3u][q] = fma(vec4<f32>(av.w), bv[q], acc[4u * p + 3u][q]);
        }
      }
    }
    workgroupBarrier();
  }

  for (var i = 0u; i < TM; i++) {
    let gi = row0 + lid.y * TM + i;
    if (gi < P.m) {
      for (var q = 0u; q < TN4; q++) {
        for (var c = 0u; c < 4u; c++) {
          let gj = col0 + lid.x * TN + 4u * q + c;
          if (gj < P.n) {
            gemm_out(t, s, gi, gj, acc[i][q][c]);
          }
        }
      }
    }
  }
}
