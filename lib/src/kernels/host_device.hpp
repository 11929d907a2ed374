// BCSR24_HOST_DEVICE: functions of the kernels' layouts that their CPU tests call too (compiled by nvcc for both
// sides, by the host compiler for the tests).
#pragma once

#if defined(__CUDACC__)
#define BCSR24_HOST_DEVICE __host__ __device__
#else
#define BCSR24_HOST_DEVICE
#endif
