/* Loads libwgpu_native.so with dlopen/dlsym into the nw table. */
#include "gpu/native_wgpu.h"

#include "gpu/gpu_errors.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Why the last library tried was not taken; "" when it was. */
static char nw_problem[400];

static void nw_fail(const char *path, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void nw_fail(const char *path, const char *fmt, ...) {
  int n = snprintf(nw_problem, sizeof nw_problem, "%s ", path);
  if (n < 0 || (size_t)n >= sizeof nw_problem)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(nw_problem + n, sizeof nw_problem - (size_t)n, fmt, ap);
  va_end(ap);
}

#if defined(__x86_64__)
#define NW_MACHINE EM_X86_64
#elif defined(__aarch64__)
#define NW_MACHINE EM_AARCH64
#elif defined(__i386__)
#define NW_MACHINE EM_386
#elif defined(__arm__)
#define NW_MACHINE EM_ARM
#elif defined(__riscv)
#define NW_MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define NW_MACHINE EM_PPC64
#elif defined(__s390x__)
#define NW_MACHINE EM_S390
#else
#define NW_MACHINE 0 /* not checked */
#endif

#if UINTPTR_MAX > 0xFFFFFFFFu
#define NW_CLASS ELFCLASS64
#else
#define NW_CLASS ELFCLASS32
#endif

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define NW_DATA ELFDATA2LSB
#else
#define NW_DATA ELFDATA2MSB
#endif

/* Whether [off, off + len) lies within a file of size bytes. */
static bool nw_inside(uint64_t off, uint64_t len, uint64_t size) {
  return off <= size && len <= size - off;
}

static bool nw_read_at(int fd, void *buf, size_t len, uint64_t off) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = pread(fd, (char *)buf + got, len - got, (off_t)(off + got));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    got += (size_t)n;
  }
  return true;
}

/* The program headers of an ELF file (h its header), each PT_LOAD segment's
 * file range inside the file. */
static bool nw_check_segments(const char *path, int fd, const ElfW(Ehdr) * h,
                              uint64_t size) {
  for (unsigned i = 0; i < h->e_phnum; i++) {
    ElfW(Phdr) ph;
    if (!nw_read_at(fd, &ph, sizeof ph,
                    (uint64_t)h->e_phoff + (uint64_t)i * sizeof ph)) {
      nw_fail(path, "could not be read: %s", strerror(errno ? errno : EIO));
      return false;
    }
    if ((ph.p_type == PT_LOAD || ph.p_type == PT_DYNAMIC) &&
        !nw_inside(ph.p_offset, ph.p_filesz, size)) {
      nw_fail(path,
              "is truncated: it has %llu bytes, but its segment %u "
              "spans bytes %llu to %llu",
              (unsigned long long)size, i, (unsigned long long)ph.p_offset,
              (unsigned long long)ph.p_offset +
                  (unsigned long long)ph.p_filesz);
      return false;
    }
  }
  return true;
}

/* Checks that path is a whole shared library for this machine before
 * dlopen sees it: the loader maps segments as the headers describe them, and
 * touching a page beyond the end of a truncated file kills the process with
 * SIGBUS. The reason goes to nw_problem. */
static bool nw_check_file(const char *path) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    nw_fail(path, "cannot be opened: %s", strerror(errno));
    return false;
  }
  struct stat stbuf;
  ElfW(Ehdr) h;
  bool ok = false;
  errno = 0;
  if (fstat(fd, &stbuf) != 0)
    nw_fail(path, "cannot be examined: %s", strerror(errno));
  else if (!S_ISREG(stbuf.st_mode))
    nw_fail(path, "is not a regular file");
  else if (stbuf.st_size == 0)
    nw_fail(path, "is empty");
  else if ((uint64_t)stbuf.st_size < sizeof h ||
           !nw_read_at(fd, &h, sizeof h, 0) ||
           memcmp(h.e_ident, ELFMAG, SELFMAG) != 0)
    nw_fail(path, "is not an ELF file");
  else if (h.e_ident[EI_CLASS] != NW_CLASS || h.e_ident[EI_DATA] != NW_DATA ||
           (NW_MACHINE && h.e_machine != NW_MACHINE))
    nw_fail(path,
            "is built for another machine (ELF class %u, byte order %u, "
            "machine %u; this one is %u, %u, %u)",
            (unsigned)h.e_ident[EI_CLASS], (unsigned)h.e_ident[EI_DATA],
            (unsigned)h.e_machine, (unsigned)NW_CLASS, (unsigned)NW_DATA,
            (unsigned)NW_MACHINE);
  else if (h.e_type != ET_DYN)
    nw_fail(path, "is not a shared library (ELF type %u)", (unsigned)h.e_type);
  else if (h.e_phnum == 0 || h.e_phentsize != sizeof(ElfW(Phdr)) ||
           !nw_inside(h.e_phoff, (uint64_t)h.e_phnum * sizeof(ElfW(Phdr)),
                      (uint64_t)stbuf.st_size))
    nw_fail(path,
            "is truncated or damaged: its program headers lie outside "
            "its %llu bytes",
            (unsigned long long)stbuf.st_size);
  else if (!nw_check_segments(path, fd, &h, (uint64_t)stbuf.st_size))
    ; /* the reason is set */
  else if (h.e_shoff != 0 && (h.e_shentsize != sizeof(ElfW(Shdr)) ||
                              !nw_inside(h.e_shoff,
                                         (uint64_t)(h.e_shnum ? h.e_shnum : 1) *
                                             sizeof(ElfW(Shdr)),
                                         (uint64_t)stbuf.st_size)))
    nw_fail(path,
            "is truncated or damaged: its section headers lie outside "
            "its %llu bytes",
            (unsigned long long)stbuf.st_size);
  else
    ok = true;
  close(fd);
  return ok;
}

/* Resolves every entry point from handle into a temporary table; only a
 * complete table is kept. */
static bool nw_resolve(const char *path, void *handle) {
  nw_api t;
  memset(&t, 0, sizeof t);
  const char *missing = NULL;
#define NW_SYM_(name)                                                          \
  {                                                                            \
    void *sym = dlsym(handle, "wgpu" #name);                                   \
    if (!sym && !missing)                                                      \
      missing = "wgpu" #name;                                                  \
    /* object pointer to function pointer, as POSIX allows */                  \
    memcpy(&t.name, &sym, sizeof t.name);                                      \
  }
  NW_WEBGPU_FUNCS(NW_SYM_)
  NW_NATIVE_FUNCS(NW_SYM_)
#undef NW_SYM_
  if (missing) {
    nw_fail(path, "is not a wgpu-native runtime: it lacks %s", missing);
    return false;
  }
  wgc_nw = t;
  return true;
}

static bool nw_try(const char *path) {
  if (!path || !*path)
    return false;
  /* A bare name is searched for by dlopen: no file to check first. */
  if (strchr(path, '/') && !nw_check_file(path))
    return false;
  void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    nw_fail(path, "could not be loaded: %s", e ? e : "unknown error");
    return false;
  }
  if (!nw_resolve(path, h)) {
    dlclose(h);
    return false;
  }
  nw_problem[0] = '\0';
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

static pthread_mutex_t nw_load_lock = PTHREAD_MUTEX_INITIALIZER;
static bool nw_loaded;

/* Tried again on each call until it succeeds: a load that failed for want
 * of memory may work later. */
static void nw_load_locked(void) {
  /* An explicit choice is the only one tried: a wrong path must show. */
  const char *chosen = getenv("WGC_WGPU_LIBRARY");
  bool ok;
  nw_problem[0] = '\0';
  if (chosen && *chosen) {
    ok = nw_try(chosen);
  } else {
    ok = nw_try_beside_us();
    char beside[sizeof nw_problem];
    memcpy(beside, nw_problem, sizeof beside);
    ok = ok || nw_try("libwgpu_native.so");
    /* the library beside us, when there was one, says more */
    if (!ok && beside[0] && !strstr(beside, "No such file"))
      memcpy(nw_problem, beside, sizeof beside);
  }
  gpu_runtime_problem_set(nw_problem);
  if (!ok)
    return;
  /* wgpu-native prints nothing by default (no logger installed); make sure. */
  wgc_nw.SetLogCallback(nw_log_nothing, NULL);
  wgc_nw.SetLogLevel(WGPULogLevel_Off);
  nw_loaded = true;
}

bool wgc_nw_load(void) {
  pthread_mutex_lock(&nw_load_lock);
  if (!nw_loaded)
    nw_load_locked();
  bool ok = nw_loaded;
  pthread_mutex_unlock(&nw_load_lock);
  return ok;
}
