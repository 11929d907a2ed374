// Names of the storage precisions, as spmm_run, the JSON reports and the .b24 tools spell them.
#include "bcsr24/precision.hpp"

#include <string>

#include "bcsr24/error.hpp"

namespace bcsr24 {

const char* precision_name(Precision precision) noexcept {
  switch (precision) {
    case Precision::fp16: return "fp16";
    case Precision::bf16: return "bf16";
    case Precision::split: return "split";
  }
  return "?";
}

Precision precision_from_name(const std::string& name) {
  for (Precision p : {Precision::fp16, Precision::bf16, Precision::split})
    if (name == precision_name(p)) return p;
  throw InvalidArgument("unknown precision '" + name + "' (expected fp16, bf16 or split)");
}

}  // namespace bcsr24
