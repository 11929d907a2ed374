// The library's reports as Python dicts (the attributes Operator.census, .layout_report, .scaling_report, .options,
// Plan.report and device_info()): one file for the field names the Python package promises.
#pragma once

#include <nanobind/nanobind.h>

#include "bcsr24/device.hpp"
#include "bcsr24/operator_options.hpp"
#include "bcsr24/operator_reports.hpp"
#include "bcsr24/spmm_plan.hpp"

namespace bcsr24::python {

nanobind::dict census_dict(const TileCensus& c);
nanobind::dict layout_dict(const LayoutReport& r);
nanobind::dict scaling_dict(const Fp16Scaling& s);
nanobind::dict options_dict(const OperatorOptions& o);
nanobind::dict report_dict(const PlanReport& r);
nanobind::dict device_info_dict(const DeviceInfo& info);

}  // namespace bcsr24::python
