// The halo of a rank: its rows split into local and halo parts by column owner, and the send plans that are
// the transpose of the ranks' receive lists.
#include "distributed/halo_plan.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"

namespace bcsr24::detail {

namespace {

using Index = std::int32_t;

constexpr std::int64_t kMaxIndex = std::numeric_limits<Index>::max();

std::size_t at(std::int64_t i) { return static_cast<std::size_t>(i); }

void check_same_ranks(const RowPartition& rows, const RowPartition& cols, const char* function) {
  if (rows.ranks() != cols.ranks())
    throw InvalidArgument(std::string(function) + ": the row partition has " + std::to_string(rows.ranks()) +
                          " ranks but the column partition has " + std::to_string(cols.ranks()));
}

void check_rank(int rank, int ranks, const char* function) {
  if (rank < 0 || rank >= ranks)
    throw InvalidArgument(std::string(function) + ": rank " + std::to_string(rank) + " is outside 0 .. " +
                          std::to_string(ranks - 1));
}

/// Receive offsets of a sorted halo: the columns owned by q are the slice between the first halo column >= the
/// start of q's range and the first >= its end, so one lower_bound per rank boundary finds them all.
std::vector<Index> receive_offsets(const std::vector<Index>& halo_global, const RowPartition& cols) {
  std::vector<Index> recv(cols.offsets.size());
  for (std::size_t q = 0; q < cols.offsets.size(); ++q)
    recv[q] = static_cast<Index>(std::lower_bound(halo_global.begin(), halo_global.end(), cols.offsets[q]) -
                                 halo_global.begin());
  return recv;
}

/// Checks one block of build_all_send_plans against the column partition. Its halo_global is checked by
/// build_send_plan, slice by slice.
void check_block(const RankBlock& b, int r, const RowPartition& cols) {
  const std::string name = "build_all_send_plans: block " + std::to_string(r);
  if (b.rank != r) throw InvalidArgument(name + " is rank " + std::to_string(b.rank) + "'s");
  if (b.col_begin != cols.begin(r) || b.col_end != cols.end(r))
    throw InvalidArgument(name + " owns columns [" + std::to_string(b.col_begin) + ", " + std::to_string(b.col_end) +
                          ") but the column partition gives it [" + std::to_string(cols.begin(r)) + ", " +
                          std::to_string(cols.end(r)) + ")");
  const std::vector<Index>& recv = b.recv_offsets;
  if (recv.size() != cols.offsets.size())
    throw InvalidArgument(name + ": recv_offsets has " + std::to_string(recv.size()) +
                          " entries, expected ranks + 1 = " + std::to_string(cols.offsets.size()));
  if (recv.front() != 0 || recv.back() != b.halo_cols())
    throw InvalidArgument(name + ": recv_offsets run from " + std::to_string(recv.front()) + " to " +
                          std::to_string(recv.back()) +
                          ", expected 0 to halo_cols() = " + std::to_string(b.halo_cols()));
  for (std::size_t q = 0; q + 1 < recv.size(); ++q)
    if (recv[q + 1] < recv[q]) throw InvalidArgument(name + ": recv_offsets decrease at peer " + std::to_string(q));
}

}  // namespace

CsrMatrix extract_rows(const CsrMatrix& a, std::int32_t begin, std::int32_t end) {
  if (a.rows < 0 || a.row_ptr.size() != static_cast<std::size_t>(a.rows) + 1)
    throw InvalidArgument("extract_rows: row_ptr has " + std::to_string(a.row_ptr.size()) + " entries for " +
                          std::to_string(a.rows) + " rows");
  if (begin < 0 || begin > end || end > a.rows)
    throw InvalidArgument("extract_rows: rows [" + std::to_string(begin) + ", " + std::to_string(end) +
                          ") are not a range of the " + std::to_string(a.rows) + " rows");
  const Index first = a.row_ptr[at(begin)];
  const Index last = a.row_ptr[at(end)];
  // Enough to copy safely; the order of the row pointers in between is split_rank_rows's validate_csr's job.
  if (first < 0 || last < first || at(last) > a.col_idx.size() || a.values.size() != a.col_idx.size())
    throw InvalidArgument("extract_rows: entries [" + std::to_string(first) + ", " + std::to_string(last) +
                          ") of rows [" + std::to_string(begin) + ", " + std::to_string(end) + ") are not inside the " +
                          std::to_string(a.col_idx.size()) + " columns and " + std::to_string(a.values.size()) +
                          " values stored");
  CsrMatrix out;
  out.rows = end - begin;
  out.cols = a.cols;
  out.row_ptr.resize(at(out.rows) + 1);
  for (Index r = 0; r <= out.rows; ++r) out.row_ptr[at(r)] = a.row_ptr[at(begin + r)] - first;
  out.col_idx.assign(a.col_idx.begin() + first, a.col_idx.begin() + last);
  out.values.assign(a.values.begin() + first, a.values.begin() + last);
  return out;
}

RankBlock split_rank_rows(const CsrMatrix& rows_of_rank, int rank, const RowPartition& row_partition,
                          const RowPartition& col_partition) {
  validate_partition(row_partition, row_partition.size(), "split_rank_rows: row partition");
  validate_partition(col_partition, col_partition.size(), "split_rank_rows: column partition");
  check_same_ranks(row_partition, col_partition, "split_rank_rows");
  check_rank(rank, row_partition.ranks(), "split_rank_rows");
  if (rows_of_rank.rows != row_partition.count(rank))
    throw InvalidArgument("split_rank_rows: rank " + std::to_string(rank) + " owns " +
                          std::to_string(row_partition.count(rank)) + " rows but rows_of_rank has " +
                          std::to_string(rows_of_rank.rows));
  if (rows_of_rank.cols != col_partition.size())
    throw InvalidArgument("split_rank_rows: rows_of_rank has " + std::to_string(rows_of_rank.cols) +
                          " columns but the column partition covers " + std::to_string(col_partition.size()));
  try {
    validate_csr(rows_of_rank);
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(std::string("split_rank_rows: rows_of_rank: ") + e.what());
  }

  const CsrMatrix& a = rows_of_rank;
  RankBlock block;
  block.rank = rank;
  block.row_begin = row_partition.begin(rank);
  block.col_begin = col_partition.begin(rank);
  block.col_end = col_partition.end(rank);
  const Index cb = block.col_begin;
  const Index ce = block.col_end;

  // Columns are sorted within a row, so a row's local entries are the one run [lo, hi) between the first
  // column >= cb and the first >= ce; its halo entries are the runs before and after.
  std::vector<Index> lo(at(a.rows)), hi(at(a.rows));
  std::int64_t local_entries = 0;
  for (Index r = 0; r < a.rows; ++r) {
    const auto row_begin = a.col_idx.begin() + a.row_ptr[at(r)];
    const auto row_end = a.col_idx.begin() + a.row_ptr[at(r) + 1];
    const auto l = std::lower_bound(row_begin, row_end, cb);
    const auto h = std::lower_bound(l, row_end, ce);
    lo[at(r)] = static_cast<Index>(l - a.col_idx.begin());
    hi[at(r)] = static_cast<Index>(h - a.col_idx.begin());
    local_entries += h - l;
  }
  const std::int64_t halo_entries = a.nnz() - local_entries;

  // Halo index = rank of the column among the distinct halo columns, so the renumbering is monotone and the
  // halo rows stay sorted.
  std::vector<Index>& halo_global = block.halo_global;
  halo_global.reserve(at(halo_entries));
  for (Index r = 0; r < a.rows; ++r) {
    halo_global.insert(halo_global.end(), a.col_idx.begin() + a.row_ptr[at(r)], a.col_idx.begin() + lo[at(r)]);
    halo_global.insert(halo_global.end(), a.col_idx.begin() + hi[at(r)], a.col_idx.begin() + a.row_ptr[at(r) + 1]);
  }
  std::sort(halo_global.begin(), halo_global.end());
  halo_global.erase(std::unique(halo_global.begin(), halo_global.end()), halo_global.end());
  halo_global.shrink_to_fit();

  CsrMatrix& local = block.local;
  local.rows = a.rows;
  local.cols = ce - cb;
  local.row_ptr.resize(at(a.rows) + 1);
  local.col_idx.reserve(at(local_entries));
  local.values.reserve(at(local_entries));
  CsrMatrix& halo = block.halo;
  halo.rows = a.rows;
  halo.cols = static_cast<Index>(halo_global.size());
  halo.row_ptr.resize(at(a.rows) + 1);
  halo.col_idx.reserve(at(halo_entries));
  halo.values.reserve(at(halo_entries));

  const auto to_halo = [&](Index p) {
    const Index c = a.col_idx[at(p)];
    halo.col_idx.push_back(
        static_cast<Index>(std::lower_bound(halo_global.begin(), halo_global.end(), c) - halo_global.begin()));
    halo.values.push_back(a.values[at(p)]);
  };
  for (Index r = 0; r < a.rows; ++r) {
    for (Index p = a.row_ptr[at(r)]; p < lo[at(r)]; ++p) to_halo(p);
    for (Index p = hi[at(r)]; p < a.row_ptr[at(r) + 1]; ++p) to_halo(p);
    for (Index p = lo[at(r)]; p < hi[at(r)]; ++p) {
      local.col_idx.push_back(a.col_idx[at(p)] - cb);
      local.values.push_back(a.values[at(p)]);
    }
    local.row_ptr[at(r) + 1] = static_cast<Index>(local.col_idx.size());
    halo.row_ptr[at(r) + 1] = static_cast<Index>(halo.col_idx.size());
  }

  block.recv_offsets = receive_offsets(halo_global, col_partition);
  return block;
}

std::vector<RankBlock> split_matrix(const CsrMatrix& a, const RowPartition& row_partition,
                                    const RowPartition& col_partition) {
  validate_partition(row_partition, a.rows, "split_matrix: row partition");
  validate_partition(col_partition, a.cols, "split_matrix: column partition");
  check_same_ranks(row_partition, col_partition, "split_matrix");
  std::vector<RankBlock> blocks;
  blocks.reserve(at(row_partition.ranks()));
  for (int r = 0; r < row_partition.ranks(); ++r)
    blocks.push_back(split_rank_rows(extract_rows(a, row_partition.begin(r), row_partition.end(r)), r, row_partition,
                                     col_partition));
  return blocks;
}

HaloSendPlan build_send_plan(int me, const RowPartition& col_partition,
                             const std::vector<std::vector<std::int32_t>>& requested_global_by_peer) {
  validate_partition(col_partition, col_partition.size(), "build_send_plan: column partition");
  const int ranks = col_partition.ranks();
  check_rank(me, ranks, "build_send_plan");
  if (requested_global_by_peer.size() != at(ranks))
    throw InvalidArgument("build_send_plan: " + std::to_string(requested_global_by_peer.size()) +
                          " request lists for " + std::to_string(ranks) + " ranks");
  const Index cb = col_partition.begin(me);
  const Index ce = col_partition.end(me);
  const std::string who = "build_send_plan: rank " + std::to_string(me);

  std::int64_t total = 0;
  for (const auto& list : requested_global_by_peer) total += static_cast<std::int64_t>(list.size());
  // The packed send buffer is indexed with 32-bit offsets, like every index of the formats.
  if (total > kMaxIndex)
    throw SizeLimitError(who + " would send " + std::to_string(total) + " B rows, more than the 32-bit limit " +
                         std::to_string(kMaxIndex));

  HaloSendPlan plan;
  plan.send_offsets.assign(at(ranks) + 1, 0);
  plan.send_rows.reserve(at(total));
  for (int q = 0; q < ranks; ++q) {
    const std::vector<Index>& list = requested_global_by_peer[at(q)];
    if (q == me && !list.empty())
      throw InvalidArgument(who + " requests " + std::to_string(list.size()) +
                            " of its own columns from itself; a rank's own B rows are local, not halo");
    for (std::size_t k = 0; k < list.size(); ++k) {
      const Index c = list[k];
      if (c < cb || c >= ce) {
        const std::string owner = c >= 0 && c < col_partition.size()
                                      ? "rank " + std::to_string(col_partition.owner(c))
                                      : "no rank (outside 0 .. " + std::to_string(col_partition.size()) + " - 1)";
        throw InvalidArgument(who + ": peer " + std::to_string(q) + " requests column " + std::to_string(c) +
                              ", which is owned by " + owner + ", not by rank " + std::to_string(me) + " [" +
                              std::to_string(cb) + ", " + std::to_string(ce) + ")");
      }
      if (k > 0 && list[k - 1] >= c)
        throw InvalidArgument(who + ": the columns requested by peer " + std::to_string(q) +
                              " are not strictly ascending (" + std::to_string(list[k - 1]) + " then " +
                              std::to_string(c) + ")");
      plan.send_rows.push_back(c - cb);
    }
    plan.send_offsets[at(q) + 1] = static_cast<Index>(plan.send_rows.size());
  }
  return plan;
}

std::vector<HaloSendPlan> build_all_send_plans(const std::vector<RankBlock>& blocks,
                                               const RowPartition& col_partition) {
  validate_partition(col_partition, col_partition.size(), "build_all_send_plans: column partition");
  const int ranks = col_partition.ranks();
  if (blocks.size() != at(ranks))
    throw InvalidArgument("build_all_send_plans: " + std::to_string(blocks.size()) + " blocks for " +
                          std::to_string(ranks) + " ranks");
  // requests[q][r]: what rank r receives from q, which is what q sends to r.
  std::vector<std::vector<std::vector<Index>>> requests(at(ranks), std::vector<std::vector<Index>>(at(ranks)));
  for (int r = 0; r < ranks; ++r) {
    const RankBlock& b = blocks[at(r)];
    check_block(b, r, col_partition);
    for (int q = 0; q < ranks; ++q)
      requests[at(q)][at(r)].assign(b.halo_global.begin() + b.recv_offsets[at(q)],
                                    b.halo_global.begin() + b.recv_offsets[at(q) + 1]);
  }
  std::vector<HaloSendPlan> plans;
  plans.reserve(at(ranks));
  for (int q = 0; q < ranks; ++q) plans.push_back(build_send_plan(q, col_partition, requests[at(q)]));
  return plans;
}

std::int64_t halo_exchange_bytes(const std::vector<RankBlock>& blocks, std::int32_t n, std::int32_t element_bytes) {
  if (n < 0) throw InvalidArgument("halo_exchange_bytes: n is " + std::to_string(n) + ", negative");
  if (element_bytes < 1)
    throw InvalidArgument("halo_exchange_bytes: element_bytes is " + std::to_string(element_bytes) + ", needs >= 1");
  std::int64_t halo_rows = 0;
  for (const RankBlock& b : blocks) halo_rows += b.halo_cols();  // <= ranks * 2^31: no overflow
  const std::int64_t row_bytes = std::int64_t{n} * element_bytes;
  if (row_bytes != 0 && halo_rows > std::numeric_limits<std::int64_t>::max() / row_bytes)
    throw SizeLimitError("halo_exchange_bytes: " + std::to_string(halo_rows) + " halo rows of " +
                         std::to_string(row_bytes) + " bytes overflow int64");
  return halo_rows * row_bytes;
}

}  // namespace bcsr24::detail
