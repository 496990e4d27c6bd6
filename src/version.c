/* The library's version, from the header's one definition. */
#include "wgc.h"

#define WGC_STR_(x) #x
#define WGC_STR(x) WGC_STR_(x)

const char *wgc_version(void) {
  return WGC_STR(WGC_VERSION_MAJOR) "." WGC_STR(WGC_VERSION_MINOR) "." WGC_STR(
      WGC_VERSION_PATCH);
}
