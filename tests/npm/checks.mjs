// The checks every host runs on the installed npm package (tests/npm/run.mjs
// copies this file into each test project): a GEMM, an attention and a
// download against float64 references, the version, and a bad call that
// must reject with a WgcError. report(line) receives "ok NAME" or
// "FAIL NAME: why" lines.
export async function runChecks(W, label, options, report, wantVersion) {
  const test = async (name, fn) => {
    try {
      await fn();
      report(`ok ${label}: ${name}`);
    } catch (e) {
      const why = (e?.status ? `${e.status}: ` : '') + (e?.message ?? String(e));
      report(`FAIL ${label}: ${name}: ${why.replace(/\s+/g, ' ').slice(0, 300)}`);
    }
  };
  const check = (cond, what) => { if (!cond) throw new Error(what); };
  let seed = 7;
  const rand = () => { // xorshift32 in [-1, 1)
    seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 31 - 1;
  };
  const randoms = (n) => Float32Array.from({ length: n }, rand);
  const compare = (got, want, bound, what) => {
    check(got.length === want.length, `${what}: ${got.length} values, want ${want.length}`);
    for (let i = 0; i < want.length; i++)
      check(Math.abs(got[i] - want[i]) <= bound(want[i]),
            `${what}[${i}] = ${got[i]}, want ${want[i]} (bound ${bound(want[i])})`);
  };

  let ctx = null;
  await test(`create ${JSON.stringify({ ...options, gpu: options.gpu ? '(given)' : undefined })}`, async () => {
    ctx = await W.create(options);
    const want = options.backend === W.BACKEND_CPU ? 'cpu' : 'webgpu';
    check(ctx.backendName === want, `backend ${ctx.backendName} (${ctx.adapterName}), want ${want}`);
    report(`   ${label}: adapter ${ctx.adapterName}`);
  });
  if (!ctx) return;
  await test('version', () => check(W.version() === wantVersion, `version ${W.version()}, package ${wantVersion}`));
  // the form for this host: relaxed SIMD where the engine validates it
  // (Deno, Chromium; not Node 20), never threads outside an isolated page
  await test('the module form', () => {
    const want = W.relaxedSimdAvailable() ? 'wgc-relaxed.wasm' : 'wgc.wasm';
    check(W.loadedModule() === want, `loaded ${W.loadedModule()}, want ${want}`);
    report(`   ${label}: ${W.loadedModule()}`);
  });
  await test('gemm 13x11x7 against float64', async () => {
    const m = 13, n = 11, k = 7, A = randoms(m * k), B = randoms(k * n);
    const a = ctx.alloc(4 * m * k), b = ctx.alloc(4 * k * n), c = ctx.alloc(4 * m * n);
    ctx.upload(a, A);
    ctx.upload(b, B);
    ctx.gemm(W.ROW_MAJOR, W.NO_TRANS, W.NO_TRANS, m, n, k, 1, a, k, b, n, 0, c, n);
    const got = await ctx.download(c, m * n);
    const want = [];
    for (let i = 0; i < m; i++)
      for (let j = 0; j < n; j++) {
        let s = 0;
        for (let p = 0; p < k; p++) s += A[i * k + p] * B[p * n + j];
        want.push(s);
      }
    compare(got, want, () => 1e-5 * k + 1e-6, 'C'); // wgc.h's GEMM bound, |a|, |b| <= 1
    for (const p of [a, b, c]) ctx.free(p);
  });
  await test('attention 2 heads, seq 5x6, d 4, causal against float64', async () => {
    const B = 1, H = 2, SQ = 5, SK = 6, D = 4, scale = 0.5;
    const Q = randoms(B * H * SQ * D), K = randoms(B * H * SK * D), V = randoms(B * H * SK * D);
    const q = ctx.alloc(4 * Q.length), k = ctx.alloc(4 * K.length), v = ctx.alloc(4 * V.length);
    const o = ctx.alloc(4 * Q.length);
    ctx.upload(q, Q);
    ctx.upload(k, K);
    ctx.upload(v, V);
    ctx.attention({ batch: B, heads: H, seq_q: SQ, seq_kv: SK, head_dim: D, scale,
                    causal: W.CAUSAL_BOTTOM_RIGHT }, q, k, v, o);
    const got = await ctx.download(o, Q.length);
    const want = [];
    for (let h = 0; h < H; h++)
      for (let i = 0; i < SQ; i++) {
        const seen = i + 1 + (SK - SQ), s = [];
        for (let j = 0; j < seen; j++) {
          let dot = 0;
          for (let d = 0; d < D; d++) dot += Q[(h * SQ + i) * D + d] * K[(h * SK + j) * D + d];
          s.push(scale * dot);
        }
        const mx = Math.max(...s), e = s.map((x) => Math.exp(x - mx)), z = e.reduce((x, y) => x + y);
        for (let d = 0; d < D; d++) {
          let acc = 0;
          for (let j = 0; j < seen; j++) acc += (e[j] / z) * V[(h * SK + j) * D + d];
          want.push(acc);
        }
      }
    compare(got, want, () => 1e-5 * D * scale + 1e-5, 'O');
    for (const p of [q, k, v, o]) ctx.free(p);
  });
  await test('a bad call rejects with a WgcError', async () => {
    const a = ctx.alloc(16);
    let err = null;
    try {
      ctx.gemm(W.ROW_MAJOR, W.NO_TRANS, W.NO_TRANS, 2, 2, 2, 1, a, 1, a, 2, 0, a, 2); // lda 1 < k
    } catch (e) {
      err = e;
    }
    check(err instanceof W.WgcError, `threw ${err?.name}: ${err?.message}`);
    check(err.status === 'INVALID_ARGUMENT' && /lda/.test(err.message), `${err.status}: ${err.message}`);
    let rejected = null;
    try {
      await ctx.download(a + 4096n, 4); // outside the allocation
    } catch (e) {
      rejected = e;
    }
    check(rejected instanceof W.WgcError && rejected.status === 'INVALID_ARGUMENT',
          `download past the end: ${rejected?.status} ${rejected?.message}`);
  });
  ctx.destroy();
}
