/* Attention at the 32-bit limits wgc.h states (seq_q and seq_kv below 2^31,
 * head sizes at most 2^28, batch * heads below 2^32): beyond them both
 * backends reject a call alike, status and message, with operands kept
 * tiny by strides of 0; just inside them a call runs on both. A causal
 * TOP_LEFT call over 2^31 - 1 keys costs only the keys its rows see, so
 * it runs here in milliseconds and is checked against its exact value. */
#include "harness.h"
#include "util.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define BIG ((size_t)1 << 31)

typedef struct limit_case {
  const char *what;
  wgc_attention_desc d;
} limit_case;

/* K and V of one row per head, read at every key (seq stride 0). */
static wgc_attention_desc tiny_kv(size_t heads, size_t seq_q, size_t seq_kv,
                                  size_t hd) {
  return (wgc_attention_desc){.batch = 1,
                              .heads = heads,
                              .seq_q = seq_q,
                              .seq_kv = seq_kv,
                              .head_dim = hd,
                              .scale = 1.0f,
                              .k_stride = {heads * hd, hd, 0},
                              .v_stride = {heads * hd, hd, 0}};
}

TEST(attention_index_limits) {
  limit_case cases[5];
  cases[0] =
      (limit_case){"seq_kv 2^31 (K, V of seq stride 0)", tiny_kv(1, 1, BIG, 1)};
  cases[1] = (limit_case){"seq_kv 2^31 + 5, causal bottom-right",
                          tiny_kv(2, 3, BIG + 5, 2)};
  cases[1].d.causal = WGC_CAUSAL_BOTTOM_RIGHT;
  cases[2] =
      (limit_case){"seq_q 2^31 (Q of seq stride 0)", tiny_kv(1, BIG, 4, 1)};
  cases[2].d.q_stride = (wgc_attention_strides){1, 1, 0};
  cases[3] = (limit_case){"head_dim 2^28 + 1", tiny_kv(1, 1, 1, 1)};
  cases[3].d.head_dim = ((size_t)1 << 28) + 1;
  cases[4] = (limit_case){"batch * heads 2^32", tiny_kv(1, 1, 1, 1)};
  cases[4].d.batch = (size_t)1 << 20;
  cases[4].d.heads = (size_t)1 << 12;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    if (!case_begin("attention beyond the 32-bit limits: %s", cases[i].what))
      continue;
    wgc_status st[2] = {WGC_OK, WGC_OK};
    char msg[2][512] = {"", ""};
    for (int bi = 0; bi < 2; bi++) {
      wgc_context *ctx = test_ctx(test_backends[bi]);
      if (!ctx)
        continue;
      float h[64];
      fill_ramp(h, 64, 1);
      wgc_ptr in = dev_from(ctx, h, 64), out = dev_from(ctx, h, 64);
      st[bi] = wgc_attention(ctx, &cases[i].d, in, in, in, out);
      snprintf(msg[bi], sizeof msg[bi], "%s", wgc_last_error(ctx));
      CHECK_STATUS(st[bi], WGC_ERR_INVALID_ARGUMENT);
      CHECK(strstr(msg[bi], "seq_q and seq_kv below 2^31") != NULL,
            "%s: message \"%s\"", wgc_backend_name(ctx), msg[bi]);
      CHECK_DEVICE_EQUALS(ctx, out, h, 64, "o");
      dev_free(ctx, in);
      dev_free(ctx, out);
    }
    CHECK(st[0] == st[1] && strcmp(msg[0], msg[1]) == 0,
          "backends differ: %s \"%s\" / %s \"%s\"", wgc_status_name(st[0]),
          msg[0], wgc_status_name(st[1]), msg[1]);
    case_end();
  }
}

/* 2^31 - 1 keys under TOP_LEFT: row i sees keys 0..i, all equal to its
 * head's one K and V row, so its output is exactly that V row. */
TEST(attention_top_left_max_keys) {
  for (int bi = 0; bi < 2; bi++) {
    wgc_context *ctx;
    if (!backend_case(bi, &ctx,
                      "attention seq_kv 2^31 - 1 causal top-left, seq_q 5, "
                      "2 heads, head_dim 3"))
      continue;
    wgc_attention_desc d = tiny_kv(2, 5, BIG - 1, 3);
    d.causal = WGC_CAUSAL_TOP_LEFT;
    float q[30], kv[6], o[30];
    fill_uniform(q, 30, -2, 2, 5);
    fill_uniform(kv, 6, -2, 2, 6);
    wgc_ptr dq = dev_from(ctx, q, 30), dk = dev_from(ctx, kv, 6),
            dv = dev_from(ctx, kv, 6), dout = dev_alloc(ctx, sizeof o);
    if (dq && dk && dv && dout) {
      CHECK_OK(ctx, wgc_attention(ctx, &d, dq, dk, dv, dout));
      if (dev_read(ctx, o, dout, 30)) {
        double worst = 0;
        for (size_t h = 0; h < 2; h++)
          for (size_t i = 0; i < 5; i++)
            for (size_t x = 0; x < 3; x++) {
              double want = kv[h * 3 + x], got = o[(h * 5 + i) * 3 + x];
              /* weights of equal scores are equal: the mean of equal
               * values, within a few roundings */
              double err = fabs(got - want);
              worst = err > worst ? err : worst;
              CHECK(err <= 1e-6 * fabs(want) + 1e-30,
                    "o[%zu][%zu][%zu] = %.9g, want %.9g", h, i, x, got, want);
            }
        case_note(" abs %.2g", worst);
      }
    }
    dev_free(ctx, dq);
    dev_free(ctx, dk);
    dev_free(ctx, dv);
    dev_free(ctx, dout);
    case_end();
  }
}
