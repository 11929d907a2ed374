// Shared memory of one streaming multiprocessor, per architecture: it decides how many tile-kernel blocks an SM
// holds, so it sets both the kernels' register budgets (__launch_bounds__, at compile time, for the architecture
// being compiled) and the plans' block slots (at plan time, from the device: device_sm_limits).
#pragma once

namespace bcsr24::kernels {

struct SmLimits {
  int shared_bytes;        ///< shared memory of one SM for blocks (cudaDevAttrMaxSharedMemoryPerMultiprocessor)
  int reserved_per_block;  ///< kept by the system per resident block (cudaDevAttrReservedSharedMemoryPerBlock)
  int compute_capability;  ///< major * 10 + minor: register budgets that avoid spills differ between architectures
};

/// The limits of compute capability `cc` (major * 10 + minor), from the CUDA C++ Programming Guide's table of
/// technical specifications. An architecture not listed gets the smallest listed SM: its kernels then ask for no
/// more blocks per SM than fit (more registers each), never for blocks that cannot be resident.
constexpr SmLimits sm_limits(int cc) {
  switch (cc) {
    case 80:  // A100
    case 87:  // Jetson Orin
      return {164 * 1024, 1024, cc};
    case 90:   // H100, H200
    case 100:  // B200
    case 103:  // B300
      return {228 * 1024, 1024, cc};
    case 86:   // GA10x
    case 89:   // AD10x (L4, L40)
    case 120:  // GB20x
    default:
      return {100 * 1024, 1024, cc};
  }
}

#if defined(__CUDA_ARCH__)
/// The architecture this device-code pass compiles for.
inline constexpr SmLimits kCompiledSmLimits = sm_limits(__CUDA_ARCH__ / 10);
#else
/// The host pass compiles no kernel code (its __launch_bounds__ are not used): any valid limits.
inline constexpr SmLimits kCompiledSmLimits = sm_limits(90);
#endif

/// The limits of CUDA device `device` (throws CudaError when it cannot be queried).
SmLimits device_sm_limits(int device);

}  // namespace bcsr24::kernels
