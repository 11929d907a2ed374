// Umbrella header of the distributed add-on (target bcsr24::bcsr24_distributed, built when NCCL is found): A spread
// over several GPUs by rows, and the halo exchange alone for a caller's own vectors (docs/DISTRIBUTED.md).
#pragma once

#include "bcsr24/bcsr24.hpp"
#include "bcsr24/distributed_operator.hpp"
#include "bcsr24/distributed_partition.hpp"
#include "bcsr24/halo_exchange.hpp"
