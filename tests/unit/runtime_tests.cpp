// runtime/: StaticArray, StaticData, static_data_hash, params, fields. Nothing here compiles a
// kernel; tests/jit/nodes_tests.cpp does.
#include "expect.hpp"
#include "static_data_sample.hpp"

#include <uwjit/common/error.hpp>
#include <uwjit/runtime/field.hpp>
#include <uwjit/runtime/static_data.hpp>
#include <uwjit/runtime/value.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

using uwjit::runtime::Dtype;
using uwjit::runtime::Replication;
using uwjit::runtime::StaticArray;
using uwjit::runtime::StaticData;

namespace {

std::shared_ptr<const void> bytes(std::size_t n) {
  auto owned = std::make_shared<std::vector<double>>(n, 0.0);
  return {owned, owned->data()};
}

using uwjit_test::contains;
using uwjit_test::usage_error;

std::string run(const std::string& command) {
  std::string out;
  FILE* pipe = ::popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::array<char, 256> buffer{};
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) {
    out += buffer.data();
  }
  CHECK(::pclose(pipe) == 0);
  return out;
}

} // namespace

TEST_CASE("a static array of every dtype, replicated or sharded on any axis, is accepted") {
  for (const Dtype dtype : uwjit::codegen::k_all_dtypes) {
    const StaticArray replicated("a", bytes(24), dtype, {2, 3, 4});
    CHECK(replicated.element_count() == 24);
    CHECK(replicated.size_bytes() == 24 * uwjit::codegen::size_of(dtype));
    CHECK_FALSE(replicated.shard_axis());
    for (int axis = 0; axis < 3; ++axis) {
      const StaticArray sharded("a", bytes(24), dtype, {2, 3, 4}, Replication::shard, axis);
      CHECK(sharded.shard_axis() == axis);
      CHECK(sharded.replication() == Replication::shard);
    }
  }
}

TEST_CASE("a static array of no axes is a scalar of one element") {
  const auto gain = StaticArray::scalar("gain", 2.5);
  CHECK(gain.ndim() == 0);
  CHECK(gain.element_count() == 1);
  CHECK(gain.size_bytes() == sizeof(double));
  CHECK(gain.values<double>()[0] == 2.5);
  CHECK(gain.replication() == Replication::replicate);
}

TEST_CASE("the StaticArray validation matrix: each rule is an error naming the key and the rule") {
  struct Case {
    const char* what;
    std::function<void()> make;
    const char* message;
  };
  const std::vector<Case> cases = {
      {"shard without an axis",
       [] { StaticArray("mask", bytes(8), Dtype::u8, {8}, Replication::shard); },
       "static array \"mask\": shard needs a shard_axis"},
      {"shard axis below range",
       [] { StaticArray("mask", bytes(8), Dtype::u8, {2, 4}, Replication::shard, -1); },
       "static array \"mask\": shard_axis -1 is out of range [0, 2) for shape (2, 4)"},
      {"shard axis at ndim",
       [] { StaticArray("mask", bytes(8), Dtype::u8, {2, 4}, Replication::shard, 2); },
       "static array \"mask\": shard_axis 2 is out of range [0, 2)"},
      {"replicate with an axis",
       [] { StaticArray("w", bytes(8), Dtype::f64, {8}, Replication::replicate, 0); },
       "static array \"w\": replicate forbids a shard_axis (got 0)"},
      {"zero-size axis", [] { StaticArray("w", bytes(8), Dtype::f64, {4, 0}); },
       "static array \"w\": shape (4, 0) has extent 0 on axis 1: zero-size"},
      {"negative axis", [] { StaticArray("w", bytes(8), Dtype::f64, {-3}); },
       "static array \"w\": shape (-3) has extent -3 on axis 0"},
      {"a scalar sharded",
       [] { StaticArray("w", bytes(8), Dtype::f64, {}, Replication::shard, 0); },
       "static array \"w\": shard_axis 0 is out of range [0, 0)"},
      {"too many axes", [] { StaticArray("w", bytes(8), Dtype::f64, {1, 1, 1, 1, 1, 1, 1, 1, 1}); },
       "must have 0 (a scalar) to 8 axes"},
      {"unsupported dtype", [] { StaticArray("w", bytes(8), static_cast<Dtype>(9), {8}); },
       "static array \"w\": unsupported dtype 9 (accepted: f32, f64, i8, u8, i32, i64)"},
      {"null data", [] { StaticArray("w", nullptr, Dtype::f64, {8}); },
       "static array \"w\": the data pointer is null"},
      {"key not an identifier", [] { StaticArray("pipe wall", bytes(8), Dtype::f64, {8}); },
       "static array \"pipe wall\": the key must be a C identifier"},
      {"empty key", [] { StaticArray("", bytes(8), Dtype::f64, {8}); },
       "the key must be a C identifier"},
      {"too large", [] { StaticArray("w", bytes(8), Dtype::f64, {1LL << 40, 1LL << 40}); },
       "static array \"w\": shape (1099511627776, 1099511627776) is too large"},
      {"values that do not fill the shape",
       [] { (void)StaticArray::from_vector("w", std::vector<float>(5), {2, 3}); },
       "static array \"w\": 5 values do not fill shape (2, 3) (6 elements)"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    CHECK(contains(usage_error(c.make), c.message));
  }
}

TEST_CASE("a static array shares ownership of its data") {
  std::weak_ptr<const void> watch;
  {
    auto owned = std::make_shared<std::vector<double>>(4, 2.5);
    const StaticArray array("w", std::shared_ptr<const void>(owned, owned->data()), Dtype::f64,
                            {4});
    watch = array.shared_data();
    owned.reset();
    CHECK_FALSE(watch.expired()); // the array keeps it alive
    const StaticArray copy = array;
    CHECK(copy.data() == array.data());
    CHECK(copy.values<double>()[3] == 2.5);
    CHECK(contains(usage_error([&] { (void)copy.values<float>(); }), "holds f64, not f32"));
  }
  CHECK(watch.expired());
}

TEST_CASE("a computed array computes its contents once, when first needed, for all its copies") {
  auto calls = std::make_shared<std::atomic<int>>(0);
  const auto array =
      StaticArray::computed<std::int32_t>("lookup", {3, 4}, [calls](std::span<std::int32_t> out) {
        calls->fetch_add(1);
        for (std::size_t i = 0; i < out.size(); ++i) {
          out[i] = static_cast<std::int32_t>(i * i);
        }
      });
  const StaticArray copy = array;
  CHECK(array.is_computed());
  CHECK(array.size_bytes() == 48);
  CHECK(calls->load() == 0); // nothing computed yet
  std::vector<std::thread> readers;
  for (int t = 0; t < 4; ++t) {
    readers.emplace_back([&copy] { CHECK(copy.values<std::int32_t>()[11] == 121); });
  }
  for (auto& reader : readers) {
    reader.join();
  }
  CHECK(calls->load() == 1);
  CHECK(array.data() == copy.data());
  CHECK(array.values<std::int32_t>()[5] == 25);
  CHECK(calls->load() == 1);
}

TEST_CASE("an array computed by box computes a part alone, never the whole, and equals a copy") {
  // Element (i, j, k) of a 6 x 5 x 4 array is 100 i + 10 j + k; every box asked for is kept.
  auto boxes = std::make_shared<std::vector<uwjit::runtime::ArrayBox>>();
  const auto fill = [boxes](const uwjit::runtime::ArrayBox& box, std::span<std::int32_t> out) {
    boxes->push_back(box);
    std::size_t at = 0;
    for (std::int64_t i = box.offset[0]; i < box.offset[0] + box.extent[0]; ++i) {
      for (std::int64_t j = box.offset[1]; j < box.offset[1] + box.extent[1]; ++j) {
        for (std::int64_t k = box.offset[2]; k < box.offset[2] + box.extent[2]; ++k) {
          out[at++] = static_cast<std::int32_t>(100 * i + 10 * j + k);
        }
      }
    }
  };
  const auto array = StaticArray::computed_by_box<std::int32_t>("field", {6, 5, 4}, fill);
  CHECK(array.is_computed_by_box());
  CHECK(array.replication() == Replication::shard);
  const uwjit::runtime::ArrayBox slab{{2, 0, 1}, {3, 5, 2}};
  const StaticArray part = array.part(slab);
  CHECK(part.shape() == std::vector<std::int64_t>{3, 5, 2});
  CHECK(part.key() == "field");
  CHECK(part.values<std::int32_t>()[0] == 201);
  CHECK(part.values<std::int32_t>()[29] == 100 * 4 + 10 * 4 + 2);
  REQUIRE(boxes->size() == 1);
  CHECK(boxes->front() == slab); // the slab alone was computed
  // A part of a part lies where it says in the whole array.
  CHECK(part.part({{1, 2, 0}, {1, 1, 1}}).values<std::int32_t>()[0] == 100 * 3 + 10 * 2 + 1);
  // The whole array is one box, and its part by copy equals the part computed alone.
  const StaticArray copied =
      StaticArray::from_vector("field",
                               std::vector<std::int32_t>(array.values<std::int32_t>().begin(),
                                                         array.values<std::int32_t>().end()),
                               {6, 5, 4}, Replication::shard, 0)
          .part(slab);
  CHECK(boxes->back() == uwjit::runtime::ArrayBox{{0, 0, 0}, {6, 5, 4}});
  CHECK(std::equal(copied.values<std::int32_t>().begin(), copied.values<std::int32_t>().end(),
                   part.values<std::int32_t>().begin()));
  CHECK(contains(usage_error([&] { (void)array.part({{4, 0, 0}, {3, 5, 4}}); }),
                 "does not lie within its shape (6, 5, 4)"));
}

TEST_CASE("a computed array whose fill throws passes the error on and tries again next time") {
  int calls = 0;
  const auto array = StaticArray::computed<double>("weights", {2}, [&calls](std::span<double> out) {
    if (++calls == 1) {
      throw std::runtime_error("weights file not ready");
    }
    out[0] = 1.5;
    out[1] = 2.5;
  });
  CHECK_THROWS_WITH((void)array.data(), "weights file not ready");
  CHECK(array.values<double>()[1] == 2.5);
  CHECK(calls == 2);
}

TEST_CASE("a computed array obeys the rules of every array and hashes like one given its data") {
  const auto fill = [](std::span<double> out) { std::fill(out.begin(), out.end(), 1.0); };
  CHECK(contains(usage_error([&] { (void)StaticArray::computed<double>("w", {0}, fill); }),
                 "static array \"w\": shape (0) has extent 0 on axis 0"));
  CHECK(contains(usage_error([&] { (void)StaticArray::computed<double>("2w", {4}, fill); }),
                 "the key must be a C identifier"));
  CHECK(contains(usage_error([&] { (void)StaticArray::computed<double>("w", {4}, {}); }),
                 "static array \"w\": a computed array needs a fill function"));
  CHECK(contains(usage_error([&] {
                   (void)StaticArray::computed<double>("w", {4}, fill, Replication::shard, 3);
                 }),
                 "shard_axis 3 is out of range [0, 1)"));
  // The hash covers key, dtype, shape and distribution, never the contents or how they arrive.
  StaticData computed;
  computed.add(StaticArray::computed<double>("w", {4}, fill, Replication::shard, 0));
  StaticData given;
  given.add(StaticArray::from_vector("w", std::vector<double>(4, 7.0), {4}, Replication::shard, 0));
  CHECK(uwjit::runtime::static_data_hash(computed) == uwjit::runtime::static_data_hash(given));
}

TEST_CASE("static data keeps keys unique and sorted, and tells arrays from scalars") {
  StaticData data = uwjit::tests::sample_static_data();
  CHECK(data.size() == 7);
  CHECK(data.entries().begin()->first == "N_cells"); // byte order: capitals first
  CHECK(data.array("owner") != nullptr);
  CHECK(data.array("ratio") == nullptr);
  CHECK(data.scalar("ratio")->as_double() == 0.1);
  CHECK(contains(usage_error([&] { data.add("owner", 1); }), "key \"owner\" is used twice"));
  CHECK(contains(usage_error([&] { (void)data.at("nothing"); }), "no array \"nothing\""));
  CHECK(contains(usage_error([&] {
                   data.replace(StaticArray::from_vector("ratio", std::vector<double>{1}, {1}));
                 }),
                 "no array \"ratio\" to replace"));
}

TEST_CASE("static_data_hash of empty static data is 0") {
  CHECK(uwjit::runtime::static_data_hash(StaticData{}) == "0");
}

TEST_CASE("static_data_hash matches its pinned golden value") {
  // Pinned, and computed independently (a short Python script) from the grammar documented in
  // static_data.hpp: a change here changes every kernel key built from static data.
  CHECK(uwjit::runtime::static_data_hash(uwjit::tests::sample_static_data()) ==
        "4c51534ab1a8f77277092feecdc394553baa883e198602c8428ffcb3c2d17241");
}

TEST_CASE("static_data_hash is the same in another process") {
  const std::string here = uwjit::runtime::static_data_hash(uwjit::tests::sample_static_data());
  const std::string first = run(UWJIT_HASH_HELPER);
  const std::string second = run(UWJIT_HASH_HELPER);
  CHECK(first == here + "\n");
  CHECK(second == first);
}

TEST_CASE("static_data_hash leaves out the extents that follow a run-time domain axis, only") {
  using uwjit::runtime::FollowsDomain;
  using uwjit::runtime::static_data_hash;
  auto data = [](std::int64_t nx, std::int64_t ny) {
    StaticData d;
    d.add(StaticArray::from_vector("k", std::vector<double>(static_cast<std::size_t>(nx * ny)),
                                   {nx, ny}));
    return d;
  };
  const std::vector<FollowsDomain> follows_x = {{"k", 0, 0}};
  // The followed axis may change; the other may not.
  CHECK(static_data_hash(data(8, 4), follows_x) == static_data_hash(data(16, 4), follows_x));
  CHECK(static_data_hash(data(8, 4), follows_x) != static_data_hash(data(8, 5), follows_x));
  // Following is itself part of the hash: a kernel that follows is not one that compiles in.
  CHECK(static_data_hash(data(8, 4), follows_x) != static_data_hash(data(8, 4)));
  CHECK(static_data_hash(data(8, 4), follows_x) !=
        static_data_hash(data(8, 4), {{"k", 0, 1}})); // another domain axis
  CHECK(static_data_hash(data(8, 4), {}) == static_data_hash(data(8, 4)));
}

TEST_CASE("static_data_hash ignores contents and order, and sees every declared property") {
  using uwjit::runtime::static_data_hash;
  const std::string base = static_data_hash(uwjit::tests::sample_static_data(1.0));
  CHECK(static_data_hash(uwjit::tests::sample_static_data(-7.0)) == base); // contents

  auto with = [](auto&& change) {
    StaticData data = uwjit::tests::sample_static_data();
    change(data);
    return uwjit::runtime::static_data_hash(data);
  };
  // Shape, dtype, replication and shard axis are each part of the hash.
  CHECK(with([](StaticData& d) {
          d.replace(StaticArray::from_vector("mesh_area", std::vector<double>(11), {11}));
        }) != base);
  CHECK(with([](StaticData& d) {
          d.replace(StaticArray::from_vector("mesh_area", std::vector<double>(10), {2, 5}));
        }) != base);
  CHECK(with([](StaticData& d) {
          d.replace(StaticArray::from_vector("mesh_area", std::vector<float>(10), {10}));
        }) != base);
  const std::string shard = with([](StaticData& d) {
    d.replace(StaticArray::from_vector("mesh_area", std::vector<double>(10), {10},
                                       Replication::shard, 0));
  });
  CHECK(shard != base); // replicate -> shard
  CHECK(with([](StaticData& d) {
          d.replace(
              StaticArray::from_vector("pipe_wall", std::vector<std::uint8_t>(120, 1), {4, 5, 6}));
        }) != base); // shard -> replicate
  CHECK(with([](StaticData& d) {
          d.replace(StaticArray::from_vector("pipe_wall", std::vector<std::uint8_t>(120, 1),
                                             {4, 5, 6}, Replication::shard, 1));
        }) != base); // another shard axis
  // Scalars by exact value, and keys.
  StaticData other_ratio;
  const double same = 0.1 + 1e-18; // below half an ulp: the same double as 0.1
  REQUIRE(same == 0.1);
  other_ratio.add("ratio", same);
  StaticData ratio;
  ratio.add("ratio", 0.1);
  CHECK(static_data_hash(other_ratio) == static_data_hash(ratio));
  StaticData next_ratio;
  next_ratio.add("ratio", std::nextafter(0.1, 1.0));
  CHECK(static_data_hash(next_ratio) != static_data_hash(ratio));
  StaticData negative_zero, zero;
  negative_zero.add("x", -0.0);
  zero.add("x", 0.0);
  CHECK(static_data_hash(negative_zero) != static_data_hash(zero));
  StaticData as_int, as_string;
  as_int.add("x", 1);
  as_string.add("x", "1");
  CHECK(static_data_hash(as_int) != static_data_hash(as_string));
  StaticData renamed;
  renamed.add("y", 1);
  CHECK(static_data_hash(renamed) != static_data_hash(as_int));
}

TEST_CASE("params are typed, sorted, and set from text in their own type") {
  uwjit::runtime::Params params{{"nx", 32}, {"tau", 0.8}, {"boundary", "edge"}};
  CHECK(params.get_int("nx") == 32);
  CHECK(params.get_double("nx") == 32.0); // an integer reads as a double
  CHECK(params.values().begin()->first == "boundary");
  params.set_from_text("nx", "64");
  params.set_from_text("tau", "0.75");
  params.set_from_text("boundary", "periodic");
  CHECK(params.get_int("nx") == 64);
  CHECK(params.get_double("tau") == 0.75);
  CHECK(params.get_string("boundary") == "periodic");
  CHECK(contains(usage_error([&] { params.set_from_text("nx", "6.5"); }),
                 "param \"nx\": expected an integer, got \"6.5\""));
  CHECK(contains(usage_error([&] { params.set_from_text("tau", "fast"); }),
                 "expected a finite number"));
  CHECK(contains(usage_error([&] { params.set_from_text("ny", "1"); }),
                 "unknown param \"ny\" (known: boundary, nx, tau)"));
  CHECK(contains(usage_error([&] { (void)params.get_int("tau"); }),
                 "param \"tau\": expected an integer, got double 0.75"));
  CHECK(contains(usage_error([&] { (void)params.at("missing"); }), "param \"missing\" is missing"));
  // Tuples nest as deep as a checkpoint reads them back, no deeper.
  uwjit::runtime::Value deep(1.0);
  for (int depth = 1; depth <= uwjit::runtime::Value::max_depth; ++depth) {
    deep = uwjit::runtime::Value(uwjit::runtime::Value::Tuple{deep});
  }
  CHECK(deep.depth() == 16);
  params.set("shape", deep);
  CHECK(contains(usage_error([&] {
                   params.set("shape", uwjit::runtime::Value(uwjit::runtime::Value::Tuple{deep}));
                 }),
                 "param \"shape\": tuples nested 17 deep; at most 16"));
}

TEST_CASE("a clone holds every value, halos included; copy_from needs the same layout") {
  uwjit::runtime::Field field("u", Dtype::f64, {2, 3, 4}, {0, 1, 2});
  auto* values = static_cast<double*>(field.data());
  for (std::int64_t n = 0; n < field.padded_count(); ++n) {
    values[n] = 0.5 * static_cast<double>(n) - 7;
  }
  const uwjit::runtime::Field copy = field.clone();
  CHECK(copy.name() == "u");
  CHECK(copy.shape() == field.shape());
  CHECK(copy.halo() == field.halo());
  CHECK(copy.data() != field.data());
  CHECK(std::memcmp(copy.data(), field.data(), field.size_bytes()) == 0);
  CHECK(reinterpret_cast<std::uintptr_t>(copy.data()) % 64 == 0);

  uwjit::runtime::Field into("v", Dtype::f64, {2, 3, 4}, {0, 1, 2});
  into.copy_from(field);
  CHECK(std::memcmp(into.data(), field.data(), field.size_bytes()) == 0);
  uwjit::runtime::Field other_halos("w", Dtype::f64, {2, 3, 4}, {0, 1, 1});
  CHECK(contains(usage_error([&] { other_halos.copy_from(field); }), "another layout"));
  uwjit::runtime::Field other_dtype("w", Dtype::f32, {2, 3, 4}, {0, 1, 2});
  CHECK(contains(usage_error([&] { other_dtype.copy_from(field); }), "another layout"));
}

TEST_CASE("halos are filled periodically or from the edge, corners included") {
  uwjit::runtime::Field field("u", Dtype::f64, {2, 3, 4}, {0, 1, 2});
  field.for_each_interior([&](std::span<const std::int64_t> i) {
    field.at<double>(i[0], i[1], i[2]) = static_cast<double>(100 * i[0] + 10 * i[1] + i[2]);
  });
  const std::array<uwjit::runtime::Boundary, 3> boundary = {uwjit::runtime::Boundary::edge,
                                                            uwjit::runtime::Boundary::periodic,
                                                            uwjit::runtime::Boundary::edge};
  field.fill_halos(boundary);
  CHECK(field.at<double>(1, -1, 0) == 120);  // periodic: j = -1 is j = 2
  CHECK(field.at<double>(1, 3, 3) == 103);   // periodic: j = 3 is j = 0
  CHECK(field.at<double>(0, 1, -2) == 10);   // edge: k = -2 is k = 0
  CHECK(field.at<double>(0, 1, 5) == 13);    // edge: k = 5 is k = 3
  CHECK(field.at<double>(1, -1, -1) == 120); // a corner: both rules
  CHECK(field.at<double>(0, 3, 4) == 3);
  CHECK(contains(usage_error([&] { field.fill_halos(std::span(boundary).first(2)); }),
                 "2 boundaries for 3 axes"));
}

using uwjit::runtime::Boundary;
using uwjit::runtime::BoundaryFace;

namespace {

// A field of two components over 3 x 5 cells, halo 1 on both domain axes, cell (c, i, j) holding
// 100 c + 10 i + j; filled by `boundary` on each domain axis, and each halo cell compared with
// the interior cell that the rule names (edge: the nearest, periodic: the opposite end), the
// later axis's rule over the earlier's at the corners.
template <class T> void check_copied_halos(Dtype dtype, const Boundary& boundary) {
  uwjit::runtime::Field field("u", dtype, {2, 3, 5}, {0, 1, 1});
  field.for_each_interior([&](std::span<const std::int64_t> i) {
    field.at<T>(i[0], i[1], i[2]) = static_cast<T>(100 * i[0] + 10 * i[1] + i[2]);
  });
  const std::array<Boundary, 3> boundaries = {Boundary::edge, boundary, boundary};
  field.fill_halos(boundaries);
  const bool periodic = boundary.low.kind == BoundaryFace::Kind::periodic;
  const auto from = [&](std::int64_t i, std::int64_t n) {
    if (i < 0) {
      return periodic ? n - 1 : std::int64_t{0};
    }
    if (i >= n) {
      return periodic ? std::int64_t{0} : n - 1;
    }
    return i;
  };
  for (std::int64_t c = 0; c < 2; ++c) {
    for (std::int64_t i = -1; i <= 3; ++i) {
      for (std::int64_t j = -1; j <= 5; ++j) {
        CAPTURE(c);
        CAPTURE(i);
        CAPTURE(j);
        CHECK(field.at<T>(c, i, j) == static_cast<T>(100 * c + 10 * from(i, 3) + from(j, 5)));
      }
    }
  }
}

} // namespace

TEST_CASE("a halo of one along the innermost axis is filled for every element size and face") {
  for (const Boundary& boundary : {Boundary::edge, Boundary::periodic}) {
    check_copied_halos<double>(Dtype::f64, boundary);
    check_copied_halos<float>(Dtype::f32, boundary);
    check_copied_halos<std::int64_t>(Dtype::i64, boundary);
    check_copied_halos<std::int32_t>(Dtype::i32, boundary);
    check_copied_halos<std::uint8_t>(Dtype::u8, boundary);
    check_copied_halos<std::int8_t>(Dtype::i8, boundary);
  }
  // Computed faces along the innermost axis too: dirichlet reflects, neumann adds the gradient
  // (one cell from the mirror), in f64 and f32.
  uwjit::runtime::Field field("u", Dtype::f64, {4}, {1});
  for (std::int64_t i = 0; i < 4; ++i) {
    field.at<double>(i) = static_cast<double>(i * i + 1);
  }
  const Boundary mixed[] = {{.low = BoundaryFace::edge(), .high = BoundaryFace::dirichlet(2)}};
  field.fill_halos(mixed);
  CHECK(field.at<double>(-1) == 1.0);
  CHECK(field.at<double>(4) == 4.0 - 10.0);
  const Boundary sloped[] = {
      {.low = BoundaryFace::neumann(0.5), .high = BoundaryFace::neumann(-0.25)}};
  field.fill_halos(sloped);
  CHECK(field.at<double>(-1) == 1.0 + 0.5);
  CHECK(field.at<double>(4) == 10.0 - 0.25);
  uwjit::runtime::Field single("v", Dtype::f32, {3}, {1});
  for (std::int64_t i = 0; i < 3; ++i) {
    single.at<float>(i) = static_cast<float>(i + 1);
  }
  const Boundary single_faces[] = {
      {.low = BoundaryFace::dirichlet(0.25), .high = BoundaryFace::neumann(2)}};
  single.fill_halos(single_faces);
  CHECK(single.at<float>(-1) == 0.5F - 1.0F);
  CHECK(single.at<float>(3) == 3.0F + 2.0F);
}

TEST_CASE("a dirichlet face's halo is the reflection 2 v - mirror, a neumann face's the mirror "
          "plus the outward gradient times the distance, per face") {
  // u_i = i^2 + 1 (not linear, so a wrong mirror shows); halo 2 on an extent of 4.
  const auto filled = [](Boundary boundary) {
    uwjit::runtime::Field field("u", Dtype::f64, {4}, {2});
    for (std::int64_t i = 0; i < 4; ++i) {
      field.at<double>(i) = static_cast<double>(i * i + 1);
    }
    const Boundary boundaries[] = {boundary};
    field.fill_halos(boundaries);
    return std::array<double, 4>{field.at<double>(-1), field.at<double>(-2), field.at<double>(4),
                                 field.at<double>(5)};
  };
  // u = 1 2 5 10 inside.
  const auto a =
      filled({.low = BoundaryFace::dirichlet(1.5), .high = BoundaryFace::neumann(-0.25)});
  CHECK(a[0] == 3.0 - 1.0);   // -1 mirrors 0
  CHECK(a[1] == 3.0 - 2.0);   // -2 mirrors 1
  CHECK(a[2] == 10.0 - 0.25); // 4 mirrors 3, one cell apart
  CHECK(a[3] == 5.0 - 0.75);  // 5 mirrors 2, three cells apart
  const auto b = filled({.low = BoundaryFace::neumann(0.5), .high = BoundaryFace::dirichlet(-2)});
  CHECK(b[0] == 1.0 + 0.5);
  CHECK(b[1] == 2.0 + 1.5);
  CHECK(b[2] == -4.0 - 10.0);
  CHECK(b[3] == -4.0 - 5.0);
  const auto c = filled({.low = BoundaryFace::edge(), .high = BoundaryFace::neumann(0)});
  CHECK(c[0] == 1.0);
  CHECK(c[1] == 1.0);
  CHECK(c[2] == 10.0); // neumann 0 mirrors: 10, then 5 (edge would repeat 10)
  CHECK(c[3] == 5.0);
  const auto d = filled(Boundary::periodic);
  CHECK(d == std::array<double, 4>{10.0, 5.0, 1.0, 2.0});
}

TEST_CASE("dirichlet and neumann fill each component alike, in f32 too, and corners take the "
          "later axis's rule over the earlier's") {
  // Two components (a leading axis without a halo) over a 3 x 2 domain, halo 1.
  uwjit::runtime::Field field("f", Dtype::f32, {2, 3, 2}, {0, 1, 1});
  field.for_each_interior([&](std::span<const std::int64_t> i) {
    field.at<float>(i[0], i[1], i[2]) = static_cast<float>(100 * i[0] + 10 * i[1] + i[2]);
  });
  const Boundary boundaries[] = {
      Boundary::edge,
      {.low = BoundaryFace::dirichlet(0.5), .high = BoundaryFace::neumann(2)},
      Boundary::both(BoundaryFace::dirichlet(-1))};
  field.fill_halos(boundaries);
  for (const std::int64_t c : {0, 1}) {
    const auto u = [&](std::int64_t i, std::int64_t j) { return field.at<float>(c, i, j); };
    const float base = static_cast<float>(100 * c);
    CHECK(u(-1, 1) == 1.0F - (base + 1));      // dirichlet 0.5 on the low x face
    CHECK(u(3, 0) == base + 20 + 2);           // neumann 2 on the high x face
    CHECK(u(0, -1) == -2.0F - base);           // dirichlet -1 on the low y face
    CHECK(u(2, 2) == -2.0F - (base + 21));     // and on the high one
    CHECK(u(-1, -1) == -2.0F - (1.0F - base)); // y's rule over x's halo
    CHECK(u(3, 2) == -2.0F - (base + 21 + 2));
  }
}

TEST_CASE("a boundary the halo cannot hold is a usage error naming the field and axis") {
  uwjit::runtime::Field field("u", Dtype::f64, {3, 4}, {1, 2});
  const auto fails = [&](Boundary boundary) {
    const Boundary boundaries[] = {Boundary::edge, boundary};
    return usage_error([&] { field.fill_halos(boundaries); });
  };
  CHECK(contains(fails({.low = BoundaryFace::periodic(), .high = BoundaryFace::edge()}),
                 "field \"u\": axis 1: periodic on the low face only"));
  // Written as aggregates: the factories refuse these values outright.
  using Kind = BoundaryFace::Kind;
  CHECK(contains(fails({.low = BoundaryFace::edge(), .high = {Kind::dirichlet, NAN}}),
                 "field \"u\": axis 1: the high face's dirichlet value is nan"));
  CHECK(contains(fails(Boundary::both({Kind::neumann, INFINITY})),
                 "the low face's neumann value is inf"));
  CHECK(contains(fails(Boundary::both({Kind::dirichlet, 1e308})),
                 "field \"u\": axis 1: the low face's dirichlet value 1e+308 is not a finite "
                 "number within [-1e300, 1e300]"));
  uwjit::runtime::Field narrow("v", Dtype::f64, {1}, {2});
  const Boundary mirror[] = {Boundary::both(BoundaryFace::neumann(0))};
  CHECK(contains(usage_error([&] { narrow.fill_halos(mirror); }),
                 "field \"v\": axis 0: a neumann 0 halo of 2 is wider than the extent 1"));
  uwjit::runtime::Field mask("mask", Dtype::u8, {4}, {1});
  const Boundary fixed[] = {Boundary::both(BoundaryFace::dirichlet(1))};
  CHECK(contains(usage_error([&] { mask.fill_halos(fixed); }),
                 "field \"mask\": axis 0: a dirichlet 1 boundary needs a floating-point field"));
  CHECK(to_string(Boundary{.low = BoundaryFace::dirichlet(1.5), .high = BoundaryFace::edge()}) ==
        "dirichlet 1.5 / edge");
  CHECK(to_string(Boundary::periodic) == "periodic");
}

TEST_CASE("a dirichlet value or neumann gradient whose halo could overflow is refused when the "
          "face is made, naming the value and the accepted range") {
  using uwjit::runtime::BoundaryFace;
  for (const double bad : {1e308, -1.5e300, HUGE_VAL, -HUGE_VAL, double{NAN}}) {
    CAPTURE(bad);
    const auto dirichlet = usage_error([&] { (void)BoundaryFace::dirichlet(bad); });
    CHECK(contains(dirichlet, "BoundaryFace::dirichlet: dirichlet value "));
    CHECK(contains(dirichlet, " is not a finite number within [-1e300, 1e300] (the halo holds 2 "
                              "value - mirror, which must not overflow)"));
    const auto neumann = usage_error([&] { (void)BoundaryFace::neumann(bad); });
    CHECK(contains(neumann, "BoundaryFace::neumann: neumann gradient "));
    CHECK(contains(neumann, " is not a finite number within [-1e300, 1e300]"));
  }
  CHECK(usage_error([] { (void)BoundaryFace::dirichlet(1e308); }) ==
        "BoundaryFace::dirichlet: dirichlet value 1e+308 is not a finite number within [-1e300, "
        "1e300] (the halo holds 2 value - mirror, which must not overflow)");
  // The edges themselves are accepted, and their halos are finite.
  uwjit::runtime::Field field("u", Dtype::f64, {2}, {1});
  field.at<double>(0) = 1e300;
  field.at<double>(1) = -1e300;
  const Boundary edges[] = {
      {.low = BoundaryFace::dirichlet(-1e300), .high = BoundaryFace::neumann(1e300)}};
  field.fill_halos(edges);
  CHECK(std::isfinite(field.at<double>(-1)));
  CHECK(std::isfinite(field.at<double>(2)));
  // A wide neumann halo multiplies the gradient; an f32 field takes less.
  uwjit::runtime::Field wide("w", Dtype::f64, {4}, {3});
  const Boundary steep[] = {Boundary::both(BoundaryFace::neumann(1e300))};
  CHECK(contains(usage_error([&] { wide.fill_halos(steep); }),
                 "field \"w\": axis 0: the low face's neumann gradient 1e+300 over a halo of 3 "
                 "puts its outer cell 5e+300 beyond its mirror, more than 1e300"));
  uwjit::runtime::Field single("s", Dtype::f32, {4}, {1});
  const Boundary hot[] = {Boundary::both(BoundaryFace::dirichlet(1e38))};
  CHECK(contains(usage_error([&] { single.fill_halos(hot); }),
                 "field \"s\": axis 0: the low face's dirichlet 1e+38 is out of range [-1e37, "
                 "1e37] for an f32 field"));
}

TEST_CASE("a field too large to allocate is a usage error naming it, never a bare bad_alloc") {
  // 2^45 doubles (256 TB): more than any address space holds, so nothing is allocated.
  const auto huge = usage_error(
      [] { uwjit::runtime::Field field("u", Dtype::f64, {std::int64_t{1} << 45}, {1}); });
  CHECK(contains(huge, "field \"u\": out of memory: cannot allocate 281474976710672 bytes (f64 "
                       "(35184372088832) with halos (1))"));
  const auto overflow = usage_error([] {
    uwjit::runtime::Field field("v", Dtype::f64, {std::int64_t{1} << 40, std::int64_t{1} << 30},
                                {0, 0});
  });
  CHECK(overflow == "field \"v\": shape (1099511627776, 1073741824) with halos (0, 0) is too "
                    "large to address");
}

TEST_CASE("a field's interior copies out and back without its halos") {
  uwjit::runtime::Field a("f", Dtype::i32, {3, 5}, {1, 2});
  uwjit::runtime::Field b("f", Dtype::i32, {3, 5}, {0, 0});
  a.for_each_interior([&](std::span<const std::int64_t> i) {
    a.at<std::int32_t>(i[0], i[1]) = static_cast<std::int32_t>(7 * i[0] + i[1]);
  });
  std::vector<std::byte> interior(15 * sizeof(std::int32_t));
  a.copy_interior_to(interior);
  b.copy_interior_from(interior);
  CHECK(b.at<std::int32_t>(2, 4) == 18);
  CHECK(a.interior_equals(b));
  b.at<std::int32_t>(0, 0) = -1;
  CHECK_FALSE(a.interior_equals(b));
  CHECK(a.padded_count() == 5 * 9);
  CHECK(reinterpret_cast<std::uintptr_t>(a.data()) % 64 == 0);
}

TEST_CASE("reading a field as another type or with the wrong index count is a usage error "
          "naming the field, not an internal one") {
  uwjit::runtime::Field field("u", uwjit::runtime::Dtype::f64, {3, 4}, {1, 1});
  for (const auto& attempt : std::vector<std::function<void()>>{
           [&] { (void)field.at<float>(0, 0); }, [&] { (void)field.at<double>(0); },
           [&] {
             const std::int64_t index[] = {0, 0, 0};
             (void)field.value(index);
           }}) {
    try {
      attempt();
      FAIL("no error");
    } catch (const uwjit::Error& error) {
      CHECK(error.kind() == uwjit::ErrorKind::usage);
      const std::string message = error.what();
      CHECK(message.rfind("field \"u\"", 0) == 0);
      CHECK(message.find(".cpp") == std::string::npos);
      CHECK(message.find(".hpp") == std::string::npos);
    }
  }
  field.at<double>(2, 3) = 1.5;
  CHECK(field.at<double>(2, 3) == 1.5);
}
