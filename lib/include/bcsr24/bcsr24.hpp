// Umbrella header of libbcsr24: every public header of the library. Two optional add-ons have their own:
// bcsr24/eigen.hpp (needs Eigen's headers) and bcsr24/distributed.hpp (needs bcsr24::bcsr24_distributed, built
// with NCCL). test/api_umbrella checks that every public header is reached from one of the three.
#pragma once

#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/device.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/matrix_market.hpp"
#include "bcsr24/operator_options.hpp"
#include "bcsr24/operator_reports.hpp"
#include "bcsr24/precision.hpp"
#include "bcsr24/reference.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24/spmm_plan.hpp"
