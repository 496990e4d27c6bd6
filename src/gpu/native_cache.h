/* The persistent pipeline cache (wgc_options.pipeline_cache), natively.
 *
 * wgpu-native 0.32.0 has no pipeline cache in its C API (wgpu-core has one,
 * but wgpu.h exposes only the feature flag; every pipeline is created with
 * none), so wgc cannot hand compiled pipelines to the runtime. What it can
 * do is point the driver's own on-disk shader cache at a place the user
 * names: Mesa's Vulkan drivers (lavapipe, RADV, ANV, ...) keep compiled
 * shaders in MESA_SHADER_CACHE_DIR, read when the driver opens the adapter.
 * For a cache path P:
 *   - P is a small text file, wgc's header: the format, wgc's version, the
 *     adapter and the driver that filled the cache, and a checksum;
 *   - P.d/ is the directory the driver writes its cache into.
 * A header written for another wgc version, adapter or driver, or a
 * damaged one (bad checksum, truncated), empties P.d/ and is rewritten. A
 * file at P that is not a wgc header at all is left alone and no cache is
 * used. Drivers that keep no disk cache (SwiftShader keeps compiled
 * pipelines in memory only, and its VkPipelineCache data is a bare header)
 * get nothing persisted, which the status sentence says. */
#ifndef WGC_NATIVE_CACHE_H
#define WGC_NATIVE_CACHE_H

#include <stdbool.h>
#include <stddef.h>

/* The header's text fields. */
typedef struct nw_cache_header {
  char version[32]; /* wgc's, "0.2.0" */
  char adapter[256];
  char driver[256];
  char ids[64]; /* "<vendor id> <device id> <backend>" */
} nw_cache_header;

enum nw_cache_parsed {
  NW_CACHE_PARSED_OK,
  NW_CACHE_PARSED_FOREIGN, /* not a wgc pipeline cache header */
  NW_CACHE_PARSED_DAMAGED, /* one, but truncated or altered */
};

/* Reads a header of len bytes (not NUL-terminated); fills h only when it
 * returns NW_CACHE_PARSED_OK, with printable NUL-terminated fields. */
enum nw_cache_parsed nw_cache_parse(const char *text, size_t len,
                                    nw_cache_header *h);
/* Writes h as a header into buf; returns its length, or 0 when cap is too
 * small. nw_cache_parse reads it back as h. */
size_t nw_cache_format(const nw_cache_header *h, char *buf, size_t cap);

/* One device request's use of the cache. */
typedef struct nw_cache {
  bool on;       /* a path was given */
  bool redirect; /* the driver's cache is pointed at P.d/ */
  int state;     /* what nw_cache_begin found at P */
  nw_cache_header found;
  char path[4096], dir[4096];
  char msg[768]; /* the status sentence */
} nw_cache;

/* Before the instance is created: reads P and decides whether the driver's
 * cache may be directed to P.d/ (c->redirect). path NULL or "": off. */
void nw_cache_begin(nw_cache *c, const char *path);
/* Once the adapter is known: checks the header against it, empties P.d/
 * and rewrites P when they differ, and sets c->msg. mesa: whether the
 * driver is one of Mesa's (has the disk cache). */
void nw_cache_adapter(nw_cache *c, const char *adapter, const char *driver,
                      const char *ids, bool mesa);

#endif
