// Register-tiled GEMM without workgroup memory: each invocation computes a
// TM x TN (4 x 4) block of C straight from memory, over the same grid as
// the tiled kernel (x: column block, y: row block, z: batch*nslices +
// slice). On CPU adapters workgroup memory is ordinary memory and every
// barrier is costly (SwiftShader switches coroutines at each one), so this
// form runs faster there. Rows and columns past the edge load clamped
// (valid) indices and are not stored. The prelude defines BM, BN.

const WX: u32 = BN / 4u;
const WY: u32 = BM / 4u;

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(local_invocation_id) lid: vec3<u32>) {
  let col0 = wid.x * BN + lid.x * 4u;
  let row0 = wid.y * BM + lid.y * 4u;
  if (row0 >= P.m || col0 >= P.n) {
    return; // no barrier follows: leaving early is fine
  }
  let t = wid.z / P.nslices;
  let s = wid.z % P.nslices;
  let kbeg = s * P.kslice;
  let kend = min(P.k, kbeg + P.kslice);
  var pa = vec4<u32>(row0, min(row0 + 1u, P.m - 1u), min(row0 + 2u, P.m - 1u),
                     min(row0 + 3u, P.m - 1u)) * P.rs_a +
           vec4<u32>(t * P.ba + kbeg * P.cs_a);
  var pb = vec4<u32>(col0, min(col0 + 1u, P.n - 1u), min(col0 + 2u, P.n - 1u),
                     min(col0 + 3u, P.n - 1u)) * P.cs_b +
           vec4<u32>(t * P.bb + kbeg * P.rs_b);
  var acc0 = vec4<f32>(0.0f);
  var acc1 = vec4<f32>(0.0f);
  var acc2 = vec4<f32>(0.0f);
  var acc3 = vec4<f32>(0.0f);
  for (var kk = kbeg; kk < kend; kk++) {
    let b = vec4<f32>(b_ld(pb.x), b_ld(pb.y), b_ld(pb.z), b_ld(pb.w));
    acc0 = fma(vec4<f32>(a_ld(pa.x)), b, acc0);
    acc1 = fma(vec4<f32>(a_ld(pa.y)), b, acc1);
    acc2 = fma(vec4<f32>(a_ld(pa.z)), b, acc2);
    acc3 = fma(vec4<f32>(a_ld(pa.w)), b, acc3);
    pa += vec4<u32>(P.cs_a);
    pb += vec4<u32>(P.rs_b);
  }
  let acc = array<vec4<f32>, 4>(acc0, acc1, acc2, acc3);
  for (var i = 0u; i < 4u; i++) {
    let gi = row0 + i;
    for (var c = 0u; c < 4u; c++) {
      let gj = col0 + c;
      if (gi < P.m && gj < P.n) {
        gemm_out(t, s, gi, gj, acc[i][c]);
      }
    }
  }
}
