// Element types on the bits, shared by the kernels that read or write f16,
// bf16, Q8_0 and Q4_0 through u32 words (WGSL has no 8- or 16-bit storage
// and this build does not request shader-f16). Everything is exact
// integer or f32 arithmetic on the bit patterns, so the results match the
// CPU backend's (src/dtype.c) bit for bit whatever the device does with
// subnormals and NaNs: unpack2x16float is not used, since WGSL lets it
// flush f16 subnormals, and arithmetic may drop NaN payloads. Type ids follow
// wgc.h's WGC_DTYPES order (checked in src/webgpu/cast.c).

const T_F32 = 0u;
const T_F16 = 1u;
const T_BF16 = 2u;
const T_I32 = 3u;
const T_Q8_0 = 4u;
const T_Q4_0 = 5u;

fn dt_is_nan(b: u32) -> bool { return (b & 0x7fffffffu) > 0x7f800000u; }

// The readers below are for loads, where SwiftShader (Subzero) pays most:
// it runs a vector shift lane by lane and both sides of a branch, so they
// move bits with products, selects and exact f32 arithmetic instead.

// 0x53000000 + (x >> 16) for x a multiple of 2^16 below 2^31: the bits
// of 2^39 + x in f32 (exact). A product by 8192 then drops the exponent's
// bits and leaves x >> 3. (No f32-to-integer conversion: Tint clamps it.)
fn dt_down16(x: u32) -> u32 {
  return bitcast<u32>(f32(bitcast<i32>(x)) + 549755813888.0);
}

// The f16 in word w's high half (hi) or low half, as f32 bits, exactly
// (NaN payloads kept): moved to the top half, its 15 bits below the sign
// to f32's 27..13; normal numbers rebias the exponent, inf and NaN
// rebias to 255, subnormals are m * 2^-24 in ordinary f32 arithmetic (a
// normal f32, so no flushing applies).
fn dt_f16_in(w: u32, hi: bool) -> u32 {
  let t = select(w * 65536u, w, hi);
  let m = dt_down16(t & 0x7fff0000u) * 8192u;
  let nrm = m + select(0x38000000u, 0x70000000u, m >= 0x0f800000u);
  let sub = bitcast<u32>(f32(bitcast<i32>(m)) * 7.275957614183426e-12);
  return select(nrm, sub, m < 0x800000u) | (t & 0x80000000u);
}

// The bf16 in word w's high half (hi) or low half, as f32 bits.
fn dt_bf16_in(w: u32, hi: bool) -> u32 {
  return select(w * 65536u, w & 0xffff0000u, hi);
}

// Byte p (0..3) of word w at the top of a word, the rest zero.
fn dt_byte_top(w: u32, p: u32) -> u32 {
  let m = select(select(16777216u, 65536u, p == 1u),
                 select(256u, 1u, p == 3u), p >= 2u);
  return (w * m) & 0xff000000u;
}

// The int8 quant in byte p of word w: at a word's top it reads as an i32
// of q * 2^24, exactly.
fn dt_q8_in(w: u32, p: u32) -> f32 {
  return f32(bitcast<i32>(dt_byte_top(w, p))) * 5.9604644775390625e-8;
}

// The Q4_0 quant in byte p of word w, its high nibble or its low one:
// xor 8 and at a word's top it reads as an i32 of (q - 8) * 2^28.
fn dt_q4_in(w: u32, p: u32, high: bool) -> f32 {
  let t = dt_byte_top(w ^ 0x88888888u, p);
  return f32(bitcast<i32>(select(t * 16u, t, high) & 0xf0000000u)) *
         3.725290298461914e-9;
}

// Element value of a Q8_0/Q4_0 block as f32 bits: scale d (f32 bits) times
// its quant q, as src/dtype.c dequantizes: a NaN scale gives itself (its
// payload kept), an infinite one times 0 the quiet NaN, else d*q (exact:
// 11 bits times 8).
fn dt_block_of(d: u32, q: f32) -> u32 {
  let v = bitcast<u32>(bitcast<f32>(d) * q);
  let inf0 = ((d & 0x7fffffffu) == 0x7f800000u) & (q == 0.0);
  return select(select(v, 0x7fc00000u, inf0), d, dt_is_nan(d));
}

// f32 bits -> f16 bits, rounded to nearest even; overflow gives inf,
// subnormals are kept; a NaN keeps its sign and payload bits 22..13 (the
// quiet bit set where those are all zero). Straight-line: every case is
// computed and one is selected, which CPU adapters run several times
// faster than branches that return. A rounding's carry into the exponent
// is the right result, up to infinity.
fn dt_f32_to_f16(b: u32) -> u32 {
  let sign = select(0u, 0x8000u, b >= 0x80000000u);
  let a = b & 0x7fffffffu;
  // normal in f16 (2^-14 <= a < 65520): the kept bits s rounded up past
  // half (or at half to even), the exponent rebiased 127 -> 15; one shift
  // (SwiftShader runs each lane by lane)
  let s = a >> 13u;
  let rem = a & 0x1fffu;
  let up = rem > 0x1000u || (rem == 0x1000u && (s & 1u) != 0u);
  let normal = s + select(0u, 1u, up) - 0x1c000u;
  // subnormal in f16 (a < 2^-14): in units of 2^-24, by an exact scaling
  // and round(), which takes ties to even (a is normal in f32 or rounds to
  // 0 whatever an adapter makes of it; min: NaN and big a are selected
  // away below)
  let sub = u32(round(min(bitcast<f32>(a), 1.0) * 16777216.0));
  var h = select(sub, normal, a >= 0x38800000u);
  h = select(h, 0x7c00u, a >= 0x477ff000u);
  let frac = s & 0x3ffu; // a NaN's payload bits 22..13
  h = select(h, 0x7c00u | select(frac, 0x200u, frac == 0u), a > 0x7f800000u);
  return sign | h;
}

// f32 bits -> bf16 bits, as dt_f32_to_f16 (NaN keeps payload bits 22..16):
// half an ulp less one plus the kept lowest bit (ties to even) added, then
// truncated.
fn dt_f32_to_bf16(b: u32) -> u32 {
  let sign = select(0u, 0x8000u, b >= 0x80000000u);
  let a = b & 0x7fffffffu;
  let frac = (a & 0x7fffffu) >> 16u;
  let nan = 0x7f80u | select(frac, 0x40u, frac == 0u);
  return sign | select((a + 0x7fffu + ((a >> 16u) & 1u)) >> 16u, nan,
                       a > 0x7f800000u);
}

// f32 bits -> i32: toward zero, saturating, NaN 0.
fn dt_f32_to_i32(b: u32) -> u32 {
  let a = b & 0x7fffffffu;
  let neg = (b >> 31u) != 0u;
  if (a > 0x7f800000u) { return 0u; }
  let e = a >> 23u;
  if (e < 127u) { return 0u; }
  if (e >= 158u) { return select(0x7fffffffu, 0x80000000u, neg); }
  let m = (a & 0x7fffffu) | 0x800000u;
  var v = m >> (150u - min(e, 150u));
  if (e > 150u) { v = m << (e - 150u); }
  return select(v, 0u - v, neg);
}

// i32 (as u32 bits) -> f32 bits: rounded to nearest even, or to odd (odd:
// then a second rounding to f16 or bf16 is as one rounding of the integer).
fn dt_i32_to_f32(w: u32, odd: bool) -> u32 {
  if (w == 0u) { return 0u; }
  let neg = (w >> 31u) != 0u;
  let mu = select(w, 0u - w, neg);
  let top = firstLeadingBit(mu); // 0..31
  var keep: u32;
  if (top <= 23u) {
    keep = mu << (23u - top);
  } else {
    let sh = top - 23u;
    keep = mu >> sh;
    let rem = mu & ((1u << sh) - 1u);
    if (odd) {
      keep = keep | select(0u, 1u, rem != 0u);
    } else {
      let half = 1u << (sh - 1u);
      let up = rem > half || (rem == half && (keep & 1u) != 0u);
      keep = keep + select(0u, 1u, up);
    }
  }
  return select(0u, 0x80000000u, neg) | (((top + 126u) << 23u) + keep);
}

// The significand (with its implicit bit, normalised to bit 23) and
// unbiased exponent of a finite non-zero f32 magnitude.
fn dt_unpack(a: u32) -> vec2<i32> {
  let e = a >> 23u;
  if (e != 0u) { return vec2<i32>(i32((a & 0x7fffffu) | 0x800000u), i32(e) - 127); }
  let top = firstLeadingBit(a);
  return vec2<i32>(i32(a << (23u - top)), i32(top) - 149);
}

// a / b on f32 bits, correctly rounded to nearest even (WGSL's division
// is only within 2.5 ulp), subnormal results kept: for finite a and
// non-zero finite b. Long division on the significands.
fn dt_div(a: u32, b: u32) -> u32 {
  let sign = (a ^ b) & 0x80000000u;
  let aa = a & 0x7fffffffu;
  if (aa == 0u) { return sign; }
  let ua = dt_unpack(aa);
  let ub = dt_unpack(b & 0x7fffffffu);
  var r = u32(ua.x);
  let mb = u32(ub.x);
  var e = ua.y - ub.y;
  if (r < mb) { r = r << 1u; e = e - 1; }
  var q = 0u; // 26 bits: 1.xxx with 25 fraction bits
  for (var i = 0u; i < 26u; i++) {
    q = q << 1u;
    if (r >= mb) { r = r - mb; q = q | 1u; }
    r = r << 1u;
  }
  let sticky = r != 0u;
  if (e > 127) { return sign | 0x7f800000u; }
  var sh = 2u;
  if (e < -126) {
    let extra = u32(-126 - e);
    if (extra > 24u) { return sign; }
    sh = sh + extra;
  }
  let keep = q >> sh;
  let rem = q & ((1u << sh) - 1u);
  let half = 1u << (sh - 1u);
  let up = rem > half || (rem == half && (sticky || (keep & 1u) != 0u));
  let m = keep + select(0u, 1u, up);
  if (e < -126) { return sign | m; } // subnormal (or the least normal)
  let bits = (u32(e + 126) << 23u) + m;
  return sign | min(bits, 0x7f800000u);
}
