// Umbrella header: every public bcsr24 header except eigen.hpp (which needs Eigen on the include path).
#pragma once

#include "bcsr24/bcsr24_matrix.hpp"
#include "bcsr24/convert.hpp"
#include "bcsr24/csr_matrix.hpp"
#include "bcsr24/device.hpp"
#include "bcsr24/error.hpp"
#include "bcsr24/half.hpp"
#include "bcsr24/matrix_market.hpp"
#include "bcsr24/metrics.hpp"
#include "bcsr24/reference.hpp"
#include "bcsr24/serialize.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24/synthetic.hpp"
#include "bcsr24/tile_layout.hpp"
