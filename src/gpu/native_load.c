/* Loads libwgpu_native.so with dlopen/dlsym into the nw table. */
#include "gpu/native_wgpu.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

nw_api wgc_nw;

/* Our own types for wgpu.h's functions must match its declarations (a
 * compile-time check: nothing here references the symbols). The webgpu.h
 * WGPUProc types are checked too, in case a header pairs them wrongly. */
#if defined(__GNUC__) || defined(__clang__)
#define NW_CHECK_(name, type)                                                  \
  _Static_assert(__builtin_types_compatible_p(__typeof__(&wgpu##name), type),  \
                 "wgpu" #name " does not match " #type);
#define NW_CHECK_WEBGPU_(name) NW_CHECK_(name, WGPUProc##name)
#define NW_CHECK_NATIVE_(name) NW_CHECK_(name, NWProc##name)
NW_WEBGPU_FUNCS(NW_CHECK_WEBGPU_)
NW_NATIVE_FUNCS(NW_CHECK_NATIVE_)
#undef NW_CHECK_
#undef NW_CHECK_WEBGPU_
#undef NW_CHECK_NATIVE_
#endif

static void nw_log_nothing(WGPULogLevel level, WGPUStringView message,
                           void *userdata) {
  (void)level;
  (void)message;
  (void)userdata;
}

/* Resolves every entry point from handle into a temporary table; only a
 * complete table is kept. */
static bool nw_resolve(void *handle) {
  nw_api t;
  memset(&t, 0, sizeof t);
  bool ok = true;
#define NW_SYM_(name)                                                          \
  {                                                                            \
    void *sym = dlsym(handle, "wgpu" #name);                                   \
    if (!sym)                                                                  \
      ok = false;                                                              \
    /* object pointer to function pointer, as POSIX allows */                  \
    memcpy(&t.name, &sym, sizeof t.name);                                      \
  }
  NW_WEBGPU_FUNCS(NW_SYM_)
  NW_NATIVE_FUNCS(NW_SYM_)
#undef NW_SYM_
  if (ok)
    wgc_nw = t;
  return ok;
}

static bool nw_try(const char *path) {
  if (!path || !*path)
    return false;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    (void)dlerror();
    return false;
  }
  if (!nw_resolve(h)) {
    dlclose(h);
    return false;
  }
  return true; /* kept open for the life of the process */
}

/* libwgpu_native.so beside the module (shared library or program) that
 * contains this function. */
static bool nw_try_beside_us(void) {
  bool (*self)(void) = wgc_nw_load;
  void *addr;
  memcpy(&addr, &self, sizeof addr);
  Dl_info info;
  if (!dladdr(addr, &info) || !info.dli_fname)
    return false;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash) /* a program started through PATH: no folder known */
    return false;
  static const char name[] = "libwgpu_native.so";
  size_t dir = (size_t)(slash - info.dli_fname) + 1;
  char *path = malloc(dir + sizeof name);
  if (!path)
    return false;
  memcpy(path, info.dli_fname, dir);
  memcpy(path + dir, name, sizeof name);
  bool ok = nw_try(path);
  free(path);
  return ok;
}

static bool nw_loaded;

static void nw_load_once(void) {
  /* An explicit choice is the only one tried: a wrong path must show. */
  const char *chosen = getenv("WGC_WGPU_LIBRARY");
  bool ok = chosen && *chosen
                ? nw_try(chosen)
                : nw_try_beside_us() || nw_try("libwgpu_native.so");
  if (!ok)
    return;
  /* wgpu-native prints nothing by default (no logger installed); make sure. */
  wgc_nw.SetLogCallback(nw_log_nothing, NULL);
  wgc_nw.SetLogLevel(WGPULogLevel_Off);
  nw_loaded = true;
}

bool wgc_nw_load(void) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, nw_load_once);
  return nw_loaded;
}
