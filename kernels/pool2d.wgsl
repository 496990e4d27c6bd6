// 2-D pooling (host: src/webgpu/pool2d.c). One invocation per output
// element of the launch: output rows g0 .. g0 + gn (a row: one output row
// of one plane) by columns ox0 .. ox0 + qn, over the window taps
// tr0 .. tr0 + trn by tc0 .. tc0 + tcn. A window larger than one launch
// (binding windows, the loop budget of CPU adapters) takes several
// launches in order: the first writes its part, the others fold theirs in,
// and the last of AVG divides by the count.
// Prelude consts: MODE 0 MAX (NaN wins), 1 AVG; INCLUDE_PAD 1: AVG counts
// every window position.

struct Params {
  off: vec4<u32>,
  g0: u32, gn: u32, ox0: u32, qn: u32,
  tr0: u32, trn: u32, tc0: u32, tcn: u32,
  h: u32, w: u32, p: u32, q: u32,
  sh: u32, sw: u32, ph: u32, pw: u32,
  dh: u32, dw: u32, r: u32, s: u32,
  xstart: u32, // element of the input at x's element 0
  ystart: u32, // element of the output at y's element 0
  first: u32,
  last: u32,
}

// The taps i < n with 0 <= base + i*step < limit, as [lo, hi) (empty when
// hi <= lo). In u32: -base is below 2^30 and limit below 2^31, so no sum
// here wraps.
fn pool_range(base: i32, n: u32, step: u32, limit: u32) -> vec2<u32> {
  if (limit == 0u) { return vec2<u32>(0u, 0u); }
  var lo = 0u;
  var top = 0u; // the largest i*step inside
  if (base < 0) {
    lo = (u32(-base) + step - 1u) / step;
    top = limit - 1u + u32(-base);
  } else {
    if (u32(base) >= limit) { return vec2<u32>(0u, 0u); }
    top = limit - 1u - u32(base);
  }
  return vec2<u32>(lo, min(top / step + 1u, n));
}

fn pool_count(base: i32, n: u32, step: u32, limit: u32) -> u32 {
  let r = pool_range(base, n, step, limit);
  return select(0u, r.y - r.x, r.y > r.x);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let t = wg_linear_group(wid, nwg) * 256u + li;
  if (t >= P.gn * P.qn) { return; }
  let g = P.g0 + t / P.qn;
  let ox = P.ox0 + t % P.qn;
  let plane = g / P.p;
  let oy = g % P.p;
  let by = i32(oy * P.sh) - i32(P.ph);
  let bx = i32(ox * P.sw) - i32(P.pw);
  // the launch's taps that lie inside the input: no test per tap
  let ri = pool_range(by, P.tr0 + P.trn, P.dh, P.h);
  let rj = pool_range(bx, P.tc0 + P.tcn, P.dw, P.w);
  let i0 = max(ri.x, P.tr0);
  let j0 = max(rj.x, P.tc0);
  // element (by + i*dh, bx + j*dw) of the plane, less xstart; wraps, but
  // the sums for the taps inside do not
  let base = plane * P.h * P.w + u32(by) * P.w + u32(bx) - P.xstart;
  var acc = 0.0f;
  if (MODE == 0u) { var b = 0xff800000u; acc = bitcast<f32>(b); } // -inf (a constant -inf is an error to Tint)
  var nan = false;
  for (var i = i0; i < ri.y; i++) {
    let row = base + i * P.dh * P.w;
    for (var j = j0; j < rj.y; j++) {
      let v = x_ld(row + j * P.dw);
      if (MODE == 0u) {
        if (wgc_is_nan(v)) { nan = true; } else { acc = max(acc, v); }
      } else {
        acc = acc + v;
      }
    }
  }
  let yi = g * P.q + ox - P.ystart;
  if (P.first == 0u) {
    let prev = y_ld(yi);
    if (MODE == 0u) {
      if (wgc_is_nan(prev)) { nan = true; } else { acc = max(acc, prev); }
    } else {
      acc = prev + acc;
    }
  }
  if (MODE == 0u && nan) { acc = wgc_nan(); }
  if (MODE == 1u && P.last == 1u) {
    var count = f32(P.r) * f32(P.s);
    if (INCLUDE_PAD == 0u) {
      count = f32(pool_count(by, P.r, P.dh, P.h)) *
              f32(pool_count(bx, P.s, P.dw, P.w));
    }
    if (count > 0.0f) { acc = acc / count; } else { acc = 0.0f; }
  }
  y_st(yi, acc);
}
