// The committed .b24 fixtures (test/fixtures/b24, README.md there): which file holds which matrix, written by
// which version with which options. The files are the compatibility contract of load_bcsr24: every version it
// claims to read has a frozen file here that must keep loading to the same matrix.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "format/bcsr24_matrix.hpp"
#include "format/serialize.hpp"
#include "bcsr24/precision.hpp"

namespace bcsr24::test {

struct B24Fixture {
  std::string file;       ///< under fixture_dir()
  std::string matrix;     ///< the Matrix Market file it was converted from, under fixture_dir()
  std::uint32_t version;  ///< the .b24 version it was written as
  TileLayout layout;
  Reordering reordering;
  Precision precision;
  bool per_row;  ///< per-row exponents (else one matrix-wide exponent)
  bool tuned_choices = false;  ///< holds fixture_tuned_choices() (version 4)
};

/// The tuned choices a version-4 fixture holds: two, of different n, types, knobs and devices, one without a
/// measured time.
const std::vector<B24TunedChoice>& fixture_tuned_choices();

/// test/fixtures/b24 in the source tree.
std::string fixture_dir();

/// Every fixture, oldest version first.
const std::vector<B24Fixture>& b24_fixtures();

}  // namespace bcsr24::test
