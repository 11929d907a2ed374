// The distributed layer's internal names that its tests (host side and GPU) use unqualified: the row split, the
// halo plans and the partition cost. One list, so that the tests do not each keep their own copy of it.
#pragma once

#include "bcsr24/distributed_partition.hpp"
#include "distributed/halo_plan.hpp"

using bcsr24::detail::build_send_plan;
using bcsr24::detail::extract_rows;
using bcsr24::detail::HaloSendPlan;
using bcsr24::detail::kMaxPartitionCost;
using bcsr24::detail::PartitionCost;
using bcsr24::detail::partition_rows_by_bytes;
using bcsr24::detail::RankBlock;
using bcsr24::detail::split_rank_rows;
