/* The wgpu-native runtime, loaded at run time (dlopen) into a table of
 * function pointers: libwgc has no link-time dependency on
 * libwgpu_native.so, so a missing runtime is WGC_ERR_NO_ADAPTER rather than
 * a program that cannot start. Internal to the native GPU layer. */
#ifndef WGC_NATIVE_WGPU_H
#define WGC_NATIVE_WGPU_H

#include <stdbool.h>

#include "wgpu.h" /* includes webgpu.h */

/* The webgpu.h entry points we call, by name without the "wgpu" prefix;
 * each gets its header's WGPUProc<name> type. */
#define NW_WEBGPU_FUNCS(X)                                                     \
  X(CreateInstance)                                                            \
  X(InstanceRequestAdapter)                                                    \
  X(InstanceProcessEvents)                                                     \
  X(InstanceRelease)                                                           \
  X(AdapterGetLimits)                                                          \
  X(AdapterGetInfo)                                                            \
  X(AdapterInfoFreeMembers)                                                    \
  X(AdapterRequestDevice)                                                      \
  X(AdapterRelease)                                                            \
  X(DeviceGetQueue)                                                            \
  X(DeviceCreateBuffer)                                                        \
  X(DeviceCreateShaderModule)                                                  \
  X(DeviceCreateComputePipeline)                                               \
  X(DeviceCreateBindGroup)                                                     \
  X(DeviceCreateCommandEncoder)                                                \
  X(DeviceDestroy)                                                             \
  X(DeviceRelease)                                                             \
  X(BufferMapAsync)                                                            \
  X(BufferGetConstMappedRange)                                                 \
  X(BufferUnmap)                                                               \
  X(BufferRelease)                                                             \
  X(ShaderModuleRelease)                                                       \
  X(ComputePipelineGetBindGroupLayout)                                         \
  X(ComputePipelineRelease)                                                    \
  X(BindGroupLayoutRelease)                                                    \
  X(BindGroupRelease)                                                          \
  X(CommandEncoderBeginComputePass)                                            \
  X(CommandEncoderCopyBufferToBuffer)                                          \
  X(CommandEncoderFinish)                                                      \
  X(CommandEncoderRelease)                                                     \
  X(ComputePassEncoderSetPipeline)                                             \
  X(ComputePassEncoderSetBindGroup)                                            \
  X(ComputePassEncoderDispatchWorkgroups)                                      \
  X(ComputePassEncoderEnd)                                                     \
  X(ComputePassEncoderRelease)                                                 \
  X(CommandBufferRelease)                                                      \
  X(QueueSubmit)                                                               \
  X(QueueWriteBuffer)                                                          \
  X(QueueOnSubmittedWorkDone)                                                  \
  X(AdapterHasFeature)                                                         \
  X(DeviceCreateQuerySet)                                                      \
  X(QuerySetRelease)                                                           \
  X(CommandEncoderResolveQuerySet)                                             \
  X(QueueRelease)

/* wgpu.h (native extensions) declares no WGPUProc types: ours, checked
 * against its declarations in native_load.c. */
typedef WGPUBool (*NWProcDevicePoll)(
    WGPUDevice device, WGPUBool wait,
    WGPUSubmissionIndex const *submissionIndex);
typedef void (*NWProcSetLogCallback)(WGPULogCallback callback, void *userdata);
typedef void (*NWProcSetLogLevel)(WGPULogLevel level);
typedef uint32_t (*NWProcGetVersion)(void);
typedef float (*NWProcQueueGetTimestampPeriod)(WGPUQueue queue);

#define NW_NATIVE_FUNCS(X)                                                     \
  X(DevicePoll)                                                                \
  X(SetLogCallback)                                                            \
  X(SetLogLevel)                                                               \
  X(GetVersion)                                                                \
  X(QueueGetTimestampPeriod)

typedef struct nw_api {
#define NW_WEBGPU_FIELD_(name) WGPUProc##name name;
#define NW_NATIVE_FIELD_(name) NWProc##name name;
  NW_WEBGPU_FUNCS(NW_WEBGPU_FIELD_)
  NW_NATIVE_FUNCS(NW_NATIVE_FIELD_)
#undef NW_WEBGPU_FIELD_
#undef NW_NATIVE_FIELD_
} nw_api;

/* The table, filled by wgc_nw_load (external names carry the wgc_ prefix:
 * libwgc.a is linked into programs). */
extern nw_api wgc_nw;

/* Loads the runtime once per process (thread-safe) and silences its logging.
 * Search order: $WGC_WGPU_LIBRARY; libwgpu_native.so in the folder of the
 * module holding this code (libwgc.so, or the program it is linked into);
 * plain dlopen("libwgpu_native.so") (rpath/RUNPATH, LD_LIBRARY_PATH).
 * False when no usable runtime was found (also on later calls). */
bool wgc_nw_load(void);

#endif /* WGC_NATIVE_WGPU_H */
