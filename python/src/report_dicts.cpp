// The library's reports as Python dicts (report_dicts.hpp).
#include "report_dicts.hpp"

#include <nanobind/stl/string.h>

#include "bcsr24_report_json/report_json.hpp"

namespace nb = nanobind;

namespace bcsr24::python {

namespace {

/// A JSON value as the Python object json.loads would make of it (objects keep their key order).
nb::object to_python(const reports::Json& value) {
  switch (value.type()) {
    case reports::Json::value_t::object: {
      nb::dict d;
      for (const auto& [key, item] : value.items()) d[nb::str(key.c_str())] = to_python(item);
      return std::move(d);
    }
    case reports::Json::value_t::array: {
      nb::list l;
      for (const reports::Json& item : value) l.append(to_python(item));
      return std::move(l);
    }
    case reports::Json::value_t::string: return nb::str(value.get_ref<const std::string&>().c_str());
    case reports::Json::value_t::boolean: return nb::bool_(value.get<bool>());
    case reports::Json::value_t::number_integer: return nb::int_(value.get<std::int64_t>());
    case reports::Json::value_t::number_unsigned: return nb::int_(value.get<std::uint64_t>());
    case reports::Json::value_t::number_float: return nb::float_(value.get<double>());
    default: return nb::none();
  }
}

nb::dict to_dict(const reports::Json& object) { return nb::borrow<nb::dict>(to_python(object)); }

}  // namespace

nb::dict census_dict(const SparseOperator& op) { return to_dict(reports::census_json(op.census())); }

nb::dict layout_dict(const SparseOperator& op) {
  return to_dict(reports::layout_json(op.layout_report(), op.census()));
}

nb::dict scaling_dict(const SparseOperator& op) { return to_dict(reports::scaling_json(op.scaling())); }

nb::dict options_dict(const SparseOperator& op) { return to_dict(reports::options_json(op.options())); }

nb::dict report_dict(const PlanReport& r) { return to_dict(reports::plan_json(r)); }

nb::dict device_info_dict(const DeviceInfo& info) { return to_dict(reports::device_json(info)); }

}  // namespace bcsr24::python
