// The library's reports as Python dicts (the attributes Operator.census, .layout_report, .scaling_report, .options,
// Plan.report and device_info()): the JSON of bcsr24::reports (lib/report_json), whose keys are the ones the
// programs' --json output uses, turned into dicts, lists and scalars.
#pragma once

#include <nanobind/nanobind.h>

#include "bcsr24/device.hpp"
#include "bcsr24/sparse_operator.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24::python {

nanobind::dict census_dict(const SparseOperator& op);
/// The layout choice with what it came to (the operator's census beside the baseline's).
nanobind::dict layout_dict(const SparseOperator& op);
nanobind::dict scaling_dict(const SparseOperator& op);
nanobind::dict options_dict(const SparseOperator& op);
nanobind::dict report_dict(const PlanReport& r);
nanobind::dict device_info_dict(const DeviceInfo& info);

}  // namespace bcsr24::python
