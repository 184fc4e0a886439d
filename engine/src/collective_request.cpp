// The MPI collective kernel request: the ranks agree on their keys (or all raise the same error
// naming what differs), rank 0 gets every kernel some rank lacks and broadcasts the objects (or
// a GPU target's PTX) or its error, and every rank adopts what it received. One compile per job.
#include "engine_impl.hpp"

#include <uwjit/comm/verdict.hpp>
#include <uwjit/common/byte_io.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/common/format.hpp>
#include <uwjit/common/text.hpp>

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>

namespace uwjit::engine {

using detail::Clock;
using detail::Loaded;
using detail::new_info;
using detail::Ptx;
using detail::slot_tables;
using detail::to_kernel;

namespace {

std::vector<std::string> split(std::string_view text, char separator) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto end = text.find(separator, start);
    parts.emplace_back(text.substr(start, end - start));
    if (end == std::string_view::npos) {
      return parts;
    }
    start = end + 1;
  }
}

std::string rank_list(const std::vector<int>& ranks) {
  std::vector<std::string> numbers;
  for (const int r : ranks) {
    numbers.push_back(std::to_string(r));
  }
  return join(numbers, ",");
}

// The first line where two texts differ (1-based), and that line in each.
struct LineDifference {
  std::size_t line = 0;
  std::string a, b;
};

LineDifference first_difference(const std::string& a, const std::string& b) {
  const auto lines_a = split(a, '\n');
  const auto lines_b = split(b, '\n');
  for (std::size_t i = 0; i < std::max(lines_a.size(), lines_b.size()); ++i) {
    const std::string la = i < lines_a.size() ? lines_a[i] : "(end of source)";
    const std::string lb = i < lines_b.size() ? lines_b[i] : "(end of source)";
    if (la != lb) {
      return {i + 1, la, lb};
    }
  }
  return {};
}

// The salt components in which rank `r`'s salt differs from rank 0's, e.g.
// `"opt" is "3" on rank 0, "2" on rank 1`.
std::string salt_difference(const std::string& root, const std::string& other, int r) {
  const auto a = cache::Salt::parse(root);
  const auto b = cache::Salt::parse(other);
  if (!a || !b) {
    return format("\"{}\" on rank 0, \"{}\" on rank {}", root, other, r);
  }
  std::vector<std::string> parts;
  for (const auto& d : cache::differences(*a, *b)) {
    parts.push_back(!d.right  ? format("\"{}\" only on rank 0", d.name)
                    : !d.left ? format("\"{}\" only on rank {}", d.name, r)
                              : format("\"{}\" is \"{}\" on rank 0, \"{}\" on rank {}", d.name,
                                       *d.left, *d.right, r));
  }
  return parts.empty() ? "its components are in another order" : "component " + join(parts);
}

// What one rank says about one kernel of a collective request: its key, and whether this rank
// holds it loaded already.
struct Claim {
  std::string key;
  bool held = false;
};

std::string encode_claims(const std::vector<Claim>& claims) {
  ByteWriter writer;
  writer.u32(static_cast<std::uint32_t>(claims.size()));
  for (const auto& claim : claims) {
    writer.str(claim.key);
    writer.u8(claim.held ? 1 : 0);
  }
  return std::move(writer.bytes());
}

std::vector<Claim> decode_claims(std::string_view bytes, int rank) {
  ByteReader reader(bytes, format("collective kernel request: the keys of rank {}", rank));
  std::vector<Claim> claims(reader.u32());
  for (auto& claim : claims) {
    claim.key = reader.str();
    claim.held = reader.u8() != 0;
  }
  return claims;
}

// The first kernel on which some rank's key differs from rank 0's, if any. Throws
// Error(collective) when the ranks ask for different numbers of kernels. Every rank decides from
// the same gathered claims, so every rank reaches the same verdict.
std::optional<std::size_t> first_disagreement(const std::vector<std::vector<Claim>>& per_rank) {
  std::optional<std::size_t> differing;
  for (std::size_t r = 1; r < per_rank.size() && !differing; ++r) {
    if (per_rank[r].size() != per_rank[0].size()) {
      throw Error(ErrorKind::collective,
                  format("collective kernel request: rank {} asks for {} kernels, rank 0 for {}", r,
                         per_rank[r].size(), per_rank[0].size()));
    }
    for (std::size_t i = 0; i < per_rank[0].size(); ++i) {
      if (per_rank[r][i].key != per_rank[0][i].key) {
        differing = differing ? std::min(*differing, i) : i;
      }
    }
  }
  return differing;
}

// Which kernels some rank lacks: known alike on every rank.
std::vector<bool> needed_kernels(const std::vector<std::vector<Claim>>& per_rank) {
  std::vector<bool> needed(per_rank[0].size(), false);
  for (const auto& claims : per_rank) {
    for (std::size_t i = 0; i < claims.size(); ++i) {
      needed[i] = needed[i] || !claims[i].held;
    }
  }
  return needed;
}

// What rank 0 sent for one needed kernel: its object and what it cost.
struct Received {
  KernelInfo info;
  std::string object;
};

// The payload rank 0 broadcasts: per needed kernel, in request order, either
//   u64 0, u64 tier, f64 frontend_ms, f64 optimise_ms, f64 codegen_ms, str object
// or the error every rank must raise:
//   u64 1, u64 kind, str message, u64 n, then n compile diagnostics:
//   str severity, str section, u64 line, u64 column, str message.
void write_outcome(ByteWriter& writer, const KernelInfo& info, std::string_view object) {
  writer.u64(0);
  writer.u64(static_cast<std::uint64_t>(info.tier));
  writer.f64(info.compile.frontend_ms);
  writer.f64(info.compile.optimise_ms);
  writer.f64(info.compile.codegen_ms);
  writer.str(object);
}

void write_failure(ByteWriter& writer, ErrorKind kind, std::string_view message,
                   const std::vector<CompileDiagnostic>& diagnostics = {}) {
  writer.u64(1);
  writer.u64(static_cast<std::uint64_t>(kind));
  writer.str(message);
  writer.u64(diagnostics.size());
  for (const CompileDiagnostic& d : diagnostics) {
    writer.str(d.severity);
    writer.str(d.section);
    writer.u64(static_cast<std::uint64_t>(d.line));
    writer.u64(static_cast<std::uint64_t>(d.column));
    writer.str(d.message);
  }
}

// Every rank reads the same outcomes: the first error is raised everywhere alike.
std::vector<std::optional<Received>> read_outcomes(std::string_view payload,
                                                   const std::vector<bool>& needed) {
  ByteReader reader(payload, "collective kernel request payload");
  std::vector<std::optional<Received>> received(needed.size());
  std::optional<Error> failure;
  for (std::size_t i = 0; i < needed.size(); ++i) {
    if (!needed[i]) {
      continue;
    }
    if (reader.u64() != 0) {
      const auto kind = static_cast<ErrorKind>(reader.u64());
      std::string message = reader.str();
      std::vector<CompileDiagnostic> diagnostics;
      for (std::uint64_t n = reader.u64(); n > 0; --n) {
        CompileDiagnostic& d = diagnostics.emplace_back();
        d.severity = reader.str();
        d.section = reader.str();
        d.line = static_cast<int>(reader.u64());
        d.column = static_cast<int>(reader.u64());
        d.message = reader.str();
      }
      if (!failure) {
        failure.emplace(kind, message, std::move(diagnostics));
      }
      continue;
    }
    Received& got = received[i].emplace();
    got.info.tier = static_cast<Tier>(reader.u64());
    got.info.compile.frontend_ms = reader.f64();
    got.info.compile.optimise_ms = reader.f64();
    got.info.compile.codegen_ms = reader.f64();
    got.object = reader.str();
  }
  if (failure) {
    throw *failure;
  }
  return received;
}

// Each rank's key of kernel `i`.
std::vector<std::string> per_rank_keys(const std::vector<std::vector<Claim>>& per_rank,
                                       std::size_t i) {
  std::vector<std::string> keys;
  for (const auto& claims : per_rank) {
    keys.push_back(claims[i].key);
  }
  return keys;
}

} // namespace

// What a collective request serves: a host kernel (its object, loaded on each rank) or a GPU
// target's PTX (its text). Each says how a rank names, finds, gets and adopts one.
struct Engine::Impl::HostKernels {
  Impl& impl;
  using Result = Loaded;
  cache::Key key(const codegen::KernelSource& source) {
    return impl.flavour(source).key_of(source);
  }
  bool held(const cache::Key& key) { return impl.holds(impl.loaded, key); }
  Loaded request(const codegen::KernelSource& source, const cache::Key& key) {
    return impl.request(source, key);
  }
  static std::string_view bytes(const Loaded& got) {
    return {got.object->data(), got.object->size()};
  }
  Loaded adopt(const codegen::KernelSource& source, const cache::Key& key, const std::string& bytes,
               const KernelInfo& root, comm::Collectives& comm) {
    return impl.adopt(source, key, bytes, root, comm);
  }
  const std::string& salt_text(const codegen::KernelSource& source) {
    return impl.flavour(source).salt_text;
  }
};

struct Engine::Impl::GpuPtx {
  Impl& impl;
  const Target& target;
  using Result = Ptx;
  cache::Key key(const codegen::KernelSource& source) {
    return impl.flavour(source, target).key_of(source);
  }
  bool held(const cache::Key& key) { return impl.holds(impl.ptx_loaded, key); }
  Ptx request(const codegen::KernelSource& source, const cache::Key& key) {
    return impl.request_ptx(source, key, target);
  }
  static std::string_view bytes(const Ptx& got) { return *got.text; }
  Ptx adopt(const codegen::KernelSource& source, const cache::Key& key, const std::string& bytes,
            const KernelInfo& root, comm::Collectives& comm) {
    return impl.adopt_ptx(source, key, target, bytes, root, comm);
  }
  const std::string& salt_text(const codegen::KernelSource& source) {
    return impl.flavour(source, target).salt_text;
  }
};

// Rank 0's part: every needed kernel from memory, disk or a compile, in parallel. An error is
// caught and written into the payload, never thrown before the broadcast.
template <class Kind>
std::string Engine::Impl::fetch_needed(Kind& kind, std::span<const codegen::KernelSource> sources,
                                       const std::vector<cache::Key>& keys,
                                       const std::vector<bool>& needed,
                                       std::vector<std::optional<typename Kind::Result>>& fetched) {
  using Result = typename Kind::Result;
  std::vector<std::future<Result>> pending(sources.size());
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (needed[i]) {
      pending[i] = std::async(std::launch::async, [&kind, &sources, &keys, i] {
        return kind.request(sources[i], keys[i]);
      });
    }
  }
  ByteWriter writer;
  for (std::size_t i = 0; i < sources.size(); ++i) {
    if (!needed[i]) {
      continue;
    }
    try {
      const Result& got = fetched[i].emplace(pending[i].get());
      write_outcome(writer, *got.info, Kind::bytes(got));
    } catch (const Error& error) {
      write_failure(writer, error.kind(), error.what(), error.diagnostics());
    } catch (const std::exception& error) {
      write_failure(writer, ErrorKind::internal, error.what());
    }
  }
  return std::move(writer.bytes());
}

// The protocol, for either kind.
template <class Kind>
std::vector<typename Kind::Result>
Engine::Impl::run_collective(Kind& kind, std::span<const codegen::KernelSource> sources,
                             comm::Collectives& comm) {
  using Result = typename Kind::Result;
  // 1. Every rank states its keys and which kernels it holds already; one all-gather.
  std::vector<cache::Key> keys;
  std::vector<Claim> mine;
  // A rank that cannot take a key (a header it cannot read) raises with every other rank.
  comm::together(comm, [&] {
    for (const auto& source : sources) {
      keys.push_back(kind.key(source));
      mine.push_back({keys.back().hex(), kind.held(keys.back())});
    }
  });
  std::vector<std::vector<Claim>> per_rank;
  const std::vector<std::string> gathered = comm.all_gather(encode_claims(mine));
  for (std::size_t r = 0; r < gathered.size(); ++r) {
    per_rank.push_back(decode_claims(gathered[r], static_cast<int>(r)));
  }

  // 2. Key agreement: the same verdict on every rank, from the same gathered claims.
  if (const auto differing = first_disagreement(per_rank)) {
    raise_disagreement(sources, *differing, per_rank_keys(per_rank, *differing),
                       kind.salt_text(sources[*differing]), comm);
  }

  // 3. When every rank holds every kernel, each serves itself.
  const std::vector<bool> needed = needed_kernels(per_rank);
  std::vector<Result> out;
  if (std::find(needed.begin(), needed.end(), true) == needed.end()) {
    for (std::size_t i = 0; i < sources.size(); ++i) {
      out.push_back(kind.request(sources[i], keys[i]));
    }
    return out;
  }

  // 4. Rank 0 gets every needed kernel and broadcasts each outcome.
  std::vector<std::optional<Result>> fetched(sources.size()); // rank 0's own results
  std::string payload;
  if (comm.rank() == 0) {
    payload = fetch_needed(kind, sources, keys, needed, fetched);
  }
  payload = comm.broadcast(std::move(payload), 0);
  const auto received = read_outcomes(payload, needed);

  // 5. Every rank adopts what it received; a failure on some ranks fails on every rank.
  comm::together(comm, [&] {
    for (std::size_t i = 0; i < sources.size(); ++i) {
      if (fetched[i]) {
        out.push_back(*fetched[i]);
      } else if (!needed[i] || kind.held(keys[i])) {
        out.push_back(kind.request(sources[i], keys[i]));
      } else {
        out.push_back(
            kind.adopt(sources[i], keys[i], received[i]->object, received[i]->info, comm));
      }
    }
  });
  return out;
}

std::vector<Kernel> Engine::Impl::collective(std::span<const codegen::KernelSource> sources,
                                             comm::Collectives& comm) {
  HostKernels kind{*this};
  std::vector<Kernel> out;
  for (const Loaded& got : run_collective(kind, sources, comm)) {
    out.push_back(to_kernel(got));
  }
  return out;
}

std::vector<Ptx> Engine::Impl::collective_ptx(std::span<const codegen::KernelSource> sources,
                                              const Target& target, comm::Collectives& comm) {
  GpuPtx kind{*this, target};
  return run_collective(kind, sources, comm);
}

// Every rank raises the same error, naming which ranks have which key, where the sources first
// differ and which salt components differ; each distinct source goes to mismatch/KEY.cpp.
void Engine::Impl::raise_disagreement(std::span<const codegen::KernelSource> sources, std::size_t i,
                                      const std::vector<std::string>& rank_keys,
                                      const std::string& salt_text, comm::Collectives& comm) {
  // Every rank takes part, as every rank reached the same verdict.
  const std::vector<std::string> texts = comm.all_gather(sources[i].canonical());
  const std::vector<std::string> salts = comm.all_gather(salt_text);
  std::map<std::string, std::vector<int>> groups; // key → ranks
  for (int r = 0; r < comm.size(); ++r) {
    groups[rank_keys[r]].push_back(r);
  }
  std::string message = format("ranks disagree on kernel {} of {} (origin \"{}\"):", i + 1,
                               sources.size(), sources[i].origin());
  for (const auto& [key, ranks] : groups) {
    message += format(" ranks {} have key {};", rank_list(ranks), key);
  }
  const std::string& reference = texts[0];
  for (const auto& [key, ranks] : groups) {
    if (ranks.front() == 0) {
      continue;
    }
    const int r = ranks.front();
    if (texts[r] != reference) {
      const auto diff = first_difference(reference, texts[r]);
      message += format(" rank {} first differs from rank 0 at line {} of the canonical "
                        "source: rank 0 has `{}`, rank {} has `{}`;",
                        r, diff.line, diff.a, r, diff.b);
    }
    if (salts[r] != salts[0]) {
      message += format(" rank {} has {} salt than rank 0 ({});", r,
                        texts[r] == reference ? "the same source but another" : "another",
                        salt_difference(salts[0], salts[r], r));
    }
  }
  message += " each distinct source is written to mismatch/KEY.cpp in the cache directory";
  if (store) {
    std::error_code ec;
    const auto dir = store->dir() / "mismatch";
    std::filesystem::create_directories(dir, ec);
    // Not through a symlink planted in the cache directory.
    if (std::filesystem::is_directory(std::filesystem::symlink_status(dir, ec))) {
      for (const auto& [key, ranks] : groups) {
        detail::write_dump(dir / (key + ".cpp"), texts[ranks.front()], logger);
      }
    }
  }
  logger.error("{}", message);
  throw Error(ErrorKind::collective, message);
}

// Loads an object received from rank 0, as this process's copy of `key`; a node leader also
// publishes it to its node's cache when that lacks it (node-local cache directories).
Loaded Engine::Impl::adopt(const codegen::KernelSource& source, const cache::Key& key,
                           const std::string& object, const KernelInfo& root_info,
                           comm::Collectives& comm) {
  const auto start = Clock::now();
  auto info = new_info(source, key, Tier::received);
  Loaded got = load(source, key, std::span(object.data(), object.size()), info, start);
  {
    std::lock_guard lock(mutex);
    std::promise<Loaded> done;
    done.set_value(got);
    loaded.insert_or_assign(key, done.get_future().share());
  }
  // Not when a site cache holds it: every node reads that one.
  if (store && comm.node_rank() == 0 &&
      !on_disk(key, flavour(source).salt, slot_tables(source.slots()))) {
    cache::KeyLock lock = store->lock(key, options.lock_timeout);
    if (lock.outcome() != cache::LockOutcome::timed_out) {
      CompiledObject compiled;
      compiled.bytes.assign(object.begin(), object.end());
      compiled.timings = root_info.compile;
      publish(source, key, *info, compiled);
    }
  }
  return got;
}

// A GPU target's PTX received from rank 0: this process's memory entry for `key`; a node leader
// also publishes it to its node's cache when that lacks it.
Ptx Engine::Impl::adopt_ptx(const codegen::KernelSource& source, const cache::Key& key,
                            const Target& target, const std::string& text,
                            const KernelInfo& root_info, comm::Collectives& comm) {
  const auto start = Clock::now();
  auto info = new_info(source, key, Tier::received);
  info->object_size = text.size();
  info->request_ms = detail::ms_since(start);
  Ptx got{std::make_shared<const std::string>(text), info};
  {
    std::lock_guard lock(mutex);
    std::promise<Ptx> done;
    done.set_value(got);
    ptx_loaded.insert_or_assign(key, done.get_future().share());
  }
  const detail::Flavour& f = flavour(source, target);
  if (store && comm.node_rank() == 0 && !on_disk(key, f.salt, slot_tables(source.slots()))) {
    cache::KeyLock lock = store->lock(key, options.lock_timeout);
    if (lock.outcome() != cache::LockOutcome::timed_out) {
      CompiledObject compiled;
      compiled.bytes.assign(text.begin(), text.end());
      compiled.timings = root_info.compile;
      publish(source, key, *info, compiled, f);
    }
  }
  return got;
}

} // namespace uwjit::engine
