// What a checkpoint may make a restore do: continue the same physics, or be refused with a
// message that names what is wrong. The files are forged with valid checksums, as a careless or
// hostile user could.
#include "sandbox.hpp"

#include <uwjit/cache/key.hpp>
#include <uwjit/common/error.hpp>
#include <uwjit/engine/engine.hpp>
#include <uwjit/nodes/registry.hpp>
#include <uwjit/runtime/simulation.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

using uwjit::engine::Engine;
using uwjit::runtime::Params;
using uwjit::runtime::Simulation;

namespace {

// Offsets of the format (simulation.hpp): magic 8, version u32, head length u64, steps i64,
// node count u32, then the first node's type and name (u32 length, bytes) and its param count.
constexpr std::size_t k_head_length_at = 8 + 4;
constexpr std::size_t k_steps_at = 8 + 4 + 8;
constexpr std::size_t k_type_at = 8 + 4 + 8 + 8 + 4;

// A heat checkpoint of 2 steps, its bytes, and a place to write forged ones.
struct Checkpoint {
  uwjit_test::TempDir scratch{"uwjit-checkpoint"};
  Engine engine{{.disk_cache = uwjit::engine::DiskCache::off}};
  std::string bytes;

  Checkpoint() {
    const auto node = uwjit::nodes::make(
        "heat", "heat", uwjit::nodes::sized_params("heat", std::vector<std::int64_t>{6}));
    Simulation simulation(engine, {node});
    simulation.step(2);
    simulation.checkpoint(scratch.path() / "heat.ckpt");
    bytes = uwjit_test::read_text(scratch.path() / "heat.ckpt");
    REQUIRE(bytes.size() > 100);
  }

  // The head (without its checksum), edited by `edit`, written with its length and a valid
  // checksum, then the field data where it was (the head stays within the first 4096 bytes, so
  // the offsets it holds stay true).
  template <class Edit> std::filesystem::path forge(Edit edit) const {
    std::uint64_t length = 0;
    std::memcpy(&length, bytes.data() + k_head_length_at, 8);
    std::string head = bytes.substr(0, length - 64);
    edit(head);
    length = head.size() + 64;
    std::memcpy(head.data() + k_head_length_at, &length, 8);
    head += uwjit::cache::sha256_hex(head);
    REQUIRE(head.size() <= 4096);
    const auto path = scratch.path() / "forged.ckpt";
    uwjit_test::write_text(path, head + bytes.substr(head.size()));
    return path;
  }

  // The message of the error that restoring `path` with `factory` raises, and its kind.
  [[nodiscard]] std::pair<uwjit::ErrorKind, std::string>
  refusal(const std::filesystem::path& path,
          const uwjit::runtime::NodeFactory& factory = uwjit::nodes::factory()) {
    try {
      (void)Simulation::restore(engine, path, factory);
    } catch (const uwjit::Error& error) {
      return {error.kind(), error.what()};
    }
    return {uwjit::ErrorKind::internal, "(restored)"};
  }
};

std::uint32_t u32_at(const std::string& body, std::size_t at) {
  std::uint32_t value = 0;
  std::memcpy(&value, body.data() + at, 4);
  return value;
}

} // namespace

TEST_CASE("a restore with other params than the checkpoint's is refused, naming each") {
  Checkpoint c;
  const uwjit::runtime::NodeFactory changed = [](const std::string& type, const std::string& name,
                                                 const Params& params) {
    Params other = params;
    other.set("kappa", 0.5);
    other.set("contrast", 3.0);
    return uwjit::nodes::make(type, name, other);
  };
  const auto [kind, message] = c.refusal(c.scratch.path() / "heat.ckpt", changed);
  INFO(message);
  CHECK(kind == uwjit::ErrorKind::usage);
  CHECK(message.find("node \"heat\" was rebuilt with other params than the checkpoint's") !=
        std::string::npos);
  CHECK(message.find("kappa: 1.0 in the file, 0.5 now") != std::string::npos);
  CHECK(message.find("contrast: ") != std::string::npos);
  // The factory that keeps them restores.
  CHECK(Simulation::restore(c.engine, c.scratch.path() / "heat.ckpt", uwjit::nodes::factory())
            .steps_taken() == 2);
}

TEST_CASE("a checkpoint naming its node with a path, NUL or hidden name is refused when read") {
  Checkpoint c;
  for (const std::string& bad :
       std::vector<std::string>{"../victim/important", "/etc/passwd", std::string("he\0at", 5),
                                ".heat", "-heat", "", std::string(65, 'h')}) {
    CAPTURE(bad);
    const auto path = c.forge([&](std::string& body) {
      const std::size_t name_at = k_type_at + 4 + u32_at(body, k_type_at);
      const std::uint32_t old = u32_at(body, name_at);
      const auto length = static_cast<std::uint32_t>(bad.size());
      body.replace(name_at, 4 + old, std::string(reinterpret_cast<const char*>(&length), 4) + bad);
    });
    const auto [kind, message] = c.refusal(path);
    CHECK(kind == uwjit::ErrorKind::io);
    CHECK(message.find("is not a valid node name") != std::string::npos);
  }
}

TEST_CASE("a checkpoint's step count is 0 to 2^53; stepping never passes it") {
  Checkpoint c;
  for (const std::int64_t steps :
       {std::int64_t{-1}, std::int64_t{1} << 53 | 1, INT64_MAX, INT64_MIN}) {
    CAPTURE(steps);
    const auto path =
        c.forge([&](std::string& body) { std::memcpy(body.data() + k_steps_at, &steps, 8); });
    const auto [kind, message] = c.refusal(path);
    CHECK(kind == uwjit::ErrorKind::io);
    CHECK(message.find("is outside 0 to 2^53") != std::string::npos);
  }
  const std::int64_t last = uwjit::runtime::k_max_steps - 1;
  const auto path =
      c.forge([&](std::string& body) { std::memcpy(body.data() + k_steps_at, &last, 8); });
  Simulation near_the_end = Simulation::restore(c.engine, path, uwjit::nodes::factory());
  near_the_end.step(1);
  CHECK(near_the_end.steps_taken() == uwjit::runtime::k_max_steps);
  CHECK_THROWS_WITH_AS(near_the_end.step(1), doctest::Contains("at most 2^53 steps in all"),
                       uwjit::Error);
  CHECK_THROWS_WITH_AS(near_the_end.step(-1), doctest::Contains("step count -1"), uwjit::Error);
  CHECK(near_the_end.steps_taken() == uwjit::runtime::k_max_steps);
}

TEST_CASE("a param twice, or one the node does not have, is named, not ignored") {
  Checkpoint c;
  const std::size_t name_at = k_type_at + 4 + u32_at(c.bytes, k_type_at);
  const std::size_t count_at = name_at + 4 + u32_at(c.bytes, name_at);
  // The first param: its key (u32 length, bytes), a tag and, for i64 and f64, 8 bytes.
  const std::size_t first_at = count_at + 4;
  const std::size_t key_length = u32_at(c.bytes, first_at);
  const auto tag = static_cast<unsigned char>(c.bytes[first_at + 4 + key_length]);
  REQUIRE(tag <= 1);
  const std::string first = c.bytes.substr(first_at, 4 + key_length + 1 + 8);
  const std::string key = first.substr(4, key_length);

  const auto twice = c.forge([&](std::string& body) {
    const std::uint32_t count = u32_at(body, count_at) + 1;
    std::memcpy(body.data() + count_at, &count, 4);
    body.insert(first_at, first);
  });
  auto [kind, message] = c.refusal(twice);
  CHECK(kind == uwjit::ErrorKind::io);
  CHECK(message.find("has param \"" + key + "\" twice") != std::string::npos);

  const auto unknown = c.forge([&](std::string& body) {
    const std::uint32_t count = u32_at(body, count_at) + 1;
    std::memcpy(body.data() + count_at, &count, 4);
    std::string extra = first;
    extra.replace(4, key_length, std::string(key_length, 'z')); // sorts last: a new key
    body.insert(first_at, extra);
  });
  std::tie(kind, message) = c.refusal(unknown);
  INFO(message);
  CHECK(kind == uwjit::ErrorKind::usage);
  CHECK(message.find("forged.ckpt: node \"heat\" of type \"heat\": heat: unknown param \"" +
                     std::string(key_length, 'z') + "\"") != std::string::npos);
}

TEST_CASE("a field whose byte count disagrees with its dtype and shape is named as such") {
  Checkpoint c;
  // The first field's dtype code follows its name; f64 (1) becomes f32 (0), the bytes stay.
  const auto at = c.bytes.find(std::string("\x01\x00\x00\x00u", 5));
  REQUIRE(at != std::string::npos);
  const auto path = c.forge([&](std::string& body) { body[at + 5] = 0; });
  const auto [kind, message] = c.refusal(path);
  CHECK(kind == uwjit::ErrorKind::io);
  CHECK(message.find("field \"u\" of node \"heat\" holds") != std::string::npos);
  CHECK(message.find("of f32 takes") != std::string::npos);
  CHECK(message.find("truncated") == std::string::npos);
}

TEST_CASE("a checkpoint's field data is checked: a flipped or missing byte is named, by field") {
  Checkpoint c;
  std::uint64_t head_length = 0;
  std::memcpy(&head_length, c.bytes.data() + k_head_length_at, 8);
  // The data of the first field starts at the first multiple of 4096 after the head.
  const std::size_t data_at = (head_length + 4095) / 4096 * 4096;
  REQUIRE(c.bytes.size() > data_at + 100);
  const auto path = c.scratch.path() / "bad.ckpt";
  std::string flipped = c.bytes;
  flipped[data_at + 77] = static_cast<char>(flipped[data_at + 77] ^ 0x10);
  uwjit_test::write_text(path, flipped);
  auto [kind, message] = c.refusal(path);
  CHECK(kind == uwjit::ErrorKind::io);
  CHECK(message.find("bad.ckpt: truncated or corrupt (field \"u\": checksum mismatch)") !=
        std::string::npos);

  uwjit_test::write_text(path, c.bytes.substr(0, c.bytes.size() - 1));
  std::tie(kind, message) = c.refusal(path);
  CHECK(kind == uwjit::ErrorKind::io);
  CHECK(message.find("bad.ckpt: truncated or corrupt") != std::string::npos);

  // A head that claims more than the file holds, or a newer format, is refused before any
  // field is read.
  std::string long_head = c.bytes;
  const std::uint64_t huge = std::uint64_t{1} << 40;
  std::memcpy(long_head.data() + k_head_length_at, &huge, 8);
  uwjit_test::write_text(path, long_head);
  std::tie(kind, message) = c.refusal(path);
  CHECK(message.find("truncated or corrupt (its head says 1099511627776 bytes") !=
        std::string::npos);
  const auto newer = c.forge([](std::string& head) { head[8] = 4; });
  std::tie(kind, message) = c.refusal(newer);
  CHECK(kind == uwjit::ErrorKind::io);
  CHECK(message.find("format version 4 (this uwjit reads versions 1 to 3)") != std::string::npos);
}

TEST_CASE("a checkpoint is the same bytes whichever way it is written: by a simulation or by "
          "its gathered snapshot") {
  Checkpoint c;
  const Simulation restored =
      Simulation::restore(c.engine, c.scratch.path() / "heat.ckpt", uwjit::nodes::factory());
  restored.gathered().checkpoint(c.scratch.path() / "again.ckpt");
  CHECK(uwjit_test::read_text(c.scratch.path() / "again.ckpt") == c.bytes);
}
