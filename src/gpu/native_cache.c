/* The persistent pipeline cache's header file and directory (see
 * native_cache.h): reading and checking the header, rewriting it, and
 * emptying the driver's cache directory when it no longer applies. */
#include "gpu/native_cache.h"

#include "wgc.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define NW_STR_(x) #x
#define NW_STR(x) NW_STR_(x)
#define NW_WGC_VERSION                                                         \
  NW_STR(WGC_VERSION_MAJOR)                                                    \
  "." NW_STR(WGC_VERSION_MINOR) "." NW_STR(WGC_VERSION_PATCH)

/* The first line; its number changes with the format. */
static const char nw_magic[] = "wgc pipeline cache 1\n";
#define NW_MAGIC_LEN (sizeof nw_magic - 1)
/* The most a header may hold. */
#define NW_HEADER_MAX 2048

enum nw_cache_state {
  NW_CACHE_OFF,
  NW_CACHE_ABSENT,   /* no file yet */
  NW_CACHE_OURS,     /* a valid header: c->found */
  NW_CACHE_DAMAGED,  /* a wgc header, damaged */
  NW_CACHE_FOREIGN,  /* some other file: left alone */
  NW_CACHE_UNUSABLE, /* unreadable, or its folder unwritable */
};

/* 64-bit FNV-1a. */
static uint64_t nw_fnv(const char *s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) {
    h ^= (unsigned char)s[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

/* "key value\n" at *p (advanced past it) into out (cap bytes, printable,
 * NUL-terminated); false when the line is not that. */
static bool nw_field(const char **p, const char *end, const char *key,
                     char *out, size_t cap) {
  size_t kl = strlen(key);
  if ((size_t)(end - *p) < kl + 1 || memcmp(*p, key, kl) || (*p)[kl] != ' ')
    return false;
  const char *v = *p + kl + 1;
  size_t n = 0;
  while (v + n < end && v[n] != '\n') {
    unsigned char ch = (unsigned char)v[n];
    if (ch < 0x20 || ch == 0x7f || n + 1 >= cap)
      return false;
    n++;
  }
  if (v + n >= end) /* no newline */
    return false;
  memcpy(out, v, n);
  out[n] = '\0';
  *p = v + n + 1;
  return true;
}

enum nw_cache_parsed nw_cache_parse(const char *text, size_t len,
                                    nw_cache_header *h) {
  /* Ours when it starts with the first line, or is a piece of it (a write
   * cut short); an empty file holds nothing to keep either. */
  size_t head = len < NW_MAGIC_LEN ? len : NW_MAGIC_LEN;
  if (memcmp(text, nw_magic, head))
    return NW_CACHE_PARSED_FOREIGN;
  if (len < NW_MAGIC_LEN || len > NW_HEADER_MAX)
    return NW_CACHE_PARSED_DAMAGED;
  nw_cache_header t;
  const char *p = text + NW_MAGIC_LEN, *end = text + len;
  char check[24];
  if (!nw_field(&p, end, "wgc", t.version, sizeof t.version) ||
      !nw_field(&p, end, "adapter", t.adapter, sizeof t.adapter) ||
      !nw_field(&p, end, "driver", t.driver, sizeof t.driver) ||
      !nw_field(&p, end, "ids", t.ids, sizeof t.ids))
    return NW_CACHE_PARSED_DAMAGED;
  size_t body = (size_t)(p - text);
  if (!nw_field(&p, end, "check", check, sizeof check) || p != end)
    return NW_CACHE_PARSED_DAMAGED;
  char want[24];
  snprintf(want, sizeof want, "%016" PRIx64, nw_fnv(text, body));
  if (strcmp(check, want))
    return NW_CACHE_PARSED_DAMAGED;
  *h = t;
  return NW_CACHE_PARSED_OK;
}

size_t nw_cache_format(const nw_cache_header *h, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "%swgc %s\nadapter %s\ndriver %s\nids %s\n",
                   nw_magic, h->version, h->adapter, h->driver, h->ids);
  if (n < 0 || (size_t)n >= cap)
    return 0;
  int m = snprintf(buf + n, cap - (size_t)n, "check %016" PRIx64 "\n",
                   nw_fnv(buf, (size_t)n));
  if (m < 0 || (size_t)m >= cap - (size_t)n || (size_t)(n + m) > NW_HEADER_MAX)
    return 0;
  return (size_t)(n + m);
}

/* The folder that holds path, into out. */
static void nw_parent(const char *path, char *out, size_t cap) {
  const char *slash = strrchr(path, '/');
  if (!slash)
    snprintf(out, cap, ".");
  else if (slash == path)
    snprintf(out, cap, "/");
  else
    snprintf(out, cap, "%.*s", (int)(slash - path), path);
}

/* Sets the status sentence: "pipeline cache P: " and the rest (cut to
 * fit). */
__attribute__((format(printf, 2, 3))) static void nw_say(nw_cache *c,
                                                         const char *fmt, ...) {
  int k = snprintf(c->msg, sizeof c->msg, "pipeline cache %s: ", c->path);
  if (k < 0 || (size_t)k >= sizeof c->msg)
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->msg + k, sizeof c->msg - (size_t)k, fmt, ap);
  va_end(ap);
}

void nw_cache_begin(nw_cache *c, const char *path) {
  memset(c, 0, sizeof *c);
  if (!path || !*path)
    return;
  c->on = true;
  /* room for the driver's names below P.d/ */
  if (strlen(path) + 256 > sizeof c->dir) {
    snprintf(c->path, sizeof c->path, "%.64s...", path);
    c->state = NW_CACHE_UNUSABLE;
    nw_say(c, "ignored: the path is too long; nothing is cached");
    return;
  }
  snprintf(c->path, sizeof c->path, "%s", path);
  snprintf(c->dir, sizeof c->dir, "%s.d", path);

  char buf[NW_HEADER_MAX + 1];
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  struct stat sb;
  if (fd < 0 && errno == ENOENT) {
    c->state = NW_CACHE_ABSENT;
  } else if (fd < 0) {
    c->state = NW_CACHE_UNUSABLE;
    nw_say(c, "ignored: cannot read it (%s); nothing is cached",
           strerror(errno));
    return;
  } else if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
    close(fd);
    c->state = NW_CACHE_UNUSABLE;
    nw_say(c, "ignored: not a regular file; nothing is cached");
    return;
  } else {
    size_t n = 0;
    ssize_t r;
    while (n < sizeof buf && ((r = read(fd, buf + n, sizeof buf - n)) > 0 ||
                              (r < 0 && errno == EINTR)))
      if (r > 0)
        n += (size_t)r;
    close(fd);
    switch (nw_cache_parse(buf, n, &c->found)) {
    case NW_CACHE_PARSED_OK:
      c->state = NW_CACHE_OURS;
      break;
    case NW_CACHE_PARSED_DAMAGED:
      c->state = NW_CACHE_DAMAGED;
      break;
    default:
      c->state = NW_CACHE_FOREIGN;
      nw_say(c, "ignored: the file is not a wgc pipeline cache (left as it "
                "is); nothing is cached");
      return;
    }
  }
  /* The header is replaced by a rename in its folder. */
  char parent[4096];
  nw_parent(path, parent, sizeof parent);
  if (access(parent, W_OK | X_OK) != 0) {
    int e = errno;
    c->state = NW_CACHE_UNUSABLE;
    nw_say(c, "ignored: cannot write in %s (%s); nothing is cached", parent,
           strerror(e));
    return;
  }
  c->redirect = true;
}

/* Empties the driver's cache folder: every file below it, and folders
 * below its top ones (the driver keeps those open: Mesa's
 * mesa_shader_cache/). */
static int nw_wipe_one(const char *p, const struct stat *sb, int flag,
                       struct FTW *f) {
  (void)sb;
  if (f->level == 0)
    return 0;
  if (flag == FTW_DP) {
    if (f->level >= 2)
      rmdir(p);
  } else if (flag != FTW_D && flag != FTW_DNR) {
    unlink(p);
  }
  return 0;
}

static void nw_wipe(const char *dir) {
  struct stat sb;
  if (lstat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
    nftw(dir, nw_wipe_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes the header for h, replacing P whole; 0 or an errno. */
static int nw_write_header(const nw_cache *c, const nw_cache_header *h) {
  char text[NW_HEADER_MAX + 1], tmp[4200];
  size_t n = nw_cache_format(h, text, sizeof text);
  if (!n)
    return ENAMETOOLONG;
  snprintf(tmp, sizeof tmp, "%s.%ld.tmp", c->path, (long)getpid());
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return errno;
  size_t off = 0;
  int e = 0;
  while (off < n && !e) {
    ssize_t w = write(fd, text + off, n - off);
    if (w > 0)
      off += (size_t)w;
    else if (w < 0 && errno != EINTR)
      e = errno;
  }
  if (close(fd) != 0 && !e)
    e = errno;
  if (!e && rename(tmp, c->path) != 0)
    e = errno;
  if (e)
    unlink(tmp);
  return e;
}

/* Copies s into out (cap bytes), control characters as '?', so that it
 * fits a header line. */
static void nw_clean(char *out, size_t cap, const char *s) {
  size_t n = 0;
  for (; s && s[n] && n + 1 < cap; n++) {
    unsigned char ch = (unsigned char)s[n];
    out[n] = ch < 0x20 || ch == 0x7f ? '?' : (char)ch;
  }
  out[n] = '\0';
}

void nw_cache_adapter(nw_cache *c, const char *adapter, const char *driver,
                      const char *ids, bool mesa) {
  if (!c->on || !c->redirect)
    return;
  if (!mesa) {
    nw_say(c,
           "nothing is persisted: the driver of %.200s keeps no on-disk "
           "cache wgc can direct (wgpu-native has no pipeline cache in its "
           "C API)",
           adapter);
    return;
  }
  nw_cache_header h = {0};
  nw_clean(h.version, sizeof h.version, NW_WGC_VERSION);
  nw_clean(h.adapter, sizeof h.adapter, adapter);
  nw_clean(h.driver, sizeof h.driver, driver);
  nw_clean(h.ids, sizeof h.ids, ids);
  const nw_cache_header *f = &c->found;
  bool same = c->state == NW_CACHE_OURS && !strcmp(h.version, f->version) &&
              !strcmp(h.adapter, f->adapter) && !strcmp(h.driver, f->driver) &&
              !strcmp(h.ids, f->ids);
  if (same) {
    nw_say(c, "reused (the driver's cache in %s)", c->dir);
    return;
  }
  /* The driver has opened P.d/ by now but reads entries only when it
   * compiles: emptying it here keeps entries of another driver or wgc
   * from being used. */
  if (c->state != NW_CACHE_ABSENT)
    nw_wipe(c->dir);
  int e = nw_write_header(c, &h);
  if (e) {
    nw_say(c, "cannot write it (%s); compiled pipelines may not persist",
           strerror(e));
    return;
  }
  if (c->state == NW_CACHE_ABSENT)
    nw_say(c, "created (the driver's cache in %s)", c->dir);
  else if (c->state == NW_CACHE_DAMAGED)
    nw_say(c, "the header was damaged; emptied and started afresh");
  else if (strcmp(h.version, c->found.version))
    nw_say(c, "written by wgc %s; emptied and started afresh",
           c->found.version);
  else if (strcmp(h.adapter, c->found.adapter) || strcmp(h.ids, c->found.ids))
    nw_say(c,
           "written for another adapter (%.200s); emptied and started "
           "afresh",
           c->found.adapter);
  else
    nw_say(c,
           "written for another driver (%.200s); emptied and started "
           "afresh",
           c->found.driver);
}
