// Reverse Cuthill-McKee: the graph of A + A^T (or, for a rectangular A, rows linked by shared columns) is
// compressed into supervariables, ordered breadth first from a pseudo-peripheral node of every component,
// reversed, and expanded back to rows.
#include "format/reorder.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bcsr24/error.hpp"
#include "bcsr24_testkit/splitmix64.hpp"

namespace bcsr24 {

namespace {

using Index = std::int32_t;

constexpr std::int64_t kMaxIndex = std::numeric_limits<Index>::max();
constexpr Index kNone = -1;
/// George-Liu restarts. On meshes the eccentricity stops growing after one or two; the cap bounds the cost
/// (one breadth-first search each) on graphs where it keeps creeping up by one level at a time.
constexpr int kPeripheralSearchLimit = 5;

std::size_t at(Index i) { return static_cast<std::size_t>(i); }

/// A sparsity pattern in CSR form without values: the rows of a matrix or the adjacency lists of a graph.
/// Non-owning, so that A itself can be read without copying it.
struct PatternView {
  const Index* offsets = nullptr;  ///< size + 1 entries
  const Index* indices = nullptr;
  Index size = 0;

  Index length(Index v) const { return offsets[v + 1] - offsets[v]; }
  const Index* begin(Index v) const { return indices + offsets[v]; }
  const Index* end(Index v) const { return indices + offsets[v + 1]; }
};

/// An owned pattern (transpose, graph, quotient graph, supervariable members). The index array is not
/// zero-filled: it is written right after allocation, and the graph's is sized by an upper bound of which a
/// symmetric A fills half, so clearing it would touch up to 2 nnz entries for nothing.
struct Pattern {
  std::vector<Index> offsets{0};
  std::unique_ptr<Index[]> indices;

  void allocate_indices(std::size_t entries) { indices.reset(new Index[entries]); }
  PatternView view() const { return {offsets.data(), indices.get(), static_cast<Index>(offsets.size() - 1)}; }
};

PatternView view_of(const CsrMatrix& a) { return {a.row_ptr.data(), a.col_idx.data(), a.rows}; }

/// splitmix64 of the index. Supervariable hashes are sums over a neighbourhood, so the summands must be spread
/// over all 64 bits for different neighbourhoods to collide rarely (every collision costs an exact compare).
std::uint64_t scramble(Index v) { return splitmix64_at(static_cast<std::uint32_t>(v), 0); }

/// Transposed pattern of the matrix whose row k is row row_of(k) of A, k = 0 .. count - 1: column c lists the
/// k whose row holds c. Rows are scattered in ascending k, so every list comes out sorted without sorting.
/// With skip_diagonal the entries (k, k) are left out: the graph has no self loops.
template <class RowOf>
Pattern transpose(PatternView a, Index count, Index cols, RowOf row_of, bool skip_diagonal) {
  Pattern t;
  t.offsets.assign(at(cols) + 1, 0);
  for (Index k = 0; k < count; ++k) {
    const Index r = row_of(k);
    for (const Index* p = a.begin(r); p != a.end(r); ++p)
      if (!skip_diagonal || *p != k) ++t.offsets[at(*p) + 1];
  }
  for (Index c = 0; c < cols; ++c) t.offsets[at(c) + 1] += t.offsets[at(c)];
  t.allocate_indices(at(t.offsets[at(cols)]));
  std::vector<Index> next(t.offsets.begin(), t.offsets.end() - 1);
  for (Index k = 0; k < count; ++k) {
    const Index r = row_of(k);
    for (const Index* p = a.begin(r); p != a.end(r); ++p)
      if (!skip_diagonal || *p != k) t.indices[at(next[at(*p)]++)] = k;
  }
  return t;
}

/// Row v of A + A^T without the diagonal, ascending and unique, passed to emit one index at a time. `a_t` must
/// already lack its diagonal, so v can only come from A's side.
template <class Emit>
void merge_symmetrized_row(Index v, PatternView a, PatternView a_t, Emit&& emit) {
  const Index* p = a.begin(v);
  const Index* const p_end = a.end(v);
  const Index* q = a_t.begin(v);
  const Index* const q_end = a_t.end(v);
  while (p != p_end && q != q_end) {
    const Index x = *p;
    const Index y = *q;
    if (x < y) {
      if (x != v) emit(x);
      ++p;
    } else if (y < x) {
      emit(y);
      ++q;
    } else {
      emit(x);
      ++p;
      ++q;
    }
  }
  for (; p != p_end; ++p)
    if (*p != v) emit(*p);
  for (; q != q_end; ++q) emit(*q);
}

/// Adjacency of the graph of A + A^T (square A), self loops dropped, lists sorted.
Pattern symmetrized_graph(PatternView a, PatternView a_t) {
  const Index n = a.size;
  std::int64_t capacity = std::int64_t(a.offsets[n]) + std::int64_t(a_t.offsets[n]);
  if (capacity > kMaxIndex) {
    // Only the upper bound overflows so far; count exactly before giving up (a symmetric A has half of it).
    std::int64_t exact = 0;
    for (Index v = 0; v < n; ++v) merge_symmetrized_row(v, a, a_t, [&exact](Index) { ++exact; });
    if (exact > kMaxIndex)
      throw SizeLimitError("reverse_cuthill_mckee: the pattern of A + A^T has " + std::to_string(exact) +
                           " off-diagonal entries, more than the 32-bit index limit " + std::to_string(kMaxIndex));
    capacity = exact;
  }
  Pattern g;
  g.offsets.resize(at(n) + 1);
  g.offsets[0] = 0;
  g.allocate_indices(static_cast<std::size_t>(capacity));
  Index* const out = g.indices.get();
  Index written = 0;
  for (Index v = 0; v < n; ++v) {
    merge_symmetrized_row(v, a, a_t, [out, &written](Index j) { out[written++] = j; });
    g.offsets[at(v) + 1] = written;
  }
  return g;
}


/// Rows merged into supervariables, numbered in the order of their smallest row. Rows left out (empty ones)
/// belong to none.
struct Supervariables {
  std::vector<Index> of_row;  ///< supervariable of each row, kNone for rows left out
  Pattern members;            ///< rows of each supervariable, ascending; the first is its representative
  Index count = 0;

  Index representative(Index s) const { return members.indices[at(members.offsets[at(s)])]; }
};

/// Fills `members` from `of_row` by a counting sort; scanning rows in ascending order keeps each list sorted.
void collect_members(Supervariables& sv) {
  Pattern& m = sv.members;
  m.offsets.assign(at(sv.count) + 1, 0);
  for (const Index s : sv.of_row)
    if (s != kNone) ++m.offsets[at(s) + 1];
  for (Index s = 0; s < sv.count; ++s) m.offsets[at(s) + 1] += m.offsets[at(s)];
  m.allocate_indices(at(m.offsets[at(sv.count)]));
  std::vector<Index> next(m.offsets.begin(), m.offsets.end() - 1);
  for (Index r = 0; r < static_cast<Index>(sv.of_row.size()); ++r) {
    const Index s = sv.of_row[at(r)];
    if (s != kNone) m.indices[at(next[at(s)]++)] = r;
  }
}

/// Whether v and its neighbour u have the same closed neighbourhood, i.e. adj(v) - {u} == adj(u) - {v}.
/// Callers have checked that the degrees agree.
bool same_closed_neighbourhood(PatternView g, Index v, Index u) {
  const Index* p = g.begin(v);
  const Index* const p_end = g.end(v);
  const Index* q = g.begin(u);
  const Index* const q_end = g.end(u);
  for (;;) {
    if (p != p_end && *p == u) ++p;
    if (q != q_end && *q == v) ++q;
    if (p == p_end || q == q_end) return p == p_end && q == q_end;
    if (*p != *q) return false;
    ++p;
    ++q;
  }
}

/// Supervariables of a graph: rows with identical closed neighbourhoods (adjacency plus themselves), the
/// unknowns of one mesh node. Two such rows are adjacent to each other, so each row only has to be compared
/// with its own neighbours, and a hash of the neighbourhood rules out almost all of those without a compare.
Supervariables closed_neighbourhood_supervariables(PatternView g, const std::vector<char>& left_out) {
  const Index n = g.size;
  std::vector<std::uint64_t> hash(at(n));
  for (Index v = 0; v < n; ++v) {
    std::uint64_t h = scramble(v);
    for (const Index* p = g.begin(v); p != g.end(v); ++p) h += scramble(*p);
    hash[at(v)] = h;
  }
  Supervariables sv;
  sv.of_row.assign(at(n), kNone);
  for (Index v = 0; v < n; ++v) {
    if (left_out[at(v)] || sv.of_row[at(v)] != kNone) continue;
    const Index s = sv.count++;
    sv.of_row[at(v)] = s;
    // Neighbours below v are already placed, so only later rows can join v's supervariable.
    for (const Index* p = g.begin(v); p != g.end(v); ++p) {
      const Index u = *p;
      if (sv.of_row[at(u)] == kNone && hash[at(u)] == hash[at(v)] && g.length(u) == g.length(v) &&
          same_closed_neighbourhood(g, v, u))
        sv.of_row[at(u)] = s;
    }
  }
  collect_members(sv);
  return sv;
}

/// Supervariables of the rows of a rectangular matrix: rows with identical patterns. Such rows need not be
/// related in any graph, so candidates are found through an open-addressing table keyed by a pattern hash;
/// rows are inserted in ascending order, which makes the numbering independent of the table's layout.
Supervariables identical_row_supervariables(PatternView a) {
  const Index n = a.size;
  std::size_t capacity = 16;
  while (capacity < 2 * at(n)) capacity *= 2;
  const std::size_t mask = capacity - 1;
  std::vector<Index> table(capacity, kNone);  // supervariable ids
  std::vector<std::uint64_t> hash_of;         // per supervariable
  std::vector<Index> first_row;               // per supervariable

  Supervariables sv;
  sv.of_row.assign(at(n), kNone);
  for (Index r = 0; r < n; ++r) {
    if (a.length(r) == 0) continue;  // empty rows stay out and go last
    std::uint64_t h = scramble(a.length(r));
    for (const Index* p = a.begin(r); p != a.end(r); ++p) h += scramble(*p);
    std::size_t slot = static_cast<std::size_t>(h) & mask;
    Index found = kNone;
    for (; table[slot] != kNone; slot = (slot + 1) & mask) {
      const Index s = table[slot];
      const Index q = first_row[at(s)];
      if (hash_of[at(s)] == h && a.length(q) == a.length(r) && std::equal(a.begin(r), a.end(r), a.begin(q))) {
        found = s;
        break;
      }
    }
    if (found == kNone) {
      found = sv.count++;
      table[slot] = found;
      hash_of.push_back(h);
      first_row.push_back(r);
    }
    sv.of_row[at(r)] = found;
  }
  collect_members(sv);
  return sv;
}

/// Graph of supervariables: s and t are adjacent when a row of s is adjacent to a row of t. All rows of a
/// supervariable share their neighbourhood, so the representative's list is enough.
Pattern quotient_graph(PatternView g, const Supervariables& sv) {
  std::size_t capacity = 0;
  for (Index s = 0; s < sv.count; ++s) capacity += at(g.length(sv.representative(s)));
  Pattern q;
  q.offsets.resize(at(sv.count) + 1);
  q.offsets[0] = 0;
  q.allocate_indices(capacity);
  Index written = 0;
  std::vector<Index> last_seen(at(sv.count), kNone);
  for (Index s = 0; s < sv.count; ++s) {
    last_seen[at(s)] = s;
    const Index v = sv.representative(s);
    for (const Index* p = g.begin(v); p != g.end(v); ++p) {
      const Index t = sv.of_row[at(*p)];
      if (last_seen[at(t)] != s) {
        last_seen[at(t)] = s;
        q.indices[at(written++)] = t;
      }
    }
    q.offsets[at(s) + 1] = written;
  }
  return q;
}

/// An undirected graph given by adjacency lists. The degrees that order the search are passed separately:
/// for a quotient graph they are the row degrees of the representatives, which count the rows that a
/// supervariable really touches rather than its number of neighbouring supervariables.
class AdjacencyGraph {
 public:
  AdjacencyGraph(PatternView adjacency, const std::vector<Index>& degree) : adjacency_(adjacency), degree_(degree) {}

  Index nodes() const { return adjacency_.size; }
  Index degree(Index v) const { return degree_[at(v)]; }
  void begin_search() {}

  /// Calls visit(u) for every neighbour u, then end_group() once: all neighbours form one group.
  template <class Visit, class EndGroup>
  void expand(Index v, Visit&& visit, EndGroup&& end_group) {
    for (const Index* p = adjacency_.begin(v); p != adjacency_.end(v); ++p) visit(*p);
    end_group();
  }

 private:
  PatternView adjacency_;
  const std::vector<Index>& degree_;
};

/// Row supervariables of a rectangular matrix, adjacent when they share a column: the bipartite row-column
/// graph seen from the rows. `columns` lists the supervariables of each column. A column is expanded at most
/// once per search, so a search costs O(nnz) however long the columns are, where listing the row-row edges
/// could cost the sum of the squared column lengths.
class SharedColumnGraph {
 public:
  SharedColumnGraph(PatternView rows, PatternView columns, const Supervariables& sv, const std::vector<Index>& degree)
      : rows_(rows), columns_(columns), sv_(sv), degree_(degree), column_mark_(at(columns.size), 0) {}

  Index nodes() const { return sv_.count; }
  Index degree(Index v) const { return degree_[at(v)]; }

  /// Forgets which columns were expanded. Marks are search numbers, so nothing has to be cleared.
  void begin_search() {
    if (++search_ == 0) {
      std::fill(column_mark_.begin(), column_mark_.end(), 0u);
      search_ = 1;
    }
  }

  /// Calls visit(u) for the supervariables of every column of v not expanded yet in this search, ending a
  /// group after each column: the rows that share a column are kept together.
  template <class Visit, class EndGroup>
  void expand(Index v, Visit&& visit, EndGroup&& end_group) {
    const Index r = sv_.representative(v);
    for (const Index* p = rows_.begin(r); p != rows_.end(r); ++p) {
      const Index c = *p;
      if (column_mark_[at(c)] == search_) continue;
      column_mark_[at(c)] = search_;
      for (const Index* q = columns_.begin(c); q != columns_.end(c); ++q) visit(*q);
      end_group();
    }
  }

 private:
  PatternView rows_;
  PatternView columns_;
  const Supervariables& sv_;
  const std::vector<Index>& degree_;
  std::vector<std::uint32_t> column_mark_;
  std::uint32_t search_ = 0;
};

/// Breadth-first searches over one of the graphs above: level structures for the George-Liu search of a
/// pseudo-peripheral node, and the Cuthill-McKee sweep itself. Node marks hold search numbers, so that a
/// search never has to clear them; kPlaced marks nodes already in the order.
template <class Graph>
class CuthillMckee {
 public:
  explicit CuthillMckee(Graph& graph) : graph_(graph), mark_(at(graph.nodes()), 0), queue_(at(graph.nodes())) {}

  /// Nodes in reverse Cuthill-McKee order. Components come in the order of their smallest node, each one
  /// reversed on its own so that this order survives the reversal.
  std::vector<Index> order(Index& components) {
    const Index n = graph_.nodes();
    std::vector<Index> result;
    result.reserve(at(n));
    components = 0;
    for (Index seed = 0; seed < n; ++seed) {
      if (mark_[at(seed)] == kPlaced) continue;
      ++components;
      const std::size_t first = result.size();
      sweep(pseudo_peripheral_node(seed), result);
      std::reverse(result.begin() + static_cast<std::ptrdiff_t>(first), result.end());
    }
    return result;
  }

 private:
  static constexpr std::uint32_t kPlaced = std::numeric_limits<std::uint32_t>::max();

  /// The nodes of a level structure are queue_[0, end); its deepest level is queue_[last_level, end).
  struct Levels {
    Index height = 0;
    Index last_level = 0;
    Index end = 0;
  };

  bool before(Index u, Index v) const {
    const Index du = graph_.degree(u);
    const Index dv = graph_.degree(v);
    return du < dv || (du == dv && u < v);
  }

  Index min_degree_node(Index begin, Index end) const {
    Index best = queue_[at(begin)];
    for (Index i = begin + 1; i < end; ++i)
      if (before(queue_[at(i)], best)) best = queue_[at(i)];
    return best;
  }

  std::uint32_t next_search() {
    if (++search_ == kPlaced) {
      for (std::uint32_t& m : mark_)
        if (m != kPlaced) m = 0;
      search_ = 1;
    }
    return search_;
  }

  Levels level_structure(Index root) {
    graph_.begin_search();
    const std::uint32_t search = next_search();
    queue_[0] = root;
    mark_[at(root)] = search;
    Levels levels;
    Index head = 0;
    Index tail = 1;
    // Components are closed, so placed nodes of other components are never reached: no kPlaced test.
    auto visit = [&](Index u) {
      if (mark_[at(u)] != search) {
        mark_[at(u)] = search;
        queue_[at(tail++)] = u;
      }
    };
    while (head < tail) {
      levels.last_level = head;
      ++levels.height;
      for (const Index level_end = tail; head < level_end; ++head) graph_.expand(queue_[at(head)], visit, [] {});
    }
    levels.end = tail;
    return levels;
  }

  /// George-Liu: from the component's minimum-degree node, move to a minimum-degree node of the deepest level
  /// while that makes the level structure deeper. The search from the seed finds the component first.
  Index pseudo_peripheral_node(Index seed) {
    Levels levels = level_structure(seed);
    if (levels.end == 1) return seed;
    Index root = min_degree_node(0, levels.end);
    levels = level_structure(root);
    for (int i = 0; i < kPeripheralSearchLimit; ++i) {
      const Index candidate = min_degree_node(levels.last_level, levels.end);
      const Levels deeper = level_structure(candidate);
      if (deeper.height <= levels.height) break;
      root = candidate;
      levels = deeper;
    }
    return root;
  }

  /// Cuthill-McKee from root: appends the component breadth first, each group of newly reached nodes in
  /// increasing degree (then index) so that low-degree nodes, which reach fewer new nodes, come first.
  void sweep(Index root, std::vector<Index>& result) {
    graph_.begin_search();
    result.push_back(root);
    mark_[at(root)] = kPlaced;
    std::size_t group_begin = 0;
    auto visit = [&](Index u) {
      if (mark_[at(u)] != kPlaced) {
        mark_[at(u)] = kPlaced;
        result.push_back(u);
      }
    };
    auto end_group = [&] {
      if (result.size() - group_begin > 1)
        std::sort(result.begin() + static_cast<std::ptrdiff_t>(group_begin), result.end(),
                  [this](Index u, Index v) { return before(u, v); });
      group_begin = result.size();
    };
    for (std::size_t head = result.size() - 1; head < result.size(); ++head) {
      group_begin = result.size();
      graph_.expand(result[head], visit, end_group);
    }
  }

  Graph& graph_;
  std::vector<std::uint32_t> mark_;
  std::vector<Index> queue_;
  std::uint32_t search_ = 0;
};

/// Rows of each supervariable in node order, ascending within a supervariable, then the rows left out.
std::vector<Index> expand_to_rows(const std::vector<Index>& node_order, const Supervariables& sv, Index rows) {
  std::vector<Index> order;
  order.reserve(at(rows));
  const PatternView members = sv.members.view();
  for (const Index s : node_order) order.insert(order.end(), members.begin(s), members.end(s));
  for (Index r = 0; r < rows; ++r)
    if (sv.of_row[at(r)] == kNone) order.push_back(r);
  return order;
}

RowOrdering symmetric_ordering(const CsrMatrix& a) {
  const PatternView rows = view_of(a);
  // The transpose is freed as soon as the graph exists: it is the largest array after the graph itself.
  const Pattern graph_storage = [&] {
    const Pattern transposed = transpose(rows, a.rows, a.cols, [](Index r) { return r; }, /*skip_diagonal=*/true);
    return symmetrized_graph(rows, transposed.view());
  }();
  const PatternView graph = graph_storage.view();

  // A row without any entry in A + A^T, diagonal included, is empty: it goes last. A row holding only its
  // diagonal is an isolated node, ordered like any other component.
  std::vector<char> empty(at(a.rows), 0);
  Index empty_rows = 0;
  for (Index r = 0; r < a.rows; ++r)
    if (graph.length(r) == 0 && rows.length(r) == 0) {
      empty[at(r)] = 1;
      ++empty_rows;
    }

  const Supervariables sv = closed_neighbourhood_supervariables(graph, empty);
  std::vector<Index> degree(at(sv.count));
  for (Index s = 0; s < sv.count; ++s) degree[at(s)] = graph.length(sv.representative(s));

  RowOrdering result;
  result.symmetric = true;
  Index components = 0;
  std::vector<Index> node_order;
  if (sv.count == a.rows) {
    // Nothing merged and nothing left out: supervariable s is row s, and the graph is its own quotient.
    AdjacencyGraph g(graph, degree);
    node_order = CuthillMckee<AdjacencyGraph>(g).order(components);
  } else {
    const Pattern quotient = quotient_graph(graph, sv);
    AdjacencyGraph g(quotient.view(), degree);
    node_order = CuthillMckee<AdjacencyGraph>(g).order(components);
  }
  result.order = expand_to_rows(node_order, sv, a.rows);
  result.supervariables = sv.count + empty_rows;
  result.components = components + empty_rows;
  return result;
}

RowOrdering rectangular_ordering(const CsrMatrix& a) {
  const PatternView rows = view_of(a);
  const Supervariables sv = identical_row_supervariables(rows);
  // Columns list supervariables, not rows: the searches then skip the copies of a repeated pattern.
  const Pattern columns = transpose(rows, sv.count, a.cols, [&sv](Index s) { return sv.representative(s); },
                                    /*skip_diagonal=*/false);
  std::vector<Index> degree(at(sv.count));
  for (Index s = 0; s < sv.count; ++s) degree[at(s)] = rows.length(sv.representative(s));

  SharedColumnGraph g(rows, columns.view(), sv, degree);
  Index components = 0;
  const std::vector<Index> node_order = CuthillMckee<SharedColumnGraph>(g).order(components);

  const Index empty_rows = a.rows - sv.members.offsets.back();
  RowOrdering result;
  result.symmetric = false;
  result.order = expand_to_rows(node_order, sv, a.rows);
  result.supervariables = sv.count + empty_rows;
  result.components = components + empty_rows;
  return result;
}

}  // namespace

RowOrdering reverse_cuthill_mckee(const CsrMatrix& a) {
  if (a.rows < 0 || a.cols < 0 || a.row_ptr.size() != at(a.rows) + 1 || a.row_ptr.front() != 0 ||
      static_cast<std::size_t>(a.row_ptr.back()) != a.col_idx.size())
    throw InvalidArgument("reverse_cuthill_mckee: inconsistent CSR matrix (" + std::to_string(a.rows) + " x " +
                          std::to_string(a.cols) + ", " + std::to_string(a.row_ptr.size()) + " row offsets, " +
                          std::to_string(a.col_idx.size()) + " entries)");
  return a.rows == a.cols ? symmetric_ordering(a) : rectangular_ordering(a);
}

std::vector<std::int32_t> inverse_permutation(const std::vector<std::int32_t>& order) {
  const std::size_t n = order.size();
  if (n > static_cast<std::size_t>(kMaxIndex))
    throw SizeLimitError("inverse_permutation: " + std::to_string(n) + " entries exceed the 32-bit index limit");
  std::vector<std::int32_t> inverse(n, kNone);
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t v = order[i];
    if (v < 0 || static_cast<std::size_t>(v) >= n || inverse[at(v)] != kNone)
      throw InvalidArgument("inverse_permutation: entry " + std::to_string(i) + " = " + std::to_string(v) +
                            " is out of range or repeated: not a permutation of 0 .. " + std::to_string(n) + " - 1");
    inverse[at(v)] = static_cast<std::int32_t>(i);
  }
  return inverse;
}

std::int64_t permuted_bandwidth(const CsrMatrix& a, const std::vector<std::int32_t>& order) {
  if (!order.empty() && order.size() != at(a.rows))
    throw InvalidArgument("permuted_bandwidth: order has " + std::to_string(order.size()) + " entries for " +
                          std::to_string(a.rows) + " rows");
  std::vector<std::int32_t> position;
  if (order.empty()) {
    position.resize(at(a.rows));
    for (Index r = 0; r < a.rows; ++r) position[at(r)] = r;
  } else {
    position = inverse_permutation(order);
  }
  // Rectangular matrices are reordered by rows only, so their columns keep their places.
  const bool square = a.rows == a.cols;
  std::int64_t bandwidth = 0;
  for (Index r = 0; r < a.rows; ++r) {
    const std::int64_t new_row = position[at(r)];
    for (Index p = a.row_ptr[at(r)]; p < a.row_ptr[at(r) + 1]; ++p) {
      const Index c = a.col_idx[at(p)];
      const std::int64_t new_col = square ? position[at(c)] : c;
      bandwidth = std::max(bandwidth, new_row > new_col ? new_row - new_col : new_col - new_row);
    }
  }
  return bandwidth;
}

}  // namespace bcsr24
