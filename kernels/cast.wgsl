// wgc_cast of the prelude's types ST -> DT over one window. Operands are
// bound from a 4-byte boundary: the window's first element starts P.sh
// bytes into src and P.dh bytes into dst (0 or 2). Each invocation writes
// one whole u32 word of dst, so no two invocations write the same word;
// halves of a boundary word that lie outside the window keep their bytes.
// A quantized word recomputes its block's scale (at most two blocks per
// word, 32 reads each: far below llvmpipe's loop budget).

struct Params {
  off: vec4<u32>,
  count: u32, // dst words of the window
  n: u32,     // elements of the window
  sh: u32,
  dh: u32,
  dbytes: u32, // dst bytes of the window
  zero: u32,   // 0, unknown to the compiler
}

fn src_word(w: u32) -> u32 { return bitcast<u32>(src_ld(w)); }
fn src_half(byte: u32) -> u32 {
  return (src_word(byte >> 2u) >> ((byte & 2u) * 8u)) & 0xffffu;
}
fn block_bytes(t: u32) -> u32 { return select(18u, 34u, t == T_Q8_0); }

// Element e of src as f32 bits (exact, except i32 beyond 2^24: rounded to
// nearest even, or to odd for a second rounding to f16/bf16).
fn src_bits(e: u32, odd: bool) -> u32 {
  if (ST == T_F32) { return src_word(e); }
  if (ST == T_I32) { return dt_i32_to_f32(src_word(e), odd); }
  let h = P.sh + 2u * e;
  if (ST == T_F16) { return dt_f16_in(src_word(h >> 2u), (h & 2u) != 0u); }
  if (ST == T_BF16) { return dt_bf16_in(src_word(h >> 2u), (h & 2u) != 0u); }
  let base = P.sh + (e / 32u) * block_bytes(ST);
  let d = dt_f16_in(src_word(base >> 2u), (base & 2u) != 0u);
  let j = e % 32u;
  var q: f32;
  if (ST == T_Q8_0) {
    let z = base + 2u + j;
    q = dt_q8_in(src_word(z >> 2u), z & 3u);
  } else {
    let z = base + 2u + (j % 16u);
    q = dt_q4_in(src_word(z >> 2u), z & 3u, j >= 16u);
  }
  return dt_block_of(d, q);
}

// A block's scale: d (f32 bits), 1/d (f32 bits, 0 when d is 0), d as f16,
// and whether the block is finite; ggml's formulas, divisions correctly
// rounded.
struct Scale { d16: u32, id: u32, finite: bool, }

fn block_scale(b: u32) -> Scale {
  var amax = 0u; // magnitudes compare as integers
  var maxb = 0u;
  var finite = true;
  for (var j = 0u; j < 32u; j++) {
    let x = src_bits(b * 32u + j, false);
    let a = x & 0x7fffffffu;
    finite = finite && a < 0x7f800000u;
    if (a > amax) { amax = a; maxb = x; }
  }
  if (!finite) { return Scale(0x7e00u, 0u, false); }
  var d: u32;
  if (DT == T_Q8_0) {
    d = dt_div(amax, 0x42fe0000u); // amax / 127
  } else {
    d = dt_div(maxb, 0xc1000000u); // max / -8
  }
  var id = 0u;
  if ((d & 0x7fffffffu) != 0u) { id = dt_div(0x3f800000u, d); }
  return Scale(dt_f32_to_f16(d), id, true);
}

// x*id as a product on its own: the select on an opaque zero keeps
// compilers from fusing it with what follows.
fn scaled(e: u32, s: Scale) -> f32 {
  let t = bitcast<f32>(src_bits(e, false)) * bitcast<f32>(s.id);
  let z = select(t, 0.0, P.zero != 0u);
  if (dt_is_nan(bitcast<u32>(z))) { return 0.0; } // 0 * inf
  return z;
}

// ggml's roundf(x*id) for Q8_0 (halves away from zero), saturating.
fn quant8(e: u32, s: Scale) -> u32 {
  if (!s.finite) { return 0u; }
  let t = scaled(e, s);
  let a = abs(t);
  var r = 127.0;
  if (a < 127.0) {
    r = trunc(a);
    if (a - r >= 0.5) { r = r + 1.0; }
  }
  let q = select(i32(r), -i32(r), t < 0.0);
  return u32(q) & 0xffu;
}

// ggml's min(15, (int8)(x*id + 8.5)) for Q4_0.
fn quant4(e: u32, s: Scale) -> u32 {
  if (!s.finite) { return 8u; }
  let u = scaled(e, s) + 8.5;
  if (!(u >= 0.0)) { return 0u; }
  if (u >= 15.0) { return 15u; }
  return u32(trunc(u));
}

var<private> cached_block: u32 = 0xffffffffu;
var<private> cached: Scale;

fn scale_of(b: u32) -> Scale {
  if (b != cached_block) {
    cached = block_scale(b);
    cached_block = b;
  }
  return cached;
}

// Half h (bytes 2h, 2h+1) of the window's dst.
fn dst_half(h: u32) -> u32 {
  if (ST == DT) { return src_half(P.sh + 2u * h); }
  if (DT == T_F16) { return dt_f32_to_f16(src_bits(h, true)); }
  if (DT == T_BF16) { return dt_f32_to_bf16(src_bits(h, true)); }
  if (DT == T_Q8_0) {
    let b = h / 17u;
    let j = h % 17u;
    let s = scale_of(b);
    if (j == 0u) { return s.d16; }
    let e = b * 32u + 2u * (j - 1u);
    return quant8(e, s) | (quant8(e + 1u, s) << 8u);
  }
  let b = h / 9u;
  let j = h % 9u;
  let s = scale_of(b);
  if (j == 0u) { return s.d16; }
  let e = b * 32u + 2u * (j - 1u);
  let lo = quant4(e, s) | (quant4(e + 16u, s) << 4u);
  let hi = quant4(e + 1u, s) | (quant4(e + 17u, s) << 4u);
  return lo | (hi << 8u);
}

@compute @workgroup_size(256)
fn main(@builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>,
        @builtin(local_invocation_index) li: u32) {
  let w = wg_linear_group(wid, nwg) * 256u + li;
  if (w >= P.count) { return; }
  if (DT == T_F32 || DT == T_I32) { // 4-byte aligned: word w is element w
    var v = src_word(w);
    if (ST != DT) {
      v = src_bits(w, false);
      if (DT == T_I32) { v = dt_f32_to_i32(v); }
    }
    dst_st(w, bitcast<f32>(v));
    return;
  }
  var word = 0u;
  let first = 4u * w;
  if (first < P.dh || first + 4u > P.dh + P.dbytes) {
    word = bitcast<u32>(dst_ld(w));
  }
  for (var k = 0u; k < 2u; k++) {
    let byte = first + 2u * k;
    if (byte >= P.dh && byte < P.dh + P.dbytes) {
      let shift = 16u * k;
      word = (word & ~(0xffffu << shift)) | (dst_half((byte - P.dh) / 2u) << shift);
    }
  }
  dst_st(w, bitcast<f32>(word));
}
