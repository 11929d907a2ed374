// Umbrella header of the distributed add-on (target bcsr24::bcsr24_distributed, built when NCCL is found): A spread
// over several GPUs by rows (docs/DISTRIBUTED.md).
#pragma once

#include "bcsr24/bcsr24.hpp"
#include "bcsr24/communicator.hpp"
#include "bcsr24/distributed_operator.hpp"
#include "bcsr24/distributed_partition.hpp"
