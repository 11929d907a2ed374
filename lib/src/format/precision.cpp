// Names of the storage precisions, as spmm_run, the JSON reports and the .b24 tools spell them.
#include "bcsr24/precision.hpp"

#include <string>

#include "format/name_table.hpp"

namespace bcsr24 {

namespace {

constexpr detail::Named<Precision> kPrecisions[] = {
    {Precision::fp16, "fp16"}, {Precision::bf16, "bf16"}, {Precision::split, "split"}};

}  // namespace

const char* precision_name(Precision precision) noexcept { return detail::name_in(kPrecisions, precision); }

Precision precision_from_name(const std::string& name) { return detail::value_in(kPrecisions, name, "precision"); }

}  // namespace bcsr24
