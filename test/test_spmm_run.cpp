// End-to-end tests of the spmm_run program: command line, errors, census, JSON and the CPU path (no GPU needed).
// The check and --kernel all: test_spmm_run_check.cpp.
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "spmm_run_harness.hpp"

using namespace spmm_run_test;

TEST_CASE("spmm_run --help documents the options and exits 0", "[app]") {
  TempDir dir;
  const AppRun run = run_spmm(dir, "--help");
  REQUIRE(run.exit_code == 0);
  for (const char* option : {"--nmult", "--n ", "--xdys", "--size", "--kernel", "--reps", "--warmup", "--check",
                             "--no-check", "--scaling", "--pattern-values", "--seed", "--json", "--save",
                             "--fp16-out", "--alpha", "--beta", "--cpu-only", "--tuning ", "--tuning-budget"}) {
    INFO("option " << option);
    CHECK(run.out.find(option) != std::string::npos);
  }
  CHECK(run.out.find("split_pipelined") != std::string::npos);
}

TEST_CASE("spmm_run rejects bad command lines with one line and exit code 2", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  const std::vector<std::string> bad_command_lines = {
      "--bogus-option",
      "",                                          // neither a file nor --xdys
      "'" + matrix + "' --xdys 10d5s",             // both
      "'" + matrix + "' --nmult 0",
      "'" + matrix + "' --nmult 2 --n 16",         // --n and --nmult exclude each other
      "'" + matrix + "' --kernel no_such_kernel",
      "'" + matrix + "' --scaling sometimes",
      "'" + matrix + "' --size 64",                // --size needs --xdys
      "'" + matrix + "' --reps 0",
      "'" + matrix + "' --alpha nan",
      "'" + matrix + "' --tuning fastest",
      "'" + matrix + "' --tuning-budget -5",
      "'" + matrix + "' --tuning-budget many",
      "'" + matrix + "' --tuning model --tuning-budget 50",  // a budget for nothing to measure
  };
  for (const std::string& arguments : bad_command_lines) {
    INFO("arguments: " << arguments);
    const AppRun run = run_spmm(dir, arguments);
    CHECK(run.exit_code == 2);
    require_one_error_line(run);
    CHECK(run.out.empty());
  }
}

TEST_CASE("spmm_run reports a missing file with its name and exit code 1", "[app]") {
  TempDir dir;
  for (const std::string name : {"does_not_exist.mtx", "does_not_exist.b24"}) {
    const AppRun run = run_spmm(dir, "'" + dir.file(name) + "' --cpu-only");
    CHECK(run.exit_code == 1);
    require_one_error_line(run);
    CHECK(run.err.find(name) != std::string::npos);
  }
}

TEST_CASE("spmm_run reports a malformed Matrix Market file with file and line, exit code 1", "[app]") {
  TempDir dir;
  const std::vector<std::pair<std::string, std::string>> malformed = {
      {"row_out_of_range.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n4 1 2.0\n"},
      {"not_a_banner.mtx", "hello world\n3 3 1\n1 1 1\n"},
      {"truncated.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 5\n1 1 1.0\n"},
      {"bad_number.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 one\n"},
  };
  for (const auto& [name, content] : malformed) {
    INFO("file " << name);
    write_text(dir.path() / name, content);
    const AppRun run = run_spmm(dir, "'" + dir.file(name) + "' --cpu-only");
    CHECK(run.exit_code == 1);
    require_one_error_line(run);
    CHECK(run.err.find(name + ":") != std::string::npos);
  }
}

TEST_CASE("spmm_run rejects a corrupted .b24 file with exit code 1", "[app]") {
  TempDir dir;
  write_text(dir.path() / "garbage.b24", std::string(100, 'x'));
  const AppRun run = run_spmm(dir, "'" + dir.file("garbage.b24") + "' --cpu-only");
  CHECK(run.exit_code == 1);
  require_one_error_line(run);
}

TEST_CASE("spmm_run --cpu-only --json gives the census and a checked CPU result", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  // The known census is that of the thesis layout (aligned tiles, file order).
  const json report = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --nmult 2 --layout aligned --reorder none"));
  check_known_census(report);
  CHECK(report.at("layout").at("layout") == "aligned");
  CHECK(report.at("layout").at("reason") == "requested");
  check_cpu_result(report);
  CHECK(report.at("gpu").at("reason").get<std::string>().find("--cpu-only") != std::string::npos);
  CHECK(report.at("multiply").at("n") == 16);
  CHECK(report.at("multiply").at("nmult") == 2);
  CHECK(report.at("scaling").at("scaled") == false);
  CHECK(report.at("scaling").at("flushed_count") == 0);
  CHECK(report.at("preprocessing").at("read_s").get<double>() >= 0.0);
  CHECK(report.at("preprocessing").at("convert_s").get<double>() >= 0.0);
  CHECK(report.at("check").at("reference") == "original matrix");
}

TEST_CASE("spmm_run human output shows the census and says the GPU kernels were skipped", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());

  const AppRun cpu_only = run_spmm(dir, "'" + matrix + "' --cpu-only --n 8 --layout aligned --reorder none");
  REQUIRE(cpu_only.exit_code == 0);
  CHECK(cpu_only.out.find("GPU kernels skipped: --cpu-only") != std::string::npos);
  CHECK(cpu_only.out.find("cpu_reference") != std::string::npos);
  CHECK(cpu_only.out.find("2 dense + 2 2:4") != std::string::npos);
  CHECK(cpu_only.err.empty());  // no progress lines when stderr is not a terminal

  // Without --cpu-only the GPU path runs only where a device exists; elsewhere the skip must be said.
  const json report = parse_json(run_spmm(dir, "'" + matrix + "' --json --n 8 --reps 3 --warmup 1"));
  const AppRun human = run_spmm(dir, "'" + matrix + "' --n 8 --reps 3 --warmup 1");
  REQUIRE(human.exit_code == 0);
  if (!report.at("gpu").at("available").get<bool>()) {
    CHECK(human.out.find("GPU kernels skipped") != std::string::npos);
    check_cpu_result(report);
  } else {
    CHECK(human.out.find("GPU kernels skipped") == std::string::npos);
    const json& result = report.at("results").at(0);
    CHECK(result.at("kernel") == "auto");
    // The plan is carried: every stored nonzero is on 2:4 tiles, dense tiles or CSR.
    const json& plan = result.at("plan");
    CHECK(plan.at("sparse24_nnz").get<std::int64_t>() + plan.at("dense_nnz").get<std::int64_t>() +
              plan.at("csr_nnz").get<std::int64_t>() ==
          report.at("matrix").at("nnz").get<std::int64_t>());
    CHECK(human.out.find("plan        auto:") != std::string::npos);
    REQUIRE(result.at("rel_error").is_number());
    CHECK(result.at("rel_error").get<double>() < 1e-2);
    // How the plan was chosen, and the physical limit: the plan's bytes and the share of the copy bandwidth.
    CHECK(plan.at("tuning") == "measure");
    CHECK_FALSE(plan.at("tuning_reason").get<std::string>().empty());
    CHECK(plan.at("diagnostics").at("candidates").is_array());
    CHECK(human.out.find("tuning      ") != std::string::npos);
    CHECK(result.at("plan_bytes").get<double>() > 0.0);
    CHECK(result.at("plan_gbs").get<double>() > 0.0);
    CHECK(report.at("gpu").at("copy_bandwidth_gbs").get<double>() > 0.0);
    CHECK(result.at("copy_fraction").get<double>() > 0.0);
    CHECK(human.out.find("copy bandwidth") != std::string::npos);
  }
}

TEST_CASE("spmm_run --tuning and --tuning-budget reach the report", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  const std::string common = "'" + matrix + "' --cpu-only --json --n 8 ";
  const json plain = parse_json(run_spmm(dir, common));
  CHECK(plain.at("multiply").at("tuning") == "measure");
  CHECK(plain.at("multiply").at("tuning_budget_ms").is_null());
  const json model = parse_json(run_spmm(dir, common + "--tuning model"));
  CHECK(model.at("multiply").at("tuning") == "model");
  const json budget = parse_json(run_spmm(dir, common + "--tuning-budget 300"));
  CHECK(budget.at("multiply").at("tuning_budget_ms").get<double>() == 300.0);
  // On the CPU path no plan moves bytes on a GPU: the limit columns stay empty.
  const json& result = budget.at("results").at(0);
  CHECK(result.at("plan_bytes").is_null());
  CHECK(result.at("copy_fraction").is_null());
}

TEST_CASE("spmm_run checks alpha and beta on the CPU path", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  const json report =
      parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 13 --alpha -2 --beta 0.5 --seed 7"));
  check_cpu_result(report);
  CHECK(report.at("multiply").at("n") == 13);
  CHECK(report.at("multiply").at("nmult").is_null());
  CHECK(report.at("multiply").at("beta") == 0.5);
}

TEST_CASE("spmm_run --save writes a .b24 that spmm_run reads back with the same census", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx"), saved = dir.file("known.b24");
  write_text(matrix, known_census_mtx());
  const json first =
      parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --layout aligned --reorder none --save '" + saved + "'"));
  REQUIRE(fs::exists(saved));
  CHECK(first.at("preprocessing").at("saved_to") == saved);
  const json second = parse_json(run_spmm(dir, "'" + saved + "' --cpu-only --json"));
  check_known_census(second);
  check_cpu_result(second);
  CHECK(second.at("matrix").at("source") == "b24");
  CHECK(second.at("check").at("reference") == "stored (decoded) matrix");
}

TEST_CASE("spmm_run --layout and --reorder: every policy is checked, reported and survives a .b24 round trip", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("known.mtx");
  write_text(matrix, known_census_mtx());
  for (const std::string layout : {"aligned", "condensed", "auto"})
    for (const std::string reorder : {"none", "rcm", "auto"}) {
      CAPTURE(layout, reorder);
      const std::string saved = dir.file("known_" + layout + "_" + reorder + ".b24");
      const json first = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --n 9 --layout " + layout +
                                                      " --reorder " + reorder + " --save '" + saved + "'"));
      check_cpu_result(first);
      const json& chosen = first.at("layout");
      if (layout != "auto") CHECK(chosen.at("layout") == layout);
      if (reorder == "none") CHECK(chosen.at("reordering") == "none");
      CHECK(chosen.at("baseline_stored_tiles") == 4);  // the thesis layout of this matrix (check_known_census)
      CHECK(chosen.at("stored_tiles") == first.at("census").at("stored_tiles"));
      CHECK(first.at("census").at("layout") == chosen.at("layout"));
      const json second = parse_json(run_spmm(dir, "'" + saved + "' --cpu-only --json --n 9"));
      check_cpu_result(second);
      CHECK(second.at("census") == first.at("census"));
      CHECK(second.at("layout").at("layout") == chosen.at("layout"));
    }
  const AppRun human = run_spmm(dir, "'" + matrix + "' --cpu-only --n 8 --layout condensed");
  REQUIRE(human.exit_code == 0);
  CHECK(human.out.find("layout      condensed") != std::string::npos);
  CHECK(human.out.find("before (aligned, file order): 4 tiles") != std::string::npos);
  const AppRun bad = run_spmm(dir, "'" + matrix + "' --cpu-only --layout diagonal");
  CHECK(bad.exit_code == 2);
}

TEST_CASE("spmm_run generates synthetic XdYs matrices", "[app]") {
  TempDir dir;
  SECTION("only 2:4 tiles") {
    const json report = parse_json(run_spmm(dir, "--xdys 0d10s --size 256 --cpu-only --json --n 8"));
    CHECK(report.at("census").at("dense_tiles") == 0);
    CHECK(report.at("census").at("sparse24_tiles").get<int>() > 0);
    CHECK(report.at("census").at("sparse24_share").get<double>() == Approx(1.0));
    check_cpu_result(report);
  }
  SECTION("only dense tiles") {
    const json report = parse_json(run_spmm(dir, "--xdys 10d0s --size 256 --cpu-only --json --n 8"));
    CHECK(report.at("census").at("sparse24_tiles") == 0);
    CHECK(report.at("census").at("dense_tiles").get<int>() > 0);
    check_cpu_result(report);
  }
  SECTION("a bad name is an error naming it") {
    const AppRun run = run_spmm(dir, "--xdys tenpercent --size 256 --cpu-only");
    CHECK(run.exit_code != 0);
    require_one_error_line(run);
  }
}

TEST_CASE("spmm_run generates 3-D mesh matrices with --mesh", "[app][mesh]") {
  TempDir dir;
  SECTION("lexicographic and random node order, same size, checked on the CPU path") {
    for (const std::string order : {"lex", "random"}) {
      INFO("order " << order);
      const json report = parse_json(run_spmm(dir, "--mesh 6x5x4,dofs=2,order=" + order + " --cpu-only --json --n 8"));
      const json& matrix = report.at("matrix");
      CHECK(matrix.at("name") == "mesh6x5x4_d2_s27_" + order);
      CHECK(matrix.at("source") == "synthetic");
      CHECK(matrix.at("rows") == 240);
      CHECK(matrix.at("cols") == 240);
      // 27-point: (3n - 2) neighbour pairs per axis, 2 x 2 blocks: 16 * 13 * 10 * 4.
      CHECK(matrix.at("entries_with_explicit_zeros") == 8320);
      CHECK(matrix.at("dofs_per_node") == 2);
      CHECK(matrix.at("stencil") == 27);
      CHECK(matrix.at("node_order") == (order == "lex" ? "lexicographic" : "random"));
      CHECK(report.at("preprocessing").at("generate_s").get<double>() >= 0.0);
      check_cpu_result(report);
    }
  }
  SECTION("human output names the mesh") {
    const AppRun run = run_spmm(dir, "--mesh 6x5x4,dofs=2 --cpu-only --n 8");
    REQUIRE(run.exit_code == 0);
    CHECK(run.out.find("mesh6x5x4_d2_s27_lex (3-D mesh)") != std::string::npos);
  }
  SECTION("a bad spec, or --mesh with another input, is a usage error (exit 2) with one line") {
    const std::string matrix = dir.file("known.mtx");
    write_text(matrix, known_census_mtx());
    const std::vector<std::pair<std::string, std::string>> bad = {
        {"--mesh 6x5 --cpu-only", "6x5"},
        {"--mesh 6x5x0,dofs=2 --cpu-only", "NZ"},
        {"--mesh 6x5x4,dofs=two --cpu-only", "dofs"},
        {"--mesh 6x5x4,stencil=9 --cpu-only", "stencil"},
        {"--mesh 6x5x4,order=sorted --cpu-only", "order"},
        {"--mesh 6x5x4,colour=red --cpu-only", "colour"},
        {"--mesh 6x5x4 --xdys 10d5s --cpu-only", "xdys"},
        {"'" + matrix + "' --mesh 6x5x4 --cpu-only", "--mesh"},
    };
    for (const auto& [arguments, named] : bad) {
      INFO("arguments: " << arguments);
      const AppRun run = run_spmm(dir, arguments);
      CHECK(run.exit_code == 2);
      require_one_error_line(run);
      CHECK(run.err.find(named) != std::string::npos);
      CHECK(run.out.empty());
    }
  }
}

TEST_CASE("spmm_run generates random-graph and structure-class matrices with --graph and --synth", "[app]") {
  struct Generator {
    const char* option;  ///< the option, then the spec it is given
    const char* spec;
    const char* name;    ///< the matrix's name in the report
    std::int64_t nnz;
    const char* bad_spec;
    const char* conflicting;  ///< the option with another matrix source: refused
  };
  const Generator generators[] = {
      {"--graph", "3000,degree=5", "graph3000_d5", 15000, "3000,degree=0", "--graph 3000 --mesh 4x4x4"},
      // Row 0 full, and column 0 and the diagonal in every other row: 3000 + 2 * 2999.
      {"--synth", "arrowhead:3000", "arrowhead3000", 8998, "nosuch:3000", "--synth arrowhead:3000 --graph 3000"},
  };
  TempDir dir;
  for (const Generator& g : generators) {
    CAPTURE(g.option);
    const std::string option = g.option;
    const json report = parse_json(run_spmm(dir, option + " " + g.spec + " --cpu-only --json --n 8"));
    CHECK(report.at("matrix").at("name") == g.name);
    CHECK(report.at("matrix").at(option.substr(2)) == g.spec);
    CHECK(report.at("matrix").at("rows") == 3000);
    CHECK(report.at("matrix").at("nnz") == g.nnz);
    check_cpu_result(report);
    const AppRun bad = run_spmm(dir, option + " " + g.bad_spec + " --cpu-only");
    CHECK(bad.exit_code == 2);
    require_one_error_line(bad);
    CHECK(bad.err.find(option) != std::string::npos);
    CHECK(run_spmm(dir, std::string(g.conflicting) + " --cpu-only").exit_code == 2);
  }
}

TEST_CASE("spmm_run fp16 range: automatic scaling, and --scaling none failing with a message", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("large_values.mtx");
  write_text(matrix,
             "%%MatrixMarket matrix coordinate real general\n20 40 4\n1 1 1e6\n2 5 -3e5\n17 33 2.5e6\n20 40 1\n");
  // Default: one power-of-two exponent per row, so each row's largest magnitude lands just under 2^15.
  const json per_row = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json"));
  CHECK(per_row.at("scaling").at("per_row") == true);
  CHECK(per_row.at("scaling").at("max_row_exponent").get<int>() == 7);  // 2.5e6 = 1.19 * 2^21: 2^21 / 2^7 = 2^14
  CHECK(per_row.at("scaling").at("min_row_exponent").get<int>() == -14);  // 1 * 2^14
  CHECK(per_row.at("scaling").at("flushed_count") == 0);
  check_cpu_result(per_row);
  // --scaling auto: one exponent for the whole matrix.
  const json scaled = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --scaling auto"));
  CHECK(scaled.at("scaling").at("per_row") == false);
  CHECK(scaled.at("scaling").at("scaled") == true);
  CHECK(scaled.at("scaling").at("exponent") != 0);
  CHECK(scaled.at("scaling").at("overflow_count").get<int>() >= 3);
  check_cpu_result(scaled);

  const AppRun refused = run_spmm(dir, "'" + matrix + "' --cpu-only --scaling none");
  CHECK(refused.exit_code == 1);
  require_one_error_line(refused);
}

TEST_CASE("spmm_run pattern files take ones or seeded random values", "[app]") {
  TempDir dir;
  const std::string matrix = dir.file("pattern.mtx");
  write_text(matrix, "%%MatrixMarket matrix coordinate pattern symmetric\n33 33 4\n1 1\n2 1\n33 2\n20 20\n");
  const json ones = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json"));
  CHECK(ones.at("matrix").at("nnz") == 6);  // symmetric expansion of the 2 off-diagonal entries
  CHECK(ones.at("scaling").at("max_abs") == 1.0);
  check_cpu_result(ones);
  const json random = parse_json(run_spmm(dir, "'" + matrix + "' --cpu-only --json --pattern-values random"));
  CHECK(random.at("scaling").at("max_abs").get<double>() < 1.0);
  check_cpu_result(random);
}

TEST_CASE("spmm_run runs the project's bundled matrices on the CPU path", "[app][data]") {
  const fs::path data_dir(BCSR24_TEST_DATA_DIR);
  REQUIRE(fs::is_directory(data_dir));  // the project's own data/ folder is part of the repository
  TempDir dir;
  int matrices = 0;
  for (const auto& entry : fs::directory_iterator(data_dir)) {
    const std::string name = entry.path().filename().string();
    // Keep CI fast: the small ones are enough to exercise the reader, the conversion and the check.
    if (entry.path().extension() != ".mtx" || entry.file_size() > (1u << 20)) continue;
    INFO("matrix " << name);
    const json report = parse_json(run_spmm(dir, "'" + entry.path().string() + "' --cpu-only --json --n 8"));
    CHECK(report.at("census").at("nnz") == report.at("matrix").at("nnz"));
    if (report.at("matrix").at("nnz").get<std::int64_t>() > 0) check_cpu_result(report);
    ++matrices;
  }
  INFO("no .mtx under 1 MiB in " << data_dir);
  REQUIRE(matrices > 0);
}
