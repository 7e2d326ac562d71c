// exec/cuda_kernels.cu, compiled as host C++ for the emulator (kernel_shim.hpp).
#include "tests/cuda_emu/kernel_shim.hpp"

#include "exec/cuda_kernels.cu"
