// load_bcsr24 on bytes already in memory: lets tests feed thousands of damaged variants of a file without
// writing each one to disk, through exactly the checks a file goes through.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "format/bcsr24_matrix.hpp"
#include "format/serialize.hpp"

namespace bcsr24::detail {

/// The bytes of a whole .b24 file (any size, any content). Same checks and messages as load_bcsr24, each
/// starting with `name`; a version-4 file's tuned choices go to `choices` (cleared first) where given.
/// @throw ParseError (line 0) for anything load_bcsr24 refuses.
Bcsr24Matrix load_bcsr24_bytes(const unsigned char* bytes, std::size_t size, const std::string& name,
                               std::vector<B24TunedChoice>* choices = nullptr);

}  // namespace bcsr24::detail
