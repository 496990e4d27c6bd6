// Matrix-vector GEMM (m = 1, decoding) with B's k contiguous: one
// invocation per two neighbouring columns of C (each A element read once
// for both) and k slice, P.total = nslices*nb*m*ceil(n/2) of them. B is
// read whole words (or vec4s) at a time and decoded in registers by
// gemm_dot2, which one of gemm_mv_f32, gemm_mv_h (f16, bf16), gemm_mv_q8
// and gemm_mv_q4 defines (k contiguous, so pb steps by one per k); the
// host makes every column's start fit its reads. Their helpers follow.

// Four elements of A from pa on, P.cs_a apart.
fn mv_a4(pa: u32) -> vec4<f32> {
  return vec4<f32>(a_ld(pa), a_ld(pa + P.cs_a), a_ld(pa + 2u * P.cs_a),
                   a_ld(pa + 3u * P.cs_a));
}

// One column's dot over n elements of B from pb on, element by element
// through b_ld, which decodes exactly as wgc_cast: the typed dots redo a
// column this way where their fast decoding would differ (an f16 inf or
// NaN, a block whose scale is infinite), in a loop of 0 or 1 turns that a
// SIMD batch without such a column skips whole (both sides of a branch
// would run).
fn mv_exact(redo: bool, pa: u32, pb: u32, n: u32, fast: f32) -> f32 {
  var d = fast;
  for (var r = select(0u, 1u, redo); r > 0u; r--) {
    var acc = 0.0;
    for (var e = 0u; e < n; e++) {
      acc = fma(a_ld(pa + e * P.cs_a), b_ld(pb + e), acc);
    }
    d = acc;
  }
  return d;
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let idx = wg_linear_group(wid, nwg) * 256u + li;
  if (idx >= P.total) { return; }
  let n2 = (P.n + 1u) / 2u;
  let r = idx / n2;
  let j = 2u * (idx % n2);
  let i = r % P.m;
  let t = (r / P.m) % P.nb;
  let s = r / P.m / P.nb;
  let k0 = s * P.kslice;
  let pa = t * P.ba + i * P.rs_a + k0 * P.cs_a;
  let pb = t * P.bb + k0 * P.rs_b;
  // an odd n's last column is read twice, written once
  let d = gemm_dot2(pa, pb + j * P.cs_b, pb + min(j + 1u, P.n - 1u) * P.cs_b,
                    min(P.k, k0 + P.kslice) - k0);
  gemm_out(t, s, i, j, d.x);
  if (j + 1u < P.n) {
    gemm_out(t, s, i, j + 1u, d.y);
  }
}
